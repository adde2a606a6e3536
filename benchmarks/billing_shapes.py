"""The 18 load shapes of the evaluator comparison, and what the ``aws`` simulation charges for each.

Run from the repository root::

    python -m benchmarks.billing_shapes [--days 14] [--json]

Each shape is one table's capacity history (the ``ddb-audit billing`` input), generated deterministically from
its own seed: 14 days of 1-minute CloudWatch ``Sum`` values, per-minute counts drawn with Poisson-like noise.
Two shapes per kind: flat, diurnal, spiky, ramp, idle with bursts, with GSIs, with gaps (missing datapoints),
over the maximum (load above the 40,000-unit table quota), and provisioned (a table that is provisioned today).

For every shape it prints, in US dollars per month (730 h) at the bundled us-east-1 prices:

- ``sim``: the ``aws`` simulator alone with fixed settings (target 70 %, minimum 1, maximum 40,000 units), the
  table and every GSI, reads and writes: what the auto-scaling rules themselves cost;
- ``decided``: the provisioned cost ``ddb-audit billing --simulation aws`` reports (its minimum-capacity search
  included), with the on-demand cost and the simulated throttled share next to it.

With ``--compare-resolution 300`` it also sums each shape into 5-minute periods (what CloudWatch keeps after 15
days), decides again, and prints each cost's deviation from the 1-minute answer and whether the recommendation
changed: the measured error bound the billing output states for coarser inputs.

It is a report, not a timing: it exits 0 whatever the numbers.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from auditor.billing.aws_scaling import simulate_aws
from auditor.billing.decide import analyze_billing
from auditor.billing.pricing import bundled_prices
from auditor.billing.simulate import ScalingPolicy
from auditor.models.billing import HOURS_PER_MONTH, BillingInput

DAY = 1440
START = datetime(2026, 11, 2, tzinfo=UTC)  # a Monday, 00:00 UTC

Rates = Callable[[int], float]


def _counts(rng: random.Random, rate: Rates, minutes: int) -> list[float]:
    """Per-minute units for per-second rates: Poisson-like noise (normal approximation, clipped at 0)."""
    out: list[float] = []
    for m in range(minutes):
        lam = rate(m) * 60.0
        out.append(float(max(0, round(rng.gauss(lam, math.sqrt(lam))))) if lam > 0 else 0.0)
    return out


def _diurnal(level: float, low: float, peak_hour: float = 14.0) -> Rates:
    def rate(m: int) -> float:
        h = (m % DAY) / 60
        weekend = 0.6 if (m // DAY) % 7 >= 5 else 1.0
        return level * weekend * (low + (1 - low) * (0.5 + 0.5 * math.cos((h - peak_hour) / 24 * 2 * math.pi)))

    return rate


def _spiky(base: float, spike: float, every: int, length: int, offset: int = 0) -> Rates:
    return lambda m: spike if (m + offset) % every < length else base


def _bursts(seed: int, minutes: int, count: int, level: float, length: tuple[int, int]) -> Rates:
    rng = random.Random(seed)
    spans = []
    for _ in range(count):
        at = rng.randrange(minutes)
        spans.append((at, at + rng.randrange(*length)))
    return lambda m: level if any(a <= m < b for a, b in spans) else 0.0


def _series(index: str | None, reads: list[float | None], writes: list[float | None], **extra: Any) -> dict[str, Any]:
    return {"index": index, "consumed_read": reads, "consumed_write": writes, **extra}


def _shape(name: str, minutes: int) -> dict[str, Any]:
    """The capacity-history document of one named shape."""
    seed = sum(ord(c) for c in name)
    rng = random.Random(seed)

    def load(rate: Rates) -> list[float]:
        return _counts(rng, rate, minutes)

    doc: dict[str, Any] = {"table": name, "billing_mode": "PAY_PER_REQUEST", "start": START.isoformat()}
    series: list[dict[str, Any]]
    if name == "flat-small":
        series = [_series(None, load(lambda m: 5.0), load(lambda m: 1.0))]
    elif name == "flat-large":
        series = [_series(None, load(lambda m: 2_000.0), load(lambda m: 400.0))]
    elif name == "diurnal-shallow":
        series = [_series(None, load(_diurnal(800, 0.4)), load(_diurnal(150, 0.4)))]
    elif name == "diurnal-deep":
        series = [_series(None, load(_diurnal(1_500, 0.03)), load(_diurnal(300, 0.03, 20)))]
    elif name == "spiky-hourly":
        series = [_series(None, load(_spiky(50, 1_500, 60, 2)), load(_spiky(10, 300, 60, 2, 30)))]
    elif name == "spiky-bursts":
        reads = _bursts(seed, minutes, 200, 900, (1, 6))
        series = [_series(None, load(lambda m: 40 + reads(m)), load(lambda m: 8.0))]
    elif name == "ramp-up":
        series = [_series(None, load(lambda m: 3_000 * m / minutes), load(lambda m: 600 * m / minutes))]
    elif name == "ramp-down-to-zero":
        # Falls to zero halfway and stays idle: the documented "no scale-in at zero consumption" case.
        half = minutes // 2
        series = [
            _series(
                None,
                load(lambda m: max(0.0, 3_000 * (1 - m / half))),
                load(lambda m: max(0.0, 600 * (1 - m / half))),
            )
        ]
    elif name == "idle-nightly-batch":
        batch = lambda m: 2_500.0 if 120 <= m % DAY < 165 else 0.0  # noqa: E731
        series = [_series(None, load(batch), load(lambda m: batch(m) / 5))]
    elif name == "idle-rare-bursts":
        reads = _bursts(seed, minutes, 6, 1_200, (10, 40))
        series = [_series(None, load(reads), load(lambda m: reads(m) / 10))]
    elif name == "gsi-diurnal":
        series = [
            _series(None, load(_diurnal(600, 0.2)), load(_diurnal(200, 0.2))),
            _series("byCustomer", load(_diurnal(900, 0.1)), load(_diurnal(200, 0.2))),
            _series("byStatus", load(_spiky(5, 400, 240, 10)), load(_diurnal(200, 0.2))),
        ]
    elif name == "gsi-write-heavy":
        series = [
            _series(None, load(lambda m: 100.0), load(_diurnal(1_000, 0.3))),
            _series("byTime", load(lambda m: 2.0), load(_diurnal(1_000, 0.3))),
        ]
    elif name == "gaps-scattered":
        reads, writes = load(_diurnal(400, 0.3)), load(_diurnal(80, 0.3))
        gaps = random.Random(seed + 1)
        r_out: list[float | None] = [None if gaps.random() < 0.1 else v for v in reads]
        w_out: list[float | None] = [None if gaps.random() < 0.1 else v for v in writes]
        series = [_series(None, r_out, w_out)]
    elif name == "gaps-outages":
        reads, writes = load(_diurnal(400, 0.3)), load(_diurnal(80, 0.3))
        out = lambda m: (m // 60) % 36 < 6  # noqa: E731 - 6 hours missing every 36
        series = [
            _series(
                None,
                [None if out(m) else v for m, v in enumerate(reads)],
                [None if out(m) else v for m, v in enumerate(writes)],
            )
        ]
    elif name == "over-max-peaks":
        series = [_series(None, load(_diurnal(55_000, 0.2)), load(lambda m: 100.0))]
    elif name == "over-max-sustained":
        series = [_series(None, load(lambda m: 50_000.0), load(lambda m: 45_000.0))]
    elif name == "provisioned-fixed":
        doc["billing_mode"] = "PROVISIONED"
        series = [
            _series(
                None,
                load(lambda m: 150.0),
                load(lambda m: 40.0),
                provisioned_read=[500.0] * minutes,
                provisioned_write=[100.0] * minutes,
            )
        ]
    elif name == "provisioned-diurnal":
        doc["billing_mode"] = "PROVISIONED"
        rate_r, rate_w = _diurnal(1_000, 0.1), _diurnal(250, 0.1)
        series = [
            _series(
                None,
                load(rate_r),
                load(rate_w),
                provisioned_read=[float(math.ceil(rate_r(m) / 0.5)) for m in range(minutes)],
                provisioned_write=[float(math.ceil(rate_w(m) / 0.5)) for m in range(minutes)],
            )
        ]
    else:
        raise ValueError(f"unknown shape {name!r}")
    doc["series"] = series
    return doc


SHAPES = (
    "flat-small",
    "flat-large",
    "diurnal-shallow",
    "diurnal-deep",
    "spiky-hourly",
    "spiky-bursts",
    "ramp-up",
    "ramp-down-to-zero",
    "idle-nightly-batch",
    "idle-rare-bursts",
    "gsi-diurnal",
    "gsi-write-heavy",
    "gaps-scattered",
    "gaps-outages",
    "over-max-peaks",
    "over-max-sustained",
    "provisioned-fixed",
    "provisioned-diurnal",
)


def shape_inputs(days: float = 14.0) -> dict[str, BillingInput]:
    """The 18 shapes as validated billing inputs (deterministic: the same on every run)."""
    minutes = int(days * DAY)
    return {name: BillingInput.from_document(_shape(name, minutes), name) for name in SHAPES}


def simulated_cost(inp: BillingInput) -> float:
    """Monthly cost of the ``aws`` simulator alone with fixed settings (target 70, min 1, max 40,000)."""
    prices = bundled_prices(inp.region).for_class(inp.table_class)
    start_minute = int(inp.start.timestamp()) // 60
    policy = ScalingPolicy(70.0, 1.0, 40_000.0)
    total = 0.0
    for s in inp.series:
        reads = [0.0 if v is None else v for v in s.consumed_read]
        writes = [0.0 if v is None else v for v in s.consumed_write]
        run = simulate_aws(reads, writes, policy, policy, start_minute=start_minute)
        total += run.read.unit_hours * prices.rcu_hour + run.write.unit_hours * prices.wcu_hour
    return total * HOURS_PER_MONTH / (inp.minutes / 60.0)


def report(days: float) -> list[dict[str, Any]]:
    """One row per shape."""
    rows = []
    for name, inp in shape_inputs(days).items():
        result = analyze_billing(inp, simulation="aws").result
        rows.append(
            {
                "shape": name,
                "sim": round(simulated_cost(inp), 2),
                "decided": round(result.monthly_cost_provisioned_simulated, 2),
                "on_demand": round(result.monthly_cost_on_demand, 2),
                "throttled_share": result.throttling.throttled_share,
                "recommended": result.recommended_mode,
            }
        )
    return rows


def coarser(inp: BillingInput, period_seconds: int) -> BillingInput:
    """The same history summed into ``period_seconds`` periods (a period with any datapoint present has one)."""
    per = period_seconds // 60
    doc = inp.model_dump(mode="json")
    doc["period_seconds"] = period_seconds

    def summed(values: list[float | None] | None, average: bool) -> list[float | None] | None:
        if values is None:
            return None
        out: list[float | None] = []
        for at in range(0, len(values), per):
            present = [v for v in values[at : at + per] if v is not None]
            out.append(None if not present else (sum(present) / len(present) if average else sum(present)))
        return out

    for s in doc["series"]:
        for dim in ("read", "write"):
            s[f"consumed_{dim}"] = summed(s[f"consumed_{dim}"], average=False)
            s[f"provisioned_{dim}"] = summed(s[f"provisioned_{dim}"], average=True)
    return BillingInput.from_document(doc, f"{inp.table} at {period_seconds} s")


def compare_resolution(days: float, period_seconds: int) -> list[dict[str, Any]]:
    """Per shape: monthly costs from 1-minute and from coarser input, their deviation, and both recommendations."""
    rows = []
    for name, inp in shape_inputs(days).items():
        fine = analyze_billing(inp, simulation="aws").result
        coarse = analyze_billing(coarser(inp, period_seconds), simulation="aws").result
        row: dict[str, Any] = {"shape": name}
        for key in ("monthly_cost_provisioned_simulated", "monthly_cost_on_demand", "monthly_cost_recommended"):
            a, b = getattr(fine, key), getattr(coarse, key)
            row[key] = (round(a, 2), round(b, 2), round((b - a) / a, 4) if a else 0.0)
        row["recommended"] = (fine.recommended_mode, coarse.recommended_mode)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=float, default=14.0)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--compare-resolution", type=int, metavar="SECONDS", help="also decide on coarser periods")
    args = parser.parse_args(argv)
    if args.compare_resolution:
        rows = compare_resolution(args.days, args.compare_resolution)
        if args.json:
            sys.stdout.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
            return 0
        print(f"{'shape':<20} {'provisioned 1 min':>18} {'coarse':>10} {'dev':>8} {'recommended 1 min -> coarse'}")
        for r in rows:
            a, b, dev = r["monthly_cost_provisioned_simulated"]
            fine, coarse = r["recommended"]
            print(f"{r['shape']:<20} {a:>18,.2f} {b:>10,.2f} {dev:>8.1%} {fine} -> {coarse}")
        devs = [r["monthly_cost_provisioned_simulated"][2] for r in rows]
        flips = sum(1 for r in rows if r["recommended"][0] != r["recommended"][1])
        print(f"provisioned cost deviation {min(devs):+.1%} to {max(devs):+.1%}; recommendation changed on {flips}")
        return 0
    rows = report(args.days)
    if args.json:
        sys.stdout.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"{'shape':<20} {'sim $/mo':>12} {'decided $/mo':>13} {'on-demand':>12} {'throttled':>10}  recommended")
    for r in rows:
        share = r["throttled_share"]
        print(
            f"{r['shape']:<20} {r['sim']:>12,.2f} {r['decided']:>13,.2f} {r['on_demand']:>12,.2f} "
            f"{(share or 0.0):>10.3%}  {r['recommended']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Billing simulators benchmark: series per second, fast simulators against window-rescanning baselines.

Run from the repository root::

    python -m benchmarks.billing [--series 1000] [--baseline-series 24] [--days 14] [--seed 7] [--repeat 3]

What it does:

1. Generates a pool of 40 distinct (read, write) series of ``days`` x 1,440 one-minute CloudWatch ``Sum`` values
   (a seeded mix of realistic shapes: steady, diurnal, business-hours, nightly batch with bursts, and sparse
   low-traffic tables; per-minute counts drawn with Poisson-like noise, so a busy table varies by a few percent
   per minute and a small one by much more). Generation is not timed.
2. Times, in this process, the fast simulators of :mod:`auditor.billing.simulate` (``evaluator`` and ``aws``)
   over ``--series`` series cycled from the pool, and the window-rescanning reference versions of the same rules
   (:mod:`tests.billing_reference`, the archived evaluator's own per-minute approach) over ``--baseline-series``
   series from the same pool. The reference is too slow to run on all 1,000.
3. Prints series/s for each, and the fast/baseline throughput ratio per simulator (goal: >= 10x): the fast and the
   baseline versions are timed back to back on the same series ``--repeat`` times (default 3) and the median of
   the paired ratios is reported with their range. It first checks on the baseline series that both versions
   produce identical capacity traces.

It exits 0 whatever the numbers: it reports, it does not gate.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from auditor.billing.aws_scaling import simulate_aws
from auditor.billing.evaluator_scaling import simulate_evaluator
from auditor.billing.simulate import SeriesRun
from tests.billing_reference import aws_naive, evaluator_naive

DAY = 1440
START = 20_000 * DAY  # an epoch minute at 00:00 UTC
TARGET_RATIO = 10.0

Series = tuple[list[float], list[float]]


def _counts(rng: random.Random, rates: list[float]) -> list[float]:
    """Per-minute request units for per-second rates: Poisson-like noise (normal approximation, clipped at 0)."""
    out = []
    for r in rates:
        lam = r * 60.0
        out.append(float(max(0, round(rng.gauss(lam, math.sqrt(lam))))) if lam > 0 else 0.0)
    return out


def _shape(rng: random.Random, kind: str, minutes: int) -> list[float]:
    """Units per second, per minute, for one dimension."""
    level = 10 ** rng.uniform(0, 3.3)  # 1 .. 2,000 units/s
    rates: list[float] = []
    if kind == "steady":
        drift = rng.uniform(-0.1, 0.1)
        rates = [level * (1 + drift * m / minutes) for m in range(minutes)]
    elif kind == "diurnal":
        low = rng.uniform(0.1, 0.5)
        peak = rng.uniform(10, 16)
        for m in range(minutes):
            h = (m % DAY) / 60
            weekend = 0.7 if (m // DAY) % 7 >= 5 else 1.0
            rates.append(level * weekend * (low + (1 - low) * (0.5 + 0.5 * math.cos((h - peak) / 24 * 2 * math.pi))))
    elif kind == "business":
        for m in range(minutes):
            h = (m % DAY) / 60
            busy = 8 <= h < 19 and (m // DAY) % 7 < 5
            rates.append(level if busy else level * 0.02)
    elif kind == "batch":
        start = rng.randrange(0, 20 * 60)
        length = rng.randrange(20, 90)
        base = level * rng.uniform(0.01, 0.1)
        rates = [level if start <= m % DAY < start + length else base for m in range(minutes)]
        for _ in range(minutes // 500):  # short bursts
            at = rng.randrange(minutes)
            for k in range(at, min(minutes, at + rng.randrange(1, 6))):
                rates[k] += level * rng.uniform(0.2, 1.0)
    else:  # sparse: a small table, idle most minutes
        p = rng.uniform(0.02, 0.3)
        rates = [rng.uniform(0.02, 2.0) if rng.random() < p else 0.0 for _ in range(minutes)]
    return rates


def make_pool(size: int, days: int, seed: int) -> list[Series]:
    rng = random.Random(seed)
    kinds = ["steady", "diurnal", "diurnal", "business", "batch", "sparse"]
    minutes = days * DAY
    pool = []
    for n in range(size):
        kind = kinds[n % len(kinds)]
        reads = _counts(rng, _shape(rng, kind, minutes))
        share = rng.uniform(0.05, 0.5)  # writes are a fraction of the reads' level, with their own shape
        writes = _counts(rng, [r * share for r in _shape(rng, kind, minutes)])
        pool.append((reads, writes))
    return pool


@dataclass
class Timing:
    name: str
    series: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.series / self.seconds if self.seconds > 0 else math.inf


def _time(name: str, fn: Callable[[list[float], list[float]], SeriesRun], pool: list[Series], count: int) -> Timing:
    started = time.perf_counter()
    for n in range(count):
        reads, writes = pool[n % len(pool)]
        fn(reads, writes)
    return Timing(name, count, time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=1000, help="series per fast simulator (default 1000)")
    parser.add_argument(
        "--baseline-series", type=int, default=24, help="series per baseline, 4 of each shape (default 24)"
    )
    parser.add_argument("--days", type=int, default=14, help="days of 1-minute data per series (default 14)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repeat", type=int, default=3, help="paired fast/baseline timings per simulator; the median ratio is reported"
    )
    args = parser.parse_args(argv)

    pool = make_pool(40, args.days, args.seed)
    minutes = args.days * DAY
    print(f"pool: {len(pool)} series pairs x {minutes} minutes (reads and writes); python {sys.version.split()[0]}")

    def evaluator(r: list[float], w: list[float]) -> SeriesRun:
        return simulate_evaluator(r, w, start_minute=START)

    def evaluator_ref(r: list[float], w: list[float]) -> SeriesRun:
        return evaluator_naive(r, w, start_minute=START)

    def aws(r: list[float], w: list[float]) -> SeriesRun:
        return simulate_aws(r, w, start_minute=START)

    def aws_ref(r: list[float], w: list[float]) -> SeriesRun:
        return aws_naive(r, w, start_minute=START)

    # The same answers first (on the baseline series).
    for reads, writes in pool[: args.baseline_series]:
        fast = simulate_evaluator(reads, writes, start_minute=START, trace=True)
        slow = evaluator_naive(reads, writes, start_minute=START)
        assert fast.read.capacity == slow.read.capacity and fast.write.capacity == slow.write.capacity
        fast = simulate_aws(reads, writes, start_minute=START, trace=True)
        slow = aws_naive(reads, writes, start_minute=START)
        assert fast.read.capacity == slow.read.capacity and fast.write.capacity == slow.write.capacity
    print(f"check: fast and baseline capacity traces identical on {min(args.baseline_series, len(pool))} series")

    # The ratio compares the same series: the baseline's subset, timed with both versions, back to back, --repeat
    # times (this machine is shared and noisy: the median of the paired ratios is reported, with their range).
    rows = []
    for label, fast_fn, ref_fn in (("evaluator", evaluator, evaluator_ref), ("aws", aws, aws_ref)):
        fast_all = _time(label, fast_fn, pool, args.series)
        pairs = []
        for _ in range(max(1, args.repeat)):
            fast_same = _time(label, fast_fn, pool, args.baseline_series)
            ref_same = _time(label + " baseline", ref_fn, pool, args.baseline_series)
            pairs.append((fast_same.rate / ref_same.rate, fast_same, ref_same))
        pairs.sort(key=lambda p: p[0])
        rows.append((label, fast_all, pairs))
    print()
    print(
        f"{'simulator':<10} {'series':>7} {'series/s':>9} | on the same {args.baseline_series} series "
        f"(median of {max(1, args.repeat)}): {'fast/s':>7} {'baseline/s':>10} {'ratio':>7} {'range':>13}"
    )
    for label, fast_all, pairs in rows:
        ratio, fast_same, ref_same = pairs[len(pairs) // 2]
        spread = f"{pairs[0][0]:.1f}-{pairs[-1][0]:.1f}x"
        print(
            f"{label:<10} {fast_all.series:>7} {fast_all.rate:>9.1f} | {'':>36}{fast_same.rate:>7.1f} "
            f"{ref_same.rate:>10.2f} {ratio:>6.1f}x {spread:>13}"
        )
    print()
    for label, fast_all, pairs in rows:
        ratio = pairs[len(pairs) // 2][0]
        verdict = "meets" if ratio >= TARGET_RATIO else "below"
        per_minute = fast_all.seconds / (fast_all.series * minutes) * 1e9
        goal = f"{verdict} the {TARGET_RATIO:.0f}x goal"
        print(f"{label}: {ratio:.1f}x the baseline, median ({goal}), {per_minute:.0f} ns per simulated minute")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

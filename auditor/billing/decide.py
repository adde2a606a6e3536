"""One billing decision per table: on-demand, provisioned with auto scaling, or the current configuration.

The decision sums the table and all its GSIs, reads and writes (billing mode is a table-level setting), recommends a
change only past a saving margin and, for provisioned, within the throttling allowed, and in the ``aws`` simulation
chooses the minimum capacity among the load's percentiles. The rules are in docs/billing-simulation.md.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Literal

from auditor.billing.aws_scaling import simulate_aws
from auditor.billing.evaluator_scaling import simulate_evaluator
from auditor.billing.pricing import ClassPrices, Dimension, RegionPrices, bundled_prices
from auditor.billing.simulate import (
    AwsBehaviour,
    DimensionRun,
    EvaluatorParams,
    ScalingPolicy,
    SeriesRun,
    needed_capacity,
)
from auditor.billing.trace import SeriesTrace
from auditor.detectors.base import BillingResultInput
from auditor.detectors.billing import billing_mode, table_class
from auditor.models.billing import (
    GIB,
    HOURS_PER_MONTH,
    Action,
    BillingConfig,
    BillingInput,
    BillingMode,
    BillingResult,
    CapacityRecommendation,
    CapacitySetting,
    CurrentScaling,
    DimensionResult,
    ReservedCapacityNote,
    ReservedCapacityTerm,
    SeriesInput,
    SeriesResult,
    Simulation,
    TableClassHint,
    TableClassName,
    Throttling,
)
from auditor.models.finding import Finding

DIMS: tuple[Dimension, Dimension] = ("read", "write")
#: Load percentiles tried as the minimum capacity in the ``aws`` simulation.
MIN_CAPACITY_QUANTILES = (0.25, 0.5, 0.75, 0.9, 1.0)
#: Recommended maximum capacity: this multiple of the capacity the peak minute needed.
MAX_CAPACITY_HEADROOM = 2.0


@dataclass(slots=True)
class BillingAnalysis:
    """The decision, its findings, and warnings for the user (e.g. fallback prices)."""

    result: BillingResult
    findings: list[Finding]
    warnings: list[str] = field(default_factory=list)
    #: Per-minute traces of the series (``analyze_billing(trace=True)``).
    traces: list[SeriesTrace] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """docs/contract.md JSON output: ``{"findings": [...], "billing": BillingResult}``."""
        return {
            "findings": [f.model_dump(mode="json") for f in self.findings],
            "billing": self.result.to_dict(),
        }


def evaluator_label(est: float, cur: float, od: float, modify_threshold: float = 0.15) -> str:
    """The archived evaluator's per-dimension recommendation (as the archived tool computes it), in its labels."""
    if est < cur and est < od and cur != 0 and (cur - est) / cur > modify_threshold:
        return "Provisioned_Modify"
    if cur != 0 and cur < od:
        return "Provisioned"
    if est < od:
        return "Provisioned"
    return "Ondemand"


# ------------------------------------------------------------------------------------------------ input grid


def _minutes(values: Sequence[float | None], per: int, total: int, *, split: bool) -> list[float | None]:
    """Per-minute values from per-period values (a period's Sum split evenly), padded with None to ``total``."""
    if per == 1:
        out = list(values)
    else:
        out = []
        for v in values:
            if v is None:
                out.extend([None] * per)
            else:
                out.extend([v / per if split else v] * per)
    if len(out) < total:
        out.extend([None] * (total - len(out)))
    return out


def _filled(values: Sequence[float | None]) -> list[float]:
    return [0.0 if v is None else v for v in values]


def _forward_filled(values: Sequence[float | None]) -> list[float] | None:
    """Provisioned capacity stays in force until it changes: carry the last value (the first backwards)."""
    first = next((v for v in values if v is not None), None)
    if first is None:
        return None
    out: list[float] = []
    last = first
    for v in values:
        if v is not None:
            last = v
        out.append(last)
    return out


def _hourly_means(minutes: Sequence[int], values: Sequence[float | None]) -> dict[int, float]:
    """Mean of the values present in each clock hour (CloudWatch hourly ``Average``)."""
    acc: dict[int, list[float]] = {}
    for m, v in zip(minutes, values, strict=True):
        if v is not None:
            acc.setdefault(m // 60, []).append(v)
    return {h: math.fsum(vs) / len(vs) for h, vs in acc.items()}


# ----------------------------------------------------------------------------------------------- simulation


@dataclass(slots=True)
class _Dim:
    run: DimensionRun
    policy: ScalingPolicy
    current_unit_hours: float
    current_hourly: dict[int, float]
    current: CurrentScaling | None = None


@dataclass(slots=True)
class _Series:
    index: str | None
    read: _Dim
    write: _Dim
    present: int
    expected: int

    def dim(self, d: Dimension) -> _Dim:
        return self.read if d == "read" else self.write


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))]


def _max_capacity(peak_units_per_minute: float, target: float, floor: float, ceiling: float) -> float:
    need = needed_capacity(peak_units_per_minute, target)
    return float(min(ceiling, max(floor, math.ceil(need * MAX_CAPACITY_HEADROOM), 1)))


def _simulate_aws_series(
    reads: list[float],
    writes: list[float],
    start_minute: int,
    cfg: BillingConfig,
    prices: ClassPrices,
) -> tuple[SeriesRun, ScalingPolicy, ScalingPolicy]:
    behaviour = AwsBehaviour(reaction_minutes=cfg.reaction_minutes)
    target_r, target_w = cfg.target("read"), cfg.target("write")
    floor = float(math.ceil(cfg.min_capacity))

    def mins(dim: Dimension, values: list[float], target: float) -> list[float]:
        """The minimum capacities tried: the one configured for the dimension, or the load's percentiles."""
        own = cfg.settings(dim).min_capacity
        if own is not None:
            return [float(math.ceil(own))]
        tried = [floor]
        if cfg.search_min_capacity:
            ordered = sorted(values)
            tried += [
                min(cfg.max_capacity, max(floor, float(needed_capacity(_quantile(ordered, q), target))))
                for q in MIN_CAPACITY_QUANTILES
            ]
        return tried

    def maximum(dim: Dimension, values: list[float], target: float, low: float) -> float:
        own = cfg.settings(dim).max_capacity
        return float(math.floor(own)) if own is not None else _max_capacity(max(values), target, low, cfg.max_capacity)

    tried_r, tried_w = mins("read", reads, target_r), mins("write", writes, target_w)
    # The same load percentile for both dimensions (as many runs as percentiles); a configured minimum is paired
    # with each of the other dimension's.
    if len(tried_r) == len(tried_w):
        floors = set(zip(tried_r, tried_w, strict=True))
    else:
        floors = {(r, w) for r in tried_r for w in tried_w}
    best: tuple[tuple[int, float, float], SeriesRun, ScalingPolicy, ScalingPolicy] | None = None
    for min_r, min_w in sorted(floors):
        pr = ScalingPolicy(target_r, min_r, maximum("read", reads, target_r, min_r))
        pw = ScalingPolicy(target_w, min_w, maximum("write", writes, target_w, min_w))
        run = simulate_aws(reads, writes, pr, pw, behaviour, start_minute=start_minute)
        shares = [run.read.throttled_share or 0.0, run.write.throttled_share or 0.0]
        acceptable = all(s <= cfg.max_throttled_share for s in shares)
        cost = run.read.unit_hours * prices.rcu_hour + run.write.unit_hours * prices.wcu_hour
        # Acceptable candidates by cost; if none is acceptable, the least throttled one.
        key = (0, cost, 0.0) if acceptable else (1, sum(shares), cost)
        if best is None or key < best[0]:
            best = (key, run, pr, pw)
    assert best is not None
    return best[1], best[2], best[3]


def _simulate(
    inp: BillingInput,
    simulation: Simulation,
    cfg: BillingConfig,
    prices: ClassPrices,
    traces: list[SeriesTrace] | None = None,
) -> tuple[list[_Series], list[str]]:
    per = inp.period_seconds // 60
    total = inp.minutes
    start_minute = int(inp.start.timestamp()) // 60
    grid = range(start_minute, start_minute + total)
    notes: list[str] = []
    out: list[_Series] = []
    for s in inp.series:
        cr = _minutes(s.consumed_read, per, total, split=True)
        cw = _minutes(s.consumed_write, per, total, split=True)
        present = sum(v is not None for v in s.consumed_read) + sum(v is not None for v in s.consumed_write)
        expected = 2 * inp.periods
        prov = _provisioned(s, inp, per, total)
        if simulation == "aws":
            run, pol_r, pol_w = _simulate_aws_series(_filled(cr), _filled(cw), start_minute, cfg, prices)
            cur = {d: _current_aws(prov[d], grid) for d in DIMS}
            if traces is not None:  # the chosen settings again, keeping every minute
                behaviour = AwsBehaviour(reaction_minutes=cfg.reaction_minutes)
                kept = simulate_aws(
                    _filled(cr), _filled(cw), pol_r, pol_w, behaviour, start_minute=start_minute, trace=True
                )
                traces.append(
                    SeriesTrace(
                        s.index,
                        start_minute,
                        cr,
                        list(kept.read.capacity or []),
                        kept.read.throttled,
                        cw,
                        list(kept.write.capacity or []),
                        kept.write.throttled,
                    )
                )
        else:
            pol_r, pol_w = (
                ScalingPolicy(
                    cfg.target(d),
                    cfg.settings(d).min_capacity or cfg.min_capacity,
                    cfg.settings(d).max_capacity or cfg.evaluator_max_capacity,
                )
                for d in DIMS
            )
            rm = [m for m, v in zip(grid, cr, strict=True) if v is not None]
            wm = [m for m, v in zip(grid, cw, strict=True) if v is not None]
            run = simulate_evaluator(
                [v for v in cr if v is not None],
                [v for v in cw if v is not None],
                EvaluatorParams(read=pol_r, write=pol_w),
                read_minutes=rm,
                write_minutes=wm,
                trace=traces is not None,
            )
            if traces is not None:  # capacity at the minutes the evaluator saw (it drops the others)
                at_r = dict(zip(rm, run.read.capacity or [], strict=False))
                at_w = dict(zip(wm, run.write.capacity or [], strict=False))
                traces.append(
                    SeriesTrace(
                        s.index,
                        start_minute,
                        cr,
                        [at_r.get(m) for m in grid],
                        None,
                        cw,
                        [at_w.get(m) for m in grid],
                        None,
                    )
                )
            notes.extend(f"{s.index or 'table'}: {n}" for n in run.notes)
            cur = {
                "read": _current_evaluator(prov["read"], grid, run.read.hours),
                "write": _current_evaluator(prov["write"], grid, run.write.hours),
            }
        out.append(
            _Series(
                index=s.index,
                read=_Dim(run.read, pol_r, cur["read"][0], cur["read"][1], (s.auto_scaling or {}).get("read")),
                write=_Dim(run.write, pol_w, cur["write"][0], cur["write"][1], (s.auto_scaling or {}).get("write")),
                present=present,
                expected=expected,
            )
        )
    return out, notes


def _provisioned(s: SeriesInput, inp: BillingInput, per: int, total: int) -> dict[str, list[float | None] | None]:
    if inp.billing_mode != "PROVISIONED":
        return {"read": None, "write": None}
    return {
        "read": _minutes(s.provisioned_read or [], per, total, split=False),
        "write": _minutes(s.provisioned_write or [], per, total, split=False),
    }


def _current_aws(values: list[float | None] | None, grid: range) -> tuple[float, dict[int, float]]:
    """Current provisioned unit-hours over every minute of the window (capacity carried across gaps)."""
    filled = _forward_filled(values) if values is not None else None
    if filled is None:
        return 0.0, {}
    return math.fsum(filled) / 60.0, _hourly_means(grid, filled)


def _current_evaluator(
    values: list[float | None] | None, grid: range, hours: Sequence[int]
) -> tuple[float, dict[int, float]]:
    """The evaluator's current cost: hourly mean provisioned units, for the hours its estimate has."""
    if values is None:
        return 0.0, {}
    means = _hourly_means(grid, values)
    kept = {h: means[h] for h in hours if h in means}
    return math.fsum(kept.values()), kept


# ------------------------------------------------------------------------------------------------- decision


def _best_reserved_units(usage: list[float], rc: float, rate: float) -> tuple[float, int, float]:
    """Cost without reservation, and the cheapest number of reserved units (blocks of 100) with its cost.

    The cost of ``units`` reserved, ``n * units * rc + rate * sum(max(u - units, 0))``, is piecewise linear in
    ``units`` with breaks at the usage values, so over multiples of 100 its minimum lies on the multiple just
    below or above a usage value: those O(n) candidates are tried (each in O(log n) on sorted usage), never the
    whole range up to the peak (a 1e12 spike would be 1e10 steps). Ties go to the fewest units.
    """
    values = sorted(usage)
    n = len(values)
    suffix = [0.0] * (n + 1)  # suffix[i] = sum(values[i:])
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + values[i]

    def cost(units: int) -> float:
        above = bisect.bisect_right(values, units)
        return n * units * rc + rate * (suffix[above] - units * (n - above))

    top = 100 * math.ceil(values[-1] / 100) if n else 0
    candidates = {100, top}
    for u in values:
        candidates.add(100 * math.floor(u / 100))
        candidates.add(100 * math.ceil(u / 100))
    base = cost(0)
    best_units, best_cost = 0, base
    for units in sorted(c for c in candidates if 100 <= c <= top):
        c = cost(units)
        if c < best_cost - 1e-9 * max(1.0, abs(best_cost)):
            best_units, best_cost = units, c

    def exact(units: int) -> float:
        return math.fsum(units * rc + max(u - units, 0.0) * rate for u in usage)

    return exact(0), best_units, exact(best_units)


def _rc_note(
    hourly: dict[Dimension, list[float]], prices: RegionPrices, window_hours: float
) -> ReservedCapacityNote | None:
    """Reserved capacity worth owning for the recommended provisioned capacity (blocks of 100 units)."""
    terms: list[ReservedCapacityTerm] = []
    for d in DIMS:
        usage = hourly[d]
        if not usage:
            continue
        rate = prices.standard.capacity_hour(d)
        for years in (1, 3):
            offer = prices.reserved_offer(d, years)
            if offer is None:
                continue
            rc = offer.per_unit_hour

            base, best_units, best_cost = _best_reserved_units(usage, rc, rate)
            if best_units:
                terms.append(
                    ReservedCapacityTerm(
                        dimension=d,
                        years=years,
                        units=best_units,
                        upfront=best_units / 100 * offer.upfront_per_100,
                        monthly_savings=(base - best_cost) * HOURS_PER_MONTH / window_hours,
                    )
                )
    if not terms:
        return None
    one = [t for t in terms if t.years == 1]
    parts = [
        f"{t.units} {'RCU' if t.dimension == 'read' else 'WCU'} (${t.upfront:,.0f} upfront, about "
        f"${t.monthly_savings:,.2f}/month less)"
        for t in (one or terms)
    ]
    years = 1 if one else 3
    note = (
        f"The provisioned load is steady enough for reserved capacity: owning {' and '.join(parts)} on a "
        f"{years}-year term would cut the provisioned cost further (Standard class, this region and account; "
        "compare with reservations you already own)."
    )
    return ReservedCapacityNote(note=note, terms=terms)


def _class_hint(
    inp: BillingInput,
    sims: list[_Series],
    prices: RegionPrices,
    cfg: BillingConfig,
    recommended: BillingMode,
    use_current: bool,
    monthly: float,
) -> TableClassHint | None:
    if inp.table_size_bytes is None:
        return None
    gb = inp.table_size_bytes / GIB
    totals: dict[TableClassName, tuple[float, float]] = {}
    for cls in ("STANDARD", "STANDARD_INFREQUENT_ACCESS"):
        p = prices.for_class(cls)
        throughput = 0.0
        for s in sims:
            for d in DIMS:
                dim = s.dim(d)
                if recommended == "PAY_PER_REQUEST":
                    throughput += dim.run.consumed_units * p.request_unit(d)
                else:
                    units = dim.current_unit_hours if use_current else dim.run.unit_hours
                    throughput += units * p.capacity_hour(d)
        totals[cls] = (gb * p.storage_gb_month, throughput * monthly)
    std = sum(totals["STANDARD"])
    ia = sum(totals["STANDARD_INFREQUENT_ACCESS"])
    current = inp.table_class
    cur_cost, other_cost = (std, ia) if current == "STANDARD" else (ia, std)
    other: TableClassName = "STANDARD_INFREQUENT_ACCESS" if current == "STANDARD" else "STANDARD"
    switch = other_cost < cur_cost * (1 - cfg.margin) and cur_cost - other_cost >= cfg.min_monthly_savings
    return TableClassHint(
        current_class=current,
        recommended_class=other if switch else current,
        storage_gb=gb,
        storage_share=totals["STANDARD"][0] / std if std > 0 else 0.0,
        monthly_cost_standard=std,
        monthly_cost_standard_ia=ia,
        monthly_savings=cur_cost - other_cost if switch else 0.0,
    )


def _confidence(present: int, expected: int, days: float, cfg: BillingConfig) -> tuple[float, float, str]:
    coverage = present / expected if expected else 0.0
    confidence = round(coverage * min(1.0, days / cfg.full_confidence_days), 3)
    label: Literal["high", "medium", "low"] = "high" if confidence >= 0.75 else "medium" if confidence >= 0.4 else "low"
    return round(coverage, 4), confidence, label


def _price_warnings(inp: BillingInput, prices: RegionPrices) -> list[str]:
    """What the user should know about the prices used for the table's region."""
    if prices.fallback_for is not None:
        return [
            f"no bundled prices for region {inp.region}; using {prices.region} list prices as a labelled default "
            "(pass a price file for exact figures)"
        ]
    if prices.region != inp.region:
        return [f"prices are for {prices.region} but the table is in {inp.region}"]
    return []


def _period_note(period_seconds: int) -> str:
    """How periods longer than a minute were simulated, and what that costs in accuracy."""
    return (
        f"{period_seconds}-second periods were spread evenly over their minutes, so spikes shorter than a "
        "period are invisible and the simulated provisioned cost is low for spiky loads: on the 18 benchmark "
        "shapes (benchmarks/billing_shapes.py), 5-minute input gave 0 % to 58 % less than 1-minute input, 0 to "
        "5 % for all but the hourly-spiky one, with the same recommendation; the figures hold for 1-minute input"
    )


def _series_results(
    sims: list[_Series],
    simulation: Simulation,
    cfg: BillingConfig,
    prices: ClassPrices,
    provisioned_now: bool,
) -> tuple[list[SeriesResult], float]:
    """Each series' costs per dimension (with the dimension's own recommendation), and the window's cost (USD) if
    each clock hour were billed at the highest capacity in force in it (``aws`` only, else 0)."""
    hourly_peak = 0.0
    series_out: list[SeriesResult] = []
    for s in sims:
        dims: dict[str, DimensionResult] = {}
        for d in DIMS:
            dim = s.dim(d)
            run = dim.run
            od = run.consumed_units * prices.request_unit(d)
            est = run.unit_hours * prices.capacity_hour(d)
            hourly_peak += (run.peak_hour_unit_hours or 0.0) * prices.capacity_hour(d)
            cur = dim.current_unit_hours * prices.capacity_hour(d) if provisioned_now else 0.0
            if simulation == "evaluator":
                label = evaluator_label(est, cur, od, cfg.modify_threshold)
            else:
                label = "PAY_PER_REQUEST" if od <= min(est, cur if provisioned_now else math.inf) else "PROVISIONED"
            share = run.throttled_share
            dims[d] = DimensionResult(
                on_demand_cost=od,
                provisioned_cost_simulated=est,
                provisioned_cost_current=cur,
                recommended_mode=label,
                consumed_units=run.consumed_units,
                peak_units_per_second=run.peak_per_second,
                simulated_min_capacity=dim.policy.min_capacity,
                simulated_max_capacity=dim.policy.max_capacity,
                throttled_units=run.throttled_units,
                throttled_share=share,
            )
        series_out.append(SeriesResult(index=s.index, read=dims["read"], write=dims["write"]))
    return series_out, hourly_peak


def _total(dims: Sequence[DimensionResult], value: Callable[[DimensionResult], float | None]) -> float:
    """A window total (USD or units) over every series and dimension: ``value`` of each (None counts 0), added in
    order one by one."""
    total = 0.0
    for dim in dims:
        total += value(dim) or 0.0
    return total


def _choose(
    mode: BillingMode,
    acceptable: bool,
    current_cost: float,
    on_demand: float,
    simulated: float,
    cfg: BillingConfig,
) -> tuple[Action, BillingMode, float]:
    """The action, the recommended mode and its monthly cost: the cheapest option when it saves ``margin`` of the
    current cost and ``min_monthly_savings`` dollars, else keep (provisioned only with acceptable throttling)."""
    options: list[tuple[float, Action, BillingMode]] = []
    if mode == "PROVISIONED":
        options.append((on_demand, "switch_to_on_demand", "PAY_PER_REQUEST"))
        if acceptable:
            options.append((simulated, "adjust_provisioned", "PROVISIONED"))
    elif acceptable:
        options.append((simulated, "switch_to_provisioned", "PROVISIONED"))
    if options:
        cost, best_action, best_mode = min(options, key=lambda o: o[0])
        saving = current_cost - cost
        if cost < current_cost * (1 - cfg.margin) and saving >= cfg.min_monthly_savings:
            return best_action, best_mode, cost
    return "keep", mode, current_cost


def _reserved_capacity(
    sims: list[_Series], use_current: bool, prices: RegionPrices, window_hours: float
) -> ReservedCapacityNote | None:
    """The reserved-capacity note for the provisioned capacity recommended: the current one when it is kept, else
    the simulated one, summed per clock hour over the table and its GSIs."""
    hourly: dict[Dimension, list[float]] = {}
    for d in DIMS:
        acc: dict[int, float] = {}
        for s in sims:
            dim = s.dim(d)
            pairs = (
                dim.current_hourly.items() if use_current else zip(dim.run.hours, dim.run.hourly_capacity, strict=True)
            )
            for h, v in pairs:
                acc[h] = acc.get(h, 0.0) + v
        hourly[d] = [acc[h] for h in sorted(acc)]
    return _rc_note(hourly, prices, window_hours)


def _missing_note(coverage: float, simulation: Simulation) -> str:
    return f"{(1 - coverage):.1%} of the datapoints are missing" + (
        " and counted as zero load" if simulation == "aws" else " and dropped (the evaluator's behaviour)"
    )


def ran_at_capacity(inp: BillingInput) -> bool:
    """Whether the table or a GSI consumed at least the provisioned capacity in force in some period: there its
    requests throttle (burst capacity aside)."""
    for s in inp.series:
        for consumed, prov in ((s.consumed_read, s.provisioned_read), (s.consumed_write, s.provisioned_write)):
            for c, p in zip(consumed, prov or [], strict=False):
                if c is not None and p is not None and p > 0 and c / inp.period_seconds >= p:
                    return True
    return False


#: The note of a throttled table whose cheaper provisioned option is not advised.
THROTTLED_NOTE = "the table throttled in the period: no lower capacity and no reserved capacity is advised"


def decide_table(
    inp: BillingInput,
    *,
    simulation: Simulation = "aws",
    config: BillingConfig | None = None,
    prices: RegionPrices | None = None,
    traces: list[SeriesTrace] | None = None,
    throttled: bool = False,
) -> tuple[BillingResult, list[str]]:
    """The per-table decision (no findings). Returns the result and warnings for the user.

    With ``traces`` (a list), each series' per-minute consumed, simulated and throttled capacity is appended to it.
    A table that throttled in the period (``throttled``, or consumption at its provisioned capacity) is never advised
    a provisioned option (lower capacity) nor reserved capacity: it keeps its mode or moves to on-demand.
    """
    cfg = config or BillingConfig()
    if prices is None:
        prices = bundled_prices(inp.region)
    warnings = _price_warnings(inp, prices)
    cls_prices = prices.for_class(inp.table_class)
    sims, notes = _simulate(inp, simulation, cfg, cls_prices, traces)
    if inp.period_seconds != 60:
        notes.append(_period_note(inp.period_seconds))

    window_hours = inp.minutes / 60.0
    days = inp.minutes / 1440.0
    monthly = HOURS_PER_MONTH / window_hours
    provisioned_now = inp.billing_mode == "PROVISIONED"
    series_out, hourly_peak_cost = _series_results(sims, simulation, cfg, cls_prices, provisioned_now)
    dims = [dim for s in series_out for dim in (s.read, s.write)]

    od_m = _total(dims, attrgetter("on_demand_cost")) * monthly
    est_m = _total(dims, attrgetter("provisioned_cost_simulated")) * monthly
    cur_m = _total(dims, attrgetter("provisioned_cost_current")) * monthly if provisioned_now else None
    current_cost = cur_m if cur_m is not None else od_m
    modelled = simulation == "aws"
    throttled_units = _total(dims, attrgetter("throttled_units"))
    demand_units = _total(dims, attrgetter("consumed_units"))
    acceptable = not any(d.throttled_share is not None and d.throttled_share > cfg.max_throttled_share for d in dims)
    throttling = Throttling(
        modelled=modelled,
        throttled_units=throttled_units if modelled else None,
        throttled_share=(throttled_units / demand_units if demand_units else 0.0) if modelled else None,
        acceptable=acceptable,
        max_share=cfg.max_throttled_share,
    )
    action, recommended, recommended_cost = _choose(inp.billing_mode, acceptable, current_cost, od_m, est_m, cfg)
    throttled = throttled or ran_at_capacity(inp)
    if throttled:
        notes.append(THROTTLED_NOTE)
        if action in ("adjust_provisioned", "switch_to_provisioned"):
            action, recommended, recommended_cost = "keep", inp.billing_mode, current_cost
    reason = _reason(action, current_cost, od_m, est_m, cur_m, acceptable, throttling, cfg)

    coverage, confidence, label = _confidence(sum(s.present for s in sims), sum(s.expected for s in sims), days, cfg)
    if coverage < 1.0:
        notes.append(_missing_note(coverage, simulation))
    capacity = [
        CapacityRecommendation(
            index=s.index,
            read=_setting(s.read, "read", cfg, simulation),
            write=_setting(s.write, "write", cfg, simulation),
        )
        for s in sims
    ]
    use_current = recommended == "PROVISIONED" and action == "keep"
    rc: ReservedCapacityNote | None = None
    if recommended == "PROVISIONED" and inp.table_class == "STANDARD" and not throttled:
        rc = _reserved_capacity(sims, use_current, prices, window_hours)
    hourly_peak = hourly_peak_cost * monthly if simulation == "aws" else None
    result = BillingResult(
        table=inp.table,
        current_mode=inp.billing_mode,
        recommended_mode=recommended,
        monthly_cost_current=current_cost,
        monthly_cost_recommended=recommended_cost,
        monthly_savings=current_cost - recommended_cost,
        days_analyzed=days,
        simulation=simulation,
        series=series_out,
        region=inp.region,
        table_class=inp.table_class,
        window_start=inp.start,
        window_end=inp.end,
        action=action,
        reason=reason,
        monthly_cost_on_demand=od_m,
        monthly_cost_provisioned_simulated=est_m,
        monthly_cost_provisioned_current=cur_m,
        confidence=confidence,
        confidence_label=label,
        coverage=coverage,
        throttling=throttling,
        capacity=capacity,
        pricing=prices.label(),
        table_class_hint=_class_hint(inp, sims, prices, cfg, recommended, use_current, monthly),
        reserved_capacity=rc,
        notes=notes,
        assumptions=assumptions(simulation, cfg, hourly_peak),
        monthly_cost_provisioned_simulated_hourly_peak=hourly_peak,
    )
    return result, warnings


def assumptions(simulation: Simulation, cfg: BillingConfig, hourly_peak_monthly: float | None) -> list[str]:
    """The rules behind the simulated provisioned cost, each marked documented (with its page) or assumed."""
    if simulation == "evaluator":
        return [
            "rules of the archived awslabs capacity-mode-evaluator, reproduced exactly: scale-out from the two "
            "previous minutes, scale-in from the busiest of 15 below target/1.2, 4 decreases a day then one an "
            "hour, no throttling, burst or delay; datapoints missing from the input are dropped",
        ]
    b = AwsBehaviour(reaction_minutes=cfg.reaction_minutes)
    out = [
        f"scale-out when consumed capacity exceeds the target utilisation for {b.scale_out_minutes} consecutive "
        "minutes (documented: DynamoDB 'Metrics and dimensions' and auto scaling pages)",
        f"scale-in when {b.scale_in_minutes} consecutive minutes run {b.scale_in_gap:g} points or more below the "
        "target, never while consumed capacity is zero (documented: AWS Knowledge Center 'dynamodb-auto-scaling'; "
        "DynamoDB auto scaling page)",
        f"new capacity in force {b.reaction_minutes} minutes after the alarm's last datapoint: alarm delay plus "
        "UpdateTable (assumed; AWS documents 'a short delay of up to a few minutes' and 'several minutes' to "
        "update; --reaction-minutes changes it)",
        f"burst capacity: up to {b.burst_seconds} seconds of unused capacity is spent before requests throttle "
        "(documented as current behaviour that may change)",
        f"decreases: each scalable target's scale-in is its own UpdateTable request; the table (and each GSI) may "
        f"decrease {b.free_decreases_per_day} times within {b.free_decrease_window_minutes} minutes of its first "
        f"decrease of the UTC day, then once per {b.decrease_interval_minutes} minutes without a decrease "
        "(documented: DynamoDB quotas, 'Decreasing provisioned throughput')",
        "missing minutes count as zero load; every minute is billed, at least at the minimum capacity",
    ]
    billing = (
        "billing: provisioned capacity per clock hour at the hour's time-weighted capacity (AWS documents an hourly "
        "rate on the capacity provisioned, not how a change within an hour is prorated)"
    )
    if hourly_peak_monthly is not None:
        billing += f"; billed at each hour's highest capacity instead: ${hourly_peak_monthly:,.2f}/month"
    out.append(billing)
    return out


def _setting(dim: _Dim, d: Dimension, cfg: BillingConfig, simulation: Simulation) -> CapacitySetting:
    target = dim.policy.target_utilization
    if simulation == "aws":
        lo, hi = dim.policy.min_capacity, dim.policy.max_capacity
    else:
        lo = math.ceil(dim.policy.min_capacity)
        own = cfg.settings(d).max_capacity
        peak = dim.run.peak_per_second * 60
        hi = own if own is not None else _max_capacity(peak, target, lo, dim.policy.max_capacity)
    # Never below the observed need: the peak minute served at the target utilisation.
    need = needed_capacity(dim.run.peak_per_second * 60, target)
    lo = max(lo, 1)
    hi = max(hi, lo, need)
    current = dim.current
    optimal = None
    if current is not None:
        optimal = (current.target_utilization, current.min_capacity, current.max_capacity) == (target, int(lo), int(hi))
    return CapacitySetting(
        target_utilization=target,
        min_capacity=int(lo),
        max_capacity=int(hi),
        current=current,
        already_optimal=optimal,
    )


def _reason(
    action: Action,
    current: float,
    od: float,
    est: float,
    cur: float | None,
    acceptable: bool,
    throttling: Throttling,
    cfg: BillingConfig,
) -> str:
    risk = ""
    if throttling.modelled and throttling.throttled_share is not None:
        risk = f"; simulated throttling {throttling.throttled_share:.3%} of requests"
    if action == "switch_to_on_demand":
        return f"on-demand ${od:,.2f}/month is below the current provisioned ${current:,.2f}/month"
    if action == "switch_to_provisioned":
        return f"auto-scaled provisioned ${est:,.2f}/month is below on-demand ${od:,.2f}/month{risk}"
    if action == "adjust_provisioned":
        return f"auto scaling sized to the load costs ${est:,.2f}/month against ${current:,.2f}/month today{risk}"
    if not acceptable:
        return (
            f"provisioned would cost ${est:,.2f}/month but its simulated throttling exceeds "
            f"{cfg.max_throttled_share:.2%} of requests{risk}"
        )
    alternatives = [od, est] if cur is not None else [est]
    best = min(alternatives)
    return (
        f"no alternative saves {cfg.margin:.0%} and ${cfg.min_monthly_savings:,.2f}/month "
        f"(current ${current:,.2f}, best alternative ${best:,.2f}){risk}"
    )


def analyze_billing(
    inp: BillingInput,
    *,
    simulation: Simulation = "aws",
    config: BillingConfig | None = None,
    prices: RegionPrices | None = None,
    account: str | None = None,
    mode_config: billing_mode.BillingModeConfig | None = None,
    class_config: table_class.TableClassConfig | None = None,
    trace: bool = False,
    throttled: bool = False,
) -> BillingAnalysis:
    """Decide and produce the ``billing_mode`` and ``table_class`` findings (docs/contract.md); ``trace`` keeps every
    series' per-minute capacity in ``traces``; ``throttled``: the table throttled in the period (see
    :func:`decide_table`)."""
    traces: list[SeriesTrace] | None = [] if trace else None
    result, warnings = decide_table(
        inp, simulation=simulation, config=config, prices=prices, traces=traces, throttled=throttled
    )
    data = BillingResultInput(result, account)
    findings = billing_mode.detect(data, mode_config) + table_class.detect(data, class_config)
    findings.sort(key=Finding.sort_key)
    return BillingAnalysis(result=result, findings=findings, warnings=warnings, traces=traces or [])

"""Two simulators of provisioned capacity under auto scaling, from per-minute consumed capacity.

Both take the CloudWatch ``Sum`` of ``Consumed{Read|Write}CapacityUnits`` per minute for one table or one GSI
(reads and writes together, because they share a decrease quota), and return the simulated capacity priced-free:
unit totals that :mod:`auditor.billing.decide` multiplies by a price table.

Both are event-driven and O(n) per series. Capacity only changes where a rule fires, so from each minute they
find the next minute where one might (:func:`auditor.billing.series_search.earliest`: searches over the raw values with
C-speed ``max``/``min`` over slices, sampled where a window is involved, with thresholds derived from the current
capacity and a margin on the safe side), append the minutes before it in one step, and run every rule on that
minute only; where changes come every few minutes (a rising load) they step minute by minute instead of searching.
A minute's rules read a 15-minute window only where cheap checks leave its scale-in possible, and the "no
decrease in the last 15/60 minutes" rules read the index of the last decrease. The results are bit-for-bit those
of the per-minute rules (:mod:`tests.billing_reference`, which rescans its windows every minute, is the oracle
the tests compare against and the benchmark's baseline).

``evaluator`` reproduces the archived awslabs capacity-mode-evaluator exactly (its published source: the
GitHub repository awslabs/amazon-dynamodb-tools, capacity-mode-evaluator). With ``r_i`` the consumed units per
second in datapoint ``i`` and ``f(x) = x / U * 100``:

1. ``p_0 = min(max(f(r_0), m), M)``; ``p_1 = p_2 = p_0``.
2. Scale-out, i >= 3, from the two previous datapoints: with ``lo``/``hi`` their min/max and
   ``v = min(max(f(lo), p_{i-1}), M)``: ``p_i = f(hi)`` if ``v == f(lo)`` (so equality counts, and ``f(hi)`` is not
   clamped to ``M``), else ``p_i = v``.
3. Scale-in, i >= 15: ``cand = max(min(f(max(r_{i-15..i-1})), p_i), m)``; a dimension qualifies when
   ``p_{i-1} > 1.2 * cand`` (the busiest of the last 15 minutes ran below U/1.2). One counter ``k``, shared by
   reads and writes, resets when the read datapoint's time is 00:00:00 UTC. While ``k < 4``: reads, then writes,
   each only if its own ``p`` did not decrease within the last 15 datapoints: apply ``cand`` if it qualifies, and
   ``k += 1`` if ``p_{i-1} > p_i``. Once ``k >= 4`` and i >= 60: only if neither ``p`` decreased within the last 60
   datapoints; if both qualify one is applied, alternating (write first); ``k`` no longer counts.
4. Costing by clock hour: ``mean(p)`` of the datapoints in the hour is billed as capacity unit-hours; hours
   without datapoints cost nothing. Reads and writes are aligned by position and truncated to the shorter list;
   windows are positional (a missing minute stretches them), exactly as in the archived tool.

``aws`` follows documented AWS behaviour instead (docs/billing-simulation.md cites each rule's page):

- the input is a complete minute grid (callers fill missing minutes with 0), and every minute is billed, at least
  at the minimum capacity; capacity is a whole number of units (``ceil``);
- scale-out when the served load exceeded the target utilisation in each of the last 2 minutes, to
  ``ceil(max(last 2 minutes) / target)`` (clamped to the maximum);
- scale-in when the served load stayed more than 20 percentage points below target (70 % → 50 %) for the last
  15 minutes, to ``ceil(max(last 15 minutes) / target)`` (at least the minimum), but never on a window that
  consumed nothing ("auto scaling does not scale down your provisioned capacity if your table's consumed capacity
  becomes zero");
- a new capacity takes effect ``reaction_minutes`` after the alarm fires (UpdateTable time); a dimension with a
  change in flight does not start another;
- decreases follow the DynamoDB quota per table and per GSI: up to 4 within an hour of the UTC day's first
  decrease, then one more whenever none happened in the previous 60 minutes; reads and writes are separate
  scalable targets, so each one's scale-in is its own UpdateTable and its own decrease on the table's counter
  (reads decided first);
- burst capacity: up to ``burst_seconds`` (300) of unused capacity is banked and spent when demand exceeds
  capacity; what is still above is throttled and counted in request units. Auto scaling sees what was served
  (consumed capacity), so a throttled table scales up by at most ``1/target`` per step, as real tables do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from auditor.billing.series_search import Search, earliest, first_at_least

MINUTES_PER_DAY = 1440
#: The evaluator's scale-in window: the busiest of the previous 15 datapoints.
_SCALE_IN_WINDOW = 15
#: Datapoints (minutes) run through every rule from the one a skip-ahead search stops at: one after a long skip,
#: twice as many after each skip shorter than ``_SHORT_SKIP``, up to the maximum. Where changes come every few
#: minutes (a rising load), stepping through them costs less than searching for each.
_SLOW_RUN = 1
_MAX_SLOW_RUN = 64
_SHORT_SKIP = 8
#: No search when the next change in flight or day boundary is at most this many minutes away.
_SHORT_BOUND = 2
#: Tolerance of the ``aws`` capacity sizing: ``ceil(units / (60 * target) - 1e-9)``.
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    """An auto-scaling policy of one dimension: target utilisation (percent), min and max capacity units."""

    target_utilization: float = 70.0
    min_capacity: float = 1.0
    max_capacity: float = 40_000.0

    def __post_init__(self) -> None:
        if not 0 < self.target_utilization <= 100:
            raise ValueError(f"target_utilization must be in (0, 100], got {self.target_utilization}")
        if not 0 < self.min_capacity <= self.max_capacity:
            raise ValueError(f"need 0 < min_capacity <= max_capacity, got {self.min_capacity}/{self.max_capacity}")


#: The archived evaluator's defaults (its CLI: utilisation 70, minimum 1, maximum 80,000 units).
EVALUATOR_POLICY = ScalingPolicy(target_utilization=70.0, min_capacity=1.0, max_capacity=80_000.0)


@dataclass(frozen=True, slots=True)
class EvaluatorParams:
    """Parameters of the ``evaluator`` simulation (the archived tool's CLI options)."""

    read: ScalingPolicy = EVALUATOR_POLICY
    write: ScalingPolicy = EVALUATOR_POLICY
    #: Scale-in when ``p_{i-1} > scale_in_factor * cand``, i.e. below U / 1.2 utilisation.
    scale_in_factor: float = 1.2
    free_decreases: int = 4


@dataclass(frozen=True, slots=True)
class AwsBehaviour:
    """Documented AWS auto-scaling and capacity behaviour used by the ``aws`` simulation."""

    #: High alarm: consumed above target for this many consecutive 1-minute datapoints.
    scale_out_minutes: int = 2
    #: Low alarm: consumed this many percentage points below target ...
    scale_in_gap: float = 20.0
    #: ... for this many consecutive 1-minute datapoints.
    scale_in_minutes: int = 15
    #: Minutes from the alarm firing to the new capacity being in force (alarm action plus UpdateTable).
    reaction_minutes: int = 2
    #: Unused capacity banked for bursts, in seconds of the current capacity.
    burst_seconds: int = 300
    #: Decreases per UTC day that may come together: up to this many ...
    free_decreases_per_day: int = 4
    #: ... within this many minutes of the day's first decrease (DynamoDB quotas: "up to four decreases within one
    #: hour as long as you have not performed any other decreases yet during that day") ...
    free_decrease_window_minutes: int = 60
    #: ... then one more whenever none happened in this many minutes ("one additional decrease per hour as long as
    #: there was no decreases in the preceding hour").
    decrease_interval_minutes: int = 60
    #: The quota belongs to the table (or GSI): reads and writes draw on one counter, although each scalable target's
    #: scale-in is its own UpdateTable request and its own decrease. False: one counter per dimension.
    shared_decrease_quota: bool = True
    #: Auto scaling "does not scale down your provisioned capacity if your table's consumed capacity becomes zero":
    #: a low alarm whose whole window consumed nothing does not lower the capacity (True: it does).
    scale_in_at_zero: bool = False

    def __post_init__(self) -> None:
        if self.scale_out_minutes < 1 or self.scale_in_minutes < 1:
            raise ValueError("alarm datapoints must be at least 1")
        if self.reaction_minutes < 0 or self.burst_seconds < 0:
            raise ValueError("reaction_minutes and burst_seconds cannot be negative")
        if self.free_decrease_window_minutes < 0 or self.decrease_interval_minutes < 0:
            raise ValueError("decrease windows cannot be negative")


@dataclass(slots=True)
class DimensionRun:
    """What one simulated dimension (reads or writes of a table or GSI) did, in units (not dollars)."""

    consumed_units: float
    #: Provisioned capacity billed, in capacity unit-hours.
    unit_hours: float
    #: Clock hours present (epoch hours, ascending) and the mean capacity in each.
    hours: list[int]
    hourly_capacity: list[float]
    peak_per_second: float
    min_capacity_seen: float
    max_capacity_seen: float
    increases: int
    decreases: int
    #: Request units the simulated capacity could not serve (``aws`` only; None when not modelled).
    throttled_units: float | None = None
    throttled_minutes: int | None = None
    #: Per-minute capacity, when the simulation ran with ``trace=True``.
    capacity: list[float] | None = None
    #: Capacity unit-hours if each clock hour were billed at the highest capacity in force in it (``aws`` only; an
    #: hour cut by the window's edge pro rata): the upper bound of hourly billing next to ``unit_hours``.
    peak_hour_unit_hours: float | None = None
    #: Per-minute throttled units, when the ``aws`` simulation ran with ``trace=True``.
    throttled: list[float] | None = None

    @property
    def throttled_share(self) -> float | None:
        """Throttled request units over demanded request units (None when not modelled)."""
        if self.throttled_units is None:
            return None
        return self.throttled_units / self.consumed_units if self.consumed_units > 0 else 0.0


@dataclass(slots=True)
class SeriesRun:
    """A simulated table or GSI: both dimensions."""

    read: DimensionRun
    write: DimensionRun
    minutes: int
    #: Decreases charged to the quota: UpdateTable decreases (``aws``) or the evaluator's counter increments.
    decrease_events: int = 0
    notes: list[str] = field(default_factory=list)


def _next_slow_run(slow_run: int, skipped: int) -> int:
    """How many datapoints to run through every rule after a search that skipped ``skipped`` of them."""
    if skipped >= _SHORT_SKIP:
        return _SLOW_RUN
    return slow_run + slow_run if slow_run < _MAX_SLOW_RUN else slow_run


def _empty_dimension() -> DimensionRun:
    return DimensionRun(0.0, 0.0, [], [], 0.0, 0.0, 0.0, 0, 0)


def _hourly(minutes: Sequence[int], capacity: Sequence[float]) -> tuple[list[int], list[float], float]:
    """Mean capacity per clock hour of the datapoints present, and the sum of those means."""
    hours: list[int] = []
    means: list[float] = []
    cur = -1
    acc = 0.0
    cnt = 0
    for m, p in zip(minutes, capacity, strict=False):
        h = m // 60
        if h != cur:
            if cnt:
                hours.append(cur)
                means.append(acc / cnt)
            cur, acc, cnt = h, 0.0, 0
        acc += p
        cnt += 1
    if cnt:
        hours.append(cur)
        means.append(acc / cnt)
    return hours, means, math.fsum(means)


# -------------------------------------------------------------------------------------------------- evaluator


def _hourly_grid(start_minute: int, capacity: Sequence[float]) -> tuple[list[int], list[float], float]:
    """:func:`_hourly` for consecutive minutes from ``start_minute`` (slices instead of a per-minute loop)."""
    hours, sums, counts = _hourly_sums(start_minute, capacity)
    means = [total / count for total, count in zip(sums, counts, strict=True)]
    return hours, means, math.fsum(means)


def _hourly_sums(start_minute: int, capacity: Sequence[float]) -> tuple[list[int], list[float], list[int]]:
    """Clock hours of consecutive minutes from ``start_minute``, with the sum and count of capacity in each."""
    n = len(capacity)
    first = min(n, (-start_minute) % 60)  # minutes of the first, partial clock hour
    starts = [0] if first else []
    starts += range(first, n, 60)
    ends = [*starts[1:], n]
    hours = [(start_minute + at) // 60 for at in starts]
    sums = [sum(capacity[at:end]) for at, end in zip(starts, ends, strict=True)]
    return hours, sums, [end - at for at, end in zip(starts, ends, strict=True)]


def _evaluator_thresholds(p: float, policy: ScalingPolicy, factor: float) -> tuple[float, float]:
    """Raw-value thresholds of one dimension at capacity ``p`` for the evaluator's per-datapoint rules.

    Returns ``(out, skip)``, each with a relative margin on the safe side of ``f(x) = x / (0.6 * U)``:

    - the scale-out can only change ``p`` when the lower of the two previous datapoints is ``>= out`` (then
      ``f(lower) >= p`` may hold; below, ``p`` stays);
    - while ``p`` stays, the scale-in cannot apply when the higher of them is ``>= skip``: the 15-datapoint window
      holds it, so ``cand >= min(f(higher), p)`` and ``cand * factor >= p`` (``skip`` is infinite when this does
      not hold: ``factor < 1`` or ``p`` above the maximum).
    """
    per_unit = 0.6 * policy.target_utilization
    out = p * per_unit * (1 - 1e-12)
    skip = p / factor * per_unit * (1 + 1e-12) if factor >= 1 and p <= policy.max_capacity else math.inf
    return out, skip


def _evaluator_searches(
    units: Sequence[float], p: float, policy: ScalingPolicy, factor: float, scale_in_from: int, at: int
) -> list[Search]:
    """Where the evaluator's rules might change a dimension at capacity ``p``, as searches on its consumed units.

    ``f(x) = x / (0.6 * U)`` is monotonic, so both rules are thresholds on the raw values, taken here with a
    relative margin on the safe side: a search may report a datapoint the exact rule then declines, never miss one.

    - Scale-out (from ``at``): ``f(min of the two previous datapoints) >= p``.
    - Scale-in (from ``scale_in_from``, where the quota first allows it): applies
      when ``p > factor * max(min(f(peak15), p), m)``, so never if ``p <= factor * m``, and otherwise only when the
      busiest of the 15 previous datapoints is below ``f^-1(max(p / factor, m))``.
    """
    per_unit = 0.6 * policy.target_utilization
    searches: list[Search] = [(units, p * per_unit * (1 - 1e-12), 2, at, False)]
    if p > factor * policy.min_capacity:
        thr = max(p / factor, policy.min_capacity) * per_unit * (1 + 1e-12) if factor >= 1 else math.inf
        searches.append((units, thr, _SCALE_IN_WINDOW, max(at, scale_in_from), True))
    return searches


def simulate_evaluator(
    read: Sequence[float],
    write: Sequence[float],
    params: EvaluatorParams = EvaluatorParams(),
    *,
    start_minute: int = 0,
    read_minutes: Sequence[int] | None = None,
    write_minutes: Sequence[int] | None = None,
    trace: bool = False,
) -> SeriesRun:
    """The archived evaluator's simulation of one table or GSI (rules in the module docstring).

    Args:
        read, write: consumed capacity units (CloudWatch ``Sum``) per datapoint, in time order, gaps removed.
        params: utilisation, min and max per dimension, the scale-in factor.
        start_minute: epoch minute (UTC) of the first datapoint when the datapoints are consecutive minutes.
        read_minutes, write_minutes: the epoch minute of each datapoint, when there are gaps.
        trace: keep the per-minute capacity in the result.

    How it stays fast: from each datapoint, :func:`~auditor.billing.series_search.earliest` finds the next one where a
    scale-out, a scale-in (once the quota allows one) or the midnight counter reset can change anything (searches
    of :func:`_evaluator_searches`, at C speed over the raw values); the datapoints before it keep the capacity and
    are appended in one step, and that datapoint runs every rule (and more after it where changes come every few
    datapoints, see :func:`_next_slow_run`).
    """
    n = min(len(read), len(write))
    if (read_minutes is not None and len(read_minutes) < n) or (write_minutes is not None and len(write_minutes) < n):
        raise ValueError("read_minutes/write_minutes must have one minute per datapoint")
    if n == 0:
        return SeriesRun(_empty_dimension(), _empty_dimension(), 0)
    rd = read if len(read) == n else read[:n]
    wd = write if len(write) == n else write[:n]
    pol_r, pol_w = params.read, params.write
    mr, maxr = pol_r.min_capacity, pol_r.max_capacity
    mw, maxw = pol_w.min_capacity, pol_w.max_capacity
    factor = params.scale_in_factor
    free = params.free_decreases
    # f(c) = ((c / 60) / U) * 100, in the archived tool's order so equality tests agree bit for bit. f is monotonic,
    # so f(min(a, b)) == min(f(a), f(b)) and f(max(window)) == max(f(window)): windows are taken on raw values.
    ur, uw = pol_r.target_utilization, pol_w.target_utilization
    # The read datapoint times at 00:00:00 UTC (the shared counter resets there; before datapoint 15 it is 0).
    if read_minutes is None:
        first = (-start_minute) % MINUTES_PER_DAY
        while first < 3:
            first += MINUTES_PER_DAY
        midnight = list(range(first, n, MINUTES_PER_DAY))
    else:
        midnight = [i for i in range(3, n) if read_minutes[i] % MINUTES_PER_DAY == 0]
    midnight.append(n)
    next_midnight = midnight[0]
    mid_at = 1

    pr = min(max(((rd[0] / 60) / ur) * 100, mr), maxr)
    pw = min(max(((wd[0] / 60) / uw) * 100, mw), maxw)
    cap_r = [pr] * min(n, 3)
    cap_w = [pw] * min(n, 3)
    lo_r = hi_r = pr  # lowest and highest capacity seen
    lo_w = hi_w = pw
    out_raw_r, skip_raw_r = _evaluator_thresholds(pr, pol_r, factor)
    out_raw_w, skip_raw_w = _evaluator_thresholds(pw, pol_w, factor)
    k = 0
    events = 0
    last_write = False  # the evaluator's ``last_change``: starts at "read", so the first tie goes to write
    last_dec_r = last_dec_w = -(10**9)
    inc_r = inc_w = dec_r = dec_w = 0
    slow_until = 3
    slow_run = _SLOW_RUN
    i = 3
    while i < n:
        if i == next_midnight:
            k = 0
            next_midnight = midnight[mid_at]
            mid_at += 1
        if i >= slow_until and pr <= maxr and pw <= maxw:
            # Skip ahead to the next datapoint where a rule can change anything; the counter resets at midnight.
            if k < free:
                start_r, start_w = max(15, last_dec_r + 15), max(15, last_dec_w + 15)
            else:
                start_r = start_w = max(60, last_dec_r + 60, last_dec_w + 60)
            searches = _evaluator_searches(rd, pr, pol_r, factor, start_r, i)
            searches += _evaluator_searches(wd, pw, pol_w, factor, start_w, i)
            stop = earliest(searches, i, next_midnight)
            slow_run = _next_slow_run(slow_run, stop - i)
            slow_until = stop + slow_run  # the datapoint found runs every rule, and slow_run - 1 after it
            if stop > i:
                cap_r += [pr] * (stop - i)
                cap_w += [pw] * (stop - i)
                i = stop
                continue
        # One datapoint, every rule.
        pr_prev = pr
        pw_prev = pw
        # Scale-out from the two previous datapoints (equality counts; f(hi) is not clamped to the maximum). Only
        # when the lower one reaches the raw threshold can it change p; otherwise skip_* tells, from the higher
        # one, whether the scale-in below provably cannot apply (see _evaluator_thresholds).
        lo = rd[i - 2]
        hi = rd[i - 1]
        if lo > hi:
            lo, hi = hi, lo
        if lo >= out_raw_r or pr > maxr:
            lo = ((lo / 60) / ur) * 100
            hi = ((hi / 60) / ur) * 100
            v = lo if lo > pr else pr
            if maxr < v:
                v = maxr
            pr = hi if v == lo else v
            skip_r = hi * factor >= pr_prev and factor >= 1 and pr_prev <= maxr
        else:
            skip_r = hi >= skip_raw_r
        lo = wd[i - 2]
        hi = wd[i - 1]
        if lo > hi:
            lo, hi = hi, lo
        if lo >= out_raw_w or pw > maxw:
            lo = ((lo / 60) / uw) * 100
            hi = ((hi / 60) / uw) * 100
            v = lo if lo > pw else pw
            if maxw < v:
                v = maxw
            pw = hi if v == lo else v
            skip_w = hi * factor >= pw_prev and factor >= 1 and pw_prev <= maxw
        else:
            skip_w = hi >= skip_raw_w
        if pr > pr_prev:
            inc_r += 1
            if pr > hi_r:
                hi_r = pr
        if pw > pw_prev:
            inc_w += 1
            if pw > hi_w:
                hi_w = pw
        if i > 14:
            use_r = use_w = False
            if k < free:
                use_r = last_dec_r < i - 14
                use_w = last_dec_w < i - 14
            elif i >= 60 and last_dec_r < i - 59 and last_dec_w < i - 59:
                use_r = use_w = True
            cand_r = cand_w = 0.0
            if use_r:
                if skip_r:
                    cand_r = pr  # p * factor >= p >= p_prev: no scale-in
                else:
                    c = ((max(rd[i - 15 : i]) / 60) / ur) * 100
                    cand_r = pr if c > pr else c
                    if cand_r < mr:
                        cand_r = mr
            if use_w:
                if skip_w:
                    cand_w = pw
                else:
                    c = ((max(wd[i - 15 : i]) / 60) / uw) * 100
                    cand_w = pw if c > pw else c
                    if cand_w < mw:
                        cand_w = mw
            if k < free:
                if use_r:
                    if pr_prev > cand_r * factor:
                        pr = cand_r
                    if pr_prev > pr:
                        k += 1
                        events += 1
                if use_w:
                    if pw_prev > cand_w * factor:
                        pw = cand_w
                    if pw_prev > pw:
                        k += 1
                        events += 1
            elif use_r:
                q_rd = pr_prev > cand_r * factor
                q_wr = pw_prev > cand_w * factor
                if q_rd and q_wr:
                    if last_write:
                        pr = cand_r
                        last_write = False
                    else:
                        pw = cand_w
                        last_write = True
                else:
                    if q_rd:
                        pr = cand_r
                    if q_wr:
                        pw = cand_w
        if pr < pr_prev:
            last_dec_r = i
            dec_r += 1
            if pr < lo_r:
                lo_r = pr
        if pw < pw_prev:
            last_dec_w = i
            dec_w += 1
            if pw < lo_w:
                lo_w = pw
        if pr != pr_prev:
            out_raw_r, skip_raw_r = _evaluator_thresholds(pr, pol_r, factor)
        if pw != pw_prev:
            out_raw_w, skip_raw_w = _evaluator_thresholds(pw, pol_w, factor)
        cap_r.append(pr)
        cap_w.append(pw)
        i += 1

    if read_minutes is None:
        hr, mean_r, uh_r = _hourly_grid(start_minute, cap_r)
    else:
        hr, mean_r, uh_r = _hourly(read_minutes[:n], cap_r)
    if write_minutes is None:
        hw, mean_w, uh_w = _hourly_grid(start_minute, cap_w)
    else:
        hw, mean_w, uh_w = _hourly(write_minutes[:n], cap_w)
    run_r = DimensionRun(
        consumed_units=math.fsum(rd),
        unit_hours=uh_r,
        hours=hr,
        hourly_capacity=mean_r,
        peak_per_second=max(rd) / 60,
        min_capacity_seen=lo_r,
        max_capacity_seen=hi_r,
        increases=inc_r,
        decreases=dec_r,
        capacity=cap_r if trace else None,
    )
    run_w = DimensionRun(
        consumed_units=math.fsum(wd),
        unit_hours=uh_w,
        hours=hw,
        hourly_capacity=mean_w,
        peak_per_second=max(wd) / 60,
        min_capacity_seen=lo_w,
        max_capacity_seen=hi_w,
        increases=inc_w,
        decreases=dec_w,
        capacity=cap_w if trace else None,
    )
    notes = []
    if len(read) != len(write):
        notes.append(f"reads and writes aligned by position and truncated to {n} datapoints")
    return SeriesRun(run_r, run_w, n, events, notes)


# -------------------------------------------------------------------------------------------------------- aws


def needed_capacity(units_per_minute: float, target_utilization: float) -> int:
    """Whole capacity units that serve ``units_per_minute`` at ``target_utilization`` percent."""
    return math.ceil(units_per_minute * 100.0 / (60.0 * target_utilization) - 1e-9)


def _scale_in_threshold(p: float, scale_in: float, per_unit: float) -> float:
    """The served peak below which the ``aws`` low alarm of a dimension at capacity ``p`` can lower it.

    The alarm fires below ``scale_in * p`` units per minute (target minus the gap), and only lowers the capacity if
    ``ceil(peak * per_unit) < p``, i.e. ``peak * per_unit <= p - 1``: the lower of the two bounds, the second with a
    relative margin so the search may report a minute the exact rule declines, but never misses one.
    """
    return min(scale_in * p, (p - 1 + _EPS) / per_unit * (1 + 1e-9))


#: The smallest positive float: ``value >= _TINY`` is ``value > 0`` for the non-negative consumed units.
_TINY = math.ulp(0.0)


def _quota_open(quota: list[int], i: int, free: int, window: int, gap: int) -> int:
    """The first minute from ``i`` on at which the decrease quota ``[today, first, last]`` allows a decrease.

    Allowed while fewer than ``free`` decreases happened today and the first of them is less than ``window``
    minutes ago (or there is none yet); otherwise once ``gap`` minutes have passed since the last decrease.
    """
    today, first, last = quota
    if today < free and (today == 0 or i < first + window):
        return i
    return last + gap


def _charge(quota: list[int], i: int) -> None:
    """Record a decrease at minute ``i`` in the quota ``[today, first, last]``."""
    if quota[0] == 0:
        quota[1] = i
    quota[0] += 1
    quota[2] = i


def _scale_in_from(
    served: list[float],
    quota: list[int],
    i: int,
    width: int,
    stop: int,
    free: int,
    window: int,
    gap: int,
    at_zero: bool,
) -> int:
    """The first minute from ``i`` on at which a low alarm could lower a dimension's capacity, or ``stop``.

    Not before the alarm has a full window, nor before the quota allows a decrease, nor (unless ``at_zero``)
    before the window holds a minute that consumed something: a window of zeros does not scale in.
    """
    start = max(i, width, _quota_open(quota, i, free, window, gap))
    if start >= stop or at_zero:
        return start
    # Windows of minutes m < stop end at m - 1 <= stop - 2; a window holds index j when j < m <= j + width.
    nonzero = first_at_least(served, _TINY, start - width, stop - 1)
    return max(start, nonzero + 1) if nonzero < stop - 1 else stop


def _per_minute(values: dict[int, float], n: int) -> list[float]:
    """A list of ``n`` minutes, 0 except at the minutes in ``values``."""
    out = [0.0] * n
    for i, v in values.items():
        out[i] = v
    return out


def _peak_hour_unit_hours(start_minute: int, capacity: Sequence[float]) -> float:
    """Capacity unit-hours with each clock hour at its highest capacity (an hour cut by the window: pro rata)."""
    n = len(capacity)
    first = min(n, (-start_minute) % 60)
    starts = [0] if first else []
    starts += range(first, n, 60)
    ends = [*starts[1:], n]
    return math.fsum(max(capacity[a:b]) * (b - a) / 60.0 for a, b in zip(starts, ends, strict=True))


def _bank_through(bank: float, full: float, room: float, demand: list[float]) -> tuple[float, int, float]:
    """Serve ``demand`` from a fixed capacity (``room`` units a minute) and the burst bank, minute by minute.

    Returns the bank, the number of minutes served in full (all of them, or up to the first minute the bank cannot
    cover: that one throttles, and is left to the per-minute rules), and the largest demand (for the peak).
    Unused capacity refills the bank up to ``full``; while it is full, nothing changes until the next minute above
    capacity, found at C speed.
    """
    n = len(demand)
    if not n:
        return bank, 0, -math.inf
    top = max(demand)
    if bank >= full and top <= room:
        return bank, n, top
    over = math.nextafter(room, math.inf)
    k = 0
    while k < n:
        if bank >= full:
            k = first_at_least(demand, over, k, n)
            if k == n:
                break
        c = demand[k]
        if c <= room:
            bank += room - c
            if bank > full:
                bank = full
        elif c - room <= bank:
            bank -= c - room
        else:
            return bank, k, top
        k += 1
    return bank, n, top


def simulate_aws(
    read: Sequence[float],
    write: Sequence[float],
    read_policy: ScalingPolicy = ScalingPolicy(),
    write_policy: ScalingPolicy = ScalingPolicy(),
    behaviour: AwsBehaviour = AwsBehaviour(),
    *,
    start_minute: int = 0,
    trace: bool = False,
) -> SeriesRun:
    """Documented AWS auto scaling of one table or GSI over a complete minute grid (rules in the module docstring).

    Args:
        read, write: consumed (demanded) capacity units per minute, same length, missing minutes already 0.
        read_policy, write_policy: target utilisation, min and max capacity of each dimension.
        behaviour: alarm datapoints, reaction delay, burst and decrease-quota rules.
        start_minute: epoch minute (UTC) of the first value (for the UTC-day quota reset and clock hours).
        trace: keep the per-minute capacity in the result.

    How it stays fast: from each minute, :func:`~auditor.billing.series_search.earliest` finds the next one where the
    capacity can change: a high alarm (n_out minutes above target, on demand, which bounds what was served), a low
    alarm that could lower the capacity while the decrease quota allows it, a change in flight taking effect, a new
    UTC day. The minutes before it keep the capacity and are served from it and the burst bank in one step
    (:func:`_bank_through`), up to a minute that would throttle; that minute runs every rule (and more after it
    where changes come every few minutes, see :func:`_next_slow_run`). The served list is the demand list itself
    until a minute throttles.
    """
    n = len(read)
    if len(write) != n:
        raise ValueError(f"aws simulation needs reads and writes on one grid ({len(read)} != {len(write)} minutes)")
    if n == 0:
        return SeriesRun(_empty_dimension(), _empty_dimension(), 0)
    b = behaviour
    mr = float(math.ceil(read_policy.min_capacity))
    maxr = float(math.floor(read_policy.max_capacity))
    mw = float(math.ceil(write_policy.min_capacity))
    maxw = float(math.floor(write_policy.max_capacity))
    # Units per minute: capacity p serves 60p; "above target" means served > 0.6 * target * p.
    out_r = 0.6 * read_policy.target_utilization
    out_w = 0.6 * write_policy.target_utilization
    in_r = 0.6 * (read_policy.target_utilization - b.scale_in_gap)
    in_w = 0.6 * (write_policy.target_utilization - b.scale_in_gap)
    kr = 100.0 / (60.0 * read_policy.target_utilization)
    kw = 100.0 / (60.0 * write_policy.target_utilization)
    eps = _EPS
    ceil = math.ceil
    above = math.nextafter
    inf = math.inf
    burst = float(b.burst_seconds)
    delay = b.reaction_minutes
    n_out = b.scale_out_minutes
    n_in = b.scale_in_minutes
    free = b.free_decreases_per_day
    gap = b.decrease_interval_minutes
    # With a positive gap a high alarm excludes a low one, so a dimension at its maximum needs no high-alarm search.
    high_at_max = b.scale_in_gap <= 0

    demand_r = read if isinstance(read, list) else list(read)
    demand_w = write if isinstance(write, list) else list(write)
    # What each minute served: its demand, until a minute throttles (then a copy, see below).
    served_r = demand_r
    served_w = demand_w

    pr = min(max(float(ceil(demand_r[0] * kr - eps)), mr), maxr)
    pw = min(max(float(ceil(demand_w[0] * kw - eps)), mw), maxw)
    lo_r = hi_r = pr  # lowest and highest capacity seen
    lo_w = hi_w = pw
    # Per capacity: units served a minute, the full burst bank, and the high and low alarm thresholds.
    room_r, full_r, high_r, low_r = pr * 60.0, burst * pr, out_r * pr, in_r * pr
    room_w, full_w, high_w, low_w = pw * 60.0, burst * pw, out_w * pw, in_w * pw
    bank_r = full_r  # a table that has been running has its burst bank full
    bank_w = full_w
    pend_r = pend_w = -1  # minute at which the change in flight takes effect
    val_r = val_w = 0.0
    # Decrease quota of each dimension: [decreases today, first decrease today, last decrease] (one list shared
    # by both dimensions when the quota is the table's).
    quota_r = [0, 0, -(10**9)]
    quota_w = quota_r if b.shared_decrease_quota else [0, 0, -(10**9)]
    free_window = b.free_decrease_window_minutes
    at_zero = b.scale_in_at_zero
    events = 0
    inc_r = inc_w = dec_r = dec_w = 0
    thr_r = thr_w = 0.0
    thr_min_r = thr_min_w = 0
    thr_at_r: dict[int, float] = {}  # minute -> throttled units (for the trace)
    thr_at_w: dict[int, float] = {}
    peak_r = peak_w = -math.inf  # the largest demand of the minutes simulated so far
    cap_r: list[float] = []
    cap_w: list[float] = []
    app_r = cap_r.append
    app_w = cap_w.append
    # Index where a new UTC day (decrease quota) starts.
    next_day = MINUTES_PER_DAY - start_minute % MINUTES_PER_DAY

    slow_until = 0
    slow_run = _SLOW_RUN
    i = 0
    while i < n:
        if i >= next_day:
            next_day += MINUTES_PER_DAY
            quota_r[0] = quota_w[0] = 0
        if pend_r == i:
            pr = val_r
            pend_r = -1
            room_r, full_r, high_r, low_r = pr * 60.0, burst * pr, out_r * pr, in_r * pr
            if bank_r > full_r:
                bank_r = full_r
            if pr < lo_r:
                lo_r = pr
            elif pr > hi_r:
                hi_r = pr
        if pend_w == i:
            pw = val_w
            pend_w = -1
            room_w, full_w, high_w, low_w = pw * 60.0, burst * pw, out_w * pw, in_w * pw
            if bank_w > full_w:
                bank_w = full_w
            if pw < lo_w:
                lo_w = pw
            elif pw > hi_w:
                hi_w = pw

        if i >= slow_until:
            stop = next_day if next_day < n else n
            if stop > pend_r > i:
                stop = pend_r
            if stop > pend_w > i:
                stop = pend_w
            if stop - i > _SHORT_BOUND:
                # Skip ahead to the next minute where a rule can change the capacity: a high alarm (without a
                # change in flight; on demand, which bounds what was served), or a low alarm that could lower
                # the capacity once the quota allows a decrease.
                searches: list[Search] = []
                if pend_r < 0 and (pr < maxr or high_at_max):
                    searches.append((demand_r, above(high_r, inf), n_out, max(i, n_out), False))
                if pend_w < 0 and (pw < maxw or high_at_max):
                    searches.append((demand_w, above(high_w, inf), n_out, max(i, n_out), False))
                if pend_r < 0 and pr > mr:
                    start = _scale_in_from(served_r, quota_r, i, n_in, stop, free, free_window, gap, at_zero)
                    if start < stop:
                        searches.append((served_r, _scale_in_threshold(pr, in_r, kr), n_in, start, True))
                if pend_w < 0 and pw > mw:
                    start = _scale_in_from(served_w, quota_w, i, n_in, stop, free, free_window, gap, at_zero)
                    if start < stop:
                        searches.append((served_w, _scale_in_threshold(pw, in_w, kw), n_in, start, True))
                if searches:
                    stop = earliest(searches, i, stop)
                slow_run = _next_slow_run(slow_run, stop - i)
                slow_until = stop + slow_run  # the minute found runs every rule, and slow_run - 1 after it
                if stop > i:
                    # Serve the minutes from capacity and the burst bank, up to a minute that would throttle.
                    # (The peaks take in these minutes; any not served now are still minutes of the series.)
                    new_r, end_r, top = _bank_through(bank_r, full_r, room_r, demand_r[i:stop])
                    if top > peak_r:
                        peak_r = top
                    new_w, end_w, top = _bank_through(bank_w, full_w, room_w, demand_w[i:stop])
                    if top > peak_w:
                        peak_w = top
                    size = end_r if end_r < end_w else end_w
                    if i + size < stop:  # a minute throttles: it runs every rule, then searching resumes
                        slow_until = i + size + 1
                    if end_r > size:
                        new_r, _, _ = _bank_through(bank_r, full_r, room_r, demand_r[i : i + size])
                    if end_w > size:
                        new_w, _, _ = _bank_through(bank_w, full_w, room_w, demand_w[i : i + size])
                    bank_r = new_r
                    bank_w = new_w
                    if size:
                        cap_r += [pr] * size
                        cap_w += [pw] * size
                        i += size
                        continue

        # One minute, every rule.
        if i:
            # Alarms, evaluated on the completed minutes against the current capacity's thresholds.
            want_r = want_w = 0.0
            if pend_r < 0:
                last = served_r[i - 1]
                if i >= n_out and last > high_r:
                    # High alarm: each of the last n_out minutes above target; size from the busiest of them.
                    if n_out == 2:
                        top = served_r[i - 2]
                        top = (top if top > last else last) if top > high_r else 0.0
                    else:
                        window = served_r[i - n_out : i]
                        top = max(window) if min(window) > high_r else 0.0
                    if top:
                        new = float(ceil(top * kr - eps))
                        if new > maxr:
                            new = maxr
                        if new > pr:
                            inc_r += 1
                            if delay:
                                pend_r, val_r = i + delay, new
                            else:
                                pr = new
                                room_r, full_r, high_r, low_r = pr * 60.0, burst * pr, out_r * pr, in_r * pr
                                if pr > hi_r:
                                    hi_r = pr
                elif i >= n_in and last < low_r and pr > mr:
                    # Low alarm: the busiest of the last n_in minutes below target minus the gap.
                    top = max(served_r[i - n_in : i])
                    if top < low_r and (top > 0 or at_zero):
                        new = float(ceil(top * kr - eps))
                        if new < mr:
                            new = mr
                        if new < pr:
                            want_r = new
            if pend_w < 0:
                last = served_w[i - 1]
                if i >= n_out and last > high_w:
                    if n_out == 2:
                        top = served_w[i - 2]
                        top = (top if top > last else last) if top > high_w else 0.0
                    else:
                        window = served_w[i - n_out : i]
                        top = max(window) if min(window) > high_w else 0.0
                    if top:
                        new = float(ceil(top * kw - eps))
                        if new > maxw:
                            new = maxw
                        if new > pw:
                            inc_w += 1
                            if delay:
                                pend_w, val_w = i + delay, new
                            else:
                                pw = new
                                room_w, full_w, high_w, low_w = pw * 60.0, burst * pw, out_w * pw, in_w * pw
                                if pw > hi_w:
                                    hi_w = pw
                elif i >= n_in and last < low_w and pw > mw:
                    top = max(served_w[i - n_in : i])
                    if top < low_w and (top > 0 or at_zero):
                        new = float(ceil(top * kw - eps))
                        if new < mw:
                            new = mw
                        if new < pw:
                            want_w = new
            # Each scalable target's scale-in is its own UpdateTable request and its own decrease: reads first,
            # then writes, each against its quota (the table's or GSI's, shared by both unless configured apart).
            if want_r and _quota_open(quota_r, i, free, free_window, gap) <= i:
                _charge(quota_r, i)
                events += 1
                dec_r += 1
                if delay:
                    pend_r, val_r = i + delay, want_r
                else:
                    pr = want_r
                    room_r, full_r, high_r, low_r = pr * 60.0, burst * pr, out_r * pr, in_r * pr
                    if bank_r > full_r:
                        bank_r = full_r
                    if pr < lo_r:
                        lo_r = pr
            if want_w and _quota_open(quota_w, i, free, free_window, gap) <= i:
                _charge(quota_w, i)
                events += 1
                dec_w += 1
                if delay:
                    pend_w, val_w = i + delay, want_w
                else:
                    pw = want_w
                    room_w, full_w, high_w, low_w = pw * 60.0, burst * pw, out_w * pw, in_w * pw
                    if bank_w > full_w:
                        bank_w = full_w
                    if pw < lo_w:
                        lo_w = pw
        # Serve minute i with capacity, then the burst bank; the rest is throttled (served differs from demand
        # from here on, so the served list becomes a copy).
        c = demand_r[i]
        if c > peak_r:
            peak_r = c
        if c <= room_r:
            bank_r += room_r - c
            if bank_r > full_r:
                bank_r = full_r
        elif c - room_r <= bank_r:
            bank_r -= c - room_r
        else:
            s = room_r + bank_r
            if served_r is demand_r:
                served_r = list(demand_r)
            served_r[i] = s
            thr_r += c - s
            thr_at_r[i] = c - s
            thr_min_r += 1
            bank_r = 0.0
        c = demand_w[i]
        if c > peak_w:
            peak_w = c
        if c <= room_w:
            bank_w += room_w - c
            if bank_w > full_w:
                bank_w = full_w
        elif c - room_w <= bank_w:
            bank_w -= c - room_w
        else:
            s = room_w + bank_w
            if served_w is demand_w:
                served_w = list(demand_w)
            served_w[i] = s
            thr_w += c - s
            thr_at_w[i] = c - s
            thr_min_w += 1
            bank_w = 0.0
        app_r(pr)
        app_w(pw)
        i += 1

    # Capacities are whole units, so the plain sums are exact (the reference's fsum of every minute, divided by 60).
    hours, sums_r, counts = _hourly_sums(start_minute, cap_r)
    _, sums_w, _ = _hourly_sums(start_minute, cap_w)
    run_r = DimensionRun(
        consumed_units=math.fsum(demand_r),
        unit_hours=sum(sums_r) / 60.0,
        peak_hour_unit_hours=_peak_hour_unit_hours(start_minute, cap_r),
        hours=hours,
        hourly_capacity=[total / count for total, count in zip(sums_r, counts, strict=True)],
        peak_per_second=peak_r / 60.0,
        min_capacity_seen=lo_r,
        max_capacity_seen=hi_r,
        increases=inc_r,
        decreases=dec_r,
        throttled_units=thr_r,
        throttled_minutes=thr_min_r,
        capacity=cap_r if trace else None,
        throttled=_per_minute(thr_at_r, n) if trace else None,
    )
    run_w = DimensionRun(
        consumed_units=math.fsum(demand_w),
        unit_hours=sum(sums_w) / 60.0,
        peak_hour_unit_hours=_peak_hour_unit_hours(start_minute, cap_w),
        hours=list(hours),
        hourly_capacity=[total / count for total, count in zip(sums_w, counts, strict=True)],
        peak_per_second=peak_w / 60.0,
        min_capacity_seen=lo_w,
        max_capacity_seen=hi_w,
        increases=inc_w,
        decreases=dec_w,
        throttled_units=thr_w,
        throttled_minutes=thr_min_w,
        capacity=cap_w if trace else None,
        throttled=_per_minute(thr_at_w, n) if trace else None,
    )
    return SeriesRun(run_r, run_w, n, events)

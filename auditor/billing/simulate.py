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


class _EvaluatorSide:
    """One dimension (reads or writes) of the evaluator's simulation: its datapoints, policy and capacity ``p``.

    ``f(c) = ((c / 60) / U) * 100`` is written out in the archived tool's order wherever it is computed, so that
    equality tests agree bit for bit. ``prev`` is ``p`` before the datapoint being run, ``skip`` whether that
    datapoint's scale-in provably cannot apply (see :func:`_evaluator_thresholds`).
    """

    __slots__ = (
        "cap",
        "decreases",
        "factor",
        "highest",
        "increases",
        "last_decrease",
        "lowest",
        "maximum",
        "minimum",
        "out_raw",
        "p",
        "policy",
        "prev",
        "skip",
        "skip_raw",
        "target",
        "units",
    )

    def __init__(self, units: Sequence[float], policy: ScalingPolicy, factor: float, n: int) -> None:
        self.units = units
        self.policy = policy
        self.factor = factor
        self.target = policy.target_utilization
        self.minimum = policy.min_capacity
        self.maximum = policy.max_capacity
        p = min(max(((units[0] / 60) / self.target) * 100, self.minimum), self.maximum)
        self.p = self.prev = p
        self.lowest = self.highest = p
        self.cap = [p] * min(n, 3)
        self.out_raw, self.skip_raw = _evaluator_thresholds(p, policy, factor)
        self.skip = False
        self.last_decrease = -(10**9)
        self.increases = self.decreases = 0

    def searches(self, scale_in_from: int, at: int) -> list[Search]:
        """Where a rule might change this dimension next (:func:`_evaluator_searches`)."""
        return _evaluator_searches(self.units, self.p, self.policy, self.factor, scale_in_from, at)

    def keep(self, count: int) -> None:
        """``count`` datapoints at the current capacity."""
        self.cap += [self.p] * count

    def scale_out(self, i: int) -> None:
        """Scale-out from the two previous datapoints (equality counts; ``f(hi)`` is not clamped to the maximum).

        Only when the lower one reaches the raw threshold can it change ``p``; otherwise ``skip`` tells, from the
        higher one, whether the scale-in of this datapoint provably cannot apply.
        """
        p = self.prev = self.p
        units = self.units
        lo = units[i - 2]
        hi = units[i - 1]
        if lo > hi:
            lo, hi = hi, lo
        maximum = self.maximum
        if lo < self.out_raw and p <= maximum:
            self.skip = hi >= self.skip_raw
            return
        lo = ((lo / 60) / self.target) * 100
        hi = ((hi / 60) / self.target) * 100
        v = lo if lo > p else p
        if maximum < v:
            v = maximum
        new = self.p = hi if v == lo else v
        self.skip = hi * self.factor >= p and self.factor >= 1 and p <= maximum
        if new > p:
            self.increases += 1
            if new > self.highest:
                self.highest = new

    def candidate(self, i: int) -> float:
        """The scale-in candidate ``max(min(f(max(r_{i-15..i-1})), p_i), m)`` (``p`` itself when ``skip``)."""
        p = self.p
        if self.skip:
            return p  # p * factor >= p >= prev: no scale-in
        c = ((max(self.units[i - _SCALE_IN_WINDOW : i]) / 60) / self.target) * 100
        cand = p if c > p else c
        return self.minimum if cand < self.minimum else cand

    def free_step(self, i: int, scale_in: bool) -> bool:
        """Datapoint ``i`` while ``k < free``: scale-out, then (``scale_in``: from datapoint 15 on) the scale-in
        unless ``p`` decreased within the last 15 datapoints. True when the decrease counter counts: any decrease of
        ``p`` in a scale-in step (a scale-in or a clamp to the maximum)."""
        self.scale_out(i)
        counted = False
        if scale_in and self.last_decrease < i - 14:
            if not self.skip:  # (with skip, the candidate is p and no scale-in)
                cand = self.candidate(i)
                if self.prev > cand * self.factor:
                    self.p = cand
            counted = self.prev > self.p
        self.finish(i)
        return counted

    def qualifies(self, cand: float) -> bool:
        """Whether the candidate is a scale-in: ``p_{i-1} > factor * cand``."""
        return self.prev > cand * self.factor

    def finish(self, i: int) -> None:
        """Close datapoint ``i``: count a decrease, re-derive the thresholds of a new ``p``, keep ``p``."""
        p, prev = self.p, self.prev
        if p < prev:
            self.last_decrease = i
            self.decreases += 1
            if p < self.lowest:
                self.lowest = p
        if p != prev:
            self.out_raw, self.skip_raw = _evaluator_thresholds(p, self.policy, self.factor)
        self.cap.append(p)

    def result(self, minutes: Sequence[int] | None, n: int, start_minute: int, trace: bool) -> DimensionRun:
        """The dimension's totals, costed by clock hour (``minutes``: the datapoints' epoch minutes, if gapped)."""
        if minutes is None:
            hours, means, unit_hours = _hourly_grid(start_minute, self.cap)
        else:
            hours, means, unit_hours = _hourly(minutes[:n], self.cap)
        return DimensionRun(
            consumed_units=math.fsum(self.units),
            unit_hours=unit_hours,
            hours=hours,
            hourly_capacity=means,
            peak_per_second=max(self.units) / 60,
            min_capacity_seen=self.lowest,
            max_capacity_seen=self.highest,
            increases=self.increases,
            decreases=self.decreases,
            capacity=self.cap if trace else None,
        )


class _Evaluator:
    """The evaluator's rules over both dimensions, and what they share: the decrease counter ``k`` (reset at
    midnight), the decrease events, and which dimension the last tie went to."""

    __slots__ = ("events", "free", "k", "last_write", "read", "write")

    def __init__(self, read: _EvaluatorSide, write: _EvaluatorSide, free: int) -> None:
        self.read = read
        self.write = write
        self.free = free
        self.k = 0
        self.events = 0
        self.last_write = False  # the evaluator's ``last_change``: starts at "read", so the first tie goes to write

    def can_skip(self) -> bool:
        """Searches are sound only while both capacities are within their maximum."""
        return self.read.p <= self.read.maximum and self.write.p <= self.write.maximum

    def next_change(self, i: int, bound: int) -> int:
        """The first datapoint in ``[i, bound)`` where a scale-out or (once the quota allows one) a scale-in might
        change a capacity, or ``bound``."""
        rd, wr = self.read, self.write
        if self.k < self.free:
            start_r, start_w = max(15, rd.last_decrease + 15), max(15, wr.last_decrease + 15)
        else:
            start_r = start_w = max(60, rd.last_decrease + 60, wr.last_decrease + 60)
        return earliest(rd.searches(start_r, i) + wr.searches(start_w, i), i, bound)

    def step(self, i: int) -> None:
        """Datapoint ``i``, every rule: scale-out, then scale-in from datapoint 15 on.

        While ``k < free`` each dimension's rules need only its own state (and ``k`` only counts), so each runs
        whole, reads first; after that a scale-in weighs both dimensions together.
        """
        rd, wr = self.read, self.write
        if self.k < self.free:
            scale_in = i > 14
            if rd.free_step(i, scale_in):
                self.k += 1
                self.events += 1
            if wr.free_step(i, scale_in):
                self.k += 1
                self.events += 1
            return
        rd.scale_out(i)
        wr.scale_out(i)
        if i >= 60 and rd.last_decrease < i - 59 and wr.last_decrease < i - 59:
            self._hourly_decrease(i)
        rd.finish(i)
        wr.finish(i)

    def _hourly_decrease(self, i: int) -> None:
        """Once ``k >= free``: one scale-in when neither dimension decreased within 60 datapoints, alternating
        (write first) when both qualify."""
        rd, wr = self.read, self.write
        cand_r, cand_w = rd.candidate(i), wr.candidate(i)
        q_rd, q_wr = rd.qualifies(cand_r), wr.qualifies(cand_w)
        if q_rd and q_wr:
            if self.last_write:
                rd.p = cand_r
            else:
                wr.p = cand_w
            self.last_write = not self.last_write
        else:
            if q_rd:
                rd.p = cand_r
            if q_wr:
                wr.p = cand_w


def _midnights(n: int, start_minute: int, minutes: Sequence[int] | None) -> list[int]:
    """The datapoints whose read time is 00:00:00 UTC (from datapoint 3 on), then ``n``."""
    if minutes is None:
        first = (-start_minute) % MINUTES_PER_DAY
        while first < 3:
            first += MINUTES_PER_DAY
        midnight = list(range(first, n, MINUTES_PER_DAY))
    else:
        midnight = [i for i in range(3, n) if minutes[i] % MINUTES_PER_DAY == 0]
    midnight.append(n)
    return midnight


def _run_evaluator(sim: _Evaluator, n: int, midnight: list[int]) -> None:
    """Every datapoint from 3 on: skip ahead to the next one where a rule can change anything (the counter resets
    at midnight), keeping the capacities before it, and run every rule on that one (and more after it where
    changes come every few datapoints, see :func:`_next_slow_run`)."""
    next_midnight = midnight[0]
    mid_at = 1
    slow_until = 3
    slow_run = _SLOW_RUN
    i = 3
    while i < n:
        if i == next_midnight:
            sim.k = 0
            next_midnight = midnight[mid_at]
            mid_at += 1
        if i >= slow_until and sim.can_skip():
            stop = sim.next_change(i, next_midnight)
            slow_run = _next_slow_run(slow_run, stop - i)
            slow_until = stop + slow_run  # the datapoint found runs every rule, and slow_run - 1 after it
            if stop > i:
                sim.read.keep(stop - i)
                sim.write.keep(stop - i)
                i = stop
                continue
        sim.step(i)
        i += 1


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
    # f is monotonic, so f(min(a, b)) == min(f(a), f(b)) and f(max(window)) == max(f(window)): windows are taken
    # on raw values.
    rd = _EvaluatorSide(read if len(read) == n else read[:n], params.read, params.scale_in_factor, n)
    wr = _EvaluatorSide(write if len(write) == n else write[:n], params.write, params.scale_in_factor, n)
    sim = _Evaluator(rd, wr, params.free_decreases)
    # The shared counter resets where the read datapoint's time is 00:00:00 UTC (before datapoint 15 it is 0).
    _run_evaluator(sim, n, _midnights(n, start_minute, read_minutes))
    notes = []
    if len(read) != len(write):
        notes.append(f"reads and writes aligned by position and truncated to {n} datapoints")
    return SeriesRun(
        rd.result(read_minutes, n, start_minute, trace),
        wr.result(write_minutes, n, start_minute, trace),
        n,
        sim.events,
        notes,
    )


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


class _AwsSide:
    """One dimension (reads or writes) of the ``aws`` simulation: its demand and what was served, its capacity ``p``
    with the thresholds derived from it, the change in flight, the burst bank and the decrease quota it draws on.

    Units are per minute: capacity ``p`` serves ``60 p``; "above target" means served > ``0.6 * target * p``.
    """

    __slots__ = (
        "at_zero",
        "bank",
        "burst",
        "cap",
        "decreases",
        "delay",
        "demand",
        "free",
        "free_window",
        "full",
        "gap",
        "high",
        "highest",
        "in_per_unit",
        "increases",
        "low",
        "lowest",
        "maximum",
        "minimum",
        "n_in",
        "n_out",
        "out_per_unit",
        "p",
        "peak",
        "pending",
        "pending_value",
        "per_unit",
        "quota",
        "room",
        "served",
        "throttled_at",
        "throttled_minutes",
        "throttled_units",
    )

    def __init__(self, demand: list[float], policy: ScalingPolicy, b: AwsBehaviour, quota: list[int]) -> None:
        # What each minute served: its demand, until a minute throttles (then a copy, see serve).
        self.demand = self.served = demand
        self.minimum = float(math.ceil(policy.min_capacity))
        self.maximum = float(math.floor(policy.max_capacity))
        self.out_per_unit = 0.6 * policy.target_utilization
        self.in_per_unit = 0.6 * (policy.target_utilization - b.scale_in_gap)
        self.per_unit = 100.0 / (60.0 * policy.target_utilization)
        self.burst = float(b.burst_seconds)
        self.delay = b.reaction_minutes
        self.n_out = b.scale_out_minutes
        self.n_in = b.scale_in_minutes
        self.at_zero = b.scale_in_at_zero
        # The decrease quota [decreases today, first decrease today, last decrease], maybe shared by both dimensions.
        self.quota = quota
        self.free = b.free_decreases_per_day
        self.free_window = b.free_decrease_window_minutes
        self.gap = b.decrease_interval_minutes
        p = min(max(float(math.ceil(demand[0] * self.per_unit - _EPS)), self.minimum), self.maximum)
        self._set(p)
        self.lowest = self.highest = p
        self.bank = self.full  # a table that has been running has its burst bank full
        self.pending = -1  # minute at which the change in flight takes effect
        self.pending_value = 0.0
        self.increases = self.decreases = 0
        self.throttled_units = 0.0
        self.throttled_minutes = 0
        self.throttled_at: dict[int, float] = {}  # minute -> throttled units (for the trace)
        self.peak = -math.inf  # the largest demand of the minutes simulated so far
        self.cap: list[float] = []

    def _set(self, p: float) -> None:
        """Capacity ``p``: units served a minute, the full burst bank, and the high and low alarm thresholds."""
        self.p = p
        self.room, self.full, self.high, self.low = (
            p * 60.0,
            self.burst * p,
            self.out_per_unit * p,
            self.in_per_unit * p,
        )

    def _lower(self, p: float) -> None:
        """A lower capacity in force: the bank cannot hold more than the new full bank."""
        self._set(p)
        if self.bank > self.full:
            self.bank = self.full
        if p < self.lowest:
            self.lowest = p

    def take_effect(self) -> None:
        """The change in flight is in force from this minute."""
        p = self.pending_value
        self.pending = -1
        self._set(p)
        if self.bank > self.full:
            self.bank = self.full
        if p < self.lowest:
            self.lowest = p
        elif p > self.highest:
            self.highest = p

    def high_search(self, i: int, high_at_max: bool) -> Search | None:
        """Where a high alarm might fire next (without a change in flight; on demand, which bounds what was
        served)."""
        if self.pending < 0 and (self.p < self.maximum or high_at_max):
            return (self.demand, math.nextafter(self.high, math.inf), self.n_out, max(i, self.n_out), False)
        return None

    def low_search(self, i: int, stop: int) -> Search | None:
        """Where a low alarm might lower the capacity next, once the quota allows a decrease."""
        if self.pending < 0 and self.p > self.minimum:
            start = _scale_in_from(
                self.served, self.quota, i, self.n_in, stop, self.free, self.free_window, self.gap, self.at_zero
            )
            if start < stop:
                return (
                    self.served,
                    _scale_in_threshold(self.p, self.in_per_unit, self.per_unit),
                    self.n_in,
                    start,
                    True,
                )
        return None

    def bank_ahead(self, i: int, stop: int) -> tuple[float, int]:
        """Minutes ``[i, stop)`` served from the capacity and the burst bank (:func:`_bank_through`): the bank after
        them and how many are served in full. The peak takes in all of them (any not served now are still minutes
        of the series)."""
        bank, end, top = _bank_through(self.bank, self.full, self.room, self.demand[i:stop])
        if top > self.peak:
            self.peak = top
        return bank, end

    def keep(self, i: int, size: int, bank: float, end: int) -> None:
        """Minutes ``[i, i + size)`` served at the current capacity; ``bank``, ``end`` from :meth:`bank_ahead`."""
        if end > size:
            bank, _, _ = _bank_through(self.bank, self.full, self.room, self.demand[i : i + size])
        self.bank = bank
        if size:
            self.cap += [self.p] * size

    def minute(self, i: int) -> bool:
        """Minute ``i``, every rule: the alarms on the completed minutes (from minute 1) against the current
        thresholds, a scale-in if the low alarm asks for one and the quota allows it, then serving the minute. True
        when a decrease was charged to the quota.

        Serving takes capacity, then the burst bank; the rest is throttled (served differs from demand from here
        on, so the served list becomes a copy).
        """
        charged = False
        if i and self.pending < 0:
            last = self.served[i - 1]
            if i >= self.n_out and last > self.high:
                self._high_alarm(i, last)
            elif i >= self.n_in and last < self.low and self.p > self.minimum:
                want = self._low_alarm(i)
                if want:
                    charged = self._scale_in(i, want)
        c = self.demand[i]
        if c > self.peak:
            self.peak = c
        room = self.room
        bank = self.bank
        if c <= room:
            bank += room - c
            if bank > self.full:
                bank = self.full
        elif c - room <= bank:
            bank -= c - room
        else:
            s = room + bank
            if self.served is self.demand:
                self.served = list(self.demand)
            self.served[i] = s
            self.throttled_units += c - s
            self.throttled_at[i] = c - s
            self.throttled_minutes += 1
            bank = 0.0
        self.bank = bank
        self.cap.append(self.p)
        return charged

    def _low_alarm(self, i: int) -> float:
        """Low alarm: the busiest of the last n_in minutes below target minus the gap; the capacity it asks for
        (0.0: none, a window that consumed nothing asks for none unless configured)."""
        top = max(self.served[i - self.n_in : i])
        if top < self.low and (top > 0 or self.at_zero):
            new = float(math.ceil(top * self.per_unit - _EPS))
            if new < self.minimum:
                new = self.minimum
            if new < self.p:
                return new
        return 0.0

    def _high_alarm(self, i: int, last: float) -> None:
        """High alarm: each of the last n_out minutes above target; size from the busiest of them."""
        high = self.high
        if self.n_out == 2:
            top = self.served[i - 2]
            top = (top if top > last else last) if top > high else 0.0
        else:
            window = self.served[i - self.n_out : i]
            top = max(window) if min(window) > high else 0.0
        if not top:
            return
        new = float(math.ceil(top * self.per_unit - _EPS))
        if new > self.maximum:
            new = self.maximum
        if new > self.p:
            self.increases += 1
            if self.delay:
                self.pending, self.pending_value = i + self.delay, new
            else:
                self._set(new)
                if new > self.highest:
                    self.highest = new

    def _scale_in(self, i: int, want: float) -> bool:
        """Lower the capacity to ``want`` (its own UpdateTable request and its own decrease) if the quota allows one
        at minute ``i``; True when it was charged to the quota."""
        if _quota_open(self.quota, i, self.free, self.free_window, self.gap) > i:
            return False
        _charge(self.quota, i)
        self.decreases += 1
        if self.delay:
            self.pending, self.pending_value = i + self.delay, want
        else:
            self._lower(want)
        return True

    def result(self, start_minute: int, n: int, trace: bool) -> DimensionRun:
        """The dimension's totals, billed by clock hour."""
        # Capacities are whole units, so the plain sums are exact (the reference's fsum of every minute, over 60).
        hours, sums, counts = _hourly_sums(start_minute, self.cap)
        return DimensionRun(
            consumed_units=math.fsum(self.demand),
            unit_hours=sum(sums) / 60.0,
            peak_hour_unit_hours=_peak_hour_unit_hours(start_minute, self.cap),
            hours=hours,
            hourly_capacity=[total / count for total, count in zip(sums, counts, strict=True)],
            peak_per_second=self.peak / 60.0,
            min_capacity_seen=self.lowest,
            max_capacity_seen=self.highest,
            increases=self.increases,
            decreases=self.decreases,
            throttled_units=self.throttled_units,
            throttled_minutes=self.throttled_minutes,
            capacity=self.cap if trace else None,
            throttled=_per_minute(self.throttled_at, n) if trace else None,
        )


def _aws_next_change(rd: _AwsSide, wr: _AwsSide, i: int, stop: int, high_at_max: bool) -> int:
    """The first minute in ``[i, stop)`` where a rule can change a capacity: a high alarm, or a low alarm that could
    lower the capacity once the quota allows a decrease; ``stop`` if none."""
    found = (
        rd.high_search(i, high_at_max),
        wr.high_search(i, high_at_max),
        rd.low_search(i, stop),
        wr.low_search(i, stop),
    )
    searches = [s for s in found if s is not None]
    return earliest(searches, i, stop) if searches else stop


def _aws_serve_ahead(rd: _AwsSide, wr: _AwsSide, i: int, stop: int) -> int:
    """Serve minutes from ``i`` towards ``stop`` from capacity and the burst bank, up to a minute that would throttle
    in either dimension; returns how many were served."""
    bank_r, end_r = rd.bank_ahead(i, stop)
    bank_w, end_w = wr.bank_ahead(i, stop)
    size = end_r if end_r < end_w else end_w
    rd.keep(i, size, bank_r, end_r)
    wr.keep(i, size, bank_w, end_w)
    return size


def _run_aws(rd: _AwsSide, wr: _AwsSide, n: int, start_minute: int, high_at_max: bool) -> int:
    """Every minute of the grid: skip ahead to the next minute where a rule can change a capacity (a change in
    flight taking effect, a new UTC day, an alarm), serving the minutes before it in one step, and run every rule
    on that one. Returns the decreases charged to the quota."""
    events = 0
    # Index where a new UTC day (decrease quota) starts.
    next_day = MINUTES_PER_DAY - start_minute % MINUTES_PER_DAY
    slow_until = 0
    slow_run = _SLOW_RUN
    i = 0
    while i < n:
        if i >= next_day:
            next_day += MINUTES_PER_DAY
            rd.quota[0] = wr.quota[0] = 0
        if rd.pending == i:
            rd.take_effect()
        if wr.pending == i:
            wr.take_effect()
        if i >= slow_until:
            stop = next_day if next_day < n else n
            if stop > rd.pending > i:
                stop = rd.pending
            if stop > wr.pending > i:
                stop = wr.pending
            if stop - i > _SHORT_BOUND:
                stop = _aws_next_change(rd, wr, i, stop, high_at_max)
                slow_run = _next_slow_run(slow_run, stop - i)
                slow_until = stop + slow_run  # the minute found runs every rule, and slow_run - 1 after it
                if stop > i:
                    size = _aws_serve_ahead(rd, wr, i, stop)
                    if i + size < stop:  # a minute throttles: it runs every rule, then searching resumes
                        slow_until = i + size + 1
                    if size:
                        i += size
                        continue
        # One minute, every rule: reads first, so on a shared quota their scale-in is charged first.
        if rd.minute(i):
            events += 1
        if wr.minute(i):
            events += 1
        i += 1
    return events


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

    Both dimensions run the same rules (:class:`_AwsSide`); they share the clock, the table's decrease quota
    (unless ``behaviour`` keeps one per dimension) and the minutes served ahead in one step.
    """
    n = len(read)
    if len(write) != n:
        raise ValueError(f"aws simulation needs reads and writes on one grid ({len(read)} != {len(write)} minutes)")
    if n == 0:
        return SeriesRun(_empty_dimension(), _empty_dimension(), 0)
    b = behaviour
    quota = [0, 0, -(10**9)]
    rd = _AwsSide(read if isinstance(read, list) else list(read), read_policy, b, quota)
    wr = _AwsSide(
        write if isinstance(write, list) else list(write),
        write_policy,
        b,
        quota if b.shared_decrease_quota else [0, 0, -(10**9)],
    )
    # With a positive gap a high alarm excludes a low one, so a dimension at its maximum needs no high-alarm search.
    events = _run_aws(rd, wr, n, start_minute, high_at_max=b.scale_in_gap <= 0)
    return SeriesRun(rd.result(start_minute, n, trace), wr.result(start_minute, n, trace), n, events)

"""The ``evaluator`` simulation: the archived awslabs capacity-mode-evaluator, reproduced exactly.

Its own rules, including the ones AWS does not follow: two-minute scale-out, scale-in sized from the busiest of the
last 15 datapoints with one decrease counter shared by reads and writes, hourly-mean costing, positional windows.
The rules run on both dimensions alike (:class:`_EvaluatorSide`); what they share is :class:`_Evaluator`'s. The
rules, as formulas, are in docs/billing-simulation.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from auditor.billing.series_search import Search, earliest
from auditor.billing.simulate import (
    _SLOW_RUN,
    MINUTES_PER_DAY,
    DimensionRun,
    EvaluatorParams,
    ScalingPolicy,
    SeriesRun,
    _empty_dimension,
    _hourly,
    _hourly_grid,
    _next_slow_run,
)

#: The evaluator's scale-in window: the busiest of the previous 15 datapoints.
_SCALE_IN_WINDOW = 15
#: The default of :func:`simulate_evaluator` (frozen): the archived tool's CLI defaults.
_DEFAULT_PARAMS = EvaluatorParams()


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
    changes come every few datapoints, see :func:`~auditor.billing.simulate._next_slow_run`)."""
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
    params: EvaluatorParams = _DEFAULT_PARAMS,
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
    datapoints, see :func:`~auditor.billing.simulate._next_slow_run`).
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

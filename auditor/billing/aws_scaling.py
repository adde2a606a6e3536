"""The ``aws`` simulation: documented AWS auto scaling of one table or GSI.

Scale-out after 2 minutes above the target, scale-in after 15 minutes 20 points below it (never on a window that
consumed nothing), the decrease quota per table and per GSI shared by reads and writes, burst capacity, and new
capacity ``reaction_minutes`` after the alarm. The rules run on both dimensions alike (:class:`_AwsSide`).
docs/billing-simulation.md gives each rule with the AWS page it comes from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from auditor.billing.series_search import Search, earliest, first_at_least
from auditor.billing.simulate import (
    _SLOW_RUN,
    MINUTES_PER_DAY,
    AwsBehaviour,
    DimensionRun,
    ScalingPolicy,
    SeriesRun,
    _empty_dimension,
    _hourly_sums,
    _next_slow_run,
)

#: No search when the next change in flight or day boundary is at most this many minutes away.
_SHORT_BOUND = 2
#: Tolerance of the ``aws`` capacity sizing: ``ceil(units / (60 * target) - 1e-9)``.
_EPS = 1e-9
#: The defaults of :func:`simulate_aws` (frozen).
_DEFAULT_POLICY = ScalingPolicy()
_DEFAULT_BEHAVIOUR = AwsBehaviour()


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
    read_policy: ScalingPolicy = _DEFAULT_POLICY,
    write_policy: ScalingPolicy = _DEFAULT_POLICY,
    behaviour: AwsBehaviour = _DEFAULT_BEHAVIOUR,
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
    where changes come every few minutes, see :func:`~auditor.billing.simulate._next_slow_run`). The served list is
    the demand list itself until a minute throttles.

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

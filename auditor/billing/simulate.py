"""Two simulators of provisioned capacity under auto scaling, from per-minute consumed capacity.

Both take the CloudWatch ``Sum`` of ``Consumed{Read|Write}CapacityUnits`` per minute for one table or one GSI
(reads and writes together, because they share a decrease quota), and return the simulated capacity priced-free:
unit totals that :mod:`auditor.billing.decide` multiplies by a price table. Both run in O(n) per series: window
maxima come from monotonic deques (each minute is appended once and removed at most once), the "no decrease in
the last 15/60 minutes" rules read the index of the last decrease, and nothing rescans a window. Both also skip,
in one step, blocks of minutes in which provably nothing changes (checked with slices over the block: C-speed
max/min), which is where a quiet table spends most of its time; the deques are then rebuilt from the last 15
minutes when the per-minute path resumes. The results are bit-for-bit those of the per-minute rules
(:mod:`auditor.billing.reference` is the oracle the tests compare against).

``evaluator`` reproduces the archived awslabs capacity-mode-evaluator exactly (research note ``billing.md``
sections 1.2.3 and 1.2.4). With ``r_i`` the consumed units per second in datapoint ``i`` and ``f(x) = x / U * 100``:

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

``aws`` follows documented AWS behaviour instead (research note section 3):

- the input is a complete minute grid (callers fill missing minutes with 0), and every minute is billed, at least
  at the minimum capacity; capacity is a whole number of units (``ceil``);
- scale-out when the served load exceeded the target utilisation in each of the last 2 minutes, to
  ``ceil(max(last 2 minutes) / target)`` (clamped to the maximum);
- scale-in when the served load stayed more than 20 percentage points below target (70 % → 50 %) for the last
  15 minutes, to ``ceil(max(last 15 minutes) / target)`` (at least the minimum);
- a new capacity takes effect ``reaction_minutes`` after the alarm fires (UpdateTable time); a dimension with a
  change in flight does not start another;
- decreases follow the DynamoDB quota per table and per GSI: 4 per UTC day, then one more whenever none happened in
  the previous 60 minutes; a read and a write decrease decided in the same minute are one UpdateTable, one decrease;
- burst capacity: up to ``burst_seconds`` (300) of unused capacity is banked and spent when demand exceeds
  capacity; what is still above is throttled and counted in request units. Auto scaling sees what was served
  (consumed capacity), so a throttled table scales up by at most ``1/target`` per step, as real tables do.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

MINUTES_PER_DAY = 1440
#: Block sizes of the evaluator's fast path (minutes in which nothing can change are appended in one step).
_MIN_BLOCK = 8
_MAX_BLOCK = 256
#: Chunk of the aws fast path's scale-in bound (at most half the scale-in window).
_CHUNK = 8


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
    #: Decreases allowed at any time per UTC day, per table and per GSI ...
    free_decreases_per_day: int = 4
    #: ... then one more whenever none happened in this many minutes.
    decrease_interval_minutes: int = 60

    def __post_init__(self) -> None:
        if self.scale_out_minutes < 1 or self.scale_in_minutes < 1:
            raise ValueError("alarm datapoints must be at least 1")
        if self.reaction_minutes < 0 or self.burst_seconds < 0:
            raise ValueError("reaction_minutes and burst_seconds cannot be negative")


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
    hours: list[int] = []
    means: list[float] = []
    n = len(capacity)
    at = 0
    while at < n:
        stop = min(n, at + 60 - (start_minute + at) % 60)
        hours.append((start_minute + at) // 60)
        means.append(sum(capacity[at:stop]) / (stop - at))
        at = stop
    return hours, means, math.fsum(means)


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

    How it stays O(n): blocks of datapoints in which provably nothing changes are appended in one step (checked
    on the raw values with slices); the per-datapoint path reads the busiest of the previous 15 datapoints from a
    monotonic deque that it advances only as far as it needs (after a long skip, from the last 15 values).
    """
    n = min(len(read), len(write))
    if (read_minutes is not None and len(read_minutes) < n) or (write_minutes is not None and len(write_minutes) < n):
        raise ValueError("read_minutes/write_minutes must have one minute per datapoint")
    if n == 0:
        return SeriesRun(_empty_dimension(), _empty_dimension(), 0)
    rd = read if len(read) == n else read[:n]
    wd = write if len(write) == n else write[:n]
    ur, mr, maxr = params.read.target_utilization, params.read.min_capacity, params.read.max_capacity
    uw, mw, maxw = params.write.target_utilization, params.write.min_capacity, params.write.max_capacity
    factor = params.scale_in_factor
    free = params.free_decreases
    # f(c) = ((c / 60) / U) * 100, in the archived tool's order so equality tests agree bit for bit. f is monotonic,
    # so f(min(a, b)) == min(f(a), f(b)) and f(max(window)) == max(f(window)): windows are taken on raw values.
    # Raw-value thresholds for the fast path, shrunk so that raw < thr * p guarantees f(raw) < p despite rounding.
    shrink = 1.0 - 1e-12
    raw_r = 0.6 * ur * shrink
    raw_w = 0.6 * uw * shrink
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
    app_r = cap_r.append
    app_w = cap_w.append
    k = 0
    events = 0
    last_write = False  # the evaluator's ``last_change``: starts at "read", so the first tie goes to write
    last_dec_r = last_dec_w = -(10**9)
    inc_r = inc_w = dec_r = dec_w = 0
    # Lazily advanced monotonic deques (indices, raw values strictly decreasing) for the 15-datapoint peaks;
    # q_* is the next index to push.
    dq_r: deque[int] = deque()
    dq_w: deque[int] = deque()
    q_r = q_w = 0
    block = _MIN_BLOCK
    i = 3
    while i < n:
        if i == next_midnight:
            k = 0
            next_midnight = midnight[mid_at]
            mid_at += 1
        # Fast path: a block [i, j) in which provably nothing changes is appended in one step. Scale-out needs
        # min(f(r_{t-2}), f(r_{t-1})) >= p; scale-in needs p > factor * max(min(peak_t, p), m) and the quota rules.
        j = i + block
        if j > next_midnight:
            j = next_midnight
        if j > n:
            j = n
        if (
            j - i >= _MIN_BLOCK
            and pr <= maxr
            and pw <= maxw
            and (
                max(rd[i - 2 : j - 1]) < raw_r * pr
                or ((max(map(min, rd[i - 2 : j - 2], rd[i - 1 : j - 1])) / 60) / ur) * 100 < pr
            )
            and (
                max(wd[i - 2 : j - 1]) < raw_w * pw
                or ((max(map(min, wd[i - 2 : j - 2], wd[i - 1 : j - 1])) / 60) / uw) * 100 < pw
            )
        ):
            quiet = j <= 15
            if not quiet and k >= free:
                quiet = j <= 60 or last_dec_r >= j - 60 or last_dec_w >= j - 60
            if not quiet:
                # Every 15-datapoint window of a chunk [a, a + 8) holds the 8 datapoints before a.
                quiet = (k < free and last_dec_r >= j - 15) or pr <= max(
                    min(((min(max(rd[a - 8 : a]) for a in range(i, j, 8)) / 60) / ur) * 100, pr), mr
                ) * factor
                quiet = quiet and (
                    (k < free and last_dec_w >= j - 15)
                    or pw
                    <= max(min(((min(max(wd[a - 8 : a]) for a in range(i, j, 8)) / 60) / uw) * 100, pw), mw) * factor
                )
            if quiet:
                cap_r += [pr] * (j - i)
                cap_w += [pw] * (j - i)
                i = j
                if block < _MAX_BLOCK:
                    block *= 2
                continue
        block = _MIN_BLOCK
        # Slow path: one datapoint at a time, every rule.
        for i in range(i, min(i + _MIN_BLOCK, n)):  # noqa: B020  (i continues after the slow run)
            if i == next_midnight:
                k = 0
                next_midnight = midnight[mid_at]
                mid_at += 1
            pr_prev = pr
            pw_prev = pw
            # Scale-out from the two previous datapoints (equality counts; f(hi) is not clamped to the maximum).
            a = rd[i - 2]
            b = rd[i - 1]
            if a > b:
                lo = ((b / 60) / ur) * 100
                hi = ((a / 60) / ur) * 100
            else:
                lo = ((a / 60) / ur) * 100
                hi = ((b / 60) / ur) * 100
            v = lo if lo > pr else pr
            if maxr < v:
                v = maxr
            pr = hi if v == lo else v
            a = wd[i - 2]
            b = wd[i - 1]
            if a > b:
                lo = ((b / 60) / uw) * 100
                hi = ((a / 60) / uw) * 100
            else:
                lo = ((a / 60) / uw) * 100
                hi = ((b / 60) / uw) * 100
            v = lo if lo > pw else pw
            if maxw < v:
                v = maxw
            pw = hi if v == lo else v
            if pr > pr_prev:
                inc_r += 1
            if pw > pw_prev:
                inc_w += 1
            if i > 14:
                use_r = use_w = False
                if k < free:
                    use_r = last_dec_r < i - 14
                    use_w = last_dec_w < i - 14
                elif i >= 60 and last_dec_r < i - 59 and last_dec_w < i - 59:
                    use_r = use_w = True
                cand_r = cand_w = 0.0
                lim = i - 15
                if use_r:
                    # Advance the read deque to cover datapoints i-15 .. i-1.
                    if q_r < lim:
                        dq_r.clear()
                        q_r = lim
                    while q_r < i:
                        x = rd[q_r]
                        while dq_r and rd[dq_r[-1]] <= x:
                            dq_r.pop()
                        dq_r.append(q_r)
                        q_r += 1
                    while dq_r[0] < lim:
                        dq_r.popleft()
                    c = ((rd[dq_r[0]] / 60) / ur) * 100
                    cand_r = pr if c > pr else c
                    if cand_r < mr:
                        cand_r = mr
                if use_w:
                    if q_w < lim:
                        dq_w.clear()
                        q_w = lim
                    while q_w < i:
                        x = wd[q_w]
                        while dq_w and wd[dq_w[-1]] <= x:
                            dq_w.pop()
                        dq_w.append(q_w)
                        q_w += 1
                    while dq_w[0] < lim:
                        dq_w.popleft()
                    c = ((wd[dq_w[0]] / 60) / uw) * 100
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
            if pw < pw_prev:
                last_dec_w = i
                dec_w += 1
            app_r(pr)
            app_w(pw)
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
        min_capacity_seen=min(cap_r),
        max_capacity_seen=max(cap_r),
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
        min_capacity_seen=min(cap_w),
        max_capacity_seen=max(cap_w),
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
    eps = 1e-9
    ceil = math.ceil
    burst = float(b.burst_seconds)
    delay = b.reaction_minutes
    n_out = b.scale_out_minutes
    n_in = b.scale_in_minutes
    free = b.free_decreases_per_day
    gap = b.decrease_interval_minutes

    pr = min(max(float(ceil(read[0] * kr - eps)), mr), maxr)
    pw = min(max(float(ceil(write[0] * kw - eps)), mw), maxw)
    bank_r = burst * pr  # a table that has been running has its burst bank full
    bank_w = burst * pw
    pend_r = pend_w = -1  # minute at which the change in flight takes effect
    val_r = val_w = 0.0
    served_r = [0.0] * n
    served_w = [0.0] * n
    dq_r: deque[int] = deque()  # indices into served_*, values strictly decreasing: window max of served
    dq_w: deque[int] = deque()
    stale = False  # the deques miss minutes appended by the fast path; rebuilt from the last n_in minutes
    dec_today = 0
    last_dec = -(10**9)
    events = 0
    inc_r = inc_w = dec_r = dec_w = 0
    thr_r = thr_w = 0.0
    thr_min_r = thr_min_w = 0
    sum_r = sum_w = 0.0
    lo_r = hi_r = pr
    lo_w = hi_w = pw
    cap_r: list[float] = []
    cap_w: list[float] = []
    hours: list[int] = []
    hour_r: list[float] = []
    hour_w: list[float] = []
    h_acc_r = h_acc_w = 0.0
    h_cnt = 0
    # Fast path: blocks start once every alarm window lies inside the series.
    first_block = max(n_out, n_in, 2 * _CHUNK)
    chunk = max(1, min(_CHUNK, (n_in + 1) // 2))  # every n_in-window of a chunk's minutes holds the chunk before it
    block = _MIN_BLOCK
    slow_until = first_block
    # Indices where a new UTC day (decrease quota) and a new clock hour start.
    next_day = MINUTES_PER_DAY - start_minute % MINUTES_PER_DAY
    next_hour = 60 - start_minute % 60

    i = 0
    while i < n:
        if i >= next_day:
            next_day += MINUTES_PER_DAY
            dec_today = 0
        if pend_r == i:
            pr = val_r
            pend_r = -1
            if bank_r > burst * pr:
                bank_r = burst * pr
            lo_r = min(lo_r, pr)
            hi_r = max(hi_r, pr)
        if pend_w == i:
            pw = val_w
            pend_w = -1
            if bank_w > burst * pw:
                bank_w = burst * pw
            lo_w = min(lo_w, pw)
            hi_w = max(hi_w, pw)

        if i >= slow_until:
            # Fast path: a block [i, j) in which provably nothing but the burst bank changes. Both dimensions need:
            # no change in flight; demand within capacity (served = demand, nothing throttled); no n_out
            # consecutive minutes above target; every n_in-minute window holding a minute at or above the
            # scale-in threshold (or capacity already at the minimum).
            j = i + block
            if j > n:
                j = n
            if pend_r >= 0 and j > pend_r:
                j = pend_r
            if pend_w >= 0 and j > pend_w:
                j = pend_w
            quiet = j - i >= _MIN_BLOCK
            if quiet:
                room_r = pr * 60.0
                room_w = pw * 60.0
                quiet = max(read[i:j]) <= room_r and max(write[i:j]) <= room_w
            if quiet:
                served_r[i:j] = read[i:j]
                served_w[i:j] = write[i:j]
                if pend_r < 0:
                    t = out_r * pr
                    if max(served_r[i - n_out : j - 1]) > t:
                        quiet = n_out == 2 and max(map(min, served_r[i - 2 : j - 2], served_r[i - 1 : j - 1])) <= t
                    if quiet and pr > mr:
                        t = in_r * pr
                        quiet = min(max(served_r[a - chunk : a]) for a in range(i, j, chunk)) >= t
                if quiet and pend_w < 0:
                    t = out_w * pw
                    if max(served_w[i - n_out : j - 1]) > t:
                        quiet = n_out == 2 and max(map(min, served_w[i - 2 : j - 2], served_w[i - 1 : j - 1])) <= t
                    if quiet and pw > mw:
                        t = in_w * pw
                        quiet = min(max(served_w[a - chunk : a]) for a in range(i, j, chunk)) >= t
            if quiet:
                size = j - i
                cap = burst * pr
                if bank_r < cap:
                    for c in read[i:j]:
                        bank_r += room_r - c
                        if bank_r >= cap:
                            bank_r = cap
                            break
                cap = burst * pw
                if bank_w < cap:
                    for c in write[i:j]:
                        bank_w += room_w - c
                        if bank_w >= cap:
                            bank_w = cap
                            break
                sum_r += pr * size
                sum_w += pw * size
                if trace:
                    cap_r += [pr] * size
                    cap_w += [pw] * size
                # Clock hours crossed by the block.
                at = i
                while at < j:
                    seg = (next_hour if next_hour < j else j) - at
                    h_acc_r += pr * seg
                    h_acc_w += pw * seg
                    h_cnt += seg
                    at += seg
                    if at in (next_hour, n):
                        hours.append((start_minute + at - 1) // 60)
                        hour_r.append(h_acc_r / h_cnt)
                        hour_w.append(h_acc_w / h_cnt)
                        h_acc_r = h_acc_w = 0.0
                        h_cnt = 0
                        if at == next_hour:
                            next_hour += 60
                stale = True
                i = j
                if block < _MAX_BLOCK:
                    block *= 2
                continue
            block = _MIN_BLOCK
            slow_until = i + _MIN_BLOCK

        # Slow path: one minute, every rule.
        if stale:
            dq_r.clear()
            dq_w.clear()
            for k in range(max(0, i - n_in), i):
                x = served_r[k]
                while dq_r and served_r[dq_r[-1]] <= x:
                    dq_r.pop()
                dq_r.append(k)
                x = served_w[k]
                while dq_w and served_w[dq_w[-1]] <= x:
                    dq_w.pop()
                dq_w.append(k)
            stale = False
        if i:
            # Alarms, evaluated on the completed minutes against the current capacity's thresholds.
            lim = i - n_in
            while dq_r and dq_r[0] < lim:
                dq_r.popleft()
            while dq_w and dq_w[0] < lim:
                dq_w.popleft()
            want_r = want_w = 0.0
            if pend_r < 0:
                t = out_r * pr
                if i >= n_out and served_r[i - 1] > t:
                    # High alarm: each of the last n_out minutes above target; size from the busiest of them.
                    top = served_r[i - 1]
                    for k in range(i - n_out, i - 1):
                        sk = served_r[k]
                        if sk <= t:
                            top = 0.0
                            break
                        if sk > top:
                            top = sk
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
                                hi_r = max(hi_r, pr)
                elif i >= n_in and served_r[dq_r[0]] < in_r * pr:
                    # Low alarm: the busiest of the last n_in minutes below target minus the gap.
                    new = float(ceil(served_r[dq_r[0]] * kr - eps))
                    if new < mr:
                        new = mr
                    if new < pr:
                        want_r = new
            if pend_w < 0:
                t = out_w * pw
                if i >= n_out and served_w[i - 1] > t:
                    top = served_w[i - 1]
                    for k in range(i - n_out, i - 1):
                        sk = served_w[k]
                        if sk <= t:
                            top = 0.0
                            break
                        if sk > top:
                            top = sk
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
                                hi_w = max(hi_w, pw)
                elif i >= n_in and served_w[dq_w[0]] < in_w * pw:
                    new = float(ceil(served_w[dq_w[0]] * kw - eps))
                    if new < mw:
                        new = mw
                    if new < pw:
                        want_w = new
            if (want_r or want_w) and (dec_today < free or i - last_dec >= gap):
                # One UpdateTable: a combined read+write decrease is one decrease of this table or GSI.
                dec_today += 1
                last_dec = i
                events += 1
                if want_r:
                    dec_r += 1
                    if delay:
                        pend_r, val_r = i + delay, want_r
                    else:
                        pr = want_r
                        bank_r = min(bank_r, burst * pr)
                        lo_r = min(lo_r, pr)
                if want_w:
                    dec_w += 1
                    if delay:
                        pend_w, val_w = i + delay, want_w
                    else:
                        pw = want_w
                        bank_w = min(bank_w, burst * pw)
                        lo_w = min(lo_w, pw)
        # Serve minute i with capacity, then the burst bank; the rest is throttled.
        c = read[i]
        room = pr * 60.0
        if c <= room:
            s = c
            bank_r += room - c
            if bank_r > burst * pr:
                bank_r = burst * pr
        elif c - room <= bank_r:
            s = c
            bank_r -= c - room
        else:
            s = room + bank_r
            thr_r += c - s
            thr_min_r += 1
            bank_r = 0.0
        served_r[i] = s
        while dq_r and served_r[dq_r[-1]] <= s:
            dq_r.pop()
        dq_r.append(i)
        c = write[i]
        room = pw * 60.0
        if c <= room:
            s = c
            bank_w += room - c
            if bank_w > burst * pw:
                bank_w = burst * pw
        elif c - room <= bank_w:
            s = c
            bank_w -= c - room
        else:
            s = room + bank_w
            thr_w += c - s
            thr_min_w += 1
            bank_w = 0.0
        served_w[i] = s
        while dq_w and served_w[dq_w[-1]] <= s:
            dq_w.pop()
        dq_w.append(i)

        sum_r += pr
        sum_w += pw
        if trace:
            cap_r.append(pr)
            cap_w.append(pw)
        h_acc_r += pr
        h_acc_w += pw
        h_cnt += 1
        i += 1
        if i in (next_hour, n):
            hours.append((start_minute + i - 1) // 60)
            hour_r.append(h_acc_r / h_cnt)
            hour_w.append(h_acc_w / h_cnt)
            h_acc_r = h_acc_w = 0.0
            h_cnt = 0
            if i == next_hour:
                next_hour += 60

    run_r = DimensionRun(
        consumed_units=math.fsum(read),
        unit_hours=sum_r / 60.0,
        hours=hours,
        hourly_capacity=hour_r,
        peak_per_second=max(read) / 60.0,
        min_capacity_seen=lo_r,
        max_capacity_seen=hi_r,
        increases=inc_r,
        decreases=dec_r,
        throttled_units=thr_r,
        throttled_minutes=thr_min_r,
        capacity=cap_r if trace else None,
    )
    run_w = DimensionRun(
        consumed_units=math.fsum(write),
        unit_hours=sum_w / 60.0,
        hours=list(hours),
        hourly_capacity=hour_w,
        peak_per_second=max(write) / 60.0,
        min_capacity_seen=lo_w,
        max_capacity_seen=hi_w,
        increases=inc_w,
        decreases=dec_w,
        throttled_units=thr_w,
        throttled_minutes=thr_min_w,
        capacity=cap_w if trace else None,
    )
    return SeriesRun(run_r, run_w, n, events)

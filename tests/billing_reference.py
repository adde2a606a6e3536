"""Straightforward per-minute versions of both simulators that rescan their windows every minute.

They state the rules as plainly as possible (slices of the last 2, 15 and 60 datapoints, rescanned each minute,
as the archived evaluator itself does) and are O(n * window). They exist as the oracle the fast simulators in
:mod:`auditor.billing.simulate` are tested against, and as the baseline of ``python -m benchmarks.billing``.
Do not use them for real work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

from auditor.billing.simulate import (
    MINUTES_PER_DAY,
    AwsBehaviour,
    DimensionRun,
    EvaluatorParams,
    ScalingPolicy,
    SeriesRun,
    _hourly,
)

_EVALUATOR = EvaluatorParams()
_POLICY = ScalingPolicy()
_BEHAVIOUR = AwsBehaviour()


def _decreased(values: Sequence[float]) -> bool:
    """Whether any consecutive pair in ``values`` goes down."""
    return any(x > y for x, y in pairwise(values))


def evaluator_naive(
    read: Sequence[float],
    write: Sequence[float],
    params: EvaluatorParams = _EVALUATOR,
    *,
    start_minute: int = 0,
    read_minutes: Sequence[int] | None = None,
    write_minutes: Sequence[int] | None = None,
) -> SeriesRun:
    """The archived evaluator's rules, rescanning the 2/15/60-datapoint windows each minute."""
    n = min(len(read), len(write))
    rmin = list(read_minutes) if read_minutes is not None else list(range(start_minute, start_minute + n))
    wmin = list(write_minutes) if write_minutes is not None else list(range(start_minute, start_minute + n))
    if n == 0:
        empty = DimensionRun(0.0, 0.0, [], [], 0.0, 0.0, 0.0, 0, 0)
        return SeriesRun(empty, empty, 0)
    ur, mr, maxr = params.read.target_utilization, params.read.min_capacity, params.read.max_capacity
    uw, mw, maxw = params.write.target_utilization, params.write.min_capacity, params.write.max_capacity
    factor = params.scale_in_factor
    rr = [c / 60 for c in read[:n]]
    rw = [c / 60 for c in write[:n]]
    cap_r = [min(max((rr[0] / ur) * 100, mr), maxr)]
    cap_w = [min(max((rw[0] / uw) * 100, mw), maxw)]
    count = 0
    events = 0
    last_change = "read"
    for i in range(1, n):
        if rmin[i] % MINUTES_PER_DAY == 0:
            count = 0
        if i <= 2:
            cap_r.append(cap_r[0])
            cap_w.append(cap_w[0])
            continue
        # Scale-out on the last two datapoints.
        last2 = rr[i - 2 : i]
        v = min(max((min(last2) / ur) * 100, cap_r[i - 1]), maxr)
        cur_r = (max(last2) / ur) * 100 if v == (min(last2) / ur) * 100 else v
        last2 = rw[i - 2 : i]
        v = min(max((min(last2) / uw) * 100, cap_w[i - 1]), maxw)
        cur_w = (max(last2) / uw) * 100 if v == (min(last2) / uw) * 100 else v
        if i > 14:
            cand_r = max(min((max(rr[i - 15 : i]) / ur) * 100, cur_r), mr)
            cand_w = max(min((max(rw[i - 15 : i]) / uw) * 100, cur_w), mw)
            if count < params.free_decreases:
                if not _decreased(cap_r[i - 15 : i]):
                    if cap_r[i - 1] > cand_r * factor:
                        cur_r = cand_r
                    if cap_r[i - 1] > cur_r:
                        count += 1
                        events += 1
                if not _decreased(cap_w[i - 15 : i]):
                    if cap_w[i - 1] > cand_w * factor:
                        cur_w = cand_w
                    if cap_w[i - 1] > cur_w:
                        count += 1
                        events += 1
            elif i >= 60 and not _decreased(cap_r[i - 60 : i]) and not _decreased(cap_w[i - 60 : i]):
                q_r = cap_r[i - 1] > cand_r * factor
                q_w = cap_w[i - 1] > cand_w * factor
                if q_r and q_w:
                    if last_change == "write":
                        cur_r = cand_r
                        last_change = "read"
                    else:
                        cur_w = cand_w
                        last_change = "write"
                else:
                    if q_r:
                        cur_r = cand_r
                    if q_w:
                        cur_w = cand_w
        cap_r.append(cur_r)
        cap_w.append(cur_w)

    def run(cap: list[float], rate: list[float], minutes: list[int], consumed: Sequence[float]) -> DimensionRun:
        hours, means, total = _hourly(minutes[:n], cap)
        return DimensionRun(
            consumed_units=math.fsum(consumed[:n]),
            unit_hours=total,
            hours=hours,
            hourly_capacity=means,
            peak_per_second=max(rate),
            min_capacity_seen=min(cap),
            max_capacity_seen=max(cap),
            increases=sum(1 for j in range(3, n) if cap[j] > cap[j - 1]),
            decreases=sum(1 for j in range(1, n) if cap[j] < cap[j - 1]),
            capacity=cap,
        )

    return SeriesRun(run(cap_r, rr, rmin, read), run(cap_w, rw, wmin, write), n, events)


def aws_naive(
    read: Sequence[float],
    write: Sequence[float],
    read_policy: ScalingPolicy = _POLICY,
    write_policy: ScalingPolicy = _POLICY,
    behaviour: AwsBehaviour = _BEHAVIOUR,
    *,
    start_minute: int = 0,
) -> SeriesRun:
    """The ``aws`` rules, rescanning the alarm windows and the decrease history each minute."""
    n = len(read)
    b = behaviour
    pol = {"r": read_policy, "w": write_policy}
    demand = {"r": list(read), "w": list(write)}
    lo_cap = {d: float(math.ceil(pol[d].min_capacity)) for d in pol}
    hi_cap = {d: float(math.floor(pol[d].max_capacity)) for d in pol}

    def need(d: str, units: float) -> float:
        return float(math.ceil(units * 100.0 / (60.0 * pol[d].target_utilization) - 1e-9))

    p = {d: min(max(need(d, demand[d][0]), lo_cap[d]), hi_cap[d]) for d in pol}
    bank = {d: b.burst_seconds * p[d] for d in pol}
    pending: dict[str, tuple[int, float] | None] = {"r": None, "w": None}
    served: dict[str, list[float]] = {"r": [], "w": []}
    cap: dict[str, list[float]] = {"r": [], "w": []}
    throttled = {"r": 0.0, "w": 0.0}
    throttled_at: dict[str, list[float]] = {"r": [], "w": []}
    thr_minutes = {"r": 0, "w": 0}
    increases = {"r": 0, "w": 0}
    decreases = {"r": 0, "w": 0}
    decrease_log: list[tuple[str, int]] = []  # (quota owner, minute) of every decrease
    for i in range(n):
        minute = start_minute + i
        for d in pol:
            pend = pending[d]
            if pend is not None and pend[0] == i:
                p[d] = pend[1]
                pending[d] = None
                bank[d] = min(bank[d], b.burst_seconds * p[d])
        want: dict[str, float] = {}
        if i:
            for d in pol:
                if pending[d] is not None:
                    continue
                target = pol[d].target_utilization
                high = served[d][max(0, i - b.scale_out_minutes) : i]
                low = served[d][max(0, i - b.scale_in_minutes) : i]
                if i >= b.scale_out_minutes and min(high) > 0.6 * target * p[d]:
                    new = min(need(d, max(high)), hi_cap[d])
                    if new > p[d]:
                        increases[d] += 1
                        pending[d] = (i + b.reaction_minutes, new)
                elif (
                    i >= b.scale_in_minutes
                    and max(low) < 0.6 * (target - b.scale_in_gap) * p[d]
                    and (max(low) > 0 or b.scale_in_at_zero)
                ):
                    new = max(need(d, max(low)), lo_cap[d])
                    if new < p[d]:
                        want[d] = new
            # Each scalable target's scale-in is its own UpdateTable request: reads first, then writes, each
            # checked against the decrease quota of its owner (the table or GSI, or the dimension itself).
            day_start = minute - minute % MINUTES_PER_DAY
            for d, new in want.items():
                owner = "rw" if b.shared_decrease_quota else d
                done = [m for o, m in decrease_log if o == owner]
                today = [m for m in done if m >= day_start]
                recent = [m for m in done if m > minute - b.decrease_interval_minutes]
                opening = len(today) < b.free_decreases_per_day and (
                    not today or minute < today[0] + b.free_decrease_window_minutes
                )
                if opening or not recent:
                    decrease_log.append((owner, minute))
                    decreases[d] += 1
                    pending[d] = (i + b.reaction_minutes, new)
            for d in pol:
                pend = pending[d]
                if pend is not None and pend[0] == i:  # no reaction delay
                    p[d] = pend[1]
                    pending[d] = None
                    bank[d] = min(bank[d], b.burst_seconds * p[d])
        for d in pol:
            c = demand[d][i]
            room = p[d] * 60.0
            if c <= room:
                s = c
                bank[d] = min(bank[d] + room - c, b.burst_seconds * p[d])
            elif c - room <= bank[d]:
                s = c
                bank[d] -= c - room
            else:
                s = room + bank[d]
                throttled[d] += c - s
                thr_minutes[d] += 1
                bank[d] = 0.0
            served[d].append(s)
            cap[d].append(p[d])
            throttled_at[d].append(c - s)

    minutes = list(range(start_minute, start_minute + n))

    def run(d: str) -> DimensionRun:
        hours, means, _ = _hourly(minutes, cap[d])
        # Each clock hour at the highest capacity in force in it (an hour cut by the window's edge: pro rata).
        peaks: dict[int, float] = {}
        count: dict[int, int] = {}
        for m, v in zip(minutes, cap[d], strict=True):
            peaks[m // 60] = max(peaks.get(m // 60, 0.0), v)
            count[m // 60] = count.get(m // 60, 0) + 1
        return DimensionRun(
            consumed_units=math.fsum(demand[d]),
            unit_hours=math.fsum(cap[d]) / 60.0,
            hours=hours,
            hourly_capacity=means,
            peak_per_second=max(demand[d]) / 60.0 if n else 0.0,
            min_capacity_seen=min(cap[d]) if n else 0.0,
            max_capacity_seen=max(cap[d]) if n else 0.0,
            increases=increases[d],
            decreases=decreases[d],
            throttled_units=throttled[d],
            throttled_minutes=thr_minutes[d],
            capacity=cap[d],
            peak_hour_unit_hours=math.fsum(peaks[h] * count[h] / 60.0 for h in peaks),
            throttled=throttled_at[d],
        )

    return SeriesRun(run("r"), run("w"), n, len(decrease_log))

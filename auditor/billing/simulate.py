"""Two simulators of provisioned capacity under auto scaling, from per-minute consumed capacity, and what they share:
scaling policies and behaviours, the results, hourly costing and the pacing of their skip-ahead.

``evaluator`` (:mod:`auditor.billing.evaluator_scaling`) reproduces the archived awslabs capacity-mode-evaluator;
``aws`` (:mod:`auditor.billing.aws_scaling`) follows documented AWS behaviour. Both are event-driven and O(n) per
series, with the results of the per-minute rules bit for bit. How they skip ahead is in docs/billing-simulation.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import Field

from auditor.models.base import FrozenModel

MINUTES_PER_DAY = 1440
#: Datapoints (minutes) run through every rule from the one a skip-ahead search stops at: one after a long skip,
#: twice as many after each skip shorter than ``_SHORT_SKIP``, up to the maximum. Where changes come every few
#: minutes (a rising load), stepping through them costs less than searching for each.
_SLOW_RUN = 1
_MAX_SLOW_RUN = 64
_SHORT_SKIP = 8


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


class AwsBehaviour(FrozenModel):
    """Documented AWS auto-scaling and capacity behaviour used by the ``aws`` simulation."""

    #: High alarm: consumed above target for this many consecutive 1-minute datapoints.
    scale_out_minutes: int = Field(default=2, ge=1)
    #: Low alarm: consumed this many percentage points below target ...
    scale_in_gap: float = 20.0
    #: ... for this many consecutive 1-minute datapoints.
    scale_in_minutes: int = Field(default=15, ge=1)
    #: Minutes from the alarm firing to the new capacity being in force (alarm action plus UpdateTable).
    reaction_minutes: int = Field(default=2, ge=0)
    #: Unused capacity banked for bursts, in seconds of the current capacity.
    burst_seconds: int = Field(default=300, ge=0)
    #: Decreases per UTC day that may come together: up to this many ...
    free_decreases_per_day: int = 4
    #: ... within this many minutes of the day's first decrease (DynamoDB quotas: "up to four decreases within one
    #: hour as long as you have not performed any other decreases yet during that day") ...
    free_decrease_window_minutes: int = Field(default=60, ge=0)
    #: ... then one more whenever none happened in this many minutes ("one additional decrease per hour as long as
    #: there was no decreases in the preceding hour").
    decrease_interval_minutes: int = Field(default=60, ge=0)
    #: The quota belongs to the table (or GSI): reads and writes draw on one counter, although each scalable target's
    #: scale-in is its own UpdateTable request and its own decrease. False: one counter per dimension.
    shared_decrease_quota: bool = True
    #: Auto scaling "does not scale down your provisioned capacity if your table's consumed capacity becomes zero":
    #: a low alarm whose whole window consumed nothing does not lower the capacity (True: it does).
    scale_in_at_zero: bool = False


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


def needed_capacity(units_per_minute: float, target_utilization: float) -> int:
    """Whole capacity units that serve ``units_per_minute`` at ``target_utilization`` percent."""
    return math.ceil(units_per_minute * 100.0 / (60.0 * target_utilization) - 1e-9)

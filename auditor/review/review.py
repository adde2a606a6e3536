"""The review: every proposal rule over one input, in a stable order, and the replay of the proposals at 1x (the
average), 2x and the observed peak through the what-if's partition limits (``model-review --replay``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from auditor.review.access import add_gsi, composite_sort_key, query_instead_of_gets
from auditor.review.context import ReviewInput
from auditor.review.keys import cache_reads, drop_index, shard_partition_key, split_item
from auditor.review.model import KINDS, Proposal, partition_capacity
from auditor.whatif.limits import WhatIfConfig

RULES: tuple[Callable[[ReviewInput], list[Proposal]], ...] = (
    add_gsi,
    query_instead_of_gets,
    shard_partition_key,
    composite_sort_key,
    split_item,
    cache_reads,
    drop_index,
)


def review(data: ReviewInput) -> list[Proposal]:
    """Every proposal of the input, largest saving first (then kind, table, id: the same input gives the same list)."""
    proposals = [p for rule in RULES for p in rule(data)]
    proposals.sort(key=lambda p: (-(p.before.monthly - p.after.monthly), KINDS.index(p.kind), p.table, p.id))
    return proposals


@dataclass(frozen=True, slots=True)
class ReplayRow:
    """One proposal at one traffic level: the partition's headroom and whether it throttles, and the cost."""

    proposal: str
    kind: str
    table: str
    level: str
    multiple: float
    headroom_before: float | None
    headroom_after: float | None
    monthly_before: float
    monthly_after: float
    #: The key throttled in the trail: at a headroom of 1.0 (its observed peak) it throttles, as it did.
    throttles_now: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            **{name: getattr(self, name) for name in ("proposal", "kind", "table", "level")},
            "multiple_of_average": round(self.multiple, 2),
            "headroom_before": _round(self.headroom_before),
            "headroom_after": _round(self.headroom_after),
            "throttles_before": self.headroom_before is not None
            and (self.headroom_before < 1 or (self.throttles_now and self.headroom_before <= 1)),
            "throttles_after": self.headroom_after is not None and self.headroom_after < 1,
            "monthly_cost_before": round(self.monthly_before, 2),
            "monthly_cost_after": round(self.monthly_after, 2),
        }


def _headrooms(
    p: Proposal, level: str, multiple: float, peak_multiple: float, limits: WhatIfConfig
) -> tuple[float | None, float | None]:
    """The partition headroom before and after ``p`` at a load ``multiple`` times the average (the what-if's model:
    its capacity, reconciled with the throttling observed). A key that throttles now is measured from today's
    traffic, which throttled: 1x is today's traffic and its peak (the headroom at the observed peak, at most 1),
    2x twice it, and the peak level today's peak; never from a flat average, which the evidence does not bound."""
    if p.peak is None or p.peak_after is None:
        return None, None
    if p.throttles_now:
        factor = 1.0 if level == "peak" else multiple
        return _divided(p.before.headroom, factor), _divided(p.after.headroom, factor)
    capacity = p.capacity or partition_capacity(limits)
    scale = multiple / peak_multiple
    return (
        capacity.headroom(p.peak[0] * scale, p.peak[1] * scale),
        capacity.headroom(p.peak_after[0] * scale, p.peak_after[1] * scale),
    )


def _divided(headroom: float | None, factor: float) -> float | None:
    return headroom / factor if headroom is not None else None


def _round(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


def replay(proposals: Sequence[Proposal], limits: WhatIfConfig | None = None) -> list[ReplayRow]:
    """Each proposal at 1x and 2x its average load and at the observed peak: the partition headroom before and after
    the change (the what-if's limits; a proposal without a partition peak has none) and the monthly cost, scaled."""
    limits = limits or WhatIfConfig()
    rows: list[ReplayRow] = []
    for p in proposals:
        peak_multiple = 1.0
        if p.peak is not None and p.average is not None and sum(p.average) > 0:
            peak_multiple = max(1.0, sum(p.peak) / sum(p.average))
        for level, multiple in (("1x", 1.0), ("2x", 2.0), ("peak", peak_multiple)):
            before, after = _headrooms(p, level, multiple, peak_multiple, limits)
            fixed_after = p.after.storage + p.after.extra
            fixed_before = p.before.storage + p.before.extra
            rows.append(
                ReplayRow(
                    p.id,
                    p.kind,
                    p.table,
                    level,
                    multiple,
                    before,
                    after,
                    fixed_before + (p.before.monthly - fixed_before) * multiple,
                    fixed_after + (p.after.monthly - fixed_after) * multiple,
                    p.throttles_now,
                )
            )
    return rows

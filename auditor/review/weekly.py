"""The weekly report's model-review section: the proposals the week's open findings support on their own (no trail
pass: sharding, caching, splitting items, dropping indexes), one row each with its price and headroom."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from auditor.models.access_pattern import AccessPattern
from auditor.models.base import FrozenModel
from auditor.models.finding import Finding
from auditor.review.context import ReviewInput
from auditor.review.review import review
from auditor.review.signals import ReviewSignals


class ProposalRow(FrozenModel):
    """One proposal as the weekly report shows it."""

    id: str
    kind: str
    table: str
    index: str | None
    title: str
    confidence: str
    monthly_before: float
    monthly_after: float
    headroom_before: float | None
    headroom_after: float | None

    @property
    def monthly_saving(self) -> float:
        return round(self.monthly_before - self.monthly_after, 2)


def proposal_rows(findings: Iterable[Finding], patterns: Sequence[AccessPattern] = ()) -> list[ProposalRow]:
    """The proposals of these findings (``ddb-audit model-review`` adds the ones that need the trail itself)."""
    data = ReviewInput([], [f.model_dump(mode="json") for f in findings], list(patterns), ReviewSignals())
    return [
        ProposalRow(
            id=p.id,
            kind=p.kind,
            table=p.table,
            index=p.index,
            title=p.title,
            confidence=p.confidence,
            monthly_before=p.before.monthly,
            monthly_after=p.after.monthly,
            headroom_before=p.before.headroom,
            headroom_after=p.after.headroom,
        )
        for p in review(data)
    ]

"""The weekly report's model-review section: the proposals the week's open findings support on their own (no trail
pass: sharding, caching, splitting items, dropping indexes), one row each with its price and headroom. The scheduled
model review of the service (:mod:`auditor.service.model_review`) reviews the same input with :func:`week_proposals`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from auditor.models.access_pattern import AccessPattern
from auditor.models.base import FrozenModel
from auditor.models.finding import Finding
from auditor.review.context import ReviewInput
from auditor.review.model import Proposal
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


def week_proposals(findings: Iterable[Finding], patterns: Sequence[AccessPattern] = ()) -> list[Proposal]:
    """The proposals of these (open) findings and access patterns, without the trail."""
    return review(ReviewInput([], [f.model_dump(mode="json") for f in findings], list(patterns), ReviewSignals()))


def proposal_rows(findings: Iterable[Finding], patterns: Sequence[AccessPattern] = ()) -> list[ProposalRow]:
    """The proposals of these findings (``ddb-audit model-review`` adds the ones that need the trail itself)."""
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
        for p in week_proposals(findings, patterns)
    ]

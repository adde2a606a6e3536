"""The scheduled model review (optional: template parameter ``ExtraOutputs`` naming ``model-review``): the data-model
proposals of the state the service keeps, stored under their stable ids, each announced once on the findings topic when
it is new or its change differs from the one announced (docs/model-review.md, "In the service").

The input is the weekly report's: the open findings of the ISO week in progress (and its access patterns), as
:func:`auditor.service.weekly_report.build_weekly_report` makes them, reviewed by
:func:`auditor.review.weekly.week_proposals`, the function behind the report's model-review section.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import orjson
import structlog

from auditor.messages import MessageKind, ModelProposalAttributes
from auditor.models.finding import utc
from auditor.report.model import IsoWeek
from auditor.review.model import Proposal
from auditor.review.review_text import proposal_text
from auditor.review.weekly import week_proposals
from auditor.service.weekly_report import build_weekly_report, load_states
from auditor.sinks.report_announcement import publish_announcement
from auditor.state.findings_store import FindingsStore
from auditor.state.proposal_store import ProposalStore

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

__all__ = ["MESSAGE_KIND", "ModelReviewResult", "change_fingerprint", "current_proposals", "run_model_review"]

log = structlog.get_logger(__name__)

MESSAGE_KIND = MessageKind.MODEL_PROPOSAL


def change_fingerprint(p: Proposal) -> str:
    """What makes a stored proposal "changed": its change and its confidence (not its prices, which move with the
    traffic of every run)."""
    raw = orjson.dumps({"change": p.change, "confidence": p.confidence}, option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(raw).hexdigest()[:16]


def current_proposals(store: FindingsStore, now: datetime) -> list[Proposal]:
    """The proposals of the week in progress: the weekly report's input, reviewed as its model-review section."""
    week = IsoWeek.of(now)
    report = build_weekly_report(load_states(store, week, now), week, now)
    return week_proposals([rf.finding for rf in report.findings if rf.is_open], report.access_patterns)


@dataclass(slots=True)
class ModelReviewResult:
    """What one run did: the proposals made, and the ids announced as new or changed."""

    proposals: int = 0
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def run_model_review(
    store: FindingsStore,
    proposals: ProposalStore,
    sns: SNSClient,
    topic_arn: str,
    now: datetime,
    *,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ModelReviewResult:
    """Review the state, store every proposal and announce the new and changed ones (see the module docstring).
    A failed announcement is released and raised: the retry announces it."""
    now = utc(now)
    result = ModelReviewResult()
    for p in current_proposals(store, now):
        result.proposals += 1
        fingerprint = change_fingerprint(p)
        document = orjson.dumps(p.to_dict(), default=str).decode()
        fields = {"kind": p.kind, "table": p.table, "proposal_json": document}
        claim = proposals.claim(p.id, fingerprint, fields, now)
        if claim is None:
            continue
        try:
            message_id = publish_announcement(
                sns,
                topic_arn,
                subject=f"DynamoDB model review: {p.title}"[:99],
                message=proposal_text(p),
                attributes=ModelProposalAttributes(
                    table=p.table, event_id=f"{p.id}#{fingerprint}", proposal_json=document
                ).to_strings(),
            )
        except Exception:
            proposals.release(p.id, claim)
            raise
        proposals.mark_announced(p.id, message_id, utc(clock()))
        (result.new if claim.status == "new" else result.changed).append(p.id)
    log.info("model_review_done", **result.as_dict())
    return result

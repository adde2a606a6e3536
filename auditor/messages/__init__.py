"""The messages the service publishes on its findings topic, each declared once (plain data, no I/O).

The senders build them from here and every reader parses them from here: the finding event
(:mod:`auditor.messages.finding_event`), the run digest (:mod:`auditor.messages.digest`), the weekly report
announcement (:mod:`auditor.messages.weekly_report`) and the model proposal (:mod:`auditor.messages.model_proposal`),
with the kinds and the attribute names subscription filter
policies use (:mod:`auditor.messages.topic`).
"""

from auditor.messages.digest import Digest, DigestAttributes, DigestItem, parse_digest
from auditor.messages.finding_event import FindingEventAttributes, encode_finding, parse_finding
from auditor.messages.model_proposal import ModelProposalAttributes
from auditor.messages.topic import (
    ALL_TABLES,
    AttributeName,
    FindingNotification,
    MessageKind,
    TopicAttributes,
    message_kind,
)
from auditor.messages.weekly_report import (
    ReportAnnouncementAttributes,
    SummaryAction,
    WeeklySummary,
    parse_weekly_summary,
)

__all__ = [
    "ALL_TABLES",
    "AttributeName",
    "Digest",
    "DigestAttributes",
    "DigestItem",
    "FindingEventAttributes",
    "FindingNotification",
    "MessageKind",
    "ModelProposalAttributes",
    "ReportAnnouncementAttributes",
    "SummaryAction",
    "TopicAttributes",
    "WeeklySummary",
    "encode_finding",
    "message_kind",
    "parse_digest",
    "parse_finding",
    "parse_weekly_summary",
]

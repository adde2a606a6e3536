"""What every message on the findings topic has: its kind, its string attributes (the names subscription filter
policies use) and, on the receiving side, the record a reader gets (SNS id, readable text, attributes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, TypeVar

from pydantic import BaseModel, ValidationError

from auditor.models.base import FrozenModel

__all__ = [
    "ALL_TABLES",
    "AttributeName",
    "FindingNotification",
    "MessageKind",
    "TopicAttributes",
    "message_kind",
    "parse_json_attribute",
]

_Model = TypeVar("_Model", bound=BaseModel)


class MessageKind(StrEnum):
    """The kinds of message the service publishes on the findings topic.

    A run digest, a weekly report announcement and a model proposal carry their kind in the ``kind`` attribute. A
    finding event carries its *finding* kind there instead (``scan``, ``hot_key``, ...:
    :class:`auditor.models.finding.FindingKind`, none of which is a message kind), so filter policies select finding
    events with ``{"anything-but": ["digest", "weekly_report", "model_proposal"]}``; ``finding`` itself is never on
    the wire.
    """

    FINDING = "finding"
    DIGEST = "digest"
    WEEKLY_REPORT = "weekly_report"
    #: A new or changed data-model proposal of the scheduled model review (:mod:`auditor.messages.model_proposal`).
    MODEL_PROPOSAL = "model_proposal"


class AttributeName(StrEnum):
    """The names of the string message attributes (SNS ``MessageAttributes``, all ``DataType: String``)."""

    KIND = "kind"
    SEVERITY = "severity"
    TABLE = "table"
    STATUS = "status"
    FINDING_ID = "finding_id"
    EVENT_ID = "event_id"
    PREVIOUS_SEVERITY = "previous_severity"
    FINDING_JSON = "finding_json"
    DIGEST_JSON = "digest_json"
    WEEK = "week"
    REPORT_JSON = "report_json"
    PROPOSAL_JSON = "proposal_json"


#: The ``table`` attribute of a message about no one table (the weekly report announcement).
ALL_TABLES: Final = "*"


class TopicAttributes(FrozenModel):
    """The string message attributes of one message; each field is one attribute of the same name."""

    def to_strings(self) -> dict[str, str]:
        """Attribute name -> value, in the order the fields are declared; attributes without a value are left out."""
        return {name: str(value) for name, value in self.model_dump(mode="json", exclude_none=True).items()}


def message_kind(attributes: Mapping[str, str]) -> MessageKind:
    """The kind of a received message, from its ``kind`` attribute (anything but a digest, a report announcement or
    a model proposal is a finding event)."""
    kind = attributes.get(AttributeName.KIND)
    for other in (MessageKind.DIGEST, MessageKind.WEEKLY_REPORT, MessageKind.MODEL_PROPOSAL):
        if kind == other:
            return other
    return MessageKind.FINDING


@dataclass(frozen=True, slots=True)
class FindingNotification:
    """One message received from the findings topic (a finding event, a run digest or a report announcement):
    its SNS message id, the readable text and the string message attributes (name -> value)."""

    message_id: str
    message: str
    attributes: Mapping[str, str] = field(default_factory=dict)


def parse_json_attribute(
    model: type[_Model], raw: str | None, attribute: str, what: str
) -> tuple[_Model | None, str | None]:
    """(the model, None) for a valid JSON ``attribute`` value, else (None, why it is unusable): ``what`` names the
    model in the reason (``a digest``)."""
    if not raw:
        return None, f"{attribute} attribute missing"
    try:
        return model.model_validate_json(raw), None
    except ValidationError as exc:
        err = exc.errors()[0]
        return None, f"{attribute} is not {what}: {'.'.join(str(x) for x in err['loc'])}: {err['msg']}"

"""The run digest: one message per evaluation or audit run that sent any ``new`` or ``worsened`` finding event
(sent by :mod:`auditor.sinks.sns`; read by the Slack notifier, which by default takes digests instead of the
per-finding messages).

``Subject`` ``[HIGH] 7 new or worsened DynamoDB findings``; ``Message`` the readable list; the attributes of
:class:`DigestAttributes`, the findings in ``digest_json`` (:class:`Digest`: most severe first, at most a bounded
number of items, ``more`` counting the rest).
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from auditor.messages.topic import MessageKind, TopicAttributes, parse_json_attribute
from auditor.models.finding import Severity

__all__ = ["Digest", "DigestAttributes", "DigestItem", "parse_digest"]


class DigestItem(BaseModel):
    """One finding in a run digest (the ``digest_json`` items)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    severity: str
    #: The finding event: ``new`` or ``worsened``.
    status: str = "new"
    kind: str = ""
    table: str
    index: str | None = None
    account: str | None = None
    region: str | None = None
    title: str
    #: The first sentence of the recommendation.
    fix: str = ""
    previous_severity: str | None = None
    #: The finding's ``key`` evidence, so a reader can redact the key in the title and the fix.
    key: Any = None


class Digest(BaseModel):
    """A run digest: the new and worsened findings of one evaluation or audit run (the ``digest_json`` attribute)."""

    model_config = ConfigDict(extra="ignore")

    findings: list[DigestItem] = Field(max_length=1000)
    #: Findings of the run not listed.
    more: int = Field(default=0, ge=0)

    def to_json(self) -> str:
        """The ``digest_json`` attribute."""
        return orjson.dumps(self.model_dump()).decode()


class DigestAttributes(TopicAttributes):
    """The message attributes of a run digest."""

    kind: Literal[MessageKind.DIGEST] = MessageKind.DIGEST
    #: The most severe finding in it, so a filter policy on ``severity`` drops a digest of only minor findings.
    severity: Severity
    status: Literal[MessageKind.DIGEST] = MessageKind.DIGEST
    event_id: str
    digest_json: str


def parse_digest(raw: str | None) -> tuple[Digest | None, str | None]:
    """(Digest, None) for a valid ``digest_json`` attribute, else (None, why it is unusable)."""
    return parse_json_attribute(Digest, raw, "digest_json", "a digest")

"""The weekly report announcement: one message per ISO week (sent by :mod:`auditor.service.weekly_report`; read by
the Slack notifier, which posts it as a compact summary with a button to the report).

``Subject`` ``DynamoDB weekly audit 2026-W49``; ``Message`` readable text (headline, top numbers, the three most
important actions, the link); the attributes of :class:`ReportAnnouncementAttributes`, the compact summary in
``report_json`` (:class:`WeeklySummary`; key values in it are raw, a reader redacts them).
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from auditor.messages.topic import ALL_TABLES, MessageKind, TopicAttributes, parse_json_attribute
from auditor.models.finding import Severity

__all__ = ["ReportAnnouncementAttributes", "SummaryAction", "WeeklySummary", "parse_weekly_summary"]


class SummaryAction(BaseModel):
    """One of the report's most important actions, as the announcement carries it."""

    model_config = ConfigDict(extra="ignore")

    rank: int
    severity: str = "info"
    table: str = ""
    kind: str = ""
    headline: str
    recommendation: str = ""
    monthly_savings: float = 0.0
    findings: int = 1
    #: Raw key values of the action's findings (to redact wherever they appear in the text); never shown.
    keys: list[Any] = Field(default_factory=list)


class WeeklySummary(BaseModel):
    """The ``report_json`` attribute of a weekly report announcement (unknown fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    kind: MessageKind = MessageKind.WEEKLY_REPORT
    version: int = 1
    title: str = "DynamoDB weekly audit"
    week: str = Field(min_length=1)
    #: The week's start and end and when the report was made (ISO 8601, ``Z``).
    week_start: str | None = None
    week_end: str | None = None
    generated_at: str | None = None
    headline: str = ""
    open_findings: int = 0
    by_severity: dict[str, int] = Field(default_factory=dict)
    new: int = 0
    worsened: int = 0
    ongoing: int = 0
    resolved: int = 0
    tables_with_findings: int = 0
    tables_seen: int = 0
    monthly_savings: float = 0.0
    worst_severity: str = "info"
    actions: list[SummaryAction] = Field(default_factory=list)
    url: str | None = None
    url_expires_at: str | None = None
    #: False (and absent in older messages): the link may stop before ``url_expires_at`` (temporary credentials).
    url_expiry_known: bool = False
    #: The report's S3 console page (AWS sign-in needed; works as long as the report is kept).
    console_url: str | None = None
    bucket: str | None = None
    html_key: str | None = None
    markdown_key: str | None = None

    def to_json(self) -> str:
        """The ``report_json`` attribute."""
        return orjson.dumps(self.model_dump()).decode()


class ReportAnnouncementAttributes(TopicAttributes):
    """The message attributes of a weekly report announcement."""

    kind: Literal[MessageKind.WEEKLY_REPORT] = MessageKind.WEEKLY_REPORT
    #: The worst open severity (``info`` when nothing is open).
    severity: Severity
    table: Literal["*"] = ALL_TABLES
    #: The ISO week (``2026-W49``).
    week: str
    #: ``report-2026-W49``: the same on every retry.
    event_id: str
    report_json: str


def parse_weekly_summary(raw: str | None) -> tuple[WeeklySummary | None, str | None]:
    """(summary, None) for a valid ``report_json`` attribute, else (None, why it is unusable)."""
    return parse_json_attribute(WeeklySummary, raw, "report_json", "a weekly summary")

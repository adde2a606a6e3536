"""The message contract (auditor.messages): attribute names declared once, kinds that cannot be confused, attributes
in a stable order, and payloads that read back what was written."""

from __future__ import annotations

import orjson
import pytest

from auditor.messages import (
    AttributeName,
    Digest,
    DigestAttributes,
    DigestItem,
    FindingEventAttributes,
    MessageKind,
    ModelProposalAttributes,
    ReportAnnouncementAttributes,
    SummaryAction,
    TopicAttributes,
    WeeklySummary,
    message_kind,
    parse_digest,
    parse_weekly_summary,
)
from auditor.models.finding import FindingKind, Severity

ATTRIBUTE_MODELS: list[type[TopicAttributes]] = [
    FindingEventAttributes,
    DigestAttributes,
    ReportAnnouncementAttributes,
    ModelProposalAttributes,
]


def test_every_attribute_of_a_message_is_a_declared_attribute_name_and_every_name_is_used() -> None:
    fields = {name for model in ATTRIBUTE_MODELS for name in model.model_fields}
    assert fields == {a.value for a in AttributeName}


def test_no_finding_kind_can_be_taken_for_a_message_kind() -> None:
    # finding events carry their finding kind in ``kind``: filter policies tell them apart by excluding the others
    assert not {k.value for k in FindingKind} & {k.value for k in MessageKind}


@pytest.mark.parametrize(
    ("attributes", "kind"),
    [
        ({"kind": "digest"}, MessageKind.DIGEST),
        ({"kind": "weekly_report"}, MessageKind.WEEKLY_REPORT),
        ({"kind": "model_proposal"}, MessageKind.MODEL_PROPOSAL),
        ({"kind": "scan", "status": "new"}, MessageKind.FINDING),
        ({}, MessageKind.FINDING),
    ],
)
def test_the_kind_of_a_received_message(attributes: dict[str, str], kind: MessageKind) -> None:
    assert message_kind(attributes) is kind


def test_attributes_are_strings_in_declaration_order_without_the_absent_ones() -> None:
    event = FindingEventAttributes(
        kind=FindingKind.SCAN, severity=Severity.HIGH, table="Orders", status="new", finding_id="f", event_id="e"
    )
    assert list(event.to_strings().items()) == [
        ("kind", "scan"),
        ("severity", "high"),
        ("table", "Orders"),
        ("status", "new"),
        ("finding_id", "f"),
        ("event_id", "e"),
    ]
    worse = event.model_copy(update={"status": "worsened", "previous_severity": Severity.LOW, "finding_json": "{}"})
    assert list(worse.to_strings())[-2:] == ["previous_severity", "finding_json"]
    assert DigestAttributes(severity=Severity.MEDIUM, event_id="d", digest_json="{}").to_strings() == {
        "kind": "digest",
        "severity": "medium",
        "status": "digest",
        "event_id": "d",
        "digest_json": "{}",
    }
    report = ReportAnnouncementAttributes(severity=Severity.INFO, week="2026-W49", event_id="r", report_json="{}")
    assert list(report.to_strings().items()) == [
        ("kind", "weekly_report"),
        ("severity", "info"),
        ("table", "*"),
        ("week", "2026-W49"),
        ("event_id", "r"),
        ("report_json", "{}"),
    ]


def test_a_digest_reads_back_what_was_written() -> None:
    item = DigestItem(id="f1", severity="high", table="Orders", title="t", key={"pk": "A", "n": (1, 2)})
    digest = Digest(findings=[item], more=3)
    raw = digest.to_json()
    assert orjson.loads(raw)["findings"][0]["key"] == {"pk": "A", "n": [1, 2]}
    back, problem = parse_digest(raw)
    assert problem is None and back is not None
    assert back.more == 3 and back.findings[0].id == "f1"


def test_a_weekly_summary_reads_back_what_was_written() -> None:
    summary = WeeklySummary(
        week="2026-W49", actions=[SummaryAction(rank=1, headline="h", keys=["A"])], markdown_key="r.md"
    )
    doc = orjson.loads(summary.to_json())
    assert (doc["kind"], doc["version"], doc["markdown_key"]) == ("weekly_report", 1, "r.md")
    back, problem = parse_weekly_summary(summary.to_json())
    assert problem is None and back == summary

"""The Security Hub sink end to end on a moto server: finding events published to SNS (the real renderer), read
back through an SQS subscription, handed to the Lambda handler as SNS events, imported with BatchImportFindings,
and read back with GetFindings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from botocore.stub import Stubber

from auditor.formats import asff_finding
from auditor.lifecycle import EventKind, FindingEvent
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.sinks.security_hub import SecurityHubImportError, asff_from_event, import_findings
from auditor.sinks.sns import render
from handlers import runtime, security_hub
from tests.factories import sns_event
from tests.lambda_context import lambda_context
from tests.moto_server import TopicInbox, client

T0 = datetime(2026, 12, 1, 10, tzinfo=UTC)


def finding(severity: Severity = Severity.HIGH, account: str | None = "123456789012") -> Finding:
    return Finding.create(
        FindingKind.SCAN,
        account=account,
        region="us-east-1",
        table="Orders",
        discriminator="arn:aws:iam::123456789012:role/nightly-export",
        severity=severity,
        title="Scans on Orders by nightly-export",
        summary="42 Scan calls read the whole table.",
        recommendation="Query by key, or export to S3.",
        evidence={"principal": "arn:aws:iam::123456789012:role/nightly-export", "operation": "Scan", "count": 42},
        first_seen=T0,
        last_seen=T0 + timedelta(hours=1),
    )


def deliver(inbox: TopicInbox, events: list[FindingEvent]) -> dict[str, Any]:
    """Publish each event as the publisher does, then hand what SNS delivered to the handler, one by one."""
    sns = inbox.sns
    for n, event in enumerate(events):
        msg = render(event, f"evt-{n}")
        sns.publish(
            TopicArn=inbox.topic_arn,
            Subject=msg.subject,
            Message=msg.text,
            MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in msg.attributes.items()},
        )
    results = [
        security_hub.lambda_handler(
            sns_event(envelope, f"{inbox.topic_arn}:sub"), lambda_context("ddb-audit-SecurityHub")
        )
        for envelope in inbox.envelopes()
    ]
    return {"imported": sum(int(r["imported"]) for r in results), "skipped": sum(int(r["skipped"]) for r in results)}


def test_new_worsened_and_resolved_findings_reach_security_hub(aws_reset: str) -> None:
    runtime.reset()
    hub = client("securityhub", aws_reset)
    hub.enable_security_hub()
    inbox = TopicInbox(aws_reset)
    f = finding()
    got = deliver(inbox, [FindingEvent(kind=EventKind.NEW, finding=f, at=T0)])
    assert got == {"imported": 1, "skipped": 0}
    (stored,) = hub.get_findings()["Findings"]
    assert stored["Id"] == f.id
    assert stored["Severity"]["Label"] == "HIGH"
    assert stored["Resources"][0]["Id"] == "arn:aws:dynamodb:us-east-1:123456789012:table/Orders"
    assert stored["Remediation"]["Recommendation"]["Text"] == "Query by key, or export to S3."
    assert stored["ProductArn"] == "arn:aws:securityhub:us-east-1:123456789012:product/123456789012/default"
    assert (stored["Workflow"]["Status"], stored["RecordState"]) == ("NEW", "ACTIVE")

    # Worsened: the same Security Hub finding (same Id), now critical; then resolved: archived.
    worse = f.model_copy(update={"severity": Severity.CRITICAL})
    deliver(
        inbox,
        [FindingEvent(kind=EventKind.WORSENED, finding=worse, at=T0, previous_severity=Severity.HIGH)],
    )
    (stored,) = hub.get_findings()["Findings"]
    assert stored["Id"] == f.id and stored["Severity"]["Label"] == "CRITICAL"
    deliver(inbox, [FindingEvent(kind=EventKind.RESOLVED, finding=worse, at=T0 + timedelta(hours=2))])
    (stored,) = hub.get_findings()["Findings"]
    assert (stored["Workflow"]["Status"], stored["RecordState"]) == ("RESOLVED", "ARCHIVED")


def test_a_finding_without_an_account_takes_the_functions_and_other_messages_are_skipped(aws_reset: str) -> None:
    runtime.reset()
    hub = client("securityhub", aws_reset)
    hub.enable_security_hub()
    inbox = TopicInbox(aws_reset)
    inbox.sns.publish(
        TopicArn=inbox.topic_arn,
        Message="Weekly report ready",
        MessageAttributes={"kind": {"DataType": "String", "StringValue": "weekly_report"}},
    )
    got = deliver(inbox, [FindingEvent(kind=EventKind.NEW, finding=finding(account=None), at=T0)])
    assert got == {"imported": 1, "skipped": 1}
    (stored,) = hub.get_findings()["Findings"]
    assert stored["AwsAccountId"] == "123456789012"  # the Lambda context's function ARN account


def test_rejected_findings_raise_so_lambda_retries(aws_reset: str) -> None:
    hub = client("securityhub", aws_reset)
    entry = asff_finding(finding(), account=None, region=None, now=T0)
    with Stubber(hub) as stub:
        stub.add_response(
            "batch_import_findings",
            {
                "FailedCount": 1,
                "SuccessCount": 0,
                "FailedFindings": [{"Id": entry["Id"], "ErrorCode": "InvalidInput", "ErrorMessage": "bad"}],
            },
            {"Findings": [entry]},
        )
        with pytest.raises(SecurityHubImportError, match=f"1 finding\\(s\\) not imported: {entry['Id']}: InvalidInput"):
            import_findings(hub, [entry])


def test_key_values_are_redacted_unless_turned_off() -> None:
    hot = Finding.create(
        FindingKind.HOT_KEY,
        account="123456789012",
        region="us-east-1",
        table="Orders",
        discriminator={"pk": "CUSTOMER#42"},
        severity=Severity.MEDIUM,
        title="Hot partition key pk=CUSTOMER#42 on Orders",
        summary="CUSTOMER#42 took 67% of the requests.",
        recommendation="Spread CUSTOMER#42's writes over several keys.",
        evidence={"key": {"pk": "CUSTOMER#42"}, "share": 0.67, "requests": 900, "window_seconds": 900},
        first_seen=T0,
        last_seen=T0,
    )
    msg = render(FindingEvent(kind=EventKind.NEW, finding=hot, at=T0), "evt")
    entry = asff_from_event(msg.attributes, account="123456789012", region="us-east-1", now=T0)
    assert entry is not None and entry["Id"] == hot.id
    text = orjson.dumps(entry).decode()
    assert "CUSTOMER#42" not in text and "CUSTOMER#…" in entry["Title"]
    raw = asff_from_event(msg.attributes, account="123456789012", region="us-east-1", now=T0, redact=False)
    assert raw is not None and "CUSTOMER#42" in raw["Title"]
    assert asff_from_event({"kind": "weekly_report"}, account="1", region="r", now=T0) is None


def test_a_finding_with_a_malformed_account_is_skipped_not_sent() -> None:
    bad = Finding.create(
        FindingKind.SCAN,
        account="12345678901<b>",
        region="us-east-1",
        table="Orders",
        discriminator="x",
        severity=Severity.MEDIUM,
        title="Scans on Orders",
        summary="s",
        recommendation="r",
        evidence={},
        first_seen=T0,
        last_seen=T0,
    )
    msg = render(FindingEvent(kind=EventKind.NEW, finding=bad, at=T0), "evt")
    assert asff_from_event(msg.attributes, account="123456789012", region="us-east-1", now=T0) is None

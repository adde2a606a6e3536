"""The e-mail and Slack subscriptions' filter policies from template.yaml, applied by SNS itself (moto server).

The policies are taken from the resolved template (the stack CloudFormation would deploy with the given parameter
values), put on real subscriptions of a moto topic (each delivering to an SQS queue standing in for the e-mail
address and the notifier), and the messages are the ones the publisher really sends (auditor.sinks.sns).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from auditor.lifecycle import EventKind, FindingEvent
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.sinks.sns import SnsMessage, render, render_digest
from tests.template.variants import VARIANTS, load_template, resolve

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def _policies(overrides: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    stack = resolve(load_template(), {**VARIANTS["all-features"], **overrides})["Resources"]
    email = stack["AlertEmailSubscription"]["Properties"]
    slack = stack["NotifierFunction"]["Properties"]["Events"]["Findings"]["Properties"]
    assert email["FilterPolicyScope"] == slack["FilterPolicyScope"] == "MessageAttributes"
    return email["FilterPolicy"], slack["FilterPolicy"]


def _event(severity: Severity, i: int = 0) -> FindingEvent:
    f = Finding.create(
        FindingKind.SCAN,
        account="111122223333",
        region="us-east-1",
        table="Orders",
        discriminator=[severity.value, i],
        severity=severity,
        title=f"{severity} scans",
        summary="s",
        recommendation="r",
        evidence={"principal": None, "operation": "Scan", "count": 3, "source": "cloudtrail"},
        first_seen=NOW,
        last_seen=NOW,
    )
    return FindingEvent(kind=EventKind.NEW, finding=f, at=NOW)


def _weekly(severity: str) -> SnsMessage:
    attrs = {"kind": "weekly_report", "severity": severity, "week": "2026-W49", "event_id": "w"}
    return SnsMessage("Weekly report", "report", attrs)


class Topic:
    """A moto topic with one SQS-backed subscription per filter policy."""

    def __init__(self, endpoint: str, policies: Mapping[str, dict[str, Any]]) -> None:
        kw: dict[str, Any] = {
            "endpoint_url": endpoint,
            "region_name": "us-east-1",
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        self.sns, self.sqs = boto3.client("sns", **kw), boto3.client("sqs", **kw)
        self.arn = self.sns.create_topic(Name=f"findings-{id(self)}")["TopicArn"]
        self.queues: dict[str, str] = {}
        for name, policy in policies.items():
            url = self.sqs.create_queue(QueueName=f"{name}-{id(self)}")["QueueUrl"]
            queue_arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
            self.sns.subscribe(
                TopicArn=self.arn,
                Protocol="sqs",
                Endpoint=queue_arn,
                Attributes={"FilterPolicy": json.dumps(policy), "FilterPolicyScope": "MessageAttributes"},
            )
            self.queues[name] = url

    def publish(self, msg: SnsMessage) -> None:
        self.sns.publish(
            TopicArn=self.arn, Subject=msg.subject, Message=msg.text, MessageAttributes=msg.message_attributes()
        )

    def received(self, name: str) -> list[tuple[str, str]]:
        """(kind, severity) of every message the subscription got."""
        out = []
        while True:
            msgs = self.sqs.receive_message(QueueUrl=self.queues[name], MaxNumberOfMessages=10).get("Messages", [])
            if not msgs:
                return sorted(out)
            for m in msgs:
                attrs = json.loads(m["Body"])["MessageAttributes"]
                out.append((attrs["kind"]["Value"], attrs["severity"]["Value"]))
                self.sqs.delete_message(QueueUrl=self.queues[name], ReceiptHandle=m["ReceiptHandle"])


def _publish_all(topic: Topic) -> None:
    for i, sev in enumerate(Severity):
        topic.publish(render(_event(sev), f"e{i}"))
    low_digest = render_digest([_event(Severity.LOW, 1), _event(Severity.INFO, 2)], "d-low")
    high_digest = render_digest([_event(Severity.LOW, 3), _event(Severity.HIGH, 4)], "d-high")
    assert low_digest is not None and high_digest is not None
    topic.publish(low_digest)
    topic.publish(high_digest)
    topic.publish(_weekly("low"))


def test_defaults_slack_gets_digests_from_medium_and_email_findings_from_high(moto_url: str) -> None:
    email, slack = _policies({})
    topic = Topic(moto_url, {"email": email, "slack": slack})
    _publish_all(topic)
    assert topic.received("email") == [("scan", "critical"), ("scan", "high"), ("weekly_report", "low")]
    # A LOW (or INFO) finding reaches neither; the low digest is dropped by SNS; the weekly report always arrives.
    assert topic.received("slack") == [("digest", "high"), ("weekly_report", "low")]


@pytest.mark.parametrize("minimum", ["low", "critical"])
def test_per_finding_slack_mode_and_other_minimums(moto_url: str, minimum: str) -> None:
    email, slack = _policies({"SlackMessages": "finding", "SlackMinSeverity": minimum, "EmailMinSeverity": minimum})
    topic = Topic(moto_url, {"email": email, "slack": slack})
    _publish_all(topic)
    wanted = [s for s in ("critical", "high", "medium", "low") if minimum == "low" or s == "critical"]
    expected = sorted([("scan", s) for s in wanted] + [("weekly_report", "low")])
    assert topic.received("email") == expected
    assert topic.received("slack") == expected  # per-finding posts: no digests


def test_security_hub_gets_finding_events_only(moto_url: str) -> None:
    stack = resolve(load_template(), VARIANTS["all-features"])["Resources"]
    hub = stack["SecurityHubFunction"]["Properties"]["Events"]["Findings"]["Properties"]["FilterPolicy"]
    topic = Topic(moto_url, {"hub": hub})
    _publish_all(topic)
    assert topic.received("hub") == sorted(("scan", s.value) for s in Severity)

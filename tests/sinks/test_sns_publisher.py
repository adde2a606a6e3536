"""The SNS publisher against the moto server: message contract, filter policies, failures stay pending."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import orjson
import pytest
from botocore.config import Config

from auditor.lifecycle import EventKind, FindingEvent
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.sinks.sns import MAX_MESSAGE_BYTES, MAX_SUBJECT_CHARS, publish_pending, render, render_digest
from auditor.state.findings_store import FindingsStore
from tests.moto_server import REGION, client, create_state_table

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
CLEANER = "arn:aws:iam::111122223333:role/session-cleaner"


def scan_finding(principal: str = CLEANER, severity: Severity = Severity.HIGH, **kw: Any) -> Finding:
    data: dict[str, Any] = {
        "id": fingerprint(FindingKind.SCAN, "111122223333", REGION, "Sessions", None, [principal, "Scan"]),
        "kind": FindingKind.SCAN,
        "severity": severity,
        "account": "111122223333",
        "region": REGION,
        "table": "Sessions",
        "index": None,
        "title": f"Scans on Sessions by {principal.rsplit('/', 1)[-1]}",
        "summary": f"{principal} ran 720 Scans on Sessions in 60 minutes (720.0 per hour).",
        "recommendation": "Replace the Scan with a Query on a key or GSI designed for this access pattern.",
        "evidence": {"principal": principal, "operation": "Scan", "count": 720, "source": "cloudtrail"},
        "first_seen": T0,
        "last_seen": T0 + timedelta(minutes=59),
    }
    data.update(kw)
    return Finding(**data)


class Bus:
    """A topic with two SQS subscriptions (raw delivery off): one takes everything, one only high/critical."""

    def __init__(self, endpoint: str) -> None:
        self.sns = client("sns", endpoint)
        self.sqs = client("sqs", endpoint)
        self.topic_arn = self.sns.create_topic(Name="findings")["TopicArn"]
        self.all_url = self._subscribe("all", None)
        self.urgent_url = self._subscribe("urgent", {"severity": ["high", "critical"]})

    def _subscribe(self, name: str, filter_policy: dict[str, Any] | None) -> str:
        url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        # Run digests are left out here (tests/sinks/test_slack_digest.py and tests/template cover them).
        policy = {"kind": [{"anything-but": ["digest"]}], **(filter_policy or {})}
        attributes = {"RawMessageDelivery": "false", "FilterPolicy": orjson.dumps(policy).decode()}
        self.sns.subscribe(TopicArn=self.topic_arn, Protocol="sqs", Endpoint=arn, Attributes=attributes)
        return url

    def drain(self, url: str) -> list[dict[str, Any]]:
        """Every SNS envelope waiting in the queue (deleted as read)."""
        out: list[dict[str, Any]] = []
        while True:
            msgs = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
            if not msgs:
                return out
            for m in msgs:
                out.append(orjson.loads(m["Body"]))
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


@pytest.fixture
def bus(aws_reset: str) -> Bus:
    return Bus(aws_reset)


@pytest.fixture
def store(aws_reset: str) -> FindingsStore:
    ddb = client("dynamodb", aws_reset)
    return FindingsStore(ddb, create_state_table(ddb), sleep=lambda _s: None)


def test_message_text_and_attributes_arrive_and_filter_policy_applies(bus: Bus, store: FindingsStore) -> None:
    # Given a high "new" event and a low "new" event in the outbox
    high = FindingEvent(kind=EventKind.NEW, finding=scan_finding(), at=T0 + timedelta(hours=1))
    alice = "arn:aws:iam::111122223333:user/alice"
    low = FindingEvent(kind=EventKind.NEW, finding=scan_finding(alice, Severity.LOW), at=T0 + timedelta(hours=1))
    entries = [store.enqueue(high), store.enqueue(low)]
    # When the outbox is drained
    result = publish_pending(store, bus.sns, bus.topic_arn, now=T0 + timedelta(hours=1))
    # Then both were sent and the outbox is empty
    assert (result.sent, result.failed) == (2, 0)
    assert store.pending() == []
    # and the unfiltered subscription got both, as readable text with string attributes
    got = {m["MessageAttributes"]["severity"]["Value"]: m for m in bus.drain(bus.all_url)}
    assert set(got) == {"high", "low"}
    msg = got["high"]
    assert msg["Type"] == "Notification"
    assert msg["Subject"] == "[HIGH] new: Scans on Sessions by session-cleaner"
    text = msg["Message"]
    assert text.startswith("NEW: Scans on Sessions by session-cleaner\n")
    for line in (
        "Status:     new",
        "Severity:   high",
        "Table:      Sessions",
        f"  principal: {CLEANER}",
        "  count: 720",
        high.finding.summary,
        high.finding.recommendation,
        f"Finding id: {high.finding.id}",
    ):
        assert line in text
    attrs = msg["MessageAttributes"]
    assert {k: v["Type"] for k, v in attrs.items()} == dict.fromkeys(
        ["kind", "severity", "table", "status", "finding_id", "event_id", "finding_json"], "String"
    )
    assert attrs["kind"]["Value"] == "scan" and attrs["table"]["Value"] == "Sessions"
    assert attrs["status"]["Value"] == "new"
    assert attrs["event_id"]["Value"] == next(e.event_id for e in entries if e.finding_id == high.finding.id)
    assert Finding.model_validate_json(attrs["finding_json"]["Value"]) == high.finding
    # and the subscription filtering on severity only got the high one
    urgent = bus.drain(bus.urgent_url)
    assert [m["MessageAttributes"]["finding_id"]["Value"] for m in urgent] == [high.finding.id]


def test_worsened_and_resolved_messages(bus: Bus, store: FindingsStore) -> None:
    worse = FindingEvent(kind=EventKind.WORSENED, finding=scan_finding(), at=T0, previous_severity=Severity.MEDIUM)
    gone = FindingEvent(
        kind=EventKind.RESOLVED,
        finding=scan_finding("arn:aws:iam::111122223333:role/other", Severity.CRITICAL),
        at=T0 + timedelta(seconds=1),
    )
    store.enqueue(worse)
    store.enqueue(gone)
    assert publish_pending(store, bus.sns, bus.topic_arn).sent == 2
    by_status = {m["MessageAttributes"]["status"]["Value"]: m for m in bus.drain(bus.all_url)}
    assert by_status["worsened"]["Subject"].startswith("[HIGH] worsened: ")
    assert "worsened (severity medium -> high)" in by_status["worsened"]["Message"]
    assert by_status["worsened"]["MessageAttributes"]["previous_severity"]["Value"] == "medium"
    assert by_status["resolved"]["Message"].startswith("RESOLVED: ")
    assert "resolved (not seen since 2026-12-01T10:59:00Z)" in by_status["resolved"]["Message"]
    # A resolved critical still matches the severity filter (subscribers filter on status to drop those).
    assert len(bus.drain(bus.urgent_url)) == 2


def test_wrong_topic_keeps_entries_pending_and_the_next_run_sends_each_once(bus: Bus, store: FindingsStore) -> None:
    # Given two queued events
    for i in range(2):
        who = f"arn:aws:iam::111122223333:role/job{i}"
        store.enqueue(FindingEvent(kind=EventKind.NEW, finding=scan_finding(who), at=T0 + timedelta(seconds=i)))
    wrong = bus.topic_arn.replace(":findings", ":no-such-topic")
    # When publishing to a topic that does not exist
    failed = publish_pending(store, bus.sns, wrong, now=T0)
    # Then nothing is sent, both stay pending with one failed attempt each
    assert (failed.sent, failed.failed) == (0, 2)
    assert "NotFound" in failed.errors[0]
    pending = store.pending()
    assert [p.attempts for p in pending] == [1, 1]
    assert all(p.last_error and "NotFound" in p.last_error for p in pending)
    assert bus.drain(bus.all_url) == []
    # When the next run has the right topic, each is delivered exactly once
    ok = publish_pending(store, bus.sns, bus.topic_arn)
    assert (ok.sent, ok.failed) == (2, 0)
    assert publish_pending(store, bus.sns, bus.topic_arn).sent == 0
    assert len(bus.drain(bus.all_url)) == 2


def test_deleted_topic_then_recreated(bus: Bus, store: FindingsStore) -> None:
    store.enqueue(FindingEvent(kind=EventKind.NEW, finding=scan_finding(), at=T0))
    bus.sns.delete_topic(TopicArn=bus.topic_arn)

    assert publish_pending(store, bus.sns, bus.topic_arn).failed == 1
    assert publish_pending(store, bus.sns, bus.topic_arn).failed == 1
    assert [p.attempts for p in store.pending()] == [2]

    restored = Bus.__new__(Bus)
    restored.sns, restored.sqs = bus.sns, bus.sqs
    restored.topic_arn = bus.sns.create_topic(Name="findings")["TopicArn"]
    assert restored.topic_arn == bus.topic_arn
    restored.all_url = restored._subscribe("all-again", None)
    assert publish_pending(store, bus.sns, bus.topic_arn).sent == 1
    assert len(restored.drain(restored.all_url)) == 1
    assert store.pending() == []


def test_unreachable_endpoint_keeps_entries_pending(store: FindingsStore) -> None:
    store.enqueue(FindingEvent(kind=EventKind.NEW, finding=scan_finding(), at=T0))
    dead = boto3.client(
        "sns",
        endpoint_url="http://127.0.0.1:9",  # discard port: nothing listens
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=1, read_timeout=1),
    )
    result = publish_pending(store, dead, "arn:aws:sns:us-east-1:111122223333:findings")
    assert (result.sent, result.failed) == (0, 1)
    assert "EndpointConnectionError" in result.errors[0]
    assert [p.attempts for p in store.pending()] == [1]


def test_limit_bounds_one_drain(bus: Bus, store: FindingsStore) -> None:
    for i in range(5):
        who = f"arn:aws:iam::111122223333:role/job{i}"
        store.enqueue(FindingEvent(kind=EventKind.NEW, finding=scan_finding(who), at=T0 + timedelta(seconds=i)))
    assert publish_pending(store, bus.sns, bus.topic_arn, limit=3).sent == 3
    assert len(store.pending()) == 2
    assert publish_pending(store, bus.sns, bus.topic_arn, limit=3).sent == 2
    assert len(bus.drain(bus.all_url)) == 5


# ---------------------------------------------------------------------------------------------------- rendering


def test_subject_is_short_ascii_one_line() -> None:
    title = "Scans on Bestellungen-Übersicht\nby a very long principal name " + "x" * 150
    event = FindingEvent(kind=EventKind.NEW, finding=scan_finding(title=title), at=T0)
    msg = render(event, "e1")
    assert len(msg.subject) <= MAX_SUBJECT_CHARS
    assert msg.subject.isascii() and "\n" not in msg.subject
    assert msg.subject.startswith("[HIGH] new: Scans on Bestellungen-Ubersicht by a very")
    assert msg.subject.endswith("...")


def test_oversized_evidence_is_trimmed_to_fit_sns() -> None:
    huge = {"principal": CLEANER, "operation": "Scan", "count": 1, "source": "cloudtrail", "blob": "y" * 300_000}
    event = FindingEvent(kind=EventKind.NEW, finding=scan_finding(evidence=huge), at=T0)
    msg = render(event, "e1")
    assert msg.size() <= MAX_MESSAGE_BYTES
    data = orjson.loads(msg.attributes["finding_json"])
    assert data["evidence"] == {
        "principal": CLEANER,
        "operation": "Scan",
        "count": 1,
        "source": "cloudtrail",
        "evidence_truncated": True,
    }
    assert "  blob: yyy" in msg.text and len(msg.text) < 40_000
    # A normal finding keeps its whole evidence.
    normal = render(FindingEvent(kind=EventKind.NEW, finding=scan_finding(), at=T0), "e2")
    assert orjson.loads(normal.attributes["finding_json"])["evidence"] == scan_finding().evidence


def test_the_digest_fix_line_is_cut_at_a_word_boundary_never_inside_a_number() -> None:
    # A first sentence longer than the digest's 160 characters, where a plain cut would land inside "1590"
    fix = "Raise the write capacity of Sessions " + "a" * 89 + " so that its busiest minute's 1590 writes fit. More."
    assert fix[:159].endswith(" 159")  # a plain cut would say '159…'
    event = FindingEvent(kind=EventKind.NEW, finding=scan_finding(recommendation=fix), at=T0)
    msg = render_digest([event], "d1")
    assert msg is not None
    (item,) = orjson.loads(msg.attributes["digest_json"])["findings"]
    assert len(item["fix"]) <= 160 and item["fix"].endswith("…")
    assert item["fix"] == fix[: fix.index("1590")] + "…"  # the cut word is dropped with its number
    # A short fix stays whole: its first sentence
    short = render_digest([FindingEvent(kind=EventKind.NEW, finding=scan_finding(), at=T0)], "d2")
    assert short is not None
    assert orjson.loads(short.attributes["digest_json"])["findings"][0]["fix"] == scan_finding().recommendation

"""Stream item-size findings through the findings lifecycle (moto server): stored as one story per item with the
CloudTrail path's rejected writes on the same key (either order), published once, and never resolved by the watcher."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import structlog
from botocore.exceptions import ClientError
from structlog.testing import capture_logs

from auditor.config import get_settings
from auditor.detectors.findings import item_story
from auditor.detectors.trail import item_size_exceeded
from auditor.lifecycle import FindingStatus
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.service.record import ResolveScope, record_findings
from auditor.state.findings_store import FindingsStore
from handlers import runtime, stream_item_size
from tests import factories as f
from tests.lambda_context import lambda_context
from tests.moto_server import TopicInbox, client, create_state_table

EVENTS = Path(__file__).resolve().parents[2] / "events"
TABLE = "auditor-state"
ACCOUNT, REGION = "123456789012", "eu-west-1"  # the sample stream ARNs' account and region
BIG_KEY = {"pk": "DEVICE#7f3a", "sk": "TIMELINE"}  # the sample's 78% item on Timelines

CONTEXT = lambda_context("stream-item-size", region="eu-west-1", remaining_ms=60_000)


def sample(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"stream_item_size_{name}.json").read_text())


@dataclass
class Env:
    ddb: Any
    store: FindingsStore
    inbox: TopicInbox

    def invoke(self, event: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
        with capture_logs() as logs:
            response = stream_item_size.lambda_handler(event, CONTEXT)
        return [x["itemIdentifier"] for x in response["batchItemFailures"]], logs

    def stored(self) -> dict[str, Any]:
        """Stored finding states by id."""
        items = self.ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
        ids = [i["id"]["S"] for i in items if i["pk"]["S"].startswith("FINDING#")]
        return self.store.get_many(ids)

    def seed(self, *findings: Finding) -> None:
        """Findings another source stored and announced earlier."""
        record_findings(
            self.store, self.inbox.sns, self.inbox.topic_arn, findings, now=findings[0].last_seen,
            scope=ResolveScope.nothing(),
        )  # fmt: skip
        self.inbox.messages()


@pytest.fixture
def env(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    inbox = TopicInbox(aws_reset)
    monkeypatch.setenv("STATE_TABLE_NAME", TABLE)
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", inbox.topic_arn)
    get_settings.cache_clear()
    runtime.reset()
    ddb = client("dynamodb", aws_reset)
    create_state_table(ddb, TABLE)
    runtime.prepare()  # the cold start configures logging: capture logs after it
    yield Env(ddb, FindingsStore(ddb, TABLE, sleep=lambda _s: None), inbox)
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def rejected_writes(key: dict[str, Any], table: str = "Timelines") -> Finding:
    """The CloudTrail path's item story: UpdateItems on ``key`` rejected for item size (as the evaluator stores it)."""
    msg = "Item size to update has exceeded the maximum allowed size"
    calls = [f.call("UpdateItem", table, key, at=i, error="ValidationException", message=msg) for i in range(3)]
    (found,) = item_size_exceeded.detect(f.span(calls), item_size_exceeded.ItemSizeExceededConfig())
    # the stream's account and region (the factories' calls use another account)
    raw = found.model_copy(
        update={
            "account": ACCOUNT,
            "region": REGION,
            "first_seen": datetime(2026, 12, 1, 9, tzinfo=UTC),
            "last_seen": datetime(2026, 12, 1, 9, 5, tzinfo=UTC),
        }
    )
    (story,) = item_story.merge_items([raw])
    return story


def test_a_large_item_and_rejected_writes_on_its_key_are_one_stored_story(env: Env) -> None:
    # Given the CloudTrail path's open story of rejected writes on the sample's big item, and one on another key
    rejected = rejected_writes(BIG_KEY)
    elsewhere = rejected_writes({"pk": "DEVICE#0001", "sk": "TIMELINE"})
    assert rejected.id == item_story.story_id(ACCOUNT, REGION, "Timelines", BIG_KEY)
    env.seed(rejected, elsewhere)
    # When the stream batch with the big item's write (78% of 400 KB: medium on its own) is processed
    failed, logs = env.invoke(sample("new_and_old"))
    # Then the item's size joins the stored story: one finding, of the worst fact's kind, critical (writes already
    # lost on an item measured near the limit), announced as worsened
    assert failed == []
    stored = env.stored()
    assert sorted(stored) == sorted([rejected.id, elsewhere.id])
    story = stored[rejected.id].finding
    assert story.kind is FindingKind.ITEM_SIZE_EXCEEDED and story.severity is Severity.CRITICAL
    assert [(x["kind"], x["source"]) for x in story.evidence["facts"]] == [
        ("item_size_exceeded", "cloudtrail"),
        ("large_item", "dynamodb_streams"),
    ]
    assert story.evidence["size_bytes"] == 320_530 and story.evidence["count"] == 3 and story.evidence["key"] == BIG_KEY
    assert story.missing_evidence() == []
    assert "3 writes rejected" in story.title and "78% of 400 KB" in story.title
    assert stored[rejected.id].status is FindingStatus.WORSENED and stored[rejected.id].version == 2
    assert stored[elsewhere.id].version == 1
    (msg,) = env.inbox.messages()
    assert (msg["finding_id"], msg["status"], msg["severity"]) == (rejected.id, "worsened", "critical")
    (summary,) = [e for e in logs if e["event"] == "stream_batch_processed"]
    assert (summary["findings_stored"], summary["events_queued"], summary["published"]) == (1, 1, 1)
    # When the batch is delivered again
    failed, _ = env.invoke(sample("new_and_old"))
    # Then nothing new is announced and the story stays whole
    assert failed == []
    assert env.inbox.messages() == []
    again = env.store.get(rejected.id)
    assert again is not None and again.finding.severity is Severity.CRITICAL
    assert len(again.finding.evidence["facts"]) == 2


def test_rejected_writes_after_the_size_join_the_stored_story(env: Env) -> None:
    # Given the watcher's story of the big item (medium: 78% of the limit)
    env.invoke(sample("new_and_old"))
    (first,) = env.stored().values()
    assert first.finding.kind is FindingKind.LARGE_ITEM and first.finding.severity is Severity.MEDIUM
    env.inbox.messages()
    # When the evaluator records rejected writes on the same item, later
    later = rejected_writes(BIG_KEY).model_copy(
        update={"first_seen": first.finding.last_seen, "last_seen": first.finding.last_seen}
    )
    env.seed(later)
    # Then one stored finding, with the same id, tells both facts, at critical
    (story,) = env.stored().values()
    assert story.id == first.id and story.finding.kind is FindingKind.ITEM_SIZE_EXCEEDED
    assert story.finding.severity is Severity.CRITICAL and story.status is FindingStatus.WORSENED
    assert {x["kind"] for x in story.finding.evidence["facts"]} == {"large_item", "item_size_exceeded"}


def test_without_rejected_writes_the_finding_keeps_its_own_severity(env: Env) -> None:
    env.invoke(sample("new_and_old"))
    (large,) = env.stored().values()
    assert large.finding.severity is Severity.MEDIUM and large.finding.kind is FindingKind.LARGE_ITEM
    assert [x["kind"] for x in large.finding.evidence["facts"]] == ["large_item"]
    (msg,) = env.inbox.messages()
    assert (msg["status"], msg["severity"]) == ("new", "medium")


def test_the_watcher_resolves_nothing(env: Env) -> None:
    # Given a stream finding on another item, last seen a month ago, and a stale CloudTrail finding on the table
    old = datetime(2026, 10, 1, tzinfo=UTC)
    stale = rejected_writes({"pk": "DEVICE#dead", "sk": "TIMELINE"}).model_copy(
        update={"first_seen": old, "last_seen": old}
    )
    other_item = Finding(
        id=fingerprint(FindingKind.LARGE_ITEM, ACCOUNT, REGION, "Timelines", None, {"pk": "DEVICE#0002"}),
        kind=FindingKind.LARGE_ITEM,
        severity=Severity.MEDIUM,
        account=ACCOUNT,
        region=REGION,
        table="Timelines",
        title="Item DEVICE#0002 on Timelines is 80% of the 400 KB limit",
        summary="A large item.",
        recommendation="Split it.",
        evidence={"key": {"pk": "DEVICE#0002"}, "size_bytes": 330_000, "limit_bytes": 409_600,
                  "source": "dynamodb_streams"},
        first_seen=old,
        last_seen=old,
    )  # fmt: skip
    env.seed(stale, other_item)
    # When a batch on the same table is processed (weeks later)
    env.invoke(sample("new_and_old"))
    # Then both stay open
    stored = env.stored()
    assert stored[stale.id].status.is_open and stored[other_item.id].status.is_open


def test_keys_only_streams_store_one_info_finding_per_table(env: Env) -> None:
    env.invoke(sample("keys_only"))
    env.invoke(sample("keys_only"))
    (state,) = env.stored().values()
    assert (state.finding.table, state.finding.severity, state.finding.evidence["key"]) == ("Sessions", "info", None)
    assert [m["kind"] for m in env.inbox.messages()] == ["large_item"]


def test_a_failed_store_fails_the_invocation_and_the_retry_counts_once(env: Env) -> None:
    # Given the state table refusing the finding writes (throttled, retries exhausted)
    def reject(**_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "Rate exceeded"}},
            "TransactWriteItems",
        )

    events = runtime.CLIENTS.dynamodb.meta.events
    events.register("before-parameter-build.dynamodb.TransactWriteItems", reject)
    # When the batch is processed, the invocation fails (Lambda retries the whole batch)
    with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        env.invoke(sample("new_and_old"))
    assert env.stored() == {} and env.inbox.messages() == []
    # When the retry succeeds
    events.unregister("before-parameter-build.dynamodb.TransactWriteItems", reject)
    failed, logs = env.invoke(sample("new_and_old"))
    # Then the finding is stored and announced once; the size history counted the write once
    assert failed == []
    assert len(env.stored()) == 1 and len(env.inbox.messages()) == 1
    (summary,) = [e for e in logs if e["event"] == "stream_batch_processed"]
    assert (summary["history_updates"], summary["history_duplicates"]) == (0, 2)


def test_a_batch_without_findings_costs_no_findings_request(env: Env) -> None:
    event = sample("new_and_old")
    event["Records"] = [event["Records"][0]]  # a small order: no history, no finding
    seen: list[str] = []
    runtime.CLIENTS.dynamodb.meta.events.register("before-call.dynamodb", lambda model, **_: seen.append(model.name))
    failed, _ = env.invoke(event)
    assert failed == [] and seen == []
    assert env.inbox.messages() == []

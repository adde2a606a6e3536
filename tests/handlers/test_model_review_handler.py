"""The scheduled model review Lambda end to end on moto server: open findings in the state table -> proposals stored
under their stable ids -> each new or changed proposal announced once on the findings topic (an SQS subscription
reads it back); a second run with nothing new publishes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog
from botocore.exceptions import ClientError

from auditor.config import get_settings
from auditor.messages import MessageKind, message_kind
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.service.record import ResolveScope, record_findings
from auditor.state.findings_store import FindingsStore
from auditor.state.proposal_store import ProposalStore
from handlers import model_review, runtime
from tests.lambda_context import lambda_context
from tests.moto_server import TopicInbox, client, create_state_table

STATE = "auditor-state"
ACCOUNT, REGION = "111122223333", "us-east-1"
SEEN = datetime(2026, 12, 3, 12, tzinfo=UTC)  # Thursday of ISO week 2026-W49
CONTEXT = lambda_context("model-review", account=ACCOUNT)


def schedule(at: datetime) -> dict[str, Any]:
    """An EventBridge scheduled event (the shape of events/weekly_report_schedule.json) fired at ``at``."""
    return {
        "version": "0",
        "id": f"model-review-{at.isoformat()}",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/ddb-traffic-auditor-ModelReviewSchedule"],
        "detail": {},
    }


def hot_key(writes: float, seen: datetime = SEEN) -> Finding:
    """A write-hot date key (the evaluator's finding): the review shards it for 2x headroom at its peak."""
    return Finding(
        id=fingerprint(FindingKind.HOT_KEY, ACCOUNT, REGION, "Events", None, "day"),
        kind=FindingKind.HOT_KEY,
        severity=Severity.CRITICAL,
        account=ACCOUNT,
        region=REGION,
        table="Events",
        title="Hot partition key on Events",
        summary="One date key takes the table's writes.",
        recommendation="Shard the key.",
        evidence={
            "key": {"day": "2026-12-03"},
            "peak_read_units_per_second": 0.0,
            "peak_write_units_per_second": writes,
            "peak_reads_per_second": 0.0,
            "reads_per_second": 0.0,
            "writes_per_second": writes / 10,
            "source": "cloudtrail",
        },
        first_seen=seen - timedelta(hours=1),
        last_seen=seen,
    )


UNUSED = Finding(
    id=fingerprint(FindingKind.UNUSED_INDEX, ACCOUNT, REGION, "Orders", "ByStatus", None),
    kind=FindingKind.UNUSED_INDEX,
    severity=Severity.LOW,
    account=ACCOUNT,
    region=REGION,
    table="Orders",
    index="ByStatus",
    title="Unused index ByStatus",
    summary="No reads in 30 days.",
    recommendation="Drop it.",
    evidence={"days_analyzed": 30, "monthly_write_cost": 3.0, "monthly_storage_cost": 1.0, "source": "cloudwatch"},
    first_seen=SEEN - timedelta(days=1),
    last_seen=SEEN,
)


@dataclass
class Env:
    inbox: TopicInbox
    store: FindingsStore
    ddb: Any

    def invoke(self, at: datetime = SEEN + timedelta(hours=6)) -> dict[str, Any]:
        result: dict[str, Any] = model_review.lambda_handler(schedule(at), CONTEXT)
        return result

    def record(self, *findings: Finding) -> None:
        """Findings as the evaluator and the metrics audit store them (their own events drained from the inbox)."""
        for found in findings:
            record_findings(
                self.store,
                self.inbox.sns,
                self.inbox.topic_arn,
                [found],
                now=found.last_seen,
                scope=ResolveScope.nothing(),
            )
        self.inbox.messages()

    def proposals(self) -> list[dict[str, Any]]:
        """The model proposals published since the last call (other messages are left out)."""
        return [m for m in self.inbox.messages() if message_kind(m) is MessageKind.MODEL_PROPOSAL]


@pytest.fixture
def env(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    ddb = client("dynamodb", aws_reset)
    create_state_table(ddb, STATE)
    inbox = TopicInbox(aws_reset)
    monkeypatch.setenv("STATE_TABLE_NAME", STATE)
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", inbox.topic_arn)
    get_settings.cache_clear()
    runtime.reset()
    e = Env(inbox, FindingsStore(ddb, STATE, sleep=lambda _s: None), ddb)
    e.record(hot_key(2500.0), UNUSED)
    yield e
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def test_new_proposals_are_stored_and_announced_once_and_a_second_run_publishes_nothing(env: Env) -> None:
    first = env.invoke()
    assert first["proposals"] == 2 and len(first["new"]) == 2 and first["changed"] == []
    messages = env.proposals()
    assert sorted(json.loads(m["proposal_json"])["kind"] for m in messages) == ["drop_index", "shard_partition_key"]
    shard = next(m for m in messages if json.loads(m["proposal_json"])["kind"] == "shard_partition_key")
    document = json.loads(shard["proposal_json"])
    assert shard["table"] == "Events" and shard["event_id"].startswith(document["id"] + "#")
    assert document["change"]["shards"] == 5 and document["before"]["headroom"] == 0.4
    assert shard["subject"].startswith("DynamoDB model review: ") and "0.40x -> 2.00x" in shard["message"]
    stored = ProposalStore(env.ddb, STATE).get(document["id"])
    assert stored is not None and stored["message_id"]["S"] and stored["kind"]["S"] == "shard_partition_key"

    again = env.invoke(SEEN + timedelta(hours=30))
    assert again == {"proposals": 2, "new": [], "changed": []}
    assert env.proposals() == []


def test_a_proposal_whose_change_differs_is_announced_again_under_the_same_id(env: Env) -> None:
    env.invoke()
    (sharded,) = [d for d in map(_document, env.proposals()) if d["kind"] == "shard_partition_key"]
    env.record(hot_key(5000.0, SEEN + timedelta(hours=12)))  # twice the peak: twice the shards
    run = env.invoke(SEEN + timedelta(hours=18))
    (message,) = env.proposals()
    document = _document(message)
    assert run["new"] == [] and run["changed"] == [sharded["id"]] and document["id"] == sharded["id"]
    assert (sharded["change"]["shards"], document["change"]["shards"]) == (5, 10)


def _document(message: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(message["proposal_json"])
    return document


def test_a_failed_announcement_is_released_and_the_retry_makes_it(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", env.inbox.topic_arn + "-gone")
    get_settings.cache_clear()
    runtime.reset()
    with pytest.raises(ClientError, match="NotFound"):
        env.invoke()
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", env.inbox.topic_arn)
    get_settings.cache_clear()
    runtime.reset()
    assert len(env.invoke()["new"]) == 2 and len(env.proposals()) == 2

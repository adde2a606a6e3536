"""Events ingest end to end: EventBridge events in SQS events (events/ sample) -> handler -> state table (moto)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from auditor.config import AnalysisConfig, get_settings
from auditor.kernel.aggregates.window import AggregateSet
from auditor.kernel.normalize import normalize_record
from auditor.service.ingest import process_events
from auditor.state.window_store import WindowStore
from handlers import events_ingest, runtime
from tests.emf import emitted
from tests.factories import planted_workload
from tests.lambda_context import FakeLambdaContext, lambda_context
from tests.moto_server import client, create_state_table

EVENTS = Path(__file__).resolve().parents[2] / "events"
TABLE = "auditor-state"
NOW = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
SAMPLE_START = int(datetime(2024, 5, 1, 10, 0, tzinfo=UTC).timestamp())  # GetItem on Orders in the sample
MUSIC_START = int(datetime(2019, 1, 19, 15, 30, tzinfo=UTC).timestamp())  # PutItem on Music in the sample

CONTEXT = lambda_context("events-ingest", account="111122223333", remaining_ms=60_000)


@pytest.fixture
def ddb(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("STATE_TABLE_NAME", TABLE)
    get_settings.cache_clear()
    runtime.reset()
    ddb = client("dynamodb", aws_reset)
    create_state_table(ddb, TABLE)
    runtime.prepare()  # the cold start (it configures logging: tests capture logs after it)
    yield ddb
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def sample() -> dict[str, Any]:
    return json.loads((EVENTS / "events_ingest_sqs_eventbridge.json").read_text())


def sample_events() -> list[dict[str, Any]]:
    """The EventBridge events inside the sample's message bodies."""
    return [json.loads(r["body"]) for r in sample()["Records"]]


def sqs_event(*bodies: str | dict[str, Any]) -> dict[str, Any]:
    """An SQS event as Lambda delivers it, one record per body, built from the sample's first record."""
    template = sample()["Records"][0]
    records = []
    for n, body in enumerate(bodies):
        text = body if isinstance(body, str) else json.dumps(body)
        rec = copy.deepcopy(template)
        rec["messageId"] = f"msg-{n}"
        rec["receiptHandle"] = f"{template['receiptHandle']}{n}"
        rec["body"] = text
        rec["md5OfBody"] = hashlib.md5(text.encode()).hexdigest()
        records.append(rec)
    return {"Records": records}


def eventbridge(record: dict[str, Any], n: int = 0) -> dict[str, Any]:
    """Wrap a CloudTrail record the way EventBridge delivers it to an SQS target."""
    return {
        "version": "0",
        "id": f"00000000-0000-4000-8000-{n:012d}",
        "detail-type": "AWS API Call via CloudTrail",
        "source": "aws.dynamodb",
        "account": record.get("recipientAccountId", "111122223333"),
        "time": record["eventTime"],
        "region": record["awsRegion"],
        "resources": [],
        "detail": record,
    }


def invoke(event: dict[str, Any]) -> list[str]:
    response = events_ingest.lambda_handler(event, CONTEXT)
    return [f["itemIdentifier"] for f in response["batchItemFailures"]]


def store(ddb: Any) -> WindowStore:
    return WindowStore(ddb, TABLE)


def count_items(ddb: Any, prefix: str) -> int:
    return sum(1 for i in ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"] if i["pk"]["S"].startswith(prefix))


def test_sample_event_is_ingested(ddb: Any) -> None:
    with capture_logs() as logs:
        assert invoke(sample()) == []
    loaded = store(ddb).load_windows([SAMPLE_START, MUSIC_START])
    assert [(w.table, w.window_start, w.calls, w.operations) for w in loaded] == [
        ("Music", MUSIC_START, 1, {"PutItem": 1}),
        ("Orders", SAMPLE_START, 1, {"GetItem": 1}),
    ]
    # The same as aggregating the CloudTrail records locally
    local = AggregateSet()
    for ev in sample_events():
        call = normalize_record(ev["detail"])
        assert call is not None
        local.add(call)
    for w in loaded:
        expected = local.windows[(w.account, w.region, w.table, w.window_start)]
        assert (w.key_requests, w.hot.top(5), w.patterns) == (
            expected.key_requests,
            expected.hot.top(5),
            expected.patterns,
        )
    assert count_items(ddb, "EVT#") == 2
    [line] = [e for e in logs if e["event"] == "events_batch_ingested"]
    assert (line["received"], line["committed"], line["duplicates"], line["transactions"]) == (2, 2, 0, 1)
    assert structlog.contextvars.get_contextvars()["function_request_id"] == FakeLambdaContext.aws_request_id


def test_duplicated_event_counts_once(ddb: Any) -> None:
    get_item, put_item = sample_events()
    # The same event twice in one batch, then again (with a new event) in a later batch, then the sample again
    assert invoke(sqs_event(get_item, get_item)) == []
    before = count_items(ddb, "WIN#")
    with capture_logs() as logs:
        assert invoke(sqs_event(get_item, put_item)) == []
        assert invoke(sample()) == []
    [orders] = store(ddb).load_windows([SAMPLE_START])
    assert orders.calls == 1
    [music] = store(ddb).load_windows([MUSIC_START])
    assert music.calls == 1
    assert count_items(ddb, "WIN#") == before + 1  # only the new event added a contribution
    lines = [e for e in logs if e["event"] == "events_batch_ingested"]
    assert [(e["committed"], e["duplicates"], e["transactions"]) for e in lines] == [(1, 1, 2), (0, 2, 1)]


def test_non_dynamodb_and_malformed_events_are_skipped(ddb: Any) -> None:
    get_item, _ = sample_events()
    s3_call = copy.deepcopy(get_item)
    s3_call["source"] = "aws.s3"
    s3_call["detail"]["eventSource"] = "s3.amazonaws.com"
    management = copy.deepcopy(get_item)
    management["detail"] |= {"eventName": "DescribeTable", "eventID": "mgmt-1", "managementEvent": True}
    management["detail"]["eventCategory"] = "Management"
    scheduled = {"version": "0", "id": "x", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}
    no_time = copy.deepcopy(get_item)
    del no_time["detail"]["eventTime"]
    no_time["detail"]["eventID"] = "no-time"
    bodies: list[str | dict[str, Any]] = [s3_call, management, scheduled, "not json", '"a string"', no_time, get_item]
    with capture_logs() as logs:
        assert invoke(sqs_event(*bodies)) == []
    [orders] = store(ddb).load_windows([SAMPLE_START])
    assert orders.calls == 1
    assert count_items(ddb, "EVT#") == 1
    [line] = [e for e in logs if e["event"] == "events_batch_ingested"]
    assert (line["received"], line["ignored"], line["malformed"], line["committed"]) == (7, 3, 3, 1)
    assert line["problems"][0] == "event 4: body is not JSON"


def test_large_batch_is_chunked_into_transactions(ddb: Any) -> None:
    # Given 250 events over several tables (more than one transaction can hold), some seen before
    records = planted_workload(T0, hours=0.05, seed=11)[:250]
    events = [(f"msg-{n}", eventbridge(r, n)) for n, r in enumerate(records)]
    first = process_events(store(ddb), events[:40], AnalysisConfig(), NOW)
    assert first.stats.data_events == 40
    # When the whole batch arrives (the first 40 are redeliveries)
    result = process_events(store(ddb), events, AnalysisConfig(), NOW)
    # Then every event counts exactly once, and the totals equal the local aggregate
    assert result.stats.data_events == 210
    assert result.stats.duplicates_dropped == 40
    assert result.transactions >= 4
    assert result.failed_message_ids == []
    local = AggregateSet()
    for r in records:
        call = normalize_record(r)
        assert call is not None
        local.add(call)
    starts = sorted({wk[3] for wk in local.windows})
    loaded = store(ddb).load_windows(starts)
    assert {(w.table, w.window_start): w.calls for w in loaded} == {
        (wk[2], wk[3]): tw.calls for wk, tw in local.windows.items()
    }
    for w in loaded:
        expected = local.windows[(w.account, w.region, w.table, w.window_start)]
        assert (w.operations, w.key_requests, w.errors) == (expected.operations, expected.key_requests, expected.errors)
    assert count_items(ddb, "EVT#") == 250


def test_commit_failure_reports_the_messages(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The state table is missing (wrong configuration): every message with an event to commit fails
    monkeypatch.setenv("STATE_TABLE_NAME", "no-such-table")
    get_settings.cache_clear()
    get_item, put_item = sample_events()
    with capture_logs() as logs:
        failed = invoke(sqs_event(get_item, "not json", put_item))
    assert failed == ["msg-0", "msg-2"]  # the malformed body is dropped, not retried
    assert any(e["event"] == "events_commit_failed" for e in logs)
    # After the fix the redelivered messages count once
    monkeypatch.setenv("STATE_TABLE_NAME", TABLE)
    get_settings.cache_clear()
    assert invoke(sqs_event(get_item, put_item)) == []
    assert [w.calls for w in store(ddb).load_windows([SAMPLE_START, MUSIC_START])] == [1, 1]


def test_hostile_events_never_cost_the_good_ones(ddb: Any) -> None:
    """The fuzz run's poison events (issue 15): dates at the edge of the range, a key nested 300 levels, a PartiQL
    integer beyond 64 bits. Before, the batch raised and none of its good events was committed."""
    get_item, put_item = sample_events()
    edge_max = copy.deepcopy(get_item)
    edge_max["detail"] |= {"eventTime": "9999-12-31T23:59:59-14:00", "eventID": "edge-max"}
    edge_min = copy.deepcopy(get_item)
    edge_min["detail"] |= {"eventTime": "0001-01-01T00:00:00+14:00", "eventID": "edge-min"}
    deep = copy.deepcopy(get_item)
    value: Any = "x"
    for _ in range(300):
        value = {"M": {"a": value}}
    deep["detail"]["requestParameters"]["key"] = {"pk": value}
    deep["detail"]["eventID"] = "deep-key"
    bodies: list[str | dict[str, Any]] = [edge_max, get_item, edge_min, deep, put_item]
    with capture_logs() as logs:
        assert invoke(sqs_event(*bodies)) == []
    [orders] = store(ddb).load_windows([SAMPLE_START])
    [music] = store(ddb).load_windows([MUSIC_START])
    assert music.calls == 1
    assert orders.calls == 2  # the good GetItem and the deep-key one (its key kept as a digest)
    [line] = [e for e in logs if e["event"] == "events_batch_ingested"]
    assert (line["received"], line["malformed"], line["committed"], line["failed_messages"]) == (5, 2, 3, 0)


def test_a_poison_event_is_the_only_failure(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever makes one event fail inside aggregation (fault injected for one table), only its message is
    reported; the batch's other events are committed."""
    get_item, put_item = sample_events()
    poison = copy.deepcopy(get_item)
    poison["detail"]["requestParameters"]["tableName"] = "Poison"
    poison["detail"]["eventID"] = "poison-1"
    real_add = AggregateSet.add

    def add(self: AggregateSet, call: Any) -> None:
        if "Poison" in call.tables:
            raise RuntimeError("injected fault")
        real_add(self, call)

    monkeypatch.setattr(AggregateSet, "add", add)
    assert invoke(sqs_event(get_item, poison, put_item)) == ["msg-1"]
    [orders] = store(ddb).load_windows([SAMPLE_START])
    [music] = store(ddb).load_windows([MUSIC_START])
    assert (orders.calls, music.calls) == (1, 1)


def test_an_event_of_another_shape_is_a_clear_error(ddb: Any) -> None:
    with pytest.raises(ValueError, match="events_ingest expects an SQS batch event: Records"):
        events_ingest.lambda_handler({"detail-type": "Scheduled Event"}, CONTEXT)


def test_health_metrics_count_ingested_duplicate_and_malformed_events(
    ddb: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    get_item, put_item = sample_events()
    capsys.readouterr()
    assert invoke(sqs_event(get_item, get_item, put_item, "{not json")) == []
    [metrics] = emitted(capsys.readouterr().out)
    assert metrics == {"RecordsIngested": 2, "RecordsFailed": 1, "DuplicatesDropped": 1}


def test_events_committed_after_their_window_was_evaluated_are_flagged_and_counted(
    ddb: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    store(ddb).seal(SAMPLE_START, NOW)  # the evaluator evaluated both windows of the sample already
    capsys.readouterr()
    assert invoke(sample()) == []
    [metrics] = emitted(capsys.readouterr().out)
    assert metrics == {"RecordsIngested": 2, "RecordsFailed": 0, "DuplicatesDropped": 0, "LateContributions": 2}
    late = store(ddb).late_windows()
    assert sorted((w.table, w.window_start) for w in late) == [("Music", MUSIC_START), ("Orders", SAMPLE_START)]
    capsys.readouterr()
    assert invoke(sample()) == []  # redelivered: duplicates, not late again
    [again] = emitted(capsys.readouterr().out)
    assert again == {"RecordsIngested": 0, "RecordsFailed": 0, "DuplicatesDropped": 2}

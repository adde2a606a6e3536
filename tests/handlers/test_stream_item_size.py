"""Stream item size end to end: events/ DynamoDB Streams samples -> handler -> size histories (moto server)."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from botocore.exceptions import ClientError
from structlog.testing import capture_logs

from auditor.config import get_settings
from auditor.exceptions import ConfigurationError
from auditor.models.dynamodb_size import item_size, stream_record_size_bytes
from auditor.models.finding import FindingKind, Severity
from auditor.service.stream_item_size import ItemSizeConfig, StreamItemSizeBatch
from auditor.sources.streams import StreamStats, parse_stream_record
from auditor.state import keys
from auditor.state.item_history import ItemHistoryStore, history_pk
from handlers import runtime, stream_item_size
from tests.lambda_context import FakeLambdaContext, lambda_context
from tests.moto_server import client, create_state_table

EVENTS = Path(__file__).resolve().parents[2] / "events"
TABLE = "auditor-state"
ACCOUNT, REGION = "123456789012", "eu-west-1"
BIG_KEY = {"pk": {"S": "DEVICE#7f3a"}, "sk": {"S": "TIMELINE"}}
MID_KEY = {"pk": {"S": "DEVICE#9c01"}, "sk": {"S": "TIMELINE"}}
SIX_HOURS = 6 * 3600

CONTEXT = lambda_context("stream-item-size", region="eu-west-1", remaining_ms=60_000)


def sample(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"stream_item_size_{name}.json").read_text())


@pytest.fixture
def ddb(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The state table, the findings topic and the handler's environment; yields a DynamoDB client."""
    monkeypatch.setenv("STATE_TABLE_NAME", TABLE)
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", client("sns", aws_reset).create_topic(Name="findings")["TopicArn"])
    get_settings.cache_clear()
    runtime.reset()
    dynamodb = client("dynamodb", aws_reset)
    create_state_table(dynamodb, TABLE)
    runtime.prepare()  # the cold start (it configures logging: tests capture logs after it)
    yield dynamodb
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def invoke(event: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """Run the handler; returns the failed item identifiers and the captured log events."""
    with capture_logs() as logs:
        response = stream_item_size.lambda_handler(event, CONTEXT)
    return [f["itemIdentifier"] for f in response["batchItemFailures"]], logs


def state_items(dynamodb: Any) -> list[dict[str, Any]]:
    """The size histories in the state table (the findings the handler stores are tested in
    test_stream_item_size_lifecycle.py)."""
    items = dynamodb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    return [item for item in items if item["pk"]["S"].startswith("ITEMSIZE#")]


def history_item(dynamodb: Any, key: dict[str, Any]) -> dict[str, Any] | None:
    pk = history_pk(ACCOUNT, REGION, "Timelines", key)
    return dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": pk}, "sk": {"S": "HISTORY"}}).get("Item")


def samples_of(item: dict[str, Any]) -> list[tuple[int, int]]:
    return [(int(p["L"][0]["N"]), int(p["L"][1]["N"])) for p in item["samples"]["L"]]


def summary(logs: list[dict[str, Any]]) -> dict[str, Any]:
    (line,) = [entry for entry in logs if entry["event"] == "stream_batch_processed"]
    return line


def findings_logged(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == "item_size_finding"]


def count_requests(dynamodb_client: Any) -> list[str]:
    """Record every DynamoDB operation the client sends."""
    seen: list[str] = []

    def hook(model: Any, **_: Any) -> None:
        seen.append(model.name)

    dynamodb_client.meta.events.register("before-call.dynamodb", hook)
    return seen


# ----------------------------------------------------------------------------- the samples


def test_new_and_old_images_sample_keeps_histories_for_large_items_only(ddb: Any) -> None:
    # Given the NEW_AND_OLD_IMAGES sample: a small order, a 78% timeline, a 100 KB timeline and a REMOVE
    event = sample("new_and_old")
    records = event["Records"]
    before = int(time.time())
    # When
    failed, logs = invoke(event)
    # Then nothing failed, and only the two items above the 64 KB floor have a history
    assert failed == []
    assert len(state_items(ddb)) == 2
    big = history_item(ddb, BIG_KEY)
    assert big is not None
    body = records[1]["dynamodb"]
    assert big["key"] == {"M": BIG_KEY}
    assert big["pk"]["S"].startswith("ITEMSIZE#123456789012#eu-west-1#Timelines#")
    assert big["table"] == {"S": "Timelines"} and big["account"] == {"S": ACCOUNT}
    assert samples_of(big) == [(body["ApproximateCreationDateTime"], item_size(body["NewImage"]))]
    assert int(big["size_bytes"]["N"]) == 320_530
    events_growth = item_size({"events": body["NewImage"]["events"]}) - item_size(
        {"events": body["OldImage"]["events"]}
    )
    assert big["growth"] == {"M": {"events": {"N": str(events_growth)}}}
    assert big["last_sequence"] == {"S": body["SequenceNumber"]}
    assert big["version"] == {"N": "1"}
    assert before + 30 * 86_400 <= int(big[keys.TTL_ATTR]["N"]) <= time.time() + 30 * 86_400 + 1
    mid = history_item(ddb, MID_KEY)
    assert mid is not None and samples_of(mid)[0][1] == 102_572
    # the 78% item is a medium large_item finding; the counters say what happened
    (finding,) = findings_logged(logs)
    assert (finding["kind"], finding["severity"], finding["table"]) == ("large_item", "medium", "Timelines")
    assert finding["key"] == {"pk": "DEVICE#7f3a", "sk": "TIMELINE"} and finding["size_bytes"] == 320_530
    stats = summary(logs)
    assert (stats["history_updates"], stats["below_floor"], stats["removes"], stats["findings"]) == (2, 1, 1, 1)
    assert structlog.contextvars.get_contextvars()["function_request_id"] == FakeLambdaContext.aws_request_id


def test_small_items_cost_no_state_table_request(ddb: Any) -> None:
    # Given a batch with only a small INSERT and a REMOVE
    event = sample("new_and_old")
    event["Records"] = [event["Records"][0], event["Records"][3]]
    requests = count_requests(runtime.CLIENTS.dynamodb)
    # When
    failed, logs = invoke(event)
    # Then nothing was read or written
    assert failed == []
    assert requests == []
    assert state_items(ddb) == []
    assert summary(logs)["below_floor"] == 1


def test_a_redelivered_batch_counts_once(ddb: Any) -> None:
    event = sample("new_and_old")
    assert invoke(event)[0] == []
    failed, logs = invoke(event)
    assert failed == []
    stats = summary(logs)
    assert (stats["history_updates"], stats["history_duplicates"]) == (0, 2)
    big = history_item(ddb, BIG_KEY)
    assert big is not None and len(samples_of(big)) == 1 and big["version"] == {"N": "1"}


def test_keys_only_stream_says_the_view_type_is_insufficient(ddb: Any) -> None:
    failed, logs = invoke(sample("keys_only"))
    assert failed == []
    assert state_items(ddb) == []
    (warning,) = [entry for entry in logs if entry["event"] == "stream_view_type_insufficient"]
    assert (warning["table"], warning["stream_view_type"], warning["log_level"]) == ("Sessions", "KEYS_ONLY", "warning")
    (finding,) = findings_logged(logs)
    assert (finding["kind"], finding["severity"], finding["table"], finding["key"]) == (
        "large_item",
        "info",
        "Sessions",
        None,
    )
    stats = summary(logs)
    assert (stats["insufficient_view_type"], stats["removes"], stats["observations"]) == (2, 1, 0)


def test_bad_records_are_counted_and_never_fail_the_batch(ddb: Any) -> None:
    failed, logs = invoke(sample("bad_records"))
    assert failed == []
    stats = summary(logs)
    assert (stats["malformed"], stats["unknown_type_tags"], stats["invalid_base64"], stats["removes"]) == (4, 1, 1, 1)
    assert (stats["observations"], stats["records_read"], stats["history_updates"]) == (2, 9, 1)
    skipped = [entry for entry in logs if entry["event"] == "stream_record_skipped"]
    assert [entry["position"] for entry in skipped] == [2, 3, 4, 6, 7, 8]
    assert 'unknown type tag "X"' in skipped[1]["problem"]
    # the good 70 KB item among them still got its history
    (item,) = state_items(ddb)
    assert item["key"] == {"M": {"pk": {"S": "DEVICE#c3d4"}, "sk": {"S": "TIMELINE"}}}


# ----------------------------------------------------------------------------- partial batch failures


def test_records_whose_history_cannot_be_written_are_reported_by_sequence_number(
    ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a state table name that does not exist: the two large records cannot be stored
    monkeypatch.setenv("STATE_TABLE_NAME", "no-such-table")
    get_settings.cache_clear()
    records = sample("new_and_old")["Records"]
    # When
    failed, logs = invoke(sample("new_and_old"))
    # Then exactly those two are reported, by SequenceNumber; the small INSERT and the REMOVE succeed
    assert failed == [records[1]["dynamodb"]["SequenceNumber"], records[2]["dynamodb"]["SequenceNumber"]]
    assert summary(logs)["below_floor"] == 1


def test_one_failing_record_does_not_fail_the_others(ddb: Any) -> None:
    # Given the state table rejecting (throttling, retries exhausted) the write of the big item's history only
    big_pk = history_pk(ACCOUNT, REGION, "Timelines", BIG_KEY)

    def reject(params: dict[str, Any], **_: Any) -> None:
        if params.get("Item", {}).get("pk", {}).get("S") == big_pk:
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "Rate exceeded"}}, "PutItem"
            )

    runtime.CLIENTS.dynamodb.meta.events.register("before-parameter-build.dynamodb.PutItem", reject)
    records = sample("new_and_old")["Records"]
    # When
    failed, logs = invoke(sample("new_and_old"))
    # Then only the big item's record is retried; the 100 KB item's history was written
    assert failed == [records[1]["dynamodb"]["SequenceNumber"]]
    assert history_item(ddb, BIG_KEY) is None
    assert history_item(ddb, MID_KEY) is not None
    assert summary(logs)["history_updates"] == 1


def test_missing_state_table_setting_is_a_clear_error(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STATE_TABLE_NAME")
    get_settings.cache_clear()
    with pytest.raises(ConfigurationError, match="STATE_TABLE_NAME is required"):
        stream_item_size.lambda_handler(sample("keys_only"), CONTEXT)


def test_floor_and_threshold_come_from_the_environment(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ITEM_SIZE_HISTORY_FLOOR_BYTES", "200000")
    monkeypatch.setenv("LARGE_ITEM_THRESHOLD_PCT", "80")
    get_settings.cache_clear()
    failed, logs = invoke(sample("new_and_old"))
    assert failed == []
    assert [item["key"]["M"] for item in state_items(ddb)] == [BIG_KEY]  # the 100 KB item is under the floor now
    assert findings_logged(logs) == []  # 78% is under an 80% threshold


# ----------------------------------------------------------------------------- growth over time


def grown_records(steps: int) -> list[dict[str, Any]]:
    """The sample's big MODIFY, then ``steps`` more writes 6 hours apart, each appending one event to the list."""
    first = sample("new_and_old")["Records"][1]
    out = [first]
    for step in range(1, steps + 1):
        rec = copy.deepcopy(out[-1])
        body = rec["dynamodb"]
        body["OldImage"] = copy.deepcopy(body["NewImage"])
        body["NewImage"]["events"]["L"].append(copy.deepcopy(body["NewImage"]["events"]["L"][-1]))
        body["ApproximateCreationDateTime"] += SIX_HOURS
        body["SequenceNumber"] = str(int(body["SequenceNumber"]) + 1_000 * step)
        body["SizeBytes"] = stream_record_size_bytes(body)
        rec["eventID"] = f"{rec['eventID'][:-4]}{step:04d}"
        out.append(rec)
    return out


def test_steady_growth_over_many_batches_becomes_an_item_growth_finding(ddb: Any) -> None:
    # Given the big item appended to every 6 hours for 2 days, one batch per write
    records = grown_records(8)
    store = ItemHistoryStore(ddb, TABLE)
    results = []
    for record in records:
        batch = StreamItemSizeBatch(store, ItemSizeConfig())
        batch.process_record(record)
        results.append(batch.finish())
    # Then the history holds every sample, and the last batch reports the growth
    item = history_item(ddb, BIG_KEY)
    assert item is not None and len(samples_of(item)) == 9 and item["version"] == {"N": "9"}
    step = item_size(records[1]["dynamodb"]["NewImage"]) - item_size(records[0]["dynamodb"]["NewImage"])
    assert step == 1_079
    assert not any(f.kind == FindingKind.ITEM_GROWTH for r in results[:4] for f in r.findings)  # < 24 h of history
    growth = {f.kind: f for f in results[-1].findings}[FindingKind.ITEM_GROWTH]
    size = item_size(records[-1]["dynamodb"]["NewImage"])
    per_day = step * 4
    assert growth.evidence["bytes_per_day"] == pytest.approx(per_day)
    assert growth.evidence["size_bytes"] == size
    assert growth.evidence["days_to_limit"] == pytest.approx((409_600 - size) / per_day, abs=0.01)  # ~18.9 days
    assert growth.evidence["growth_attribute"] == "events"
    assert growth.severity == Severity.HIGH
    assert growth.missing_evidence() == []
    assert '"events" keeps growing' in growth.recommendation


def test_concurrent_writers_do_not_lose_samples(ddb: Any) -> None:
    # Given two stores (two concurrent batches), the second holding a stale copy of the history
    records = grown_records(2)
    observed = [parse_stream_record(r, StreamStats()) for r in records]
    assert all(o is not None for o in observed)
    one, two = ItemHistoryStore(ddb, TABLE), ItemHistoryStore(ddb, TABLE)
    assert one.record(observed[0]).applied  # type: ignore[arg-type]
    assert not two.record(observed[0]).applied  # type: ignore[arg-type]  # a duplicate; two caches version 1
    assert one.record(observed[1]).applied  # type: ignore[arg-type]  # version 2
    # When the stale store writes
    with capture_logs() as logs:
        update = two.record(observed[2])  # type: ignore[arg-type]
    # Then its conditional write failed, it re-read and applied the sample on top
    assert update.applied and update.history.version == 3
    assert [entry["event"] for entry in logs] == ["item_history_conflict"]
    stored = one.get(ACCOUNT, REGION, "Timelines", BIG_KEY)
    assert stored is not None and len(stored.samples) == 3 and stored.version == 3


def test_a_binary_key_is_stored_as_its_bytes(ddb: Any) -> None:
    # Given a 70 KB item whose partition key is binary (base64 "AQID" = bytes 1, 2, 3 in the stream JSON)
    record = copy.deepcopy(sample("new_and_old")["Records"][0])
    body = record["dynamodb"]
    body["Keys"] = {"id": {"B": "AQID"}}
    body["NewImage"] = {"id": {"B": "AQID"}, "blob": {"S": "x" * 70_000}}
    body["SizeBytes"] = stream_record_size_bytes(body)
    record["eventSourceARN"] = record["eventSourceARN"].replace("table/Orders", "table/Blobs")
    # When
    failed, _ = invoke({"Records": [record]})
    # Then the history's raw key holds the key's bytes, under the pk hashed from the stream's key
    assert failed == []
    (item,) = state_items(ddb)
    assert item["key"] == {"M": {"id": {"B": b"\x01\x02\x03"}}}
    assert item["pk"]["S"] == history_pk(ACCOUNT, REGION, "Blobs", {"id": {"B": "AQID"}})

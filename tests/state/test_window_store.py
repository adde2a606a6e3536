"""WindowStore against the moto server: contributions, the window index, processed marks, event markers."""

from __future__ import annotations

import random
import zlib
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from structlog.testing import capture_logs

from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.inputs import source_order
from auditor.state import keys
from auditor.state.window_store import SightingStore, StoreError, WindowStore, event_pk, merge_parts
from tests import factories as f
from tests.moto_server import client, create_state_table

NOW = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)
START = int(f.T0.timestamp())  # 10:00, a 900 s window boundary


def _aggs(calls: list[Any], window_seconds: int = 900) -> AggregateSet:
    aggs = AggregateSet(window_seconds)
    for c in calls:
        aggs.add(c)
    return aggs


def _orders(n: int, *, at: float = 0.0, prefix: str = "ev") -> list[Any]:
    return [f.call("GetItem", "Orders", {"pk": f"USER#{i % 7}"}, at=at + i, event_id=f"{prefix}-{i}") for i in range(n)]


def _all_items(ddb: Any, table: str) -> list[dict[str, Any]]:
    return ddb.scan(TableName=table, ConsistentRead=True)["Items"]


@pytest.fixture
def ddb(aws_reset: str) -> Any:
    return client("dynamodb", aws_reset)


@pytest.fixture
def store(ddb: Any) -> WindowStore:
    return WindowStore(ddb, create_state_table(ddb), retention_days=3)


def test_contributions_round_trip_through_the_index(store: WindowStore, ddb: Any) -> None:
    # Given traffic of two tables in one window and of one table in the next window
    calls = [*_orders(20), f.call("Scan", "Sessions", None, at=5, event_id="scan-1")]
    calls += _orders(4, at=950, prefix="late")
    aggs = _aggs(calls)
    # When it is stored
    written = store.put_contributions("s3://bucket/a.json.gz", aggs, NOW)
    # Then one contribution and one index item per window, with the TTL and the compressed aggregate
    assert written == 6
    items = _all_items(ddb, store.table_name)
    assert len(items) == 6
    index = sorted(i["sk"]["S"] for i in items if i["pk"]["S"] == keys.window_index_pk(START))
    assert index == ["111122223333#us-east-1#Orders", "111122223333#us-east-1#Sessions"]
    contrib = next(i for i in items if i["pk"]["S"] == keys.window_pk("111122223333", "us-east-1", "Orders", START))
    assert contrib["sk"]["S"] == keys.source_sk("s3://bucket/a.json.gz")
    assert int(contrib["expires_at"]["N"]) == int(NOW.timestamp()) + 3 * 86_400
    stored = TableWindow.from_dict(orjson.loads(zlib.decompress(contrib["agg"]["B"])))
    assert stored.calls == 20
    # And loading gives back exactly the aggregates, sorted by (table, start)
    loaded = store.load_windows([START, START + 900])
    assert [(w.table, w.window_start, w.calls) for w in loaded] == [
        ("Orders", START, 20),
        ("Orders", START + 900, 4),
        ("Sessions", START, 1),
    ]
    expected = aggs.windows[("111122223333", "us-east-1", "Orders", START)]
    assert loaded[0].to_dict() == TableWindow.from_dict(expected.to_dict()).to_dict()
    # A window start without traffic loads nothing; only the asked windows are loaded
    assert store.load_windows([START + 1800]) == []
    assert [w.window_start for w in store.load_windows([START + 900])] == [START + 900]


def test_same_source_twice_overwrites_and_sources_merge(store: WindowStore, ddb: Any) -> None:
    # Given one source stored twice (a redelivery) and a second source in the same window
    first = _aggs(_orders(10))
    store.put_contributions("s3://bucket/a.json.gz", first, NOW)
    store.put_contributions("s3://bucket/a.json.gz", first, NOW + timedelta(minutes=5))
    assert len(_all_items(ddb, store.table_name)) == 2
    store.put_contributions("s3://bucket/b.json.gz", _aggs(_orders(5, at=100, prefix="b")), NOW)
    # When the window is loaded
    [window] = store.load_windows([START])
    # Then the redelivery counted once and the two sources merged into one window of 900 s
    assert window.calls == 15
    assert window.key_requests == 15
    assert window.window_seconds == 900
    assert window.first_time == f.T0.timestamp()
    assert window.last_time == f.T0.timestamp() + 104


def test_load_windows_paginates(ddb: Any) -> None:
    store = WindowStore(ddb, create_state_table(ddb), query_page_size=2)
    for n in range(5):
        store.put_contributions(f"s3://bucket/{n}.json.gz", _aggs(_orders(3, at=n * 10, prefix=f"p{n}")), NOW)
    for table in ("Jobs", "Users", "Catalog"):
        store.put_contributions(f"s3://bucket/{table}", _aggs([f.call("GetItem", table, {"id": 1})]), NOW)
    loaded = store.load_windows([START])
    assert [(w.table, w.calls) for w in loaded] == [("Catalog", 1), ("Jobs", 1), ("Orders", 15), ("Users", 1)]


def test_unreadable_contribution_is_logged_and_skipped(store: WindowStore, ddb: Any) -> None:
    store.put_contributions("s3://bucket/a.json.gz", _aggs(_orders(3)), NOW)
    pk = keys.window_pk("111122223333", "us-east-1", "Orders", START)
    ddb.put_item(TableName=store.table_name, Item={"pk": {"S": pk}, "sk": {"S": "SRC#broken"}, "agg": {"B": b"xx"}})
    with capture_logs() as logs:
        [window] = store.load_windows([START])
    assert window.calls == 3
    assert [e["event"] for e in logs] == ["window_contribution_unreadable"]
    assert logs[0]["sk"] == "SRC#broken"


def test_processed_marks_are_conditional(store: WindowStore, ddb: Any) -> None:
    assert not store.is_processed("trail", "k/a.json.gz")
    assert store.mark_processed("trail", "k/a.json.gz", etag='"abc"', stats={"data_events": 7}, now=NOW)
    assert store.is_processed("trail", "k/a.json.gz")
    assert not store.is_processed("trail", "k/b.json.gz")
    # A second mark is a conflict, reported as False, and leaves the first mark as it was
    assert not store.mark_processed("trail", "k/a.json.gz", etag=None, stats={"data_events": 99}, now=NOW)
    item = ddb.get_item(
        TableName=store.table_name, Key={"pk": {"S": keys.object_pk("trail", "k/a.json.gz")}, "sk": {"S": "OBJ"}}
    )["Item"]
    assert item["stats"]["M"]["data_events"] == {"N": "7"}
    assert item["etag"] == {"S": '"abc"'}
    assert item["key"] == {"S": "k/a.json.gz"}


def test_mark_processed_raises_other_errors(ddb: Any) -> None:
    store = WindowStore(ddb, "no-such-table")
    with pytest.raises(ClientError) as err:
        store.mark_processed("trail", "k", etag=None, stats={}, now=NOW)
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_commit_events_is_all_or_nothing(store: WindowStore, ddb: Any) -> None:
    # Given a batch committed once
    calls = _orders(3)
    ids = [c.event_id for c in calls]
    assert store.commit_events(ids, "events:one", _aggs(calls), NOW) == set()
    assert store.load_windows([START])[0].calls == 3
    before = len(_all_items(ddb, store.table_name))
    # When a batch overlapping it is committed
    overlap = [*calls[1:], f.call("GetItem", "Orders", {"pk": "USER#9"}, at=50, event_id="new-1")]
    existing = store.commit_events([c.event_id for c in overlap], "events:two", _aggs(overlap), NOW)
    # Then the already recorded events are reported and nothing at all was written
    assert existing == {"ev-1", "ev-2"}
    assert len(_all_items(ddb, store.table_name)) == before
    assert store.load_windows([START])[0].calls == 3
    marker = ddb.get_item(TableName=store.table_name, Key={"pk": {"S": event_pk("ev-0")}, "sk": {"S": "EVT"}})
    assert marker["Item"]["source"] == {"S": "events:one"}
    # And the rest commits on its own
    rest = overlap[-1:]
    assert store.commit_events(["new-1"], "events:three", _aggs(rest), NOW) == set()
    assert store.load_windows([START])[0].calls == 4


def test_commit_events_limits() -> None:
    store = WindowStore(client("dynamodb", "http://127.0.0.1:9"), "t")
    with pytest.raises(ValueError, match="unique"):
        store.commit_events(["a", "a"], "s", AggregateSet(), NOW)
    calls = _orders(100)
    with pytest.raises(ValueError, match="at most 100"):
        store.commit_events([c.event_id for c in calls], "s", _aggs(calls), NOW)


# ---- faults DynamoDB reports in a response (botocore Stubber, responses shaped as AWS documents them) ----


def _stubbed() -> tuple[WindowStore, Stubber]:
    ddb = client("dynamodb", "http://127.0.0.1:9")
    return WindowStore(ddb, "state"), Stubber(ddb)


def test_unprocessed_batch_items_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("auditor.state.window_store._BACKOFF_BASE", 0.0)
    store, stub = _stubbed()
    aggs = _aggs(_orders(2))
    index, contributions = store._items("s3://b/k", aggs, NOW)
    # The index batch comes back half done, then completes; the contribution batch succeeds at once
    unprocessed = {"state": [{"PutRequest": {"Item": index[0]}}]}
    stub.add_response("batch_write_item", {"UnprocessedItems": unprocessed})
    stub.add_response(
        "batch_write_item", {"UnprocessedItems": {}}, {"RequestItems": {"state": [{"PutRequest": {"Item": index[0]}}]}}
    )
    stub.add_response(
        "batch_write_item",
        {"UnprocessedItems": {}},
        {"RequestItems": {"state": [{"PutRequest": {"Item": contributions[0]}}]}},
    )
    with stub:
        assert store.put_contributions("s3://b/k", aggs, NOW) == 2
    stub.assert_no_pending_responses()


def test_unprocessed_items_that_never_clear_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("auditor.state.window_store._BACKOFF_BASE", 0.0)
    store, stub = _stubbed()
    aggs = _aggs(_orders(2))
    index, _ = store._items("s3://b/k", aggs, NOW)
    for _ in range(8):
        stub.add_response("batch_write_item", {"UnprocessedItems": {"state": [{"PutRequest": {"Item": index[0]}}]}})
    with stub, pytest.raises(StoreError, match="unprocessed"):
        store.put_contributions("s3://b/k", aggs, NOW)


def _cancelled(codes: list[str]) -> dict[str, Any]:
    return {
        "service_error_code": "TransactionCanceledException",
        "service_message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
        f"[{', '.join(codes)}]",
        "http_status_code": 400,
        "modeled_fields": {"CancellationReasons": [{"Code": c} for c in codes]},
    }


def test_transaction_conflict_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("auditor.state.window_store._BACKOFF_BASE", 0.0)
    store, stub = _stubbed()
    calls = _orders(1)
    stub.add_response("batch_write_item", {"UnprocessedItems": {}})
    stub.add_client_error("transact_write_items", **_cancelled(["None", "TransactionConflict"]))
    stub.add_response("transact_write_items", {})
    with stub:
        assert store.commit_events(["ev-0"], "events:x", _aggs(calls), NOW) == set()
    stub.assert_no_pending_responses()


def test_transaction_cancelled_for_another_reason_raises() -> None:
    store, stub = _stubbed()
    calls = _orders(1)
    stub.add_response("batch_write_item", {"UnprocessedItems": {}})
    stub.add_client_error("transact_write_items", **_cancelled(["None", "ValidationError"]))
    with stub, pytest.raises(StoreError, match="ValidationError"):
        store.commit_events(["ev-0"], "events:x", _aggs(calls), NOW)


def _skewed(source: int, n: int) -> AggregateSet:
    """One source's window: a hot key among many light ones, more distinct keys than a small sketch holds (its
    heavy-hitter counts are then estimates that depend on the order sketches merge in)."""
    rng = random.Random(source)
    aggs = AggregateSet(900, sketch_capacity=16)
    for i in range(n):
        key = "USER#hot" if i % 3 == 0 else f"USER#{min(rng.randrange(40), rng.randrange(40))}"
        aggs.add(f.call("GetItem", "Orders", {"pk": key}, at=i % 840, event_id=f"s{source}-{i}"))
    for tw in aggs.windows.values():
        tw.flush()
    return aggs


def test_a_windows_contributions_merge_in_the_order_of_their_sources_whatever_order_they_are_listed_in() -> None:
    # Given three objects' contributions to one window, stored (read back from their serialised form)
    names = [f"s3://b/AWSLogs/1/CloudTrail/us-east-1/111_CloudTrail_us-east-1_20261201T10{m}Z_x.json.gz" for m in "05"]
    names.append("s3://b/other/111_CloudTrail_us-east-1_20261201T1003Z_y.json.gz")
    parts = [
        (name, TableWindow.from_dict(orjson.loads(tw.to_json())))
        for i, name in enumerate(names)
        for tw in _skewed(i, 300).windows.values()
    ]
    # When the store lists them in any order (its sort key is a digest of the source)
    merged = [
        merge_parts([[(n, TableWindow.from_dict(tw.to_dict())) for n, tw in order]])[0]
        for order in (parts, parts[::-1], [parts[1], parts[0], parts[2]])
    ]
    # Then the window is the same, and it is the files merged in memory in the order analyze-trail reads them
    assert merged[0].hot.error > 0  # the sketch pruned: an order would show
    assert merged[0].to_dict() == merged[1].to_dict() == merged[2].to_dict()
    in_memory = sorted(((n, _skewed(i, 300)) for i, n in enumerate(names)), key=lambda p: source_order(p[0]))
    total = in_memory[0][1]
    for _, aggs in in_memory[1:]:
        total.merge(aggs)
    [window] = total.windows.values()
    assert window.to_dict() == merged[0].to_dict()


def test_the_weeks_windows_with_trail_data_are_kept_as_a_set(ddb: Any) -> None:
    sightings = SightingStore(ddb, create_state_table(ddb))
    assert sightings.coverage("2026-W49") is None
    sightings.cover("2026-W49", [START + 900, START], 900, NOW)
    sightings.cover("2026-W49", [START + 900, START + 2700], 900, NOW)  # a window added again changes nothing
    assert sightings.coverage("2026-W49") == ([START, START + 900, START + 2700], 900)
    assert sightings.coverage("2026-W48") is None

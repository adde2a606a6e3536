"""WindowStore's seal and late flags, and the evaluated windows' sightings (SightingStore), against the moto server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber

from auditor.kernel.aggregates.window import AggregateSet
from auditor.models.finding import Totals
from auditor.state.window_store import (
    LateWindow,
    SightingStore,
    WindowSightings,
    WindowStore,
    ids_ever,
    sum_week,
)
from tests import factories as f
from tests.moto_server import client, create_state_table

NOW = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)
START = int(f.T0.timestamp())  # 10:00, a 900 s window boundary


def _aggs(*calls: Any) -> AggregateSet:
    aggs = AggregateSet(900)
    for c in calls:
        aggs.add(c)
    return aggs


def _two_windows(prefix: str) -> AggregateSet:
    """Orders at 10:00 and 10:15, Users at 10:15."""
    return _aggs(
        f.call("GetItem", "Orders", {"pk": "A"}, at=10, event_id=f"{prefix}-1"),
        f.call("GetItem", "Orders", {"pk": "B"}, at=910, event_id=f"{prefix}-2"),
        f.call("GetItem", "Users", {"pk": "C"}, at=920, event_id=f"{prefix}-3"),
    )


@pytest.fixture
def store(aws_reset: str) -> WindowStore:
    ddb = client("dynamodb", aws_reset)
    return WindowStore(ddb, create_state_table(ddb), retention_days=3)


def test_the_seal_only_moves_forward(store: WindowStore) -> None:
    assert store.sealed_through() is None
    store.seal(START + 900, NOW)
    store.seal(START, NOW)  # an evaluator behind another one: the seal stays
    assert store.sealed_through() == START + 900


def test_a_contribution_to_a_sealed_window_is_flagged_and_cleared_only_when_unchanged(store: WindowStore) -> None:
    assert store.flag_late("s3://b/k0", _two_windows("a"), NOW) == []  # nothing sealed yet
    store.seal(START, NOW)
    flagged = store.flag_late("s3://b/k1", _two_windows("b"), NOW)
    assert [(w.table, w.window_start) for w in flagged] == [("Orders", START)]  # 10:15 is not sealed
    [late] = store.late_windows()
    assert (late.account, late.table, late.window_start) == (f.ACCOUNT, "Orders", START)

    store.flag_late("s3://b/k2", _two_windows("c"), NOW)  # a second late contribution while it is evaluated
    assert not store.clear_late(late)  # the flag stays for the next run
    [again] = store.late_windows()
    assert again.flag != late.flag
    assert store.clear_late(again)
    assert store.late_windows() == []


def test_events_committed_to_a_sealed_window_are_flagged_in_their_transaction(store: WindowStore) -> None:
    first: list[LateWindow] = []
    assert store.commit_events(["a-1", "a-2", "a-3"], "events:a", _two_windows("a"), NOW, first) == set()
    assert first == []
    store.seal(START + 900, NOW)
    late: list[LateWindow] = []
    assert store.commit_events(["b-1", "b-2", "b-3"], "events:b", _two_windows("b"), NOW, late) == set()
    assert sorted((w.table, w.window_start) for w in late) == [
        ("Orders", START),
        ("Orders", START + 900),
        ("Users", START + 900),
    ]
    assert len(store.late_windows()) == 3
    assert sum(w.calls for w in store.load_windows([START, START + 900])) == 6
    # redelivered: the markers drop the events, nothing is stored or flagged again
    again: list[LateWindow] = []
    assert store.commit_events(["b-1", "b-2", "b-3"], "events:b", _two_windows("b"), NOW, again) == {
        "b-1",
        "b-2",
        "b-3",
    }
    assert again == [] and {w.flag for w in store.late_windows()} == {w.flag for w in late}


def test_a_seal_that_moves_during_the_commit_is_read_again() -> None:
    ddb = client("dynamodb", "http://127.0.0.1:9")
    store, stub = WindowStore(ddb, "state"), Stubber(ddb)
    aggs = _aggs(f.call("GetItem", "Orders", {"pk": "A"}, at=10, event_id="e-1"))
    cancelled = {
        "service_error_code": "TransactionCanceledException",
        "service_message": "Transaction cancelled [None, None, ConditionalCheckFailed]",
        "http_status_code": 400,
        "modeled_fields": {
            "CancellationReasons": [{"Code": "None"}, {"Code": "None"}, {"Code": "ConditionalCheckFailed"}]
        },
    }
    stub.add_response("batch_write_item", {"UnprocessedItems": {}})
    stub.add_client_error("transact_write_items", **cancelled)  # sealed meanwhile
    stub.add_response("get_item", {"Item": {"through": {"N": str(START)}}})
    stub.add_response("transact_write_items", {})
    late: list[LateWindow] = []
    with stub:
        assert store.commit_events(["e-1"], "events:x", aggs, NOW, late) == set()
    stub.assert_no_pending_responses()
    assert [(w.table, w.window_start) for w in late] == [("Orders", START)]


def _totals(count: int, start: int) -> Totals:
    at = datetime.fromtimestamp(start, tz=UTC)
    return Totals(
        count=count,
        windows=1,
        first_seen=at + timedelta(seconds=1),
        last_seen=at + timedelta(seconds=60),
        period_start=at,
        period_end=at + timedelta(seconds=900),
    )


def test_sightings_are_kept_per_window_and_summed_per_week(aws_reset: str) -> None:
    ddb = client("dynamodb", aws_reset)
    sightings = SightingStore(ddb, create_state_table(ddb), retention_days=3)
    week = "2026-W49"
    sightings.put(f.ACCOUNT, f.REGION, "Orders", week, WindowSightings(START, {"x": _totals(3, START)}), NOW)
    later = WindowSightings(START + 900, {"x": _totals(4, START + 900), "y": _totals(1, START + 900)})
    sightings.put(f.ACCOUNT, f.REGION, "Orders", week, later, NOW)
    stored = sightings.week(f.ACCOUNT, f.REGION, "Orders", week)
    assert sorted(stored) == [START, START + 900]
    total = sum_week(stored.values(), "x")
    assert total is not None and (total.count, total.windows) == (7, 2)
    # evaluated again, the first window no longer shows x: its item is replaced, the id is remembered
    sightings.put(f.ACCOUNT, f.REGION, "Orders", week, WindowSightings(START, {}, {"x"}), NOW)
    stored = sightings.week(f.ACCOUNT, f.REGION, "Orders", week)
    total = sum_week(stored.values(), "x")
    assert total is not None and (total.count, total.windows) == (4, 1)
    assert ids_ever(stored) == {"x", "y"}
    assert sum_week(stored.values(), "z") is None
    assert sightings.week(f.ACCOUNT, f.REGION, "Users", week) == {}

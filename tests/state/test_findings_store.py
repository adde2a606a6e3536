"""FindingsStore against the moto server: state round trips, GSI queries, outbox atomicity, concurrency, cursor."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber

from auditor.lifecycle import EventKind, FindingEvent, FindingState, FindingStatus, StateChange, transition
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.state import keys
from auditor.state.findings_store import (
    ConcurrencyError,
    FindingsStore,
    OutboxEntry,
    VersionConflictError,
)
from tests.moto_server import client, create_state_table

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # a Tuesday, ISO week 2026-W49
ACCOUNT, REGION = "111122223333", "us-east-1"


def finding(name: str = "a", *, table: str = "Orders", severity: Severity = Severity.MEDIUM, at: float = 0) -> Finding:
    return Finding(
        id=fingerprint(FindingKind.SCAN, ACCOUNT, REGION, table, None, name),
        kind=FindingKind.SCAN,
        severity=severity,
        account=ACCOUNT,
        region=REGION,
        table=table,
        title=f"Scans on {table} by {name}",
        summary="s",
        recommendation="r",
        evidence={"principal": name, "operation": "Scan", "count": 2, "source": "cloudtrail", "ratio": 0.25},
        first_seen=T0 + timedelta(seconds=at),
        last_seen=T0 + timedelta(seconds=at + 60),
    )


def step(previous: FindingState | None, seen: Finding | None, now: datetime, **kw: Any) -> StateChange:
    change = transition(previous, seen, now=now, resolve_after_seconds=3600, horizon=kw.pop("horizon", None), **kw)
    assert change is not None
    return change


def _items(ddb: Any, table: str) -> list[dict[str, Any]]:
    return ddb.scan(TableName=table, ConsistentRead=True)["Items"]


def _outbox(ddb: Any, table: str) -> list[dict[str, Any]]:
    return [i for i in _items(ddb, table) if i["pk"]["S"].startswith("OUTBOX#")]


@pytest.fixture
def ddb(aws_reset: str) -> Any:
    return client("dynamodb", aws_reset)


@pytest.fixture
def store(ddb: Any) -> FindingsStore:
    return FindingsStore(ddb, create_state_table(ddb), retention_days=30, sleep=lambda _s: None)


# ---------------------------------------------------------------------------------------------------- states


def test_new_state_round_trips_with_keys_and_outbox(store: FindingsStore, ddb: Any) -> None:
    # Given a new finding's state change with its "new" event
    change = step(None, finding(), T0 + timedelta(minutes=30))
    # When it is saved
    stored = store.save(change)
    # Then it reads back equal, at version 1
    assert stored.version == 1
    assert store.get(change.id) == stored
    assert store.get("scan-nothing-here") is None
    # and the item carries the key design of keys.py
    (item,) = [i for i in _items(ddb, store.table_name) if i["pk"]["S"].startswith("FINDING#")]
    assert item["pk"]["S"] == f"FINDING#{change.id}" and item["sk"]["S"] == "STATE"
    assert item["gsi1pk"]["S"] == f"TABLE#{ACCOUNT}#{REGION}#Orders"
    assert item["gsi1sk"]["S"] == f"OPEN#{change.id}"
    assert item["gsi2pk"]["S"] == "WEEK#2026-W49"
    assert item["gsi2sk"]["S"] == f"2026-12-01T10:01:00Z#{change.id}"
    assert item["status"]["S"] == "new" and item["severity"]["S"] == "medium"
    assert "expires_at" not in item
    # and the outbox entry was written with it
    (entry,) = store.pending()
    assert entry.finding_id == change.id and entry.event.kind is EventKind.NEW and entry.attempts == 0
    assert entry.event.finding == change.state.finding
    assert entry.pk == keys.outbox_pk(change.id)


def test_resolved_state_moves_to_resolved_and_gets_a_ttl(store: FindingsStore, ddb: Any) -> None:
    opened = store.save(step(None, finding(), T0))
    resolved_at = T0 + timedelta(hours=2)
    change = step(opened, None, resolved_at, horizon=resolved_at)
    assert change.state.status is FindingStatus.RESOLVED

    stored = store.save(change)

    assert stored.version == 2
    item = next(i for i in _items(ddb, store.table_name) if i["pk"]["S"] == f"FINDING#{change.id}")
    assert item["gsi1sk"]["S"] == f"RESOLVED#{change.id}"
    assert int(item["expires_at"]["N"]) == int((resolved_at + timedelta(days=30)).timestamp())
    assert store.open_findings(ACCOUNT, REGION, "Orders") == []

    # Re-opened: open again, and the TTL is gone.
    reopened = store.save(step(stored, finding(at=4 * 3600), T0 + timedelta(hours=5)))
    item = next(i for i in _items(ddb, store.table_name) if i["pk"]["S"] == f"FINDING#{change.id}")
    assert reopened.status is FindingStatus.NEW
    assert item["gsi1sk"]["S"] == f"OPEN#{change.id}" and "expires_at" not in item


def test_get_many_in_chunks(store: FindingsStore) -> None:
    states = [store.save(step(None, finding(f"p{i}"), T0)) for i in range(130)]
    wanted = [s.id for s in states[:120]] + ["scan-missing"]
    found = store.get_many(wanted)
    assert set(found) == {s.id for s in states[:120]}
    assert found[states[7].id] == states[7]
    assert store.get_many([]) == {}


def test_get_many_retries_unprocessed_keys(ddb: Any) -> None:
    # moto never returns UnprocessedKeys: the two responses are stubbed in the shape DynamoDB documents.
    table = "state"
    sleeps: list[float] = []
    store = FindingsStore(ddb, table, sleep=sleeps.append)
    a = step(None, finding("a"), T0).state.model_copy(update={"version": 1})
    b = step(None, finding("b"), T0).state.model_copy(update={"version": 3})
    item_a = store._state_item(a, 1)
    item_b = store._state_item(b, 3)
    key_a = {"pk": item_a["pk"], "sk": item_a["sk"]}
    key_b = {"pk": item_b["pk"], "sk": item_b["sk"]}
    first_keys = sorted([key_a, key_b], key=lambda k: k["pk"]["S"])
    with Stubber(ddb) as stub:
        stub.add_response(
            "batch_get_item",
            {
                "Responses": {table: [item_a]},
                "UnprocessedKeys": {table: {"Keys": [key_b], "ConsistentRead": True}},
            },
            {"RequestItems": {table: {"Keys": first_keys, "ConsistentRead": True}}},
        )
        stub.add_response(
            "batch_get_item",
            {"Responses": {table: [item_b]}, "UnprocessedKeys": {}},
            {"RequestItems": {table: {"Keys": [key_b], "ConsistentRead": True}}},
        )
        found = store.get_many([a.id, b.id])
        stub.assert_no_pending_responses()
    assert found == {a.id: a, b.id: b}
    assert len(sleeps) == 1


def test_open_findings_of_a_table_via_gsi1(store: FindingsStore) -> None:
    open_a = store.save(step(None, finding("a"), T0))
    open_b = store.save(step(None, finding("b"), T0))
    other_table = store.save(step(None, finding("a", table="Sessions"), T0))
    closed = store.save(step(None, finding("c"), T0))
    store.save(step(closed, None, T0 + timedelta(hours=3), horizon=T0 + timedelta(hours=3)))

    got = store.open_findings(ACCOUNT, REGION, "Orders")

    assert sorted(s.id for s in got) == sorted([open_a.id, open_b.id])
    assert {s.id for s in store.open_findings(ACCOUNT, REGION, "Sessions")} == {other_table.id}
    assert store.open_findings("999999999999", REGION, "Orders") == []


def test_week_findings_via_gsi2_paginated(store: FindingsStore) -> None:
    # Seven findings last seen in week 49 (Mon 2026-11-30 .. Sun 2026-12-06), one in week 50.
    this_week = [store.save(step(None, finding(f"w{i}", at=i * 3600 * 12), T0)) for i in range(7)]
    next_week = store.save(step(None, finding("later", at=6 * 86_400), T0))
    assert next_week.last_seen.isocalendar()[1] == 50

    got = store.week_findings(T0, page_size=2)

    assert [s.id for s in got] == [s.id for s in sorted(this_week, key=lambda s: s.last_seen)]
    assert [s.id for s in store.week_findings(T0 + timedelta(days=7))] == [next_week.id]


# ---------------------------------------------------------------------------------------------------- atomicity


def test_state_and_outbox_are_written_together_or_not_at_all(store: FindingsStore, ddb: Any) -> None:
    # Given a stored finding at version 1 (its "new" event is queued)
    v1 = store.save(step(None, finding(severity=Severity.LOW), T0))
    # and a worsened change computed from a state that is not the stored one (version 0 != 1)
    stale = v1.model_copy(update={"version": 0})
    change = step(stale, finding(severity=Severity.HIGH, at=900), T0 + timedelta(hours=1))
    assert change.event is not None and change.event.kind is EventKind.WORSENED
    # When it is saved, the transaction is cancelled as a whole
    with pytest.raises(VersionConflictError):
        store.save(change)
    # Then neither the state nor the outbox changed
    assert store.get(v1.id) == v1
    assert [e.event.kind for e in store.pending()] == [EventKind.NEW]
    assert len(_outbox(ddb, store.table_name)) == 1


def test_a_first_write_conflicts_when_the_finding_exists(store: FindingsStore) -> None:
    store.save(step(None, finding(), T0))
    with pytest.raises(VersionConflictError):
        store.save(step(None, finding(), T0 + timedelta(minutes=5)))


def test_conflict_rereads_and_reapplies(store: FindingsStore) -> None:
    # Given a finding both evaluators read at version 1
    v1 = store.save(step(None, finding(severity=Severity.LOW), T0))
    mine = finding(severity=Severity.HIGH, at=1800)  # my run saw it worse
    theirs = finding(severity=Severity.LOW, at=3600)  # a concurrent run saw it later, same severity
    # When the other evaluator writes first (version 2)
    v2 = store.save(step(v1, theirs, T0 + timedelta(hours=1, minutes=5)))
    assert v2.version == 2
    # and I save my change computed from version 1
    reads: list[FindingState | None] = []

    def recompute(stored: FindingState | None) -> StateChange | None:
        reads.append(stored)
        return transition(
            stored, mine, now=T0 + timedelta(hours=1, minutes=10), resolve_after_seconds=3600, horizon=None
        )

    written = store.apply(step(v1, mine, T0 + timedelta(hours=1, minutes=10)), recompute)

    # Then my transition was re-applied to what was stored (version 2), not to my stale copy
    assert reads == [v2]
    assert written is not None and written.state.version == 3
    assert store.conflicts == 1
    final = store.get(v1.id)
    assert final == written.state
    assert final is not None
    assert final.status is FindingStatus.WORSENED and final.finding.severity is Severity.HIGH
    assert final.last_seen == theirs.last_seen  # their later sighting is kept
    assert final.first_seen == v1.first_seen
    # and exactly one worsened event was queued, next to the original new one
    assert sorted(e.event.kind.value for e in store.pending()) == ["new", "worsened"]


def test_conflict_recompute_may_find_nothing_left_to_do(store: FindingsStore) -> None:
    v1 = store.save(step(None, finding(), T0))
    resolve_at = T0 + timedelta(hours=3)
    store.save(step(v1, None, resolve_at, horizon=resolve_at))  # the other evaluator resolved it

    def recompute(stored: FindingState | None) -> StateChange | None:
        return transition(stored, None, now=resolve_at, resolve_after_seconds=3600, horizon=resolve_at)

    assert store.apply(step(v1, None, resolve_at, horizon=resolve_at), recompute) is None
    assert [e.event.kind for e in store.pending()] == [EventKind.NEW, EventKind.RESOLVED]


def test_conflicts_are_bounded(ddb: Any) -> None:
    store = FindingsStore(ddb, create_state_table(ddb), max_conflict_retries=3, sleep=lambda _s: None)
    v1 = store.save(step(None, finding(), T0))
    store.save(step(v1, finding(at=600), T0 + timedelta(minutes=30)))
    calls = 0

    def always_stale(_stored: FindingState | None) -> StateChange:
        nonlocal calls
        calls += 1
        return step(v1, finding(at=1200), T0 + timedelta(hours=1))  # keeps writing from version 1

    with pytest.raises(ConcurrencyError):
        store.apply(always_stale(None), always_stale)
    assert calls == 1 + 3
    assert store.conflicts == 4


# ---------------------------------------------------------------------------------------------------- outbox


def _event(name: str, at: datetime, kind: EventKind = EventKind.NEW) -> FindingEvent:
    return FindingEvent(kind=kind, finding=finding(name), at=at)


def test_pending_spans_the_shards_oldest_first(store: FindingsStore) -> None:
    events = [_event(f"p{i}", T0 + timedelta(seconds=i)) for i in range(12)]
    for e in reversed(events):
        store.enqueue(e)
    shards = {keys.outbox_pk(e.finding.id) for e in events}
    assert len(shards) > 1  # the entries really are spread over several partitions

    assert [p.event for p in store.pending()] == events
    assert [p.event for p in store.pending(limit=5)] == events[:5]
    assert store.pending(limit=0) == []


def test_mark_sent_deletes_and_mark_failed_keeps_with_attempts(store: FindingsStore) -> None:
    a = store.enqueue(_event("a", T0))
    b = store.enqueue(_event("b", T0 + timedelta(seconds=1)))

    store.mark_sent(a)
    store.mark_failed(b, "NotFound: topic does not exist", T0 + timedelta(minutes=1))
    store.mark_failed(b, "NotFound: topic does not exist", T0 + timedelta(minutes=2))

    (left,) = store.pending()
    assert left.sk == b.sk and left.attempts == 2
    assert left.last_error == "NotFound: topic does not exist"
    assert left.event_id == b.event_id
    # An entry someone else already sent is not resurrected by a late failure mark.
    store.mark_failed(a, "late", T0 + timedelta(minutes=3))
    assert [p.sk for p in store.pending()] == [b.sk]


def test_publish_marks_are_read_back_and_never_resurrect_a_removed_entry(store: FindingsStore) -> None:
    a = store.enqueue(_event("a", T0))
    assert (a.publishing, a.published, a.digested) == (False, False, False)
    store.mark_publishing(a, T0)
    (left,) = store.pending()
    assert (left.publishing, left.published, left.digested) == (True, False, False)
    store.mark_published(a, T0)
    store.mark_digested(a, T0)
    (left,) = store.pending()
    assert (left.publishing, left.published, left.digested) == (True, True, True)
    # A refused publish clears the publishing mark (a later publish repeats nothing)
    store.mark_failed(a, "Throttling", T0)
    assert store.pending()[0].publishing is False
    store.mark_sent(a)
    store.mark_published(a, T0)
    store.mark_digested(a, T0)
    assert store.pending() == []


def test_event_id_is_stable() -> None:
    e = OutboxEntry(pk="OUTBOX#1", sk="2026#x#new", finding_id="x", event=_event("x", T0), created="2026")
    assert e.event_id == replace(e, attempts=5, last_error="boom").event_id  # the same on every retry
    assert e.event_id != replace(e, sk="2026#x#worsened").event_id


# ---------------------------------------------------------------------------------------------------- cursor


def test_cursor_only_moves_from_the_value_read(store: FindingsStore) -> None:
    assert store.get_cursor() is None
    # Two evaluators both read "no cursor"; only the first one moves it.
    assert store.advance_cursor(1000, expected=None, now=T0) is True
    assert store.advance_cursor(1900, expected=None, now=T0) is False
    assert store.get_cursor() == 1000
    # Both read 1000: the first wins, the second is refused.
    assert store.advance_cursor(1900, expected=1000, now=T0) is True
    assert store.advance_cursor(2800, expected=1000, now=T0) is False
    assert store.get_cursor() == 1900
    with pytest.raises(ValueError, match="only moves forward"):
        store.advance_cursor(1000, expected=1900, now=T0)


@pytest.mark.parametrize("code", ["IdempotentParameterMismatchException", "TransactionInProgressException"])
def test_a_concurrent_identical_transaction_is_a_conflict(ddb: Any, code: str) -> None:
    # moto does not model idempotency tokens: DynamoDB's documented error is stubbed.
    store = FindingsStore(ddb, "state")
    change = step(None, finding(), T0)
    with Stubber(ddb) as stub:
        stub.add_client_error("transact_write_items", service_error_code=code, http_status_code=400)
        with pytest.raises(VersionConflictError, match=code):
            store.save(change)
        stub.assert_no_pending_responses()

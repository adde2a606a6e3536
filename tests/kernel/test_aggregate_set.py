"""The fast path of ``AggregateSet.add`` (``aggregate_set.add_call``) counts every call exactly as the general code.

The general code (``AggregateSet._add_general``: ``TableWindow.add`` table by table) is the reference: these tests
feed the same calls to both and compare the whole serialised windows, on the benchmark's traffic and on the shapes
the fast path counts inline or hands to ``TableWindow._add_item`` (indexes, key conditions, scans, odd key values).
"""

from __future__ import annotations

import io
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from auditor.demo.benchmark import benchmark_records
from auditor.kernel.aggregates.aggregate_set import add_call
from auditor.kernel.aggregates.bounds import MAX_PATTERNS, PENDING_LIMIT
from auditor.kernel.aggregates.window import AggregateSet, window_to_dict
from auditor.kernel.calls import Access, ApiCall, ItemAccess
from auditor.kernel.normalize import normalize_record
from auditor.kernel.partiql import parse_statement
from auditor.kernel.reader import Deduper, InputSource, read_calls
from auditor.kernel.stats import IngestStats

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ROLE = "arn:aws:iam::111122223333:role/app"
_R = Access.READ
_W = Access.WRITE


def _record(operation: str, params: dict[str, Any], at: float = 0.0, **extra: Any) -> dict[str, Any]:
    """A DynamoDB data event of ``operation`` with ``params``, ``at`` seconds after ``T0``."""
    return {
        "eventVersion": "1.09",
        "userIdentity": {"type": "AssumedRole", "arn": ROLE, "accountId": "111122223333"},
        "eventTime": (T0 + timedelta(seconds=at)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": operation,
        "awsRegion": "us-east-1",
        "sourceIPAddress": "10.0.1.23",
        "userAgent": "Boto3/1.34.0",
        "requestParameters": params,
        "responseElements": None,
        "eventID": f"{operation}-{at}-{len(str(params))}-{sorted(extra)}",
        "readOnly": operation in ("BatchGetItem", "Scan", "Query"),
        "eventType": "AwsApiCall",
        "managementEvent": False,
        "recipientAccountId": "111122223333",
        "eventCategory": "Data",
        **extra,
    }


def _call(record: dict[str, Any]) -> ApiCall:
    call = normalize_record(record)
    assert call is not None
    return call


def _api_call(items: list[ItemAccess], tables: tuple[str, ...], at: float = 0.0, **fields: Any) -> ApiCall:
    """An ``ApiCall`` built by hand (shapes the readers do not make, which the aggregates still count)."""
    operation = fields.pop("operation", items[0].operation.split(":")[0] if items else "BatchGetItem")
    access = fields.pop("access", _W if any(i.access is _W for i in items) else _R)
    return ApiCall(
        f"hand-{operation}-{at}-{len(items)}", T0 + timedelta(seconds=at), operation, access, "111122223333",
        "us-east-1", tables, tuple(items), principal=fields.pop("principal", ROLE), **fields,
    )  # fmt: skip


def _windows(calls: list[ApiCall], fast: bool, key_schema: dict[str, str] | None = None) -> dict[Any, Any]:
    aggs = AggregateSet(key_schema=key_schema)
    for call in calls:
        if fast:
            aggs.add(call)
        else:
            aggs._add_general(call)
    aggs.flush()
    return {wk: window_to_dict(tw) for wk, tw in aggs.windows.items()}


def _assert_same(calls: list[ApiCall], key_schema: dict[str, str] | None = None) -> None:
    fast = _windows(calls, True, key_schema)
    assert fast == _windows(calls, False, key_schema)
    assert fast  # something was counted


_BATCH_GET = _record(
    "BatchGetItem",
    {
        "requestItems": {
            "Orders": {
                "keys": [{"pk": "ORDER#1", "sk": "ITEM#1"}, {"pk": "ORDER#2", "sk": "ITEM#1"}],
                "consistentRead": False,
            },
            "Users": {"keys": [{"id": "USER#1"}, {"id": 42}]},
            "Empty": {"projectionExpression": "id"},
        }
    },
)
_BATCH_WRITE = _record(
    "BatchWriteItem",
    {
        "requestItems": {
            "Orders": [
                {"putRequest": {"key": {"pk": "ORDER#3", "sk": "ITEM#2"}, "item": ["pk", "sk", "total"]}},
                {"deleteRequest": {"key": {"pk": "ORDER#4", "sk": "ITEM#1"}}},
            ],
            "Users": [{"putRequest": {"key": {"id": "USER#2"}, "item": ["id", "name"]}}],
        }
    },
)
_TRANSACTION = _record(
    "TransactWriteItems",
    {
        "transactItems": [
            {"operation": "ConditionCheck", "tableName": "Users", "key": {"id": "USER#1"}},
            {"operation": "Update", "tableName": "Orders", "key": {"pk": "ORDER#1", "sk": "ITEM#1"}},
            {"operation": "Put", "tableName": "Users", "key": {"id": "USER#3"}, "items": ["id", "plan"]},
            {"operation": "Delete", "tableName": "Orders", "key": {"pk": "ORDER#2", "sk": "ITEM#1"}},
        ]
    },
)
_THROTTLED = "ProvisionedThroughputExceededException"

#: Calls the readers make, each with what the fast path counts inline or hands on.
RECORDS: dict[str, dict[str, Any]] = {
    "batch get across tables": _BATCH_GET,
    "batch write across tables": _BATCH_WRITE,
    "transaction with a condition check": _TRANSACTION,
    "failed batch": {**_BATCH_GET, "errorCode": "ValidationException", "errorMessage": "Too many items"},
    "throttled batch": {**_BATCH_WRITE, "errorCode": _THROTTLED, "errorMessage": "Throughput exceeds the limit"},
    "canceled transaction": {
        **_TRANSACTION,
        "errorCode": "TransactionCanceledException",
        "errorMessage": "Transaction cancelled, please refer cancellation reasons for specific reasons "
        "[None, ThrottlingError, None, None]",
    },
    "index query": _record(
        "Query",
        {
            "tableName": "Orders",
            "indexName": "by-user",
            "keyConditionExpression": "userId = :u",
            "key": {"userId": "U1"},
        },
    ),
    "continued query": _record(
        "Query",
        {"tableName": "Orders", "keyConditionExpression": "pk = :v", "limit": 10, "exclusiveStartKey": {"pk": "A"}},
    ),
    "scan page": _record("Scan", {"tableName": "Orders", "limit": 100, "segment": 1, "totalSegments": 4}),
    "statement": _record("ExecuteStatement", {"statement": "SELECT * FROM \"Orders\" WHERE pk = 'ORDER#1'"}),
    "statement on two attributes": _record(
        "ExecuteStatement", {"statement": "SELECT * FROM \"Orders\" WHERE pk = 'ORDER#1' AND sk = 'ITEM#9'"}
    ),
    "statement with a redacted value": _record(
        "ExecuteStatement", {"statement": "SELECT * FROM Orders WHERE pk = 'ORDER#1' AND status = ***(Redacted)"}
    ),
    "statement with a number and a parameter": _record(
        "ExecuteStatement", {"statement": "SELECT * FROM Orders WHERE pk = 7 AND sk = ?"}
    ),
    "statement on three attributes": _record(
        "ExecuteStatement", {"statement": "UPDATE Orders SET a = 1 WHERE pk = 'P#1' AND sk = 'S#2' AND v = 'x'"}
    ),
    "statement on an index": _record(
        "ExecuteStatement", {"statement": 'SELECT * FROM "Orders"."by-user" WHERE userId = \'U#1\''}
    ),
    "full-scan statement": _record("ExecuteStatement", {"statement": "SELECT * FROM Orders"}),
    "insert": _record("ExecuteStatement", {"statement": "INSERT INTO Orders VALUE {'pk': ***(Redacted)}"}),
    "delete statement": _record("ExecuteStatement", {"statement": "DELETE FROM Orders WHERE pk = 'ORDER#5'"}),
    "delete without a key": _record("ExecuteStatement", {"statement": "DELETE FROM Orders WHERE status = 'old'"}),
    "service's call": {
        **_BATCH_GET,
        "userIdentity": {"type": "AWSService", "invokedBy": "dynamodb.amazonaws.com"},
    },
}


@pytest.mark.parametrize("key_schema", [None, {"Orders": "sk", "Users": "name"}], ids=["no schema", "schema"])
@pytest.mark.parametrize("name", list(RECORDS))
def test_each_shape_is_counted_as_by_the_general_code(name: str, key_schema: dict[str, str] | None) -> None:
    call = _call(RECORDS[name])
    # the same call a minute later, before and after it: a window's new minute, a known one, an earlier time
    later = _call({**RECORDS[name], "eventTime": "2026-03-02T09:01:00Z", "eventID": "later"})
    _assert_same([later, call, call, later], key_schema)


def test_the_common_calls_take_the_fast_path() -> None:
    for name in ("batch get across tables", "batch write across tables", "transaction with a condition check"):
        assert add_call(AggregateSet(), _call(RECORDS[name])), name
    for name in ("failed batch", "throttled batch", "service's call"):
        assert not add_call(AggregateSet(), _call(RECORDS[name])), name


def _odd_items() -> list[ApiCall]:
    """Calls only hand-built: keys of odd values and sizes, items of a table the call does not name, a table named
    twice, a continued Query page keyed without a key condition, an empty item list."""
    keys: list[dict[str, Any]] = [
        {"pk": 7},
        {"pk": True},
        {"pk": 1.5, "sk": "A"},
        {"pk": "A", "sk": 2**70},
        {"pk": "x" * 600},
        {"pk": "y" * 600, "sk": "B"},
        {"pk": "z" * 3000},
        {"pk": ["nested", {"deep": [1]}]},
        {"a": "1", "b": "2", "c": "3"},
        {"sk": "S#1", "PK": "P#1"},
        {"name": "N#1", "id": "I#1"},
        {"sk": "S", "range_key": "R"},
        {"": "empty name", "sk": "S"},
    ]
    calls = [
        _api_call([ItemAccess("Orders", "BatchGetItem", _R, key=k, eventual=i % 2 == 0) for k in keys[i : i + 3]],
                  ("Orders",), at=i)
        for i in range(len(keys))
    ]  # fmt: skip
    calls.append(_api_call([ItemAccess("Users", "BatchWriteItem:Put", _W, key=k) for k in keys], ("Users",), at=1))
    calls.append(
        _api_call(
            [
                ItemAccess("Orders", "BatchGetItem", _R, key={"pk": "A"}),
                ItemAccess("Elsewhere", "BatchGetItem", _R, key={"pk": "B"}),
                ItemAccess("Users", "BatchGetItem", _R, key={"id": "C"}),
                ItemAccess("Orders", "BatchGetItem", _R, key={"pk": "D"}),
            ],
            ("Orders", "Users"),
        )
    )
    calls.append(_api_call([ItemAccess("Orders", "BatchGetItem", _R, key={"pk": "A"})], ("Orders", "Orders")))
    calls.append(_api_call([ItemAccess("Orders", "BatchGetItem", _R, key={"pk": "A"})], ("Orders", "Users"), at=2))
    calls.append(_api_call([], ("Orders",), operation="BatchGetItem", access=_R))
    calls.append(
        _api_call(
            [ItemAccess("Orders", "Query", _R, key={"pk": "Q#1"})], ("Orders",), scan_continuation=True, scan_limit=20
        )
    )
    calls.append(_api_call([ItemAccess("Orders", "Query", _R, key={"pk": "Q#2"})], ("Orders",), consistent_read=False))
    calls.append(_api_call([ItemAccess("Orders", "PutItem", _W, key={"pk": "P#1"}, shape="")], ("Orders",)))
    statement = parse_statement("UPDATE Orders SET a = 1 WHERE pk = 'P#1'")
    access = ItemAccess("Orders", "ExecuteStatement:UPDATE", _W, key={"pk": "P#1"}, statement=statement)
    calls += [_api_call([access], ("Orders",), principal=None)] * 2  # its key not the statement's own dict
    statement = parse_statement("DELETE FROM Orders WHERE pk = 'P#2'")
    access = ItemAccess("Orders", "ExecuteStatement:DELETE", _W, "by-user", statement.key_equalities, statement)
    calls += [_api_call([access], ("Orders",), principal=None)] * 2
    return calls


@pytest.mark.parametrize("key_schema", [None, {"Orders": "sk", "Users": "name"}], ids=["no schema", "schema"])
def test_odd_calls_are_counted_as_by_the_general_code(key_schema: dict[str, str] | None) -> None:
    _assert_same(_odd_items(), key_schema)


def test_many_patterns_overflow_as_by_the_general_code() -> None:
    """Past ``MAX_PATTERNS`` access patterns a window counts the rest as one (``_count_pattern``)."""
    calls = [
        _api_call(
            [
                ItemAccess(
                    "Orders", "BatchGetItem", _R, key={"pk": f"K{'ABCDEFGHIJ'[i % 10]}{'KLMNOPQRST'[i // 10 % 10]}"}
                )
            ]
            * (1 + i % 2),
            ("Orders",),
            at=i % 60,
        )
        for i in range(MAX_PATTERNS + 50)
    ]
    _assert_same(calls)


def test_benchmark_traffic_is_counted_as_by_the_general_code() -> None:
    """The benchmark's mix (batches, transactions, PartiQL, Scans, errors) over more accesses than one pending batch
    holds, so the windows flush on the way as they do in a run."""
    calls = [c for r in benchmark_records(6000, 400, seed=3, rate=5.0) if (c := normalize_record(r)) is not None]
    assert sum(len(c.items) for c in calls) > PENDING_LIMIT
    fast = [c for c in calls if len(c.tables) > 1 or c.operation == "ExecuteStatement"]
    assert len(fast) > 300
    _assert_same(calls)
    _assert_same(calls, {"Accounts": "sk", "Carts": "cartId"})


def test_light_and_fast_paths_together_count_as_the_general_code() -> None:
    """In a run the ``SingleItem`` tuples (``add_batch``'s loop) and the calls of the fast path share each window's
    pending lists: together they count what the general code counts of every call."""
    records = list(benchmark_records(6000, 400, seed=4, rate=5.0))  # over 20 minutes
    random.Random(4).shuffle(records)  # out of time order too: a window's minutes come back
    data = orjson.dumps({"Records": records})
    source = InputSource(name="bench.json", open=lambda: io.BytesIO(data))
    mixed = AggregateSet()
    for batch in read_calls(source, IngestStats(), Deduper(), light=True):
        mixed.add_batch(batch)
    mixed.flush()
    general = AggregateSet()
    for batch in read_calls(source, IngestStats(), Deduper()):
        for call in batch:
            assert isinstance(call, ApiCall)
            general._add_general(call)
    general.flush()
    assert {wk: window_to_dict(tw) for wk, tw in mixed.windows.items()} == {
        wk: window_to_dict(tw) for wk, tw in general.windows.items()
    }


#: Keys of single-item calls the ``SingleItem`` loop of ``add_batch`` counts on its own branches: one, two and three
#: attributes, text and other scalars, long values, a partition key named like a sort key or given by the schema.
_ODD_KEYS: list[dict[str, Any]] = [
    {"pk": "ORDER#1"},
    {"pk": 7},
    {"pk": True},
    {"pk": 1.5, "sk": "A"},
    {"pk": "A", "sk": 2**40},
    {"pk": "ORDER#2", "sk": None},
    {"pk": "x" * 600, "sk": "B"},
    {"a": "1", "b": "2", "c": "3"},
    {"sk": "S#1", "PK": "P#1"},
    {"sk": "S#2", "range_key": "R"},
    {"name": "N#1", "id": "I#1"},
    {"sk": "S#3", "pk": "P#3"},
]


def _single_item_records() -> list[dict[str, Any]]:
    records = []
    for i, key in enumerate(_ODD_KEYS):
        for j, operation in enumerate(("GetItem", "PutItem", "UpdateItem", "DeleteItem")):
            params: dict[str, Any] = {"tableName": "Orders", "key": key, "consistentRead": i % 2 == 0}
            if operation == "PutItem":  # more shapes than a window keeps apart
                params = {"tableName": "Orders", "key": key, "item": ["pk", f"attr{i}", f"more{j}"]}
            elif operation == "UpdateItem":
                params = {"tableName": "Orders", "key": key, "updateExpression": f"SET v{i % 3} = :v"}
            records.append(_record(operation, params, at=i * 7 + j))
        query = {"tableName": "Orders", "keyConditionExpression": "pk = :v AND sk > :s", "key": key}
        records.append(_record("Query", query, at=i))
        records.append(_record("Query", {**query, "indexName": "by-sk", "keyConditionExpression": "sk = :v"}, at=i))
    for n, condition in enumerate(("pk = :v", "pk = :v AND sk > :s", "sk = :v AND begins_with(pk, :p)")):
        keyless = {"tableName": "Orders", "keyConditionExpression": condition}  # no key logged
        records += [_record("Query", keyless, at=n), _record("Query", {**keyless, "indexName": "by-sk"}, at=n)]
    records = [{**r, "eventID": f"odd-{n}"} for n, r in enumerate(records * 2)]  # each record twice (known patterns)
    for n, record in enumerate(records):  # windows of other regions, accounts and tables in between
        if n % 3 == 1:
            record["awsRegion"] = "eu-west-1"
        if n % 4 == 2:
            record["recipientAccountId"] = "444455556666"
        if n % 5 == 3:
            record["requestParameters"] = {**record["requestParameters"], "tableName": "Users"}
    return records


@pytest.mark.parametrize("key_schema", [None, {"Orders": "sk"}, {"Orders": "id"}], ids=["none", "sk", "absent"])
def test_odd_single_items_are_counted_as_by_the_general_code(key_schema: dict[str, str] | None) -> None:
    """``add_batch`` of the ``SingleItem`` tuples counts what the general code counts of the same calls."""
    data = orjson.dumps({"Records": _single_item_records()})
    source = InputSource(name="odd.json", open=lambda: io.BytesIO(data))
    light = AggregateSet(key_schema=key_schema)
    tuples = 0
    for batch in read_calls(source, IngestStats(), Deduper(), light=True):
        tuples += sum(type(call) is tuple for call in batch)
        light.add_batch(batch)
    light.flush()
    assert tuples > 120
    general = AggregateSet(key_schema=key_schema)
    for batch in read_calls(source, IngestStats(), Deduper()):
        for call in batch:
            assert isinstance(call, ApiCall)
            general._add_general(call)
    general.flush()
    got = {wk: window_to_dict(tw) for wk, tw in light.windows.items()}
    assert got == {wk: window_to_dict(tw) for wk, tw in general.windows.items()}
    assert len(got) == 8  # two accounts, regions and tables


def test_single_items_past_the_pattern_cap_are_counted_as_by_the_general_code() -> None:
    """Past ``MAX_PATTERNS`` a window counts the rest as one: ``add_batch`` finds known rows by their key's value
    templates and must count the overflow where ``_count_pattern`` does."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    records = []
    for i in range(MAX_PATTERNS + 50):
        value = f"K{letters[i % 26]}{letters[i // 26 % 26]}"  # upper case: a template of its own
        for n, key in enumerate(({"pk": value}, {"pk": value, "sk": "META"})):
            params = {"tableName": "Orders", "key": key, "consistentRead": True}
            records += [_record("GetItem", params, at=i % 60, eventID=f"cap-{i}-{n}-{twice}") for twice in (0, 1)]
    data = orjson.dumps({"Records": records})
    source = InputSource(name="cap.json", open=lambda: io.BytesIO(data))
    light = AggregateSet()
    for batch in read_calls(source, IngestStats(), Deduper(), light=True):
        light.add_batch(batch)
    general = AggregateSet()
    for batch in read_calls(source, IngestStats(), Deduper()):
        for call in batch:
            assert isinstance(call, ApiCall)
            general._add_general(call)
    got = {wk: window_to_dict(tw) for wk, tw in light.windows.items()}
    assert got == {wk: window_to_dict(tw) for wk, tw in general.windows.items()}
    (window,) = light.windows.values()
    assert len(window.patterns) == MAX_PATTERNS + 1

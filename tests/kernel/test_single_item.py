"""The light ingest path: single-item calls read as ``SingleItem`` tuples aggregate exactly as their ``ApiCall``.

``engine.ingest_source`` reads the commonest records (successful GetItem/PutItem/UpdateItem/DeleteItem) with
``normalize.single_item`` and ``AggregateSet.add_item`` instead of ``normalize_record`` and ``AggregateSet.add``.
These tests hold the two paths equal on mixed traffic and on every shape the light reader must hand back.
"""

from __future__ import annotations

import copy
import io
from datetime import UTC, datetime
from typing import Any, cast

import orjson
import pytest

from auditor.config import AnalysisConfig
from auditor.engine import ingest_source, new_aggregate_set
from auditor.kernel.calls import ApiCall
from auditor.kernel.normalize import normalize_record, single_item
from auditor.kernel.reader import Deduper, InputSource, read_calls
from auditor.kernel.stats import IngestStats
from tests.factories import flat_calls, planted_workload, traffic

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _source(records: list[dict[str, Any]]) -> InputSource:
    data = orjson.dumps({"Records": records})
    return InputSource(name="mixed.json", open=lambda: io.BytesIO(data))


def _get_item(**changes: Any) -> dict[str, Any]:
    """A successful GetItem as CloudTrail logs it (a data event as the CloudTrail User Guide shows it), with
    ``changes`` applied."""
    record: dict[str, Any] = {
        "eventVersion": "1.09",
        "userIdentity": {
            "type": "AssumedRole",
            "principalId": "AROAEXAMPLE:orders-fn",
            "arn": "arn:aws:sts::111122223333:assumed-role/orders-role/orders-fn",
            "accountId": "111122223333",
            "sessionContext": {
                "sessionIssuer": {"type": "Role", "arn": "arn:aws:iam::111122223333:role/orders-role"},
                "attributes": {"creationDate": "2026-03-02T08:00:00Z", "mfaAuthenticated": "false"},
            },
        },
        "eventTime": "2026-03-02T09:00:05Z",
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": "GetItem",
        "awsRegion": "us-east-1",
        "sourceIPAddress": "10.0.1.23",
        "userAgent": "Boto3/1.34.0",
        "requestParameters": {"tableName": "Orders", "key": {"pk": "ORDER#1", "sk": "ITEM#1"}},
        "responseElements": None,
        "requestID": "REQ1",
        "eventID": "11111111-2222-3333-4444-555555555555",
        "readOnly": True,
        "resources": [
            {
                "accountId": "111122223333",
                "type": "AWS::DynamoDB::Table",
                "ARN": "arn:aws:dynamodb:us-east-1:111122223333:table/Orders",
            }
        ],
        "eventType": "AwsApiCall",
        "apiVersion": "2012-08-10",
        "managementEvent": False,
        "recipientAccountId": "111122223333",
        "eventCategory": "Data",
    }
    for path, value in changes.items():
        target = record
        *parents, leaf = path.split("__")
        for parent in parents:
            target = target[parent]
        if value is _DELETE:
            del target[leaf]
        else:
            target[leaf] = value
    return record


_DELETE = object()

#: Shapes the light reader must leave to ``normalize_record`` (each differs from the plain GetItem in one way).
HANDED_BACK = {
    "error": {"errorCode": "ProvisionedThroughputExceededException", "errorMessage": "The level of configured..."},
    "management label": {"eventCategory": "Management"},
    "management flag": {"managementEvent": True},
    "no recipient account": {"recipientAccountId": _DELETE},
    "empty account": {"recipientAccountId": ""},
    "region not text": {"awsRegion": 7},
    "empty key": {"requestParameters__key": {}},
    "key not an object": {"requestParameters__key": ["pk", "ORDER#1"]},
    "no key": {"requestParameters__key": _DELETE},
    "empty table": {"requestParameters__tableName": ""},
    "table not text": {"requestParameters__tableName": ["Orders"]},
    "PascalCase parameters": {"requestParameters": {"TableName": "Orders", "Key": {"pk": "ORDER#1"}}},
    "consistency in another spelling": {
        "requestParameters": {"tableName": "Orders", "key": {"pk": "ORDER#1"}, "ConsistentRead": False}
    },
    "event id empty": {"eventID": ""},
    "event time not text": {"eventTime": 1772442005},
    "other operation": {"eventName": "Scan"},
    "Query in PascalCase": {
        "eventName": "Query",
        "requestParameters": {"TableName": "Orders", "KeyConditionExpression": "pk = :v"},
    },
    "other service": {"eventSource": "s3.amazonaws.com"},
    "no user agent field": {"userAgent": _DELETE},
}


#: Query request parameters as CloudTrail logs them: with an index, a logged partition-key value, the legacy
#: ``keyConditions``, eventual consistency, and a key condition on a name placeholder.
QUERIES: list[dict[str, Any]] = [
    {
        "tableName": "Orders",
        "keyConditionExpression": "#n0 = :v0",
        "expressionAttributeNames": {"#n0": "pk"},
        "key": {"value": "ORDER#7"},
    },
    {
        "tableName": "Orders",
        "indexName": "by-status",
        "keyConditionExpression": "status = :s AND createdAt > :t",
        "consistentRead": False,
    },
    {"tableName": "Orders", "keyConditions": {"pk": {"comparisonOperator": "EQ"}}, "limit": 10},
    {"tableName": "Orders", "keyConditionExpression": "pk = :v", "key": {"pk": "ORDER#9", "sk": "ITEM#1"}},
]


def _variants() -> list[dict[str, Any]]:
    out = []
    for i, changes in enumerate(HANDED_BACK.values()):
        out.append(_get_item(**{"eventID": f"hb-{i}", **changes}))
    # Light shapes, with and without the consistency flags, each operation, a never-seen time, duplicates.
    out.append(_get_item(eventID="eventual", requestParameters__consistentRead=False))
    out.append(_get_item(eventID="strong", requestParameters__consistentRead=True))
    out.append(_get_item(eventID="flag-not-bool", requestParameters__consistentRead="false"))
    for op in ("PutItem", "UpdateItem", "DeleteItem"):
        out.append(_get_item(eventID=f"w-{op}", eventName=op, requestParameters__consistentRead=False))
    out.append(_get_item(eventID="new-second", eventTime="2026-03-02T09:14:59Z"))
    out.append(_get_item(eventID="offset-time", eventTime="2026-03-02T10:00:05+01:00"))
    out.append(_get_item(eventID="dup"))
    out.append(_get_item(eventID="dup"))  # delivered twice: counted once
    out.append(_get_item(eventID="dup", eventTime="2026-03-02T09:00:06Z"))  # same id, another event
    out.append(_get_item(eventID="single-attr", requestParameters__key={"id": 42}))
    for i, params in enumerate(QUERIES):
        out.append(_get_item(eventID=f"q-{i}", eventName="Query", requestParameters=params))
    out.append(_get_item(eventID="long-value", requestParameters__key={"pk": "x" * 600}))
    return out


def _corpus() -> list[dict[str, Any]]:
    records = list(traffic(4000, seed=5))
    records += planted_workload(START, hours=0.1, seed=4)
    records += _variants()
    return records


def _reference(records: list[dict[str, Any]], config: AnalysisConfig) -> tuple[dict[Any, Any], IngestStats]:
    """The aggregates as ``normalize_record`` + ``AggregateSet.add`` build them (no light path)."""
    stats = IngestStats()
    aggs = new_aggregate_set(config)
    for batch in read_calls(_source(records), stats, Deduper()):
        for call in batch:
            aggs.add(cast("ApiCall", call))
    aggs.flush()
    return {wk: tw.to_dict() for wk, tw in aggs.windows.items()}, stats


def _light(records: list[dict[str, Any]], config: AnalysisConfig) -> tuple[dict[Any, Any], IngestStats]:
    stats = IngestStats()
    aggs = ingest_source(_source(records), config, Deduper(), stats)
    assert aggs is not None
    aggs.flush()
    return {wk: tw.to_dict() for wk, tw in aggs.windows.items()}, stats


@pytest.mark.parametrize("key_schema", [{}, {"Orders": "sk"}], ids=["no schema", "schema given"])
def test_light_path_aggregates_exactly_as_the_reference(key_schema: dict[str, str]) -> None:
    records = _corpus()
    config = AnalysisConfig(key_schema=key_schema)
    expected, expected_stats = _reference(copy.deepcopy(records), config)
    got, got_stats = _light(copy.deepcopy(records), config)
    assert got == expected
    for field in ("records_read", "records_skipped", "data_events", "duplicates_dropped", "records_seen"):
        assert getattr(got_stats, field) == getattr(expected_stats, field), field
    assert got_stats.problems == expected_stats.problems
    assert expected_stats.duplicates_dropped >= 1


def test_most_of_the_traffic_takes_the_light_path() -> None:
    records = list(traffic(2000, seed=6))
    kinds: dict[str, int] = {"light": 0, "full": 0}
    for item in flat_calls(read_calls(_source(records), IngestStats(), Deduper(), light=True)):
        kinds["full" if isinstance(item, ApiCall) else "light"] += 1
    assert kinds["light"] > kinds["full"] > 0


@pytest.mark.parametrize("name", sorted(HANDED_BACK))
def test_unusual_shapes_are_handed_to_the_full_reader(name: str) -> None:
    normalize_record(_get_item())  # the event time is known (and checked) before
    assert single_item(_get_item()) is not None
    assert single_item(_get_item(**HANDED_BACK[name])) is None


def test_light_item_holds_what_the_full_reader_reads() -> None:
    record = _get_item(requestParameters__consistentRead=False)
    call = normalize_record(record)
    assert call is not None
    item = single_item(record)
    assert item is not None
    event_id, operation, time, epoch, account, region, table, index, key, condition, is_write, eventual, shape = item
    assert (event_id, operation, time, account, region) == (
        call.event_id,
        call.operation,
        call.time,
        call.account,
        call.region,
    )
    assert epoch == call.time.timestamp()
    assert (table, index, key, condition) == (call.items[0].table, None, call.items[0].key, None)
    assert is_write is False and eventual is (call.consistent_read is False) is True
    assert shape is call.items[0].shape is None  # a read has no write shape


def test_an_event_time_never_checked_takes_the_full_reader() -> None:
    record = _get_item(eventTime="2026-03-02T23:59:58.123Z")
    assert single_item(record) is None  # not yet parsed and checked by the full reader
    assert normalize_record(record) is not None
    assert single_item(record) is not None
    assert single_item(_get_item(eventTime="9999-12-31T23:59:59Z")) is None  # rejected by the full reader


@pytest.mark.parametrize("params", QUERIES, ids=["logged key value", "index", "legacy", "logged key"])
def test_a_light_query_holds_what_the_full_reader_reads(params: dict[str, Any]) -> None:
    record = _get_item(eventName="Query", requestParameters=params)
    call = normalize_record(record)
    item = single_item(record)
    assert call is not None and item is not None
    _, operation, _, _, _, _, table, index, key, condition, is_write, eventual, _ = item
    access = call.items[0]
    assert (operation, table, index, key, condition) == (
        "Query",
        access.table,
        access.index,
        access.key,
        access.condition,
    )
    assert condition is not None
    assert is_write is False and eventual is (call.consistent_read is False)


def test_a_custom_normaliser_sees_every_record() -> None:
    records = list(traffic(300, seed=8))
    seen: list[str] = []

    def normalise(record: Any) -> ApiCall | None:
        seen.append(record["eventID"])
        return normalize_record(record)

    calls = flat_calls(read_calls(_source(records), IngestStats(), Deduper(), normalise, light=True))
    assert len(seen) == len(records)
    assert all(isinstance(c, ApiCall) for c in calls) and calls

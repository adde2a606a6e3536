"""Each index is its own partition space (issue 29, point 3), and PartiQL on an index (point 10).

Record shapes: the Query API's request (IndexName, KeyConditionExpression, ExpressionAttributeNames; DynamoDB API
Reference, Query) as CloudTrail logs it, with the partition-key value in ``key`` as the real captures show; PartiQL
``SELECT ... FROM "Table"."Index"`` from the DynamoDB developer guide (ql-reference.select), its non-key values
``***(Redacted)`` as the CloudTrail page of the developer guide says (logging-using-cloudtrail).
"""

from __future__ import annotations

from typing import Any

import orjson

from auditor.kernel.aggregates.keys import (
    MAX_INDEX_SPACES,
    OTHER_INDEX,
    decode_key,
    encode_key,
    index_key,
    key_index,
)
from auditor.kernel.aggregates.window import MAX_SERIALIZED_BYTES, AggregateSet, TableWindow
from auditor.kernel.normalize import normalize_record, single_item
from auditor.kernel.partiql import parse_statement

T0 = 1_764_720_000  # 2025-12-03T00:00:00Z
GSI_MESSAGE = (  # DynamoDB API Reference, TransactWriteItems errors (ProvisionedThroughputExceeded)
    "The level of configured provisioned throughput for one or more global secondary indexes of the table was "
    "exceeded. Consider increasing your provisioning level for the under-provisioned global secondary indexes with "
    "the UpdateTable API."
)


def _record(name: str, t: float, params: dict[str, Any], n: int, error: tuple[str, str] | None = None) -> dict:
    rec: dict[str, Any] = {
        "eventVersion": "1.09",
        "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::111122223333:assumed-role/app/s"},
        "eventTime": f"2025-12-03T00:{int(t) // 60:02d}:{int(t) % 60:02d}Z",
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": name,
        "awsRegion": "us-east-1",
        "sourceIPAddress": "10.0.0.1",
        "userAgent": "aws-sdk-java/2.25.0",
        "requestParameters": {"tableName": "Sessions", **params},
        "responseElements": None,
        "requestID": f"R{n}",
        "eventID": f"00000000-0000-4000-8000-{n:012d}",
        "readOnly": name in ("GetItem", "Query"),
        "eventType": "AwsApiCall",
        "managementEvent": False,
        "recipientAccountId": "111122223333",
        "eventCategory": "Data",
    }
    if error is not None:
        rec["errorCode"], rec["errorMessage"] = error
    return rec


def _index_query(t: float, tenant: str, n: int) -> dict:
    params = {
        "indexName": "ByTenant",
        "key": {"tenantId": tenant},
        "keyConditionExpression": "#t = :t",
        "expressionAttributeNames": {"#t": "tenantId"},
    }
    return _record("Query", t, params, n)


def _get(t: float, session: str, n: int) -> dict:
    return _record("GetItem", t, {"key": {"sessionId": session}}, n)


def _aggregate(records: list[dict], light: bool) -> TableWindow:
    aggs = AggregateSet(3600)
    for rec in records:
        item = single_item(rec) if light else None
        if item is not None:
            aggs.add_item(item)
        else:
            found = normalize_record(rec)
            assert found is not None
            aggs.add(found)
    (span,) = aggs.spans()
    return span


def _traffic() -> list[dict]:
    records = [_get(i * 0.1, f"S#{i}", i) for i in range(900)]
    records += [_index_query(i * 0.5, "TENANT#acme" if i % 5 < 3 else f"TENANT#{i}", 1000 + i) for i in range(100)]
    return records


def test_an_index_querys_key_is_counted_in_the_index_space_on_both_paths() -> None:
    light, full = _aggregate(_traffic(), True), _aggregate(_traffic(), False)
    item = single_item(_index_query(3, "TENANT#acme", 1))  # an event time seen: the light path reads it
    assert item is not None and item[7] == "ByTenant"
    assert light.to_dict() == full.to_dict()
    for agg in (light, full):
        assert (agg.key_requests, agg.distinct.estimate(), agg.key_attrs) == (900, 900, {"sessionId": 900})
        space = agg.index_keys["ByTenant"]
        assert space.counts == [100, 100, 0]  # requests, reads, eventually consistent reads
        assert space.distinct.estimate() == 41  # acme and the 40 others
        assert space.partition_key_attr == "tenantId"
        acme = index_key("ByTenant", encode_key("tenantId", "TENANT#acme"))
        assert agg.hot.counts[acme] == 60
        assert encode_key("tenantId", "TENANT#acme") not in agg.hot.counts
        assert decode_key(acme) == {"tenantId": "TENANT#acme"}
        assert key_index(acme) == "ByTenant" and key_index(encode_key("sessionId", "S#1")) is None


def test_index_spaces_serialise_merge_and_read_windows_stored_before_them() -> None:
    agg = _aggregate(_traffic(), False)
    back = TableWindow.from_dict(orjson.loads(agg.to_json()))
    assert back.to_dict() == agg.to_dict()
    assert back.index_keys["ByTenant"].distinct.estimate() == 41
    twice = back.copy()
    twice.merge(agg)
    assert twice.index_keys["ByTenant"].counts[0] == 200
    assert twice.index_keys["ByTenant"].distinct.estimate() == 41
    old = agg.to_dict()
    del old["index_keys"]
    assert TableWindow.from_dict(old).index_keys == {}


def test_a_throttled_index_key_is_kept_under_the_index() -> None:
    rec = _index_query(1, "TENANT#acme", 1)
    rec["errorCode"], rec["errorMessage"] = "ProvisionedThroughputExceededException", GSI_MESSAGE
    agg = _aggregate([rec], False)
    assert list(agg.throttle_keys) == [index_key("ByTenant", encode_key("tenantId", "TENANT#acme"))]


def test_index_spaces_are_bounded() -> None:
    aggs = AggregateSet(3600)
    n = 0
    for i in range(MAX_INDEX_SPACES + 4):
        for k in range(3000):
            rec = _index_query(k % 3600, f"TENANT#{k}-{'x' * 40}", n)
            rec["requestParameters"]["indexName"] = f"Index{i}"
            n += 1
            found = normalize_record(rec)
            assert found is not None
            aggs.add(found)
    long_name = _index_query(5, "TENANT#1", n)
    long_name["requestParameters"]["indexName"] = "I" * 300
    found = normalize_record(long_name)
    assert found is not None
    aggs.add(found)
    (agg,) = aggs.spans()
    assert len(agg.index_keys) == MAX_INDEX_SPACES + 1
    assert agg.index_keys[OTHER_INDEX].counts[0] == 4 * 3000 + 1
    assert len(agg.to_json()) < MAX_SERIALIZED_BYTES


def test_a_redacted_equality_constrains_an_index_not_the_table() -> None:
    on_index = 'SELECT * FROM "Sessions"."ByTenant" WHERE "tenantId" = ***(Redacted)'
    tokenized = 'SELECT * FROM "Sessions"."ByTenant" WHERE ("tenantId" = ***(Redacted))'  # the tokenizer's path
    for text in (on_index, tokenized):
        s = parse_statement(text)
        assert (s.index, s.full_scan, s.constrained, s.key_equalities) == ("ByTenant", False, ("tenantId",), {})
    s = parse_statement('SELECT * FROM "Sessions" WHERE "tenantId" = ***(Redacted)')
    assert (s.full_scan, s.constrained) == (True, ())
    # given the index's partition key, another attribute does not constrain it
    s = parse_statement('SELECT * FROM "Sessions"."ByTenant" WHERE "state" = ***(Redacted)', "tenantId")
    assert s.full_scan is True

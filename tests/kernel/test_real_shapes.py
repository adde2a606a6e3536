"""Record shapes seen in real CloudTrail captures (beyond the AWS documentation samples).

- Query records carry the partition-key value in ``requestParameters.key`` next to ``keyConditionExpression``
  (an anonymised production capture shows ``"key": {"value": "…"}`` with ``"keyConditionExpression": "#n0 = :v0"``).
- Legacy-API writes log ``attributeUpdates``/``expected`` instead of expressions; old Queries log ``keyConditions``.
- Console Scans log ``select`` and ``limit``; newer envelopes (eventVersion 1.08-1.10) carry ``tlsDetails``,
  ``vpcEndpointId`` and ``sessionCredentialFromConsole`` as the string ``"true"``.
"""

from __future__ import annotations

from typing import Any

from auditor.kernel.normalize import normalize_record


def envelope(name: str, params: dict[str, Any], **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "eventVersion": "1.10",
        "userIdentity": {
            "type": "AssumedRole",
            "principalId": "AROAEXAMPLE:console-user",
            "arn": "arn:aws:sts::111122223333:assumed-role/Admin/console-user",
            "accountId": "111122223333",
            "accessKeyId": "ASIAEXAMPLE",
            "sessionContext": {
                "sessionIssuer": {
                    "type": "Role",
                    "principalId": "AROAEXAMPLE",
                    "arn": "arn:aws:iam::111122223333:role/Admin",
                    "accountId": "111122223333",
                    "userName": "Admin",
                },
                "attributes": {"creationDate": "2026-12-03T08:00:00Z", "mfaAuthenticated": "false"},
            },
        },
        "eventTime": "2026-12-03T09:15:02Z",
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": name,
        "awsRegion": "eu-west-1",
        "sourceIPAddress": "198.51.100.7",
        "userAgent": "console.amazonaws.com",
        "requestParameters": params,
        "responseElements": None,
        "requestID": "Q8R6JH2O5NLHPS4HOVL7ESI2NBVV4KQNSO5AEMVJF66Q9ASUAAJG",
        "eventID": "0d6f8b4e-3f3a-4f53-9a55-1f4e2b9d7c11",
        "readOnly": True,
        "resources": [
            {
                "accountId": "111122223333",
                "type": "AWS::DynamoDB::Table",
                "ARN": "arn:aws:dynamodb:eu-west-1:111122223333:table/Orders",
            }
        ],
        "eventType": "AwsApiCall",
        "apiVersion": "2012-08-10",
        "managementEvent": False,
        "recipientAccountId": "111122223333",
        "vpcEndpointId": "vpce-0a1b2c3d4e5f67890",
        "eventCategory": "Data",
        "tlsDetails": {
            "tlsVersion": "TLSv1.3",
            "cipherSuite": "TLS_AES_128_GCM_SHA256",
            "clientProvidedHostHeader": "dynamodb.eu-west-1.amazonaws.com",
        },
        "sessionCredentialFromConsole": "true",
    }
    record.update(extra)
    return record


def test_query_with_logged_key_value_and_expression() -> None:
    call = normalize_record(
        envelope(
            "Query",
            {
                "tableName": "Orders",
                "key": {"value": "CUSTOMER#4711"},
                "keyConditionExpression": "#n0 = :v0 AND begins_with(#n1, :v1)",
                "expressionAttributeNames": {"#n0": "pk", "#n1": "sk"},
                "scanIndexForward": False,
                "limit": 20,
            },
        )
    )
    assert call is not None
    item = call.items[0]
    assert item.condition == ("pk", "sk begins_with ?")
    # the logged value is the partition key's: it is named after the key condition's attribute
    assert item.key == {"pk": "CUSTOMER#4711"}
    assert call.principal == "arn:aws:iam::111122223333:role/Admin"
    assert call.region == "eu-west-1" and call.account == "111122223333"


def test_query_key_named_as_logged_when_it_matches() -> None:
    call = normalize_record(
        envelope(
            "Query",
            {
                "tableName": "Orders",
                "indexName": "byStatus",
                "key": {"status": "PENDING"},
                "keyConditionExpression": "#s = :s",
                "expressionAttributeNames": {"#s": "status"},
            },
        )
    )
    assert call is not None
    assert call.items[0].key == {"status": "PENDING"}
    assert call.items[0].index == "byStatus"
    assert call.items[0].condition == ("status", "")


def test_query_legacy_key_conditions() -> None:
    call = normalize_record(
        envelope(
            "Query",
            {
                "tableName": "Orders",
                "keyConditions": {"pk": {"comparisonOperator": "EQ"}, "sk": {"comparisonOperator": "BETWEEN"}},
            },
        )
    )
    assert call is not None
    assert call.items[0].condition == ("pk", "sk between ? and ?")
    assert call.items[0].key is None


def test_query_without_key_condition_keeps_the_call() -> None:
    call = normalize_record(envelope("Query", {"tableName": "Orders"}))
    assert call is not None and call.items[0].condition is None and call.items[0].key is None


def test_legacy_update_item_with_attribute_updates_and_expected() -> None:
    record = envelope(
        "UpdateItem",
        {
            "tableName": "Orders",
            "key": {"pk": "CUSTOMER#1", "sk": "ORDER#9"},
            "attributeUpdates": {"status": {"action": "PUT"}},
            "expected": {"status": {"comparisonOperator": "EQ"}},
        },
        readOnly=False,
    )
    call = normalize_record(record)
    assert call is not None
    assert call.items[0].key == {"pk": "CUSTOMER#1", "sk": "ORDER#9"}
    assert call.access.value == "write"


def test_console_scan_with_select_and_limit() -> None:
    call = normalize_record(envelope("Scan", {"tableName": "Orders", "select": "ALL_ATTRIBUTES", "limit": 50}))
    assert call is not None
    assert call.is_scan
    assert call.scan_limit == 50
    assert call.scan_continuation is False
    page = normalize_record(
        envelope(
            "Scan",
            {
                "tableName": "Orders",
                "limit": 50,
                "exclusiveStartKey": {"pk": "CUSTOMER#1", "sk": "ORDER#9"},
                "filterExpression": "#a = :a",
                "expressionAttributeNames": {"#a": "archived"},
            },
        )
    )
    assert page is not None
    assert page.scan_continuation is True
    assert page.scan_filter == "archived = :a"


def test_bare_array_of_records_is_read(tmp_path: Any) -> None:
    import orjson

    from auditor.engine import analyze_trail

    records = [envelope("GetItem", {"tableName": "Orders", "key": {"pk": "A"}}, eventID=f"id-{i}") for i in range(3)]
    path = tmp_path / "records.json"
    path.write_bytes(orjson.dumps(records))
    result = analyze_trail([str(path)])
    assert result.stats.data_events == 3
    assert result.stats.records_skipped == 0


def _write(tmp_path: Any, name: str, records: list[dict[str, Any]]) -> str:
    import orjson

    path = tmp_path / name
    path.write_bytes(orjson.dumps({"Records": records}))
    return str(path)


def test_records_sharing_an_event_id_are_distinct_unless_name_and_time_match(tmp_path: Any) -> None:
    from auditor.engine import analyze_trail

    shared = "a954451c-c2fc-4561-8aea-7a30ba1fdf52"  # the AWS samples reuse one id across operations
    put = envelope("PutItem", {"tableName": "Orders", "key": {"pk": "A"}}, eventID=shared)
    update = envelope("UpdateItem", {"tableName": "Orders", "key": {"pk": "B"}}, eventID=shared)
    later = envelope(
        "PutItem", {"tableName": "Orders", "key": {"pk": "C"}}, eventID=shared, eventTime="2026-12-03T09:16:00Z"
    )
    redelivered = dict(put)
    forward = analyze_trail([_write(tmp_path, "a.json", [put, update, later, redelivered])])
    backward = analyze_trail([_write(tmp_path, "b.json", [redelivered, later, update, put])])
    for result in (forward, backward):
        assert result.stats.data_events == 3
        assert result.stats.duplicates_dropped == 1
    assert [p.model_dump() for p in forward.access_patterns] == [p.model_dump() for p in backward.access_patterns]


def test_management_labelled_data_plane_record_is_counted_and_noted(tmp_path: Any) -> None:
    from auditor.engine import analyze_trail

    odd = envelope(
        "PutItem",
        {"tableName": "Orders", "key": {"pk": "A"}},
        eventCategory="Management",
        managementEvent=True,
        eventID="e-1",
    )
    control = envelope(
        "DescribeTable", {"tableName": "Orders"}, eventCategory="Management", managementEvent=True, eventID="e-2"
    )
    result = analyze_trail([_write(tmp_path, "m.json", [odd, control])])
    assert result.stats.records_read == 2
    assert result.stats.data_events == 1
    assert any("labelled eventCategory Management" in p for p in result.stats.problems)

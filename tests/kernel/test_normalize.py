"""Tests of the CloudTrail record normaliser (auditor.kernel.normalize)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from auditor.exceptions import MalformedRecordError
from auditor.kernel.calls import Access, ApiCall
from auditor.kernel.fields import _CAMEL_KEYS, CONTROL_PLANE_OPERATIONS, DATA_PLANE_OPERATIONS, STREAM_READ_OPERATIONS
from auditor.kernel.general import _ROLE_CACHE, _SESSION_CACHE, _SESSION_CACHE_MAX, _normalize_general
from auditor.kernel.normalize import normalize_record

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cloudtrail"
ROLE_ARN = "arn:aws:iam::444455556666:role/admin-role"  # sessionIssuer of the official AWS samples
SHAPE_ROLE_ARN = "arn:aws:iam::111122223333:role/users"  # sessionIssuer of the shape_* records

R = Access.READ
W = Access.WRITE


def load(name: str) -> dict[str, Any]:
    """The single record of a fixture file (a fresh copy each time)."""
    records = json.loads((FIXTURES / name).read_text())["Records"]
    assert len(records) == 1
    record: dict[str, Any] = records[0]
    return record


def norm(record: Any) -> ApiCall:
    call = normalize_record(record)
    assert call is not None
    return call


def minimal(name: str = "GetItem", params: Any = None, **envelope: Any) -> dict[str, Any]:
    """A small valid data-event record."""
    record: dict[str, Any] = {
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::111122223333:user/alice", "accountId": "111122223333"},
        "eventTime": "2024-05-01T10:00:00Z",
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": name,
        "awsRegion": "eu-west-1",
        "requestParameters": {"tableName": "T", "key": {"pk": "a"}} if params is None else params,
        "responseElements": None,
        "eventID": "11111111-2222-4333-8444-555555555555",
        "readOnly": True,
        "resources": [{"type": "AWS::DynamoDB::Table", "ARN": "arn:aws:dynamodb:eu-west-1:111122223333:table/T"}],
        "eventType": "AwsApiCall",
        "managementEvent": False,
        "recipientAccountId": "111122223333",
        "eventCategory": "Data",
    }
    record.update(envelope)
    return record


# --- official AWS samples ---------------------------------------------------------------------------------


def test_aws_sample_put_item() -> None:
    call = norm(load("aws_sample_put_item.json"))
    assert call.event_id == "a954451c-c2fc-4561-8aea-7a30ba1fdf52"
    assert call.time == datetime(2019, 1, 19, 15, 41, 54, tzinfo=UTC)
    assert call.time.utcoffset() is not None
    assert call.operation == "PutItem"
    assert call.access is W
    assert call.account == "111122223333"
    assert call.region == "us-west-2"
    assert call.tables == ("Music",)
    assert call.table == "Music"
    assert call.principal == ROLE_ARN
    assert call.principal_type == "AssumedRole"
    assert call.session_name == "bob"
    assert call.user_agent == "aws-cli/1.15.64 Python/2.7.16 Darwin/17.7.0 botocore/1.10.63"
    assert call.source_ip == "192.0.2.0"
    assert call.error_code is None
    assert call.error_message is None
    assert call.truncated is False
    assert call.statement is None
    assert call.is_scan is False
    assert len(call.items) == 1
    item = call.items[0]
    assert item.table == "Music"
    assert item.operation == "PutItem"
    assert item.access is W
    assert item.key == {"Artist": "No One You Know", "SongTitle": "Scared of My Shadow"}
    assert item.index is None
    assert item.full_scan is False


def test_aws_sample_update_item_conditional_check_failed() -> None:
    call = norm(load("aws_sample_update_item_conditional_check_failed.json"))
    assert call.operation == "UpdateItem"
    assert call.access is W
    assert call.error_code == "ConditionalCheckFailedException"
    assert call.error_message == "The conditional request failed"
    assert call.items[0].key == {"Artist": "No One You Know", "SongTitle": "Call Me Today"}
    assert call.time == datetime(2020, 9, 3, 22, 27, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    "fixture", ["aws_sample_transact_write_items.json", "aws_sample_transact_write_items_canceled.json"]
)
def test_aws_sample_transact_write_items_mixed_casing(fixture: str) -> None:
    call = norm(load(fixture))
    assert call.operation == "TransactWriteItems"
    assert call.access is W  # ConditionCheck is part of a write transaction
    assert call.tables == ("Music",)
    assert [(i.operation, i.access, i.table) for i in call.items] == [
        ("TransactWriteItems:Put", W, "Music"),
        ("TransactWriteItems:Update", W, "Music"),
        ("TransactWriteItems:Delete", W, "Music"),  # "TableName"
        ("TransactWriteItems:ConditionCheck", R, "Music"),  # "TableName" and "Key"
    ]
    assert [i.key for i in call.items] == [
        {"Artist": "No One You Know", "SongTitle": "Call Me Today"},
        {"Artist": "No One You Know", "SongTitle": "Call Me Tomorrow"},
        {"Artist": "No One You Know", "SongTitle": "Call Me Yesterday"},
        {"Artist": "No One You Know", "SongTitle": "Call Me Now"},
    ]
    assert call.truncated is False


def test_aws_sample_transact_write_items_canceled_error() -> None:
    call = norm(load("aws_sample_transact_write_items_canceled.json"))
    assert call.error_code == "TransactionCanceledException"
    assert call.error_message is not None
    assert call.error_message.endswith("[ConditionalCheckFailed, None]")


def test_aws_sample_transact_region_is_the_record_region() -> None:
    # The doc sample has awsRegion us-west-1 but a us-west-2 ARN: the record's region wins.
    assert norm(load("aws_sample_transact_write_items.json")).region == "us-west-1"


def test_aws_sample_execute_statement_select_is_read_despite_readonly_false() -> None:
    record = load("aws_sample_execute_statement.json")
    assert record["readOnly"] is False
    call = norm(record)
    assert call.operation == "ExecuteStatement"
    assert call.access is R
    assert call.tables == ("Music",)
    assert call.statement is not None
    assert call.statement.verb == "SELECT"
    item = call.items[0]
    assert item.operation == "ExecuteStatement:SELECT"
    assert item.access is R
    assert item.key == {"Artist": "No One You Know", "SongTitle": "Call Me Today"}
    assert item.statement is call.statement
    assert item.statement.redacted_equalities == ("nonKeyAttr",)
    assert item.full_scan is False
    assert call.is_scan is False


def test_aws_sample_batch_execute_statement() -> None:
    call = norm(load("aws_sample_batch_execute_statement.json"))
    assert call.operation == "BatchExecuteStatement"
    assert call.access is W
    assert call.tables == ("Music",)
    update, insert = call.items
    assert update.operation == "BatchExecuteStatement:UPDATE"
    assert update.access is W
    assert update.key == {"Artist": "No One You Know", "SongTitle": "Call Me Today"}
    assert insert.operation == "BatchExecuteStatement:INSERT"
    assert insert.access is W
    assert insert.key is None  # every INSERT value is redacted, the keys included
    assert insert.statement is not None
    assert insert.statement.key_equalities == {}


def test_aws_sample_get_records_is_not_table_traffic() -> None:
    assert normalize_record(load("aws_sample_get_records.json")) is None


def test_aws_sample_update_table_management_event() -> None:
    record = load("aws_sample_update_table.json")
    assert "eventCategory" not in record  # eventVersion 1.03: only the name tells
    assert normalize_record(record) is None
    record["eventCategory"] = "Management"
    record["managementEvent"] = True
    assert normalize_record(record) is None


# --- documented-shape records -----------------------------------------------------------------------------


def test_get_item() -> None:
    call = norm(load("shape_get_item.json"))
    assert call.operation == "GetItem"
    assert call.access is R
    assert call.tables == ("Orders",)
    assert call.items[0].key == {"pk": "USER#123", "sk": "ORDER#2024-0001"}
    assert call.principal == SHAPE_ROLE_ARN
    assert call.session_name == "bob"
    assert call.region == "us-east-1"


def test_delete_item() -> None:
    call = norm(load("shape_delete_item.json"))
    assert call.access is W
    assert call.items[0].operation == "DeleteItem"
    assert call.items[0].key == {"pk": "USER#123", "sk": "ORDER#2024-0002"}


def test_query_with_index() -> None:
    call = norm(load("shape_query.json"))
    assert call.access is R
    assert call.index == "byStatus"
    item = call.items[0]
    assert (item.operation, item.index, item.key, item.full_scan) == ("Query", "byStatus", None, False)
    assert call.is_scan is False
    assert call.scan_segment is None


def test_scan_with_segments() -> None:
    call = norm(load("shape_scan.json"))
    assert call.access is R
    assert call.index == "byStatus"
    assert (call.scan_segment, call.scan_total_segments) == (2, 8)
    item = call.items[0]
    assert (item.operation, item.index, item.key, item.full_scan) == ("Scan", "byStatus", None, True)
    assert call.is_scan is True


@pytest.mark.parametrize("fixture", ["shape_batch_get_item_map.json", "shape_batch_get_item_list.json"])
def test_batch_get_item_map_and_list(fixture: str) -> None:
    call = norm(load(fixture))
    assert call.operation == "BatchGetItem"
    assert call.access is R
    assert call.tables == ("Orders", "Users")
    assert [(i.table, i.operation, i.access, i.key) for i in call.items] == [
        ("Orders", "BatchGetItem", R, {"pk": "USER#1", "sk": "ORDER#1"}),
        ("Orders", "BatchGetItem", R, {"pk": "USER#2", "sk": "ORDER#7"}),
        ("Users", "BatchGetItem", R, {"pk": "USER#1"}),
    ]
    assert call.truncated is False


def test_batch_write_item() -> None:
    call = norm(load("shape_batch_write_item.json"))
    assert call.access is W
    assert call.tables == ("Orders", "Users")
    assert [(i.table, i.operation, i.key) for i in call.items] == [
        ("Orders", "BatchWriteItem:Put", None),  # item logged as attribute names only
        ("Orders", "BatchWriteItem:Put", {"pk": "USER#9", "sk": "ORDER#3"}),  # "PutRequest"/"Key"
        ("Orders", "BatchWriteItem:Delete", {"pk": "USER#1", "sk": "ORDER#1"}),
        ("Users", "BatchWriteItem:Delete", {"pk": "USER#2"}),  # "DeleteRequest"/"Key"
    ]
    assert all(i.access is W for i in call.items)


def test_batch_write_item_list_form() -> None:
    params = {
        "requestItems": [
            {"tableName": "A", "putRequest": {"key": {"pk": "1"}}},
            {"B": [{"deleteRequest": {"key": {"pk": "2"}}}]},
            {"TableName": "C", "requests": [{"DeleteRequest": {"Key": {"pk": "3"}}}]},
        ]
    }
    call = norm(minimal("BatchWriteItem", params))
    assert call.tables == ("A", "B", "C")
    assert [(i.table, i.operation, i.key) for i in call.items] == [
        ("A", "BatchWriteItem:Put", {"pk": "1"}),
        ("B", "BatchWriteItem:Delete", {"pk": "2"}),
        ("C", "BatchWriteItem:Delete", {"pk": "3"}),
    ]


def test_transact_get_items() -> None:
    call = norm(load("shape_transact_get_items.json"))
    assert call.access is R
    assert call.tables == ("Orders", "Users")
    assert [(i.table, i.operation, i.access, i.key) for i in call.items] == [
        ("Orders", "TransactGetItems:Get", R, {"pk": "USER#1", "sk": "ORDER#1"}),
        ("Users", "TransactGetItems:Get", R, {"pk": "USER#1"}),
    ]


def test_transact_write_items_api_shape() -> None:
    params = {
        "TransactItems": [
            {"Put": {"TableName": "A", "Item": ["pk", "x"]}},
            {"Update": {"TableName": "B", "Key": {"pk": "2"}, "UpdateExpression": "SET x = :x"}},
            {"delete": {"tableName": "A", "key": {"pk": "3"}}},
            {"ConditionCheck": {"TableName": "C", "Key": {"pk": "4"}}},
        ]
    }
    call = norm(minimal("TransactWriteItems", params))
    assert call.access is W
    assert call.tables == ("A", "B", "C")
    assert [(i.table, i.operation, i.access, i.key) for i in call.items] == [
        ("A", "TransactWriteItems:Put", W, None),
        ("B", "TransactWriteItems:Update", W, {"pk": "2"}),
        ("A", "TransactWriteItems:Delete", W, {"pk": "3"}),
        ("C", "TransactWriteItems:ConditionCheck", R, {"pk": "4"}),
    ]


def test_transact_item_without_table_uses_resources() -> None:
    params = {"requestItems": [{"operation": "Get", "key": {"pk": "1"}}]}
    call = norm(minimal("TransactGetItems", params))
    assert call.items[0].table == "T"


def test_execute_transaction() -> None:
    params = {
        "transactStatements": [
            {"statement": "EXISTS(SELECT * FROM Accounts WHERE id = 'a1' AND balance = ***(Redacted))"},
            {"Statement": "UPDATE Accounts SET balance = ***(Redacted) WHERE id = 'a2'"},
        ]
    }
    call = norm(minimal("ExecuteTransaction", params))
    assert call.access is W
    assert call.tables == ("Accounts",)
    assert [(i.operation, i.access, i.key) for i in call.items] == [
        ("ExecuteTransaction:EXISTS", R, {"id": "a1"}),
        ("ExecuteTransaction:UPDATE", W, {"id": "a2"}),
    ]


def test_batch_execute_statement_all_reads_is_read() -> None:
    params = {"requestItems": [{"statement": "SELECT * FROM T WHERE pk = 'a'"}, {"statement": "SELECT * FROM U"}]}
    call = norm(minimal("BatchExecuteStatement", params))
    assert call.access is R
    assert call.tables == ("T", "U")
    assert [i.full_scan for i in call.items] == [False, True]
    assert call.is_scan is True


@pytest.mark.parametrize(
    ("statement", "access", "operation", "full_scan"),
    [
        ("SELECT * FROM T", R, "ExecuteStatement:SELECT", True),
        ("SELECT * FROM T WHERE pk = 'x'", R, "ExecuteStatement:SELECT", False),
        ("INSERT INTO T VALUE {'pk': ***(Redacted)}", W, "ExecuteStatement:INSERT", False),
        ("UPDATE T SET a = 1 WHERE pk = 'x'", W, "ExecuteStatement:UPDATE", False),
        ("DELETE FROM T WHERE pk = 'x'", W, "ExecuteStatement:DELETE", False),
        ("EXISTS(SELECT * FROM T WHERE pk = 'x')", R, "ExecuteStatement:EXISTS", False),
    ],
)
def test_execute_statement_access_from_verb(statement: str, access: Access, operation: str, full_scan: bool) -> None:
    # readOnly deliberately contradicts the verb: it must be ignored.
    call = norm(minimal("ExecuteStatement", {"statement": statement}, readOnly=access is W))
    assert call.access is access
    assert call.items[0].operation == operation
    assert call.items[0].full_scan is full_scan
    assert call.is_scan is full_scan


def test_execute_statement_index() -> None:
    call = norm(minimal("ExecuteStatement", {"statement": 'SELECT * FROM "T"."byEmail" WHERE email = \'e\''}))
    assert call.index == "byEmail"
    assert call.items[0].index == "byEmail"
    assert call.items[0].key == {"email": "e"}


def test_execute_statement_unparseable_falls_back_to_resources() -> None:
    call = norm(minimal("ExecuteStatement", {"statement": "garbage"}))
    assert call.items[0].operation == "ExecuteStatement:UNKNOWN"
    assert call.tables == ("T",)
    assert call.access is R


@pytest.mark.parametrize("readonly", [True, False])
def test_readonly_never_decides_access(readonly: bool) -> None:
    assert norm(minimal("GetItem", readOnly=readonly)).access is R
    assert norm(minimal("PutItem", readOnly=readonly)).access is W


# --- case-insensitive keys --------------------------------------------------------------------------------


def test_single_item_capitalised_keys() -> None:
    call = norm(minimal("GetItem", {"TableName": "T2", "Key": {"PK": "A", "sk": 1}}))
    assert call.tables == ("T2",)
    assert call.items[0].key == {"PK": "A", "sk": 1}  # attribute names keep their case


def test_single_item_lowercase_keys() -> None:
    call = norm(minimal("DeleteItem", {"tablename": "T3", "KEY": {"pk": "a"}}))
    assert call.tables == ("T3",)
    assert call.items[0].key == {"pk": "a"}


def test_scan_capitalised_keys() -> None:
    call = norm(minimal("Scan", {"TableName": "T", "IndexName": "gsi1", "Segment": 0, "TotalSegments": "4"}))
    assert call.index == "gsi1"
    assert (call.scan_segment, call.scan_total_segments) == (0, 4)


def test_batch_get_capitalised_keys() -> None:
    params = {"RequestItems": {"Orders": {"Keys": [{"pk": "1"}]}, "orders": {"keys": [{"pk": "2"}]}}}
    call = norm(minimal("BatchGetItem", params))
    assert call.tables == ("Orders", "orders")  # table names are case-sensitive and kept as logged


def test_statement_capitalised_key() -> None:
    call = norm(minimal("ExecuteStatement", {"Statement": "DELETE FROM T WHERE pk = 'a'"}))
    assert call.access is W
    assert call.items[0].key == {"pk": "a"}


def test_key_not_a_dict_is_none() -> None:
    call = norm(minimal("GetItem", {"tableName": "T", "key": ["pk"]}))
    assert call.items[0].key is None


def test_put_item_without_key() -> None:
    call = norm(minimal("PutItem", {"tableName": "T", "item": ["pk", "a"]}))
    assert call.items[0].key is None
    assert call.truncated is False


# --- table name -------------------------------------------------------------------------------------------


def test_table_from_resources_when_not_in_parameters() -> None:
    call = norm(minimal("GetItem", {"key": {"pk": "a"}}))
    assert call.tables == ("T",)
    assert call.items[0].key == {"pk": "a"}


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:dynamodb:eu-west-1:111122223333:table/Orders",
        "arn:aws:dynamodb:eu-west-1:111122223333:table/Orders/index/byStatus",
        "arn:aws:dynamodb:eu-west-1:111122223333:table/Orders/stream/2021-04-15T04:02:47.428",
    ],
)
def test_table_from_arn_suffixes(arn: str) -> None:
    record = minimal("Query", {"indexName": "byStatus"}, resources=[{"type": "AWS::DynamoDB::Table", "ARN": arn}])
    assert norm(record).tables == ("Orders",)


def test_parameters_table_wins_over_resources() -> None:
    # The AWS samples' ARNs carry another account: requestParameters.tableName is taken first.
    record = minimal("GetItem", {"tableName": "Real", "key": {"pk": 1}})
    assert norm(record).tables == ("Real",)


# --- principal --------------------------------------------------------------------------------------------


def test_principal_iam_user() -> None:
    call = norm(minimal())
    assert call.principal == "arn:aws:iam::111122223333:user/alice"
    assert call.principal_type == "IAMUser"
    assert call.session_name is None


def test_principal_root() -> None:
    identity = {"type": "Root", "arn": "arn:aws:iam::111122223333:root", "accountId": "111122223333"}
    call = norm(minimal(userIdentity=identity))
    assert (call.principal, call.principal_type) == ("arn:aws:iam::111122223333:root", "Root")


def test_principal_aws_service() -> None:
    identity = {"type": "AWSService", "invokedBy": "dynamodb.application-autoscaling.amazonaws.com"}
    call = norm(minimal(userIdentity=identity))
    assert call.principal == "dynamodb.application-autoscaling.amazonaws.com"
    assert call.principal_type == "AWSService"
    call = norm(minimal(userIdentity={"type": "AWSService"}))
    assert call.principal == "AWSService"


def test_principal_assumed_role_uses_issuer_and_session() -> None:
    identity = {
        "type": "AssumedRole",
        "arn": "arn:aws:sts::111122223333:assumed-role/app-role/i-0abc123",
        "accountId": "111122223333",
        "sessionContext": {"sessionIssuer": {"type": "Role", "arn": "arn:aws:iam::111122223333:role/app-role"}},
    }
    call = norm(minimal(userIdentity=identity))
    assert call.principal == "arn:aws:iam::111122223333:role/app-role"
    assert call.session_name == "i-0abc123"
    assert call.principal_type == "AssumedRole"


@pytest.mark.parametrize(
    ("arn", "principal"),
    [
        # the IAM user guide's assumed-role ARN format: the session's role is the principal, whatever the session
        ("arn:aws:sts::111122223333:assumed-role/r/s", "arn:aws:iam::111122223333:role/r"),
        ("arn:aws:sts::111122223333:assumed-role/r/i-0abc", "arn:aws:iam::111122223333:role/r"),
        ("arn:aws-cn:sts::111122223333:assumed-role/ecs-task/7f3e", "arn:aws-cn:iam::111122223333:role/ecs-task"),
        # not an assumed-role ARN: kept as it is
        ("arn:aws:iam::111122223333:user/alice", "arn:aws:iam::111122223333:user/alice"),
        ("arn:aws:sts::111122223333:assumed-role//s", "arn:aws:sts::111122223333:assumed-role//s"),
        ("not an arn", "not an arn"),
    ],
)
def test_principal_assumed_role_without_issuer_is_the_sessions_role(arn: str, principal: str) -> None:
    call = norm(minimal(userIdentity={"type": "AssumedRole", "arn": arn}))
    assert call.principal == principal
    assert call.session_name == (arn.rsplit("/", 1)[1] or None if "/" in arn else None)


def test_missing_user_identity() -> None:
    record = minimal()
    del record["userIdentity"]
    call = norm(record)
    assert (call.principal, call.principal_type, call.session_name) == (None, None, None)
    assert call.account == "111122223333"  # recipientAccountId


def test_account_falls_back_to_identity_account() -> None:
    record = minimal()
    del record["recipientAccountId"]
    assert norm(record).account == "111122223333"
    del record["userIdentity"]
    assert norm(record).account is None


# --- time -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2019-01-19T15:41:54Z", datetime(2019, 1, 19, 15, 41, 54, tzinfo=UTC)),
        ("2019-01-19T15:41:54+00:00", datetime(2019, 1, 19, 15, 41, 54, tzinfo=UTC)),
        ("2019-01-19T17:41:54+02:00", datetime(2019, 1, 19, 15, 41, 54, tzinfo=UTC)),
        ("2019-01-19 15:41:54", datetime(2019, 1, 19, 15, 41, 54, tzinfo=UTC)),  # naive: taken as UTC
        ("2019-01-19T15:41:54.123Z", datetime(2019, 1, 19, 15, 41, 54, 123000, tzinfo=UTC)),
    ],
)
def test_event_time_is_aware_utc(text: str, expected: datetime) -> None:
    call = norm(minimal(eventTime=text))
    assert call.time == expected
    assert call.time.utcoffset() is not None
    assert call.time.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


# --- truncated requestParameters --------------------------------------------------------------------------


def test_truncated_parameters_string_uses_resources() -> None:
    call = norm(minimal("PutItem", '{"tableName": "T", "key": {"pk": "a"}, "item": ["pk", "a", "b", "c", '))
    assert call.truncated is True
    assert call.tables == ("T",)
    assert call.items[0].key is None


def test_truncated_parameters_string_without_resources_reads_table_from_text() -> None:
    record = minimal("BatchWriteItem", '{"requestItems": [{"tableName": "Orders", "putRequest": {"item": ["pk", ')
    del record["resources"]
    call = norm(record)
    assert call.truncated is True
    assert call.tables == ("Orders",)
    assert call.items[0].operation == "BatchWriteItem"


def test_truncated_parameters_string_without_any_table_is_malformed() -> None:
    record = minimal("GetItem", '{"key": {"pk": "a"}, "projectionExpr')
    del record["resources"]
    with pytest.raises(MalformedRecordError, match="no table name"):
        normalize_record(record)


def test_missing_parameters_is_truncated() -> None:
    record = minimal("GetItem")
    del record["requestParameters"]
    call = norm(record)
    assert call.truncated is True
    assert call.tables == ("T",)


def test_cut_batch_list_keeps_readable_items() -> None:
    params = {"requestItems": [{"tableName": "T", "keys": [{"pk": "1"}, {"pk": "2"}]}, '{"tableName": "U", "ke']}
    record = minimal(
        "BatchGetItem",
        params,
        resources=[
            {"type": "AWS::DynamoDB::Table", "ARN": "arn:aws:dynamodb:eu-west-1:111122223333:table/T"},
            {"type": "AWS::DynamoDB::Table", "ARN": "arn:aws:dynamodb:eu-west-1:111122223333:table/U"},
        ],
    )
    call = norm(record)
    assert call.truncated is True
    assert [i.key for i in call.items] == [{"pk": "1"}, {"pk": "2"}]
    assert call.tables == ("T", "U")  # U is known from resources even though its items were cut


def test_cut_transact_list() -> None:
    params = {"requestItems": [{"operation": "Put", "tableName": "T", "key": {"pk": "1"}}, '{"operation": "Upd']}
    call = norm(minimal("TransactWriteItems", params))
    assert call.truncated is True
    assert len(call.items) == 1


def test_batch_request_items_as_text() -> None:
    call = norm(minimal("BatchWriteItem", {"requestItems": '{"T": [{"putRequest": {"item": ["pk", '}))
    assert call.truncated is True
    assert call.tables == ("T",)
    assert [(i.table, i.operation, i.key) for i in call.items] == [("T", "BatchWriteItem", None)]


def test_batch_statements_missing() -> None:
    call = norm(minimal("BatchExecuteStatement", {}))
    assert call.truncated is True
    assert call.tables == ("T",)


# --- skipped records ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["s3.amazonaws.com", "dax.amazonaws.com", None, 42])
def test_other_event_sources_are_skipped(source: Any) -> None:
    record = minimal(eventSource=source)
    assert normalize_record(record) is None
    # even when the rest of the record is unusable
    assert normalize_record({"eventSource": source}) is None


def test_management_events_are_skipped() -> None:
    assert normalize_record(minimal("DescribeTable", eventCategory="Management")) is None
    assert normalize_record(minimal("UpdateTable", managementEvent=True)) is None
    assert normalize_record(minimal("SomethingNew", eventCategory="Management", managementEvent=True)) is None


@pytest.mark.parametrize("envelope", [{"eventCategory": "Management"}, {"managementEvent": True}])
def test_data_plane_operation_labelled_management_is_analysed_and_flagged(envelope: dict[str, Any]) -> None:
    call = normalize_record(minimal("GetItem", **envelope))
    assert call is not None
    assert call.operation == "GetItem"
    assert call.management_labelled is True
    assert call.items[0].key is not None
    plain = normalize_record(minimal("GetItem"))
    assert plain is not None and plain.management_labelled is False


@pytest.mark.parametrize("name", sorted(STREAM_READ_OPERATIONS))
def test_stream_reads_are_skipped(name: str) -> None:
    assert normalize_record(minimal(name, {"streamArn": "arn:aws:dynamodb:r:a:table/T/stream/x"})) is None


@pytest.mark.parametrize("name", ["CreateTable", "DescribeTable", "UpdateTable", "ListTables", "DeleteTable"])
def test_control_plane_operations_are_skipped(name: str) -> None:
    # skipped even if a record claims to be a data event
    assert normalize_record(minimal(name)) is None
    assert normalize_record(minimal(name, eventCategory=None, managementEvent=None)) is None


def test_operation_sets_are_disjoint() -> None:
    assert not DATA_PLANE_OPERATIONS & STREAM_READ_OPERATIONS
    assert not DATA_PLANE_OPERATIONS & CONTROL_PLANE_OPERATIONS
    assert not STREAM_READ_OPERATIONS & CONTROL_PLANE_OPERATIONS
    assert {"GetItem", "ExecuteTransaction", "TransactGetItems"} <= DATA_PLANE_OPERATIONS


@pytest.mark.parametrize(
    ("name", "access"),
    [
        ("GetItemsFuture", R),
        ("PutItems", W),
        ("UpdateSomething", W),
        ("DeleteRange", W),
        ("BatchWriteFoo", W),
        ("TransactWriteBar", W),
        ("ScanParallel", R),
    ],
)
def test_unknown_data_operation(name: str, access: Access) -> None:
    call = norm(minimal(name, {"TableName": "X", "key": {"pk": "a"}}))
    assert call.operation == name
    assert call.access is access
    assert [(i.table, i.operation, i.access, i.key) for i in call.items] == [("X", name, access, None)]


def test_unknown_operation_without_data_category_is_skipped() -> None:
    assert normalize_record(minimal("SomethingNew", eventCategory=None)) is None


# --- malformed records ------------------------------------------------------------------------------------


@pytest.mark.parametrize("record", [None, [], "text", 42, [minimal()]])
def test_not_an_object(record: Any) -> None:
    with pytest.raises(MalformedRecordError, match="not a JSON object"):
        normalize_record(record)


def test_mapping_that_is_not_a_dict_is_accepted() -> None:
    call = norm(MappingProxyType(minimal()))
    assert call.operation == "GetItem"


@pytest.mark.parametrize("value", [None, "", 17])
def test_missing_event_name(value: Any) -> None:
    with pytest.raises(MalformedRecordError, match="missing eventName"):
        normalize_record(minimal(eventName=value))


@pytest.mark.parametrize("value", [None, "", 17])
def test_missing_event_id(value: Any) -> None:
    with pytest.raises(MalformedRecordError, match="missing eventID"):
        normalize_record(minimal(eventID=value))


@pytest.mark.parametrize("value", [None, ""])
def test_missing_event_time(value: Any) -> None:
    record = minimal(eventTime=value)
    with pytest.raises(MalformedRecordError, match="missing eventTime"):
        normalize_record(record)
    del record["eventTime"]
    with pytest.raises(MalformedRecordError, match="missing eventTime"):
        normalize_record(record)


@pytest.mark.parametrize("value", ["yesterday", "2019-13-45T00:00:00Z", 1547912514])
def test_invalid_event_time(value: Any) -> None:
    with pytest.raises(MalformedRecordError, match="invalid eventTime"):
        normalize_record(minimal(eventTime=value))


@pytest.mark.parametrize("params", [["tableName", "T"], 42, True])
def test_parameters_of_wrong_type(params: Any) -> None:
    with pytest.raises(MalformedRecordError, match="requestParameters is a"):
        normalize_record(minimal("GetItem", params))


def test_no_table_anywhere() -> None:
    record = minimal("GetItem", {"key": {"pk": "a"}})
    del record["resources"]
    with pytest.raises(MalformedRecordError, match="no table name"):
        normalize_record(record)


def test_no_table_for_batch() -> None:
    record = minimal("BatchGetItem", {"requestItems": []})
    record["resources"] = []
    with pytest.raises(MalformedRecordError, match="no table name"):
        normalize_record(record)


def test_unforeseen_structure_is_malformed_not_a_crash() -> None:
    # a non-string key where an object with string keys is expected
    params = {"requestItems": [{1: "x"}]}
    with pytest.raises(MalformedRecordError):
        normalize_record(minimal("TransactWriteItems", params))


def test_malformed_error_is_auditor_error() -> None:
    from auditor.exceptions import AuditorError

    assert issubclass(MalformedRecordError, AuditorError)


# --- no mutation --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_record_is_not_mutated(fixture: str) -> None:
    record = load(fixture)
    before = copy.deepcopy(record)
    normalize_record(record)
    assert record == before


# --- the fast path agrees with the general path --------------------------------------------------------------
#
# normalize_record reads the usual record shapes inline and hands everything else to the general reader. These
# records sit on the border between the two: both paths must give the same call, or the same error.


def _outcome(fn: Any, record: Any) -> tuple[str, Any]:
    try:
        return "call", fn(record)
    except MalformedRecordError as exc:
        return "error", str(exc)


def _assert_paths_agree(record: Any) -> tuple[str, Any]:
    fast = _outcome(normalize_record, record)
    general = _outcome(_normalize_general, record)
    assert fast == general
    return fast


def complete(name: str = "GetItem", params: Any = None, **envelope: Any) -> dict[str, Any]:
    """``minimal`` plus the envelope fields real records always carry (what the fast path expects)."""
    return minimal(name, params, **{"userAgent": "aws-cli/2", "sourceIPAddress": "192.0.2.1", **envelope})


_ASSUMED_ROLE = {
    "type": "AssumedRole",
    "arn": "arn:aws:sts::111122223333:assumed-role/app/session-1",
    "accountId": "111122223333",
    "sessionContext": {"sessionIssuer": {"type": "Role", "arn": "arn:aws:iam::111122223333:role/app"}},
}


class _Str(str):
    """A str subclass: the fast path only accepts exact ``str`` values, like the type checks it mirrors."""


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("GetItem", {"tableName": "A", "key": {"pk": "1"}}),
        ("GetItem", {"tableName": "A", "key": {"pk": "1"}, "TableName": "B"}),  # exact key first: A
        ("GetItem", {"TableName": "B", "tableName": "A", "key": {"pk": "1"}}),
        ("GetItem", {"tableName": "A", "Key": {"pk": "1"}}),
        ("GetItem", {"tableName": "A", "key": None, "Key": {"pk": "1"}}),
        ("GetItem", {"tableName": "", "key": {"pk": "1"}}),
        ("GetItem", {"tableName": 7, "key": {"pk": "1"}}),
        ("PutItem", {"tableName": "A", "key": ["pk"]}),
        ("PutItem", {"tableName": _Str("A"), "key": {"pk": "1"}}),
        ("Query", {"tableName": "A", "indexName": "gsi"}),
        ("Query", {"tableName": "A", "TableName": "B"}),  # lower-cased view: the last spelling wins
        ("Query", {"TableName": "B", "tableName": "A", "indexName": ""}),
        ("Query", {"tableName": "A", "indexName": 3}),
        ("Query", {"tableName": "A", "someNewParameter": 1, "IndexName": "gsi"}),
        ("Scan", {"tableName": "A", "segment": "3", "totalSegments": True}),
        ("Scan", {"tableName": "A", "segment": 1, "totalSegments": "x", "Segment": 2}),
        ("ExecuteStatement", {"statement": "SELECT * FROM T WHERE pk = 'a'", "Statement": "DELETE FROM U"}),
        ("ExecuteStatement", {"statement": "garbage"}),
        ("ExecuteStatement", {"statement": 5}),
        ("ExecuteStatement", {"statement": "INSERT INTO \"T\" VALUE {'pk': ***(Redacted)}", "parameters": []}),
        ("BatchGetItem", {"requestItems": {"A": {"keys": [{"pk": "1"}], "Keys": [{"pk": "2"}]}}}),
        ("BatchGetItem", {"requestItems": {"A": {"key": {"pk": "1"}}, "B": [{"pk": "2"}], "C": {"keys": []}}}),
        ("BatchGetItem", {"requestItems": {"A": {"keys": [{"pk": "1"}, "cut"]}, "B": "text", "": {"keys": []}}}),
        ("BatchGetItem", {"requestItems": {"A": {"keys": {"pk": "1"}}, "B": {"consistentRead": True}}}),
        ("BatchGetItem", {"requestItems": {"A": {"keys": [{"pk": "1"}, ["cut"]]}}}),
        ("BatchGetItem", {"requestItems": {}, "RequestItems": {"A": {"keys": [{"pk": "1"}]}}}),
        ("BatchWriteItem", {"requestItems": {"A": [{"putRequest": {"key": {"pk": "1"}, "item": ["pk"]}}]}}),
        ("BatchWriteItem", {"requestItems": {"A": [{"putRequest": {"key": {"pk": "1"}}, "PutRequest": {}}]}}),
        ("BatchWriteItem", {"requestItems": {"A": [{"putRequest": {"Key": {"pk": "1"}, "key": {"pk": "2"}}}]}}),
        ("BatchWriteItem", {"requestItems": {"A": [{"deleteRequest": ["pk"]}, {"putRequest": {"key": "k"}}]}}),
        ("BatchWriteItem", {"requestItems": {"A": [], "B": [{"deleteRequest": {"key": {"pk": "2"}}}]}}),
        ("BatchWriteItem", {"requestItems": {"A": [{"operation": "put", "key": {"pk": "1"}}, "cut"]}}),
        ("BatchWriteItem", {"requestItems": {"A": {"requests": [{"putRequest": {"key": {"pk": "1"}}}]}}}),
        ("BatchWriteItem", {"requestItems": {"A": []}}),
        ("TransactWriteItems", {"requestItems": [{"operation": "Put", "tableName": "A", "Key": {"pk": "1"}}]}),
        ("TransactWriteItems", {"requestItems": [{"operation": "put", "TableName": "A", "tableName": "B"}]}),
        ("TransactWriteItems", {"requestItems": [{"operation": "Weird", "tableName": "A", "key": "k"}]}),
        ("TransactWriteItems", {"requestItems": [{"Put": {"TableName": "A"}}], "transactItems": []}),
        ("TransactWriteItems", {"transactItems": [{"operation": "Delete", "tableName": "A"}]}),
        ("TransactWriteItems", {"requestItems": [{1: "x"}]}),  # fast reader raises: the general path words it
        ("TransactGetItems", {"requestItems": [{"operation": "Get", "tableName": "A", "key": {"pk": "1"}}]}),
        ("TransactGetItems", {"requestItems": [{"operation": "Get", "key": {"pk": "1"}}]}),
        ("BatchExecuteStatement", {"statements": [{"statement": "SELECT * FROM T"}]}),
        ("DescribeTable", {"tableName": "A"}),
        ("PutSomething", {"tableName": "A"}),
    ],
)
def test_fast_and_general_paths_agree_on_parameters(name: str, params: Any) -> None:
    _assert_paths_agree(complete(name, params))


@pytest.mark.parametrize(
    "envelope",
    [
        {},
        {"userIdentity": _ASSUMED_ROLE},
        {"userIdentity": {**_ASSUMED_ROLE, "sessionContext": {"sessionIssuer": {"arn": ""}}}},
        {"userIdentity": {**_ASSUMED_ROLE, "sessionContext": {"sessionIssuer": []}}},
        {"userIdentity": {**_ASSUMED_ROLE, "sessionContext": ["x"]}},
        {"userIdentity": {**_ASSUMED_ROLE, "sessionContext": MappingProxyType({"sessionIssuer": {"arn": "r"}})}},
        {"userIdentity": {**_ASSUMED_ROLE, "arn": 5}},
        {"userIdentity": {**_ASSUMED_ROLE, "arn": "no-slash"}},
        {"userIdentity": {**_ASSUMED_ROLE, "arn": "ends-with-slash/"}},
        {"userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/r/s"}},
        {"userIdentity": {"type": "AWSService", "arn": None, "invokedBy": "backup.amazonaws.com"}},
        {"userIdentity": {"type": "", "arn": ""}},
        {"userIdentity": {"type": 3, "arn": ["x"]}},
        {"userIdentity": {"arn": "arn:aws:iam::1:user/u"}},
        {"userIdentity": ["not", "a", "dict"], "recipientAccountId": ""},
        {"userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::1:u", "accountId": "9"}, "recipientAccountId": 1},
        {"awsRegion": 1, "userAgent": None, "sourceIPAddress": ["10.0.0.1"]},
        {"errorCode": "ValidationException", "errorMessage": 5},
        {"errorMessage": "no code"},
        {"eventTime": ["2024-05-01T10:00:00Z"]},
        {"eventTime": 1714557600},
        {"eventTime": "2024-05-01T12:00:00+02:00"},
        {"eventName": _Str("GetItem")},
        {"eventID": _Str("e")},
        {"eventCategory": "Management"},
        {"eventCategory": None},
        {"managementEvent": True},
        {"eventSource": _Str("dynamodb.amazonaws.com")},
        {"eventSource": "s3.amazonaws.com"},
        {"eventSource": None},
    ],
)
def test_fast_and_general_paths_agree_on_the_envelope(envelope: dict[str, Any]) -> None:
    record = complete("GetItem", **envelope)
    _assert_paths_agree(record)
    _assert_paths_agree({**record, "eventName": "Query", "requestParameters": {"tableName": "A"}})


@pytest.mark.parametrize(
    "field", ["eventCategory", "managementEvent", "userAgent", "recipientAccountId", "eventID", "awsRegion"]
)
def test_missing_envelope_field_takes_the_general_path(field: str) -> None:
    record = complete("GetItem")
    assert _assert_paths_agree(record)[0] == "call"
    del record[field]
    _assert_paths_agree(record)


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_fast_and_general_paths_agree_on_fixtures(fixture: str) -> None:
    _assert_paths_agree(load(fixture))


def test_fast_and_general_paths_agree_on_generated_traffic() -> None:
    from tests.factories import planted_workload

    records = planted_workload(datetime(2024, 5, 1, tzinfo=UTC), hours=0.05)
    assert len(records) > 500
    for record in records:
        _assert_paths_agree(record)


def test_camel_keys_do_not_collide_when_lower_cased() -> None:
    # The fast readers rely on it: in a dict whose keys are all in _CAMEL_KEYS, an exact get equals a get on the
    # general path's lower-cased view.
    assert len({key.lower() for key in _CAMEL_KEYS}) == len(_CAMEL_KEYS)
    assert all(key != key.lower() or key.isalpha() for key in _CAMEL_KEYS)


def test_session_cache_stays_bounded() -> None:
    record = minimal("GetItem")
    for i in range(_SESSION_CACHE_MAX + 10):
        record["userIdentity"] = {**_ASSUMED_ROLE, "arn": f"arn:aws:sts::111122223333:assumed-role/app/s-{i}"}
        assert norm(record).session_name == f"s-{i}"
        assert len(_SESSION_CACHE) <= _SESSION_CACHE_MAX
    for i in range(_SESSION_CACHE_MAX + 10):  # no issuer logged: the role of each session's ARN, cached and bounded
        record["userIdentity"] = {"type": "AssumedRole", "arn": f"arn:aws:sts::111122223333:assumed-role/r{i}/s"}
        assert norm(record).principal == f"arn:aws:iam::111122223333:role/r{i}"
        assert len(_ROLE_CACHE) <= _SESSION_CACHE_MAX


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("GetItem", {"tableName": "T", "key": {"pk": "a"}}),
        ("DeleteItem", {"tableName": "T", "key": {"pk": "a"}, "conditionExpression": "attribute_exists(pk)"}),
        ("Query", {"tableName": "T", "indexName": "gsi", "keyConditionExpression": "#k = :k", "limit": 5}),
        ("Scan", {"tableName": "T", "segment": 0, "totalSegments": 4}),
        ("ExecuteStatement", {"statement": "SELECT * FROM T WHERE pk = 'a'"}),
        ("BatchGetItem", {"requestItems": {"T": {"keys": [{"pk": "a"}, {"pk": "b"}]}, "U": {"key": {"pk": "c"}}}}),
        ("BatchWriteItem", {"requestItems": {"T": [{"putRequest": {"key": {"pk": "a"}, "item": ["pk"]}}]}}),
        ("TransactWriteItems", {"requestItems": [{"operation": "Put", "TableName": "T", "Key": {"pk": "a"}}]}),
        ("TransactGetItems", {"transactItems": [{"operation": "Get", "tableName": "T", "key": {"pk": "a"}}]}),
    ],
)
def test_usual_records_never_reach_the_general_path(
    name: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from auditor.kernel import normalize as module

    expected = norm(complete(name, params, errorCode="E", userIdentity=_ASSUMED_ROLE))

    def fail(*args: Any) -> Any:
        raise AssertionError("general path taken")

    monkeypatch.setattr(module, "_normalize_general", fail)
    monkeypatch.setattr(module, "_read_request", fail)
    for identity in (_ASSUMED_ROLE, {"type": "IAMUser", "arn": "arn:aws:iam::111122223333:user/u"}):
        call = norm(complete(name, params, errorCode="E", userIdentity=identity))
        assert call.tables == expected.tables
        assert call.items == expected.items
        assert call.error_code == "E"


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("GetItem", {"tableName": "T", "key": {"pk": "a"}, "consistentRead": True}, True),
        ("GetItem", {"tableName": "T", "key": {"pk": "a"}, "consistentRead": False}, False),
        ("GetItem", {"tableName": "T", "key": {"pk": "a"}}, None),  # not logged: unknown
        ("GetItem", {"TableName": "T", "Key": {"pk": "a"}, "ConsistentRead": False}, False),  # another spelling
        ("GetItem", {"tableName": "T", "key": {"pk": "a"}, "consistentRead": "false"}, None),  # not a boolean
        ("Query", {"tableName": "T", "keyConditionExpression": "#p = :v", "consistentRead": True}, True),
        ("Scan", {"tableName": "T", "consistentRead": False}, False),
        ("PutItem", {"tableName": "T", "key": {"pk": "a"}, "consistentRead": True}, None),  # not a read
    ],
)
def test_consistent_read_is_taken_as_logged(name: str, params: dict[str, Any], expected: bool | None) -> None:
    call = norm(minimal(name, params))
    assert call.consistent_read is expected
    _assert_paths_agree(minimal(name, params))

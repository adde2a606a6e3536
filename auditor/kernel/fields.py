"""What the normaliser's two paths share: the operations it knows, the record fields as the record reader's dicts
hold their names, and the event-time cache.

The fast path is :func:`auditor.kernel.normalize.normalize_record`, the general (reference) path
:mod:`auditor.kernel.general`; ``docs/kernel.md`` describes both.
"""

from __future__ import annotations

import operator
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Final

import orjson

from auditor.exceptions import MalformedRecordError
from auditor.kernel.calls import Access, ItemAccess, Statement

__all__ = [
    "CONTROL_PLANE_OPERATIONS",
    "DATA_PLANE_OPERATIONS",
    "DYNAMODB_EVENT_SOURCE",
    "STREAM_READ_OPERATIONS",
]

DYNAMODB_EVENT_SOURCE: Final = "dynamodb.amazonaws.com"


class _Kind(Enum):
    """How the general path reads an operation's ``requestParameters``."""

    SINGLE = 0
    QUERY = 1
    SCAN = 2
    BATCH_GET = 3
    BATCH_WRITE = 4
    TRANSACT_WRITE = 5
    TRANSACT_GET = 6
    STATEMENT = 7
    BATCH_STATEMENT = 8
    UNKNOWN_DATA = 9


#: The data-plane operations and how each is read.
_KIND: Final[dict[str, _Kind]] = {
    "GetItem": _Kind.SINGLE,
    "PutItem": _Kind.SINGLE,
    "UpdateItem": _Kind.SINGLE,
    "DeleteItem": _Kind.SINGLE,
    "Query": _Kind.QUERY,
    "Scan": _Kind.SCAN,
    "BatchGetItem": _Kind.BATCH_GET,
    "BatchWriteItem": _Kind.BATCH_WRITE,
    "TransactWriteItems": _Kind.TRANSACT_WRITE,
    "TransactGetItems": _Kind.TRANSACT_GET,
    "ExecuteStatement": _Kind.STATEMENT,
    "BatchExecuteStatement": _Kind.BATCH_STATEMENT,
    "ExecuteTransaction": _Kind.BATCH_STATEMENT,
}

#: The DynamoDB item-level operations that are normalised into ``ApiCall`` s.
DATA_PLANE_OPERATIONS: Final[frozenset[str]] = frozenset(_KIND)

#: DynamoDB Streams reads: logged as data events on dynamodb.amazonaws.com, but they are not table traffic.
STREAM_READ_OPERATIONS: Final[frozenset[str]] = frozenset(
    {"GetRecords", "GetShardIterator", "DescribeStream", "ListStreams"}
)

#: Known DynamoDB control-plane operations (management events). Any name outside ``DATA_PLANE_OPERATIONS`` is
#: skipped unless the record says ``eventCategory: Data``; this list makes the common ones explicit.
CONTROL_PLANE_OPERATIONS: Final[frozenset[str]] = frozenset(
    {
        "CreateTable",
        "DeleteTable",
        "DescribeTable",
        "UpdateTable",
        "ListTables",
        "DescribeLimits",
        "DescribeEndpoints",
        "DescribeTimeToLive",
        "UpdateTimeToLive",
        "CreateBackup",
        "DeleteBackup",
        "DescribeBackup",
        "ListBackups",
        "RestoreTableFromBackup",
        "RestoreTableToPointInTime",
        "DescribeContinuousBackups",
        "UpdateContinuousBackups",
        "CreateGlobalTable",
        "UpdateGlobalTable",
        "DescribeGlobalTable",
        "ListGlobalTables",
        "DescribeGlobalTableSettings",
        "UpdateGlobalTableSettings",
        "DescribeTableReplicaAutoScaling",
        "UpdateTableReplicaAutoScaling",
        "TagResource",
        "UntagResource",
        "ListTagsOfResource",
        "DescribeContributorInsights",
        "UpdateContributorInsights",
        "ListContributorInsights",
        "ExportTableToPointInTime",
        "DescribeExport",
        "ListExports",
        "ImportTable",
        "DescribeImport",
        "ListImports",
        "DescribeKinesisStreamingDestination",
        "EnableKinesisStreamingDestination",
        "DisableKinesisStreamingDestination",
        "UpdateKinesisStreamingDestination",
        "GetResourcePolicy",
        "PutResourcePolicy",
        "DeleteResourcePolicy",
        "DescribeReservedCapacity",
        "DescribeReservedCapacityOfferings",
        "PurchaseReservedCapacityOfferings",
    }
)

_WRITE_PREFIXES: Final = ("Put", "Update", "Delete", "BatchWrite", "TransactWrite")
_WRITE_VERBS: Final = frozenset({"INSERT", "UPDATE", "DELETE"})

#: Transaction operation names, lower-cased -> canonical.
_TRANSACT_OPS: Final[dict[str, str]] = {
    "put": "Put",
    "update": "Update",
    "delete": "Delete",
    "conditioncheck": "ConditionCheck",
    "get": "Get",
}

_READ: Final = Access.READ
_WRITE: Final = Access.WRITE

#: Transaction operations (canonical) -> what they do to their item; any other is taken to do what its call does.
_TRANSACT_ACCESS: Final[dict[str, Access]] = {
    "Put": _WRITE,
    "Update": _WRITE,
    "Delete": _WRITE,
    "ConditionCheck": _READ,
    "Get": _READ,
}

#: Where :func:`auditor.kernel.decode.FIELDS` puts the fields of a typed record the light path reads (the
#: positions of ``LightRecord``'s fields, checked when ``auditor.kernel.decode`` is imported).
LIGHT_IDENTITY: Final = 1
LIGHT_TIME: Final = 2
LIGHT_OPERATION: Final = 4
LIGHT_REGION: Final = 5
LIGHT_ERROR: Final = 8
LIGHT_PARAMS: Final = 10
LIGHT_EVENT_ID: Final = 12
LIGHT_MANAGEMENT: Final = 16
LIGHT_ACCOUNT: Final = 17
LIGHT_CATEGORY: Final = 21
LIGHT_POSITIONS: Final = {
    "identity": LIGHT_IDENTITY,
    "time": LIGHT_TIME,
    "operation": LIGHT_OPERATION,
    "region": LIGHT_REGION,
    "error": LIGHT_ERROR,
    "params": LIGHT_PARAMS,
    "event_id": LIGHT_EVENT_ID,
    "management": LIGHT_MANAGEMENT,
    "account": LIGHT_ACCOUNT,
    "category": LIGHT_CATEGORY,
}

_TIME_CACHE: Final[dict[str, datetime]] = {}
_TIME_CACHE_MAX: Final = 8192
#: The same event times with their POSIX timestamps, for :func:`single_item` (filled and cleared with
#: ``_TIME_CACHE``: a time is only ever in it after ``_parse_time`` accepted it).
_STAMP_CACHE: Final[dict[str, tuple[datetime, float]]] = {}


def _parse_time(value: Any) -> datetime:
    cached = _TIME_CACHE.get(value) if isinstance(value, str) else None
    if cached is not None:
        return cached
    if value is None or value == "":
        raise MalformedRecordError("missing eventTime")
    if not isinstance(value, str):
        raise MalformedRecordError(f"invalid eventTime: a {type(value).__name__}, expected an ISO-8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise MalformedRecordError(f"invalid eventTime {value[:40]!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    elif parsed.utcoffset():
        try:
            parsed = parsed.astimezone(UTC)
        except OverflowError:  # 9999-12-31T23:59:59-14:00: no UTC datetime
            raise MalformedRecordError(f"eventTime {value[:40]!r} is out of range") from None
    if not 1970 <= parsed.year <= 2999:  # window and finding arithmetic must stay within datetime's range
        raise MalformedRecordError(f"eventTime {value[:40]!r} is out of range (years 1970 to 2999)")
    if len(_TIME_CACHE) >= _TIME_CACHE_MAX:
        _TIME_CACHE.clear()
        _STAMP_CACHE.clear()
    _TIME_CACHE[value] = parsed
    _STAMP_CACHE[value] = (parsed, parsed.timestamp())
    return parsed


def _reader_keys(*names: str) -> tuple[str, ...]:
    """``names`` as the very ``str`` objects the record reader puts in its dicts, where it can be found out.

    orjson (which ``auditor.kernel.reader`` parses with) caches short map keys and hands out the same ``str``
    object for a key in every record. orjson's dicts are not "unicode-keys" dicts, so a lookup with an equal but
    distinct key string goes through a full rich comparison, while the identical object matches on the pointer:
    about half the cost of every envelope and ``requestParameters`` lookup. Purely a speed-up: any other ``str``
    equal to the name finds the same entry, so results never depend on this (nor on orjson evicting a key).
    """
    learned = {key: key for key in orjson.loads(orjson.dumps(dict.fromkeys(names, 0)))}
    return tuple(learned.get(name, name) for name in names)


_ENVELOPE_FIELDS: Final = _reader_keys(
    "eventSource",
    "eventCategory",
    "managementEvent",
    "eventName",
    "eventID",
    "eventTime",
    "requestParameters",
    "userIdentity",
    "recipientAccountId",
    "awsRegion",
    "userAgent",
    "sourceIPAddress",
)
_ENVELOPE: Final = operator.itemgetter(*_ENVELOPE_FIELDS)
# Each name its own Final constant: compiled code reads a Final from a C static, any other global from the module dict.
_F_SOURCE: Final = _ENVELOPE_FIELDS[0]
_F_CATEGORY: Final = _ENVELOPE_FIELDS[1]
_F_MANAGEMENT: Final = _ENVELOPE_FIELDS[2]
_F_NAME: Final = _ENVELOPE_FIELDS[3]
_F_ID: Final = _ENVELOPE_FIELDS[4]
_F_TIME: Final = _ENVELOPE_FIELDS[5]
_F_PARAMS: Final = _ENVELOPE_FIELDS[6]
_F_IDENTITY: Final = _ENVELOPE_FIELDS[7]
_F_ACCOUNT: Final = _ENVELOPE_FIELDS[8]
_F_REGION: Final = _ENVELOPE_FIELDS[9]
_F_AGENT: Final = _ENVELOPE_FIELDS[10]
_F_IP: Final = _ENVELOPE_FIELDS[11]
_ERRORS: Final = _reader_keys("errorCode", "errorMessage")
_ERROR_CODE: Final = _ERRORS[0]
_ERROR_MESSAGE: Final = _ERRORS[1]
_IDENTITY_KEYS: Final = _reader_keys("type", "arn", "sessionContext", "sessionIssuer", "accountId")
_TYPE: Final = _IDENTITY_KEYS[0]
_ARN: Final = _IDENTITY_KEYS[1]
_SESSION_CONTEXT: Final = _IDENTITY_KEYS[2]
_SESSION_ISSUER: Final = _IDENTITY_KEYS[3]
_ACCOUNT_ID: Final = _IDENTITY_KEYS[4]


#: The camelCase request-parameter names CloudTrail logs for DynamoDB data events. No two of them lower-case to
#: the same string, so in a dict whose keys all belong here ``d.get("tableName")`` is exactly what the general
#: path's lower-cased view (``_ci(d).get("tablename")``) gives: no other spelling of that key can be present.
_CAMEL_KEYS: Final[frozenset[str]] = frozenset(
    _reader_keys(
        "attributesToGet",
        "attributeUpdates",
        "clientRequestToken",
        "conditionalOperator",
        "conditionExpression",
        "consistentRead",
        "deleteRequest",
        "exclusiveStartKey",
        "expected",
        "expressionAttributeNames",
        "expressionAttributeValues",
        "filterExpression",
        "indexName",
        "item",
        "key",
        "keyConditionExpression",
        "keyConditions",
        "keys",
        "limit",
        "operation",
        "parameters",
        "projectionExpression",
        "putRequest",
        "queryFilter",
        "requestItems",
        "returnConsumedCapacity",
        "returnItemCollectionMetrics",
        "returnValues",
        "returnValuesOnConditionCheckFailure",
        "scanFilter",
        "scanIndexForward",
        "segment",
        "select",
        "statement",
        "tableName",
        "totalSegments",
        "transactItems",
    )
)
_is_camel: Final = _CAMEL_KEYS.issuperset
_PARAM_KEYS: Final = _reader_keys(
    "tableName",
    "key",
    "keys",
    "indexName",
    "segment",
    "totalSegments",
    "statement",
    "requestItems",
    "transactItems",
    "putRequest",
    "deleteRequest",
    "keyConditionExpression",
    "expressionAttributeNames",
    "keyConditions",
)
_TABLE_NAME: Final = _PARAM_KEYS[0]
_KEY: Final = _PARAM_KEYS[1]
_KEYS: Final = _PARAM_KEYS[2]
_INDEX_NAME: Final = _PARAM_KEYS[3]
_SEGMENT: Final = _PARAM_KEYS[4]
_TOTAL_SEGMENTS: Final = _PARAM_KEYS[5]
_STATEMENT_KEY: Final = _PARAM_KEYS[6]
_REQUEST_ITEMS: Final = _PARAM_KEYS[7]
_TRANSACT_ITEMS: Final = _PARAM_KEYS[8]
_PUT_REQUEST: Final = _PARAM_KEYS[9]
_DELETE_REQUEST: Final = _PARAM_KEYS[10]
_KEY_CONDITION: Final = _PARAM_KEYS[11]
_EXPRESSION_NAMES: Final = _PARAM_KEYS[12]
_KEY_CONDITIONS: Final = _PARAM_KEYS[13]
_CONSISTENT_READ: Final = _reader_keys("consistentRead")[0]
_EXCLUSIVE_START_KEY: Final = _reader_keys("exclusiveStartKey")[0]

#: What a fast or general request reader gives: access, items, tables, index, scan segment, scan total
#: segments, statement, truncated.
_Request = tuple[
    Access,
    tuple[ItemAccess, ...],
    tuple[str, ...],
    str | None,
    int | None,
    int | None,
    Statement | None,
    bool,
]

"""Turn one CloudTrail record into an ``ApiCall`` (or ``None`` when it is no DynamoDB table traffic).

This is the ingest hot path (hundreds of thousands of records per second), so it works on the parsed JSON in
place: no validation library, no deep copies. The usual record shapes (camelCase keys, well-typed values) are read
directly by ``normalize_record``; anything else goes to the general reader, where only the keys of the dicts we
actually read are lower-cased, once per dict, because CloudTrail mixes ``tableName``/``TableName`` and
``key``/``Key`` even inside one record. Attribute names (inside ``key``) and table names (the keys of a
``requestItems`` map) are never lower-cased.

The record shapes follow the AWS samples in
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/logging-using-cloudtrail.html (DynamoDB data events).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import orjson
from msgspec import UNSET

from auditor.exceptions import MalformedRecordError
from auditor.kernel.calls import Access, ApiCall, ItemAccess, SingleItem, Statement
from auditor.kernel.decode import LightRecord
from auditor.kernel.key_condition import key_condition, key_condition_legacy
from auditor.kernel.partiql import parse_statement

__all__ = [
    "CONTROL_PLANE_OPERATIONS",
    "DATA_PLANE_OPERATIONS",
    "DYNAMODB_EVENT_SOURCE",
    "STREAM_READ_OPERATIONS",
    "normalize_record",
    "single_item",
]

DYNAMODB_EVENT_SOURCE: Final = "dynamodb.amazonaws.com"

# Operation kinds (how requestParameters are read).
_SINGLE: Final = 0
_QUERY = 1
_SCAN: Final = 2
_BATCH_GET = 3
_BATCH_WRITE = 4
_TRANSACT_WRITE = 5
_TRANSACT_GET = 6
_STATEMENT = 7
_BATCH_STATEMENT = 8
_UNKNOWN_DATA: Final = 9

_KIND: Final[dict[str, int]] = {
    "GetItem": _SINGLE,
    "PutItem": _SINGLE,
    "UpdateItem": _SINGLE,
    "DeleteItem": _SINGLE,
    "Query": _QUERY,
    "Scan": _SCAN,
    "BatchGetItem": _BATCH_GET,
    "BatchWriteItem": _BATCH_WRITE,
    "TransactWriteItems": _TRANSACT_WRITE,
    "TransactGetItems": _TRANSACT_GET,
    "ExecuteStatement": _STATEMENT,
    "BatchExecuteStatement": _BATCH_STATEMENT,
    "ExecuteTransaction": _BATCH_STATEMENT,
}

#: The DynamoDB item-level operations that are normalised into ``ApiCall`` s.
DATA_PLANE_OPERATIONS: frozenset[str] = frozenset(_KIND)

#: DynamoDB Streams reads: logged as data events on dynamodb.amazonaws.com, but they are not table traffic.
STREAM_READ_OPERATIONS: frozenset[str] = frozenset({"GetRecords", "GetShardIterator", "DescribeStream", "ListStreams"})

#: Known DynamoDB control-plane operations (management events). Any name outside ``DATA_PLANE_OPERATIONS`` is
#: skipped unless the record says ``eventCategory: Data``; this list makes the common ones explicit.
CONTROL_PLANE_OPERATIONS: frozenset[str] = frozenset(
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

_WRITE_PREFIXES = ("Put", "Update", "Delete", "BatchWrite", "TransactWrite")
_WRITE_VERBS = frozenset({"INSERT", "UPDATE", "DELETE"})

#: Transaction operation names, lower-cased -> canonical.
_TRANSACT_OPS = {
    "put": "Put",
    "update": "Update",
    "delete": "Delete",
    "conditioncheck": "ConditionCheck",
    "get": "Get",
}
_TRANSACT_READ_OPS = frozenset({"ConditionCheck", "Get"})

_TABLE_IN_TEXT = re.compile(r'"tablename"\s*:\s*"((?:[^"\\]|\\.)+)"', re.IGNORECASE)

_READ: Final = Access.READ
_WRITE: Final = Access.WRITE

_TIME_CACHE: Final[dict[str, datetime]] = {}
_TIME_CACHE_MAX: Final = 8192
#: The same event times with their POSIX timestamps, for :func:`single_item` (filled and cleared with
#: ``_TIME_CACHE``: a time is only ever in it after ``_parse_time`` accepted it).
_STAMP_CACHE: Final[dict[str, tuple[datetime, float]]] = {}

#: Session name of an assumed-role ARN (``arn:aws:sts::a:assumed-role/R/S`` -> ``S``). Keyed by the caller's ARN,
#: never by anything item-specific; cleared when full so memory stays flat.
_SESSION_CACHE: Final[dict[str, str | None]] = {}
_SESSION_CACHE_MAX: Final = 4096


def _ci(d: Mapping[str, Any]) -> dict[str, Any]:
    """A view of ``d`` with lower-cased keys (one level only; values are shared, not copied)."""
    return {k.lower(): v for k, v in d.items()}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _as_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


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


def _session_name(arn: str) -> str | None:
    """The part of ``arn`` after its last ``/`` (None when empty or without ``/``), cached."""
    slash = arn.rfind("/")
    session = arn[slash + 1 :] or None if slash >= 0 else None
    if len(_SESSION_CACHE) >= _SESSION_CACHE_MAX:
        _SESSION_CACHE.clear()
    _SESSION_CACHE[arn] = session
    return session


def _table_from_arn(arn: Any) -> str | None:
    """``arn:aws:dynamodb:r:a:table/T[/index/I|/stream/S]`` -> ``T``."""
    if not isinstance(arn, str):
        return None
    pos = arn.find(":table/")
    if pos < 0:
        return None
    name = arn[pos + 7 :]
    slash = name.find("/")
    if slash >= 0:
        name = name[:slash]
    return name or None


def _resource_tables(record: Mapping[str, Any]) -> list[str]:
    """Distinct table names from ``resources[].ARN``, in order."""
    resources = record.get("resources")
    tables: list[str] = []
    if isinstance(resources, list):
        for res in resources:
            if isinstance(res, dict):
                name = _table_from_arn(res.get("ARN") or res.get("arn"))
                if name is not None and name not in tables:
                    tables.append(name)
    return tables


def _key(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


_NO_TABLE = "no table name in requestParameters or resources"


def _fallback_table(record: Mapping[str, Any]) -> str | None:
    """The first table of ``resources``; else, for truncated ``requestParameters`` text, a ``tableName`` in it."""
    tables = _resource_tables(record)
    if tables:
        return tables[0]
    raw = record.get("requestParameters")
    if isinstance(raw, str):  # truncated JSON text: the table name may still be readable
        m = _TABLE_IN_TEXT.search(raw)
        if m is not None:
            return m.group(1)
    return None


class _Ctx:
    """Per-record state of the multi-item readers: the fallback table and the truncation flag."""

    __slots__ = ("_fallback", "_fallback_done", "record", "truncated")

    def __init__(self, record: Mapping[str, Any], truncated: bool) -> None:
        self.record = record
        self.truncated = truncated
        self._fallback: str | None = None
        self._fallback_done = False

    def fallback_table(self) -> str | None:
        """``_fallback_table`` of the record, computed once and only when needed."""
        if not self._fallback_done:
            self._fallback_done = True
            self._fallback = _fallback_table(self.record)
        return self._fallback

    def table(self, params: Mapping[str, Any] | None) -> str:
        """``tableName`` from (lower-cased) ``params``, else the fallback; raises if neither exists."""
        if params is not None:
            name = params.get("tablename")
            if isinstance(name, str) and name:
                return name
        name = self.fallback_table()
        if name is None:
            raise MalformedRecordError(_NO_TABLE)
        return name


def _principal(identity: Any) -> tuple[str | None, str | None, str | None]:
    """(principal, principal_type, session_name) from ``userIdentity``."""
    if type(identity) is not dict:
        return None, None, None
    ptype = identity.get("type")
    arn = identity.get("arn")
    if ptype == "AssumedRole":
        principal = None
        context = identity.get("sessionContext")
        if type(context) is dict:
            issuer = context.get("sessionIssuer")
            if type(issuer) is dict:
                principal = issuer.get("arn")
                if type(principal) is not str or not principal:
                    principal = None
        session = None
        if type(arn) is str:
            slash = arn.rfind("/")
            if slash >= 0:
                session = arn[slash + 1 :] or None
            if principal is None:
                principal = arn or None
        return principal, ptype, session
    if ptype == "AWSService":
        return _str_or_none(identity.get("invokedBy")) or "AWSService", ptype, None
    return _str_or_none(arn), _str_or_none(ptype), None


# --- the hot path -----------------------------------------------------------------------------------------
#
# ``normalize_record`` reads the envelope of a plain ``dict`` record with one C-level ``itemgetter`` call and
# handles the shapes CloudTrail really logs (camelCase keys, well-typed values) inline or in a small per-operation
# reader. Anything else -- a missing envelope field, an odd type, other key casings, truncated parameters -- goes
# to the general path (``_normalize_general`` / ``_read_request``), which is the reference behaviour. A fast
# reader never decides an unusual case itself: it returns ``None`` and the general reader redoes the work, so the
# two paths cannot disagree.


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


_ENVELOPE_FIELDS = _reader_keys(
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

_TRANSACT_WRITE_OPS = frozenset(_TRANSACT_OPS.values())

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


def _query_access(table: str, name: str, index: str | None, params: Mapping[str, Any], lowered: bool) -> ItemAccess:
    """A Query's access: its key condition generalised and, when logged, its partition-key value (``key``).

    Real Query records carry the partition-key value in ``requestParameters.key``, next to the expression. When the
    logged name differs from the key condition's attribute (one entry only), the condition's name is used.
    """
    if lowered:
        expression, names, legacy, key = (
            params.get("keyconditionexpression"),
            params.get("expressionattributenames"),
            params.get("keyconditions"),
            params.get("key"),
        )
    else:
        expression, names, legacy, key = (
            params.get(_KEY_CONDITION),
            params.get(_EXPRESSION_NAMES),
            params.get(_KEY_CONDITIONS),
            params.get(_KEY),
        )
    condition = key_condition(expression, names) if expression is not None else key_condition_legacy(legacy)
    if type(key) is not dict or not key:
        key = None
    elif condition is not None and len(key) == 1 and condition[0] not in key:
        key = {condition[0]: next(iter(key.values()))}
    return ItemAccess(table, name, _READ, index, key, None, False, condition)


def _fast_query(raw: dict[str, Any], name: str) -> _Request | None:
    if not _is_camel(raw):
        return None
    table = raw.get(_TABLE_NAME)
    if type(table) is not str or not table:
        return None
    index = raw.get(_INDEX_NAME)
    if index is not None:
        index = _str_or_none(index)
    item = _query_access(table, name, index, raw, False)
    return _READ, (item,), (table,), index, None, None, None, False


def _fast_scan(raw: dict[str, Any], name: str) -> _Request | None:
    if not _is_camel(raw):
        return None
    table = raw.get(_TABLE_NAME)
    if type(table) is not str or not table:
        return None
    index = raw.get(_INDEX_NAME)
    if index is not None:
        index = _str_or_none(index)
    segment = raw.get(_SEGMENT)
    if segment is not None:
        segment = _as_int(segment)
    total = raw.get(_TOTAL_SEGMENTS)
    if total is not None:
        total = _as_int(total)
    item = ItemAccess(table, name, _READ, index, None, None, True)
    return _READ, (item,), (table,), index, segment, total, None, False


def _fast_statement(raw: dict[str, Any], name: str) -> _Request | None:
    if not _is_camel(raw):
        return None
    text = raw.get(_STATEMENT_KEY)
    if type(text) is not str:
        return None
    statement = parse_statement(text)
    table = statement.table
    if not table:
        return None
    item = _statement_access(table, "ExecuteStatement:", statement)
    return item.access, (item,), (table,), statement.index, None, None, statement, False


def _fast_batch_get(raw: dict[str, Any], name: str) -> _Request | None:
    if not _is_camel(raw):
        return None
    request_items = raw.get(_REQUEST_ITEMS)
    if type(request_items) is not dict or not request_items:
        return None
    out: list[ItemAccess] = []
    append = out.append
    for table, spec in request_items.items():
        if type(table) is not str or not table:
            return None
        if type(spec) is dict:
            if not _is_camel(spec):
                return None
            keys = spec.get(_KEYS)
            if keys is None and _KEY in spec:
                keys = [spec[_KEY]]
        elif type(spec) is list:
            keys = spec
        else:
            return None
        if type(keys) is list and keys:
            for key in keys:
                if type(key) is not dict:
                    return None
                append(ItemAccess(table, "BatchGetItem", _READ, None, key))
        elif keys is None or type(keys) is list:
            append(ItemAccess(table, "BatchGetItem", _READ))
        else:
            return None
    return _READ, tuple(out), tuple(request_items), None, None, None, None, False


def _fast_batch_write(raw: dict[str, Any], name: str) -> _Request | None:
    if not _is_camel(raw):
        return None
    request_items = raw.get(_REQUEST_ITEMS)
    if type(request_items) is not dict:
        return None
    out: list[ItemAccess] = []
    append = out.append
    tables: list[str] = []
    for table, requests in request_items.items():
        if type(table) is not str or not table or type(requests) is not list:
            return None
        if requests:
            tables.append(table)
        for request in requests:
            if type(request) is not dict or not _is_camel(request):
                return None
            body = request.get(_PUT_REQUEST)
            if body is not None:
                operation = "BatchWriteItem:Put"
            else:
                body = request.get(_DELETE_REQUEST)
                if body is None:
                    return None
                operation = "BatchWriteItem:Delete"
            key = None
            if isinstance(body, dict):
                if type(body) is not dict or not _is_camel(body):
                    return None
                key = body.get(_KEY)
                if key is not None and not isinstance(key, dict):
                    key = None
            append(ItemAccess(table, operation, _WRITE, None, key))
    if not out:
        return None
    return _WRITE, tuple(out), tuple(tables), None, None, None, None, False


def _fast_transact(raw: dict[str, Any], name: str) -> _Request | None:
    """The CloudTrail shape ``[{operation, tableName, key}]``; entries keep the general path's case-insensitive
    reading (CloudTrail mixes ``tableName``/``TableName`` and ``key``/``Key`` inside one transaction)."""
    if not _is_camel(raw):
        return None
    request_items = raw.get(_REQUEST_ITEMS)
    if request_items is None:
        request_items = raw.get(_TRANSACT_ITEMS)
    if type(request_items) is not list or not request_items:
        return None
    access = _WRITE if name == "TransactWriteItems" else _READ
    prefix = name + ":"
    out: list[ItemAccess] = []
    tables: dict[str, None] = {}
    for entry in request_items:
        if type(entry) is not dict:
            return None
        body = _ci(entry)
        flat = body.get("operation")
        table = body.get("tablename")
        if type(flat) is not str or type(table) is not str or not table:
            return None
        operation = _TRANSACT_OPS.get(flat.lower(), flat)
        if operation in _TRANSACT_READ_OPS:
            item_access = _READ
        elif operation in _TRANSACT_WRITE_OPS:
            item_access = _WRITE
        else:
            item_access = access
        key = body.get("key")
        if key is not None and not isinstance(key, dict):
            key = None
        out.append(ItemAccess(table, prefix + operation, item_access, None, key))
        tables[table] = None
    return access, tuple(out), tuple(tables), None, None, None, None, False


_Reader = Callable[[dict[str, Any], str], _Request | None]

#: eventName -> (access, None) for the single-item operations (the bulk of the traffic, read inline by
#: ``normalize_record``), or (None, fast reader) for the others. Any other name takes the general path.
_FAST_OPS: Final[dict[str, tuple[Access | None, _Reader | None]]] = {
    "GetItem": (_READ, None),
    "PutItem": (_WRITE, None),
    "UpdateItem": (_WRITE, None),
    "DeleteItem": (_WRITE, None),
    "Query": (None, _fast_query),
    "Scan": (None, _fast_scan),
    "ExecuteStatement": (None, _fast_statement),
    "BatchGetItem": (None, _fast_batch_get),
    "BatchWriteItem": (None, _fast_batch_write),
    "TransactWriteItems": (None, _fast_transact),
    "TransactGetItems": (None, _fast_transact),
}


def normalize_record(record: Mapping[str, Any]) -> ApiCall | None:
    """Normalise one CloudTrail record.

    Returns ``None`` for anything that is not DynamoDB table traffic: another event source, a management
    event, a control-plane operation, or a Streams read (``STREAM_READ_OPERATIONS``).

    Raises ``MalformedRecordError`` (with a short reason) for a record that cannot be used: not an object,
    missing ``eventName``/``eventID``, missing or invalid ``eventTime``, ``requestParameters`` of the wrong
    type, or no table name anywhere. Truncated ``requestParameters`` (CloudTrail's 100 KB cap) do not raise:
    what can be read is kept and ``truncated`` is set.
    """
    if type(record) is not dict:
        return _normalize_general(record)
    try:
        (
            source,
            category,
            management,
            name,
            event_id,
            event_time,
            raw,
            identity,
            account,
            region,
            user_agent,
            source_ip,
        ) = _ENVELOPE(record)
    except KeyError:
        return _normalize_general(record)
    if source != DYNAMODB_EVENT_SOURCE:
        return None
    if category == "Management" or management is True:
        # A data-plane operation labelled Management is analysed (and flagged); anything else is control plane.
        return _normalize_general(record) if name in _KIND else None
    if type(name) is not str or type(event_id) is not str or not event_id or type(raw) is not dict:
        return _normalize_general(record)
    try:
        access, reader = _FAST_OPS[name]
    except KeyError:
        return _normalize_general(record)
    try:
        time = _TIME_CACHE[event_time]
    except (KeyError, TypeError):
        time = _parse_time(event_time)

    # The caller: ``_principal`` inlined, with the session name of an assumed-role ARN cached.
    session = None
    if type(identity) is dict:
        try:  # a missing key anywhere: _principal decides
            ptype = identity[_TYPE]
            arn = identity[_ARN]
            if ptype == "AssumedRole":
                context = identity[_SESSION_CONTEXT]
                issuer = context[_SESSION_ISSUER] if type(context) is dict else None
                principal = issuer[_ARN] if type(issuer) is dict else None
                if type(principal) is str and principal and type(arn) is str:
                    try:
                        session = _SESSION_CACHE[arn]
                    except KeyError:
                        session = _session_name(arn)
                else:
                    principal, ptype, session = _principal(identity)
            elif ptype == "AWSService":
                principal = _str_or_none(identity.get("invokedBy")) or "AWSService"
            else:
                principal = arn if type(arn) is str and arn else _str_or_none(arn)
                if type(ptype) is not str or not ptype:
                    ptype = _str_or_none(ptype)
        except KeyError:
            principal, ptype, session = _principal(identity)
        if type(account) is not str or not account:
            account = _str_or_none(identity.get(_ACCOUNT_ID))
    else:
        principal = ptype = None
        if type(account) is not str or not account:
            account = None
    if type(region) is not str:
        region = None
    if type(user_agent) is not str:
        user_agent = None
    if type(source_ip) is not str:
        source_ip = None
    error_code = error_message = None
    if _ERROR_CODE in record:
        error_code = record[_ERROR_CODE]
        if type(error_code) is not str:
            error_code = None
    if _ERROR_MESSAGE in record:
        error_message = record[_ERROR_MESSAGE]
        if type(error_message) is not str:
            error_message = None

    if access is not None:  # GetItem/PutItem/UpdateItem/DeleteItem
        try:
            table = raw[_TABLE_NAME]
            key = raw[_KEY]
        except KeyError:
            table = key = None
        if type(table) is str and table and key is not None:
            item = ItemAccess(table, name, access, None, key if type(key) is dict else None)
            single = ApiCall(
                event_id,
                time,
                name,
                access,
                account,
                region,
                (table,),
                (item,),
                principal,
                ptype,
                session,
                user_agent,
                source_ip,
                None,
                error_code,
                error_message,
            )
            if name == "GetItem":
                _consistency(single, raw)
            return single
        request = _read_request(record, raw, False, _SINGLE, name)
    else:
        fast = None
        if reader is not None:  # always, when access is None
            try:
                fast = reader(raw, name)
            except Exception:  # an unforeseen shape: the general reader decides (and words any error)
                fast = None
        request = _read_request(record, raw, False, _KIND[name], name) if fast is None else fast
    access, items, tables, index, segment, total, statement, truncated = request
    call = ApiCall(
        event_id,
        time,
        name,
        access,
        account,
        region,
        tables,
        items,
        principal,
        ptype,
        session,
        user_agent,
        source_ip,
        index,
        error_code,
        error_message,
        segment,
        total,
        statement,
        truncated,
    )
    if name == "Scan":
        _scan_page(call, raw)
    if name in _CONSISTENCY_LOGGED:
        _consistency(call, raw)
    return call


#: The operations :func:`single_item` reads, and whether each writes.
_LIGHT_WRITES: Final[dict[str, bool]] = {
    "GetItem": False,
    "PutItem": True,
    "UpdateItem": True,
    "DeleteItem": True,
    "Query": False,
}
_CONSISTENT_READ: Final = _reader_keys("consistentRead")[0]


def single_item(record: dict[str, Any]) -> SingleItem | None:
    """The fields the aggregates read from the commonest records, without building their ``ApiCall``.

    Those records are successful GetItem, PutItem, UpdateItem, DeleteItem and Query calls whose envelope, table,
    key (or key condition), account and region are logged as CloudTrail logs them, at an event time already seen
    (and checked) by ``_parse_time``. For them, the result holds exactly what :func:`normalize_record` would give
    (same time, account, region, table, index, key, key condition, access and consistency); the caller is not read,
    because the aggregates do not count the callers of successful single-item calls and Queries. ``None`` for every
    other record, including any that ``normalize_record`` would reject or read differently: the caller then takes
    ``normalize_record``, the reference.
    """
    # The envelope as _ENVELOPE reads it (every field present), one typed lookup each (cheaper compiled than the
    # itemgetter and its tuple).
    try:
        source = record[_F_SOURCE]
        category = record[_F_CATEGORY]
        management = record[_F_MANAGEMENT]
        name = record[_F_NAME]
        event_id = record[_F_ID]
        event_time = record[_F_TIME]
        raw = record[_F_PARAMS]
        account = record[_F_ACCOUNT]
        region = record[_F_REGION]
    except KeyError:
        return None
    if _F_IDENTITY not in record or _F_AGENT not in record or _F_IP not in record:
        return None
    if (
        source != DYNAMODB_EVENT_SOURCE
        or category == "Management"
        or management is True
        or type(name) is not str
        or type(event_id) is not str
        or not event_id
        or type(event_time) is not str
        or type(raw) is not dict
        or type(account) is not str
        or not account
        or type(region) is not str
        or _ERROR_CODE in record
    ):
        return None
    is_write = _LIGHT_WRITES.get(name)
    stamp = _STAMP_CACHE.get(event_time)
    if is_write is None or stamp is None:
        return None
    return _single_item_request(event_id, name, stamp, account, region, raw, is_write)


def light_item(record: LightRecord) -> SingleItem | None:
    """:func:`single_item` of a record decoded by :func:`auditor.kernel.decode.light` (its operation, source and field
    types already checked there), with the same result as :func:`single_item` of the whole record; an event time not
    seen yet is parsed here (None when ``_parse_time`` rejects it)."""
    if (
        record.category == "Management"
        or record.management
        or not record.event_id
        or not record.account
        or record.error is not UNSET
    ):
        return None
    event_time = record.time
    stamp = _STAMP_CACHE.get(event_time)
    if stamp is None:
        try:
            _parse_time(event_time)
        except MalformedRecordError:
            return None
        stamp = _STAMP_CACHE.get(event_time)
        if stamp is None:  # pragma: no cover - _parse_time fills the cache with every time it accepts
            return None
    name = record.operation
    item = _single_item_request(
        record.event_id, name, stamp, record.account, record.region, record.params, _LIGHT_WRITES[name]
    )
    if item is None or (item[8] is not None and not _plain_key(item[8])):
        return None
    return item


def _plain_key(key: dict[str, Any]) -> bool:
    """Whether every value of ``key`` is a scalar that every JSON decoder reads alike: text, a boolean, null, a
    float, or an integer within 64 bits (orjson reads a longer integer as a float, msgspec exactly)."""
    for value in key.values():
        kind = type(value)
        if kind is int:
            if not _INT_MIN <= value <= _UINT_MAX:
                return False
        elif kind is not str and kind is not bool and kind is not float and value is not None:
            return False
    return True


_INT_MIN: Final = -(1 << 63)
_UINT_MAX: Final = (1 << 64) - 1


def _single_item_request(
    event_id: str,
    name: str,
    stamp: tuple[datetime, float],
    account: str,
    region: str,
    raw: dict[str, Any],
    is_write: bool,
) -> SingleItem | None:
    """What :func:`single_item` and :func:`light_item` read of the request parameters, once the envelope passed."""
    index = condition = None
    table: Any
    key: Any
    if name == "Query":
        try:
            request = _fast_query(raw, name)
        except Exception:  # an unforeseen shape: the full reader decides, as in normalize_record
            return None
        if request is None:
            return None
        access = request[1][0]
        table, index, key, condition = access.table, access.index, access.key, access.condition
    else:
        table = raw.get(_TABLE_NAME)
        key = raw.get(_KEY)
        if type(table) is not str or not table or type(key) is not dict or not key:
            return None
    eventual = False
    if not is_write:  # GetItem, Query: the logged consistentRead (another spelling: the full path reads it)
        consistent = raw.get(_CONSISTENT_READ)
        if consistent is None and not _is_camel(raw):
            return None
        eventual = consistent is False
    return event_id, name, stamp[0], stamp[1], account, region, table, index, key, condition, is_write, eventual


#: Single-table reads whose ``consistentRead`` request parameter CloudTrail logs as sent.
_CONSISTENCY_LOGGED: Final = frozenset({"GetItem", "Query", "Scan"})


def _consistency(call: ApiCall, raw: Mapping[str, Any] | None) -> None:
    """Set the read's logged ``consistentRead`` (any spelling); a non-boolean value leaves it unknown."""
    if raw is None:
        return
    consistent = raw.get("consistentRead")
    if consistent is None and not _is_camel(raw):
        consistent = _ci(raw).get("consistentread")
    if type(consistent) is bool:
        call.consistent_read = consistent


def _scan_page(call: ApiCall, raw: Mapping[str, Any] | None) -> None:
    """Set what a Scan page logs about its scan: ``limit``, ``exclusiveStartKey`` and the filter's shape."""
    if raw is None:
        return
    params = raw if _is_camel(raw) else _ci(raw)
    get = params.get
    call.scan_limit = _as_int(get("limit") if "limit" in params else get("Limit"))
    call.scan_continuation = bool(get("exclusiveStartKey") or get("exclusivestartkey"))
    expression = get("filterExpression") or get("filterexpression")
    if isinstance(expression, str):
        names = get("expressionAttributeNames") or get("expressionattributenames")
        shape = expression[:200]
        if isinstance(names, dict):
            for placeholder, attr in sorted(names.items(), key=lambda kv: -len(str(kv[0]))):
                if isinstance(placeholder, str) and isinstance(attr, str):
                    shape = shape.replace(placeholder, attr)
        call.scan_filter = shape
    else:
        legacy = get("scanFilter") or get("scanfilter")
        if isinstance(legacy, dict):
            call.scan_filter = ",".join(sorted(str(k) for k in legacy)[:8])


# --- the general path -------------------------------------------------------------------------------------


def _normalize_general(record: Mapping[str, Any]) -> ApiCall | None:
    """``normalize_record`` for any input: a non-dict mapping, a missing envelope field, bad types."""
    if type(record) is not dict and not isinstance(record, Mapping):
        raise MalformedRecordError(f"record is not a JSON object but {type(record).__name__}")
    get = record.get
    if get("eventSource") != DYNAMODB_EVENT_SOURCE:
        return None
    category = get("eventCategory")
    name = get("eventName")
    labelled = category == "Management" or get("managementEvent") is True
    if labelled and name not in _KIND:
        return None
    if type(name) is not str or not name:
        raise MalformedRecordError("missing eventName")
    kind = _KIND.get(name)
    if kind is None:
        if name in STREAM_READ_OPERATIONS or name in CONTROL_PLANE_OPERATIONS or category != "Data":
            return None
        kind = _UNKNOWN_DATA
    event_id = get("eventID")
    if type(event_id) is not str or not event_id:
        raise MalformedRecordError("missing eventID")
    time = _parse_time(get("eventTime"))

    raw = get("requestParameters")
    truncated = False
    if type(raw) is not dict:
        if raw is not None and not isinstance(raw, str):
            raise MalformedRecordError(f"requestParameters is a {type(raw).__name__}, expected an object")
        raw = None  # absent, or cut to unparseable text by CloudTrail: keep what the envelope tells
        truncated = True

    access, items, tables, index, segment, total, statement, truncated = _read_request(
        record, raw, truncated, kind, name
    )

    identity = get("userIdentity")
    principal, principal_type, session_name = _principal(identity)
    account = get("recipientAccountId")
    if type(account) is not str or not account:
        account = _str_or_none(identity.get("accountId")) if type(identity) is dict else None
    region = get("awsRegion")
    user_agent = get("userAgent")
    source_ip = get("sourceIPAddress")
    error_code = get("errorCode")
    error_message = get("errorMessage")

    call = ApiCall(
        event_id,
        time,
        name,
        access,
        account,
        region if type(region) is str else None,
        tables,
        items,
        principal,
        principal_type,
        session_name,
        user_agent if type(user_agent) is str else None,
        source_ip if type(source_ip) is str else None,
        index,
        error_code if type(error_code) is str else None,
        error_message if type(error_message) is str else None,
        segment,
        total,
        statement,
        truncated,
    )
    if labelled:
        call.management_labelled = True
    if kind == _SCAN:
        _scan_page(call, raw)
    if name in _CONSISTENCY_LOGGED:
        _consistency(call, raw)
    return call


def _read_request(
    record: Mapping[str, Any], raw: dict[str, Any] | None, truncated: bool, kind: int, name: str
) -> _Request:
    """What ``requestParameters`` (``raw``; None when absent or truncated to text) tell, for any shape."""
    index: str | None = None
    segment: int | None = None
    total_segments: int | None = None
    statement: Statement | None = None
    items: tuple[ItemAccess, ...]
    tables: tuple[str, ...]

    try:
        if kind == _SINGLE:  # read the usual camelCase keys, lower-case only on a miss
            access = _READ if name == "GetItem" else _WRITE
            table: Any = None
            key: Any = None
            if raw is not None:
                table = raw.get("tableName")
                key = raw.get("key")
                if table is None or key is None:
                    lowered = _ci(raw)
                    table = lowered.get("tablename")
                    key = lowered.get("key")
            if type(table) is not str or not table:
                table = _fallback_table(record)
                if table is None:
                    raise MalformedRecordError(_NO_TABLE)
            items = (ItemAccess(table, name, access, None, key if type(key) is dict else None),)
            tables = (table,)
        else:
            params: dict[str, Any] | None = _ci(raw) if raw is not None else None
            ctx = _Ctx(record, truncated)
            if kind in (_QUERY, _SCAN):
                access = _READ
                table = ctx.table(params)
                if params is not None:
                    index = _str_or_none(params.get("indexname"))
                    if kind == _SCAN:
                        segment = _as_int(params.get("segment"))
                        total_segments = _as_int(params.get("totalsegments"))
                if kind == _QUERY and params is not None:
                    items = (_query_access(table, name, index, params, True),)
                else:
                    items = (ItemAccess(table, name, access, index, None, None, kind == _SCAN),)
                tables = (table,)
            elif kind == _STATEMENT:
                text = params.get("statement") if params is not None else None
                if isinstance(text, str):
                    statement = parse_statement(text)
                else:
                    statement = Statement(verb="UNKNOWN", table=None)
                    ctx.truncated = True
                access = _WRITE if statement.verb in _WRITE_VERBS else _READ
                table = statement.table or ctx.table(None)
                index = statement.index
                items = (_statement_access(table, "ExecuteStatement:", statement),)
                tables = (table,)
            else:
                if kind == _BATCH_GET:
                    access = _READ
                    collected = _batch_get(params, ctx)
                elif kind == _BATCH_WRITE:
                    access = _WRITE
                    collected = _batch_write(params, ctx)
                elif kind in (_TRANSACT_WRITE, _TRANSACT_GET):
                    access = _WRITE if kind == _TRANSACT_WRITE else _READ
                    collected = _transact(params, ctx, name, access)
                elif kind == _BATCH_STATEMENT:
                    collected = _statements(params, ctx, name)
                    access = _WRITE if any(i.access is _WRITE for i in collected) else _READ
                else:  # _UNKNOWN_DATA
                    access = _WRITE if name.startswith(_WRITE_PREFIXES) else _READ
                    collected = [ItemAccess(ctx.table(params), name, access)]
                items, tables = _finish(collected, ctx, name, access)
            truncated = ctx.truncated
    except (AttributeError, TypeError, ValueError) as exc:  # a shape we did not foresee: skip, never crash
        raise MalformedRecordError(f"unexpected requestParameters structure in {name}: {exc}") from None
    return access, items, tables, index, segment, total_segments, statement, truncated


def _finish(
    collected: list[ItemAccess], ctx: _Ctx, name: str, access: Access
) -> tuple[tuple[ItemAccess, ...], tuple[str, ...]]:
    """Items and distinct tables of a multi-item call; an unreadable call keeps one access per known table."""
    tables = list(dict.fromkeys(item.table for item in collected))
    if ctx.truncated or not collected:
        for table in _resource_tables(ctx.record):
            if table not in tables:
                tables.append(table)
    if not collected:
        ctx.truncated = True
        if not tables:
            fallback = ctx.fallback_table()
            if fallback is None:
                raise MalformedRecordError(_NO_TABLE)
            tables.append(fallback)
        collected = [ItemAccess(table, name, access) for table in tables]
    return tuple(collected), tuple(tables)


def _entries(request_items: Any, ctx: _Ctx) -> Iterable[tuple[str, Any]]:
    """(table, spec) pairs of a batch ``requestItems``: a map ``{table: spec}`` or a list of entries."""
    if isinstance(request_items, dict):
        return request_items.items()
    pairs: list[tuple[str, Any]] = []
    if isinstance(request_items, list):
        for entry in request_items:
            if not isinstance(entry, dict):
                ctx.truncated = True  # a cut list ends in a fragment
                continue
            lowered = _ci(entry)
            table = lowered.get("tablename")
            if isinstance(table, str) and table:
                pairs.append((table, lowered))
            else:
                pairs.extend(entry.items())
    elif request_items is not None:
        ctx.truncated = True
    return pairs


def _batch_get(params: dict[str, Any] | None, ctx: _Ctx) -> list[ItemAccess]:
    out: list[ItemAccess] = []
    if params is None:
        return out
    for table, spec in _entries(params.get("requestitems"), ctx):
        if not isinstance(table, str) or not table:
            ctx.truncated = True
            continue
        keys: Any
        if isinstance(spec, list):
            keys = spec
        elif isinstance(spec, dict):
            lowered = _ci(spec)
            keys = lowered.get("keys")
            if keys is None and "key" in lowered:
                keys = [lowered["key"]]
        else:
            keys = None
        if not isinstance(keys, list) or not keys:
            if keys is not None and not isinstance(keys, list):
                ctx.truncated = True
            out.append(ItemAccess(table, "BatchGetItem", _READ))
            continue
        for key in keys:
            if not isinstance(key, dict):
                ctx.truncated = True
            out.append(ItemAccess(table, "BatchGetItem", _READ, None, _key(key)))
    return out


def _write_requests(spec: Any) -> list[Any] | None:
    """The list of write requests of one table's batch spec, or None if unreadable."""
    if isinstance(spec, list):
        return spec
    if isinstance(spec, dict):
        lowered = spec if "tablename" in spec else _ci(spec)
        if "putrequest" in lowered or "deleterequest" in lowered or "operation" in lowered:
            return [spec]
        for field in ("requests", "writerequests", "requestitems"):
            value = lowered.get(field)
            if isinstance(value, list):
                return value
    return None


def _batch_write(params: dict[str, Any] | None, ctx: _Ctx) -> list[ItemAccess]:
    out: list[ItemAccess] = []
    if params is None:
        return out
    for table, spec in _entries(params.get("requestitems"), ctx):
        if not isinstance(table, str) or not table:
            ctx.truncated = True
            continue
        requests = _write_requests(spec)
        if requests is None:
            ctx.truncated = True
            continue
        for request in requests:
            if not isinstance(request, dict):
                ctx.truncated = True
                continue
            lowered = _ci(request)
            body = lowered.get("putrequest")
            if body is not None:
                operation = "BatchWriteItem:Put"
            else:
                body = lowered.get("deleterequest")
                if body is not None:
                    operation = "BatchWriteItem:Delete"
                else:
                    flat = lowered.get("operation")
                    if not isinstance(flat, str):
                        ctx.truncated = True
                        continue
                    operation = "BatchWriteItem:" + _TRANSACT_OPS.get(flat.lower(), flat)
                    body = request
            key = _key(_ci(body).get("key")) if isinstance(body, dict) else None
            out.append(ItemAccess(table, operation, _WRITE, None, key))
    return out


def _transact(params: dict[str, Any] | None, ctx: _Ctx, name: str, access: Access) -> list[ItemAccess]:
    """TransactWriteItems/TransactGetItems: the CloudTrail shape ``[{operation, tableName, key}]`` or the API
    shape ``[{Put: {TableName, Key}}]``, with any key casing."""
    out: list[ItemAccess] = []
    if params is None:
        return out
    request_items = params.get("requestitems")
    if request_items is None:
        request_items = params.get("transactitems")
    if not isinstance(request_items, list):
        if request_items is not None:
            ctx.truncated = True
        return out
    prefix = name + ":"
    for entry in request_items:
        if not isinstance(entry, dict):
            ctx.truncated = True
            continue
        body: dict[str, Any] | None = _ci(entry)
        operation: str | None = None
        flat = body.get("operation") if body is not None else None
        if isinstance(flat, str):
            operation = _TRANSACT_OPS.get(flat.lower(), flat)
        else:
            body = None
            for field, value in entry.items():
                canonical = _TRANSACT_OPS.get(field.lower()) if isinstance(field, str) else None
                if canonical is not None and isinstance(value, dict):
                    operation = canonical
                    body = _ci(value)
                    break
        if body is None or operation is None:
            ctx.truncated = True
            continue
        if operation in _TRANSACT_READ_OPS:
            item_access = _READ
        elif operation in _TRANSACT_OPS.values():
            item_access = _WRITE
        else:
            item_access = access
        out.append(
            ItemAccess(
                table=ctx.table(body),
                operation=prefix + operation,
                access=item_access,
                key=_key(body.get("key")),
            )
        )
    return out


def _statement_access(table: str, prefix: str, statement: Statement) -> ItemAccess:
    """The access of one PartiQL statement: operation ``<prefix><VERB>``, read/write from the verb."""
    verb = statement.verb
    return ItemAccess(
        table,
        prefix + verb,
        _WRITE if verb in _WRITE_VERBS else _READ,
        statement.index,
        statement.key_equalities or None,
        statement,
        statement.full_scan,
    )


def _statements(params: dict[str, Any] | None, ctx: _Ctx, name: str) -> list[ItemAccess]:
    """BatchExecuteStatement/ExecuteTransaction: one access per ``{statement}`` entry."""
    out: list[ItemAccess] = []
    if params is None:
        return out
    entries = params.get("requestitems")
    if entries is None:
        entries = params.get("transactstatements")
    if entries is None:
        entries = params.get("statements")
    if not isinstance(entries, list):
        if entries is not None:
            ctx.truncated = True
        return out
    prefix = name + ":"
    for entry in entries:
        if isinstance(entry, dict):
            text = _ci(entry).get("statement")
        else:
            text = entry
        if not isinstance(text, str):
            ctx.truncated = True
            continue
        statement = parse_statement(text)
        table = statement.table or ctx.table(None)
        out.append(_statement_access(table, prefix, statement))
    return out

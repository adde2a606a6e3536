"""Turn one CloudTrail record into an ``ApiCall`` (or ``None`` when it is no DynamoDB table traffic): the ingest hot
path (hundreds of thousands of records per second), on the parsed JSON in place (no validation library, no copies).

:func:`normalize_record` reads the usual shapes (camelCase keys, well-typed values) itself and hands anything else to
the general path, the reference (:mod:`auditor.kernel.general`); :func:`single_item` and :func:`light_item` read the
commonest calls without building an ``ApiCall``. How the paths agree: ``docs/kernel.md``.

The record shapes follow the AWS samples in
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/logging-using-cloudtrail.html (DynamoDB data events).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from msgspec import UNSET

from auditor.exceptions import MalformedRecordError
from auditor.kernel.calls import Access, ApiCall, ItemAccess, SingleItem
from auditor.kernel.decode import FIELDS, FullRecord, LightRecord
from auditor.kernel.fields import (
    _CONSISTENT_READ,
    _DELETE_REQUEST,
    _ENVELOPE,
    _ERROR_CODE,
    _ERROR_MESSAGE,
    _EXCLUSIVE_START_KEY,
    _F_ACCOUNT,
    _F_AGENT,
    _F_CATEGORY,
    _F_ID,
    _F_IDENTITY,
    _F_IP,
    _F_MANAGEMENT,
    _F_NAME,
    _F_PARAMS,
    _F_REGION,
    _F_SOURCE,
    _F_TIME,
    _INDEX_NAME,
    _KEY,
    _KEYS,
    _KIND,
    _PUT_REQUEST,
    _READ,
    _REQUEST_ITEMS,
    _SEGMENT,
    _STAMP_CACHE,
    _STATEMENT_KEY,
    _TABLE_NAME,
    _TIME_CACHE,
    _TOTAL_SEGMENTS,
    _TRANSACT_ACCESS,
    _TRANSACT_ITEMS,
    _TRANSACT_OPS,
    _WRITE,
    DYNAMODB_EVENT_SOURCE,
    LIGHT_ACCOUNT,
    LIGHT_CATEGORY,
    LIGHT_ERROR,
    LIGHT_EVENT_ID,
    LIGHT_IDENTITY,
    LIGHT_MANAGEMENT,
    LIGHT_OPERATION,
    LIGHT_PARAMS,
    LIGHT_REGION,
    LIGHT_TIME,
    _is_camel,
    _parse_time,
    _Request,
)
from auditor.kernel.general import (
    _SERVICE_LINKED,
    _STREAM_SERVICE,
    SERVICE,
    _api_call,
    _as_int,
    _Caller,
    _caller,
    _ci,
    _maybe_service,
    _normalize_general,
    _query_access,
    _read_request,
    _statement_access,
    _str_or_none,
)
from auditor.kernel.partiql import parse_statement
from auditor.kernel.write_shapes import write_shape

__all__ = ["light_item", "normalize_record", "normalize_typed", "single_item"]

# ``normalize_record`` reads the envelope of a plain ``dict`` record with one C-level ``itemgetter`` call and the
# single-item operations itself; the ``requestParameters`` of the others go to a fast reader below, only when all their
# keys are names CloudTrail logs (``_is_camel``). A fast reader never decides an unusual case: it returns None and the
# general path (the reference) redoes the work, so the two paths cannot disagree.


def _fast_query_or_scan(raw: dict[str, Any], name: str) -> _Request | None:
    """One table (and maybe an index): a Query with its key condition, a Scan with its segment."""
    table = raw.get(_TABLE_NAME)
    if type(table) is not str or not table:
        return None
    index = raw.get(_INDEX_NAME)
    if index is not None:
        index = _str_or_none(index)
    if name == "Query":
        item = _query_access(table, name, index, raw, False)
        return _READ, (item,), (table,), index, None, None, None, False
    segment = raw.get(_SEGMENT)
    if segment is not None:
        segment = _as_int(segment)
    total = raw.get(_TOTAL_SEGMENTS)
    if total is not None:
        total = _as_int(total)
    item = ItemAccess(table, name, _READ, index, None, None, True)
    return _READ, (item,), (table,), index, segment, total, None, False


def _fast_statement(raw: dict[str, Any], name: str) -> _Request | None:
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
    request_items = raw.get(_REQUEST_ITEMS)
    if type(request_items) is not dict or not request_items:
        return None
    out: list[ItemAccess] = []
    append = out.append
    for table, spec in request_items.items():
        if type(table) is not str or not table:
            return None
        eventual = False
        if type(spec) is dict:
            if not _is_camel(spec):
                return None
            keys = spec.get(_KEYS)
            if keys is None and _KEY in spec:
                keys = [spec[_KEY]]
            eventual = spec.get(_CONSISTENT_READ) is False  # logged per table (the API's KeysAndAttributes)
        elif type(spec) is list:
            keys = spec
        else:
            return None
        if type(keys) is list and keys:
            for key in keys:
                if type(key) is not dict:
                    return None
                append(ItemAccess(table, "BatchGetItem", _READ, None, key, None, False, None, None, eventual))
        elif keys is None or type(keys) is list:
            append(ItemAccess(table, "BatchGetItem", _READ, None, None, None, False, None, None, eventual))
        else:
            return None
    return _READ, tuple(out), tuple(request_items), None, None, None, None, False


_BATCH_PUT: Final = "BatchWriteItem:Put"
_BATCH_DELETE: Final = "BatchWriteItem:Delete"
#: ``write_shape`` of a batch delete (whatever its body: a delete's shape is its kind).
_DELETE_SHAPE: Final = write_shape(_BATCH_DELETE, None)


def _fast_batch_write(raw: dict[str, Any], name: str) -> _Request | None:
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
            body = request.get(_PUT_REQUEST)  # as _put_or_delete reads it
            if body is not None:
                operation = _BATCH_PUT
            else:
                body = request.get(_DELETE_REQUEST)
                if body is None:
                    return None
                operation = _BATCH_DELETE
            key = None
            if type(body) is dict:
                if not _is_camel(body):
                    return None
                key = body.get(_KEY)
                if key is not None and not isinstance(key, dict):
                    key = None
                shape = write_shape(operation, body) if operation is _BATCH_PUT else _DELETE_SHAPE
            elif isinstance(body, dict):
                return None
            else:
                shape = write_shape(operation, None)
            append(ItemAccess(table, operation, _WRITE, None, key, None, False, None, shape))
    if not out:
        return None
    return _WRITE, tuple(out), tuple(tables), None, None, None, None, False


def _fast_transact(raw: dict[str, Any], name: str) -> _Request | None:
    """The CloudTrail shape ``[{operation, tableName, key}]``; entries keep the general path's case-insensitive
    reading (CloudTrail mixes ``tableName``/``TableName`` and ``key``/``Key`` inside one transaction)."""
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
        item_access = _TRANSACT_ACCESS.get(operation, access)
        key = body.get("key")
        if key is not None and not isinstance(key, dict):
            key = None
        operation = prefix + operation
        shape = write_shape(operation, body) if item_access is _WRITE else None
        out.append(ItemAccess(table, operation, item_access, None, key, None, False, None, shape))
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
    "Query": (None, _fast_query_or_scan),
    "Scan": (None, _fast_query_or_scan),
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
    request = _fast_request(name, access, reader, raw)
    if request is None:
        request = _read_request(record, raw, False, _KIND[name], name)
    error_code = record.get(_ERROR_CODE)
    error_message = record.get(_ERROR_MESSAGE)
    caller = _caller(identity)
    return _api_call(
        event_id, time, name, request, raw, caller, account, region, user_agent, source_ip, error_code, error_message
    )


def _fast_request(name: str, access: Access | None, reader: _Reader | None, raw: dict[str, Any]) -> _Request | None:
    """What the usual shapes of ``raw`` tell (``_FAST_OPS[name]`` gives ``access`` and ``reader``); None: the general
    reader decides."""
    if access is not None:  # GetItem/PutItem/UpdateItem/DeleteItem, read here
        try:
            table = raw[_TABLE_NAME]
            key = raw[_KEY]
        except KeyError:
            return None
        if type(table) is str and table and key is not None:
            shape = write_shape(name, raw) if access is _WRITE else None
            item = ItemAccess(table, name, access, None, key if type(key) is dict else None, shape=shape)
            return access, (item,), (table,), None, None, None, None, False
    elif reader is not None and _is_camel(raw):  # a reader: always, when access is None
        try:
            return reader(raw, name)
        except Exception:  # an unforeseen shape: the general reader decides (and words any error)
            return None
    return None


#: The callers of the typed records, by the bytes of their ``userIdentity`` (equal bytes, equal identities). Bounded:
#: cleared when full, each entry no larger than the record it came from.
_CALLERS: Final[dict[bytes, _Caller]] = {}
_CALLERS_MAX: Final = 1024


def normalize_typed(full: FullRecord) -> ApiCall | None:
    """:func:`normalize_record` of a record :func:`auditor.kernel.decode.call_record` read, where that is one of the
    usual shapes of an operation the fast readers know: the same ``ApiCall`` as ``normalize_record`` of what orjson
    decodes. None for any other record (also one that is no DynamoDB table traffic, or one ``normalize_record``
    rejects): the caller then takes ``normalize_record`` of the record decoded in full, the reference."""
    record = full.record
    raw = full.params
    name = record.operation
    event_id = record.event_id
    if record.category == "Management" or record.management or not event_id or type(raw) is not dict:
        return None
    found = _FAST_OPS.get(name)
    if found is None:
        return None
    event_time = record.time
    time = _TIME_CACHE.get(event_time)
    if time is None:
        try:
            time = _parse_time(event_time)
        except MalformedRecordError:
            return None
    access, reader = found
    if reader is None:
        request = _fast_request(name, access, reader, raw)
    elif not _is_camel(raw):
        return None
    else:  # a reader, called here (one call fewer for the records that have one)
        try:
            request = reader(raw, name)
        except Exception:  # an unforeseen shape: the full path decides
            return None
    if request is None:
        return None
    key = full.identity_bytes  # (its hash, computed by call_record's cache, is kept in the bytes object)
    caller = _CALLERS.get(key)
    if caller is None:
        caller = _caller(full.identity)
        if len(_CALLERS) >= _CALLERS_MAX:
            _CALLERS.clear()
        _CALLERS[key] = caller
    account, region, agent, ip = record.account, record.region, record.agent, record.ip
    code = None if record.error is _UNSET else record.error
    message = None if record.error_message is _UNSET else record.error_message
    return _api_call(event_id, time, name, request, raw, caller, account, region, agent, ip, code, message)


#: The operations :func:`single_item` reads, and whether each writes.
_LIGHT_WRITES: Final[dict[str, bool]] = {
    "GetItem": False,
    "PutItem": True,
    "UpdateItem": True,
    "DeleteItem": True,
    "Query": False,
}


def single_item(record: dict[str, Any]) -> SingleItem | None:
    """The fields the aggregates read from the commonest records, without building their ``ApiCall``.

    Those records are successful GetItem, PutItem, UpdateItem, DeleteItem and Query calls whose envelope, table,
    key (or key condition), account and region are logged as CloudTrail logs them, at an event time already seen
    (and checked) by ``_parse_time``. For them, the result holds exactly what :func:`normalize_record` would give
    (same time, account, region, table, index, key, key condition, access and consistency); the caller is not read,
    because the aggregates do not count the callers of successful single-item calls and Queries (a record that may be
    an AWS service's, which the aggregates keep apart, is handed back). ``None`` for every
    other record, including any that ``normalize_record`` would reject or read differently: the caller then takes
    ``normalize_record``, the reference.
    """
    operation = record.get(_F_NAME)
    if type(operation) is not str or operation not in _LIGHT_WRITES:  # the other operations, told apart first
        return None
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
    if _maybe_service(record[_F_IDENTITY]):  # an AWS service's call: kept apart, read by the full path
        return None
    return _single_item_request(event_id, name, stamp, account, region, raw, is_write)


def light_item(record: LightRecord) -> SingleItem | None:
    """:func:`single_item` of a record decoded by :func:`auditor.kernel.decode.light` (its operation, source and field
    types already checked there), with the same result as :func:`single_item` of the whole record; an event time not
    seen yet is parsed here (None when ``_parse_time`` rejects it)."""
    if _COMPILED:  # one tuple: compiled, a msgspec Struct's attributes are generic look-ups
        fields: tuple[Any, ...] = _FIELDS(record)
        event_id: str = fields[LIGHT_EVENT_ID]
        account: str = fields[LIGHT_ACCOUNT]
        category: str = fields[LIGHT_CATEGORY]
        management: bool = fields[LIGHT_MANAGEMENT]
        error: object = fields[LIGHT_ERROR]
        identity: Any = fields[LIGHT_IDENTITY]  # an Identity (Any: no type check compiled)
        event_time: str = fields[LIGHT_TIME]
        name: str = fields[LIGHT_OPERATION]
        region: str = fields[LIGHT_REGION]
        raw: dict[str, Any] = fields[LIGHT_PARAMS]
    else:  # interpreted, the attributes (slots) are read faster than the tuple is built
        event_id, account, category = record.event_id, record.account, record.category
        management, error, identity = record.management, record.error, record.identity
        event_time, name = record.time, record.operation
        region, raw = record.region, record.params
    if category == "Management" or management or not event_id or not account or error is not _UNSET:
        return None
    ptype = identity.type
    if ptype == "AssumedRole":  # maybe an AWS service's call: kept apart, read by the full path (_maybe_service)
        arn = identity.arn
        if type(arn) is str and _SERVICE_LINKED in arn:
            return None
    elif ptype in (SERVICE, _STREAM_SERVICE):
        return None
    stamp = _STAMP_CACHE.get(event_time)
    if stamp is None:
        stamp = _new_stamp(event_time)
        if stamp is None:
            return None
    if name == "Query":
        return _single_item_request(event_id, name, stamp, account, region, raw, False, True)
    # GetItem, PutItem, UpdateItem, DeleteItem: _single_item_request's reading of them, inline (one call less and
    # no re-reads on the commonest records; tests/kernel/test_decode.py holds it to the full path).
    table = raw.get(_TABLE_NAME)
    key = raw.get(_KEY)
    if type(table) is not str or not table or type(key) is not dict or not key:
        return None
    for value in key.values():
        if type(value) is not str and not _plain_scalar(value):
            return None
    if name == "GetItem":  # the logged consistentRead (another spelling: the full path reads it)
        consistent = raw.get(_CONSISTENT_READ)
        if consistent is None and not _is_camel(raw):
            return None
        eventual = consistent is False
        return event_id, name, stamp[0], stamp[1], account, region, table, None, key, None, False, eventual, None
    shape = write_shape(name, raw)
    return event_id, name, stamp[0], stamp[1], account, region, table, None, key, None, True, False, shape


# Final copies: compiled code reads a Final from a C static, a name imported from an interpreted module from its dict.
_FIELDS: Final = FIELDS
_UNSET: Final = UNSET
#: Whether this module runs compiled (the opt-in build): :func:`light_item` then reads a typed record as a tuple.
_COMPILED: Final = not __file__.endswith(".py")


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
    plain: bool = False,
) -> SingleItem | None:
    """What :func:`single_item` reads of the request parameters, once the envelope passed (and :func:`light_item` of a
    Query's: it reads the other operations' inline, alike). With ``plain`` (a record msgspec decoded), None also when
    a value of the key is not a scalar that every JSON decoder reads alike: text, a boolean, null, a float, or an
    integer within 64 bits (orjson reads a longer integer as a float, msgspec exactly)."""
    index = condition = None
    table: Any
    key: Any
    if name == "Query":
        if not _is_camel(raw) or _EXCLUSIVE_START_KEY in raw:  # a page after a full one: metered by the full path
            return None
        table = raw.get(_TABLE_NAME)  # read as _fast_query_or_scan reads a Query, without its request tuple
        if type(table) is not str or not table:
            return None
        index = raw.get(_INDEX_NAME)
        if index is not None:
            index = _str_or_none(index)
        try:
            access = _query_access(table, name, index, raw, False)
        except Exception:  # an unforeseen shape: the full reader decides, as in normalize_record
            return None
        key, condition = access.key, access.condition
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
    shape = write_shape(name, raw) if is_write else None
    if plain and key is not None:
        for value in key.values():
            if not _plain_scalar(value):
                return None
    return event_id, name, stamp[0], stamp[1], account, region, table, index, key, condition, is_write, eventual, shape


def _plain_scalar(value: object) -> bool:
    """Whether a key's ``value`` is a scalar every JSON decoder reads alike: text, a boolean, null, a float, or an
    integer within 64 bits (see :func:`_single_item_request`)."""
    if type(value) is int:
        return _INT_MIN <= value <= _UINT_MAX
    kind = type(value)
    return kind is str or kind is bool or kind is float or value is None


def _new_stamp(event_time: str) -> tuple[datetime, float] | None:
    """The stamp of an event time :func:`light_item` sees first (``_parse_time`` checks it and caches it), or None
    when ``_parse_time`` rejects it."""
    try:
        _parse_time(event_time)
    except MalformedRecordError:
        return None
    return _STAMP_CACHE.get(event_time)  # _parse_time fills the cache with every time it accepts

"""The general reading of a CloudTrail record: the reference behaviour for any shape (other key casings, odd types,
truncated parameters), and the readers the fast path (:mod:`auditor.kernel.normalize`) shares with it.

Only the keys of the dicts it actually reads are lower-cased, once per dict, because CloudTrail mixes
``tableName``/``TableName`` and ``key``/``Key`` even inside one record. Attribute names (inside ``key``) and table
names (the keys of a ``requestItems`` map) are never lower-cased.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from auditor.exceptions import MalformedRecordError
from auditor.kernel.calls import Access, ApiCall, ItemAccess, Statement
from auditor.kernel.fields import (
    _ACCOUNT_ID,
    _ARN,
    _EXPRESSION_NAMES,
    _KEY,
    _KEY_CONDITION,
    _KEY_CONDITIONS,
    _KIND,
    _READ,
    _SESSION_CONTEXT,
    _SESSION_ISSUER,
    _TRANSACT_ACCESS,
    _TRANSACT_OPS,
    _TYPE,
    _WRITE,
    _WRITE_PREFIXES,
    _WRITE_VERBS,
    CONTROL_PLANE_OPERATIONS,
    DYNAMODB_EVENT_SOURCE,
    STREAM_READ_OPERATIONS,
    _is_camel,
    _Kind,
    _parse_time,
    _Request,
)
from auditor.kernel.key_condition import key_condition, key_condition_legacy
from auditor.kernel.partiql import parse_statement
from auditor.kernel.write_shapes import write_shape


def _ci(d: Mapping[str, Any]) -> dict[str, Any]:
    """A view of ``d`` with lower-cased keys (one level only; values are shared, not copied)."""
    return {k.lower(): v for k, v in d.items()}


def _str_or_none(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _as_int(value: Any) -> int | None:
    """``value`` as an integer (an integer, or a string of one), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


_TABLE_IN_TEXT: Final = re.compile(r'"tablename"\s*:\s*"((?:[^"\\]|\\.)+)"', re.IGNORECASE)

#: Session name of an assumed-role ARN (``arn:aws:sts::a:assumed-role/R/S`` -> ``S``). Keyed by the caller's ARN,
#: never by anything item-specific; cleared when full so memory stays flat.
_SESSION_CACHE: Final[dict[str, str | None]] = {}
_SESSION_CACHE_MAX: Final = 4096


def _session_name(arn: str) -> str | None:
    """The part of ``arn`` after its last ``/`` (None when empty or without ``/``), cached."""
    slash = arn.rfind("/")
    session = arn[slash + 1 :] or None if slash >= 0 else None
    if len(_SESSION_CACHE) >= _SESSION_CACHE_MAX:
        _SESSION_CACHE.clear()
    _SESSION_CACHE[arn] = session
    return session


#: The role of an assumed-role ARN (``arn:aws:sts::a:assumed-role/R/S`` -> ``arn:aws:iam::a:role/R``), for a record
#: without ``sessionContext.sessionIssuer``; cached like the session names.
_ROLE_CACHE: Final[dict[str, str]] = {}


def _role_of(arn: str) -> str:
    """The role whose session ``arn`` is (the session name dropped: one principal however many sessions, as
    ``sessionIssuer.arn`` names it, without the role's path, which the session ARN does not hold); another ARN as it
    is. The format is the IAM user guide's (Reference, IAM identifiers, "IAM ARNs": ``assumed-role``)."""
    found = _ROLE_CACHE.get(arn)
    if found is not None:
        return found
    parts = arn.split(":", 5)
    role = arn
    if len(parts) == 6 and parts[0] == "arn" and parts[2] == "sts" and parts[5].startswith("assumed-role/"):
        name = parts[5].split("/")[1]
        if name:
            role = f"arn:{parts[1]}:iam::{parts[4]}:role/{name}"
    if len(_ROLE_CACHE) >= _SESSION_CACHE_MAX:
        _ROLE_CACHE.clear()
    _ROLE_CACHE[arn] = role
    return role


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


_NO_TABLE: Final = "no table name in requestParameters or resources"


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


#: What :func:`_caller` reads of a ``userIdentity``: (principal, principal type, session name, its ``accountId``).
_Caller = tuple[str | None, str | None, str | None, str | None]
_NO_CALLER: Final[_Caller] = (None, None, None, None)


def _caller(identity: Any) -> _Caller:
    """The caller a ``userIdentity`` names: for an assumed role the session issuer's ARN with the session name, for
    an AWS service the service; and the identity's own ``accountId`` (None where not a non-empty string)."""
    if type(identity) is not dict:
        return _NO_CALLER
    session = None
    own_account = _str_or_none(identity.get(_ACCOUNT_ID))
    ptype = identity.get(_TYPE)
    arn = identity.get(_ARN)
    if ptype == "AssumedRole":
        context = identity.get(_SESSION_CONTEXT)
        issuer = context.get(_SESSION_ISSUER) if type(context) is dict else None
        principal = issuer.get(_ARN) if type(issuer) is dict else None
        if type(principal) is not str or not principal:  # no issuer logged: the role of the session's ARN
            principal = _role_of(arn) if type(arn) is str and arn else None
        if type(arn) is str:
            try:
                session = _SESSION_CACHE[arn]
            except KeyError:
                session = _session_name(arn)
        if type(arn) is str and _SERVICE_LINKED in arn:
            ptype = SERVICE
    elif ptype == SERVICE:
        principal = _str_or_none(identity.get("invokedBy")) or SERVICE
    else:
        principal = _str_or_none(arn)
        ptype = _str_or_none(ptype)
        if ptype == _STREAM_SERVICE:  # DynamoDB's own identity in its stream records (TTL deletes)
            principal, ptype = principal or _str_or_none(identity.get("principalId")) or SERVICE, SERVICE
    return principal, ptype, session, own_account


def _api_call(
    event_id: str,
    time: datetime,
    name: str,
    request: _Request,
    raw: dict[str, Any] | None,
    caller: _Caller,
    account: Any,
    region: Any,
    user_agent: Any,
    source_ip: Any,
    error_code: Any,
    error_message: Any,
) -> ApiCall:
    """The ``ApiCall`` of a record from its envelope fields (a value that is not a string counts as absent), what its
    request parameters (``raw``) tell, and its ``caller`` (:func:`_caller` of its ``userIdentity``). The account is
    ``recipientAccountId``, else the identity's ``accountId``."""
    principal, ptype, session, own_account = caller
    if type(account) is not str or not account:
        account = own_account
    access, items, tables, index, segment, total, statement, truncated = request
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
        ptype,
        session,
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
    if name == "Scan":
        _scan_page(call, raw)
    elif name == "Query":
        _query_page(call, raw)
    if name in _CONSISTENCY_LOGGED:
        _consistency(call, raw)
    return call


#: ``ApiCall.principal_type`` of a call an AWS service made on its own behalf, kept apart from user traffic: a
#: ``userIdentity`` of type ``AWSService`` (the principal is its ``invokedBy``, e.g. ``dynamodb.amazonaws.com`` for
#: Time to Live deletes) or ``Service`` (the identity DynamoDB's Time to Live stream records carry, principal
#: ``dynamodb.amazonaws.com``), or a service-linked role (named ``AWSServiceRole...``: global-table replication's
#: ``AWSServiceRoleForDynamoDBReplication``). An application role that a service assumes (AppSync, Step Functions)
#: is the application's traffic and stays a user's. Sources: the CloudTrail userIdentity element
#: (https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-user-identity.html), the
#: service-linked roles page (https://docs.aws.amazon.com/IAM/latest/UserGuide/using-service-linked-roles.html) and
#: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/time-to-live-ttl-streams.html. Every such
#: identity holds the text ``Service`` (what the light readers look for, :func:`_maybe_service`).
SERVICE: Final = "AWSService"
_STREAM_SERVICE: Final = "Service"
#: What the assumed-role ARN of a service-linked role holds (``assumed-role/AWSServiceRoleFor.../session``).
_SERVICE_LINKED: Final = "assumed-role/AWSServiceRole"


def _maybe_service(identity: Any) -> bool:
    """Whether :func:`_api_call` reads ``identity`` as an AWS service's (:data:`SERVICE`), for a fast reader that skips
    the identity: such a record is handed back to the full path."""
    if type(identity) is not dict:
        return False
    ptype = identity.get(_TYPE)
    if ptype == "AssumedRole":
        arn = identity.get(_ARN)
        return type(arn) is str and _SERVICE_LINKED in arn
    return ptype in (SERVICE, _STREAM_SERVICE)


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


def _query_page(call: ApiCall, raw: Mapping[str, Any] | None) -> None:
    """Set what a Query page logs about its pagination: ``limit`` and ``exclusiveStartKey`` (in ``scan_limit`` and
    ``scan_continuation``: a page that continues a Query shows that the page before it was not the last)."""
    if raw is None:
        return
    params = raw if _is_camel(raw) else _ci(raw)
    get = params.get
    call.scan_limit = _as_int(get("limit"))
    call.scan_continuation = bool(get("exclusiveStartKey") or get("exclusivestartkey"))


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
        kind = _Kind.UNKNOWN_DATA
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

    request = _read_request(record, raw, truncated, kind, name)

    call = _api_call(
        event_id,
        time,
        name,
        request,
        raw,
        _caller(get("userIdentity")),
        get("recipientAccountId"),
        get("awsRegion"),
        get("userAgent"),
        get("sourceIPAddress"),
        get("errorCode"),
        get("errorMessage"),
    )
    if labelled:
        call.management_labelled = True
    return call


def _read_request(
    record: Mapping[str, Any], raw: dict[str, Any] | None, truncated: bool, kind: _Kind, name: str
) -> _Request:
    """What ``requestParameters`` (``raw``; None when absent or truncated to text) tell, for any shape."""
    index: str | None = None
    segment: int | None = None
    total_segments: int | None = None
    statement: Statement | None = None
    items: tuple[ItemAccess, ...]
    tables: tuple[str, ...]

    try:
        if kind == _Kind.SINGLE:  # read the usual camelCase keys, lower-case only on a miss
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
            shape = write_shape(name, raw) if access is _WRITE else None
            items = (ItemAccess(table, name, access, None, key if type(key) is dict else None, shape=shape),)
            tables = (table,)
        else:
            params: dict[str, Any] | None = _ci(raw) if raw is not None else None
            ctx = _Ctx(record, truncated)
            if kind in (_Kind.QUERY, _Kind.SCAN):
                access = _READ
                table = ctx.table(params)
                if params is not None:
                    index = _str_or_none(params.get("indexname"))
                    if kind == _Kind.SCAN:
                        segment = _as_int(params.get("segment"))
                        total_segments = _as_int(params.get("totalsegments"))
                if kind == _Kind.QUERY and params is not None:
                    items = (_query_access(table, name, index, params, True),)
                else:
                    items = (ItemAccess(table, name, access, index, None, None, kind == _Kind.SCAN),)
                tables = (table,)
            elif kind == _Kind.STATEMENT:
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
                if kind == _Kind.BATCH_GET:
                    access = _READ
                    collected = _batch_get(params, ctx)
                elif kind == _Kind.BATCH_WRITE:
                    access = _WRITE
                    collected = _batch_write(params, ctx)
                elif kind in (_Kind.TRANSACT_WRITE, _Kind.TRANSACT_GET):
                    access = _WRITE if kind == _Kind.TRANSACT_WRITE else _READ
                    collected = _transact(params, ctx, name, access)
                elif kind == _Kind.BATCH_STATEMENT:
                    collected = _statements(params, ctx, name)
                    access = _WRITE if any(i.access is _WRITE for i in collected) else _READ
                else:  # _Kind.UNKNOWN_DATA
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


def _table_entries(params: dict[str, Any] | None, ctx: _Ctx) -> list[tuple[str, Any]]:
    """(table, spec) pairs of a batch's ``requestItems``: a map ``{table: spec}`` or a list of entries. What is not
    an entry with a table name is left out and marks the call truncated."""
    request_items = params.get("requestitems") if params is not None else None
    pairs: list[tuple[Any, Any]] = []
    if isinstance(request_items, dict):
        pairs.extend(request_items.items())
    elif isinstance(request_items, list):
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
    named = [(table, spec) for table, spec in pairs if isinstance(table, str) and table]
    if len(named) < len(pairs):
        ctx.truncated = True
    return named


def _listed(params: dict[str, Any] | None, ctx: _Ctx, *fields: str) -> list[Any]:
    """The list under the first of ``fields`` that ``params`` holds; empty without one, and a value that is not a
    list marks the call truncated."""
    value = None
    if params is not None:
        for field in fields:
            value = params.get(field)
            if value is not None:
                break
    if isinstance(value, list):
        return value
    if value is not None:
        ctx.truncated = True
    return []


def _batch_get(params: dict[str, Any] | None, ctx: _Ctx) -> list[ItemAccess]:
    out: list[ItemAccess] = []
    for table, spec in _table_entries(params, ctx):
        keys: Any
        eventual = False
        if isinstance(spec, list):
            keys = spec
        elif isinstance(spec, dict):
            lowered = _ci(spec)
            keys = lowered.get("keys")
            if keys is None and "key" in lowered:
                keys = [lowered["key"]]
            eventual = lowered.get("consistentread") is False  # per table, as the API's KeysAndAttributes
        else:
            keys = None
        if not isinstance(keys, list) or not keys:
            if keys is not None and not isinstance(keys, list):
                ctx.truncated = True
            out.append(ItemAccess(table, "BatchGetItem", _READ, eventual=eventual))
            continue
        for key in keys:
            if not isinstance(key, dict):
                ctx.truncated = True
            out.append(ItemAccess(table, "BatchGetItem", _READ, None, _key(key), eventual=eventual))
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


def _put_or_delete(request: Mapping[str, Any], put: str, delete: str) -> tuple[str, Any] | None:
    """The operation and body of a batch write request under the key ``put`` or ``delete``, or None."""
    body = request.get(put)
    if body is not None:
        return "BatchWriteItem:Put", body
    body = request.get(delete)
    return None if body is None else ("BatchWriteItem:Delete", body)


def _batch_write(params: dict[str, Any] | None, ctx: _Ctx) -> list[ItemAccess]:
    out: list[ItemAccess] = []
    for table, spec in _table_entries(params, ctx):
        requests = _write_requests(spec)
        if requests is None:
            ctx.truncated = True
            continue
        for request in requests:
            if not isinstance(request, dict):
                ctx.truncated = True
                continue
            lowered = _ci(request)
            found = _put_or_delete(lowered, "putrequest", "deleterequest")
            if found is not None:
                operation, body = found
            else:
                flat = lowered.get("operation")
                if not isinstance(flat, str):
                    ctx.truncated = True
                    continue
                operation = "BatchWriteItem:" + _TRANSACT_OPS.get(flat.lower(), flat)
                body = request
            lowered_body = _ci(body) if isinstance(body, dict) else None
            key = _key(lowered_body.get("key")) if lowered_body is not None else None
            shape = write_shape(operation, lowered_body)
            out.append(ItemAccess(table, operation, _WRITE, None, key, shape=shape))
    return out


def _transact(params: dict[str, Any] | None, ctx: _Ctx, name: str, access: Access) -> list[ItemAccess]:
    """TransactWriteItems/TransactGetItems: the CloudTrail shape ``[{operation, tableName, key}]`` or the API
    shape ``[{Put: {TableName, Key}}]``, with any key casing."""
    out: list[ItemAccess] = []
    prefix = name + ":"
    for entry in _listed(params, ctx, "requestitems", "transactitems"):
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
        item_access = _TRANSACT_ACCESS.get(operation, access)
        shape = write_shape(prefix + operation, body) if item_access is _WRITE else None
        key = _key(body.get("key"))
        out.append(ItemAccess(ctx.table(body), prefix + operation, item_access, None, key, shape=shape))
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
    prefix = name + ":"
    for entry in _listed(params, ctx, "requestitems", "transactstatements", "statements"):
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

"""Typed decoding of what the light path reads: one CloudTrail record's bytes -> :class:`LightRecord`, or None when
the full decoder (orjson, then :func:`auditor.kernel.normalize.normalize_record`) must decide.

msgspec decodes the fields :func:`auditor.kernel.normalize.light_item` reads into a typed record and checks the rest
of the record as JSON without building it. Its three rules against orjson (``tests/kernel/test_decode.py`` holds
them) are in docs/kernel.md.
"""

# mypyc: interpreted
# (msgspec does the work in C; a Struct subclass is a class mypyc does not compile)

from __future__ import annotations

from typing import Any, Final, Literal, get_args

import msgspec
import orjson
from msgspec import UNSET, Raw, UnsetType, field

from auditor.kernel.fields import LIGHT_POSITIONS


class Identity(msgspec.Struct, gc=False):
    """What the light path reads of ``userIdentity``: whether the caller may be an AWS service
    (:func:`auditor.kernel.general._maybe_service` reads the same two fields of the whole record). A value of
    another type there does not decode (the full decoder reads the record); the identity's other fields are skipped."""

    type: str | UnsetType = UNSET
    arn: str | UnsetType = UNSET


#: The default of :attr:`LightRecord.data` (always replaced).
_NO_BYTES: Final = memoryview(b"")

_LightOperation = Literal["GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query"]


class LightRecord(msgspec.Struct, gc=False, kw_only=True):
    """The fields of a successful GetItem, PutItem, UpdateItem, DeleteItem or Query that the light path reads, typed.

    A record of another operation or service, or missing one of the required fields, does not decode (the full
    decoder reads it). ``agent`` and ``ip`` are only required to be there; ``error`` to be absent.
    The other scalars of the envelope are typed too, so that a value orjson cannot read there is not skipped (rule 3;
    ``agent`` and ``ip`` are checked as JSON only, like the parts of the record that are not typed).

    The fields are declared in the order CloudTrail writes a record's keys: msgspec looks each key up from the field
    after the one it last matched, so a record in that order finds every field at the first try (about a tenth of
    the decoding time).
    """

    version: str | UnsetType = field(name="eventVersion", default=UNSET)
    identity: Identity = field(name="userIdentity")
    time: str = field(name="eventTime")
    source: Literal["dynamodb.amazonaws.com"] = field(name="eventSource")
    operation: _LightOperation = field(name="eventName")
    region: str = field(name="awsRegion")
    ip: Raw = field(name="sourceIPAddress")
    agent: Raw = field(name="userAgent")
    error: Raw | UnsetType = field(name="errorCode", default=UNSET)
    error_message: str | UnsetType = field(name="errorMessage", default=UNSET)
    params: dict[str, Any] = field(name="requestParameters")
    request_id: str | UnsetType = field(name="requestID", default=UNSET)
    event_id: str = field(name="eventID")
    read_only: bool | UnsetType = field(name="readOnly", default=UNSET)
    event_type: str | UnsetType = field(name="eventType", default=UNSET)
    api_version: str | UnsetType = field(name="apiVersion", default=UNSET)
    management: bool = field(name="managementEvent")
    account: str = field(name="recipientAccountId")
    shared_event_id: str | UnsetType = field(name="sharedEventID", default=UNSET)
    vpc_endpoint_id: str | UnsetType = field(name="vpcEndpointId", default=UNSET)
    vpc_endpoint_account: str | UnsetType = field(name="vpcEndpointAccountId", default=UNSET)
    category: str = field(name="eventCategory")
    console_session: str | UnsetType = field(name="sessionCredentialFromConsole", default=UNSET)
    #: The record's bytes (a view of the buffer: no copy), for the full decoder when
    #: :func:`~auditor.kernel.normalize.light_item` hands the record back. Set after decoding by :func:`light_record`
    #: and :func:`light_run` (over whatever a record may hold under this unlikely name).
    data: memoryview = field(name="ddbTrafficAuditorRecordBytes", default=_NO_BYTES)


#: ``msgspec.structs.astuple``: a :class:`LightRecord`'s fields as one tuple, in declaration order (compiled code
#: reads a tuple's items directly, a msgspec ``Struct``'s attributes only by generic look-ups), at the positions
#: ``auditor.kernel.fields.LIGHT_*`` (compiled code reads those as constants).
FIELDS: Final = msgspec.structs.astuple
if any(LightRecord.__struct_fields__[i] != name for name, i in LIGHT_POSITIONS.items()):  # pragma: no cover
    raise ImportError("LightRecord's fields moved: update auditor.kernel.fields.LIGHT_*")

#: Decodes one record's bytes into a :class:`LightRecord`, raising one of :data:`DECODE_ERRORS` when it cannot.
DECODE: Final = msgspec.json.Decoder(LightRecord).decode
DECODE_ERRORS: Final = (msgspec.DecodeError, RecursionError)


def light_record(buf: bytes, start: int, end: int) -> LightRecord | None:
    """The :class:`LightRecord` of the record in ``buf[start:end]``, or None: not a record the light path reads, not
    exactly one JSON object, or outside the rules above (the full decoder decides)."""
    data = buf[start:end]
    if not data.isascii():
        return None
    try:
        record = DECODE(data)
    except DECODE_ERRORS:
        return None
    record.data = memoryview(data)
    return record


# -- the other data events: typed envelope, request parameters and caller as orjson reads them -------------------


class _Resource(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """One entry of ``resources`` (never read on this path: typed only so that nothing in it goes unchecked)."""

    account: str | UnsetType = field(name="accountId", default=UNSET)
    type: str | UnsetType = UNSET
    arn: str | UnsetType = field(name="ARN", default=UNSET)


class _Tls(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """``tlsDetails`` (never read: typed as ``_Resource``)."""

    version: str | UnsetType = field(name="tlsVersion", default=UNSET)
    cipher: str | UnsetType = field(name="cipherSuite", default=UNSET)
    host: str | UnsetType = field(name="clientProvidedHostHeader", default=UNSET)


class CallRecord(msgspec.Struct, gc=False, kw_only=True, forbid_unknown_fields=True):
    """Every field of a record that :func:`auditor.kernel.normalize.normalize_typed` reads, typed as that reader
    wants it, except ``userIdentity`` and ``requestParameters`` (``Raw``: :func:`call_record` has orjson decode them);
    every other field the record may hold is typed too (an unknown one does not decode), so that no value goes
    unchecked (rule 3 applies only to the earlier of two ``userIdentity`` or ``requestParameters``, which msgspec
    skips). Declared in CloudTrail's key order, as :class:`LightRecord`."""

    version: str | UnsetType = field(name="eventVersion", default=UNSET)
    identity: Raw = field(name="userIdentity")
    time: str = field(name="eventTime")
    source: Literal["dynamodb.amazonaws.com"] = field(name="eventSource")
    operation: str = field(name="eventName")
    region: str = field(name="awsRegion")
    ip: str = field(name="sourceIPAddress")
    agent: str = field(name="userAgent")
    error: str | UnsetType = field(name="errorCode", default=UNSET)
    error_message: str | UnsetType = field(name="errorMessage", default=UNSET)
    params: Raw = field(name="requestParameters")
    response: None = field(name="responseElements", default=None)
    request_id: str | UnsetType = field(name="requestID", default=UNSET)
    event_id: str = field(name="eventID")
    read_only: bool | UnsetType = field(name="readOnly", default=UNSET)
    resources: list[_Resource] | UnsetType = UNSET
    event_type: str | UnsetType = field(name="eventType", default=UNSET)
    api_version: str | UnsetType = field(name="apiVersion", default=UNSET)
    management: bool = field(name="managementEvent")
    account: str = field(name="recipientAccountId")
    shared_event_id: str | UnsetType = field(name="sharedEventID", default=UNSET)
    vpc_endpoint_id: str | UnsetType = field(name="vpcEndpointId", default=UNSET)
    vpc_endpoint_account: str | UnsetType = field(name="vpcEndpointAccountId", default=UNSET)
    category: str = field(name="eventCategory")
    tls: _Tls | UnsetType = field(name="tlsDetails", default=UNSET)
    console_session: str | UnsetType = field(name="sessionCredentialFromConsole", default=UNSET)


#: A record's bytes: a ``bytes`` object, or a view of the buffer it was cut from (the reader's runs: no copy).
Bytes = bytes | memoryview


class FullRecord:
    """A record :func:`call_record` read: its typed fields, its request parameters and ``userIdentity`` as orjson
    decodes them, the bytes of that ``userIdentity`` (what a cache of callers is keyed on), and the record's bytes
    (for the full decoder, when the typed reader hands the record back)."""

    __slots__ = ("data", "identity", "identity_bytes", "params", "record")

    def __init__(self, record: CallRecord, params: Any, identity: Any, identity_bytes: bytes, data: Bytes) -> None:
        self.record, self.params, self.identity = record, params, identity
        self.identity_bytes, self.data = identity_bytes, data

    def __eq__(self, other: object) -> bool:
        return type(other) is FullRecord and self.data == other.data

    def __hash__(self) -> int:
        return hash(self.data)


#: The operations :class:`LightRecord` reads (a record of another one that :func:`call_record` reads skips it).
LIGHT_OPERATIONS: Final = frozenset(get_args(_LightOperation))
_CALL_DECODE: Final = msgspec.json.Decoder(CallRecord).decode
_LOADS: Final = orjson.loads
_CALL_ERRORS: Final = (msgspec.DecodeError, RecursionError, orjson.JSONDecodeError)
#: ``userIdentity`` values already decoded, by their bytes (a few callers make most calls). Bounded: cleared when
#: full, each entry no larger than the record it came from.
_IDENTITIES: Final[dict[bytes, Any]] = {}
_IDENTITIES_MAX: Final = 1024


def call_record(data: Bytes) -> FullRecord | None:
    """The :class:`FullRecord` of one record's bytes (ASCII only: rule 1), or None where orjson must decide (a field
    this decoder does not know or type alike, a value orjson rejects, not one JSON object). Where it reads a record,
    every value is what orjson gives, and orjson accepts the whole record (its every other value is typed), but for
    rule 3 in the earlier of two ``userIdentity`` or ``requestParameters``."""
    try:
        record = _CALL_DECODE(data)
        params = _LOADS(memoryview(record.params))
        raw = bytes(record.identity)
        identity = _IDENTITIES.get(raw)
        if identity is None:
            identity = _LOADS(raw)
            if len(_IDENTITIES) >= _IDENTITIES_MAX:
                _IDENTITIES.clear()
            _IDENTITIES[raw] = identity
    except _CALL_ERRORS:
        return None
    return FullRecord(record, params, identity, raw, data)

"""The typed decoder of the light path (``auditor/kernel/decode.py``) against the full path (orjson, then the
normaliser), the reference.

``light_record`` may hand a record over only when it is one JSON object, and then ``light_item`` of it must equal
``single_item`` of what orjson decodes, under the decoder's three rules: a record with a byte outside ASCII is handed
back (rule 1); a key holding an integer of 64 bits or more, or anything but a scalar, is handed back by ``light_item``
(rule 2); a number orjson cannot represent inside a part of the record that is not typed is read all the same
(rule 3), while one in the typed envelope is handed back. Hand-made slices, byte mutations of real record shapes and
generated JSON in every field check it; the reader's results with and without the typed decoder are compared below.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.kernel import reader, runs
from auditor.kernel.decode import DECODE, LIGHT_OPERATIONS, FullRecord, LightRecord, call_record, light_record
from auditor.kernel.normalize import light_item, normalize_record, normalize_typed, single_item
from auditor.kernel.reader import Deduper, InputSource, read_calls
from auditor.kernel.runs import light_run
from auditor.kernel.shards import Shard
from auditor.kernel.stats import IngestStats
from tests.factories import flat_calls, traffic

#: A successful GetItem as CloudTrail logs it (a data event as the CloudTrail User Guide shows it).
GET_ITEM: dict[str, Any] = {
    "eventVersion": "1.09",
    "userIdentity": {
        "type": "AssumedRole",
        "principalId": "AROAEXAMPLE:orders-fn",
        "arn": "arn:aws:sts::111122223333:assumed-role/orders-role/orders-fn",
        "accountId": "111122223333",
        "sessionContext": {"attributes": {"creationDate": "2026-03-02T08:00:00Z", "mfaAuthenticated": "false"}},
    },
    "eventTime": "2026-03-02T09:00:05Z",
    "eventSource": "dynamodb.amazonaws.com",
    "eventName": "GetItem",
    "awsRegion": "us-east-1",
    "sourceIPAddress": "10.0.1.23",
    "userAgent": "Boto3/1.34.0",
    "requestParameters": {"tableName": "Orders", "key": {"pk": "ORDER#1", "sk": "ITEM#1"}, "consistentRead": False},
    "responseElements": None,
    "requestID": "REQ1",
    "eventID": "11111111-2222-3333-4444-555555555555",
    "readOnly": True,
    "resources": [{"accountId": "111122223333", "type": "AWS::DynamoDB::Table", "ARN": "arn:aws:dynamodb:t/Orders"}],
    "eventType": "AwsApiCall",
    "apiVersion": "2012-08-10",
    "managementEvent": False,
    "recipientAccountId": "111122223333",
    "eventCategory": "Data",
    "tlsDetails": {"tlsVersion": "TLSv1.3", "cipherSuite": "TLS_AES_128_GCM_SHA256"},
}
BASE = orjson.dumps(GET_ITEM)
#: The top-level fields the decoder types (a number orjson cannot represent there must be handed back).
TYPED = {
    "eventSource",
    "eventName",
    "eventID",
    "eventTime",
    "requestParameters",
    "recipientAccountId",
    "awsRegion",
    "eventCategory",
    "managementEvent",
    "eventVersion",
    "requestID",
    "eventType",
    "apiVersion",
    "readOnly",
    "sharedEventID",
    "vpcEndpointId",
    "vpcEndpointAccountId",
    "sessionCredentialFromConsole",
    "errorMessage",
}


def _number_orjson_cannot_read(exc: orjson.JSONDecodeError) -> bool:
    return "number" in str(exc)


def _plain(key: Any) -> bool:
    return type(key) is dict and all(
        type(v) in (str, bool, float) or v is None or (type(v) is int and -(2**63) <= v < 2**64) for v in key.values()
    )


def check(data: bytes) -> LightRecord | None:
    """``light_record`` on ``data`` (also inside a larger buffer), and its promises when it reads a record."""
    got = light_record(data, 0, len(data))
    padded = b"  ,[" + data + b"]x"
    inside = light_record(padded, 4, 4 + len(data))  # only the slice is read
    assert (got is None) == (inside is None)
    if got is None:
        return None
    assert inside is not None and got == inside and got.data == data
    assert data.isascii()  # rule 1
    try:
        full = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        assert _number_orjson_cannot_read(exc), exc  # rule 3: the only record orjson rejects that is read
        return got
    assert type(full) is dict
    for name in TYPED & set(full):
        assert type(full[name]) is not float or name == "requestParameters"  # typed scalars are never numbers
    # As the reader does first for a new event time (single_item then knows the time).
    with contextlib.suppress(Exception):
        normalize_record(full)
    item, reference = light_item(got), single_item(full)
    if item is None and reference is not None:
        raw_key = got.params.get("key") if got.operation != "Query" else reference[8]
        assert raw_key is not None and not _plain(raw_key)  # rule 2
    else:
        assert item == reference
    return got


def _with(text: bytes, old: bytes, new: bytes) -> bytes:
    assert old in text
    return text.replace(old, new, 1)


#: Slices the decoder hands back: not one JSON object, not a call the light path reads, or outside its rules.
HANDED_BACK: dict[str, bytes] = {
    "not an object": b'["eventID"]',
    "empty": b"",
    "whitespace only": b"  \n",
    "truncated": BASE[:-1],
    "trailing content": BASE + b"}",
    "trailing comma": BASE[:-1] + b",}",
    "missing colon": _with(BASE, b'"eventName":', b'"eventName"'),
    "control character in a value": _with(BASE, b"Boto3", b"Bo\x01to3"),
    "tab in a string": _with(BASE, b"Boto3", b"Bo\tto3"),
    "non-ASCII text (rule 1)": _with(BASE, b"Boto3", "Böto3".encode()),
    "invalid UTF-8 in a skipped value (rule 1)": _with(BASE, b"Boto3", b"Bo\xfftoo"),
    "overlong UTF-8 (rule 1)": _with(BASE, b"Boto3", b"Bo\xc0\xafto3"),
    "lone surrogate escape": _with(BASE, b"Boto3", b"Bo\\ud800to3"),
    "unknown escape": _with(BASE, b"Boto3", b"Bo\\xto3"),
    "short unicode escape": _with(BASE, b"Boto3", b"Bo\\u12"),
    "other operation": _with(BASE, b'"GetItem"', b'"Scan"'),
    "operation not text": _with(BASE, b'"GetItem"', b'["GetItem"]'),
    "other service": _with(BASE, b'"dynamodb.amazonaws.com"', b'"s3.amazonaws.com"'),
    "no userAgent": _with(BASE, b'"userAgent":"Boto3/1.34.0",', b""),
    "a typed envelope scalar as a float": _with(BASE, b'"readOnly":true', b'"readOnly":1.5'),
    "1e400 in the typed envelope (rule 3)": _with(BASE, b'"eventVersion":"1.09"', b'"eventVersion":1e400'),
    "5,000 digits in the typed envelope (rule 3)": _with(
        BASE, b'"eventVersion":"1.09"', b'"eventVersion":' + b"9" * 5000
    ),
    "1e400 in the request parameters": _with(BASE, b'"consistentRead":false', b'"limit":1e400'),
    "leading zero": _with(BASE, b'"readOnly":true', b'"readOnly":01'),
    "NaN": _with(BASE, b'"requestID":"REQ1"', b'"requestID":NaN'),
    "misspelt literal": _with(BASE, b'"readOnly":true', b'"readOnly":tru'),
    "single quotes": _with(BASE, b'"REQ1"', b"'REQ1'"),
    "unbalanced nesting": _with(BASE, b'"tlsDetails":{', b'"tlsDetails":[[[]]{'),
    "nesting deeper than the interpreter's recursion limit": _with(BASE, b'"REQ1"', b"[" * 5000 + b"]" * 5000),
    "NUL after the object": BASE + b"\x00",
    "byte-order mark": b"\xef\xbb\xbf" + BASE,
}


@pytest.mark.parametrize("name", sorted(HANDED_BACK))
def test_records_outside_the_rules_are_handed_back(name: str) -> None:
    assert check(HANDED_BACK[name]) is None


#: Records the decoder reads: valid JSON with the shapes it must get exactly right.
READ: dict[str, bytes] = {
    "the reference GetItem": BASE,
    "pretty-printed": orjson.dumps(GET_ITEM, option=orjson.OPT_INDENT_2),
    "escapes in skipped values": _with(BASE, b"Boto3", b'Bo\\"to\\\\3\\/\\b\\f\\n\\r\\t\\u00e9\\uFFFF'),
    "escapes in a read value": _with(BASE, b"ORDER#1", b"ORDER\\u00231"),
    "an escaped key given after the real one (the last wins, as in orjson)": BASE[:-1] + b',"event\\u0049D":"x"}',
    "a read field given twice (the last wins, as in orjson)": BASE[:-1] + b',"requestID":"other"}',
    "integers in the key": _with(BASE, b'"ORDER#1"', b"-0"),
    "the largest 64-bit integer": _with(BASE, b'"ORDER#1"', b"18446744073709551615"),
    "literals in the request": _with(BASE, b'"key":{', b'"x":[true,false,null,[],{}],"key":{'),
    "numbers skipped in an untyped object": _with(BASE, b'"TLSv1.3"', b'[0,-1,12.5,true,null,{"a":[]}]'),
    "1e400 in an untyped object (rule 3)": _with(BASE, b'"TLSv1.3"', b"1e400"),
    "5,000 digits in an untyped object (rule 3)": _with(BASE, b'"mfaAuthenticated":"false"', b'"n":' + b"9" * 5000),
    "1e400 in a field CloudTrail does not write (rule 3)": BASE[:-1] + b',"newField":[1e400]}',
    "1e400 as the user agent, checked as JSON only (rule 3)": _with(BASE, b'"Boto3/1.34.0"', b"1e400"),
    "1e400 as the source address, checked as JSON only (rule 3)": _with(BASE, b'"10.0.1.23"', b"1e400"),
    "a failed call (light_item hands it back)": BASE[:-1] + b',"errorCode":"ValidationException"}',
    "consistency as text": _with(BASE, b'"consistentRead":false', b'"consistentRead":"false"'),
    "no consistency flag": _with(BASE, b',"consistentRead":false', b""),
    "a Query": orjson.dumps(
        {
            **GET_ITEM,
            "eventName": "Query",
            "requestParameters": {
                "tableName": "Orders",
                "indexName": "by-status",
                "keyConditionExpression": "#n0 = :v0 AND createdAt > :t",
                "expressionAttributeNames": {"#n0": "status"},
                "limit": 10,
            },
        }
    ),
}


@pytest.mark.parametrize("name", sorted(READ))
def test_records_inside_the_rules_are_read_exactly(name: str) -> None:
    assert check(READ[name]) is not None


@pytest.mark.parametrize(
    "value", [b"18446744073709551616", b"-9223372036854775809", b'{"S":"x"}', b'["a"]', b"123456789012345678901234"]
)
def test_a_key_orjson_reads_otherwise_is_handed_back_by_the_light_item(value: bytes) -> None:
    data = _with(BASE, b'"ORDER#1"', value)
    record = check(data)  # rule 2: read, then handed back by light_item
    assert record is not None and light_item(record) is None
    assert single_item(orjson.loads(data)) is not None  # the full path reads it (as orjson reads the number)


#: An AWS service's identity (the full path keeps its calls apart), written with escapes and duplicate keys.
SERVICE_IDENTITIES: dict[str, bytes] = {
    "AWSService, a letter escaped": _with(BASE, b'"type":"AssumedRole"', b'"type":"AWS\\u0053ervice"'),
    "Service, a letter escaped": _with(BASE, b'"type":"AssumedRole"', b'"type":"\\u0053ervice"'),
    "a service-linked role, a letter escaped": _with(
        BASE, b"assumed-role/orders-role", b"assumed-role/AWS\\u0053erviceRoleFor"
    ),
    "the type given again (the last wins)": _with(
        BASE, b'"type":"AssumedRole",', b'"type":"AssumedRole","type":"AWSService",'
    ),
}


@pytest.mark.parametrize("name", sorted(SERVICE_IDENTITIES))
def test_an_aws_services_identity_is_handed_back_however_it_is_written(name: str) -> None:
    data = SERVICE_IDENTITIES[name]
    record = check(data)
    assert record is not None and light_item(record) is None
    # the full path keeps the call apart as an AWS service's
    call = normalize_record(orjson.loads(data))
    assert call is not None and call.principal_type == "AWSService"


def test_an_identity_the_typed_decoder_cannot_read_is_handed_back() -> None:
    assert check(_with(BASE, b'"type":"AssumedRole"', b'"type":null')) is None
    assert check(_with(BASE, b'"arn":"arn:aws:sts', b'"arn":["arn:aws:sts"],"x":"')) is None


def test_generated_traffic_is_read_as_the_full_decoder_reads_it() -> None:
    read = 0
    for record in traffic(3000, seed=11):
        read += check(orjson.dumps(record)) is not None
    assert read > 2000  # most of the traffic takes the typed decoder


#: Byte-level mutations of real record slices: each must be handed back or read exactly, never anything else.
_REAL = [BASE, *(orjson.dumps(r) for r in traffic(40, seed=3))]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, len(_REAL) - 1),
    at=st.floats(0, 1),
    cut=st.integers(0, 4),
    insert=st.binary(max_size=6)
    | st.sampled_from(
        [b'"', b"\\", b"\\u", b"\\ud800", b"{", b"}", b"[", b"]", b",", b":", b"1e400", b"\x00", b"\xc3"]
    ),
)
def test_mutated_records_are_handed_back_or_read_exactly(which: int, at: float, cut: int, insert: bytes) -> None:
    data = _REAL[which]
    i = int(at * len(data))
    check(data[:i] + insert + data[i + cut :])


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _dumps(value: Any) -> bytes:
    """JSON of any value, integers of any size and text outside ASCII included (orjson refuses big integers)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@settings(max_examples=300, deadline=None)
@given(
    values=st.dictionaries(st.sampled_from([*GET_ITEM, "sharedEventID", "x"]), _JSON, max_size=6),
    raw_number=st.sampled_from([b"1e400", b"-1e400", b"9" * 400, b"18446744073709551616", b"1.5e-400"]),
    where=st.sampled_from([b'"TLSv1.3"', b'"ORDER#1"', b'"1.09"', b'"REQ1"', b'"false"']),
)
def test_any_json_anywhere_is_handed_back_or_read_exactly(
    values: dict[str, Any], raw_number: bytes, where: bytes
) -> None:
    check(_dumps({**GET_ITEM, **values}))
    check(_dumps({**GET_ITEM, "requestParameters": {**GET_ITEM["requestParameters"], **values}}))
    check(_with(BASE, where, raw_number))  # numbers orjson reads otherwise or not at all, in every kind of place


#: Request parameters of each operation the light path reads, as CloudTrail logs them.
_LIGHT_PARAMS: dict[str, dict[str, Any]] = {
    "GetItem": {"tableName": "Orders", "key": {"pk": "ORDER#1", "sk": "ITEM#1"}, "consistentRead": True},
    "PutItem": {"tableName": "Orders", "key": {"pk": "ORDER#1"}, "item": ["pk", "total"], "returnValues": "NONE"},
    "UpdateItem": {
        "tableName": "Orders",
        "key": {"pk": "ORDER#1", "sk": 7},
        "updateExpression": "SET #t = :t REMOVE note",
        "expressionAttributeNames": {"#t": "total"},
    },
    "DeleteItem": {"tableName": "Orders", "key": {"pk": "ORDER#1", "sk": 2.5}},
    "Query": {
        "tableName": "Orders",
        "keyConditionExpression": "#k = :k",
        "expressionAttributeNames": {"#k": "pk"},
        "key": {"pk": "ORDER#1"},
    },
}
#: Changes to a record (top-level fields, or ``params`` to merge into its request parameters) that the light path
#: must read exactly as the full path does, or hand back.
_UNUSUAL: dict[str, dict[str, Any]] = {
    "as logged": {},
    "PascalCase table and key": {"params": {"TableName": "Other", "Key": {"pk": "X"}}},
    "only PascalCase": {"replace": {"TableName": "Orders", "Key": {"pk": "ORDER#1"}}},
    "consistency in another spelling": {"params": {"ConsistentRead": False}},
    "consistency lower-cased, no camel flag": {"drop": ["consistentRead"], "params": {"consistentread": False}},
    "consistency as text": {"params": {"consistentRead": "false"}},
    "eventual": {"params": {"consistentRead": False}},
    "a key beyond 64 bits": {"params": {"key": {"pk": 18446744073709551616}}},
    "a key below 64 bits": {"params": {"key": {"pk": -9223372036854775809}}},
    "the largest 64-bit key": {"params": {"key": {"pk": 18446744073709551615, "sk": -9223372036854775808}}},
    "a key holding a map": {"params": {"key": {"pk": {"S": "x"}}}},
    "a key holding a list": {"params": {"key": {"pk": ["x"]}}},
    "literals in the key": {"params": {"key": {"pk": True, "sk": None}}},
    "an empty key": {"params": {"key": {}}},
    "a key not a map": {"params": {"key": "ORDER#1"}},
    "an empty table": {"params": {"tableName": ""}},
    "a table not text": {"params": {"tableName": 7}},
    "non-ASCII table and key": {"params": {"tableName": "Bestellungen-ä", "key": {"pk": "Grüße", "sk": "€"}}},
    "non-ASCII account": {"recipientAccountId": "1111é"},
    "an AWS service": {"userIdentity": {"type": "AWSService", "invokedBy": "dynamodb.amazonaws.com"}},
    "a service-linked role": {
        "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/AWSServiceRoleForX/s"}
    },
    "an error code": {"errorCode": "ConditionalCheckFailedException", "errorMessage": "The conditional request failed"},
    "an empty error code": {"errorCode": ""},
    "a management label": {"eventCategory": "Management"},
    "an empty event id": {"eventID": ""},
    "an empty account": {"recipientAccountId": ""},
    "a new event time": {"eventTime": "2026-03-02T09:17:21.25+02:00"},
    "an event time the full path rejects": {"eventTime": "2026-13-02T09:00:05Z"},
    "a put of a map": {"params": {"item": {"pk": {"S": "ORDER#1"}, "total": {"N": "1"}}}},
    "an update in the legacy form": {
        "drop": ["updateExpression"],
        "params": {"attributeUpdates": {"total": {"action": "PUT"}, "note": {"action": "DELETE"}}},
    },
    "an update lower-cased": {"drop": ["updateExpression"], "params": {"updateexpression": "SET a = :a"}},
    "a Query page after a full one": {"params": {"exclusiveStartKey": {"pk": "ORDER#1"}}},
    "an index": {"params": {"indexName": "by-status"}},
    "an index not text": {"params": {"indexName": 3}},
}


def _unusual(operation: str, change: dict[str, Any]) -> bytes:
    params = {k: v for k, v in _LIGHT_PARAMS[operation].items() if k not in change.get("drop", ())}
    params = change.get("replace", {**params, **change.get("params", {})})
    top = {k: v for k, v in change.items() if k not in ("drop", "params", "replace")}
    record = {**GET_ITEM, **top, "eventName": operation, "requestParameters": params}
    return _dumps(record)


@pytest.mark.parametrize("operation", sorted(_LIGHT_PARAMS))
@pytest.mark.parametrize("name", sorted(_UNUSUAL))
def test_light_item_reads_unusual_records_as_the_full_path(operation: str, name: str) -> None:
    """``light_item`` reads each operation inline: on any record msgspec decodes (outside ASCII too, which the
    reader hands to orjson first), what it gives is what ``single_item`` gives for the record decoded in full, or
    None where only the full path reads the record exactly (rule 2) or the full path is the reader."""
    data = _unusual(operation, _UNUSUAL[name])
    record = DECODE(data)
    full = orjson.loads(data)
    with contextlib.suppress(Exception):
        normalize_record(full)  # as the reader does first for a new event time
    item, reference = light_item(record), single_item(full)
    if item is None and reference is not None:
        key = record.params.get("key")
        assert not _plain(key), name  # rule 2: the key as msgspec reads it
    else:
        assert item == reference, name
    if name == "as logged":
        assert item is not None


# -- light_run(): consecutive records of a Records array ----------------------------------------------------------


def _run_reference(buf: bytes, pos: int, limit: int, sep: bytes, advance: int, most: int) -> tuple[list[Any], int]:
    """What ``light_run`` must give: one record at a time, typed where ``light_record`` reads it, else where
    ``call_record`` reads a record of another operation, else orjson."""
    done: list[Any] = []
    while len(done) < most:
        cut = buf.find(sep, pos, limit)
        if cut < 0:
            break
        typed: Any = light_record(buf, pos, cut + 1)
        if typed is None and buf[pos : cut + 1].isascii():
            full = call_record(buf[pos : cut + 1])
            typed = full if full is not None and full.record.operation not in LIGHT_OPERATIONS else None
        if typed is None:
            try:
                typed = orjson.loads(buf[pos : cut + 1])
            except orjson.JSONDecodeError:
                break
        done.append(typed)
        pos = cut + advance
    return done, pos


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, len(_REAL) - 1), min_size=1, max_size=8),
    mutate=st.none() | st.tuples(st.integers(0, 7), st.floats(0, 1), st.binary(max_size=4)),
    gap=st.sampled_from([b",", b",\n", b", ", b",\n\t "]),
    most=st.integers(1, 9),
    tail=st.sampled_from([b"]}", b"", b",", b',{"a":1}]}']),
)
def test_a_run_reads_what_one_record_at_a_time_reads(
    picks: list[int], mutate: tuple[int, float, bytes] | None, gap: bytes, most: int, tail: bytes
) -> None:
    parts = [_REAL[i] for i in picks]
    if mutate is not None and mutate[0] < len(parts):
        text = parts[mutate[0]]
        at = int(mutate[1] * len(text))
        parts[mutate[0]] = text[:at] + mutate[2] + text[at + 1 :]
    buf = b'{"Records":[' + gap.join(parts) + tail
    sep = b"}" + gap + b'{"'
    for limit in (len(buf), len(buf) // 2, len(buf) + 50):
        args = (buf, 12, limit, sep, len(gap) + 1, most)
        assert light_run(*args) == _run_reference(*args)


def test_a_run_stops_at_most_and_at_the_first_record_that_is_not_one_json_value() -> None:
    parts = [orjson.dumps(r) for r in traffic(50, seed=5)]
    parts[30] = HANDED_BACK["lone surrogate escape"]
    buf = b'{"Records":[' + b",".join(parts) + b"]}"
    sep = b'},{"eventVersion":'  # as the reader learns it from the gap and the next record's first key
    done, pos = light_run(buf, 12, len(buf), sep, 2, 1000)
    assert len(done) == 30
    assert buf.startswith(parts[30], pos)  # where the first record not read starts
    first, after = light_run(buf, 12, len(buf), sep, 2, 3)
    assert first == done[:3] and buf.startswith(parts[3], after)


@pytest.mark.parametrize(
    "args",
    [(b"{}", 0, 2, b"", 1, 1), (b"{}", 0, 2, b"}", 0, 1), (b"{}", 0, 2, b"}", 1, 0), (b"{}", 0, 2, b"}", 1, -1)],
)
def test_a_run_refuses_arguments_that_could_not_move_forward(args: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError):
        light_run(*args)


# -- the reader with and without the typed decoder ----------------------------------------------------------------


def _read_all(data: bytes) -> tuple[list[Any], IngestStats, int]:
    """The calls of ``data`` in order, the counters, and the number of batches they came in."""
    stats = IngestStats()
    source = InputSource(name="t.json", open=lambda: io.BytesIO(data))
    batches = list(read_calls(source, stats, Deduper(), light=True))
    return flat_calls(batches), stats, len(batches)


def _trail(seed: int) -> bytes:
    records: list[Any] = [*traffic(1500, seed=seed), GET_ITEM, GET_ITEM]  # a duplicate counts once
    parts = [orjson.dumps(r) for r in records]
    parts[10] = HANDED_BACK["lone surrogate escape"]  # malformed for orjson: skipped either way
    parts[11] = READ["an escaped key given after the real one (the last wins, as in orjson)"]
    parts[12] = READ["escapes in skipped values"].replace(b"111111", b"999999")
    parts[13] = orjson.dumps(records[13]) + b" \t "  # another gap after this record than after the others
    parts[14] = _with(BASE, b'"ORDER#1"', b"18446744073709551616").replace(b"5555", b"7777")  # rule 2
    return b'{"Records":[' + b",\n".join(parts) + b"]}"


def test_the_reader_gives_the_same_calls_with_and_without_the_typed_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _trail(2)
    calls, stats, _ = _read_all(data)
    monkeypatch.setattr(reader, "light_record", lambda buf, start, end: None)
    monkeypatch.setattr(reader, "light_run", None)
    without, without_stats, _ = _read_all(data)
    assert (calls, stats) == (without, without_stats)
    assert stats.records_skipped >= 1
    assert stats.duplicates_dropped == 1


def test_runs_hand_out_the_calls_of_many_records_in_one_batch_in_input_order(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _trail(4)
    calls, stats, batches = _read_all(data)
    monkeypatch.setattr(reader, "light_run", None)  # one record at a time: one batch a call
    one_by_one, one_stats, singles = _read_all(data)
    assert (calls, stats) == (one_by_one, one_stats)  # the same calls in the same order, the same counts
    assert singles == len(one_by_one) and batches < len(calls) / 10  # runs did carry the calls in batches


@pytest.mark.parametrize("at", ["first", "middle", "last"])
def test_a_record_under_rule_3_is_read_wherever_it_stands_in_the_records_array(at: str) -> None:
    # 1e400 in a part nothing reads: the typed decoder reads the record (rule 3) in the middle of the array, where the
    # runs cut it; the first and the last record, which the slower paths cut, are read the same way
    poison = READ["1e400 in an untyped object (rule 3)"].replace(b"5555", b"6666")
    parts = [orjson.dumps({**GET_ITEM, "eventID": f"e-{i}"}) for i in range(9)]
    parts.insert({"first": 0, "middle": 4, "last": 9}[at], poison)
    calls, stats, _ = _read_all(b'{"Records":[' + b",".join(parts) + b"]}")
    assert (stats.records_read, stats.records_skipped, stats.data_events) == (10, 0, 10)
    assert len(calls) == 10


# -- call_record(): the other operations' records, typed but for their parameters and caller ----------------------


def check_call(data: bytes) -> FullRecord | None:
    """``call_record`` on ``data`` (ASCII, as its callers hand it) and its promises: where it reads a record, orjson
    reads the whole record (rule 3 only in the earlier of a ``requestParameters`` or ``userIdentity`` given twice),
    the parameters and caller are orjson's, and ``normalize_typed`` gives ``normalize_record``'s call of the record
    orjson decodes, or hands the record back."""
    if not data.isascii():
        return None
    full = call_record(data)
    if full is None:
        return None
    try:
        whole = orjson.loads(data)
    except orjson.JSONDecodeError as exc:  # rule 3, only in the earlier of a parameters or caller given twice
        assert _number_orjson_cannot_read(exc), exc
        assert data.count(b'"requestParameters"') + data.count(b'"userIdentity"') > 2 or b"\\u" in data
        return full
    assert full.data == data
    assert full.params == whole["requestParameters"] and type(full.params) is type(whole["requestParameters"])
    assert full.identity == whole["userIdentity"]
    assert (full.record.event_id, full.record.operation, full.record.time) == (
        whole["eventID"],
        whole["eventName"],
        whole["eventTime"],
    )
    with contextlib.suppress(Exception):  # as the reader does first for a new event time
        normalize_record(whole)
    call = normalize_typed(full)
    if call is not None:
        assert call == normalize_record(whole)
    return full


_ERROR = {"errorCode": "ProvisionedThroughputExceededException", "errorMessage": "Rate exceeded"}
#: The generated traffic of the operations the light path does not read, and failed calls of every operation.
_OTHERS = [r for r in traffic(3000, seed=13) if r["eventName"] not in LIGHT_OPERATIONS]
_FAILED = [{**r, **_ERROR} for r in traffic(200, seed=17)]


def test_other_operations_and_failed_calls_are_read_as_the_full_decoder_reads_them() -> None:
    assert {r["eventName"] for r in _OTHERS} >= {"BatchGetItem", "BatchWriteItem", "ExecuteStatement", "Scan"}
    typed = 0
    for record in [*_OTHERS, *_FAILED]:
        full = check_call(orjson.dumps(record))
        assert full is not None  # every generated record is one call_record reads
        typed += normalize_typed(full) is not None
    assert typed > 0.9 * (len(_OTHERS) + len(_FAILED))  # and most take the typed reader


_BATCH = orjson.dumps(next(r for r in _OTHERS if r["eventName"] == "BatchWriteItem"))


#: Records call_record hands to orjson: a value it does not type alike, anywhere (nothing is left unchecked).
CALL_HANDED_BACK: dict[str, bytes] = {
    "1e400 in the parameters": _BATCH.replace(b'"requestItems":', b'"limit":1e400,"requestItems":', 1),
    "1e400 in the caller": _BATCH.replace(b'"accountId":', b'"n":1e400,"accountId":', 1),
    "5,000 digits in the caller": _BATCH.replace(b'"accountId":', b'"n":' + b"9" * 5000 + b',"accountId":', 1),
    "1e400 in resources": _BATCH.replace(b'"ARN":', b'"n":1e400,"ARN":', 1),
    "a number in resources": _BATCH.replace(b'"type":"AWS::DynamoDB::Table"', b'"type":1', 1),
    "1e400 as the response": _BATCH.replace(b'"responseElements":null', b'"responseElements":1e400', 1),
    "a response": _BATCH.replace(b'"responseElements":null', b'"responseElements":{"x":1}', 1),
    "1e400 in a field CloudTrail does not write": _BATCH[:-1] + b',"newField":[1e400]}',
    "a field CloudTrail does not write": _BATCH[:-1] + b',"newField":1}',
    "1e400 in the envelope": _with(_BATCH, b'"eventVersion":"1.08"', b'"eventVersion":1e400'),
    "the error code null": _BATCH[:-1] + b',"errorCode":null}',
    "lone surrogate escape in the parameters": _BATCH.replace(b'"requestItems":', b'"x":"\\ud800","requestItems":', 1),
    "lone surrogate escape in the caller": _BATCH.replace(b'"accountId":', b'"x":"\\ud800","accountId":', 1),
    "lone surrogate escape in the user agent": _BATCH.replace(b'"userAgent":"', b'"userAgent":"\\ud800', 1),
    "nesting deeper than orjson reads": _BATCH.replace(
        b'"requestItems":', b'"x":' + b"[" * 1100 + b"]" * 1100 + b',"requestItems":', 1
    ),
    "truncated": _BATCH[:-1],
    "another service": _BATCH.replace(b'"dynamodb.amazonaws.com"', b'"s3.amazonaws.com"', 1),
}


@pytest.mark.parametrize("name", sorted(CALL_HANDED_BACK))
def test_records_call_record_does_not_type_alike_are_handed_to_orjson(name: str) -> None:
    data = CALL_HANDED_BACK[name]
    assert data != _BATCH
    assert call_record(data) is None


def test_rule_3_applies_only_to_the_earlier_of_parameters_or_a_caller_given_twice() -> None:
    for key in (b'"requestParameters"', b'"request\\u0050arameters"', b'"userIdentity"'):
        data = _BATCH.replace(b'"userIdentity":', key + b':[1e400],"userIdentity":', 1)
        full = call_record(data)
        assert full is not None  # read, with the later value (the one orjson would keep)
        assert (full.params, full.identity) == (
            orjson.loads(_BATCH)["requestParameters"],
            orjson.loads(_BATCH)["userIdentity"],
        )
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(data)


@pytest.mark.parametrize(
    "value", [b"18446744073709551616", b"123456789012345678901234", b"1.5e-400", b'"\\u00e9"', b"-0.0", b"[1,{}]"]
)
def test_parameters_and_caller_are_orjsons_values(value: bytes) -> None:
    for where in (b'"requestItems":', b'"accountId":'):
        data = _BATCH.replace(where, b'"x":' + value + b"," + where, 1)
        full = check_call(data)
        assert full is not None


def test_the_caches_of_callers_give_fresh_values_and_stay_bounded() -> None:
    from auditor.kernel.decode import _IDENTITIES, _IDENTITIES_MAX
    from auditor.kernel.normalize import _CALLERS, _CALLERS_MAX

    for n in range(max(_IDENTITIES_MAX, _CALLERS_MAX) + 10):
        # another caller each time (another role, the identity of another account)
        data = _BATCH.replace(b'"accountId":"', b'"accountId":"%d' % n, 1).replace(b":role/", b":role/r%d" % n, 1)
        full = check_call(data)  # each read as orjson reads it, the call as normalize_record's
        assert full is not None and normalize_typed(full) is not None
        assert len(_IDENTITIES) <= _IDENTITIES_MAX and len(_CALLERS) <= _CALLERS_MAX
    again = check_call(_BATCH)
    assert again is not None and again.identity == orjson.loads(_BATCH)["userIdentity"]


_REAL_OTHERS = [_BATCH, *(orjson.dumps(r) for r in _OTHERS[:40]), *(orjson.dumps(r) for r in _FAILED[:10])]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, len(_REAL_OTHERS) - 1),
    at=st.floats(0, 1),
    cut=st.integers(0, 4),
    insert=st.binary(max_size=6)
    | st.sampled_from(
        [b'"', b"\\", b"\\u", b"\\ud800", b"{", b"}", b"[", b"]", b",", b":", b"1e400", b"null", b"1", b'"x":1,']
    ),
)
def test_mutated_other_records_are_handed_back_or_read_exactly(which: int, at: float, cut: int, insert: bytes) -> None:
    data = _REAL_OTHERS[which]
    i = int(at * len(data))
    check_call(data[:i] + insert + data[i + cut :])


@settings(max_examples=300, deadline=None)
@given(
    values=st.dictionaries(st.sampled_from([*orjson.loads(_BATCH), "x"]), _JSON, max_size=6),
    raw_number=st.sampled_from([b"1e400", b"-1e400", b"9" * 400, b"18446744073709551616", b"1.5e-400"]),
    where=st.sampled_from([b'"TLSv1.3"', b'"1.08"', b'"Accounts"', b'"Data"', b"false", b"null", b'"AssumedRole"']),
)
def test_any_json_anywhere_in_other_records_is_handed_back_or_read_exactly(
    values: dict[str, Any], raw_number: bytes, where: bytes
) -> None:
    record = orjson.loads(_BATCH)
    check_call(_dumps({**record, **values}))
    check_call(_dumps({**record, "requestParameters": {**record["requestParameters"], **values}}))
    check_call(_dumps({**record, "userIdentity": {**record["userIdentity"], **values}}))
    if where in _BATCH:
        check_call(_with(_BATCH, where, raw_number))


def test_a_shard_owns_a_typed_record_as_it_owns_the_record_decoded_in_full() -> None:
    for data in _REAL_OTHERS:
        full = call_record(data)
        assert full is not None
        for shard in (Shard(0, 2), Shard(1, 2), Shard(2, 3)):
            assert shard.owns(full) == shard.owns(orjson.loads(data))


def test_the_reader_gives_the_same_calls_with_and_without_the_typed_call_decoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records: list[Any] = [*traffic(1500, seed=4), *_FAILED[:50]]
    parts = [orjson.dumps(r) for r in records]
    parts[7] = CALL_HANDED_BACK["1e400 in resources"]  # malformed for orjson: skipped either way
    parts[8] = CALL_HANDED_BACK["a field CloudTrail does not write"]
    data = b'{"Records":[' + b",\n".join(parts) + b"]}"
    calls, stats, _ = _read_all(data)
    monkeypatch.setattr(runs, "call_record", lambda data: None)
    without, without_stats, _ = _read_all(data)
    assert (calls, stats) == (without, without_stats)
    assert stats.records_skipped >= 1

"""The record reader's partial decoder (``auditor/kernel/_fastrecord.c``) against orjson, the reference.

``light(buf, start, end)`` may return the fields :func:`auditor.kernel.normalize.single_item` reads only for a slice
that orjson decodes without error, and those fields must then equal orjson's (same types too: ``True`` is not ``1``)
and give the same ``single_item``. Everything else must come back as None, for the reader to decode in full. These
tests check that on hand-made hostile slices, on mutations of real record shapes and on generated traffic; the
reader's results with and without the module are compared in ``test_compiled.py`` and below.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.demo.benchmark import benchmark_records
from auditor.kernel import reader as cloudtrail
from auditor.kernel.normalize import LIGHT_READS, normalize_record, single_item
from auditor.kernel.reader import Deduper, InputSource, read_calls
from auditor.kernel.stats import IngestStats
from benchmarks.interpreted import compiled_modules

BUILD, PRESENT, REJECT, ACCEPT = LIGHT_READS


def test_the_decoder_is_built_with_the_compiled_modules_and_absent_from_the_source() -> None:
    # The compiled install must carry it (or the CLI silently decodes everything in full); the interpreted source,
    # as the Lambda functions run it, has none and reads every record with orjson.
    assert (cloudtrail._LIGHT is not None) == bool(compiled_modules())


light = cloudtrail._LIGHT
needs_module = pytest.mark.skipif(light is None, reason="the C module is not built (interpreted source)")

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


def _strict(a: Any, b: Any) -> bool:
    """Equal values of equal types, all the way down (``==`` alone holds ``True == 1`` and ``1 == 1.0``)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_strict(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_strict(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def check(data: bytes) -> dict[str, Any] | None:
    """``light`` on ``data`` (also inside a larger buffer), and the decoder's promises when it returns fields: the
    fields when ``data`` is one object the decoder read (as the reader takes it), else None."""
    assert light is not None
    got = light(data, 0, len(data))
    padded = b"  ,[" + data + b"]x"
    inside = light(padded, 4, 4 + len(data))  # only the slice is read
    both = got is not None and inside is not None
    assert (got is None and inside is None) or (both and _strict(got[0], inside[0]) and got[1] + 4 == inside[1])
    assert light(data, 0, len(data) + 100) == got or got is None  # a limit past the end is the end
    if got is None:
        return None
    fields, end = got
    assert 0 < end <= len(data) and data[end - 1 : end] == b"}"
    full = orjson.loads(data[:end])  # never raises for an object the decoder read
    assert type(full) is dict
    for name in BUILD:
        assert (name in fields) == (name in full)
        if name in full:
            assert _strict(fields[name], full[name]), name
    for name in PRESENT:
        assert (name in fields) == (name in full)
    assert not any(name in full for name in REJECT)
    assert set(fields) <= {*BUILD, *PRESENT}
    # As the reader does first for a new event time (single_item then knows the time); a value the normaliser
    # rejects must make single_item hand both back alike.
    with contextlib.suppress(Exception):
        normalize_record(full)
    assert single_item(fields) == single_item(full)
    return fields if not data[end:].strip(b" \t\r\n") else None  # what follows is the reader's to check


def _with(text: bytes, old: bytes, new: bytes) -> bytes:
    assert old in text
    return text.replace(old, new, 1)


#: Slices outside the subset the decoder reads, valid JSON or not: each must come back as None.
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
    "non-ASCII text": _with(BASE, b"Boto3", "Böto3".encode()),
    "invalid UTF-8": _with(BASE, b"Boto3", b"Bo\xfftoo"),
    "overlong UTF-8": _with(BASE, b"Boto3", b"Bo\xc0\xafto3"),
    "lone surrogate escape": _with(BASE, b"Boto3", b"Bo\\ud800to3"),
    "paired surrogate escapes": _with(BASE, b"Boto3", b"Bo\\ud83d\\ude00to3"),
    "unknown escape": _with(BASE, b"Boto3", b"Bo\\xto3"),
    "short unicode escape": _with(BASE, b"Boto3", b"Bo\\u12"),
    "escape in a built value": _with(BASE, b"ORDER#1", b"ORDER\\u00231"),
    "escape in a top-level key": _with(BASE, b'"eventID"', b'"event\\u0049D"'),
    "escaped key given after the real one": BASE[:-1] + b',"event\\u0049D":"other"}',
    "escaped key in a built object": _with(BASE, b'"tableName"', b'"table\\u004eame"'),
    "built field given twice": BASE[:-1] + b',"eventID":"other"}',
    "key given twice inside a built object": _with(BASE, b'"sk":"ITEM#1"', b'"sk":"ITEM#1","pk":"X"'),
    "presence field given twice": BASE[:-1] + b',"userAgent":"x"}',
    "errorCode": BASE[:-1] + b',"errorCode":"ValidationException"}',
    "other operation": _with(BASE, b'"GetItem"', b'"Scan"'),
    "operation not text": _with(BASE, b'"GetItem"', b'["GetItem"]'),
    "operation as an object": _with(BASE, b'"GetItem"', b'{"a":1}'),
    "other service": _with(BASE, b'"dynamodb.amazonaws.com"', b'"s3.amazonaws.com"'),
    "float": _with(BASE, b'"readOnly":true', b'"readOnly":1.5'),
    "exponent": _with(BASE, b'"readOnly":true', b'"readOnly":1e400'),
    "19-digit integer": _with(BASE, b'"readOnly":true', b'"readOnly":1234567890123456789'),
    "5,000-digit integer": _with(BASE, b'"readOnly":true', b'"readOnly":' + b"9" * 5000),
    "leading zero": _with(BASE, b'"readOnly":true', b'"readOnly":01'),
    "bare minus": _with(BASE, b'"readOnly":true', b'"readOnly":-'),
    "NaN": _with(BASE, b'"readOnly":true', b'"readOnly":NaN'),
    "Infinity": _with(BASE, b'"readOnly":true', b'"readOnly":Infinity'),
    "misspelt literal": _with(BASE, b'"readOnly":true', b'"readOnly":tru'),
    "literal cut short at the end": b'{"a":nul',
    "single quotes": _with(BASE, b'"REQ1"', b"'REQ1'"),
    "unquoted key": _with(BASE, b'"requestID"', b"requestID"),
    "nesting deeper than the decoder reads": _with(BASE, b'"REQ1"', b"[" * 100 + b"]" * 100),
    "unbalanced nesting": _with(BASE, b'"REQ1"', b"[[[]]"),
    "NUL after the object": BASE + b"\x00",
    "byte-order mark": b"\xef\xbb\xbf" + BASE,
}


@needs_module
@pytest.mark.parametrize("name", sorted(HANDED_BACK))
def test_slices_outside_the_subset_are_handed_back(name: str) -> None:
    assert check(HANDED_BACK[name]) is None


#: Slices the decoder reads: valid JSON with the shapes it must get exactly right.
READ: dict[str, bytes] = {
    "the reference GetItem": BASE,
    "pretty-printed": orjson.dumps(GET_ITEM, option=orjson.OPT_INDENT_2),
    "whitespace everywhere": b' \r\n\t{ "eventID" : "x" ,\n"eventName":"GetItem"\t}\n ',
    "empty object": b"{}",
    "escapes in skipped values": _with(BASE, b"Boto3", b'Bo\\"to\\\\3\\/\\b\\f\\n\\r\\t\\u00e9\\uFFFF'),
    "integers in a built value": _with(BASE, b'"ORDER#1"', b"-0"),
    "largest integer read": _with(BASE, b'"ORDER#1"', b"999999999999999999"),
    "smallest integer read": _with(BASE, b'"ORDER#1"', b"-999999999999999999"),
    "literals in a built value": _with(BASE, b'"key":{', b'"x":[true,false,null,[],{}],"key":{'),
    "empty strings": _with(BASE, b'"ITEM#1"', b'""'),
    "numbers and literals skipped": _with(BASE, b'"REQ1"', b'[0,-1,12,true,false,null,{"a":[]}]'),
    "a field only present": _with(BASE, b'"Boto3/1.34.0"', b'{"nested":[1,2]}'),
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
    "nesting the decoder still reads": _with(BASE, b'"REQ1"', b"[" * 60 + b"]" * 60),
}


@needs_module
@pytest.mark.parametrize("name", sorted(READ))
def test_slices_inside_the_subset_are_read_exactly(name: str) -> None:
    fields = check(READ[name])
    assert fields is not None
    assert set(fields) <= {*BUILD, *PRESENT}


@needs_module
def test_generated_traffic_is_read_as_the_full_decoder_reads_it() -> None:
    read = 0
    for record in benchmark_records(3000, 400, seed=11):
        read += check(orjson.dumps(record)) is not None
    assert read > 2000  # most of the traffic takes the partial decoder


#: Byte-level mutations of real record slices: each must be handed back or read exactly, never anything else.
_REAL = [BASE, *(orjson.dumps(r) for r in benchmark_records(40, 10, seed=3))]


@needs_module
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, len(_REAL) - 1),
    at=st.floats(0, 1),
    cut=st.integers(0, 4),
    insert=st.binary(max_size=6)
    | st.sampled_from([b'"', b"\\", b"\\u", b"\\ud800", b"{", b"}", b"[", b"]", b",", b":", b"1e9", b"\x00", b"\xc3"]),
)
def test_mutated_records_are_handed_back_or_read_exactly(which: int, at: float, cut: int, insert: bytes) -> None:
    data = _REAL[which]
    i = int(at * len(data))
    check(data[:i] + insert + data[i + cut :])


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@needs_module
@settings(max_examples=300, deadline=None)
@given(values=st.dictionaries(st.sampled_from([*BUILD, *PRESENT, "requestID", "x"]), _JSON, max_size=6))
def test_any_json_in_the_read_fields_is_handed_back_or_read_exactly(values: dict[str, Any]) -> None:
    check(orjson.dumps({**GET_ITEM, **values}))
    check(orjson.dumps({**GET_ITEM, "requestParameters": {**GET_ITEM["requestParameters"], **values}}))


def _read_all(data: bytes) -> tuple[list[Any], IngestStats]:
    stats = IngestStats()
    source = InputSource(name="t.json", open=lambda: io.BytesIO(data))
    calls = list(read_calls(source, stats, Deduper(), light=True))
    return calls, stats


@needs_module
def test_the_reader_gives_the_same_calls_with_and_without_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    records: list[Any] = [*benchmark_records(1500, 200, seed=2), GET_ITEM, GET_ITEM]  # a duplicate counts once
    parts = [orjson.dumps(r) for r in records]
    parts[10] = HANDED_BACK["lone surrogate escape"]  # malformed for orjson: skipped by both
    parts[11] = HANDED_BACK["escaped key given after the real one"]
    parts[12] = READ["escapes in skipped values"].replace(b"111111", b"999999")
    parts[13] = orjson.dumps(records[13]) + b" \t "  # another gap after this record than after the others
    data = b'{"Records":[' + b",\n".join(parts) + b"]}"
    with_decoder = _read_all(data)
    monkeypatch.setattr(cloudtrail, "_LIGHT", None)
    without = _read_all(data)
    assert with_decoder == without
    assert with_decoder[1].records_skipped >= 1
    assert with_decoder[1].duplicates_dropped == 1


# -- run(): light() over consecutive records in one call -----------------------------------------------------------

run = cloudtrail._LIGHT_RUN


def _run_reference(
    buf: bytes, pos: int, limit: int, sep: bytes, advance: int, window: int, most: int
) -> tuple[list[Any], int]:
    """What ``run`` must give: the reader's loop over ``light`` and the separator check, one record at a time."""
    assert light is not None
    done: list[Any] = []
    while len(done) < most and pos < limit:
        got = light(buf, pos, min(pos + window, limit))
        if got is None or not buf.startswith(sep, got[1] - 1):
            break
        done.append((got[0], pos, got[1]))
        pos = got[1] - 1 + advance
    return done, pos


def _same_run(a: tuple[list[Any], int], b: tuple[list[Any], int]) -> bool:
    return (
        a[1] == b[1]
        and len(a[0]) == len(b[0])
        and all(_strict(x[0], y[0]) and x[1:] == y[1:] for x, y in zip(a[0], b[0], strict=True))
    )


@needs_module
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, len(_REAL) - 1), min_size=1, max_size=8),
    mutate=st.none() | st.tuples(st.integers(0, 7), st.floats(0, 1), st.binary(max_size=4)),
    gap=st.sampled_from([b",", b",\n", b", ", b",\n\t "]),
    window=st.integers(1, 4000),
    most=st.integers(0, 9),
    tail=st.sampled_from([b"]}", b"", b",", b',{"a":1}]}']),
)
def test_a_run_reads_what_the_loop_over_light_reads(
    picks: list[int], mutate: tuple[int, float, bytes] | None, gap: bytes, window: int, most: int, tail: bytes
) -> None:
    assert run is not None
    parts = [_REAL[i] for i in picks]
    if mutate is not None and mutate[0] < len(parts):
        text = parts[mutate[0]]
        at = int(mutate[1] * len(text))
        parts[mutate[0]] = text[:at] + mutate[2] + text[at + 1 :]
    buf = b'{"Records":[' + gap.join(parts) + tail
    sep = b"}" + gap + b'{"'
    for limit in (len(buf), len(buf) // 2, len(buf) + 50):
        args = (buf, 12, limit, sep, len(gap) + 1, window, most)
        assert _same_run(run(*args), _run_reference(*args))


@needs_module
def test_a_run_stops_at_most_and_at_the_first_record_it_does_not_read() -> None:
    assert run is not None
    parts = [orjson.dumps(r) for r in benchmark_records(50, 10, seed=5)]
    parts[30] = HANDED_BACK["lone surrogate escape"]
    buf = b'{"Records":[' + b",".join(parts) + b"]}"
    done, pos = run(buf, 12, len(buf), b'},{"', 2, 1 << 20, 1000)
    assert [r[1] for r in done][:1] == [12] and len(done) <= 30
    assert buf.startswith(parts[len(done)], pos)  # where the first record not read starts
    first, after = run(buf, 12, len(buf), b'},{"', 2, 1 << 20, 3)
    assert len(first) == 3 and after == done[3][1]


@needs_module
@pytest.mark.parametrize(
    "args",
    [
        (b"{}", 0, 2, b"x", 1, 10, 1),  # the separator must start with the closing brace
        (b"{}", 0, 2, b"}", 0, 10, 1),  # advance must be positive: every step moves forward
        (b"{}", 0, 2, b"}", 1, 0, 1),
        (b"{}", 0, 2, b"}", 1, 10, -1),
        (b"{}", 3, 2, b"}", 1, 10, 1),
    ],
)
def test_a_run_refuses_arguments_that_could_not_move_forward(args: tuple[Any, ...]) -> None:
    assert run is not None
    with pytest.raises(ValueError):
        run(*args)


@needs_module
def test_the_reader_gives_the_same_calls_in_runs_as_one_by_one() -> None:
    records: list[Any] = [*benchmark_records(1500, 200, seed=4), GET_ITEM, GET_ITEM]
    parts = [orjson.dumps(r) for r in records]
    parts[40] = HANDED_BACK["lone surrogate escape"]
    parts[41] = orjson.dumps(records[41]) + b" \t "
    data = b'{"Records":[' + b",\n".join(parts) + b"]}"
    one_by_one = _read_all(data)
    stats = IngestStats()
    source = InputSource(name="t.json", open=lambda: io.BytesIO(data))
    flat: list[Any] = []
    in_batches = 0
    for got in read_calls(source, stats, Deduper(), light=True, runs=True):
        if type(got) is list:
            in_batches += len(got)
            flat.extend(got)
        else:
            flat.append(got)
    assert (flat, stats) == one_by_one  # the same calls in the same order, the same counts
    assert in_batches > len(flat) / 2  # runs did carry most of the calls


@needs_module
def test_short_values_that_share_a_cache_slot_keep_their_own_text() -> None:
    # The decoder reuses the str of a recent short value; values alike in length, first and last 8 bytes (one slot
    # of its cache) must still come back as themselves, in any order.
    names = ["ORDER#00X000000#1", "ORDER#00Y000000#1", "ORDER#00X000000#1", "ORDER#00Z000000#1"]
    assert light is not None
    for name in [*names, *reversed(names)]:
        data = orjson.dumps({**GET_ITEM, "requestParameters": {"tableName": name, "key": {"pk": name}}})
        got = check(data)
        assert got is not None
        assert got["requestParameters"] == {"tableName": name, "key": {"pk": name}}


@needs_module
def test_fields_that_share_a_lookup_slot_are_all_read() -> None:
    # The decoder finds a key's field through a small table; fields that land in one slot (here: a name configured
    # twice, which shares its slot for certain, among 31 others) are scanned in order, the first one winning.
    from auditor.kernel import _fastrecord
    from auditor.kernel.normalize import READER_KEYS

    names = [f"field{i:02d}" for i in range(31)]
    record = {**{f"field{i:02d}": i for i in range(40)}, "other": [1, {"a": "b"}]}
    data = orjson.dumps(record)
    try:
        _fastrecord.configure(names, ["field00"], [], {}, [])
        got = _fastrecord.light(data, 0, len(data))
        assert got is not None
        assert got[0] == {name: record[name] for name in names}  # field00 built (its first mode), not just present
    finally:
        _fastrecord.configure(BUILD, PRESENT, REJECT, ACCEPT, READER_KEYS)
    assert check(BASE) is not None  # the reader's own set-up is back

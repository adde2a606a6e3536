"""The streaming CloudTrail reader: formats, chunk boundaries, bad input, dedupe and the read_calls contract."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, cast

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.exceptions import InputError, MalformedRecordError, SourceReadError
from auditor.kernel import framing, inputs
from auditor.kernel import reader as cloudtrail
from auditor.kernel.calls import Access, ApiCall
from auditor.kernel.inputs import discover, source_order
from auditor.kernel.reader import Deduper, InputSource, iter_records, read_calls
from auditor.kernel.runs import Malformed
from auditor.kernel.stats import IngestStats
from tests.factories import flat_calls

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cloudtrail"

#: Chunk sizes that put chunk boundaries everywhere, plus the default.
CHUNK_SIZES = [1, 2, 3, 5, 17, 64, 1000, inputs.DEFAULT_CHUNK_SIZE]

TRICKY = [
    '},{"eventVersion":"1.08"',
    "]}",
    '"]},{"eventVersion":',
    'quote " and backslash \\ and \\" and \\\\',
    "ends with a backslash \\",
    "unicode é ü 日本 🎉 \u2028 \x00 \x1f",
    '{"Records":[',
    "}\n,\n{",
]


def rec(i: int, **extra: Any) -> dict[str, Any]:
    """A small CloudTrail-shaped record."""
    r: dict[str, Any] = {
        "eventVersion": "1.08",
        "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::111122223333:assumed-role/app/s"},
        "eventTime": "2024-05-01T10:00:00Z",
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": "GetItem",
        "requestParameters": {"tableName": "Orders", "key": {"pk": f"k{i}"}},
        "responseElements": None,
        "eventID": f"id-{i}",
        "resources": [{"type": "AWS::DynamoDB::Table", "ARN": "arn:aws:dynamodb:us-east-1:1:table/Orders"}],
        "eventCategory": "Data",
    }
    r.update(extra)
    return r


RECORDS = [rec(i) for i in range(30)]


def envelope(record: Any, **extra: Any) -> dict[str, Any]:
    env: dict[str, Any] = {
        "version": "0",
        "id": "e1",
        "detail-type": "AWS API Call via CloudTrail",
        "source": "aws.dynamodb",
        "time": "2024-05-01T10:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": record,
    }
    env.update(extra)
    return env


def read_all(data: bytes, chunk_size: int = inputs.DEFAULT_CHUNK_SIZE, name: str = "test") -> list[Any]:
    return list(iter_records(io.BytesIO(data), name, chunk_size=chunk_size))


def log_file(records: list[Any]) -> bytes:
    return orjson.dumps({"Records": records})


# --------------------------------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_log_file_plain_and_gzip(chunk_size: int) -> None:
    data = log_file(RECORDS)
    assert read_all(data, chunk_size) == RECORDS
    assert read_all(gzip.compress(data), chunk_size) == RECORDS


@pytest.mark.parametrize("chunk_size", [1, 7, 4096, inputs.DEFAULT_CHUNK_SIZE])
def test_multi_member_gzip_split_mid_record(chunk_size: int) -> None:
    data = log_file(RECORDS)
    cut1, cut2 = len(data) // 3, 2 * len(data) // 3 + 5
    gz = gzip.compress(data[:cut1]) + gzip.compress(data[cut1:cut2]) + gzip.compress(data[cut2:])
    assert read_all(gz, chunk_size) == RECORDS
    # zero padding after the last member is tolerated, as gzip does
    assert read_all(gz + b"\0" * 100, chunk_size) == RECORDS


def test_gzip_detected_by_magic_not_extension(tmp_path: Path) -> None:
    p = tmp_path / "log.json"  # gzip content, misleading name
    p.write_bytes(gzip.compress(log_file(RECORDS)))
    q = tmp_path / "plain.json.gz"  # plain content, misleading name
    q.write_bytes(log_file(RECORDS))
    for path in (p, q):
        with path.open("rb") as fh:
            assert list(iter_records(fh, str(path))) == RECORDS


def test_gzip_output_larger_than_chunk_is_fully_drained() -> None:
    # Highly compressible data: one small input block inflates to many chunks.
    big = [rec(i, padding="x" * 50_000) for i in range(20)]
    assert read_all(gzip.compress(log_file(big), 9), 4096) == big


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_tricky_string_values(chunk_size: int) -> None:
    records = [rec(i, note=TRICKY[i % len(TRICKY)], **{'k"ey}': TRICKY}) for i in range(40)]
    data = log_file(records)
    assert read_all(data, chunk_size) == records
    assert read_all(json.dumps({"Records": records}, ensure_ascii=False).encode(), chunk_size) == records
    assert read_all(json.dumps({"Records": records}, ensure_ascii=True).encode(), chunk_size) == records


def test_record_starting_with_separator_lookalike_in_first_value() -> None:
    # The string holds the exact separator the fast path searches for, many times over.
    evil = '},{"eventVersion":' * 2000
    records = [rec(0), {"eventVersion": evil, "x": 1}, rec(2), {"eventVersion": "1", "y": evil + "]}"}]
    for chunk_size in (1000, inputs.DEFAULT_CHUNK_SIZE):
        t0 = time.perf_counter()
        assert read_all(log_file(records), chunk_size) == records
        assert time.perf_counter() - t0 < 10  # linear, not one re-parse per fake separator


@pytest.mark.parametrize("chunk_size", [1, 13, 4096])
def test_record_straddling_many_chunks(chunk_size: int) -> None:
    records = [rec(0), rec(1, big="é" * 200_000 if chunk_size > 1 else "é" * 20_000), rec(2)]
    assert read_all(log_file(records), chunk_size) == records


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_records_with_different_first_keys(chunk_size: int) -> None:
    records: list[Any] = []
    for i in range(30):
        r = rec(i)
        if i % 3 == 1:
            r = {"eventID": f"x{i}", **r}  # another first key
        elif i % 7 == 2:
            r = {"a": [1, {"b": "}]"}], "eventVersion": "1.0"}
        records.append(r)
    assert read_all(log_file(records), chunk_size) == records


@pytest.mark.parametrize("chunk_size", [1, 97, 4096, inputs.DEFAULT_CHUNK_SIZE])
@pytest.mark.parametrize(
    "layout",
    [
        "alternating",
        "alternating_unicode",
        "random_first_key",
        "long_first_key",
        "rare_first_key",
        "nested_same_key",
        "empty_objects",
    ],
)
def test_layouts_the_fast_path_cannot_learn(chunk_size: int, layout: str) -> None:
    rnd = random.Random(layout)
    records: list[Any] = []
    for i in range(60):
        r = rec(i)
        if layout == "alternating":
            r = {"ABC"[i % 3]: i, **r}
        elif layout == "alternating_unicode":
            r = {"ABC"[i % 3]: "é日🎉" * (i % 5), **r}
        elif layout == "random_first_key":
            r = {f"k{rnd.randrange(10**9)}": i, "eventID": f"id-{i}"}
        elif layout == "long_first_key":
            r = {"K" * 2000: i, **r}
        elif layout == "rare_first_key" and i % 17 == 5:
            r = {"rare": i, **r}
        elif layout == "nested_same_key":
            # nested objects that start with the same key as the records: false separator candidates
            r["list"] = [{"eventVersion": "x", "n": n} for n in range(i % 7)]
        elif layout == "empty_objects":
            r = {} if i % 2 else {"eventVersion": "1"}
        records.append(r)
    data = log_file(records)
    assert read_all(data, chunk_size) == records
    assert read_all(json.dumps({"Records": records}, indent=1).encode(), chunk_size) == records


def test_records_larger_than_the_search_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framing, "_WINDOW", 512)
    records = [rec(i, blob="b" * (i * 300)) for i in range(12)]
    for chunk_size in (1, 700, 5000, inputs.DEFAULT_CHUNK_SIZE):
        assert read_all(log_file(records), chunk_size) == records


def test_size_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framing, "_MAX_ELEMENT", 10_000)
    # an over-size record is one skipped record: the records around it are kept
    for chunk_size in (1000, 7, 1 << 20):
        got = read_all(log_file([RECORDS[0], {"a": "x" * 20_000}, RECORDS[1]]), chunk_size)
        assert got == [RECORDS[0], Malformed("record too large (over 0 MiB)"), RECORDS[1]]
    with pytest.raises(SourceReadError, match="unexpected end of data"):
        read_all(b'{"Records":[{"a":"' + b"x" * 5000, 100)


def _lines_with_an_oversized_one() -> bytes:
    big = rec(99, blob="x" * 30_000)
    return b"\n".join(orjson.dumps(r) for r in [RECORDS[0], big, RECORDS[1], RECORDS[2]]) + b"\n"


@pytest.mark.parametrize("compress", [False, True])
def test_an_oversized_json_lines_record_is_one_skipped_record(monkeypatch: pytest.MonkeyPatch, compress: bool) -> None:
    monkeypatch.setattr(framing, "_MAX_ELEMENT", 10_000)
    data = _lines_with_an_oversized_one()
    if compress:
        data = gzip.compress(data)
    too_large = Malformed("record too large (over 0 MiB)")
    for chunk_size in (7, 1000, 1 << 20):
        assert read_all(data, chunk_size) == [RECORDS[0], too_large, RECORDS[1], RECORDS[2]]
    # alone, or after a line that is not a record: still one record too large
    assert read_all(orjson.dumps(rec(99, blob="x" * 30_000)), 1000) == [too_large]
    # a large object that is the whole input and has no record shape is still not a CloudTrail log file
    with pytest.raises(SourceReadError, match="no Records array"):
        read_all(orjson.dumps({"meta": "m" * 30_000}), 1000)


def test_an_oversized_json_lines_record_is_skipped_by_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from auditor.cli import main

    monkeypatch.setattr(framing, "_MAX_ELEMENT", 10_000)
    (tmp_path / "plain.jsonl").write_bytes(_lines_with_an_oversized_one())
    (tmp_path / "packed.jsonl.gz").write_bytes(
        gzip.compress(b"\n".join(orjson.dumps(r) for r in [RECORDS[3], rec(98, blob="y" * 30_000), RECORDS[4]]))
    )
    code = main(["analyze-trail", str(tmp_path), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    stats = orjson.loads(out)["stats"]
    assert stats["files_failed"] == 0 and stats["files_read"] == 2
    assert stats["records_read"] == 7 and stats["records_skipped"] == 2
    assert stats["data_events"] == 5
    assert "record too large" in err


def test_long_whitespace_runs_are_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framing, "_MAX_WS_RUN", 100)
    ws = b" \n" * 5000
    data = ws + b'{"Records":[' + ws + orjson.dumps(RECORDS[0]) + ws + b"," + ws + orjson.dumps(RECORDS[1]) + b"]}" + ws
    for chunk_size in (1, 64, 1000):
        assert read_all(data, chunk_size) == RECORDS[:2]


def test_unterminated_huge_string_fails_fast() -> None:
    t0 = time.perf_counter()
    with pytest.raises(SourceReadError, match="unexpected end of data"):
        read_all(b'{"Records":[{"a":"' + b"x" * 20_000_000, 1 << 20)
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("text", [b'{"Records":[]}', b'{ "Records" : [ ] }', b'\n{\n  "Records": [\n  ]\n}\n'])
def test_empty_records(text: bytes) -> None:
    assert read_all(text) == []
    assert read_all(gzip.compress(text)) == []


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
@pytest.mark.parametrize("indent", [1, 2, 4, "\t"])
def test_pretty_printed(chunk_size: int, indent: int | str) -> None:
    text = json.dumps({"Records": RECORDS}, indent=indent)
    assert read_all(text.encode(), chunk_size) == RECORDS
    assert read_all(("\r\n  " + text.replace("\n", "\r\n") + "\n\n").encode(), chunk_size) == RECORDS


def test_utf8_bom_is_skipped() -> None:
    assert read_all(b"\xef\xbb\xbf" + log_file(RECORDS)) == RECORDS


def test_aws_fixture_files_pretty_printed() -> None:
    files = sorted(FIXTURES.glob("*.json"))
    assert files
    for path in files:
        expected = json.loads(path.read_text())["Records"]
        for chunk_size in (5, inputs.DEFAULT_CHUNK_SIZE):
            with path.open("rb") as fh:
                assert list(iter_records(fh, path.name, chunk_size=chunk_size)) == expected


@pytest.mark.parametrize("chunk_size", [1, 64, inputs.DEFAULT_CHUNK_SIZE])
def test_records_not_first_key_and_extra_keys(chunk_size: int) -> None:
    doc = {"meta": {"x": [1, 2, {"Records": "no"}]}, "Records": RECORDS[:5], "after": {"y": "]}"}}
    assert read_all(orjson.dumps(doc), chunk_size) == RECORDS[:5]
    doc2 = {"Records": RECORDS[:5], "after": {"y": "]}", "z": [1, 2]}, "n": 1}
    assert read_all(orjson.dumps(doc2), chunk_size) == RECORDS[:5]
    assert read_all(json.dumps(doc2, indent=2).encode(), chunk_size) == RECORDS[:5]


def test_large_object_with_records_not_first_is_streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framing, "_MAX_DOCUMENT", 2000)  # pretend the document is "large"
    doc = {"meta": "m" * 3000, "Records": RECORDS, "tail": [{"a": "]}"}]}
    assert read_all(orjson.dumps(doc), 100) == RECORDS
    with pytest.raises(SourceReadError, match="no Records array"):
        read_all(orjson.dumps({"meta": "m" * 3000, "other": [1, 2, 3]}), 100)
    assert read_all(orjson.dumps({"meta": "m" * 3000, "logFiles": []}), 100) == []


def test_digest_file_yields_nothing() -> None:
    digest = {
        "awsAccountId": "111122223333",
        "digestStartTime": "2024-05-01T10:00:00Z",
        "logFiles": [{"s3Bucket": "b", "s3Object": "k", "hashValue": "00"}],
        "digestSignatureAlgorithm": "SHA256withRSA",
    }
    assert read_all(orjson.dumps(digest)) == []
    assert read_all(gzip.compress(json.dumps(digest, indent=2).encode())) == []


@pytest.mark.parametrize("chunk_size", [1, 50, inputs.DEFAULT_CHUNK_SIZE])
def test_eventbridge_single_event(chunk_size: int) -> None:
    r = rec(1)
    assert read_all(orjson.dumps(envelope(r)), chunk_size) == [r]
    assert read_all(json.dumps(envelope(r), indent=2).encode(), chunk_size) == [r]
    # the envelope's account is not copied into the record
    bare = {k: v for k, v in r.items() if k != "recipientAccountId"}
    out = read_all(orjson.dumps(envelope(bare, account="111122223333")), chunk_size)
    assert out == [bare]
    assert "recipientAccountId" not in out[0]


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_eventbridge_array(chunk_size: int) -> None:
    events = [envelope(r) for r in RECORDS]
    assert read_all(orjson.dumps(events), chunk_size) == RECORDS
    assert read_all(json.dumps(events, indent=2).encode(), chunk_size) == RECORDS


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_array_of_raw_records_and_non_dicts(chunk_size: int) -> None:
    items: list[Any] = [*RECORDS[:5], 7, "s", None, [1, 2], RECORDS[5]]
    assert read_all(orjson.dumps(items), chunk_size) == items
    assert read_all(b"[]", chunk_size) == []


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_eventbridge_json_lines(chunk_size: int) -> None:
    lines = [orjson.dumps(envelope(r)) for r in RECORDS[:10]]
    text = b"\n".join(lines[:5]) + b"\n\n   \n" + b"\r\n".join(lines[5:]) + b"\n"
    assert read_all(text, chunk_size) == RECORDS[:10]
    assert read_all(gzip.compress(text), chunk_size) == RECORDS[:10]


@pytest.mark.parametrize("chunk_size", [1, 64, inputs.DEFAULT_CHUNK_SIZE])
def test_json_lines_of_raw_records_log_files_and_unknown_objects(chunk_size: int) -> None:
    unknown = {"hello": "world"}
    text = b"\n".join(
        [orjson.dumps(RECORDS[0]), log_file(RECORDS[1:3]), orjson.dumps(unknown), orjson.dumps(RECORDS[3])]
    )
    # in a stream of values an object of unknown shape is passed on (the caller counts it)
    assert read_all(text, chunk_size) == [RECORDS[0], RECORDS[1], RECORDS[2], unknown, RECORDS[3]]


@pytest.mark.parametrize("chunk_size", [1, inputs.DEFAULT_CHUNK_SIZE])
def test_single_record_object(chunk_size: int) -> None:
    assert read_all(orjson.dumps(RECORDS[0]), chunk_size) == [RECORDS[0]]
    assert read_all(json.dumps(RECORDS[0], indent=2).encode() + b"\n", chunk_size) == [RECORDS[0]]


def test_s3_like_body_with_only_read() -> None:
    class Body:
        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)

        def read(self, n: int = -1) -> bytes:
            return self._data.read(min(n, 1000))  # short reads, like a network stream

    body = cast("BinaryIO", Body(gzip.compress(log_file(RECORDS))))
    assert list(iter_records(body, "s3://bucket/key")) == RECORDS


def test_early_close_stops_the_reader_thread() -> None:
    before = threading.active_count()
    data = log_file([rec(i) for i in range(5000)])
    for _ in range(5):
        gen = iter_records(io.BytesIO(gzip.compress(data)), "x", chunk_size=1000)
        assert next(gen) == rec(0)
        gen.close()
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before


def test_switch_interval_lowered_while_reading_and_restored() -> None:
    before = sys.getswitchinterval()
    gen = iter_records(io.BytesIO(log_file(RECORDS)), "x")
    next(gen)
    assert sys.getswitchinterval() == pytest.approx(min(before, inputs._SWITCH_INTERVAL))
    inner = iter_records(io.BytesIO(log_file(RECORDS)), "y")  # nested readers share the setting
    assert list(inner) == RECORDS
    assert sys.getswitchinterval() == pytest.approx(min(before, inputs._SWITCH_INTERVAL))
    gen.close()
    assert sys.getswitchinterval() == before
    with pytest.raises(SourceReadError):
        read_all(b"garbage")
    assert sys.getswitchinterval() == before


# --------------------------------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------------------------------


def test_truncated_gzip_raises_after_yielding_some_records() -> None:
    gz = gzip.compress(log_file([rec(i) for i in range(3000)]))
    got: list[Any] = []
    with pytest.raises(SourceReadError) as err:
        for r in iter_records(io.BytesIO(gz[: len(gz) // 2]), "cut.json.gz", chunk_size=4096):
            got.append(r)
    assert err.value.source == "cut.json.gz"
    assert err.value.reason == "corrupt or truncated gzip data"
    assert got  # records before the cut were yielded: the caller discards them
    # cut inside the 8-byte trailer (crc32 + size)
    with pytest.raises(SourceReadError, match="corrupt or truncated gzip data"):
        read_all(gz[:-3])


def test_corrupt_gzip() -> None:
    gz = bytearray(gzip.compress(log_file(RECORDS)))
    for i in range(20, 40):
        gz[i] ^= 0x55
    with pytest.raises(SourceReadError, match="corrupt or truncated gzip data"):
        read_all(bytes(gz))
    with pytest.raises(SourceReadError, match="trailing garbage after gzip data"):
        read_all(gzip.compress(log_file(RECORDS)) + b"garbage")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"a":"\xff\xfe"}', "invalid UTF-8"),
        (b'{"a":1, "b": nope}', "invalid JSON"),
        (b'{"a":1e400}', "invalid JSON"),
        (b'{"a":"\\ud800"}', "invalid JSON"),
        (b'{"a":' + b"[" * 1100 + b"]" * 1100 + b"}", "invalid JSON"),
    ],
)
def test_undecodable_record_is_one_malformed_record(data: bytes, reason: str) -> None:
    # A record whose brackets close but whose content does not decode: skipped, its neighbours kept.
    a, b = orjson.dumps(RECORDS[0]), orjson.dumps(RECORDS[1])
    for chunk_size in (1, 3, inputs.DEFAULT_CHUNK_SIZE):
        got = read_all(b'{"Records":[' + a + b"," + data + b"," + b + b"]}", chunk_size)
        assert len(got) == 3 and got[0] == RECORDS[0] and got[2] == RECORDS[1]
        assert isinstance(got[1], Malformed) and reason in got[1].reason


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"hello world", "invalid JSON"),
        (b"<html></html>", "invalid JSON"),
        (b'{"Records":[{"a":1},]}', "invalid JSON"),
        (b'{"Records":[{"a":1} {"b":2}]}', "invalid JSON"),
        (b'{"Records":[{"a":1}', "unexpected end of data"),
        (b'{"Records":[{"a":"unterminated', "unexpected end of data"),
        (b'{"Records":[{"a":1}]', "unexpected end of data"),
        (b'{"Records":[{"a":1}]} trailing', "invalid JSON"),
        (b"", "empty input"),
        (b"  \n\t ", "empty input"),
        (b'{"foo": 1}', "not a CloudTrail log file: no Records array"),
        (b'{"Records": {"a": 1}}', "not a CloudTrail log file"),
        (b'{"Records": null}', "not a CloudTrail log file"),
        (b"42", "not a CloudTrail log file"),
        (b'"just a string"', "not a CloudTrail log file"),
    ],
)
def test_bad_input(data: bytes, reason: str) -> None:
    for chunk_size in (1, 3, inputs.DEFAULT_CHUNK_SIZE):
        with pytest.raises(SourceReadError, match=reason) as err:
            read_all(data, chunk_size, name="bad.json")
        assert err.value.source == "bad.json"
        assert "\n" not in err.value.reason
        with pytest.raises(SourceReadError, match=reason):
            read_all(gzip.compress(data), chunk_size)


def test_error_reason_gives_byte_offset() -> None:
    data = log_file(RECORDS[:3])[:-2] + b",xyz]}"
    with pytest.raises(SourceReadError, match=r"at byte \d+") as err:
        read_all(data)
    offset = int(err.value.reason.rsplit(" ", 1)[1])
    assert len(data) - 10 <= offset <= len(data)


def test_read_error_mid_stream() -> None:
    class Failing:
        def __init__(self) -> None:
            self._data = io.BytesIO(log_file(RECORDS))

        def read(self, n: int = -1) -> bytes:
            if self._data.tell() > 100:
                raise OSError(5, "Input/output error")
            return self._data.read(50)

    with pytest.raises(SourceReadError, match="read error: Input/output error"):
        list(iter_records(cast("BinaryIO", Failing()), "x"))


# --------------------------------------------------------------------------------------------------------------------
# discover
# --------------------------------------------------------------------------------------------------------------------


def test_discover_directory_recursion(tmp_path: Path) -> None:
    root = tmp_path / "AWSLogs" / "111122223333"
    files = {
        "CloudTrail/us-east-1/2024/05/01/b.json.gz": gzip.compress(log_file(RECORDS[:2])),
        "CloudTrail/us-east-1/2024/05/01/a.json": log_file(RECORDS[2:3]),
        "CloudTrail/us-east-1/2024/05/02/c.jsonl": orjson.dumps(RECORDS[3]) + b"\n",
        "CloudTrail/us-east-1/2024/05/02/d.ndjson": orjson.dumps(RECORDS[4]),
        "CloudTrail/us-east-1/2024/05/02/e.gz": gzip.compress(orjson.dumps(envelope(RECORDS[5]))),
        "CloudTrail/us-east-1/2024/05/02/notes.txt": b"not a log",
        "CloudTrail/us-east-1/2024/05/02/README": b"no extension",
        "CloudTrail-Digest/us-east-1/2024/05/01/digest.json.gz": gzip.compress(b'{"logFiles": []}'),
        "CloudTrail-Insight/us-east-1/2024/05/01/i.json.gz": gzip.compress(log_file([rec(99)])),
        "x/CloudTrail-Digest/y/z.json": b"{}",
        "zz.JSON": log_file(RECORDS[6:7]),
    }
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    sources = discover([str(tmp_path)])
    names = [os.path.relpath(s.name, root) for s in sources]
    assert names == [
        "CloudTrail/us-east-1/2024/05/01/a.json",
        "CloudTrail/us-east-1/2024/05/01/b.json.gz",
        "CloudTrail/us-east-1/2024/05/02/c.jsonl",
        "CloudTrail/us-east-1/2024/05/02/d.ndjson",
        "CloudTrail/us-east-1/2024/05/02/e.gz",
        "zz.JSON",
    ]
    got: list[Any] = []
    for s in sources:
        with s.open() as fh:
            got.extend(iter_records(fh, s.name))
    assert sorted(r["eventID"] for r in got) == sorted(r["eventID"] for r in RECORDS[:7])


def test_discover_files_stdin_and_missing(tmp_path: Path) -> None:
    odd = tmp_path / "trail.log"  # an explicit file is taken whatever its name
    odd.write_bytes(gzip.compress(log_file(RECORDS[:1])))
    stdin = io.BytesIO(log_file(RECORDS[1:2]))
    sources = discover([str(odd), "-", "-"], stdin=stdin)
    assert [s.name for s in sources] == ["<stdin>", str(odd)]  # listed once, in source_order (by file name)
    with sources[0].open() as fh:
        assert fh is stdin
        assert list(iter_records(fh, "<stdin>")) == RECORDS[1:2]
    with pytest.raises(InputError, match=r"^/nonexistent/x\.json: no such file or directory$"):
        discover([str(odd), "/nonexistent/x.json"])


def test_discover_lists_sources_in_the_order_of_their_file_names(tmp_path: Path) -> None:
    """The order the service merges a window's trail objects in (auditor.state.window_store.merge_parts): by file
    name, whatever folder each file is in or the order the paths were given."""
    names = [
        "b/111_CloudTrail_us-east-1_20261205T0905Z_a.json.gz",
        "a/111_CloudTrail_us-east-1_20261205T0910Z_b.json.gz",
    ]
    for name in names:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(gzip.compress(log_file(RECORDS[:1])))
    walked = [Path(s.name).name for s in discover([str(tmp_path)])]
    given = [Path(s.name).name for s in discover([str(tmp_path / n) for n in reversed(names)])]
    assert walked == given == [Path(n).name for n in names]
    assert source_order("s3://bucket/AWSLogs/x/" + Path(names[0]).name) < source_order(str(tmp_path / names[1]))


def test_discover_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    assert discover([str(tmp_path)]) == []


# --------------------------------------------------------------------------------------------------------------------
# Deduper
# --------------------------------------------------------------------------------------------------------------------


def test_deduper_commit_and_rollback() -> None:
    d = Deduper()
    assert not d.seen("a")
    assert d.seen("a")  # duplicate inside the same file
    assert not d.seen("b")
    d.commit()
    assert len(d) == 2
    assert d.seen("a")
    assert not d.seen("c")
    d.rollback()  # the file with "c" failed: forget it
    assert not d.seen("c")
    assert d.seen("c")
    d.rollback()
    assert len(d) == 2
    d.commit()  # nothing pending
    assert len(d) == 2


def test_deduper_grows_and_keeps_everything() -> None:
    d = Deduper(capacity=4)
    ids = [f"evt-{i}" for i in range(50_000)]
    for n, e in enumerate(ids):
        assert not d.seen(e)
        if n % 1000 == 999:
            d.commit()
    d.commit()
    assert len(d) == len(ids)
    assert all(d.seen(e) for e in ids)
    assert not d.seen("new")


def test_deduper_memory_is_compact() -> None:
    ids = [f"{i:08x}-4561-8aea-7a30ba1fdf52" for i in range(300_000)]
    tracemalloc.start()
    try:
        d = Deduper()
        for i in range(0, len(ids), 5000):  # one commit per "file"
            for e in ids[i : i + 5000]:
                d.seen(e)
            d.commit()
        current, _peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        d = Deduper(capacity=16)
        for e in ids:  # one big file, with the pending log growing through several doublings
            d.seen(e)
        d.commit()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(d) == len(ids)
    # well under 100 bytes per id (1M ids -> well under 100 MB), even at the peak of a doubling
    assert current / len(ids) < 40
    assert peak / len(ids) < 100


# --------------------------------------------------------------------------------------------------------------------
# read_calls
# --------------------------------------------------------------------------------------------------------------------


def fake_normalize(record: Mapping[str, Any]) -> ApiCall | None:
    """A stand-in for normalize_record: DynamoDB records become calls, 'bad' ones are malformed."""
    if record.get("bad"):
        raise MalformedRecordError("missing eventName")
    if record.get("eventSource") != "dynamodb.amazonaws.com":
        return None
    return ApiCall(
        event_id=str(record["eventID"]),
        time=datetime(2024, 5, 1, tzinfo=UTC),
        operation="GetItem",
        access=Access.READ,
        account=None,
        region=None,
        tables=("Orders",),
        items=(),
    )


class TrackingStream(io.BytesIO):
    pass


def bytes_source(name: str, data: bytes, opened: list[TrackingStream] | None = None) -> InputSource:
    def opener() -> BinaryIO:
        s = TrackingStream(data)
        if opened is not None:
            opened.append(s)
        return s

    return InputSource(name=name, open=opener)


def test_read_calls_counts() -> None:
    records: list[Any] = [
        rec(1),
        rec(2),
        rec(1),  # duplicate data event
        rec(3, eventSource="s3.amazonaws.com"),  # not DynamoDB: records_read only
        rec(3, eventSource="s3.amazonaws.com"),  # a repeated non-DynamoDB eventID is not a dropped duplicate
        "not an object",
        rec(4, bad=True),
        rec(5),
    ]
    stats = IngestStats()
    opened: list[TrackingStream] = []
    calls = flat_calls(read_calls(bytes_source("f.json", log_file(records), opened), stats, Deduper(), fake_normalize))
    assert [c.event_id for c in calls] == ["id-1", "id-2", "id-5"]
    assert stats.records_read == 8
    assert stats.records_skipped == 2
    assert stats.duplicates_dropped == 1
    assert stats.data_events == 3
    assert stats.files_read == stats.files_failed == 0  # the caller counts files
    assert stats.problems == ["f.json: record 6: not a JSON object", "f.json: record 7: missing eventName"]
    assert opened[0].closed


def test_read_calls_dedupes_across_files_with_commit_and_rollback() -> None:
    deduper = Deduper()
    stats = IngestStats()
    first = flat_calls(read_calls(bytes_source("a", log_file([rec(1), rec(2)])), stats, deduper, fake_normalize))
    assert len(first) == 2
    deduper.commit()
    # a failing file: its ids are rolled back by the caller
    bad = gzip.compress(log_file([rec(3), *[rec(i) for i in range(10, 3000)]]))
    got: list[ApiCall] = []
    with pytest.raises(SourceReadError):
        half = bytes_source("b", bad[: len(bad) // 2])
        for batch in read_calls(half, IngestStats(), deduper, fake_normalize):
            got.extend(cast("list[ApiCall]", batch))
    assert got  # partial output, to be discarded by the caller
    deduper.rollback()
    again = flat_calls(read_calls(bytes_source("c", log_file([rec(2), rec(3)])), stats, deduper, fake_normalize))
    assert [c.event_id for c in again] == ["id-3"]
    assert stats.duplicates_dropped == 1


def test_read_calls_open_failure_is_a_source_read_error(tmp_path: Path) -> None:
    def opener() -> BinaryIO:
        raise PermissionError(13, "Permission denied")

    with pytest.raises(SourceReadError, match=r"^locked\.json: cannot open: Permission denied$"):
        flat_calls(read_calls(InputSource("locked.json", opener), IngestStats(), Deduper(), fake_normalize))
    # a real unreadable file (root can read anything, so only checked as a normal user)
    p = tmp_path / "locked.json"
    p.write_bytes(log_file(RECORDS))
    p.chmod(0)
    try:
        if os.geteuid() != 0:
            (source,) = discover([str(p)])
            with pytest.raises(SourceReadError, match="cannot open"):
                flat_calls(read_calls(source, IngestStats(), Deduper(), fake_normalize))
    finally:
        p.chmod(0o644)


def test_read_calls_stream_closed_on_failure() -> None:
    opened: list[TrackingStream] = []
    with pytest.raises(SourceReadError, match="invalid JSON"):
        flat_calls(read_calls(bytes_source("x", b"garbage", opened), IngestStats(), Deduper(), fake_normalize))
    assert opened[0].closed


def test_read_calls_with_real_normalizer_on_aws_samples() -> None:
    stats = IngestStats()
    deduper = Deduper()
    put = next(iter(discover([str(FIXTURES / "aws_sample_put_item.json")])))
    calls = flat_calls(read_calls(put, stats, deduper))
    assert [c.operation for c in calls] == ["PutItem"]
    table = next(iter(discover([str(FIXTURES / "aws_sample_update_table.json")])))
    assert flat_calls(read_calls(table, stats, deduper)) == []  # a management event
    assert stats.records_read == 2
    assert stats.data_events == 1


# --------------------------------------------------------------------------------------------------------------------
# Property: whatever the whitespace and chunking, the records are exactly orjson's
# --------------------------------------------------------------------------------------------------------------------

_text = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20),
    st.sampled_from(TRICKY),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    _text,
)
_json = st.recursive(
    _scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_text, children, max_size=4)),
    max_leaves=12,
)
_record = st.one_of(
    st.builds(lambda d: {"eventVersion": "1.08", **d}, st.dictionaries(_text, _json, max_size=5)),
    st.dictionaries(_text, _json, max_size=5),
    _json,
)


def dump_with_whitespace(obj: Any, ws: Callable[[], str]) -> str:
    """JSON text of ``obj`` with random whitespace between all tokens."""
    if isinstance(obj, dict):
        if not obj:
            return "{" + ws() + "}"
        members = [
            ws() + orjson.dumps(k).decode() + ws() + ":" + ws() + dump_with_whitespace(v, ws) + ws()
            for k, v in obj.items()
        ]
        return "{" + ",".join(members) + "}"
    if isinstance(obj, list):
        if not obj:
            return "[" + ws() + "]"
        return "[" + ",".join(ws() + dump_with_whitespace(v, ws) + ws() for v in obj) + "]"
    return orjson.dumps(obj).decode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(_record, max_size=12),
    rnd=st.randoms(use_true_random=False),
    chunk_size=st.one_of(st.integers(min_value=1, max_value=64), st.integers(min_value=65, max_value=5000)),
    style=st.sampled_from(["compact", "random", "uniform", "mixed"]),
    compress=st.booleans(),
)
def test_property_same_records_as_orjson(
    records: list[Any], rnd: random.Random, chunk_size: int, style: str, compress: bool
) -> None:
    def ws() -> str:
        if style == "compact":
            return ""
        if style == "uniform":
            return " "
        if style == "mixed" and rnd.random() < 0.7:
            return ""
        return "".join(rnd.choice(" \t\r\n") for _ in range(rnd.randrange(4)))

    text = ws() + dump_with_whitespace({"Records": records}, ws) + ws()
    data = text.encode()
    expected = orjson.loads(data)["Records"]
    if compress:
        data = gzip.compress(data, 1)
    assert list(iter_records(io.BytesIO(data), "prop", chunk_size=chunk_size)) == expected


@settings(max_examples=100, deadline=None)
@given(records=st.lists(_record, max_size=8), chunk_size=st.integers(min_value=1, max_value=300))
def test_property_eventbridge_array_and_lines(records: list[Any], chunk_size: int) -> None:
    events = [envelope(r) for r in records]
    assert read_all(orjson.dumps(events), chunk_size) == records
    if records:
        lines = b"\n".join(orjson.dumps(e) for e in events) + b"\n"
        assert read_all(lines, chunk_size) == records


def test_directory_walk_refuses_specials_and_reports_unreadable_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from auditor.config import AnalysisConfig
    from auditor.engine import ingest

    (tmp_path / "a.json").write_bytes(log_file(RECORDS[:2]))
    os.mkfifo(tmp_path / "b.json")  # would block for ever if opened
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "c.json").write_bytes(log_file(RECORDS[2:4]))
    # The tests may run as root, for whom chmod 0 does not deny: the listing fails as it does for other users.
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if str(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    sources = discover([str(tmp_path)])
    assert [Path(s.name).name for s in sources] == ["a.json", "b.json", "locked"]
    _, stats = ingest(sources, AnalysisConfig())
    assert stats.files_read == 1 and stats.files_failed == 2
    assert stats.records_read == 2
    assert any("b.json" in p and "FIFO" in p for p in stats.problems)
    assert any("locked" in p and "cannot read directory" in p for p in stats.problems)


def _outcome(data: bytes, shard: cloudtrail.Shard | None) -> tuple[list[Any], str | None]:
    """What ``iter_records`` yields for ``data``, and its failure reason."""
    got: list[Any] = []
    try:
        for r in iter_records(io.BytesIO(data), "in.json.gz", chunk_size=4096, shard=shard):
            got.append(r)
    except SourceReadError as exc:
        return got, exc.reason
    return got, None


def _gzip_inputs() -> dict[str, bytes]:
    """Whole, multi-member, truncated, corrupt and plain inputs, for reading them by different paths."""
    whole = gzip.compress(log_file([rec(i) for i in range(3000)]))
    corrupt = bytearray(whole)
    for i in range(20, 40):
        corrupt[i] ^= 0x55
    return {
        "whole": whole,
        "two members": gzip.compress(log_file(RECORDS)) + gzip.compress(log_file(RECORDS)),
        "truncated": whole[: len(whole) // 2],
        "cut in the trailer": whole[:-3],
        "corrupt": bytes(corrupt),
        "trailing garbage": gzip.compress(log_file(RECORDS)) + b"garbage",
        "plain": log_file(RECORDS),
    }


def _count_reader_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the inputs read by a reader thread from now on (appended as each thread starts)."""
    threads: list[str] = []
    started = inputs._threaded_chunks

    def counted(stream: BinaryIO, name: str, chunk_size: int) -> Any:
        threads.append(name)
        return started(stream, name, chunk_size)

    monkeypatch.setattr(inputs, "_threaded_chunks", counted)
    return threads


def test_a_sharded_reader_inflates_in_line_and_reads_and_fails_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """One of several processes (a shard) inflates without a reader thread, with the same records and errors."""
    inputs = _gzip_inputs()
    threads = _count_reader_threads(monkeypatch)
    only = cloudtrail.Shard(0, 1)  # owns every record
    for name, data in inputs.items():
        threaded, threaded_error = _outcome(data, None)
        assert len(threads) == 1, name
        inline, inline_error = _outcome(data, only)
        assert len(threads) == 1, name  # no reader thread for a shard
        threads.clear()
        assert [r for r in inline if r is not cloudtrail.SKIPPED] == threaded, name
        assert inline_error == threaded_error, name
    assert _outcome(inputs["truncated"], only)[1] == "corrupt or truncated gzip data"
    assert _outcome(inputs["trailing garbage"], only)[1] == "trailing garbage after gzip data"


def test_a_regular_file_is_inflated_in_line_and_a_pipe_by_a_reader_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A regular file never makes the reader wait, so it is read without a thread, with the same records and errors
    as a threaded read; a pipe (another process writes it) keeps the reader thread."""
    inputs = {**_gzip_inputs(), "not json": b"{oops"}
    threads = _count_reader_threads(monkeypatch)

    def from_file(path: Path) -> tuple[list[Any], str | None]:
        got: list[Any] = []
        with path.open("rb") as fh:
            try:
                got.extend(iter_records(fh, path.name, chunk_size=4096))
            except SourceReadError as exc:
                return got, exc.reason
        return got, None

    for name, data in inputs.items():
        threaded = _outcome(data, None)  # an in-memory stream: read by the thread
        assert threads == ["in.json.gz"], name
        threads.clear()
        path = tmp_path / "in.json.gz"
        path.write_bytes(data)
        assert from_file(path) == threaded, name
        assert threads == [], name  # no reader thread for a regular file

    expected = _outcome(inputs["plain"], None)[0]
    threads.clear()
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as out:  # small enough for the pipe's buffer: written before it is read
        out.write(inputs["plain"])
    with os.fdopen(read_end, "rb") as pipe:
        assert list(iter_records(pipe, "pipe")) == expected
    assert threads == ["pipe"]

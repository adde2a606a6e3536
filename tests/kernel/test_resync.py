"""One bad record is one skipped record, in every format: the reader resumes after a stretch that is not one JSON
value (a broken line of JSON lines, a broken element of a ``Records`` array, a record the end of the input cut
short) and counts it as one skipped record with its reason, keeping every valid record around it."""

from __future__ import annotations

import gzip
import io

import orjson
import pytest

from auditor.exceptions import SourceReadError
from auditor.kernel import framing, inputs
from auditor.kernel.framing import TRUNCATED
from auditor.kernel.reader import Deduper, iter_records, read_calls
from auditor.kernel.runs import Malformed
from auditor.kernel.stats import IngestStats
from tests.kernel.test_reader import RECORDS, bytes_source

CHUNK_SIZES = [1, 7, 64, 1000, inputs.DEFAULT_CHUNK_SIZE]
#: The records around the hostile stretch (CloudTrail-shaped, see ``tests.kernel.test_reader.rec``).
BEFORE = [orjson.dumps(r) for r in RECORDS[:15]]
AFTER = [orjson.dumps(r) for r in RECORDS[15:]]


def read_all(data: bytes, chunk_size: int) -> list[object]:
    return list(iter_records(io.BytesIO(data), "t.json", chunk_size=chunk_size))


def assert_one_skipped(data: bytes, reason: str, index: int = 16, total: int = 31) -> None:
    """Every chunking reads the 30 valid records and one bad record at ``index`` (1-based) whose reason holds
    ``reason`` (``total`` records in all); so do the light and the full read of the calls, plain and gzipped."""
    for chunk_size in CHUNK_SIZES:
        got = read_all(data, chunk_size)
        assert len(got) == total
        bad = got[index - 1]
        assert isinstance(bad, Malformed) and reason in bad.reason, bad
        assert [r for r in got if isinstance(r, dict) and "eventID" in r] == RECORDS
    for light in (False, True):
        for body in (data, gzip.compress(data)):
            stats = IngestStats()
            list(read_calls(bytes_source("t.json", body), stats, Deduper(), light=light))
            assert (stats.records_read, stats.records_skipped, stats.data_events) == (total, 1, 30)
            assert next(p for p in stats.problems if reason in p).startswith(f"t.json: record {index}: ")


def records_file(middle: bytes) -> bytes:
    return b'{"Records":[' + b",".join([*BEFORE, middle, *AFTER]) + b"]}"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"hello world", "invalid JSON"),
        (b"}", "invalid JSON"),
        (b"{", "unexpected end of data"),
        (b'{"eventVersion":"1.08","x":"abc', "unexpected end of data"),
        (BEFORE[0][:40], "unexpected end of data"),  # a record cut short
    ],
)
def test_a_json_lines_line_that_is_not_one_value_is_one_skipped_record(line: bytes, reason: str) -> None:
    assert_one_skipped(b"\n".join([*BEFORE, line, *AFTER]) + b"\n", reason)


@pytest.mark.parametrize(
    ("middle", "reason"),
    [
        (b"", "unexpected character"),  # ",,"
        (b"   ", "unexpected character"),
        (b" " * 100_000, "unexpected character"),  # longer than a chunk and the candidate window
        (b"hello", "invalid JSON"),
        (b"{", "invalid JSON"),
        (b'{"eventVersion":"1.08","x":"abc}', "invalid JSON"),  # a string never closed
        (BEFORE[0][:40], "cut short by the next record"),  # a record cut short
    ],
)
def test_a_records_element_that_is_not_one_value_is_one_skipped_record(middle: bytes, reason: str) -> None:
    assert_one_skipped(records_file(middle), reason)


def test_text_after_an_element_is_one_skipped_record() -> None:
    # The element {"a":1} is read (a record of no known shape), the "}" after it is the bad stretch.
    data = records_file(b'{"a":1}}')
    assert_one_skipped(data, "expected ',' or ']'", index=17, total=32)


@pytest.mark.parametrize(
    "data",
    [
        b'{"Records":[' + b",".join([*BEFORE, *AFTER, AFTER[0][:60]]),  # the file ends inside the last record
        b'{"Records":[' + b",".join([*BEFORE, *AFTER, AFTER[0][:60]]) + b"]}",  # the array closed after it
        b"[" + b",".join([*BEFORE, *AFTER, AFTER[0][:60]]),  # a top-level array
        b"\n".join([*BEFORE, *AFTER, AFTER[0][:60]]),  # JSON lines
    ],
)
def test_a_truncated_final_record_is_one_skipped_record(data: bytes) -> None:
    assert_one_skipped(data, TRUNCATED, index=31)


@pytest.mark.parametrize(
    "data",
    [
        b'{"Records":[hello]}',
        b'{"Records":[{"eventVersion":"1.08","x":',
        b'{"Records":[{"a":1}, hello]}',  # text with no record after it
        b'{"Records":[{"a":1}',  # the array never closed
    ],
)
def test_an_input_with_nothing_readable_after_a_bad_stretch_still_fails(data: bytes) -> None:
    with pytest.raises(SourceReadError, match="invalid JSON"):
        read_all(data, inputs.DEFAULT_CHUNK_SIZE)


def test_a_whole_file_error_names_the_record_reached() -> None:
    data = b'{"Records":[' + b",".join(BEFORE) + b"]} trailing"
    with pytest.raises(SourceReadError, match=r"^t.json: record 16: invalid JSON .* at byte \d+$"):
        list(read_calls(bytes_source("t.json", data), IngestStats(), Deduper()))


def test_many_bad_stretches_take_linear_time() -> None:
    # Every other element broken: each resync moves forward, no stretch is scanned twice over the whole input.
    elements = [b"{" if i % 2 else orjson.dumps(RECORDS[i // 2 % 30] | {"eventID": f"e{i}"}) for i in range(4001)]
    data = b'{"Records":[' + b",".join(elements) + b"]}"
    got = read_all(data, inputs.DEFAULT_CHUNK_SIZE)
    assert len(got) == 4001 and sum(isinstance(r, Malformed) for r in got) == 2000


def test_several_kinds_of_bad_stretch_in_one_array() -> None:
    # After the first broken stretch the array's slow elements are read up to the next record start: an empty
    # element (",,") there still costs no valid record.
    hostile = [b"{", b"", b"hello", b'{"eventVersion":"1.08","x":"abc}', b"   ", BEFORE[0][:40]]
    elements: list[bytes] = []
    for i, record in enumerate(RECORDS):
        elements.append(orjson.dumps(record))
        if i % 5 == 2:
            elements.append(hostile[i // 5])
    data = b'{"Records":[' + b",".join(elements) + b"]}"
    for chunk_size in CHUNK_SIZES:
        got = read_all(data, chunk_size)
        assert [r for r in got if isinstance(r, dict)] == RECORDS
        assert sum(isinstance(r, Malformed) for r in got) == len(hostile) == len(got) - len(RECORDS)


def test_a_stretch_that_never_closes_past_the_size_limit_ends_at_the_next_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An unclosed "{" before more than the largest record's worth of records: not one record too large (which
    # would swallow them all) but a bad stretch up to the next record start.
    monkeypatch.setattr(framing, "_MAX_ELEMENT", 2_000)
    assert len(b",".join(AFTER)) > 2_000
    assert_one_skipped(records_file(b"{"), "invalid JSON")
    # A record over the limit is still one record too large, its neighbours kept.
    got = read_all(records_file(orjson.dumps({"a": "x" * 5_000})), 1000)
    assert got[15] == Malformed("record too large (over 0 MiB)") and len(got) == 31


@pytest.mark.parametrize("line", [b"hello", b"{", b"}", BEFORE[0][:40]])
def test_a_bad_first_line_of_json_lines_is_one_skipped_record(line: bytes) -> None:
    # The next line is an object: JSON lines whose first record is bad, not a pretty-printed document.
    assert_one_skipped(b"\n".join([line, *BEFORE, *AFTER]) + b"\n", "invalid JSON", index=1)

"""The hostile inputs of issue 15 (fuzz run), as builders: every repro plants valid records next to a poison one.

``python -m tests.fuzz.repros`` rewrites the stored corpus (``tests/fuzz/corpus``) from these builders; the tests
read the stored files, so a change here shows up as a diff of the corpus.
"""

from __future__ import annotations

import copy
import gzip
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

CORPUS = Path(__file__).parent / "corpus"
FIXTURE = Path(__file__).parent.parent / "fixtures" / "cloudtrail" / "shape_get_item.json"


def valid_record(n: int, table: str = "Orders") -> dict[str, Any]:
    """A real GetItem data event (the fixture's shape) with its own eventID and key."""
    base = orjson.loads(FIXTURE.read_bytes())["Records"][0]
    rec = copy.deepcopy(base)
    rec["eventID"] = f"00000000-0000-4000-8000-{n:012d}"
    rec["requestParameters"]["tableName"] = table
    rec["requestParameters"]["key"] = {"pk": f"USER#{n}", "sk": "ORDER#1"}
    return rec


def _dump(rec: dict[str, Any]) -> bytes:
    # the stdlib encoder: orjson refuses nesting deeper than 255 levels, which some repros need
    return json.dumps(rec, separators=(",", ":")).encode()


def _file(poison: bytes, valid: int = 3) -> bytes:
    """A log file: ``valid`` good records around one poison record (raw JSON text)."""
    good = [_dump(valid_record(n)) for n in range(valid)]
    return b'{"Records":[' + b",".join([good[0], poison, *good[1:]]) + b"]}"


def _poison(mutate: Callable[[dict[str, Any]], None]) -> bytes:
    rec = valid_record(999)
    mutate(rec)
    return _dump(rec)


def _set_time(value: str) -> Callable[[dict[str, Any]], None]:
    def f(rec: dict[str, Any]) -> None:
        rec["eventTime"] = value

    return f


def _partiql(rec: dict[str, Any]) -> None:
    rec["eventName"] = "ExecuteStatement"
    rec["requestParameters"] = {"statement": 'SELECT * FROM "Orders" WHERE pk = 99999999999999999999999'}


def _deep_key(rec: dict[str, Any]) -> None:
    value: Any = "x"
    for _ in range(300):
        value = {"M": {"a": value}}
    rec["requestParameters"]["key"] = {"pk": value}


def _nested_text(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def build() -> dict[str, tuple[bytes, int, int]]:
    """name -> (input bytes, valid DynamoDB data events in it, records the reader must skip)."""
    rec_text = _dump(valid_record(999))
    cases: dict[str, tuple[bytes, int, int]] = {
        "time_edge_max.json": (_file(_poison(_set_time("9999-12-31T23:59:59-14:00"))), 3, 1),
        "time_edge_min.json": (_file(_poison(_set_time("0001-01-01T00:00:00+14:00"))), 3, 1),
        "time_not_a_date.json": (_file(_poison(_set_time("2024-13-45T99:99:99Z"))), 3, 1),
        "partiql_huge_int.json": (_file(_poison(_partiql)), 4, 0),  # a valid 23-digit DynamoDB number
        "key_nested_300.json": (_file(_poison(_deep_key)), 4, 0),  # kept, its key stored as a digest
        "number_1e400.json": (_file(rec_text.replace(b'"eventVersion":"1.09"', b'"eventVersion":1e400')), 3, 1),
        "int_5000_digits.json": (
            _file(rec_text.replace(b'"eventVersion":"1.09"', b'"eventVersion":' + b"9" * 5000)),
            3,
            1,
        ),
        "lone_surrogate.json": (_file(rec_text.replace(b'"eventVersion":"1.09"', b'"eventVersion":"\\ud800"')), 3, 1),
        "nesting_2000.json": (
            _file(rec_text.replace(b'"eventVersion":"1.09"', b'"eventVersion":' + _nested_text(2000))),
            3,
            1,
        ),
        "scalar_in_array.json": (_file(b"5"), 3, 1),
    }
    lines = [_dump(valid_record(n)) for n in range(3)]
    for name, scalar in (("five", b"5"), ("null", b"null"), ("empty_string", b'""')):
        cases[f"jsonl_scalar_{name}.jsonl"] = (b"\n".join([lines[0], scalar, *lines[1:]]) + b"\n", 3, 1)
    cases["jsonl_1e400.jsonl"] = (b"\n".join([lines[0], b'{"eventVersion":1e400}', *lines[1:]]) + b"\n", 3, 1)
    cases["jsonl_surrogate.jsonl"] = (b"\n".join([lines[0], b'{"x":"\\udc00"}', *lines[1:]]) + b"\n", 3, 1)
    gz = bytearray(gzip.compress(_file(b"{}"), mtime=0))
    gz[3] |= 0xE0  # reserved FLG bits: zlib rejects the member
    cases["gzip_reserved_flags.json.gz"] = (bytes(gz), 0, 0)
    return cases


def write_corpus() -> None:
    CORPUS.mkdir(exist_ok=True)
    manifest = {}
    for name, (data, valid, skipped) in sorted(build().items()):
        (CORPUS / name).write_bytes(data)
        manifest[name] = {"data_events": valid, "records_skipped": skipped}
    (CORPUS / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


if __name__ == "__main__":
    write_corpus()
    sys.exit(0)

"""Fuzzing ``ddb-audit analyze-trail`` with Hypothesis (issue 15): valid records planted among hostile ones, in
every container the reader accepts. For every input the CLI exits 0, never 3; every planted valid record is
counted; each hostile record is counted once (read, and then skipped or kept); ``--jobs 2`` prints exactly what
one process prints; the table and markdown outputs carry no control character and form no HTML."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import unicodedata
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor import cli
from tests.fuzz.conftest import FUZZ_PROFILE
from tests.fuzz.repros import valid_record

HOSTILE_TEXT = st.sampled_from(
    [
        "<script>alert(1)</script>",
        "[x](javascript:alert(1))",
        "\x1b]8;;https://evil.example\x07x\x1b]8;;\x07",
        "\x1b[2J\x07\r\u202e",
        "=HYPERLINK(1)",
        "9999-12-31T23:59:59-14:00",
        "0001-01-01T00:00:00+14:00",
        "2024-02-30T00:00:00Z",
        "",
        "a" * 5000,
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    HOSTILE_TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
FIELDS = [
    ("eventTime",),
    ("eventName",),
    ("eventID",),
    ("eventSource",),
    ("awsRegion",),
    ("userIdentity",),
    ("userIdentity", "arn"),
    ("requestParameters",),
    ("requestParameters", "tableName"),
    ("requestParameters", "key"),
    ("requestParameters", "key", "pk"),
    ("requestParameters", "statement"),
    ("errorCode",),
    ("responseElements",),
]
#: Raw record texts no JSON encoder writes: numbers and strings the parser cannot represent, deep nesting.
RAW_POISON = [
    b'{"eventVersion":1e400}',
    b'{"eventVersion":' + b"9" * 5000 + b"}",
    b'{"eventVersion":"\\ud800"}',
    b'{"a":' + b"[" * 1100 + b"]" * 1100 + b"}",
    b'{"a":NaN}',
    b'{"a":"\xff\xfe"}',
]


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"M": {"a": value}}
    return value


@st.composite
def poison_record(draw: st.DrawFn, n: int) -> bytes:
    kind = draw(st.sampled_from(["field", "field", "raw", "deep", "scalar"]))
    if kind == "raw":
        return draw(st.sampled_from(RAW_POISON))
    if kind == "scalar":
        return draw(st.sampled_from([b"5", b"null", b'""', b"true"]))
    rec = valid_record(1000 + n)
    path = draw(st.sampled_from(FIELDS))
    value = _deep(draw(st.integers(100, 400))) if kind == "deep" else draw(VALUES)
    target: Any = rec
    for part in path[:-1]:
        if not isinstance(target.get(part), dict):
            target[part] = {}
        target = target[part]
    target[path[-1]] = value
    return json.dumps(rec, separators=(",", ":")).encode()


@st.composite
def hostile_input(draw: st.DrawFn) -> tuple[bytes, int, int, str]:
    """(file bytes, planted valid records, hostile records, file name)."""
    valid = [
        orjson.dumps(valid_record(n, table=draw(st.sampled_from(["Orders", "T<b>|x", "\x1b[31mRed"]))))
        for n in range(draw(st.integers(1, 5)))
    ]
    poison = [draw(poison_record(n)) for n in range(draw(st.integers(1, 4)))]
    items = valid + poison
    order = draw(st.permutations(range(len(items))))
    items = [items[i] for i in order]
    container = draw(st.sampled_from(["records", "jsonl", "array"]))
    if container == "jsonl":
        # a scalar that is the first line of a JSON-lines file is fine too; only a lone scalar is not a log file
        data = b"\n".join(items) + b"\n"
        name = "in.jsonl"
    elif container == "array":
        data = b"[" + b",".join(items) + b"]"
        name = "in.json"
    else:
        data = b'{"Records":[' + b",".join(items) + b"]}"
        name = "in.json"
    if draw(st.booleans()):
        data, name = gzip.compress(data, mtime=0), name + ".gz"
    return data, len(valid), len(poison), name


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def _write(tmp: Path, data: bytes, name: str) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


@settings(settings.get_profile(FUZZ_PROFILE))
@given(case=hostile_input())
def test_every_planted_record_counts_and_nothing_crashes(
    case: tuple[bytes, int, int, str], tmp_path_factory: Any
) -> None:
    data, valid, hostile, name = case
    path = _write(tmp_path_factory.mktemp("fuzz"), data, name)
    code, out, err = run_cli(["analyze-trail", str(path), "--format", "json", "--jobs", "1"])
    assert code == cli.EXIT_OK, err
    stats = orjson.loads(out)["stats"]
    assert stats["files_failed"] == 0
    assert stats["records_read"] == valid + hostile  # every record counted once
    assert stats["data_events"] >= valid  # no planted valid record lost
    assert stats["data_events"] + stats["records_skipped"] <= valid + hostile
    for fmt in ("table", "markdown"):
        code, text, err = run_cli(["analyze-trail", str(path), "--format", fmt, "--jobs", "1"])
        assert code == cli.EXIT_OK, err
        assert not [c for c in text if c not in "\n" and unicodedata.category(c) in ("Cc", "Cf")]
        if fmt == "markdown":
            assert "<script" not in text and "<b>" not in text


@settings(
    settings.get_profile(FUZZ_PROFILE), max_examples=max(10, settings.get_profile(FUZZ_PROFILE).max_examples // 6)
)
@given(case=hostile_input())
def test_two_processes_print_what_one_prints(case: tuple[bytes, int, int, str], tmp_path_factory: Any) -> None:
    data, _, _, name = case
    path = _write(tmp_path_factory.mktemp("fuzz"), data, name)
    outputs = []
    for jobs in ("1", "2"):
        code, out, err = run_cli(["analyze-trail", str(path), "--format", "json", "--jobs", jobs])
        assert code == cli.EXIT_OK, err
        outputs.append(out)
    assert outputs[0] == outputs[1]

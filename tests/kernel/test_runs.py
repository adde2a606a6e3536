"""The runs of the reader's hot path (``auditor/kernel/runs.py``): the hint that sends a record of another operation
to the typed call decoder before the light one. It is a hint only: with it, a run reads exactly what it reads without
it (what one record at a time reads), however the records and the offsets it has learnt are written."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.kernel import runs
from auditor.kernel.decode import FullRecord, LightRecord
from auditor.kernel.runs import light_run
from tests.kernel.test_decode import _BATCH, _OTHERS, _REAL, BASE, _run_reference, _with

_KEY = b'"eventName":"'
_SEP = b'},{"eventVersion":'


@contextlib.contextmanager
def _hinted(offsets: list[int]) -> Iterator[None]:
    """``light_run`` with its hint on (as compiled), having learnt ``offsets``; what it had learnt comes back after."""
    learnt = list(runs._OTHER_AT)
    hinted = runs.HINTED
    runs.HINTED = True  # (compiled, the hint is on whatever the module's attribute says)
    runs._OTHER_AT[:] = offsets
    try:
        yield
    finally:
        runs.HINTED = hinted
        runs._OTHER_AT[:] = learnt


def _offset(record: bytes) -> int:
    """Where the value of the first ``eventName`` begins in ``record``."""
    return record.index(_KEY) + len(_KEY)


#: Records of other operations and records written unusually where the hint looks: eventName given twice (the last
#: wins, as in orjson), its first letter escaped, a light operation where another one's name stood.
_OTHER = [orjson.dumps(r) for r in _OTHERS[:12]]
_TRICKY = [
    _BATCH[:-1] + b',"eventName":"GetItem"}',
    BASE[:-1] + b',"eventName":"Scan"}',
    _with(_BATCH, b'"eventName":"B', b'"eventName":"\\u0042'),
    _with(BASE, b'"eventName":"G', b'"eventName":"\\u0047'),
    _with(_BATCH, b'"eventName":"BatchWriteItem"', b'"eventName":"GetItem"'),
    _with(BASE, b'"eventName":"GetItem"', b'"eventName":"Scan"'),
    _with(BASE, b'"eventName":"GetItem"', b'"eventName":"Sc\\u0061n"'),
    _with(BASE, b'"eventName":"GetItem"', b'"eventName":"DescribeTable"'),
]
_ALL = [*_REAL, *_OTHER, *_TRICKY]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, len(_ALL) - 1), min_size=1, max_size=10),
    learnt=st.lists(st.integers(0, len(_ALL) - 1), max_size=4),
    junk=st.lists(st.integers(-20, 3000), max_size=4),
    mutate=st.none() | st.tuples(st.integers(0, 9), st.floats(0, 1), st.binary(max_size=3)),
    most=st.integers(1, 11),
)
def test_a_hinted_run_reads_what_one_record_at_a_time_reads(
    picks: list[int], learnt: list[int], junk: list[int], mutate: tuple[int, float, bytes] | None, most: int
) -> None:
    parts = [_ALL[i] for i in picks]
    if mutate is not None and mutate[0] < len(parts):
        text = parts[mutate[0]]
        at = int(mutate[1] * len(text))
        parts[mutate[0]] = text[:at] + mutate[2] + text[at + 1 :]
    buf = b'{"Records":[' + b",".join(parts) + b"]}"
    args = (buf, 12, len(buf), _SEP, 2, most)
    offsets = [_offset(_ALL[i]) for i in learnt] + [j for j in junk if j >= len(_KEY)]
    with _hinted(offsets):
        got = light_run(*args)
        assert len(runs._OTHER_AT) <= runs._OTHER_AT_MOST
    assert got == _run_reference(*args)


def test_a_run_learns_where_other_operations_name_themselves_and_then_reads_them_first() -> None:
    parts = [_OTHER[0], BASE, _OTHER[0], BASE, _TRICKY[0], BASE]
    buf = b'{"Records":[' + b",".join(parts) + b"]}"
    with _hinted([]):
        done, _ = light_run(buf, 12, len(buf), _SEP, 2, 10)
        assert [_offset(_OTHER[0])] == runs._OTHER_AT  # learnt from the first, then hinted (nothing more to learn)
        # the last record, after which no separator follows, is left to the slower paths
        assert [type(r) for r in done] == [FullRecord, LightRecord, FullRecord, LightRecord, dict]
        again, _ = light_run(buf, 12, len(buf), _SEP, 2, 10)
        assert again == done
        runs._OTHER_AT[:] = range(100, 100 + runs._OTHER_AT_MOST)  # full: cleared before it learns one more
        light_run(buf, 12, len(buf), _SEP, 2, 10)
        assert [_offset(_OTHER[0])] == runs._OTHER_AT


def test_the_hint_looks_only_inside_the_record_and_only_past_the_light_operations() -> None:
    record = _OTHER[1]
    at = _offset(record)
    buf = b"[" + record + b"]"
    with _hinted([at]):
        assert runs._names_other(buf, 1, 1 + len(record))
        assert not runs._names_other(buf, 1, at)  # the name lies past the end of that slice
        assert not runs._names_other(BASE, 0, len(BASE))  # a GetItem there
    with _hinted([at - 1, at + 1, len(record) + 5]):
        assert not runs._names_other(buf, 1, 1 + len(record))

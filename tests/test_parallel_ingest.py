"""Sharded reading: several processes split the records by eventID and their aggregates merge to one result."""

from __future__ import annotations

import gzip
import io
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor import engine
from auditor.config import AnalysisConfig
from auditor.engine import analyze_trail, ingest, plan_processes
from auditor.kernel.inputs import discover
from auditor.kernel.reader import SKIPPED, Deduper, Shard, iter_records, read_calls
from auditor.kernel.stats import IngestStats
from tests.factories import planted_workload, write_trail

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A quarter of an hour of traffic with planted problems as CloudTrail delivers it: several files, digests,
    duplicates across files."""
    out = tmp_path_factory.mktemp("trail")
    write_trail(planted_workload(START, hours=0.25, seed=3), out, seed=3, duplicates=25)
    return out


def _summary(result: engine.TrailAnalysis) -> dict[str, Any]:
    d = result.to_dict()
    return {
        "stats": d["stats"],
        "findings": sorted((f["id"], f["kind"], f["severity"], f["table"]) for f in d["findings"]),
        "patterns": d["access_patterns"],
    }


def test_shards_partition_the_records_and_keep_record_numbers(tmp_path: Path) -> None:
    records: list[Any] = [{"eventID": f"e{i}", "eventSource": "dynamodb.amazonaws.com", "n": i} for i in range(200)]
    records += [{"eventSource": "dynamodb.amazonaws.com"}, 42]  # no eventID, not an object: shard 0
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(orjson.dumps({"Records": records})))
    seen: list[set[int]] = []
    for i in range(3):
        shard = Shard(i, 3)
        owned = set()
        with path.open("rb") as fh:
            for n, rec in enumerate(iter_records(fh, str(path), shard=shard)):
                if rec is not SKIPPED and shard.owns(rec):
                    owned.add(n)
        seen.append(owned)
    assert set().union(*seen) == set(range(len(records)))
    assert sum(len(s) for s in seen) == len(records)
    assert {200, 201} <= seen[0]
    # Ownership follows crc32(eventID), so it is the same in every process and for every copy of an event.
    for n in range(200):
        owner = zlib.crc32(f"e{n}".encode()) % 3
        assert n in seen[owner]


def test_raw_ownership_agrees_with_parsed_ownership_when_a_key_is_named_event_id(tmp_path: Path) -> None:
    # A table whose key attribute is called eventID: the raw scan sees two matches and must parse to decide.
    records = [
        {
            "eventVersion": "1.08",
            "eventSource": "dynamodb.amazonaws.com",
            "requestParameters": {"tableName": "T", "key": {"eventID": f"inner-{i}"}},
            "eventID": f"outer-{i}",
        }
        for i in range(300)
    ]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"Records": records}))
    shard = Shard(1, 2)
    with path.open("rb") as fh:
        got = [r for r in iter_records(fh, str(path), shard=shard) if r is not SKIPPED and shard.owns(r)]
    expected = [r for r in records if zlib.crc32(r["eventID"].encode()) % 2 == 1]
    assert got == expected


def test_read_calls_counts_each_record_in_exactly_one_shard(trail: Path) -> None:
    sources = discover([str(trail)])
    whole = IngestStats()
    dedupe = Deduper()
    n_whole = sum(len(batch) for s in sources for batch in read_calls(s, whole, dedupe))
    parts = [IngestStats() for _ in range(2)]
    n_parts = 0
    for i, stats in enumerate(parts):
        dd = Deduper()
        n_parts += sum(len(batch) for s in sources for batch in read_calls(s, stats, dd, shard=Shard(i, 2)))
    assert n_parts == n_whole
    for field in ("records_read", "records_skipped", "data_events", "duplicates_dropped"):
        assert sum(getattr(p, field) for p in parts) == getattr(whole, field), field
    assert whole.duplicates_dropped == 25  # duplicates crossing files are still dropped exactly once


def test_two_processes_give_the_same_result_as_one(trail: Path) -> None:
    one = analyze_trail([str(trail)], AnalysisConfig(), processes=1)
    two = analyze_trail([str(trail)], AnalysisConfig(), processes=2)
    assert _summary(two) == _summary(one)
    assert one.stats.duplicates_dropped == 25
    assert one.findings  # the planted problems are found either way


def test_a_failing_file_counts_once_and_others_still_count(trail: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(b'{"Records":[{"eventID":"x"}')[:-8])  # truncated gzip
    one = analyze_trail([str(trail), str(bad)], AnalysisConfig(), processes=1)
    two = analyze_trail([str(trail), str(bad)], AnalysisConfig(), processes=2)
    assert two.stats.files_failed == one.stats.files_failed == 1
    assert two.stats.as_dict() == one.stats.as_dict()
    assert sum(str(bad) in p for p in two.stats.problems) == 1


def test_a_failed_worker_is_redone_in_the_parent(trail: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_worker(_sources: Any, _config: Any, _shard: Shard, conn: Any) -> None:
        conn.send("Traceback: worker crashed")
        conn.close()

    monkeypatch.setattr(engine, "_shard_worker", broken_worker)
    two = analyze_trail([str(trail)], AnalysisConfig(), processes=2)
    one = analyze_trail([str(trail)], AnalysisConfig(), processes=1)
    assert _summary(two) == _summary(one)


def test_plan_processes(trail: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = discover([str(trail)])
    assert plan_processes(sources, 1) == 1
    monkeypatch.setattr(engine.os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3, 4, 5, 6, 7}, raising=False)
    assert plan_processes(sources, 3) == 3
    assert plan_processes(sources, 100_000) == engine.MAX_PROCESSES  # --jobs is capped: no fork bomb
    monkeypatch.setattr(engine.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert plan_processes(sources, 3) == 2  # never more than the CPUs
    monkeypatch.setattr(engine, "PARALLEL_MIN_BYTES", 1 << 40)
    assert plan_processes(sources) == 1  # small input: one process
    monkeypatch.setattr(engine, "PARALLEL_MIN_BYTES", 1)
    assert 1 <= plan_processes(sources) <= engine.MAX_PROCESSES
    streamed = discover(["-"], stdin=io.BytesIO(b"{}"))
    assert plan_processes(streamed, 2) == 1  # stdin can be read once


def test_ingest_with_a_shard_reads_only_that_shard(trail: Path) -> None:
    sources = discover([str(trail)])
    _, all_stats = ingest(sources, AnalysisConfig())
    _, s0 = ingest(sources, AnalysisConfig(), Shard(0, 2))
    _, s1 = ingest(sources, AnalysisConfig(), Shard(1, 2))
    assert 0 < s0.data_events < all_stats.data_events
    assert s0.data_events + s1.data_events == all_stats.data_events
    assert s0.files_read == s1.files_read == all_stats.files_read


def _other_shard_id(shard: Shard) -> str:
    """An eventID that hashes to a shard other than ``shard``."""
    return next(f"id-{i}" for i in range(100) if zlib.crc32(f"id-{i}".encode()) % shard.count != shard.index)


@pytest.mark.parametrize(
    ("template", "skippable"),
    [
        ('{{"eventSource":"dynamodb.amazonaws.com","eventID":"{eid}","x":{{"a":1}}}}', True),
        # A cut inside a record (an inner object whose first key looks like a record's) is not detected here: the
        # shards then disagree on the number of records and the input is read again in one process (tested below).
        ('{{"eventSource":"dynamodb.amazonaws.com","eventID":"{eid}","nested":[{{"a":1}}', True),
        # Two eventID keys: which one is the record's is only known after parsing.
        ('{{"eventID":"{eid}","k":{{"eventID":"{eid}"}}}}', False),
        # An escape in the value: its hash over the raw bytes may differ from the parsed value's.
        ('{{"eventID":"{eid}\\\\u0041","eventSource":"dynamodb.amazonaws.com"}}', False),
        ('{{"eventSource":"dynamodb.amazonaws.com"}}', False),
    ],
)
def test_raw_ownership_skips_only_unambiguous_records_of_other_shards(template: str, skippable: bool) -> None:
    from auditor.kernel.shards import raw_owned as _raw_owned

    shard = Shard(0, 2)
    raw = template.format(eid=_other_shard_id(shard)).encode()
    assert _raw_owned(raw, 0, len(raw), shard) is not skippable
    # A record of this shard is always parsed.
    mine = next(f"id-{i}" for i in range(100) if zlib.crc32(f"id-{i}".encode()) % 2 == 0)
    raw_mine = template.format(eid=mine).encode()
    assert _raw_owned(raw_mine, 0, len(raw_mine), shard) is True


def _record(i: int, **extra: Any) -> dict[str, Any]:
    return {
        "eventVersion": "1.08",
        "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/app/s", "accountId": "1"},
        "eventTime": "2026-03-02T09:00:00Z",
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": "GetItem",
        "awsRegion": "us-east-1",
        "requestParameters": {"tableName": "Orders", "key": {"pk": f"K#{i % 7}"}},
        "eventID": f"evt-{i}",
        **extra,
        "eventType": "AwsApiCall",
        "eventCategory": "Data",
        "recipientAccountId": "1",
    }


@pytest.mark.parametrize("nested_owner", [0, 1])
def test_a_record_cut_in_the_wrong_place_makes_the_shards_disagree_and_one_process_redo_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nested_owner: int
) -> None:
    # The record separator learnt from the file ('},{"eventVersion":') also occurs inside one record (an array of
    # record-like objects after its eventID), so the fast path cuts that record in two. One shard skips the first
    # piece unparsed; the shard that parses it reads the record structurally. Their record counts differ.
    eid = next(f"evt-{i}" for i in range(1000, 2000) if zlib.crc32(f"evt-{i}".encode()) % 2 == nested_owner)
    odd = _record(0, additionalEventData={"items": [{"a": 1}, {"eventVersion": "x", "b": 2}]})
    odd["eventID"] = eid
    records = [_record(i) for i in range(1, 60)] + [odd] + [_record(i) for i in range(60, 120)]
    path = tmp_path / "adversarial.json"
    path.write_bytes(orjson.dumps({"Records": records}))
    assert b'},{"eventVersion":"x"' in path.read_bytes()

    warnings: list[str] = []
    real_warning = engine.log.warning
    monkeypatch.setattr(engine.log, "warning", lambda event, **kw: (warnings.append(event), real_warning(event, **kw)))
    sources = discover([str(path)])
    one, one_stats = ingest(sources, AnalysisConfig())
    two, two_stats = engine.ingest_parallel(sources, AnalysisConfig(), 2)
    assert "shards_disagree" in warnings
    assert (
        two_stats.as_dict() == one_stats.as_dict() == {**one_stats.as_dict(), "records_read": 120, "data_events": 120}
    )
    assert two_stats.files_failed == 0
    assert {k: w.to_dict() for k, w in two.windows.items()} == {k: w.to_dict() for k, w in one.windows.items()}


def test_shards_agree_on_ordinary_input_and_nothing_is_read_twice(trail: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    real_ingest = engine.ingest
    monkeypatch.setattr(
        engine, "ingest", lambda *a, **k: (calls.append(a[2] if len(a) > 2 else None), real_ingest(*a, **k))[1]
    )
    engine.ingest_parallel(discover([str(trail)]), AnalysisConfig(), 2)
    assert calls == [Shard(0, 2)]  # this process read its own shard only, no redo (a child records in its own memory)


def _eid_of_shard(shard: int, skip: set[str]) -> str:
    return next(
        f"evt-{i}" for i in range(1000, 3000) if zlib.crc32(f"evt-{i}".encode()) % 2 == shard and f"evt-{i}" not in skip
    )


@pytest.mark.parametrize("hidden_after", [(0,), (1,), (1, 0)])
def test_an_element_hidden_behind_a_record_is_counted_whichever_shard_skips_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hidden_after: tuple[int, ...]
) -> None:
    # An element that does not start like a record ({"a": ...} or a deep array: no eventID, so shard 0's) sits after
    # a record: the separator learnt from the file cuts the record and the element as one slice, which the shards
    # that do not own the record's eventID skip unparsed. With two such slices owned by different shards each shard
    # misses one element, so their record counts agree: the owner's parse of a wrong cut must still make the input
    # be read again in one process, or the hidden elements are nobody's.
    warnings: list[str] = []
    real_warning = engine.log.warning
    monkeypatch.setattr(engine.log, "warning", lambda event, **kw: (warnings.append(event), real_warning(event, **kw)))
    records: list[Any] = [_record(i) for i in range(1, 40)]
    used: set[str] = set()
    for n, owner in enumerate(hidden_after):
        owned = _record(900 + n)
        owned["eventID"] = _eid_of_shard(owner, used)
        used.add(owned["eventID"])
        records += [owned, {"a": [[[n]]]}, *(_record(i) for i in range(100 + 40 * n, 140 + 40 * n))]
    path = tmp_path / "hidden.json"
    path.write_bytes(orjson.dumps({"Records": records}))
    sources = discover([str(path)])
    one, one_stats = ingest(sources, AnalysisConfig())
    two, two_stats = engine.ingest_parallel(sources, AnalysisConfig(), 2)
    assert one_stats.records_read == len(records)
    assert two_stats.as_dict() == one_stats.as_dict()
    assert "shards_disagree" in warnings
    assert {k: w.to_dict() for k, w in two.windows.items()} == {k: w.to_dict() for k, w in one.windows.items()}

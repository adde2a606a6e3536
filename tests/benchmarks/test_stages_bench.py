"""benchmarks.stages: each stage runs the real ingest code on the whole file, and the report's budget is computed
from runs made side by side.

Timings are never asserted (benchmarks report, tests do not time): these tests check that every stage reads every
record of the file with the functions the pipeline uses, that a stage reading another number of records is refused,
and the arithmetic of the budget line.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from auditor.demo.benchmark import write_large_log_file
from benchmarks import stages
from benchmarks.ingest import REPO, Run, measure, warm_bytecode

RECORDS = 2_000


def _run(cpu: float, ok: bool = True, detail: str = "") -> Run:
    return Run(ok=ok, wall_s=cpu, cpu_s=cpu, peak_rss_mb=10.0, detail=detail)


def _budget(line: str) -> dict[str, float]:
    return {k: float(v) for k, v in (kv.split("=") for kv in line.split())}


def test_every_stage_reads_the_whole_file_and_the_report_ends_in_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "trail.json.gz"
    write_large_log_file(path, RECORDS, RECORDS // 4, seed=3)

    runs = stages.measure_stages(path, RECORDS, 1, progress=False)

    assert list(runs) == ["floor", "imports", "gunzip", "read", "calls", "aggregate", stages.JOBS1]
    assert [(k, r.detail) for k, v in runs.items() for r in v if not r.ok] == []
    # The counting stages printed the file's record count (a wrong count would have failed the run).
    assert all(runs[k][0].stdout.strip() == str(RECORDS) for k in stages.COUNTED)
    budget = _budget(stages.report(runs)[-1])
    assert set(budget) == {"floor_cpu", "jobs1_cpu", "decode_cpu", "outside_decode_cpu"}
    assert budget["floor_cpu"] > 0 and budget["jobs1_cpu"] > 0


def test_a_stage_that_reads_another_number_of_records_fails(tmp_path: Path) -> None:
    path = tmp_path / "trail.json.gz"
    write_large_log_file(path, 200, 50, seed=4)
    run = measure(stages.stage_argv("calls", str(path)), capture=True)
    assert run.ok and run.stdout.strip() == "200"

    runs = stages.measure_stages(path, 201, 1, progress=False)
    for name in stages.COUNTED:
        assert not runs[name][0].ok
        assert runs[name][0].detail == "read '200' records, expected 201"
    lines = stages.report(runs)
    assert lines[-1] == "floor_cpu=nan jobs1_cpu=nan decode_cpu=nan outside_decode_cpu=nan"
    assert "read: failed: read '200' records, expected 201" in lines


def test_budget_takes_each_repeats_differences_side_by_side() -> None:
    # The decode cost is read minus gunzip within each repeat (1.0, 2.0, 0.7: median 1.0), not the difference of
    # the two stages' medians (1.6 - 0.9 = 0.7): each difference compares runs made next to each other.
    runs = {
        "floor": [_run(2.0), _run(4.0), _run(2.0)],
        "imports": [_run(0.3), _run(0.6), _run(0.3)],
        "gunzip": [_run(0.5), _run(1.0), _run(0.9)],
        "read": [_run(1.5), _run(3.0), _run(1.6)],
        "calls": [_run(2.0), _run(4.0), _run(3.0)],
        "aggregate": [_run(3.0), _run(6.0), _run(4.0)],
        stages.JOBS1: [_run(3.5), _run(7.0), _run(4.5)],
    }
    lines = stages.report(runs)
    # outside decode per repeat: 3.5 - 1.0, 7.0 - 2.0, 4.5 - 0.7 -> median 3.8
    assert _budget(lines[-1]) == {"floor_cpu": 2.0, "jobs1_cpu": 4.5, "decode_cpu": 1.0, "outside_decode_cpu": 3.8}
    assert "floor CPU / --jobs 1 CPU: 0.44 as it is; 0.53 at most with a decoder that cost nothing" in lines
    table = {line.split()[0]: line.split()[1:3] for line in lines[2:8]}
    assert table["read"] == ["1.60", "0.70"]  # the stage's median CPU, and what it adds to gunzip's median


def test_the_benchmarks_measure_with_the_bytecode_caches_an_install_has() -> None:
    # Whatever PYTHONDONTWRITEBYTECODE says, the measured processes must not compile the project from source.
    assert warm_bytecode() == "bytecode caches: written before measuring, as an install has them"
    for module in ("auditor/cli/__init__.py", "auditor/kernel/reader.py", "benchmarks/stages.py"):
        cached = Path(importlib.util.cache_from_source(str(REPO / module)))
        assert cached.is_file(), cached
        assert cached.stat().st_mtime >= (REPO / module).stat().st_mtime

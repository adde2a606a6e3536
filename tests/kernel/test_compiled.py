"""The modules ``setup.py`` compiles with mypyc give exactly what their interpreted source gives (the source is what
the Lambda functions run; the CLI runs the compiled modules where ``pip install`` built them)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks.interpreted import compiled_modules
from tests.factories import planted_workload, traffic, write_log_file
from tests.fuzz.repros import CORPUS

ROOT = Path(__file__).resolve().parents[2]


def _analyze(module: str, paths: list[Path]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", module, "analyze-trail", *map(str, paths), "--format", "json", "--jobs", "1"]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)


def test_compiled_and_interpreted_analyze_trail_print_the_same(tmp_path: Path) -> None:
    if not compiled_modules():
        pytest.skip("this install runs the interpreted source only (setup.py did not compile: no compiler or mypyc)")
    write_log_file(
        planted_workload(datetime(2026, 12, 1, 10, tzinfo=UTC), hours=1.0, seed=3), tmp_path / "demo.json.gz"
    )
    write_log_file(traffic(20_000, seed=5), tmp_path / "large.json.gz")
    # The hostile-input corpus: what each build counts, skips and reports must match record for record.
    paths = [tmp_path, *sorted(p for p in CORPUS.iterdir() if p.name != "manifest.json")]
    compiled, interpreted = _analyze("auditor", paths), _analyze("benchmarks.interpreted", paths)
    assert compiled.returncode == interpreted.returncode == 0, compiled.stderr[-2000:] + interpreted.stderr[-2000:]
    assert '"kind"' in compiled.stdout  # findings were produced, so the comparison covers the detectors' inputs
    assert compiled.stdout == interpreted.stdout

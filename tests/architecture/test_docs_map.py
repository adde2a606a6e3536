"""docs/architecture.md's "where things live" tables stay true: every path they name exists, and every source, sink
and handler module is named."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
#: Paths in backticks: `auditor/kernel/reader.py`, `auditor/report/`, `handlers/runtime.py`.
PATHS = set(re.findall(r"`((?:auditor|handlers)/[\w/]*(?:\.py)?)`", DOC))
#: Sibling files named after a path in the same cell (`auditor/kernel/normalize.py` (PartiQL: `partiql.py`)).
SIBLINGS = set(re.findall(r"`(\w+\.py)`", DOC))


def test_every_path_the_map_names_exists() -> None:
    assert PATHS
    missing = sorted(p for p in PATHS if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_every_kernel_source_state_sink_and_handler_module_is_on_the_map() -> None:
    modules = [
        *(ROOT / "auditor" / "kernel").glob("*.py"),
        *(ROOT / "auditor" / "sources").glob("*.py"),
        *(ROOT / "auditor" / "sinks").glob("*.py"),
        *(ROOT / "auditor" / "state").glob("*.py"),
        *(ROOT / "handlers").glob("*.py"),
    ]
    unnamed = sorted(
        m.relative_to(ROOT).as_posix()
        for m in modules
        if m.name != "__init__.py" and m.relative_to(ROOT).as_posix() not in PATHS and m.name not in SIBLINGS
    )
    assert not unnamed, f"add these modules to docs/architecture.md: {unnamed}"


def test_nothing_points_outside_the_repository() -> None:
    """No code, doc or configuration line names a file outside the repository or a machine path."""
    files = [
        *ROOT.glob("*.md"),
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "auditor").rglob("*.py"),
        *(ROOT / "handlers").rglob("*.py"),
        *(ROOT / "benchmarks").rglob("*.py"),
        ROOT / "template.yaml",
        ROOT / "Makefile",
        ROOT / "pyproject.toml",
    ]
    pattern = re.compile(r"SPEC\.md|DESIGN\.md|\.\./shared|/work/|/home/\w")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in files
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, found

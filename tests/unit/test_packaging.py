"""What the Makefile's one environment relies on in pyproject.toml and setup.py."""

from __future__ import annotations

import os
import runpy
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_dev_extra_holds_everything_the_demo_extra_asks_for() -> None:
    # `make demo` runs in .venv, installed with the dev extra only (installing `.[demo]` on top would recompile).
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["demo"], "the demo extra is empty"
    assert set(extras["demo"]) <= set(extras["dev"])


def _setup_module(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """setup.py's functions, without running a build (``setuptools.setup`` replaced, compiling switched off)."""
    import setuptools

    monkeypatch.setattr(setuptools, "setup", lambda **_kw: None)
    monkeypatch.setenv("DDB_AUDIT_COMPILE", "0")
    return runpy.run_path(str(ROOT / "setup.py"))


def test_a_build_that_installs_pure_python_removes_compiled_copies_older_than_their_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remove_stale = _setup_module(monkeypatch)["remove_stale"]
    pkg = tmp_path / "auditor" / "kernel" / "aggregates"
    pkg.mkdir(parents=True)
    edited, untouched = pkg / "window.py", pkg / "sketch.py"
    old_window, sketch_so = (
        pkg / "window.cpython-311-x86_64-linux-gnu.so",
        pkg / "sketch.cpython-311-x86_64-linux-gnu.so",
    )
    for path in (old_window, sketch_so, untouched):
        path.write_bytes(b"x")
    edited.write_text("# edited after the last compile\n")
    os.utime(old_window, (1_000_000, 1_000_000))
    os.utime(untouched, (1_000_000, 1_000_000))  # the source is older than its compiled copy: still current

    removed = remove_stale(tmp_path, ["auditor/kernel/aggregates/window.py", "auditor/kernel/aggregates/sketch.py"])

    assert removed == [old_window]
    assert not old_window.exists() and sketch_so.exists() and edited.exists()

"""What the Makefile's one environment relies on in pyproject.toml and setup.py."""

from __future__ import annotations

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


def test_a_pure_python_build_removes_every_compiled_copy_of_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An editable install compiles in place: a later pure build must not leave a compiled copy to shadow the source.
    remove_compiled = _setup_module(monkeypatch)["remove_compiled"]
    pkg = tmp_path / "auditor" / "kernel" / "aggregates"
    pkg.mkdir(parents=True)
    built = [pkg / "window.cpython-311-x86_64-linux-gnu.so", tmp_path / "auditor" / "kernel" / "normalize.abi3.so"]
    group = tmp_path / "ddb_traffic_auditor__mypyc.cpython-311-x86_64-linux-gnu.so"
    other = tmp_path / "auditor" / "other.cpython-311-x86_64-linux-gnu.so"  # not the kernel's: left alone
    source = pkg / "window.py"
    for path in (*built, group, other):
        path.write_bytes(b"x")
    source.write_text("x = 1\n")

    removed = remove_compiled(tmp_path)

    assert sorted(removed) == sorted([*built, group])
    assert not any(p.exists() for p in (*built, group)) and other.exists() and source.exists()


def test_the_compiled_set_is_the_kernel_package_less_the_modules_that_say_they_stay_interpreted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kernel_modules = _setup_module(monkeypatch)["kernel_modules"]
    compiled = kernel_modules(ROOT)
    everything = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "auditor" / "kernel").rglob("*.py"))
    marked = [m for m in everything if "# mypyc: interpreted" in (ROOT / m).read_text().splitlines()]
    assert marked and set(marked) <= set(everything)
    assert compiled == [m for m in everything if m not in marked]
    assert "auditor/kernel/normalize.py" in compiled and "auditor/kernel/aggregates/window.py" in compiled


def test_the_default_build_compiles_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The default install is what Lambda runs (pure Python): compiling is opt-in, and the build needs no mypy.
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert not any(r.startswith("mypy") for r in build)
    import setuptools

    (tmp_path / "setup.py").write_text((ROOT / "setup.py").read_text())  # a tree of its own: HERE is tmp_path
    stale = tmp_path / "auditor" / "kernel" / "normalize.cpython-311-x86_64-linux-gnu.so"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"x")
    monkeypatch.setattr(setuptools, "setup", lambda **_kw: None)
    for value in (None, "0", "yes"):
        if value is None:
            monkeypatch.delenv("DDB_AUDIT_COMPILE", raising=False)
        else:
            monkeypatch.setenv("DDB_AUDIT_COMPILE", value)
        assert runpy.run_path(str(tmp_path / "setup.py"))["_extensions"]() == []
    assert not stale.exists()

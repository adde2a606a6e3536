"""The package as it is built and released: what the Makefile's environment relies on in pyproject.toml and setup.py,
the version from the git tags, and what the sdist and the wheel hold."""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_dev_extra_holds_everything_the_demo_extra_asks_for() -> None:
    # `make test` installs the dev extra and counts the demo's install as done (`make demo` then installs nothing).
    extras = _pyproject()["project"]["optional-dependencies"]
    assert extras["demo"], "the demo extra is empty"
    assert set(extras["demo"]) <= set(extras["dev"])


def test_the_dev_extra_holds_the_build_requirements() -> None:
    # `make fast` and `make unit-compiled` build in .venv without build isolation.
    build = {Requirement(r).name for r in _pyproject()["build-system"]["requires"]}
    dev = {Requirement(r).name for r in _pyproject()["project"]["optional-dependencies"]["dev"]}
    assert build <= dev


def test_the_version_comes_from_the_git_tags_with_a_fallback() -> None:
    project = _pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert any(Requirement(r).name == "setuptools-scm" for r in project["build-system"]["requires"])
    fallback = Version(project["tool"]["setuptools_scm"]["fallback_version"])
    assert fallback.is_devrelease, "a tree without git metadata is no release"
    assert project["project"]["license"] == "Apache-2.0" and project["project"]["license-files"] == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0" in (ROOT / "LICENSE").read_text()


#: What the package is built from, and files of the repository that must stay out of the sdist.
_PACKAGE_FILES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in")
_REPOSITORY_ONLY = ("Makefile", "template.yaml", "tests/test_x.py", "docs/x.md", "benchmarks/x.py")


@pytest.mark.slow
def test_the_sdist_and_the_wheel_hold_the_license_and_the_package_data(tmp_path: Path) -> None:
    # Built as `python -m build` does (the sdist, then the wheel from the sdist) in a git copy of the package files,
    # so the file list is git's as in a checkout; without build isolation (.venv holds the build requirements).
    tree = tmp_path / "tree"
    for name in _PACKAGE_FILES:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tree / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    for package in ("auditor", "handlers"):
        shutil.copytree(ROOT / package, tree / package, ignore=ignore)
    for name in _REPOSITORY_ONLY:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("x\n")
    git = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    git |= {"GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull}
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "x"], ["tag", "-a", "v9.8.7", "-m", "x"]):
        subprocess.run(["git", *command], cwd=tree, env=git, check=True, capture_output=True)
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path / "dist"), str(tree)],
        env={k: v for k, v in git.items() if k != "DDB_AUDIT_COMPILE"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]

    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert sdist.name == "ddb_traffic_auditor-9.8.7.tar.gz" and wheel.name.startswith("ddb_traffic_auditor-9.8.7-")
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert set(_PACKAGE_FILES) <= in_sdist
    assert {"auditor/py.typed", "auditor/report/templates/report.html.j2", "handlers/__init__.py"} <= in_sdist
    assert not in_sdist & set(_REPOSITORY_ONLY)
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
        metadata = archive.read("ddb_traffic_auditor-9.8.7.dist-info/METADATA").decode()
    assert "ddb_traffic_auditor-9.8.7.dist-info/licenses/LICENSE" in in_wheel
    packaged = {"auditor/py.typed", "auditor/report/templates/report.html.j2", "auditor/report/templates/report.md.j2"}
    assert packaged <= in_wheel and "auditor/demo/__init__.py" in in_wheel
    assert not any(name.endswith((".so", ".pyc")) or name.startswith("tests/") for name in in_wheel)
    assert "License-Expression: Apache-2.0" in metadata and "Version: 9.8.7" in metadata


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

"""``make lambda-bytecode``: the Lambda package ships bytecode written by the runtime's Python version, as
unchecked-hash ``.pyc`` files (Lambda's file system is read-only, so without them every cold start compiles again)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.template.makefile import ROOT, makefile_var


def _interpreter(version: str) -> str | None:
    """A working ``python<version>``: on PATH, or a pyenv install."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(str(p) for p in Path.home().glob(f".pyenv/versions/{version}.*/bin/python"))
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return candidate
    return None


def _package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("VALUE = 1\n")
    return pkg


def _make(directory: Path, interpreter: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "-C", str(ROOT), "lambda-bytecode", f"LAMBDA_BYTECODE_DIR={directory}"],
        env={**os.environ, "LAMBDA_PYTHON_BIN": interpreter},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_package_gets_unchecked_hash_bytecode_of_the_runtime_version(tmp_path: Path) -> None:
    version = makefile_var("LAMBDA_PYTHON")
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine to write its bytecode")
    pkg = _package(tmp_path)

    done = _make(tmp_path, python)

    assert done.returncode == 0 and done.stderr == "", done.stderr
    tag = "cpython-" + version.replace(".", "")
    pyc = pkg / "__pycache__" / f"mod.{tag}.pyc"
    magic = subprocess.run(
        [python, "-c", "import importlib.util, sys; sys.stdout.write(importlib.util.MAGIC_NUMBER.hex())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    header = pyc.read_bytes()[:8]
    assert header[:4].hex() == magic
    assert int.from_bytes(header[4:8], "little") == 0b01  # hash-based, source not checked
    # Python runs it without looking at the source (the upload does not keep timestamps): a changed source is not
    # read, which is why the package is rebuilt whole when a source changes.
    (pkg / "mod.py").write_text("VALUE = 2\n")
    ran = subprocess.run(
        [python, "-c", "import pkg.mod; print(pkg.mod.VALUE)"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout.strip() == "1"


def test_without_the_runtime_version_the_package_builds_and_says_it_has_no_bytecode(tmp_path: Path) -> None:
    pkg = _package(tmp_path)

    done = _make(tmp_path, "")

    assert done.returncode == 0
    assert f"no working python{makefile_var('LAMBDA_PYTHON')} on PATH" in done.stderr
    assert not (pkg / "__pycache__").exists()

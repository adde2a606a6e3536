"""Build hook. The default build is pure Python: it is what the Lambda functions run and what ``make test`` tests
first. Everything about the package is declared in ``pyproject.toml``.

``DDB_AUDIT_COMPILE=1`` (``make fast``) opts in to compiling the CloudTrail kernel with mypyc: every module of the
package ``auditor/kernel/`` except one whose source says ``# mypyc: interpreted`` (with its reason) on a line of its
own. The kernel is plain, strictly typed Python, so the compiled and interpreted builds give identical results
(``make test`` runs the kernel's tests both ways). Where mypyc or a C compiler is missing, or compiling fails, the
build says so and installs pure Python.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
#: The package compiled with ``DDB_AUDIT_COMPILE=1``.
KERNEL = "auditor/kernel"
#: A kernel module carrying this line stays interpreted (say why beside it).
INTERPRETED_MARK = "# mypyc: interpreted"

#: The type checker's settings for compiling (not the project's ``[tool.mypy]``: a build environment holds only the
#: build requirements, so third-party packages may be missing; mypyc then treats those values as ``object``, which
#: is slower, never different).
_MYPYC_CONFIG = """\
[mypy]
ignore_missing_imports = True
follow_imports = silent
"""


def _say(message: str) -> None:
    print(f"ddb-traffic-auditor build: {message}", file=sys.stderr)


def kernel_modules(root: Path = HERE) -> list[str]:
    """The kernel's modules that compile (paths relative to ``root``), in a stable order."""
    found = []
    for path in sorted((root / KERNEL).rglob("*.py")):
        if any(line.strip() == INTERPRETED_MARK for line in path.read_text(encoding="utf-8").splitlines()):
            continue
        found.append(path.relative_to(root).as_posix())
    return found


def remove_compiled(root: Path) -> list[Path]:
    """Delete every compiled copy of a kernel module under ``root`` (an editable install compiles in place, next to
    the sources), and return them: a pure-Python build must never import an older compiled copy."""
    removed = []
    for built in sorted((root / KERNEL).rglob("*.so")):
        built.unlink()
        removed.append(built)
    for built in sorted(root.glob("ddb_traffic_auditor__mypyc*.so")):
        built.unlink()
        removed.append(built)
    return removed


def _pure_python(why: str) -> list[Any]:
    _say(f"{why}: pure Python")
    for built in remove_compiled(HERE):
        _say(f"removed {built.relative_to(HERE)}")
    return []


def _extensions() -> list[Any]:
    if os.environ.get("DDB_AUDIT_COMPILE", "0") != "1":
        return _pure_python("DDB_AUDIT_COMPILE is not 1")
    try:
        from mypyc.build import mypycify
    except ImportError:
        return _pure_python("mypyc is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mypyc.ini"
        config.write_text(_MYPYC_CONFIG)
        cwd = Path.cwd()
        os.chdir(HERE)
        try:
            modules = kernel_modules()
            _say(f"compiling {len(modules)} modules of {KERNEL} with mypyc")
            return list(mypycify(["--config-file", str(config), *modules], group_name="ddb_traffic_auditor"))
        except (Exception, SystemExit) as exc:  # mypy reports a failure by exiting
            return _pure_python(f"mypyc could not compile ({exc!r})")
        finally:
            os.chdir(cwd)


class OptionalBuildExt(build_ext):
    """``build_ext`` that falls back to pure Python (and removes what it built) when a module fails to compile:
    the compiled modules share one library, so it is all of them or none."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, missing headers, a compiler error
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            self.extensions = _pure_python(f"compiling failed ({exc!r})")


if __name__ == "__main__":
    setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})

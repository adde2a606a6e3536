"""Build hook: compiles the ingest hot path to C with mypyc where it can; pure Python everywhere else.

Everything about the package is declared in ``pyproject.toml``; this file only adds the optional extension modules.
The modules in :data:`COMPILED` are the per-record path of ``analyze-trail`` (key templates, window aggregates,
sketches, the normaliser, deduplication). They stay plain, strictly typed Python: mypyc compiles the same source, and
the interpreted and compiled builds give identical results (``make test`` runs their tests both ways). One module is C
of its own, :data:`NATIVE`: the record reader's partial decoder (``auditor/kernel/_fastrecord.c``), which the reader
uses when it is there and does without when it is not (the interpreted build), with the same results.

* ``DDB_AUDIT_COMPILE=0`` builds pure Python. The Lambda package is built that way (``make build``): its wheels are
  for Linux arm64 and Python 3.12, which a compiler on this machine does not target.
* Where mypyc or a C compiler is missing, or compiling fails, the build says so and installs pure Python.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: The modules compiled (paths relative to this file). ``auditor.kernel.reader`` (the JSON framing) is left out:
#: it is mostly calls into C already (``bytes.find``, ``orjson.loads``), and its tests replace its functions.
COMPILED = [
    "auditor/kernel/aggregates/bounds.py",
    "auditor/kernel/aggregates/failures.py",
    "auditor/kernel/aggregates/fingerprints.py",
    "auditor/kernel/aggregates/keys.py",
    "auditor/kernel/aggregates/scans.py",
    "auditor/kernel/aggregates/sketch.py",
    "auditor/kernel/aggregates/templates.py",
    "auditor/kernel/aggregates/window.py",
    "auditor/kernel/aggregates/window_codec.py",
    "auditor/kernel/dedupe.py",
    "auditor/kernel/key_condition.py",
    "auditor/kernel/normalize.py",
    "auditor/kernel/partiql.py",
]

#: Modules written in C (name, source), built beside the mypyc ones.
NATIVE = [("auditor.kernel._fastrecord", "auditor/kernel/_fastrecord.c")]

#: The type checker's settings for compiling (not the project's ``[tool.mypy]``: a build environment holds only the
#: build requirements, so the pydantic plugin and third-party packages may be missing; mypyc then treats those
#: values as ``object``, which is slower, never different).
_MYPYC_CONFIG = """\
[mypy]
ignore_missing_imports = True
follow_imports = silent
"""


def _say(message: str) -> None:
    print(f"ddb-traffic-auditor build: {message}", file=sys.stderr)


def remove_stale(root: Path, modules: list[str]) -> list[Path]:
    """Delete the compiled copies of ``modules`` (paths relative to ``root``) built before their source was last
    changed, and return them.

    An editable install compiles in place, next to the sources. When a later build installs pure Python (compiling
    failed, or ``DDB_AUDIT_COMPILE=0``), those older copies would still be imported ahead of the edited source.
    """
    removed = []
    for module in modules:
        source = root / module
        for built in source.parent.glob(f"{source.stem}.*.so"):
            if source.exists() and built.stat().st_mtime < source.stat().st_mtime:
                built.unlink()
                removed.append(built)
    return removed


def _pure_python(why: str) -> list[Any]:
    _say(f"{why}: pure Python")
    for built in remove_stale(Path(__file__).resolve().parent, [*COMPILED, *(source for _, source in NATIVE)]):
        _say(f"removed {built.name}, compiled from an older {built.stem.split('.')[0]}.py")
    return []


def _extensions() -> list[Any]:
    if os.environ.get("DDB_AUDIT_COMPILE", "1") == "0":
        return _pure_python("DDB_AUDIT_COMPILE=0")
    try:
        from mypyc.build import mypycify
    except ImportError:
        return _pure_python("mypyc is not installed")
    here = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mypyc.ini"
        config.write_text(_MYPYC_CONFIG)
        cwd = Path.cwd()
        os.chdir(here)
        try:
            compiled = list(mypycify(["--config-file", str(config), *COMPILED], group_name="ddb_traffic_auditor"))
        except (Exception, SystemExit) as exc:  # mypy reports a failure by exiting
            return _pure_python(f"mypyc could not compile ({exc!r})")
        finally:
            os.chdir(cwd)
    native = [Extension(name, [source], extra_compile_args=["-O2"]) for name, source in NATIVE]
    return compiled + native


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


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})

"""Run ``auditor`` from its interpreted source even where ``pip install`` compiled some modules (setup.py).

The deployed Lambda functions run the source (their package is built pure Python), so what measures or tests them
imports this first: ``use_source()`` gives each of the package's directories an import finder that knows only
``.py`` files. It must run before ``auditor`` is imported. ``python -m benchmarks.interpreted ARGS`` runs the CLI
(``python -m auditor ARGS``) that way.
"""

from __future__ import annotations

import runpy
import sys
from importlib.machinery import SOURCE_SUFFIXES, FileFinder, SourceFileLoader
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "auditor"


def use_source() -> None:
    """Make every later import of an ``auditor`` module load its ``.py`` file."""
    if "auditor" in sys.modules:
        raise RuntimeError("use_source() must run before auditor is imported")
    for directory in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
        sys.path_importer_cache[str(directory)] = FileFinder(str(directory), (SourceFileLoader, SOURCE_SUFFIXES))


def compiled_modules() -> list[str]:
    """The ``auditor`` modules this interpreter imports compiled (imports each module that has a compiled file)."""
    import importlib

    names = []
    root = PACKAGE.parent
    for so in sorted(PACKAGE.rglob("*.so")):
        name = ".".join(so.relative_to(root).with_suffix("").with_suffix("").parts)
        try:
            module = importlib.import_module(name)
        except ImportError:  # a C module (setup.py: NATIVE) has no source: under use_source() it is not there
            continue
        if not str(module.__file__).endswith(".py"):
            names.append(name)
    return names


if __name__ == "__main__":
    use_source()
    sys.argv = ["auditor", *sys.argv[1:]]
    runpy.run_module("auditor", run_name="__main__", alter_sys=True)

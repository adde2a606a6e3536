"""Checks that hold for every test run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from benchmarks.interpreted import compiled_modules

#: The moto server fixtures (``moto_endpoint``, ``aws_reset``) for every test folder.
pytest_plugins = ("tests.moto_server",)

_COMPILED: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """No compiled module under test may be older than its source: an edited module must never be tested as its
    older compiled copy."""
    _COMPILED[:] = compiled_modules()
    if os.environ.get("DDB_AUDIT_EXPECT_COMPILED") == "1" and not any(
        n.startswith("auditor.kernel.") for n in _COMPILED
    ):
        raise pytest.UsageError(
            "DDB_AUDIT_EXPECT_COMPILED=1 but the kernel runs interpreted (see `make unit-compiled`)"
        )
    for name in _COMPILED:
        built = Path(str(sys.modules[name].__file__))
        stem = name.rsplit(".", 1)[-1]
        source = next(s for s in (built.with_name(stem + ".py"), built.with_name(stem + ".c")) if s.exists())
        if source.stat().st_mtime > built.stat().st_mtime:
            raise pytest.UsageError(
                f"{name} runs compiled from {built.name}, which is older than {source.name}: rebuild it with "
                "`make venv` (or `pip install -e .`), or delete the .so files to run the source"
            )


def pytest_report_header(config: pytest.Config) -> str:
    return f"auditor compiled modules: {', '.join(_COMPILED) if _COMPILED else 'none (interpreted source)'}"

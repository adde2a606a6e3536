"""pytest plugin, ``python -m pytest -p tests.pure_python``: run the tests on the interpreted source of every
``auditor`` module, even where the install compiled some of them (setup.py's ``COMPILED``).

The deployed Lambda functions run that source (their package is built pure Python), so ``make test`` runs the tests
of the compiled modules a second time this way. Loaded with ``-p``, this module is imported before any test or
conftest, and so before ``auditor``. ``pytest_configure`` checks that it worked.
"""

from __future__ import annotations

import pytest

from benchmarks.interpreted import compiled_modules, use_source

use_source()


def pytest_configure(config: pytest.Config) -> None:
    if compiled := compiled_modules():
        raise pytest.UsageError(f"compiled modules imported despite tests.pure_python: {compiled}")


def pytest_report_header(config: pytest.Config) -> str:
    return "auditor: interpreted source only (tests.pure_python)"

"""Module docstrings say what the module is for in a few lines; design essays live in ``docs/`` (AST, nothing
imported).

Every module of ``auditor/`` and ``handlers/`` has a docstring of 1 to :data:`MAX_DOCSTRING_LINES` lines, counted as
the lines the string spans (``get_docstring(clean=False)``: its newlines plus one), and every ``docs/<page>.md`` a
docstring names exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_DOCSTRING_LINES = 12
#: A doc page named in a docstring: ``docs/state-table.md``.
DOC_PAGE = re.compile(r"\bdocs/([\w.-]+\.md)")


def _docstrings() -> dict[str, str | None]:
    modules = sorted([*(ROOT / "auditor").rglob("*.py"), *(ROOT / "handlers").rglob("*.py")])
    return {
        path.relative_to(ROOT).as_posix(): ast.get_docstring(ast.parse(path.read_text()), clean=False)
        for path in modules
    }


def test_every_module_has_a_short_docstring() -> None:
    docstrings = _docstrings()
    assert docstrings
    missing = sorted(path for path, doc in docstrings.items() if not doc or not doc.strip())
    assert not missing, f"these modules have no docstring: {missing}"
    long = {
        path: doc.count("\n") + 1
        for path, doc in docstrings.items()
        if doc and doc.count("\n") + 1 > MAX_DOCSTRING_LINES
    }
    assert not long, (
        f"module docstrings over {MAX_DOCSTRING_LINES} lines (say what the module is for, move the rest to a page"
        f" under docs/ and name it): {long}"
    )


def test_every_doc_page_a_docstring_names_exists() -> None:
    named = {(path, page) for path, doc in _docstrings().items() for page in DOC_PAGE.findall(doc or "")}
    assert named
    missing = sorted(f"{path}: docs/{page}" for path, page in named if not (ROOT / "docs" / page).is_file())
    assert not missing, f"docstrings name doc pages that do not exist: {missing}"

"""The Makefile's variables, read as the tests of its packaging need them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def makefile_var(name: str) -> str:
    text = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{name}\s*\??:?=\s*(\S+)\s*$", text, re.MULTILINE)
    assert match, f"Makefile defines no {name}"
    return match.group(1)


def makefile_list(name: str) -> list[str]:
    """A Makefile variable holding a list (continuation lines joined)."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    match = re.search(rf"^{name}\s*\??:?=\s*(.*)$", text, re.MULTILINE)
    assert match, f"Makefile defines no {name}"
    return match.group(1).split()

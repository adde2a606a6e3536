"""Types of the C module ``auditor/kernel/_fastrecord.c`` (built by setup.py where a compiler is available)."""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

def light(buf: bytes, start: int, limit: int, /) -> tuple[dict[str, Any], int] | None: ...
def run(
    buf: bytes, start: int, limit: int, sep: bytes, advance: int, window: int, most: int, /
) -> tuple[list[tuple[dict[str, Any], int, int]], int]: ...
def configure(
    build: Sequence[str],
    present: Sequence[str],
    reject: Sequence[str],
    accept: Mapping[str, Iterable[str]],
    keys: Sequence[str],
    /,
) -> None: ...

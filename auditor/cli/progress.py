"""Progress of the CLI's long work (live audits, trail files, Athena queries, the Pricing API) on stderr.

A bar is shown only when stderr is a terminal and ``--quiet`` is not given; otherwise every helper here does
nothing. stdout, which carries the JSON or CSV output, is never written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from auditor.cli.common import quiet

if TYPE_CHECKING:
    from auditor.kernel.inputs import InputSource

__all__ = ["Bar", "count_calls", "counted_sources", "enabled", "progress"]


class Bar(Protocol):
    """What the commands use of a progress bar (a ``tqdm`` bar, or one that shows nothing)."""

    def update(self, n: float | None = 1) -> bool | None: ...

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None: ...


class _Hidden:
    """A bar that shows nothing (stderr is not a terminal, or ``--quiet``)."""

    def update(self, n: float | None = 1) -> bool | None:
        return None

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        return None


def enabled() -> bool:
    """Whether progress is shown: stderr is a terminal and ``--quiet`` was not given."""
    if quiet():
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return False


@contextmanager
def progress(desc: str, *, total: int | None = None, unit: str = "it") -> Iterator[Bar]:
    """A progress bar on stderr for the work done inside the block (removed when the block ends)."""
    if not enabled():
        yield _Hidden()
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()


def count_calls(client: Any, bar: Bar) -> None:
    """Count each AWS call ``client`` makes on ``bar``, naming the operation (and table) in flight."""
    if isinstance(bar, _Hidden):
        return

    def started(model: Any = None, params: Any = None, **_: Any) -> None:
        table = params.get("TableName") if isinstance(params, dict) else None
        name = getattr(model, "name", "")
        bar.set_postfix_str(f"{name} {table}" if isinstance(table, str) else name)

    def finished(**_: Any) -> None:
        bar.update(1)

    client.meta.events.register("before-parameter-build", started)
    client.meta.events.register("after-call", finished)


def counted_sources(sources: Sequence[InputSource], bar: Bar) -> list[InputSource]:
    """``sources`` that advance ``bar`` the first time this process opens each (forked readers do not)."""
    if isinstance(bar, _Hidden):
        return list(sources)
    from auditor.kernel.inputs import InputSource

    pid = os.getpid()
    seen: set[str] = set()

    def wrap(source: InputSource) -> InputSource:
        def opened() -> Any:
            if os.getpid() == pid and source.name not in seen:
                seen.add(source.name)
                bar.set_postfix_str(source.name[-60:], refresh=False)
                bar.update(1)
            return source.open()

        return InputSource(name=source.name, open=opened)

    return [wrap(s) for s in sources]

"""What the use cases need from the service's own state, as typing Protocols.

The use cases in :mod:`auditor.service` take these instead of the concrete stores of this package, so their tests
can hand in a small fake and a use case says exactly which part of a store it uses. Each Protocol names the store
that implements it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import Any, Protocol

from auditor.cost.cost_model import LedgerEntry
from auditor.kernel.aggregates.window import TableWindow

__all__ = ["CapturePlans", "ControllerRuns", "HourLedger", "LedgerLoader", "WindowLedger", "WindowLoader"]


class WindowLoader(Protocol):
    """What the evaluator needs from the window store (:class:`auditor.state.window_store.WindowStore`)."""

    def load_windows(self, starts: Iterable[int]) -> list[TableWindow]:
        """One merged aggregate per (account, region, table, start) of the given windows."""
        ...

    def load_window_parts(self, starts: Iterable[int]) -> list[list[tuple[str, TableWindow]]]:
        """The same contributions, unmerged, with their source ids (for the duplicate check)."""
        ...


class CapturePlans(Protocol):
    """The capture controller's recorded plans (:class:`auditor.state.capture_store.CaptureStore`)."""

    def plans(self, start: int, end: int) -> list[dict[str, Any]]:
        """The slice plans with ``start <= slice_start < end``."""
        ...


class ControllerRuns(Protocol):
    """Whether the capture controller ran (:class:`auditor.state.capture_store.CaptureStore`)."""

    def any_plan(self, start: int, end: int) -> bool: ...


class WindowLedger(Protocol):
    """The daily cost ledger's trail side (:class:`auditor.state.ledger_store.LedgerStore`)."""

    def put_window(
        self, day: date, account: str | None, region: str | None, table: str, window_start: int, data_events: int
    ) -> None: ...


class HourLedger(Protocol):
    """The daily cost ledger's hourly side (:class:`auditor.state.ledger_store.LedgerStore`)."""

    def put_hour(self, entry: LedgerEntry, hour_start: int) -> None: ...


class LedgerLoader(Protocol):
    """The service's daily cost ledger (:class:`auditor.state.ledger_store.LedgerStore`)."""

    def entries(self, days: Iterable[date]) -> list[LedgerEntry]: ...

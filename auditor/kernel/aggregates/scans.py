"""Scans and PartiQL statements of one table window, counted per principal.

:class:`ScanStats` counts the pages of Scans (and full-scan PartiQL statements) of one principal and recovers the
logical scans from when pages started; :class:`StatementStats` counts the PartiQL statements whose verdict (full scan
or not) waits for the table's key schema at detection time. Both merge in any order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from auditor.kernel.calls import ApiCall

#: Scan pages are grouped into logical scans by time: the seconds in which pages started a scan, and starts at most
#: :data:`SCAN_GAP_SECONDS` apart belong to one logical scan (see :meth:`ScanStats.logical`).
SCAN_GAP_SECONDS: Final = 2
#: Intervals of scan starts kept per principal; starts beyond them count as separate logical scans (``overflow``).
MAX_SCAN_RUNS: Final = 512
#: A 1 MB Scan page of items up to 4 KB read eventually consistent: 256 items x 0.5 RCU.
RCU_PER_FULL_PAGE: Final = 128.0
#: Scan segments kept per principal.
MAX_SEGMENTS: Final = 64


@dataclass(slots=True)
class ScanStats:
    """Scans by one principal with one operation (Scan, or a full-scan ExecuteStatement).

    ``count`` counts calls (pages). Logical scans are recovered from ``runs``: intervals of the seconds in which a
    page *started* a scan (a page without ``exclusiveStartKey``; when the trail logs no ``exclusiveStartKey`` every
    page looks like a start, and the pages of one paginated or parallel scan follow each other within a second or
    two), with starts at most :data:`SCAN_GAP_SECONDS` apart in one interval. Intervals merge by union (and close
    the same gaps), so the count does not depend on the order of the records or files.
    """

    count: int = 0
    segments: set[int] = field(default_factory=set)
    total_segments: int = 0
    first: float = float("inf")
    last: float = 0.0
    indexes: set[str] = field(default_factory=set)
    runs: list[list[int]] = field(default_factory=list)
    #: Pages that continued a scan (``exclusiveStartKey`` logged).
    continuations: int = 0
    #: Pages without a ``limit`` (each reads up to 1 MB), and the largest ``limit`` logged.
    unbounded_pages: int = 0
    limit_max: int = 0
    #: Estimated read units of all pages (1 MB pages or ``limit`` items of up to 4 KB, eventually consistent).
    read_units: float = 0.0
    #: Starts beyond :data:`MAX_SCAN_RUNS` intervals (counted as separate logical scans).
    overflow: int = 0
    filters: set[str] = field(default_factory=set)

    def logical(self) -> int:
        """Logical scans: intervals of starts (plus starts beyond the interval cap); at least 1 if any page."""
        n = len(self.runs) + self.overflow
        return n if n else min(self.count, 1)

    def add_page(self, call: ApiCall, index: str | None, epoch: float, is_scan: bool) -> None:
        """Count one page of ``call`` (a Scan when ``is_scan``, else a full-scan PartiQL statement) at ``epoch``."""
        self.count += 1
        if epoch < self.first:
            self.first = epoch
        if epoch > self.last:
            self.last = epoch
        if call.scan_segment is not None and len(self.segments) < MAX_SEGMENTS:
            self.segments.add(call.scan_segment)
        if call.scan_total_segments and call.scan_total_segments > self.total_segments:
            self.total_segments = call.scan_total_segments
        if index and len(self.indexes) < 10:
            self.indexes.add(index)
        if call.scan_continuation:
            self.continuations += 1
        else:
            self.start(int(epoch))
        limit = call.scan_limit
        if limit is None or limit <= 0 or not is_scan:
            self.unbounded_pages += 1
            self.read_units += RCU_PER_FULL_PAGE
        else:
            self.limit_max = max(self.limit_max, limit)
            self.read_units += min(RCU_PER_FULL_PAGE, limit * 0.5)
        if call.scan_filter and len(self.filters) < 5:
            self.filters.add(call.scan_filter)

    def start(self, second: int) -> None:
        """A page that started a scan in ``second``."""
        runs = self.runs
        if runs:  # pages mostly arrive in time order: extend the last interval without a sort
            last = runs[-1]
            if last[0] <= second <= last[1] + SCAN_GAP_SECONDS:
                last[1] = max(last[1], second)
                return
        self._union([[second, second]])

    def _union(self, more: list[list[int]]) -> None:
        merged: list[list[int]] = []
        for s, e in sorted([*self.runs, *more]):
            if merged and s - merged[-1][1] <= SCAN_GAP_SECONDS:
                if e > merged[-1][1]:
                    merged[-1][1] = e
            else:
                merged.append([s, e])
        if len(merged) > MAX_SCAN_RUNS:
            self.overflow += len(merged) - MAX_SCAN_RUNS
            merged = merged[:MAX_SCAN_RUNS]
        self.runs = merged

    def merge(self, other: ScanStats) -> None:
        """Add another principal's counters (same principal and operation)."""
        self.count += other.count
        if other.runs:
            self._union([list(r) for r in other.runs])
        self.overflow += other.overflow
        self.continuations += other.continuations
        self.unbounded_pages += other.unbounded_pages
        self.limit_max = max(self.limit_max, other.limit_max)
        self.read_units += other.read_units
        if len(self.filters) < 5:
            self.filters.update(sorted(other.filters)[: 5 - len(self.filters)])
        if len(self.segments) < MAX_SEGMENTS:
            self.segments.update(sorted(other.segments)[: MAX_SEGMENTS - len(self.segments)])
        self.total_segments = max(self.total_segments, other.total_segments)
        self.first = min(self.first, other.first)
        self.last = max(self.last, other.last)
        if len(self.indexes) < 10:
            self.indexes.update(sorted(other.indexes)[: 10 - len(self.indexes)])

    def to_list(self) -> list[Any]:
        return [
            self.count,
            sorted(self.segments),
            self.total_segments,
            self.first,
            self.last,
            sorted(self.indexes),
            self.runs,
            self.continuations,
            self.unbounded_pages,
            self.limit_max,
            round(self.read_units, 1),
            self.overflow,
            sorted(self.filters),
        ]

    @classmethod
    def from_list(cls, d: list[Any]) -> ScanStats:
        st = cls(int(d[0]), set(d[1]), int(d[2]), float(d[3]), float(d[4]), set(d[5]))
        if len(d) >= 13:
            st.runs = [[int(a), int(b)] for a, b in d[6]]
            st.continuations, st.unbounded_pages, st.limit_max = int(d[7]), int(d[8]), int(d[9])
            st.read_units, st.overflow, st.filters = float(d[10]), int(d[11]), {str(f) for f in d[12]}
        else:  # stored before logical scans: every page a start, of unknown size
            st.overflow = st.count
            st.unbounded_pages = st.count
            st.read_units = st.count * RCU_PER_FULL_PAGE
        return st


@dataclass(slots=True)
class StatementStats:
    """PartiQL statements of one shape that no rule made a full scan at ingest (decided with the key schema)."""

    count: int = 0
    first: float = float("inf")
    last: float = 0.0

    def merge(self, other: StatementStats) -> None:
        self.count += other.count
        self.first = min(self.first, other.first)
        self.last = max(self.last, other.last)

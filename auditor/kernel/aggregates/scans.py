"""Scans and PartiQL statements of one table window, counted per principal.

:class:`ScanStats` counts the pages of Scans (and full-scan PartiQL statements) of one principal and the logical
scans they belong to, from what CloudTrail logs of each page; :class:`StatementStats` counts the PartiQL statements
whose verdict (full scan or not) waits for the table's key schema at detection time. Both merge in any order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from auditor.kernel.calls import ApiCall

#: Pages whose logged fields cannot say whether they start a scan (truncated request parameters) are grouped by time:
#: starts at most :data:`SCAN_GAP_SECONDS` apart, and never more than :data:`SCAN_SPAN_SECONDS` after the first start
#: of the group (about the time one paginated scan takes), are one inferred scan (see :meth:`ScanStats.logical`).
SCAN_GAP_SECONDS: Final = 2
SCAN_SPAN_SECONDS: Final = 60
#: Distinct seconds of undecided pages kept per principal; more count as separate logical scans (``overflow``).
MAX_SCAN_RUNS: Final = 512
#: A 1 MB Scan page of items up to 4 KB read eventually consistent: 256 items x 0.5 RCU (strongly consistent: 256).
RCU_PER_FULL_PAGE: Final = 128.0
#: Scan segments kept per principal (and segment counts per parallel scan size).
MAX_SEGMENTS: Final = 64


@dataclass(slots=True)
class ScanStats:
    """Scans by one principal with one operation (Scan, or a full-scan ExecuteStatement).

    ``count`` counts calls (pages). Logical scans come from what CloudTrail logs of each page: a page without
    ``exclusiveStartKey`` starts a scan (``starts``), a page with it continues one (``continuations``); a parallel
    scan's segments each start once, so its starts are counted per ``totalSegments`` and ``segment``
    (``segment_starts``) and one parallel scan is the most starts any of its segments had. Only pages whose request
    parameters were truncated (they may have lost ``exclusiveStartKey``) are grouped by time (``undecided``), and such
    a group never chains: it ends :data:`SCAN_SPAN_SECONDS` after it began. A scan that began before the counted
    pages (their first page continues one: ``opened_by_continuation``) counts too, once: so windows of one scan that
    crosses their boundary add up to one scan (:func:`auditor.models.period_evidence.merge_figures`).
    """

    count: int = 0
    segments: set[int] = field(default_factory=set)
    total_segments: int = 0
    first: float = float("inf")
    last: float = 0.0
    indexes: set[str] = field(default_factory=set)
    segment_starts: dict[tuple[int, int], int] = field(default_factory=dict)
    #: Pages that continued a scan (``exclusiveStartKey`` logged).
    continuations: int = 0
    #: Pages without a ``limit`` (each reads up to 1 MB), and the largest ``limit`` logged.
    unbounded_pages: int = 0
    limit_max: int = 0
    #: Estimated read units of all pages (1 MB pages or ``limit`` items of up to 4 KB, twice if strongly consistent).
    read_units: float = 0.0
    #: Starts beyond the caps (counted as separate logical scans).
    overflow: int = 0
    filters: set[str] = field(default_factory=set)
    # How pages start logical scans (see the class docstring): ``segment_starts`` holds per (totalSegments, segment)
    # the pages that started that segment, ``starts`` the pages that started a (non-parallel) scan, with no
    # ``exclusiveStartKey`` logged, and ``undecided`` the distinct seconds of pages that cannot tell whether they start
    # a scan, grouped by time in :meth:`inferred`.
    starts: int = 0
    undecided: set[int] = field(default_factory=set)
    #: Whether the earliest page continued a scan begun before it (``exclusiveStartKey`` logged on it).
    opened_by_continuation: bool = False

    def parallel(self) -> int:
        """Logical parallel scans: per ``totalSegments``, the most starts any one segment had."""
        most: dict[int, int] = {}
        for (total, _), n in self.segment_starts.items():
            if n > most.get(total, 0):
                most[total] = n
        return sum(most.values())

    def inferred(self) -> int:
        """Logical scans grouped by time from the undecided pages (a group never spans more than one scan's time)."""
        groups = 0
        begin = last = None
        for second in sorted(self.undecided):
            if begin is None or last is None or second - last > SCAN_GAP_SECONDS or second - begin > SCAN_SPAN_SECONDS:
                groups += 1
                begin = second
            last = second
        return groups

    def started(self) -> int:
        """Logical scans begun among the pages: starts, parallel scans, inferred groups and starts beyond the caps."""
        return self.starts + self.parallel() + self.inferred() + self.overflow

    def logical(self) -> int:
        """Logical scans the pages belong to: those begun among them, and the one their first page continued; at
        least 1 if any page."""
        n = self.started() + self.opened_by_continuation
        return n if n else min(self.count, 1)

    def add_page(self, call: ApiCall, index: str | None, epoch: float, is_scan: bool) -> None:
        """Count one page of ``call`` (a Scan when ``is_scan``, else a full-scan PartiQL statement) at ``epoch``."""
        self.count += 1
        if epoch < self.first:
            self.first = epoch
            self.opened_by_continuation = call.scan_continuation
        elif epoch == self.first and not call.scan_continuation:  # a start in the same second comes first
            self.opened_by_continuation = False
        if epoch > self.last:
            self.last = epoch
        segment, total = call.scan_segment, call.scan_total_segments
        if segment is not None and len(self.segments) < MAX_SEGMENTS:
            self.segments.add(segment)
        if total and total > self.total_segments:
            self.total_segments = total
        if index and len(self.indexes) < 10:
            self.indexes.add(index)
        if call.scan_continuation:
            self.continuations += 1
        elif call.truncated:
            self._undecided(int(epoch))
        elif segment is not None and total is not None and total > 1 and 0 <= segment < total:
            self._segment_start(total, segment, 1)
        else:
            self.starts += 1
        limit = call.scan_limit
        full = RCU_PER_FULL_PAGE * (2.0 if call.consistent_read else 1.0)
        if limit is None or limit <= 0 or not is_scan:
            self.unbounded_pages += 1
            self.read_units += full
        else:
            self.limit_max = max(self.limit_max, limit)
            self.read_units += min(full, limit * full / 256)
        if call.scan_filter and len(self.filters) < 5:
            self.filters.add(call.scan_filter)

    def _segment_start(self, total: int, segment: int, n: int) -> None:
        key = (total, segment)
        if key in self.segment_starts or len(self.segment_starts) < MAX_SEGMENTS:
            self.segment_starts[key] = self.segment_starts.get(key, 0) + n
        else:
            self.overflow += n

    def _undecided(self, second: int) -> None:
        if second in self.undecided or len(self.undecided) < MAX_SCAN_RUNS:
            self.undecided.add(second)
        else:
            self.overflow += 1

    def merge(self, other: ScanStats) -> None:
        """Add another principal's counters (same principal and operation)."""
        self.count += other.count
        self.starts += other.starts
        for (total, segment), n in other.segment_starts.items():
            self._segment_start(total, segment, n)
        for second in sorted(other.undecided):
            self._undecided(second)
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
        if other.first < self.first:
            self.opened_by_continuation = other.opened_by_continuation
        elif other.first == self.first:
            self.opened_by_continuation = self.opened_by_continuation and other.opened_by_continuation
        self.first = min(self.first, other.first)
        self.last = max(self.last, other.last)
        if len(self.indexes) < 10:
            self.indexes.update(sorted(other.indexes)[: 10 - len(self.indexes)])

    def to_list(self) -> list[Any]:
        """The serialised form: the 13 fields of the time-grouped form (its intervals now the undecided seconds, as
        ``[s, s]``), then the starts, the segment starts and whether the first page continued a scan."""
        return [
            self.count,
            sorted(self.segments),
            self.total_segments,
            self.first,
            self.last,
            sorted(self.indexes),
            [[s, s] for s in sorted(self.undecided)],
            self.continuations,
            self.unbounded_pages,
            self.limit_max,
            round(self.read_units, 1),
            self.overflow,
            sorted(self.filters),
            self.starts,
            [[t, s, n] for (t, s), n in sorted(self.segment_starts.items())],
            int(self.opened_by_continuation),
        ]

    @classmethod
    def from_list(cls, d: list[Any]) -> ScanStats:
        st = cls(int(d[0]), set(d[1]), int(d[2]), float(d[3]), float(d[4]), set(d[5]))
        if len(d) >= 15:
            st.undecided = {int(a) for a, _ in d[6]}
            st.starts = int(d[13])
            st.segment_starts = {(int(t), int(s)): int(n) for t, s, n in d[14]}
        elif len(d) >= 13:  # stored when starts were grouped by time: each interval was one logical scan
            st.starts = len(d[6])
        if len(d) >= 13:
            st.continuations, st.unbounded_pages, st.limit_max = int(d[7]), int(d[8]), int(d[9])
            st.read_units, st.overflow, st.filters = float(d[10]), int(d[11]), {str(f) for f in d[12]}
        else:  # stored before logical scans: every page a start, of unknown size
            st.overflow = st.count
            st.unbounded_pages = st.count
            st.read_units = st.count * RCU_PER_FULL_PAGE
        # stored before the first page's continuation was kept: pages that began no scan continued one
        st.opened_by_continuation = bool(d[15]) if len(d) >= 16 else not st.started() and st.count > 0
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

"""Windows evaluated again after a late contribution: their new sightings replace their part of the weekly totals.

Ingest flags a contribution that reaches a window the evaluator already sealed (a trail object retried after the
queue's visibility timeout, events redelivered late: :class:`auditor.state.window_store.LateWindow`). The evaluator
keeps what each evaluated table window sighted (:class:`auditor.state.window_store.SightingStore`); for a late
window it evaluates the window again with everything stored now, overwrites the window's sightings, sums each
finding the window ever sighted over the week's windows again (:func:`corrections`) and stores those weeks
(:func:`auditor.service.record.apply_corrections`) before it clears the flag. docs/service.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from auditor.engine import key_request_counts, window_keys
from auditor.kernel.aggregates.window import TableWindow
from auditor.lifecycle import iso_week, merge_sightings
from auditor.models.finding import Finding, Totals
from auditor.service.record import Correction
from auditor.state.window_store import LateWindow, WindowSightings, sum_week

__all__ = [
    "LateFlags",
    "Reevaluation",
    "SightingRecords",
    "WindowFindings",
    "corrections",
    "cover",
    "record_sightings",
]

#: Each evaluated table window with the findings it showed.
WindowFindings = Sequence[tuple[TableWindow, Sequence[Finding]]]


class LateFlags(Protocol):
    """The seal and the late flags (:class:`auditor.state.window_store.WindowStore`)."""

    @property
    def retention_seconds(self) -> int: ...

    def seal(self, through: int, now: datetime) -> None: ...

    def late_windows(self) -> list[LateWindow]: ...

    def clear_late(self, late: LateWindow) -> bool: ...


class SightingRecords(Protocol):
    """The evaluated windows' sightings (:class:`auditor.state.window_store.SightingStore`)."""

    def put(
        self, acct: str | None, region: str | None, table: str, week: str, s: WindowSightings, at: datetime, /
    ) -> None:
        """Store one window's sightings (a window evaluated again replaces them)."""

    def week(self, account: str | None, region: str | None, table: str, week: str) -> dict[int, WindowSightings]: ...

    def cover(self, week: str, starts: Iterable[int], window_seconds: int, now: datetime) -> None:
        """Add windows of ``week`` in which trail data was found (any table)."""


@dataclass(frozen=True, slots=True)
class Reevaluation:
    """What the evaluator needs to evaluate late windows again: the flags (and the seal) and the sightings."""

    flags: LateFlags
    sightings: SightingRecords


def _week(tw: TableWindow) -> str:
    return iso_week(datetime.fromtimestamp(tw.window_start, tz=UTC))


def window_sightings(tw: TableWindow, findings: Sequence[Finding]) -> WindowSightings:
    """Each finding's totals in one window (several sightings of one id there added as the lifecycle adds them), and
    the window's key-identified requests and top keys (:func:`auditor.engine.key_request_counts`,
    :func:`auditor.engine.window_keys`)."""
    out = WindowSightings(tw.window_start, key_requests=key_request_counts(tw), top_keys=window_keys(tw))
    for f in sorted(findings, key=lambda f: (f.first_seen, f.id)):
        t = f.sighting_totals()
        stored = out.totals.get(f.id)
        if stored is None:
            out.totals[f.id] = t
        elif t.first_seen > stored.last_seen:
            out.totals[f.id] = stored.merged(t)
    out.ever = set(out.totals)
    return out


def record_sightings(records: SightingRecords, evaluated: WindowFindings, now: datetime) -> None:
    """Keep what each evaluated window sighted, its key-identified requests and top keys (one item per table window,
    written in one put; a window with none of them has nothing to keep)."""
    for tw, found in evaluated:
        sightings = window_sightings(tw, found)
        if found or sightings.key_requests:
            records.put(tw.account, tw.region, tw.table, _week(tw), sightings, now)
    cover(records, evaluated, now)


def cover(records: SightingRecords, evaluated: WindowFindings, now: datetime) -> None:
    """Keep the windows the evaluated table windows are of, week by week: a finding's period in a week is the part of
    the week the trail had data in (:func:`auditor.service.weekly_report.observed_period`), as ``analyze-trail``'s is
    its input's."""
    weeks: dict[tuple[str, int], set[int]] = {}
    for tw, _ in evaluated:
        weeks.setdefault((_week(tw), tw.window_seconds), set()).add(tw.window_start)
    for (week, seconds), starts in sorted(weeks.items()):
        records.cover(week, starts, seconds, now)


def corrections(records: SightingRecords, evaluated: WindowFindings, now: datetime) -> list[Correction]:
    """For windows evaluated again: overwrite each one's sightings, and the corrected week of every finding it ever
    sighted, summed over the week's windows (absolute, so that a repeat after a crash changes nothing)."""
    out: list[Correction] = []
    for tw, found in evaluated:
        week = _week(tw)
        stored = records.week(tw.account, tw.region, tw.table, week)
        mine = window_sightings(tw, found)
        old = stored.get(tw.window_start)
        if old is not None:
            mine.ever |= old.ever | set(old.totals)
        if mine.ever or mine.key_requests or old is not None:  # its key-identified requests replaced, never added
            records.put(tw.account, tw.region, tw.table, week, mine, now)
        stored[tw.window_start] = mine
        seen = merge_sightings(found)
        for fid in sorted(mine.ever):
            others = [w for start, w in stored.items() if start != tw.window_start and fid in w.totals]
            total: Totals | None = sum_week(stored.values(), fid)
            out.append(Correction(fid, week, total, seen.get(fid), other_windows=len(others)))
    cover(records, evaluated, now)
    return out

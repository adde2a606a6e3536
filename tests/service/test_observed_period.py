"""The period a week's findings are stated for: the part of the week the trail had data in
(:func:`auditor.service.weekly_report.observed_period`), as analyze-trail's is its input's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from auditor.lifecycle import FindingState, FindingStatus
from auditor.models.finding import Finding, FindingKind, Severity, window_totals
from auditor.report.model import IsoWeek
from auditor.service.weekly_report import observed_period, week_totals

WEEK = IsoWeek.of(datetime(2026, 12, 2, tzinfo=UTC))  # 2026-W49, Monday 30 November to Monday 7 December


def _at(day: int, hour: int, minute: int = 0) -> int:
    return int(datetime(2026, 12, day, hour, minute, tzinfo=UTC).timestamp())


def test_the_period_runs_from_the_first_window_with_data_to_the_end_of_the_last() -> None:
    starts = [_at(5, 9), _at(5, 9, 15), _at(5, 10, 45)]
    assert observed_period(WEEK, (starts, 900)) == (
        datetime(2026, 12, 5, 9, tzinfo=UTC),
        datetime(2026, 12, 5, 11, tzinfo=UTC),
    )


def test_without_recorded_windows_the_period_is_the_week_and_it_never_leaves_the_week() -> None:
    assert observed_period(WEEK, None) == observed_period(WEEK, ([], 900)) == (WEEK.start, WEEK.end)
    last = int((WEEK.end - timedelta(minutes=5)).timestamp())
    assert observed_period(WEEK, ([last], 900)) == (WEEK.end - timedelta(minutes=5), WEEK.end)


def test_a_findings_period_reaches_its_own_sightings_when_they_run_past_the_trails_windows() -> None:
    """A metrics audit's hour may end after the trail's last window: the finding is stated over both, and its rate
    over that whole span, never over less than the time its own counts are of."""
    seen = datetime(2026, 12, 5, 10, 30, tzinfo=UTC), datetime(2026, 12, 5, 12, tzinfo=UTC)
    finding = Finding.create(
        FindingKind.SCAN,
        account="111122223333",
        region="us-east-1",
        table="Ledger",
        discriminator="cloudwatch",
        severity=Severity.HIGH,
        title="Scans on Ledger",
        summary="1200 Scan requests on Ledger in 1 hour.",
        recommendation="Query instead.",
        evidence={"principal": None, "operation": "Scan", "count": 1200, "source": "cloudwatch", "per_hour": 1200.0},
        first_seen=seen[0],
        last_seen=seen[1],
    )
    totals = window_totals(FindingKind.SCAN, finding.evidence, *seen, *seen)
    state = FindingState(
        finding=finding,
        status=FindingStatus.NEW,
        opened_at=seen[0],
        updated_at=seen[1],
        weekly_totals={WEEK.label: totals},
    )
    trail = (datetime(2026, 12, 5, 9, tzinfo=UTC), datetime(2026, 12, 5, 11, tzinfo=UTC))
    stated = week_totals(state, WEEK, period=trail).finding
    assert stated.totals is not None
    assert (stated.totals.period_start, stated.totals.period_end) == (trail[0], seen[1])
    assert stated.evidence["per_hour"] == 400.0  # 1,200 over the three hours from 09:00 to 12:00

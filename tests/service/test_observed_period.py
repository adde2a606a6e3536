"""The period a week's findings are stated for: the part of the week the trail had data in
(:func:`auditor.service.weekly_report.observed_period`), as analyze-trail's is its input's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from auditor.report.model import IsoWeek
from auditor.service.weekly_report import observed_period

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

"""A window evaluated again replaces its part of a finding's week (``auditor.service.record.correct``): exact, the same
when applied twice, and announced only when it makes the finding new or worse."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from auditor.lifecycle import EventKind, FindingState, FindingStatus, iso_week, transition
from auditor.models.finding import Finding, FindingKind, Severity, Totals, window_totals
from auditor.service.record import Correction, correct, corrected_week

ROLE = "arn:aws:iam::111122223333:role/cleaner"
W0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
NOW = W0 + timedelta(hours=2)
WEEK = iso_week(W0)


def _scan(start: datetime, count: int, severity: Severity = Severity.MEDIUM) -> Finding:
    evidence = {"principal": ROLE, "operation": "Scan", "count": count, "source": "cloudtrail"}
    first, last = start + timedelta(seconds=1), start + timedelta(seconds=899)
    f = Finding.create(
        FindingKind.SCAN,
        account="111122223333",
        region="us-east-1",
        table="Sessions",
        discriminator=[ROLE, "Scan"],
        severity=severity,
        title="Scans on Sessions",
        summary="s",
        recommendation="r",
        evidence=evidence,
        first_seen=first,
        last_seen=last,
    )
    return f.model_copy(
        update={"totals": window_totals(f.kind, evidence, first, last, start, start + timedelta(seconds=900))}
    )


def _stored(*sightings: Finding) -> FindingState:
    """The state after the evaluator saw ``sightings`` one run each, in time order."""
    state: FindingState | None = None
    for s in sightings:
        change = transition(state, s, now=NOW, resolve_after_seconds=86_400, horizon=None)
        assert change is not None
        state = change.state
    assert state is not None
    return state


def _week(*sightings: Finding) -> Totals:
    total = sightings[0].sighting_totals()
    for s in sightings[1:]:
        total = total.merged(s.sighting_totals())
    return total


def test_a_late_window_replaces_its_part_once_and_is_not_announced_again() -> None:
    w0, w1 = _scan(W0, 3), _scan(W0 + timedelta(minutes=15), 4)
    stored = _stored(w0, w1)
    assert stored.weekly_totals[WEEK].count == 7
    late_w0 = _scan(W0, 5)  # the window evaluated again with a late file: 5 scans, not 3
    fix = Correction(w0.id, WEEK, _week(late_w0, w1), late_w0, other_windows=1)
    change = correct(stored, fix, now=NOW)
    assert change is not None and change.event is None and change.muted_event is None
    assert change.state.status is stored.status
    assert change.state.weekly_totals[WEEK].count == 9 and change.state.weekly_totals[WEEK].windows == 2
    assert change.state.finding.totals is not None and change.state.finding.totals.count == 9
    assert correct(change.state, fix, now=NOW) is None  # the same correction again (a crash, a retry): no change


def test_a_late_window_that_makes_the_finding_worse_is_announced_as_worsened() -> None:
    w0, w1 = _scan(W0, 3), _scan(W0 + timedelta(minutes=15), 4)
    stored = _stored(w0, w1)
    late_w0 = _scan(W0, 40, Severity.HIGH)
    change = correct(stored, Correction(w0.id, WEEK, _week(late_w0, w1), late_w0, other_windows=1), now=NOW)
    assert change is not None and change.event is not None and change.event.kind is EventKind.WORSENED
    assert change.state.weekly_totals[WEEK].count == 44


def test_a_finding_only_the_late_file_shows_is_new() -> None:
    late = _scan(W0, 5)
    change = correct(None, Correction(late.id, WEEK, _week(late), late), now=NOW)
    assert change is not None and change.event is not None and change.event.kind is EventKind.NEW
    assert change.state.weekly_totals[WEEK].count == 5


def test_a_resolved_finding_gets_its_totals_without_being_opened_again() -> None:
    w0, w1 = _scan(W0, 3), _scan(W0 + timedelta(minutes=15), 4)
    stored = _stored(w0, w1).model_copy(update={"status": FindingStatus.RESOLVED, "resolved_at": NOW})
    late_w0 = _scan(W0, 5)
    change = correct(stored, Correction(w0.id, WEEK, _week(late_w0, w1), late_w0, other_windows=1), now=NOW)
    assert change is not None and change.event is None
    assert change.state.status is FindingStatus.RESOLVED and change.state.weekly_totals[WEEK].count == 9


def test_a_week_whose_earlier_windows_have_no_sightings_is_left_as_it_is() -> None:
    w0, w1, w2 = _scan(W0, 3), _scan(W0 + timedelta(minutes=15), 4), _scan(W0 + timedelta(minutes=30), 2)
    stored = _stored(w0, w1, w2)  # three windows counted, but only w2's sightings were kept
    late_w2 = _scan(W0 + timedelta(minutes=30), 6)
    assert correct(stored, Correction(w2.id, WEEK, _week(late_w2), late_w2, other_windows=0), now=NOW) is None


def test_the_other_sources_part_of_a_story_is_kept() -> None:
    cloudtrail, cloudwatch = _scan(W0, 3).sighting_totals(), _scan(W0, 50).sighting_totals()
    stored = Totals.of_sources({"cloudtrail": cloudtrail, "cloudwatch": cloudwatch})
    corrected = corrected_week(stored, Totals.of_sources({"cloudtrail": _scan(W0, 5).sighting_totals()}))
    assert corrected is not None and corrected.by_source is not None
    assert (corrected.by_source["cloudtrail"].count, corrected.by_source["cloudwatch"].count) == (5, 50)
    assert corrected_week(None, cloudtrail) == cloudtrail

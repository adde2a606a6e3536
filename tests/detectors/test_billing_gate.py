"""Billing gating: under 7 days of 1-minute data there is no recommendation ("collecting data: N of 7 days", info,
never alerted, no savings); one from data with no weekend is preliminary, shown with its days and confidence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from auditor.billing.decide import analyze_billing
from auditor.detectors.billing.gate import includes_weekend, preliminary_reason
from auditor.lifecycle import EventKind, transition
from auditor.models.finding import FindingKind, Severity
from auditor.report.model import IsoWeek, build_report_from_findings
from auditor.report.report_pages import render_markdown
from tests.billing.test_billing_decide import DAY, make, rate

MONDAY = datetime(2026, 11, 2, tzinfo=UTC)


def test_weekend_detection() -> None:
    assert not includes_weekend(MONDAY, MONDAY + timedelta(days=5))  # Monday..Friday
    assert includes_weekend(MONDAY, MONDAY + timedelta(days=5, minutes=1))  # a minute of Saturday
    assert includes_weekend(MONDAY + timedelta(days=6, hours=23), MONDAY + timedelta(days=7))  # Sunday night
    assert not includes_weekend(MONDAY, MONDAY)
    assert preliminary_reason(7.0, MONDAY, MONDAY + timedelta(days=7)) is None
    reason = preliminary_reason(3.0, MONDAY, MONDAY + timedelta(days=3), min_days=2.0)
    assert reason == "no weekend in the data"
    assert preliminary_reason(3.0, MONDAY, MONDAY + timedelta(days=3), min_days=2.0, require_weekend=False) is None


@pytest.mark.parametrize(("days", "preliminary"), [(1, True), (6, True), (7, False), (14, False)])
def test_a_recommendation_needs_seven_days(days: int, preliminary: bool) -> None:
    analysis = analyze_billing(make(rate(100, days * DAY), rate(20, days * DAY)))
    (finding,) = analysis.findings
    assert finding.kind is FindingKind.BILLING_MODE
    assert finding.evidence["preliminary"] is preliminary
    assert finding.evidence["days_analyzed"] == days
    assert (finding.severity is Severity.INFO) is preliminary
    # Under 7 days there is no recommendation at all: the table is collecting data (no change, no saving).
    assert finding.title.startswith("Orders: collecting data: ") is preliminary
    assert ("monthly_savings" not in finding.evidence) is preliminary
    assert (finding.evidence["recommended_mode"] == finding.evidence["current_mode"]) is preliminary


def test_a_preliminary_recommendation_is_stored_muted_and_announced_once_it_has_the_data() -> None:
    short = analyze_billing(make(rate(100, DAY), rate(20, DAY))).findings[0]
    now = datetime(2026, 11, 20, tzinfo=UTC)
    change = transition(None, short, now=now, resolve_after_seconds=86_400, horizon=None)
    assert change is not None and change.event is None and change.muted_event is EventKind.NEW
    assert change.state.muted_reason and "preliminary" in change.state.muted_reason

    full = analyze_billing(make(rate(100, 14 * DAY), rate(20, 14 * DAY))).findings[0]
    assert full.id == short.id
    later = transition(change.state, full, now=now + timedelta(days=14), resolve_after_seconds=86_400, horizon=None)
    assert later is not None and later.event is not None and later.event.kind is EventKind.NEW


def test_the_report_shows_preliminary_rows_with_days_and_confidence_and_no_savings() -> None:
    short = analyze_billing(make(rate(100, DAY), rate(20, DAY))).findings[0]
    full = analyze_billing(make(rate(100, 14 * DAY), rate(20, 14 * DAY), table="Users")).findings[0]
    short = short.model_copy(update={"last_seen": full.last_seen})  # both seen in the report's week
    week = IsoWeek.of(full.last_seen - timedelta(seconds=1))
    report = build_report_from_findings([short, full], week.end + timedelta(hours=1), week=week)
    rows = {b.table: b for b in report.billing}
    assert rows["Orders"].preliminary and rows["Orders"].monthly_savings == 0.0
    assert rows["Orders"].days_analyzed == 1.0
    assert rows["Orders"].estimated_savings is None and rows["Orders"].change == "collecting data: 1.0 of 7 days"
    assert not rows["Users"].preliminary and rows["Users"].instead is None
    assert report.summary.monthly_savings == pytest.approx(full.evidence["monthly_savings"])
    md = render_markdown(report)
    line = next(x for x in md.splitlines() if x.startswith("| Orders |") and "collecting data" in x)
    assert "→" not in line and "$" not in line.split("|")[5]


def test_no_table_class_advice_while_collecting_data() -> None:
    analysis = analyze_billing(make(rate(1, DAY), rate(1, DAY), table_size_bytes=500 * 2**30))
    assert analysis.result.table_class_hint is not None  # the decision has an opinion...
    assert [f.kind for f in analysis.findings] == [FindingKind.BILLING_MODE]  # ...shown only as collecting data
    assert analysis.findings[0].evidence["collecting_data"] is True

"""``capture_cap``: one finding per capped table over the period, its figures and what is not seen."""

from __future__ import annotations

from auditor.detectors.capture.capture_cap import CaptureCapInput, ScanCap, detect
from auditor.models.finding import FindingKind, Severity


def _cap(table: str, every: int) -> ScanCap:
    arn = f"arn:aws:dynamodb:eu-west-1:123456789012:table/{table}"
    return ScanCap(table, arn, 1e7 * every / 3, 1e7 / 3, every, 2048.0, 10.0 * every / 3, 10.0 / 3)


def test_one_finding_per_capped_table_with_the_cap_the_pages_and_what_is_not_seen() -> None:
    day = 1_764_892_800
    findings = detect(CaptureCapInput([_cap("Orders", 3), _cap("Events", 12)], day - 86_400, day))
    assert [f.table for f in findings] == ["Events", "Orders"]
    events, orders = findings
    assert all(f.kind is FindingKind.CAPTURE_CAP and not f.missing_evidence() for f in findings)
    assert (orders.account, orders.region, orders.severity) == ("123456789012", "eu-west-1", Severity.LOW)
    assert events.severity is Severity.MEDIUM  # one slice in 12: most scans unseen
    assert orders.evidence["cap_pages"] == 3_333_333 and orders.evidence["expected_pages"] == 10_000_000
    assert orders.evidence["period_start"] == "2025-12-04T00:00:00Z" and orders.evidence["source"] == "capture_plan"
    assert "one capture slice in 3: about 67%" in orders.evidence["not_seen"]
    assert "one slice in 3" in orders.summary and "audit_budget_percent" in orders.recommendation
    # the id names the table, not the figures or the period: the next day's finding is the same one
    later = detect(CaptureCapInput([_cap("Orders", 5)], day, day + 86_400))
    assert later[0].id == orders.id


def test_disabled_or_nothing_capped_finds_nothing() -> None:
    assert detect(CaptureCapInput([], 0, 86_400)) == []
    assert detect(CaptureCapInput([_cap("Orders", 3)], 0, 86_400), {"enabled": False}) == []

"""Top scanners: CloudTrail's logical scans and CloudWatch's Scan pages are never added or ranked together."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.report.charts import scanner_chart
from auditor.report.contents import LOGICAL_SCANS, SCAN_PAGES
from auditor.report.model import IsoWeek, build_report_from_findings
from auditor.report.report_pages import evidence_items, render_html, render_markdown

W49 = IsoWeek(year=2026, week=49)
MON = datetime(2026, 11, 30, tzinfo=UTC)
NOW = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)


def _scan(table: str, count: int, principal: str | None, source: str) -> Finding:
    evidence: dict[str, Any] = {"principal": principal, "operation": "Scan", "count": count, "source": source}
    return Finding(
        id=fingerprint(FindingKind.SCAN, "111122223333", "us-east-1", table, None, [principal, source]),
        kind=FindingKind.SCAN,
        severity=Severity.MEDIUM,
        account="111122223333",
        region="us-east-1",
        table=table,
        title=f"Scans on {table}",
        summary="summary",
        recommendation="fix",
        evidence=evidence,
        first_seen=MON + timedelta(days=1),
        last_seen=MON + timedelta(days=1, hours=1),
    )


def test_logical_scans_and_cloudwatch_pages_are_ranked_apart_with_their_units() -> None:
    findings = [
        _scan("Sessions", 1438, "arn:aws:iam::111122223333:role/session-cleaner", "cloudtrail"),
        _scan("Catalog", 1200, None, "cloudwatch"),  # more than the second CloudTrail row: still ranked after it
        _scan("Orders", 40, "arn:aws:iam::111122223333:user/alice", "cloudtrail"),
    ]
    report = build_report_from_findings(findings, NOW, week=W49)
    assert [(r.table, r.unit) for r in report.scanners] == [
        ("Sessions", LOGICAL_SCANS),
        ("Orders", LOGICAL_SCANS),
        ("Catalog", SCAN_PAGES),
    ]
    chart = scanner_chart(report, "c1")
    assert chart is not None
    text = chart.model_dump_json() if hasattr(chart, "model_dump_json") else repr(chart)
    assert "1,438" in text and "1,200" not in text and "2,638" not in text  # CloudWatch's pages are not charted
    markdown = render_markdown(report)
    assert "| Count | Unit | Per hour (busiest window) |" in markdown
    assert f"| 1,438 | {LOGICAL_SCANS} |" in markdown and "| 1,200 | Scan pages (CloudWatch) |" in markdown
    assert f"<td>{SCAN_PAGES}</td>" in render_html(report)


def test_a_sub_periods_figure_says_so_in_its_label() -> None:
    f = _scan("Sessions", 3, None, "cloudtrail").model_copy(
        update={
            "evidence": {
                "principal": None,
                "operation": "Scan",
                "count": 3,
                "source": "cloudtrail",
                "total_segments": 4,
                "sub_periods": {"total_segments": "busiest 15 minutes"},
            }
        }
    )
    labels = dict(evidence_items(f))
    assert labels["Total segments (busiest 15 minutes)"] == "4"
    assert not any(label.startswith("Sub periods") for label in labels)

"""The weekly report's model-review section (auditor.review.weekly), in the report's HTML and Markdown."""

from __future__ import annotations

from datetime import UTC, datetime

from auditor.models.finding import Finding
from auditor.report import build_report_from_findings, render_html, render_markdown
from tests.review.test_review import _hot_key

AT = datetime(2026, 12, 3, 12, tzinfo=UTC)
BASE = {"severity": "critical", "title": "t", "summary": "s", "recommendation": "r", "first_seen": AT, "last_seen": AT}


def test_the_report_shows_each_proposal_with_its_price_and_headroom() -> None:
    hot = Finding.model_validate({**_hot_key(0.0, 2500.0), **BASE})
    unused = Finding.model_validate(
        {
            **BASE,
            "id": "u1",
            "kind": "unused_index",
            "table": "Orders",
            "index": "ByStatus",
            "evidence": {"days_analyzed": 30, "monthly_write_cost": 3.0, "monthly_storage_cost": 1.0},
        }
    )
    report = build_report_from_findings([hot, unused], AT)
    assert [r.kind for r in report.model_review] == ["drop_index", "shard_partition_key"]
    markdown = render_markdown(report)
    section = markdown[markdown.index("## How the data model should change") :].split("\n## ")[0]
    assert "Events: write day=2026-12-03 across 5 shards" in section and "0.4x -> 2.0x" in section
    assert "| $4.00 | $0.00 |" in section
    assert 'id="review-h">How the data model should change</h2>' in render_html(report)


def test_a_week_without_proposals_says_so() -> None:
    report = build_report_from_findings([], AT)
    assert "No change of the data model proposed this week." in render_markdown(report)

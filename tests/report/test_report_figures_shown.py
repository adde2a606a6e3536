"""The weekly report shows a finding's figures as the finding has them (issue 30): a figure that is not 0 never reads 0
(a tiny utilisation, an item less than a day from the limit), in the evidence and in the items table alike."""

from __future__ import annotations

from auditor.report.model import build_report_from_findings
from auditor.report.report_pages import evidence_items, render_html, render_markdown
from tests.report.test_report_render import NOW, W49, make


def test_a_small_evidence_figure_keeps_two_significant_digits() -> None:
    f = make("hot_key", "low", "Jobs", {"key": {"pk": "A"}, "assumed_utilisation": 0.0009, "reads_per_second": 2.351})
    shown = dict(evidence_items(f))
    assert shown["Assumed utilisation"] == "0.0009"
    assert shown["Reads per second"] == "2.35"  # two decimals as before


def test_an_item_under_a_day_from_the_limit_is_not_shown_as_0_days() -> None:
    growth = make(
        "item_growth",
        "critical",
        "Documents",
        {"key": {"docId": "D#1"}, "size_bytes": 392_512, "bytes_per_day": 37_060.0, "days_to_limit": 0.46},
    )
    report = build_report_from_findings([growth], NOW, week=W49)
    md_row = next(line for line in render_markdown(report).splitlines() if line.startswith("| `docId=D#1`"))
    assert md_row.split(" | ")[6] == "0.5"
    assert '<td class="num">0.5</td>' in render_html(report)

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


def test_a_peak_rate_is_labelled_with_the_sub_period_it_was_measured_over() -> None:
    """A hot key's peak rates are its busiest second's when that is busier (``peak_window``): the label never names a
    busiest minute beside a busiest second's figure, in a finding of one window (no ``sub_periods``) or of many."""
    ev = {"key": {"pk": "A"}, "peak_reads_per_second": 72.0, "peak_writes_per_second": 174.0}
    one = dict(evidence_items(make("hot_key", "high", "Orders", {**ev, "peak_window": "busiest second"})))
    assert one["Peak reads per second (busiest second)"] == "72"
    assert one["Peak writes per second (busiest second)"] == "174"
    labelled = {"peak_reads_per_second": "busiest second", "peak_writes_per_second": "busiest second"}
    many = dict(evidence_items(make("hot_key", "high", "Orders", {**ev, "sub_periods": labelled})))
    assert many["Peak reads per second (busiest second)"] == "72"
    assert not any("busiest minute" in label and "second" in label for label in {**one, **many})
    minute = dict(evidence_items(make("hot_key", "high", "Orders", {**ev, "peak_window": "busiest minute"})))
    assert minute["Peak reads per second (busiest minute)"] == "72"


def test_an_item_whose_size_is_known_is_counted_in_its_size_band_even_when_writes_were_rejected() -> None:
    """An item at 383 KB with rejected writes (its story: size, growth and rejected writes) is within 100 KB of the
    limit; only an item of no known size under the limit is over it. Each item is in one bar."""
    kb = 1024
    at_383 = make(
        "item_size_exceeded", "critical", "Documents", {"key": {"docId": "D#7"}, "size_bytes": 383 * kb, "count": 10}
    )
    unknown = make("item_size_exceeded", "high", "Documents", {"key": {"docId": "D#9"}, "count": 4})
    growing = make("item_growth", "high", "Documents", {"key": {"docId": "D#4"}, "size_bytes": 166 * kb})
    report = build_report_from_findings([at_383, unknown, growing], NOW, week=W49)
    md = render_markdown(report)
    assert "3 items flagged this week: 1 within 100 KB of the 400 KB limit, 1 over it, and 2 already rejecting" in md
    rows = [row.removeprefix("| ").removesuffix(" |").split(" | ") for row in md.splitlines() if row.startswith("| ")]
    bars = {cells[0]: cells[1] for cells in rows if len(cells) == 2}
    assert bars["350-400 KB"] == "1" and bars["over 400 KB (writes rejected)"] == "1" and bars["100-200 KB"] == "1"

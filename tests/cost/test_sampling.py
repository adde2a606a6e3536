"""Sampling-aware findings: the captured fraction from the recorded plans, estimates with their margin, exact scans,
rates over the captured seconds only."""

from __future__ import annotations

import math

import pytest

from auditor.config import AnalysisConfig
from auditor.cost.plan import captured_seconds
from auditor.cost.sampling import apply_capture, estimate
from auditor.detectors.trail import hot_key
from auditor.engine import evaluate
from auditor.models.finding import FindingKind, Totals
from tests.factories import T0, call, span

PTE = "ProvisionedThroughputExceededException"
START = int(T0.timestamp())  # 10:00 UTC, a slice boundary


def _plan(slice_start: int, *captures: tuple[str, int | None]) -> dict[str, object]:
    return {
        "slice_start": slice_start,
        "slice_seconds": 300,
        "captures": [{"table": t, "reason": "rotation", "seconds": s} for t, s in captures],
    }


# ---------------------------------------------------------------- the captured seconds of a window


def test_no_plan_at_or_before_the_window_means_the_trail_logs_everything() -> None:
    assert captured_seconds([], "Orders", START, START + 900) is None
    assert captured_seconds([_plan(START + 300, ("Orders", None))], "Orders", START, START + 900) is None


def test_each_slice_counts_its_own_plan() -> None:
    plans = [_plan(START, ("Orders", None)), _plan(START + 300), _plan(START + 600, ("Orders", 60), ("Jobs", None))]
    assert captured_seconds(plans, "Orders", START, START + 900) == 300 + 0 + 60  # full slice, none, a probe
    assert captured_seconds(plans, "Jobs", START, START + 900) == 300
    assert captured_seconds(plans, "Other", START, START + 900) == 0


def test_a_slice_without_a_plan_keeps_the_earlier_plans_whole_slice_captures_not_its_probes() -> None:
    plans = [_plan(START - 300, ("Orders", None), ("Busy", 60))]  # the controller did not run after 09:55
    assert captured_seconds(plans, "Orders", START, START + 900) == 900
    assert captured_seconds(plans, "Busy", START, START + 900) == 0


def test_a_window_starting_mid_slice_counts_only_its_own_seconds() -> None:
    plans = [_plan(START, ("Orders", 120))]
    assert captured_seconds(plans, "Orders", START + 60, START + 360) == 60  # seconds 60..120 of the probe
    assert captured_seconds([{"slice_start": "x"}, *plans], "Orders", START, START + 300) == 120  # bad plan skipped


# ---------------------------------------------------------------- estimates


def test_estimate_scales_the_count_and_states_a_95_percent_margin() -> None:
    e = estimate(720, 0.06)
    assert e.value == 12_000
    assert e.margin == 850  # 1.96 * sqrt(720 * 0.94) / 0.06 = 849.8, rounded up to two digits
    assert e.text("scans") == "about 12,000 (±850) scans"
    exact = estimate(720, 1.0)
    assert (exact.value, exact.margin, exact.text("scans")) == (720, 0, "720 scans")
    assert estimate(0, 0.5).margin >= 1  # nothing seen is not "exactly 0"
    with pytest.raises(ValueError):
        estimate(5, 0.0)


def test_totals_margins_add_in_quadrature_and_are_absent_when_exact() -> None:
    base = {"windows": 1, "first_seen": T0, "last_seen": T0, "period_start": T0, "period_end": T0}
    a = Totals(count=100, margin=30, **base)
    b = Totals(count=50, margin=40, **base)
    assert a.merged(b).margin == 50
    exact = Totals(count=10, **base)
    assert exact.merged(exact).margin is None
    assert "margin" not in exact.model_dump(mode="json")
    assert a.merged(exact).count_text("throttled calls") == "about 110 (±30) throttled calls"


# ---------------------------------------------------------------- findings of a partly captured window


def _window(captured: float | None) -> object:
    throttled = [
        call(
            "PutItem",
            key={"pk": f"C#{i % 40}"},
            at=i,
            error=PTE,
            message="The level of configured provisioned throughput for the table was exceeded.",
        )
        for i in range(200)
    ]
    scans = [call("Scan", at=400 + 10 * i, principal="arn:aws:iam::111122223333:role/report") for i in range(30)]
    agg = span([*throttled, *scans])
    agg.captured_seconds = captured
    return agg


def test_counts_of_a_sampled_window_are_estimates_and_scans_stay_exact() -> None:
    findings, errors = evaluate([_window(300.0)], AnalysisConfig())  # type: ignore[list-item]
    assert errors == []
    thr = next(f for f in findings if f.kind == FindingKind.THROTTLING)
    assert thr.evidence["write_throttle_events"] == 200  # what was captured
    assert thr.totals is not None
    assert thr.totals.count == 600  # 200 in a third of the window
    margin = math.ceil(1.96 * math.sqrt(200 * (2 / 3)) * 3)
    assert thr.totals.margin == margin
    cap = thr.evidence["capture"]
    assert (cap["basis"], cap["observed"], cap["estimated"], cap["captured_fraction"]) == ("sampled", 200, 600, 0.3333)
    assert f"about 600 (±{margin}) throttled calls" in thr.summary
    assert "Sampled: the trail captured 5 of 15 minutes" in thr.summary
    # The throttling story keeps the detector's own text, which counts the captured minutes.
    assert "throttled in 5 minutes" in thr.evidence["sources"]["cloudtrail"]["details"]["provisioned"]["summary"]
    scan = next(f for f in findings if f.kind == FindingKind.SCAN)
    assert scan.totals is not None and scan.totals.count == 30 and scan.totals.margin is None
    assert scan.evidence["capture"]["basis"].startswith("exact")
    assert "Sampled" not in scan.summary


def test_fully_captured_or_unplanned_windows_are_unchanged() -> None:
    plain, _ = evaluate([_window(None)], AnalysisConfig())  # type: ignore[list-item]
    full, _ = evaluate([_window(900.0)], AnalysisConfig())  # type: ignore[list-item]
    for findings in (plain, full):
        thr = next(f for f in findings if f.kind == FindingKind.THROTTLING)
        assert thr.totals is not None and (thr.totals.count, thr.totals.margin) == (200, None)
        assert "capture" not in thr.evidence


def test_a_window_without_captured_key_traffic_is_said_so_not_scaled() -> None:
    agg = _window(0.0)
    f = next(f for f in evaluate([agg], AnalysisConfig())[0] if f.kind == FindingKind.THROTTLING)  # type: ignore[list-item]
    assert f.evidence["capture"]["basis"].startswith("sampled: no key traffic")
    assert f.totals is not None and f.totals.margin is None


def test_hot_key_rates_are_over_the_captured_seconds_only() -> None:
    # 60 s captured of a 15-minute window: 900 writes on one key in that minute is 15 writes/s, not 1 write/s.
    calls = [call("PutItem", key={"pk": "HOT"}, at=i / 15) for i in range(900)]
    calls += [call("PutItem", key={"pk": f"U#{i}"}, at=i / 10) for i in range(300)]
    agg = span(calls)
    cfg = hot_key.HotKeyConfig(min_share=0.1)
    whole = {f.evidence["key"]["pk"]: f for f in hot_key.detect(agg, cfg) if "key" in f.evidence}
    agg.captured_seconds = 60.0
    sampled = {f.evidence["key"]["pk"]: f for f in hot_key.detect(agg, cfg) if "key" in f.evidence}
    assert whole["HOT"].evidence["writes_per_second"] == 1.0
    assert sampled["HOT"].evidence["writes_per_second"] == 15.0
    assert sampled["HOT"].evidence["share"] == whole["HOT"].evidence["share"]  # a share needs no scaling
    assert "the 1 captured minutes of 15" in sampled["HOT"].summary


def test_apply_capture_keeps_the_share_of_a_hot_key() -> None:
    agg = span(
        [call("PutItem", key={"pk": "HOT"}, at=i / 15) for i in range(900)]
        + [call("PutItem", key={"pk": f"U#{i}"}, at=i / 10) for i in range(300)]
    )
    agg.captured_seconds = 300.0
    f = next(f for f in evaluate([agg], AnalysisConfig())[0] if f.kind == FindingKind.HOT_KEY)
    assert f.totals is not None and f.totals.share is not None
    assert f.totals.share == pytest.approx(900 / 1200, abs=0.01)
    assert f.totals.count == pytest.approx(2700, rel=0.01)
    assert apply_capture(f, 900, 900) is f


def test_the_reports_hot_key_chart_says_about_for_an_estimate() -> None:
    from auditor.report.charts import _about

    assert _about(2700, 120) == "about 2,700 (±120)"
    assert _about(2700, None) == "2,700"


def test_the_report_says_how_many_findings_count_sampled_traffic() -> None:
    from auditor.report.model import IsoWeek, build_report_from_findings
    from auditor.report.report_pages import render_html, render_markdown

    findings, _ = evaluate([_window(300.0)], AnalysisConfig())  # type: ignore[list-item]
    report = build_report_from_findings(findings, T0, week=IsoWeek.of(T0))
    assert report.sampled_findings == 1  # the throttling finding; the scan finding is exact
    text = "1 finding counted traffic that the capture controller logged only in part: its counts are estimates"
    assert text in render_markdown(report)
    assert text in render_html(report)
    exact, _ = evaluate([_window(None)], AnalysisConfig())  # type: ignore[list-item]
    plain = build_report_from_findings(exact, T0, week=IsoWeek.of(T0))
    assert plain.sampled_findings == 0 and "logged only in part" not in render_markdown(plain)

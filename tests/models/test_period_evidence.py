"""Every number in a finding's evidence is for the finding's period: figures kept per window in the totals, merged as
the counts are, and the evidence stated from them (auditor.models.period_evidence)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from auditor.detectors.findings.period import for_period, period_text
from auditor.models.finding import STORED, Finding, FindingKind, Severity, Totals
from auditor.models.period_evidence import figures_of, merge_figures, period_evidence

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # a Monday
WINDOW = 900


def _hot(at: datetime, requests: int, key_requests: int, second_writes: int, headroom: float) -> Finding:
    evidence: dict[str, Any] = {
        "key": {"pk": "ORDER#1"},
        "share": round(requests / key_requests, 4),
        "requests": requests,
        "reads": 0,
        "writes": requests,
        "reads_per_second": 0.0,
        "writes_per_second": round(requests / WINDOW, 3),
        "peak_reads_per_second": 0.0,
        "peak_writes_per_second": float(second_writes),
        "peak_second_reads": 0,
        "peak_second_writes": second_writes,
        "peak_second_writes_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "peak_minute_reads": 0,
        "peak_minute_writes": second_writes * 30,
        "peak_window": "busiest second",
        "peak_minute": at.strftime("%Y-%m-%dT%H:%M:00Z"),
        "headroom_factor": headroom,
        "partition_utilisation": round(1 / headroom, 4),
        "throttled_calls": 0,
        "window_seconds": WINDOW,
        "key_requests": key_requests,
        "source": "cloudtrail",
    }
    summary = (
        f"pk=ORDER#1 on Orders peaked at 0 reads/s and {second_writes} writes/s (peak: busiest second; busiest second "
        f"0 reads / {second_writes} writes; busiest minute 0 reads/s / {second_writes // 2} writes/s) against one "
        f"partition's 3,000 RCU / 1,000 WCU. It took {requests / key_requests:.0%} of the {key_requests} "
        "key-identified requests in 15 minutes. More."
    )
    return Finding.create(
        FindingKind.HOT_KEY,
        account="111122223333",
        region="us-east-1",
        table="Orders",
        discriminator={"pk": "ORDER#1"},
        severity=Severity.HIGH,
        title="Hot partition key pk=ORDER#1 on Orders",
        summary=summary,
        recommendation=f"write-shard it: 2 shards keep each under half a partition at the peak of {second_writes} "
        "writes/s",
        evidence=evidence,
        first_seen=at,
        last_seen=at + timedelta(minutes=10),
    )


def _two_windows() -> tuple[Finding, Finding, Totals]:
    first = _hot(T0, 600, 1000, 40, 2.5)
    late = _hot(T0 + timedelta(hours=2), 300, 3000, 90, 1.1)
    return first, late, first.sighting_totals().merged(late.sighting_totals())


def test_counts_add_shares_are_of_the_period_and_peaks_are_the_busiest_windows() -> None:
    _first, late, totals = _two_windows()
    week = totals.over(T0 - timedelta(hours=10), T0 - timedelta(hours=10) + timedelta(days=7))
    stated = for_period(late, week)
    ev = stated.evidence
    assert (ev["requests"], ev["writes"], ev["key_requests"]) == (900, 900, 4000)
    assert ev["share"] == 0.225 == round(week.count / (week.share_base or 1), 4)  # not the late window's 10 %
    assert ev["window_seconds"] == 7 * 86_400
    # the key's counts are of the two windows it was hot in (the others' requests are in no window's sighting):
    # named so, and its rates are over those 30 minutes
    assert ev["sub_periods"]["share"] == ev["sub_periods"]["requests"] == "the 30 minutes it was found in"
    assert ev["writes_per_second"] == round(900 / 1800, 3)
    # the busiest second and minute over the period, with their times; the tightest headroom with its utilisation
    assert (ev["peak_second_writes"], ev["peak_second_writes_at"]) == (90, "2026-11-30T12:00:00Z")
    assert ev["peak_minute_writes"] == 2700 and ev["peak_minute"] == "2026-11-30T12:00:00Z"
    assert (ev["headroom_factor"], ev["partition_utilisation"]) == (1.1, round(1 / 1.1, 4))
    # a sub-period's figure says so
    assert ev["sub_periods"]["peak_second_writes"] == "busiest second"
    assert ev["sub_periods"]["peak_minute_writes"] == "busiest minute"
    assert ev["sub_periods"]["headroom_factor"] == "busiest 15 minutes"
    # the summary's and the recommendation's peaks are the period's busiest (the late window's, not the first's)
    assert "peaked at 0 reads/s and 90 writes/s (peak: busiest second; busiest second 0 reads / 90 writes; " in (
        stated.summary
    )
    assert "busiest minute 0 reads/s / 45 writes/s)" in stated.summary
    first_stated = for_period(_first, week)
    assert first_stated.summary == stated.summary and "at the peak of 90 writes/s" in first_stated.recommendation
    assert ev["sub_periods"]["peak_writes_per_second"] == "busiest second"
    # the summary's share sentence is the week's (of the windows it was hot in, so named)
    assert " It took 22% of the 4000 key-identified requests in the 30 minutes it was hot (of the week). More." in (
        stated.summary
    )
    assert "10%" not in stated.summary


def test_the_stated_evidence_does_not_depend_on_the_sighting_it_starts_from() -> None:
    first, late, totals = _two_windows()
    assert for_period(first, totals).evidence == for_period(late, totals).evidence
    again = for_period(for_period(late, totals), totals)  # stating it twice changes nothing
    assert again.evidence == for_period(late, totals).evidence and again.summary == for_period(late, totals).summary


def test_figures_merge_in_any_grouping_and_need_every_part() -> None:
    a, b, c = (figures_of("scan", {"count": n, "pages": 2 * n, "indexes": [f"i{n}"]}) for n in (1, 2, 3))
    assert merge_figures(merge_figures(a, b), c) == merge_figures(a, merge_figures(b, c))
    assert merge_figures(a, None) is None  # a part stored before figures existed: the sums would be wrong
    assert figures_of("large_item", {"size_bytes": 1}) is None


def test_scan_rates_are_over_the_period_and_lists_are_unions() -> None:
    figures = merge_figures(
        figures_of("scan", {"count": 6, "inferred_scans": 0, "segments_seen": [0, 1], "window_seconds": WINDOW}),
        figures_of("scan", {"count": 12, "inferred_scans": 2, "segments_seen": [1, 2], "window_seconds": WINDOW}),
    )
    evidence = {"count": 12, "per_hour": 48.0, "mean_interval_seconds": 75.0, "grouping": "logged", "segments_seen": []}
    ev = period_evidence("scan", evidence, figures, 2 * 3600)
    assert (ev["count"], ev["per_hour"], ev["mean_interval_seconds"]) == (18, 9.0, 400.0)
    assert ev["segments_seen"] == [0, 1, 2] and ev["grouping"] == "inferred_from_time"
    assert "window_seconds" not in ev  # only the fields the evidence states


def test_low_cardinality_values_add_by_value_with_their_share_of_the_period() -> None:
    def ev(a: int, b: int) -> dict[str, Any]:
        rows = [{"value": "open", "requests": a, "share": 0.0}, {"value": "done", "requests": b, "share": 0.0}]
        return {"requests": a + b, "values": rows, "distinct_partition_keys": 2}

    figures = merge_figures(figures_of("low_cardinality_key", ev(30, 10)), figures_of("low_cardinality_key", ev(5, 55)))
    out = period_evidence("low_cardinality_key", ev(5, 55), figures, 1800)
    assert out["values"] == [
        {"value": "done", "requests": 65, "share": 0.65},
        {"value": "open", "requests": 35, "share": 0.35},
    ]
    assert out["requests"] == 100 and out["sub_periods"] == {"distinct_partition_keys": "busiest window"}


def test_figures_are_stored_but_not_printed() -> None:
    _first, _late, totals = _two_windows()
    assert totals.figures is not None
    assert "figures" not in totals.model_dump(mode="json")  # the outputs keep the contract's totals
    stored = totals.model_dump(mode="json", context=STORED)
    assert Totals.model_validate(stored).figures == totals.figures
    assert totals == totals.model_copy(update={"figures": None})  # the same sums: equal totals


def test_period_text_names_a_week_or_a_length() -> None:
    def t(hours: float, start: datetime = T0) -> Totals:
        return Totals(
            count=1,
            windows=1,
            first_seen=start,
            last_seen=start,
            period_start=start,
            period_end=start + timedelta(hours=hours),
        )

    monday = T0.replace(hour=0)
    assert period_text(t(24 * 7, monday)) == "the week"
    assert period_text(t(24 * 7)) == "7 days"
    assert (period_text(t(2)), period_text(t(3)), period_text(t(0.75))) == ("120 minutes", "3 hours", "45 minutes")


def test_the_weekly_reports_hot_key_sentence_reads_the_weeks_share() -> None:
    """Two windows of a hot key in one ISO week, stored by the lifecycle: the stored finding's evidence and the
    weekly report's finding state the week's share; the report's sentence says so ("in the week")."""
    from auditor.lifecycle import transition
    from auditor.report.model import IsoWeek
    from auditor.service.weekly_report import week_totals

    first, late, _ = _two_windows()
    state = None
    for seen in (first, late):
        change = transition(state, seen, now=seen.last_seen, resolve_after_seconds=86_400, horizon=seen.last_seen)
        assert change is not None
        state = change.state
    assert state is not None
    assert (state.finding.evidence["requests"], state.finding.evidence["share"]) == (900, 0.225)  # stored: the week's
    stated = week_totals(state, IsoWeek(year=2026, week=49)).finding
    assert stated.evidence["share"] == 0.225
    assert "It took 22% of the 4000 key-identified requests in the 30 minutes it was hot (of the week)." in (
        stated.summary
    )


def test_a_weeks_figures_stay_small() -> None:
    """A week of windows, each naming five other throttled keys: the figures keep the largest counts only."""
    figures = None
    for w in range(672):
        rows = [{"key": {"pk": f"K{w}-{i}"}, "throttled_calls": 1 + i} for i in range(5)]
        one = figures_of("throttling", {"read_throttle_events": 5, "write_throttle_events": 0, "top_keys": rows})
        figures = one if figures is None else merge_figures(figures, one)
    assert figures is not None and figures["sum"]["read_throttle_events"] == 3360
    assert len(figures["tally"]["top_keys"]) == 50
    assert len(period_evidence("throttling", {"top_keys": []}, figures, 604_800)["top_keys"]) == 5


def test_a_hot_keys_requests_add_its_counts_in_the_windows_it_was_not_hot_in() -> None:
    """Hot in one window, among the top keys of another (below the threshold there) and unlisted in a third: its
    requests over the period are both counts, its share of every window's key-identified requests, and the unlisted
    window makes them a lower bound, stated with how many requests it could hide (the service and analyze-trail both
    state a hot key through ``with_key_base``)."""
    from auditor.engine import with_key_base
    from auditor.kernel.aggregates.keys import encode_key
    from auditor.models.period_evidence import KeyCount, PeriodKeys, SpaceKeys, key_id

    hot = _hot(T0, 600, 1000, 40, 2.5)
    week = hot.sighting_totals().over(T0, T0 + timedelta(days=7))
    me = key_id(encode_key("pk", "ORDER#1"))
    period = PeriodKeys()
    period.add({"": 1000}, {"": SpaceKeys(1000, {me: (600, 600)}, 0)}, [hot.id])
    period.add({"": 2000}, {"": SpaceKeys(2000, {me: (150, 100), 'pk\x1f"x': (300, 0)}, 0)}, [])
    exact = with_key_base(hot, week, {("111122223333", "us-east-1", "Orders"): period})
    stated = for_period(hot, exact)
    ev = stated.evidence
    assert (ev["requests"], ev["writes"], ev["reads"], ev["key_requests"]) == (750, 700, 50, 3000)
    assert exact.count == 750 and ev["share"] == 0.25 == exact.share
    assert "lower_bound" not in ev and not {"requests", "share", "writes"} & set(ev.get("sub_periods", {}))
    assert "It took 25% of the 3000 key-identified requests in 7 days." in stated.summary

    period.add({"": 500}, {"": SpaceKeys(500, {'pk\x1f"x': (40, 0)}, 40)}, [])
    bounded = for_period(hot, with_key_base(hot, week, {("111122223333", "us-east-1", "Orders"): period}))
    assert bounded.evidence["requests"] == 750 and bounded.evidence["key_requests"] == 3500
    assert bounded.evidence["lower_bound"] == {
        "fields": ["requests", "reads", "writes", "share"],
        "uncounted_at_most": 40,
        "windows": 1,
    }
    assert period.key_count("", me, hot.id) == KeyCount(150, 100, 40, 1)
    # a window kept before its top keys were: the key's other windows are unknown, its counts stay its hot windows'
    period.add({"": 100}, None, [])
    assert period.key_count("", me, hot.id) is None


def test_a_long_key_is_kept_as_a_digest() -> None:
    from auditor.models.period_evidence import key_id

    long = 'pk\x1f"' + "x" * 2000
    assert key_id('pk\x1f"short') == 'pk\x1f"short'
    assert len(key_id(long)) < 64 and key_id(long) == key_id(long) != key_id(long + "y")
    wide = 'pk\x1f"' + "\U0001f600" * 40  # 160 bytes as UTF-8, 480 as escaped JSON
    assert key_id(wide) != wide and len(key_id(wide)) < 64
    assert key_id('pk\x1f"\ud800') != 'pk\x1f"\ud800'  # a lone surrogate: not writable as UTF-8


def test_of_two_windows_at_the_same_headroom_the_busier_one_states_the_utilisation() -> None:
    # a key throttled in two windows: both at headroom 1.0 (the evidence caps it), one nearer its limit than the other
    def window(used: float) -> dict[str, Any]:
        return {
            "key": {"pk": "CUSTOMER#42"},
            "share": 0.4,
            "requests": 100,
            "window_seconds": 900,
            "source": "cloudtrail",
            "headroom_factor": 1.0,
            "assumed_utilisation": used,
            "throttles_now": True,
        }

    quiet, busy = figures_of("hot_key", window(0.159)), figures_of("hot_key", window(0.174))
    for a, b in ((quiet, busy), (busy, quiet)):
        merged = merge_figures(a, b)
        assert merged is not None
        stated = period_evidence("hot_key", window(0.0), merged, 1800.0, 2)
        assert (stated["headroom_factor"], stated["assumed_utilisation"]) == (1.0, 0.174)

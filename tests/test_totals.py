"""Period totals on findings: exact sums over many windows (analyze-trail) and ISO weeks (the service lifecycle)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.demo.replay import replay_findings
from auditor.engine import analyze_trail
from auditor.lifecycle import FindingState, FindingStatus, add_sightings, iso_week, reconcile, transition
from auditor.models.finding import Finding, FindingKind, Severity, Totals, window_totals
from auditor.report.model import IsoWeek
from auditor.service.weekly_report import build_weekly_report

ROLE = "arn:aws:iam::111122223333:assumed-role/cleaner/session-cleaner"


def _scan(at: datetime, n: int) -> dict[str, Any]:
    return {
        "eventVersion": "1.09",
        "userIdentity": {"type": "AssumedRole", "arn": ROLE, "accountId": "111122223333"},
        "eventTime": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": "Scan",
        "awsRegion": "us-east-1",
        "requestParameters": {"tableName": "Sessions"},
        "eventID": f"scan-{at.timestamp()}-{n}",
        "eventType": "AwsApiCall",
        "eventCategory": "Data",
        "recipientAccountId": "111122223333",
        "readOnly": True,
        "managementEvent": False,
    }


def _write(path: Path, times: list[datetime]) -> Path:
    path.write_text(json.dumps({"Records": [_scan(t, i) for i, t in enumerate(times)]}))
    return path


def _page(at: datetime, n: int, *, continues: bool, segment: int | None = None, segments: int | None = None) -> Any:
    """A Scan page: CloudTrail logs the request's ``exclusiveStartKey`` (the key the page resumes from) and a parallel
    scan's ``segment`` and ``totalSegments`` in requestParameters (Scan API Reference, request syntax)."""
    record = _scan(at, n)
    params = record["requestParameters"]
    if continues:
        params["exclusiveStartKey"] = {"sessionId": f"s-{n}"}
    if segments is not None:
        params.update(segment=segment, totalSegments=segments)
    return record


T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # a Monday


def test_analyze_trail_totals_sum_every_window_of_the_input(tmp_path: Path) -> None:
    # 6 scans in 10:00-10:15, none in 10:15-10:30, 12 in 10:30-10:45, 3 in 11:00-11:15.
    times = [T0 + timedelta(minutes=2 * i) for i in range(6)]
    times += [T0 + timedelta(minutes=30, seconds=60 * i) for i in range(12)]
    times += [T0 + timedelta(minutes=61 + i) for i in range(3)]
    result = analyze_trail([str(_write(tmp_path / "t.json", times))])
    (scan,) = [f for f in result.findings if f.kind is FindingKind.SCAN]
    assert scan.evidence["count"] == 21
    assert scan.totals == Totals(
        count=21,
        windows=3,
        first_seen=T0,
        last_seen=T0 + timedelta(minutes=63),
        peak_per_hour=48.0,  # 12 scans in the busiest 15-minute window
        period_start=T0,
        period_end=T0 + timedelta(minutes=75),
        peak_severity=Severity.MEDIUM,  # 6 and 12 scans (24 and 48 per hour): medium; 3 scans: low
    )
    assert scan.severity is Severity.MEDIUM
    doc = result.to_dict()["findings"][0]
    assert doc["totals"] == {  # type: ignore[index]
        "count": 21,
        "windows": 3,
        "first_seen": "2026-11-30T10:00:00Z",
        "last_seen": "2026-11-30T11:03:00Z",
        "peak_per_hour": 48.0,
        "period_start": "2026-11-30T10:00:00Z",
        "period_end": "2026-11-30T11:15:00Z",
        "peak_severity": "medium",
    }


@pytest.mark.parametrize("segments", [None, 4])
def test_a_scan_across_a_window_boundary_is_one_scan_over_the_input(tmp_path: Path, segments: int | None) -> None:
    # one paginated (or parallel) scan 10:14:30-10:15:50, then another that starts at 10:40 and runs on: two scans
    def run(start: datetime, tag: int) -> list[Any]:
        return [
            _page(start + timedelta(seconds=2 * p), tag * 1000 + s * 100 + p, continues=p > 0, segment=s,
                  segments=segments)
            for s in range(segments or 1)
            for p in range(40)
        ]  # fmt: skip

    records = run(T0 + timedelta(minutes=14, seconds=30), 1) + run(T0 + timedelta(minutes=40), 2)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"Records": records}))
    (scan,) = [f for f in analyze_trail([str(path)]).findings if f.kind is FindingKind.SCAN]
    assert (scan.evidence["count"], scan.evidence["logical_scans"], scan.evidence["pages"]) == (2, 2, len(records))
    assert scan.evidence["continued_scans"] == 0  # the input did not open in the middle of a scan
    assert scan.totals is not None and (scan.totals.count, scan.totals.windows) == (2, 3)


def test_a_continuation_after_a_long_pause_continues_a_scan_whose_start_was_not_seen(tmp_path: Path) -> None:
    # a scan at 10:05, then, two hours later, pages that continue a scan the trail did not see begin
    records = [_page(T0 + timedelta(minutes=5, seconds=p), p, continues=p > 0) for p in range(10)]
    records += [_page(T0 + timedelta(hours=2, seconds=p), 100 + p, continues=True) for p in range(10)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"Records": records}))
    (scan,) = analyze_trail([str(path)]).findings
    assert scan.evidence["count"] == 2
    assert scan.totals is not None and scan.totals.count == 2


def test_under_an_hour_observed_there_is_no_rate_per_hour(tmp_path: Path) -> None:
    times = [T0 + timedelta(minutes=i) for i in range(10)]
    result = analyze_trail([str(_write(tmp_path / "t.json", times))])
    (scan,) = result.findings
    assert scan.totals is not None
    assert scan.totals.count == 10
    assert scan.totals.peak_per_hour is None
    assert scan.totals.rate_text("scan calls") == "10 scan calls in 15 minutes"


def _sighting(start: datetime, count: int, *, seconds: int = 900) -> Finding:
    """A scan finding of one window starting at ``start``, as the evaluator sees it."""
    evidence = {"principal": ROLE, "operation": "Scan", "count": count, "source": "cloudtrail"}
    first, last = start + timedelta(seconds=1), start + timedelta(seconds=seconds - 1)
    f = Finding.create(
        FindingKind.SCAN,
        account="111122223333",
        region="us-east-1",
        table="Sessions",
        discriminator=[ROLE, "Scan"],
        severity=Severity.MEDIUM if count < 10 else Severity.HIGH,
        title="Scans on Sessions",
        summary="s",
        recommendation="r",
        evidence=evidence,
        first_seen=first,
        last_seen=last,
    )
    totals = window_totals(f.kind, evidence, first, last, start, start + timedelta(seconds=seconds))
    return f.model_copy(update={"totals": totals})


def test_lifecycle_sums_windows_per_iso_week_and_never_counts_a_window_twice() -> None:
    sunday_late = datetime(2026, 12, 6, 23, 30, tzinfo=UTC)  # the last half hour of ISO week 2026-W49
    runs = [
        [_sighting(sunday_late, 4), _sighting(sunday_late + timedelta(minutes=15), 8)],  # W49: 12 scans
        [_sighting(sunday_late + timedelta(minutes=30), 5)],  # Monday 00:00, W50
        [_sighting(sunday_late + timedelta(minutes=30), 5)],  # the same window evaluated again (a retry)
        [_sighting(sunday_late + timedelta(minutes=45), 20), _sighting(sunday_late + timedelta(hours=2), 1)],
    ]
    states: dict[str, FindingState] = {}
    now = sunday_late + timedelta(hours=3)
    for run in runs:
        result = reconcile(states, run, now, (), 86_400, {})
        states.update(result.states)
    (state,) = states.values()
    assert sorted(state.weekly_totals) == ["2026-W49", "2026-W50"]
    w49, w50 = state.weekly_totals["2026-W49"], state.weekly_totals["2026-W50"]
    assert (w49.count, w49.windows, w49.peak_per_hour) == (12, 2, 32.0)
    assert (w50.count, w50.windows, w50.peak_per_hour) == (26, 3, 80.0)
    assert w50.first_seen == sunday_late + timedelta(minutes=30, seconds=1)
    assert state.finding.totals == w50  # the finding carries its latest week's totals

    # The weekly report of W49 states W49's totals over the whole week, not the latest window's evidence.
    report = build_weekly_report([state], IsoWeek.parse("2026-W49"), now)
    (rf,) = report.findings
    assert rf.finding.totals is not None
    assert rf.finding.totals.count == 12
    assert rf.finding.totals.period_start == datetime(2026, 11, 30, tzinfo=UTC)
    assert rf.finding.totals.period_end == datetime(2026, 12, 7, tzinfo=UTC)
    assert report.scanners[0].count == 12


def test_a_state_stored_without_totals_loads_and_counts_from_the_next_sighting() -> None:
    old = _sighting(T0, 9).model_dump(mode="json")
    del old["totals"]
    stored_json = json.dumps(
        {
            "finding": old,
            "status": "ongoing",
            "opened_at": "2026-11-30T10:00:00Z",
            "updated_at": "2026-11-30T10:20:00Z",
            "published_severity": "medium",
        }
    )
    stored = FindingState.model_validate_json(stored_json)
    assert stored.finding.totals is None
    assert stored.weekly_totals == {}
    change = transition(
        stored,
        _sighting(T0 + timedelta(minutes=15), 3),
        now=T0 + timedelta(minutes=40),
        resolve_after_seconds=86_400,
        horizon=None,
    )
    assert change is not None
    assert change.state.status is FindingStatus.ONGOING
    assert change.state.weekly_totals[iso_week(T0)].count == 3  # the stored window's 9 are not known, not guessed


def test_add_sightings_keeps_only_the_most_recent_weeks() -> None:
    weekly: dict[str, Totals] = {}
    for week in range(12):
        f = _sighting(T0 + timedelta(weeks=week), 1)
        assert f.totals is not None
        weekly = add_sightings(weekly, [f.totals])
    assert len(weekly) == 8
    assert min(weekly) == iso_week(T0 + timedelta(weeks=4))


# --------------------------------------------------------------------------------------------------------------------
# Shares over the period: a hot key's share is its requests over the table's requests in the same windows
# --------------------------------------------------------------------------------------------------------------------


def _put(at: datetime, pk: str, n: int) -> dict[str, Any]:
    record = _scan(at, n)
    record.update(
        eventName="PutItem",
        readOnly=False,
        eventID=f"put-{at.timestamp()}-{n}",
        requestParameters={"tableName": "Orders", "key": {"pk": pk, "sk": f"ORDER#{n}"}, "item": ["pk", "sk"]},
    )
    return record


def test_hot_key_share_over_the_input_is_requests_over_the_same_windows_requests(tmp_path: Path) -> None:
    # Window 10:00-10:15: the key takes 400 of 1,000 requests (40 %). Window 10:30-10:45: 300 of 1,500 (20 %).
    # Over both windows: 700 of 2,500 = 28 %, not the last window's 20 % nor the first's 40 %. (50 other keys: few
    # enough for the heavy-hitter sketch to count exactly.)
    records = []
    for w, (hot, cold) in enumerate([(400, 600), (300, 1200)]):
        start = T0 + timedelta(minutes=30 * w)
        records += [_put(start + timedelta(seconds=i * 0.5), "CUSTOMER#42", w * 10_000 + i) for i in range(hot)]
        records += [
            _put(start + timedelta(seconds=i * 0.5), f"CUSTOMER#{1000 + i % 50}", w * 10_000 + hot + i)
            for i in range(cold)
        ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"Records": records}))
    result = analyze_trail([str(path)])
    (hot_key,) = [f for f in result.findings if f.kind is FindingKind.HOT_KEY]
    assert hot_key.totals is not None
    assert (hot_key.totals.count, hot_key.totals.share_base, hot_key.totals.windows) == (700, 2500, 2)
    assert hot_key.totals.share == 0.28
    doc = next(d for d in result.to_dict()["findings"] if d["kind"] == "hot_key")  # type: ignore[union-attr]
    assert doc["totals"]["share_base"] == 2500  # type: ignore[index]


def test_share_base_sums_with_the_counts_and_is_dropped_when_a_sighting_lacks_it() -> None:
    def hot(at: datetime, requests: int, key_requests: int | None) -> Totals:
        evidence: dict[str, Any] = {"requests": requests}
        if key_requests is not None:
            evidence["key_requests"] = key_requests
        return window_totals(FindingKind.HOT_KEY, evidence, at, at, at, at + timedelta(minutes=15))

    a, b = hot(T0, 400, 1000), hot(T0 + timedelta(minutes=30), 300, 1500)
    assert a.merged(b).share_base == 2500
    assert a.merged(b).share == 0.28
    legacy = hot(T0 + timedelta(hours=1), 300, None)  # a sighting stored before the denominator existed
    assert a.merged(legacy).share_base is None
    assert a.merged(legacy).share is None
    # kinds that state no share carry none, and their JSON keeps the contract's seven keys
    scan = window_totals(FindingKind.SCAN, {"count": 5}, T0, T0, T0, T0 + timedelta(minutes=15))
    assert scan.share_base is None
    assert set(scan.model_dump(mode="json")) == {
        "count",
        "windows",
        "first_seen",
        "last_seen",
        "peak_per_hour",
        "period_start",
        "period_end",
    }
    assert Totals.model_validate(a.model_dump(mode="json")) == a  # round-trips through the state table's JSON


def test_weekly_report_shows_the_hot_key_share_of_the_week() -> None:
    from auditor.report.figures import period_share

    def finding(share_base: int | None) -> Finding:
        totals = Totals(
            count=700,
            windows=2,
            first_seen=T0,
            last_seen=T0 + timedelta(minutes=40),
            period_start=T0,
            period_end=T0 + timedelta(days=7),
            share_base=share_base,
        )
        return Finding.create(
            FindingKind.HOT_KEY,
            account="111122223333",
            region="us-east-1",
            table="Orders",
            discriminator={"pk": "CUSTOMER#42"},
            severity=Severity.HIGH,
            title="Hot key",
            summary="s",
            recommendation="r",
            evidence={"key": {"pk": "CUSTOMER#42"}, "share": 0.2, "requests": 300},
            first_seen=T0,
            last_seen=T0,
        ).model_copy(update={"totals": totals})

    assert period_share(finding(2500)) == 0.28  # the week's share, from the week's totals
    assert period_share(finding(None)) == 0.2  # stored without the denominator: the window's share


def test_the_report_says_which_findings_were_stored_without_totals() -> None:
    from auditor.report.report_pages import render_html, render_markdown

    old = _sighting(T0, 9).model_dump(mode="json")
    del old["totals"]
    legacy = FindingState.model_validate(
        {"finding": old, "status": "ongoing", "opened_at": T0, "updated_at": T0 + timedelta(minutes=20)}
    )
    week = IsoWeek.parse(iso_week(T0))
    now = week.end + timedelta(hours=7)
    report = build_weekly_report([legacy], week, now)
    (rf,) = report.findings
    assert rf.finding.totals is None and report.stored_without_totals == 1
    assert report.scanners[0].count == 9  # the stored window's evidence is all that is known
    note = "1 finding was stored by an earlier version without period totals"
    assert note in render_markdown(report) and note in render_html(report)

    # The next sighting starts its totals: the week's count is that sighting's alone, and the note is gone.
    change = transition(
        legacy,
        _sighting(T0 + timedelta(minutes=15), 3),
        now=T0 + timedelta(minutes=40),
        resolve_after_seconds=86_400,
        horizon=None,
    )
    assert change is not None
    report = build_weekly_report([change.state], week, now)
    assert report.stored_without_totals == 0 and report.scanners[0].count == 3
    assert "without period totals" not in render_markdown(report)


# --------------------------------------------------------------------------------------------------------------------
# The period's severity: the highest any window of the period reached, in analyze-trail and in the service
# --------------------------------------------------------------------------------------------------------------------


def test_analyze_trail_states_the_highest_severity_a_window_reached_not_the_inputs_average(tmp_path: Path) -> None:
    # 15 scans in 10:00-10:15 (60 per hour: high), 1 scan three hours later (info). Judged as one 3-hour block the
    # 16 scans would be under 5 per hour (medium); the window the service evaluates was high, and so is the input.
    times = [T0 + timedelta(seconds=50 * i) for i in range(15)] + [T0 + timedelta(hours=3, minutes=5)]
    result = analyze_trail([str(_write(tmp_path / "t.json", times))])
    (scan,) = [f for f in result.findings if f.kind is FindingKind.SCAN]
    assert scan.severity is Severity.HIGH
    assert scan.totals is not None
    assert (scan.totals.count, scan.totals.windows, scan.totals.peak_severity) == (16, 2, Severity.HIGH)


def _scans(start: datetime, count: int, severity: Severity) -> Finding:
    f = _sighting(start, count)
    return f.model_copy(update={"severity": severity})


def test_period_severity_across_windows_and_two_iso_weeks_is_exact() -> None:
    sunday = datetime(2026, 12, 6, 22, 0, tzinfo=UTC)  # the last two hours of ISO week 2026-W49
    runs = [
        [_scans(sunday, 4, Severity.LOW), _scans(sunday + timedelta(minutes=15), 12, Severity.HIGH)],
        [_scans(sunday + timedelta(minutes=30), 6, Severity.MEDIUM)],  # the latest W49 window: medium
        [_scans(sunday + timedelta(hours=2), 3, Severity.LOW)],  # Monday 00:00, W50
        [_scans(sunday + timedelta(hours=2), 3, Severity.CRITICAL)],  # the same window again: not counted
        [_scans(sunday + timedelta(hours=2, minutes=15), 8, Severity.MEDIUM)],
        [_scans(sunday + timedelta(hours=3), 2, Severity.INFO)],  # the finding's latest sighting
    ]
    states: dict[str, FindingState] = {}
    now = sunday + timedelta(hours=4)
    for run in runs:
        states.update(reconcile(states, run, now, (), 86_400, {}).states)
    (state,) = states.values()
    w49, w50 = state.weekly_totals["2026-W49"], state.weekly_totals["2026-W50"]
    assert (w49.count, w49.windows, w49.peak_severity) == (22, 3, Severity.HIGH)
    assert (w50.count, w50.windows, w50.peak_severity) == (13, 3, Severity.MEDIUM)
    assert state.finding.severity is Severity.INFO  # the stored finding is its latest sighting ...

    # ... and each week's report states the severity that week reached, with that week's totals
    for week, severity, count in (("2026-W49", Severity.HIGH, 22), ("2026-W50", Severity.MEDIUM, 13)):
        (rf,) = build_weekly_report([state], IsoWeek.parse(week), now).findings
        assert (rf.finding.severity, rf.finding.totals and rf.finding.totals.count) == (severity, count), week

    # ... and over both weeks (a replay's findings.json), the highest of all
    period = (sunday, sunday + timedelta(hours=3, minutes=15))
    (doc,) = replay_findings([state], period)
    assert (doc["severity"], doc["totals"]["count"], doc["totals"]["peak_severity"]) == ("high", 35, "high")

    # a week whose totals were stored before they knew their severity keeps the stored one
    legacy = state.model_copy(
        update={
            "weekly_totals": {w: t.model_copy(update={"peak_severity": None}) for w, t in state.weekly_totals.items()}
        }
    )
    (rf,) = build_weekly_report([legacy], IsoWeek.parse("2026-W49"), now).findings
    assert rf.finding.severity is Severity.INFO


# --------------------------------------------------------------------------------------------------------------------
# The period's throttling cause: the cause with the most throttled calls, each window's calls under its own decision
# --------------------------------------------------------------------------------------------------------------------

GENERIC_PTE = "The level of configured provisioned throughput for the table was exceeded."


def _throttled(at: datetime, pk: str, n: int) -> dict[str, Any]:
    record = _put(at, pk, n)
    record.update(
        eventID=f"throttled-{at.timestamp()}-{n}",
        errorCode="ProvisionedThroughputExceededException",
        errorMessage=GENERIC_PTE,
        requestParameters={"tableName": "Orders", "key": {"pk": pk, "sk": f"ORDER#{n}"}},
    )
    return record


def test_period_cause_counts_each_windows_throttles_under_that_windows_cause(tmp_path: Path) -> None:
    from auditor.config import AnalysisConfig
    from auditor.engine import evaluate, ingest
    from auditor.kernel.inputs import discover

    # 10:00-10:15: 30 throttles spread over 30 keys (the table's capacity: provisioned). 10:30-10:45: 10 throttles,
    # all on CUSTOMER#42, which has a tenth of the traffic (a hot partition: key range). Over the whole input the 40
    # throttles are spread (the top key has a quarter of them): one decision over it would call all 40 provisioned.
    records = []
    for i in range(300):
        records.append(_put(T0 + timedelta(seconds=2 * i + 1), f"CUSTOMER#{1000 + i}", i))
        records.append(_put(T0 + timedelta(minutes=30, seconds=2 * i + 1), f"CUSTOMER#{2000 + i}", 1000 + i))
    records += [_put(T0 + timedelta(minutes=30, seconds=20 * i), "CUSTOMER#42", 3000 + i) for i in range(30)]
    records += [_throttled(T0 + timedelta(seconds=20 * i), f"CUSTOMER#{5000 + i}", i) for i in range(30)]
    records += [_throttled(T0 + timedelta(minutes=30, seconds=60 * i), "CUSTOMER#42", 100 + i) for i in range(10)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"Records": records}))

    (direct,) = [f for f in analyze_trail([str(path)]).findings if f.kind is FindingKind.THROTTLING]
    assert direct.evidence["cause"] == "provisioned"
    assert [(c["cause"], c["events"], c["share"]) for c in direct.evidence["causes"]] == [
        ("provisioned", 30, 0.75),
        ("key_range", 10, 0.25),
    ]
    assert direct.title == "Throttling on Orders (provisioned 75%, key range 25%)"
    assert direct.totals is not None and direct.totals.by_cause == {
        "provisioned": {"spread_over_keys": 30},
        "key_range": {"concentrated_on_keys": 10},
    }
    # 30 throttles: medium; 10 throttles: medium, raised to high in their window, linked with CUSTOMER#42's hot key
    assert (direct.severity, direct.totals.count, direct.totals.windows) == (Severity.HIGH, 40, 2)

    # The service's way: each window evaluated alone in its own run, the sightings kept by the lifecycle, and the
    # week's report: the same cause, shares and severity.
    config = AnalysisConfig()
    aggs, _ = ingest(discover([str(path)]), config)
    states: dict[str, FindingState] = {}
    for window in sorted(aggs.windows.values(), key=lambda w: w.window_start):
        found, _ = evaluate([window], config)
        states.update(reconcile(states, found, T0 + timedelta(hours=1), (), 86_400, {}).states)
    stored = next(s for s in states.values() if s.finding.kind is FindingKind.THROTTLING)
    assert stored.finding.evidence["cause"] == "key_range"  # the latest window's own decision ...
    report = build_weekly_report(list(states.values()), IsoWeek.of(T0), T0 + timedelta(days=7))
    (rf,) = [r for r in report.findings if r.finding.kind is FindingKind.THROTTLING]
    for key in ("cause", "causes", "cause_decided_by"):  # ... the week's: the period's
        assert rf.finding.evidence[key] == direct.evidence[key], key
    assert (rf.finding.title, rf.finding.severity) == (direct.title, direct.severity)
    assert "key range throttles" in rf.finding.recommendation  # the minority cause's own fix is given too


def test_analyze_trail_states_a_finding_seen_when_the_windows_that_found_it_were(tmp_path: Path) -> None:
    from auditor.findings_text import findings_table
    from auditor.formats import asff_finding

    # Orders takes writes from 10:00 to 11:29; its calls are throttled only from 10:30 to 10:44 (one window). The
    # throttling finding is first and last seen in that window, as its totals (and the service's lifecycle, which
    # keeps a finding's first and last sighting) say; its text, the table and ASFF print those times, not the input's.
    records = [_put(T0 + timedelta(seconds=10 * i), f"CUSTOMER#{i % 40}", i) for i in range(540)]
    at = T0 + timedelta(minutes=30)
    records += [_throttled(at + timedelta(seconds=20 * i), f"CUSTOMER#{5000 + i}", 1000 + i) for i in range(30)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"Records": records}))
    (found,) = [f for f in analyze_trail([str(path)]).findings if f.kind is FindingKind.THROTTLING]
    assert found.totals is not None and found.totals.windows == 1
    assert (found.first_seen, found.last_seen) == (found.totals.first_seen, found.totals.last_seen)
    assert (found.first_seen, found.last_seen) == (at, at + timedelta(minutes=14, seconds=50))
    assert (found.totals.period_start, found.totals.period_end) == (T0, T0 + timedelta(minutes=90))
    assert "from 2026-11-30 10:30 to 10:44 UTC" in found.summary
    assert "seen 2026-11-30 10:30 to 2026-11-30 10:44 UTC" in "\n".join(findings_table([found]))
    asff = asff_finding(found, account="111122223333", region="us-east-1", now=T0 + timedelta(hours=2))
    assert (asff["FirstObservedAt"], asff["LastObservedAt"]) == ("2026-11-30T10:30:00Z", "2026-11-30T10:44:50Z")

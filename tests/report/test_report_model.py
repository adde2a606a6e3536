"""The weekly report model: ISO weeks in UTC, lifecycle per week, aggregation, deltas, top actions, cost."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from auditor.exceptions import InputError
from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.report.auditor_cost import AuditorUsage, CostRates, estimate_auditor_cost
from auditor.report.inputs import (
    CapacitySeries,
    ThrottleCount,
    capacity_from_billing_input,
    parse_finding,
    parse_findings_document,
)
from auditor.report.model import IsoWeek, build_report_from_findings, latest_week
from auditor.report.sections import resample_capacity

W49 = IsoWeek(year=2026, week=49)  # Mon 2026-11-30 .. Mon 2026-12-07 (UTC)
MON = datetime(2026, 11, 30, tzinfo=UTC)
NOW = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)


def finding(
    kind: str = "scan",
    severity: str = "high",
    table: str = "Orders",
    *,
    first: datetime = MON + timedelta(days=1),
    last: datetime | None = None,
    evidence: dict[str, Any] | None = None,
    disc: str = "",
    title: str | None = None,
) -> Finding:
    defaults: dict[str, dict[str, Any]] = {
        "scan": {
            "principal": "arn:aws:iam::111122223333:role/job",
            "operation": "Scan",
            "count": 10,
            "source": "cloudtrail",
        },
        "throttling": {
            "cause": "key_range",
            "read_throttle_events": 3,
            "write_throttle_events": 4,
            "source": "cloudtrail",
        },
        "hot_key": {"key": {"pk": "K"}, "share": 0.4, "requests": 100, "window_seconds": 900, "source": "cloudtrail"},
        "billing_mode": {
            "current_mode": "PROVISIONED",
            "recommended_mode": "PAY_PER_REQUEST",
            "monthly_cost_current": 100.0,
            "monthly_cost_recommended": 40.0,
            "monthly_savings": 60.0,
            "days_analyzed": 14.0,
        },
        "table_class": {
            "current_class": "STANDARD",
            "recommended_class": "STANDARD_INFREQUENT_ACCESS",
            "monthly_savings": 5,
        },
        "large_item": {"key": {"id": "A"}, "size_bytes": 380_000, "limit_bytes": 409_600},
        "item_growth": {"key": {"id": "B"}, "size_bytes": 200_000, "bytes_per_day": 10_000, "days_to_limit": 21.0},
        "item_size_exceeded": {"count": 3, "key": {"id": "C"}, "limit_bytes": 409_600},
        "low_cardinality_key": {"distinct_partition_keys": 3, "requests": 5000},
    }
    ev = {**defaults.get(kind, {}), **(evidence or {})}
    return Finding(
        id=fingerprint(kind, "111122223333", "us-east-1", table, None, disc or repr(sorted(ev))),
        kind=FindingKind(kind),
        severity=Severity(severity),
        account="111122223333",
        region="us-east-1",
        table=table,
        title=title or f"{kind} on {table} {disc}".strip(),
        summary="summary",
        recommendation=f"fix {kind} on {table}",
        evidence=ev,
        first_seen=first,
        last_seen=last or first + timedelta(hours=1),
    )


# ---------------------------------------------------------------- weeks


def test_iso_week_boundaries_are_monday_midnight_utc() -> None:
    assert W49.start == datetime(2026, 11, 30, tzinfo=UTC)
    assert W49.end == datetime(2026, 12, 7, tzinfo=UTC)
    assert W49.label == "2026-W49"
    assert IsoWeek.of(datetime(2026, 12, 6, 23, 59, 59, tzinfo=UTC)) == W49
    assert IsoWeek.of(datetime(2026, 12, 7, 0, 0, tzinfo=UTC)).label == "2026-W50"
    assert IsoWeek.of(datetime(2026, 11, 30, 0, 0, tzinfo=UTC)) == W49
    assert IsoWeek.of(datetime(2026, 11, 29, 23, 59, 59, tzinfo=UTC)).label == "2026-W48"


def test_iso_week_uses_utc_not_the_local_offset() -> None:
    # Monday 01:00 in UTC+2 is still Sunday 23:00 UTC: the previous week.
    plus_two = timezone(timedelta(hours=2))
    assert IsoWeek.of(datetime(2026, 12, 7, 1, 0, tzinfo=plus_two)) == W49
    # Sunday 20:00 in UTC-5 is Monday 01:00 UTC: the next week.
    minus_five = timezone(timedelta(hours=-5))
    assert IsoWeek.of(datetime(2026, 12, 6, 20, 0, tzinfo=minus_five)).label == "2026-W50"
    # Naive times are UTC.
    assert IsoWeek.of(datetime(2026, 12, 6, 23, 0)) == W49


def test_iso_week_year_boundaries() -> None:
    # 2026 has 53 ISO weeks; 1 January 2027 (a Friday) belongs to 2026-W53.
    assert IsoWeek.of(datetime(2027, 1, 1, tzinfo=UTC)).label == "2026-W53"
    assert IsoWeek.of(datetime(2027, 1, 4, tzinfo=UTC)).label == "2027-W01"
    assert IsoWeek.parse("2027-W01").previous().label == "2026-W53"
    # 2025-12-29 (a Monday) starts 2026-W01.
    assert IsoWeek.parse("2026-W01").start == datetime(2025, 12, 29, tzinfo=UTC)


@pytest.mark.parametrize("text", ["2026-49", "W49", "2026-W", "2026-Wxx", "2025-W53", "2026-W00", ""])
def test_iso_week_parse_rejects_bad_weeks(text: str) -> None:
    with pytest.raises(InputError, match="week"):
        IsoWeek.parse(text)


def test_iso_week_parse_accepts_lower_case() -> None:
    assert IsoWeek.parse(" 2026-w49 ") == W49


def test_findings_outside_the_week_are_left_out_and_counted() -> None:
    inside_edge = finding(disc="a", first=MON - timedelta(days=3), last=MON)  # last seen exactly at the start
    before = finding(disc="b", first=MON - timedelta(days=3), last=MON - timedelta(seconds=1))
    after = finding(disc="c", first=W49.end, last=W49.end + timedelta(hours=1))
    last_second = finding(disc="d", first=W49.end - timedelta(seconds=1))
    report = build_report_from_findings([inside_edge, before, after, last_second], NOW, week=W49)
    assert {rf.finding.id for rf in report.findings} == {inside_edge.id, last_second.id}
    assert report.findings_outside_week == 2


def test_default_week_is_the_week_containing_now() -> None:
    report = build_report_from_findings([], datetime(2026, 12, 2, 9, 0, tzinfo=UTC))
    assert report.week == W49
    assert report.generated_at == datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def test_latest_week_is_the_week_of_the_newest_last_seen() -> None:
    items = [
        parse_finding(finding(disc="a", first=MON - timedelta(days=9))),
        parse_finding(finding(disc="b", first=MON + timedelta(days=6, hours=22))),
    ]
    assert latest_week(items) == W49
    assert latest_week([]) is None


# ---------------------------------------------------------------- lifecycle


def test_lifecycle_from_times_without_last_week() -> None:
    new = finding(disc="new", first=MON + timedelta(hours=1))
    ongoing = finding(disc="old", first=MON - timedelta(days=10), last=MON + timedelta(days=2))
    report = build_report_from_findings([new, ongoing], NOW, week=W49)
    status = {rf.finding.id: rf.status for rf in report.findings}
    assert status == {new.id: "new", ongoing.id: "ongoing"}
    assert report.summary.new == 1 and report.summary.ongoing == 1
    assert not report.previous_week_available
    assert all(d.previous is None and d.trend == "unknown" for d in report.deltas)


def test_lifecycle_against_last_week() -> None:
    prev_week = MON - timedelta(days=4)
    grew = finding(disc="grew", severity="high", first=prev_week - timedelta(days=1), last=MON + timedelta(days=1))
    grew_before = grew.model_copy(update={"severity": Severity.MEDIUM, "last_seen": prev_week})
    calmer = finding(disc="calm", severity="low", first=prev_week - timedelta(days=1), last=MON + timedelta(days=1))
    calmer_before = calmer.model_copy(update={"severity": Severity.HIGH, "last_seen": prev_week})
    gone = finding(disc="gone", severity="critical", first=prev_week, last=prev_week + timedelta(hours=2))
    report = build_report_from_findings(
        [grew, calmer], NOW, week=W49, previous_findings=[grew_before, calmer_before, gone]
    )
    by_id = {rf.finding.id: rf for rf in report.findings}
    assert by_id[grew.id].status == "worsened"
    assert by_id[grew.id].previous_severity == Severity.MEDIUM
    assert by_id[calmer.id].status == "ongoing"  # a severity drop is not "worsened"
    assert by_id[gone.id].status == "resolved"  # active last week, absent this week
    assert report.summary.resolved == 1
    assert report.summary.open_findings == 2
    # Resolved findings come after every open one.
    assert report.findings[-1].finding.id == gone.id


def test_stored_lifecycle_states_are_understood() -> None:
    f_resolved = finding(disc="r", first=MON - timedelta(days=8), last=MON - timedelta(days=2))
    f_worse = finding(disc="w", severity="high", first=MON - timedelta(days=8), last=MON + timedelta(days=1))
    f_reopened = finding(disc="n", first=MON - timedelta(days=20), last=MON + timedelta(days=1))
    states = [
        # A lifecycle state (FindingState-like): resolved during this week, so it belongs to it.
        {
            "finding": f_resolved.model_dump(mode="json"),
            "status": "resolved",
            "resolved_at": (MON + timedelta(days=1)).isoformat(),
        },
        # A SPEC finding dict with lifecycle keys added: severity above the last published one.
        {**f_worse.model_dump(mode="json"), "status": "ongoing", "published_severity": "medium"},
        # Stored "new" is the lifecycle's word, shown as such however long ago it was first seen (one vocabulary).
        {**f_reopened.model_dump(mode="json"), "status": "new", "unknown_extra": 1},
    ]
    report = build_report_from_findings(states, NOW, week=W49)
    status = {rf.finding.id: rf.status for rf in report.findings}
    assert status == {f_resolved.id: "resolved", f_worse.id: "worsened", f_reopened.id: "new"}
    resolved = next(rf for rf in report.findings if rf.status == "resolved")
    assert resolved.resolved_at == MON + timedelta(days=1)


def test_resolved_after_the_week_is_not_resolved_in_that_week() -> None:
    f = finding(disc="later", first=MON - timedelta(days=3), last=MON + timedelta(days=3))
    state = {"finding": f.model_dump(mode="json"), "status": "resolved", "resolved_at": "2026-12-20T00:00:00Z"}
    report = build_report_from_findings([state], NOW, week=W49)
    assert [rf.status for rf in report.findings] == ["ongoing"]


def test_duplicate_ids_are_merged() -> None:
    a = finding(disc="dup", severity="medium", first=MON + timedelta(days=1), evidence={"count": 5})
    b = a.model_copy(
        update={
            "severity": Severity.HIGH,
            "first_seen": MON + timedelta(days=2),
            "last_seen": MON + timedelta(days=3),
            "evidence": {**a.evidence, "count": 9},
        }
    )
    report = build_report_from_findings([a, b], NOW, week=W49)
    assert len(report.findings) == 1
    merged = report.findings[0].finding
    assert merged.severity == Severity.HIGH
    assert merged.first_seen == a.first_seen
    assert merged.last_seen == b.last_seen
    assert merged.evidence["count"] == 9  # the latest evidence


# ---------------------------------------------------------------- aggregation


def test_sections_aggregate_the_findings() -> None:
    findings = [
        finding("scan", "high", "Sessions", disc="s1", evidence={"count": 300, "per_hour": 12.5}),
        finding("scan", "info", "Sessions", disc="s2", evidence={"principal": None, "count": 2}),
        finding("throttling", "high", "Orders", disc="t1"),
        finding("throttling", "medium", "Orders", disc="t2", evidence={"read_throttle_events": 10}),
        finding("throttling", "medium", "Jobs", disc="t3", evidence={"cause": "unknown"}),
        finding("hot_key", "low", "Orders", disc="h1", evidence={"share": 0.2}),
        finding("hot_key", "high", "Orders", disc="h2", evidence={"key": {"pk": "HOT"}, "share": 0.7}),
        finding("billing_mode", "medium", "Orders", disc="b"),
        finding("table_class", "low", "Logs", disc="c"),
        finding("large_item", "high", "Docs", disc="l"),
        finding("item_growth", "medium", "Docs", disc="g"),
        finding("item_size_exceeded", "high", "Docs", disc="x"),
    ]
    patterns = [
        AccessPattern(
            table="Sessions", index=None, operation="Scan", key_template=None, requests=300, share=0.3, efficient=False
        ),
        AccessPattern(
            table="Sessions",
            index=None,
            operation="GetItem",
            key_template="{uuid}",
            requests=700,
            share=0.7,
            efficient=True,
        ),
        AccessPattern(
            table="Quiet", index=None, operation="GetItem", key_template="Q#{n}", requests=50, share=1.0, efficient=True
        ),
    ]
    report = build_report_from_findings(findings, NOW, week=W49, access_patterns=patterns)

    assert report.summary.open_findings == 12
    assert report.summary.by_severity[Severity.HIGH] == 5
    assert report.summary.monthly_savings == pytest.approx(65.0)
    assert report.summary.tables_with_findings == 5
    assert report.summary.tables_seen == 6  # Quiet has traffic and no findings

    assert [(s.principal_name, s.count) for s in report.scanners] == [("role/job", 300), ("(unknown principal)", 2)]
    # Stored without totals: the window's own rate (evidence per_hour 12.5) is not shown as the period's.
    assert report.scanners[0].per_hour is None

    throttles = {(t.table, t.cause): (t.read_events, t.write_events) for t in report.throttles}
    assert throttles == {("Orders", "key_range"): (13, 8), ("Jobs", "unknown"): (3, 4)}
    assert report.throttles[0].table == "Orders"  # the most events first

    assert [(h.key, h.share) for h in report.hot_keys] == [("pk=HOT", 0.7), ("pk=K", 0.2)]

    items = {r.kind: r for r in report.items}
    assert items[FindingKind.ITEM_SIZE_EXCEEDED].rejected_writes == 3
    assert items[FindingKind.ITEM_SIZE_EXCEEDED].size_bytes is None
    assert items[FindingKind.LARGE_ITEM].percent_of_limit == pytest.approx(100 * 380_000 / 409_600)
    assert items[FindingKind.ITEM_GROWTH].days_to_limit == 21.0
    assert report.items[0].kind == FindingKind.ITEM_SIZE_EXCEEDED  # rejected writes first

    assert [(b.table, b.current, b.recommended, b.monthly_savings) for b in report.billing] == [
        ("Orders", "PROVISIONED", "PAY_PER_REQUEST", 60.0),
        ("Logs", "STANDARD", "STANDARD_INFREQUENT_ACCESS", 5.0),
    ]

    tables = {t.table: t for t in report.tables}
    assert tables["Orders"].open_findings == 5
    assert tables["Orders"].worst == Severity.HIGH
    assert tables["Orders"].monthly_savings == 60.0
    assert tables["Sessions"].requests == 1000
    assert tables["Sessions"].inefficient_share == pytest.approx(0.3)
    assert tables["Quiet"].open_findings == 0 and tables["Quiet"].worst is None
    assert report.tables[-1].table == "Quiet"  # tables without findings come last
    assert [(p.table, p.efficient_requests, p.inefficient_requests) for p in report.pattern_tables] == [
        ("Sessions", 700, 300),
        ("Quiet", 50, 0),
    ]


def test_findings_sort_by_severity_then_money() -> None:
    cheap = finding("billing_mode", "medium", "A", disc="a", evidence={"monthly_savings": 10.0})
    dear = finding("billing_mode", "medium", "B", disc="b", evidence={"monthly_savings": 900.0})
    urgent = finding("scan", "critical", "C", disc="c")
    report = build_report_from_findings([cheap, dear, urgent], NOW, week=W49)
    assert [rf.finding.id for rf in report.findings] == [urgent.id, dear.id, cheap.id]


def test_explicit_throttle_counts_replace_the_findings_counts() -> None:
    rows = [
        ThrottleCount(table="Orders", cause="provisioned", read_events=5),
        ThrottleCount(table="Orders", index="ByStatus", cause="gsi_backpressure", write_events=50),
    ]
    report = build_report_from_findings([finding("throttling", disc="t")], NOW, week=W49, throttles=rows)
    assert [(t.index, t.cause, t.total) for t in report.throttles] == [
        ("ByStatus", "gsi_backpressure", 50),
        (None, "provisioned", 5),
    ]


# ---------------------------------------------------------------- actions and deltas


def test_top_three_actions_by_severity_then_savings() -> None:
    findings = [
        finding("billing_mode", "medium", "Huge", disc="m", evidence={"monthly_savings": 10_000.0}),
        finding("billing_mode", "high", "Small", disc="h1", evidence={"monthly_savings": 50.0}),
        finding("billing_mode", "high", "Big", disc="h2", evidence={"monthly_savings": 500.0}),
        finding("scan", "critical", "Hot", disc="c"),
        finding("scan", "critical", "Gone", disc="r", first=MON - timedelta(days=9), last=MON - timedelta(days=8)),
    ]
    previous = [findings[-1]]
    report = build_report_from_findings(findings[:-1], NOW, week=W49, previous_findings=previous)
    assert [(a.rank, a.table, a.severity.value) for a in report.actions] == [
        (1, "Hot", "critical"),
        (2, "Big", "high"),
        (3, "Small", "high"),
    ]
    assert report.actions[1].monthly_savings == 500.0
    assert report.actions[0].recommendation == "fix scan on Hot"


def test_actions_group_one_kind_on_one_table() -> None:
    a = finding("item_size_exceeded", "high", "Docs", disc="k1", evidence={"key": {"id": "1"}})
    b = finding("item_size_exceeded", "high", "Docs", disc="k2", evidence={"key": {"id": "2"}})
    c = finding("scan", "low", "Docs", disc="s")
    report = build_report_from_findings([a, b, c], NOW, week=W49)
    assert len(report.actions) == 2
    first = report.actions[0]
    assert first.kind == FindingKind.ITEM_SIZE_EXCEEDED
    assert sorted(first.finding_ids) == sorted([a.id, b.id])
    assert "2 findings" in first.headline


def test_no_open_findings_means_no_actions() -> None:
    gone = finding(disc="gone", first=MON - timedelta(days=5), last=MON - timedelta(days=4))
    report = build_report_from_findings([], NOW, week=W49, previous_findings=[gone])
    assert report.actions == []
    assert report.summary.resolved == 1


def test_week_over_week_deltas() -> None:
    prev_time = MON - timedelta(days=3)
    last_week = [
        finding("scan", "high", "A", disc="s", first=prev_time, evidence={"count": 100}),
        finding("billing_mode", "medium", "B", disc="b", first=prev_time, evidence={"monthly_savings": 80.0}),
    ]
    this_week = [
        finding("scan", "high", "A", disc="s", first=prev_time, last=MON + timedelta(days=1), evidence={"count": 40}),
        finding("hot_key", "critical", "C", disc="h"),
    ]
    report = build_report_from_findings(this_week, NOW, week=W49, previous_findings=last_week)
    deltas = {d.metric: d for d in report.deltas}
    assert report.previous_week_available
    assert (deltas["Open findings"].current, deltas["Open findings"].previous) == (2, 2)
    assert deltas["Open findings"].trend == "same"
    assert deltas["Scan calls (CloudTrail)"].change == -60
    assert deltas["Scan calls (CloudTrail)"].trend == "better"
    assert deltas["Scan requests (CloudWatch)"].current == 0
    assert deltas["Hot keys"].change == 1 and deltas["Hot keys"].trend == "worse"
    assert deltas["Critical and high findings"].current == 2
    assert deltas["Potential savings ($/month)"].unit == "usd"
    assert deltas["Potential savings ($/month)"].change == -80.0


def test_previous_findings_outside_last_week_are_ignored() -> None:
    two_weeks_ago = finding(disc="old", first=MON - timedelta(days=14), last=MON - timedelta(days=12))
    report = build_report_from_findings([], NOW, week=W49, previous_findings=[two_weeks_ago])
    assert report.findings == []
    assert {d.metric: d.previous for d in report.deltas}["Open findings"] == 0


# ---------------------------------------------------------------- cost, capacity, parsing


def test_auditor_cost_estimate() -> None:
    usage = AuditorUsage(
        cloudtrail_data_events=38_000_000,
        cloudwatch_metrics_requested=120_000,
        lambda_gb_seconds=40_000,
        lambda_requests=2_000_000,
    )
    cost = estimate_auditor_cost(usage)
    usd = {line.item: line.usd for line in cost.lines}
    assert usd["CloudTrail data events delivered"] == pytest.approx(38.0)  # $0.10 per 100k
    assert usd["CloudWatch GetMetricData"] == pytest.approx(1.20)  # $0.01 per 1,000 metrics
    assert usd["Lambda compute"] == pytest.approx(40_000 * 0.0000133334)
    assert usd["Lambda requests"] == pytest.approx(0.40)
    assert cost.total_usd == pytest.approx(sum(usd.values()))
    custom = estimate_auditor_cost(usage, CostRates(cloudtrail_per_100k_data_events=0.2))
    assert {line.item: line.usd for line in custom.lines}["CloudTrail data events delivered"] == pytest.approx(76.0)
    report = build_report_from_findings([], NOW, week=W49, usage=usage)
    assert report.summary.auditor_cost_usd == pytest.approx(cost.total_usd)
    assert build_report_from_findings([], NOW, week=W49).auditor_cost is None


def test_capacity_resampling_to_hourly_units_per_second() -> None:
    minutes = 7 * 24 * 60
    series = CapacitySeries(
        table="Orders",
        start=MON,
        period_seconds=60,
        consumed_read=[60.0 * (1 if (i // 60) % 2 == 0 else 3) for i in range(minutes)],  # 1 or 3 RCU/s, by hour
        consumed_write=[0.0] * minutes,
        provisioned_read=[10.0] * minutes,
        provisioned_write=None,
    )
    read, write = resample_capacity(series)
    assert read.bucket_seconds == 3600
    assert len(read.times) == 168
    assert read.times[1] - read.times[0] == timedelta(hours=1)
    assert read.consumed[:4] == [pytest.approx(1.0), pytest.approx(3.0), pytest.approx(1.0), pytest.approx(3.0)]
    assert read.provisioned[0] == 10.0
    assert read.peak_utilisation == pytest.approx(0.3)
    assert write.dimension == "write" and write.provisioned[0] is None and write.peak_utilisation is None


def test_capacity_series_validation() -> None:
    with pytest.raises(ValueError, match="provisioned_read has 1 values"):
        CapacitySeries(table="T", start=MON, consumed_read=[1.0, 2.0], provisioned_read=[1.0])


def test_capacity_from_billing_input() -> None:
    doc = {
        "table": "Orders",
        "region": "us-east-1",
        "billing_mode": "PROVISIONED",
        "start": "2026-11-30T00:00:00Z",
        "period_seconds": 300,
        "series": [
            {
                "index": None,
                "consumed_read": [300, 600],
                "consumed_write": [30, 30],
                "provisioned_read": [5, 5],
                "provisioned_write": [1, 1],
            },
            {
                "index": "ByStatus",
                "consumed_read": [3],
                "consumed_write": [3],
                "provisioned_read": None,
                "provisioned_write": None,
            },
        ],
    }
    out = capacity_from_billing_input(doc, "cap.json")
    assert [(s.table, s.index, s.period_seconds) for s in out] == [("Orders", None, 300), ("Orders", "ByStatus", 300)]
    assert out[0].start == MON
    with pytest.raises(InputError, match=r"cap.json: series\[0\]: provisioned_read has 1 values"):
        capacity_from_billing_input({**doc, "series": [{"consumed_read": [1, 2], "provisioned_read": [1]}]}, "cap.json")
    with pytest.raises(InputError, match="billing input document"):
        capacity_from_billing_input([], "cap.json")


def test_parse_findings_document_shapes_and_errors() -> None:
    f = finding(disc="p").model_dump(mode="json")
    pattern = {
        "table": "T",
        "index": None,
        "operation": "GetItem",
        "key_template": None,
        "requests": 1,
        "share": 1.0,
        "efficient": True,
    }
    doc = parse_findings_document({"findings": [f], "access_patterns": [pattern], "stats": {"data_events": 7}}, "in")
    assert len(doc.findings) == 1 and doc.access_patterns[0].table == "T" and doc.stats == {"data_events": 7}
    assert len(parse_findings_document([f], "in").findings) == 1  # a bare list of findings

    with pytest.raises(InputError, match=r"^in: findings\[1\]: kind: Field required"):
        parse_findings_document({"findings": [f, {k: v for k, v in f.items() if k != "kind"}]}, "in")
    with pytest.raises(InputError, match=r"in: findings\[0\]: severity"):
        parse_findings_document([{**f, "severity": "urgent"}], "in")
    with pytest.raises(InputError, match=r"in: findings\[0\]: unknown lifecycle status 'open-ish'"):
        parse_findings_document([{**f, "status": "open-ish"}], "in")
    with pytest.raises(InputError, match="no 'findings' member"):
        parse_findings_document({"stats": {}}, "in")
    with pytest.raises(InputError, match="expected a JSON object"):
        parse_findings_document("text", "in")
    with pytest.raises(InputError, match=r"access_patterns\[0\]: requests"):
        parse_findings_document({"findings": [], "access_patterns": [{**pattern, "requests": "many"}]}, "in")
    with pytest.raises(InputError, match=r"findings\[0\]: expected a finding object"):
        parse_findings_document([42], "in")


def test_the_report_speaks_the_lifecycles_status_words() -> None:
    """One vocabulary: the report's labels are the lifecycle's four words, and a stored status is shown as stored."""
    from auditor.lifecycle import FindingStatus
    from auditor.report.report_pages import STATUS_LABELS, render_markdown

    assert {label.lower() for label in STATUS_LABELS.values()} == {s.value for s in FindingStatus}
    old = finding(disc="n", first=MON - timedelta(days=20), last=MON + timedelta(days=1))
    report = build_report_from_findings([{**old.model_dump(mode="json"), "status": "new"}], NOW, week=W49)
    md = render_markdown(report)
    assert "### New (1)" in md and "### Ongoing (0)" in md and "this week ·" not in md and "· new ·" in md


def test_the_savings_headline_counts_every_dollar_found_with_a_breakdown() -> None:
    """Billing, table class, idle tables and unused indexes all count; a preliminary one does not."""
    found = [
        finding("billing_mode"),
        finding("table_class"),
        finding("idle_table", "medium", "Archive2024", evidence={"monthly_cost": 66.43, "days_idle": 30}),
        finding("unused_index", "low", "Jobs", evidence={"monthly_cost": 12.0, "days_analyzed": 30}),
        finding("billing_mode", "info", "Users", evidence={"preliminary": True, "monthly_savings": 999.0}),
    ]
    report = build_report_from_findings(found, NOW, week=W49)
    assert report.summary.monthly_savings == pytest.approx(60.0 + 5 + 66.43 + 12.0)
    assert report.summary.savings_breakdown == {
        "idle tables": 66.43,
        "billing mode": 60.0,
        "unused indexes": 12.0,
        "table class": 5.0,
    }
    from auditor.report.report_pages import render_markdown

    md = render_markdown(report)
    assert "$143/month" in md
    assert "Potential savings per month: idle tables $66, billing mode $60, unused indexes $12, table class $5." in md


def test_a_throttled_tables_capacity_advice_is_held() -> None:
    """Orders throttles this week: its right-sizing (lower, reserved capacity) is not advised and saves nothing."""
    advice = {"recommended_mode": "PROVISIONED", "current_mode": "PROVISIONED", "monthly_savings": 524.51}
    found = [finding("throttling", "critical"), finding("billing_mode", "low", evidence=advice)]
    report = build_report_from_findings(found, NOW, week=W49)
    (row,) = report.billing
    assert row.monthly_savings == 0.0 and row.change.startswith("not advised: the table throttled")
    assert report.summary.monthly_savings == 0.0
    calm = build_report_from_findings([finding("billing_mode", "low", evidence=advice)], NOW, week=W49)
    assert calm.summary.monthly_savings == pytest.approx(524.51)  # no throttling: the advice stands


def test_the_auditors_cost_is_the_ledgers_one_figure_when_the_service_kept_a_ledger() -> None:
    """Issue 30/31: one cost of auditing, stated the same in the headline, the cost table and the ledger table. With a
    ledger, a usage priced apart (here only data events: Lambda and GetMetricData would read 0 although they ran) is
    not a second figure."""
    from datetime import date

    from auditor.cost.cost_model import SHARED, LedgerEntry, Spend, summarise
    from auditor.report.report_pages import money, render_html, render_markdown

    day = date(2026, 12, 1)
    entries = [
        LedgerEntry(
            day=day,
            table="Orders",
            dynamodb=Spend(lines={"reads": 1.5, "writes": 0.7}),
            auditor=Spend(lines={"cloudtrail_data_events": 0.11, "lambda": 0.01, "cloudwatch_metrics": 0.0008}),
        ),
        LedgerEntry(day=day, table=SHARED, dynamodb=Spend(lines={}), auditor=Spend(lines={"dashboards": 0.1})),
    ]
    ledger = summarise(entries)
    assert ledger is not None
    report = build_report_from_findings(
        [], NOW, week=W49, usage=AuditorUsage(cloudtrail_data_events=109_336), ledger=ledger
    )
    assert report.auditor_cost is not None
    assert report.summary.auditor_cost_usd == pytest.approx(ledger.total.auditor_usd)
    assert report.auditor_cost.total_usd == pytest.approx(ledger.total.auditor_usd)
    assert sum(line.usd for line in report.auditor_cost.lines) == pytest.approx(ledger.total.auditor_usd)
    assert {line.item for line in report.auditor_cost.lines} == {
        "CloudTrail data events",
        "Lambda (compute and requests)",
        "CloudWatch GetMetricData",
        "CloudWatch dashboard",
    }
    figure = money(ledger.total.auditor_usd)
    md, html = render_markdown(report), render_html(report)
    about = md[md.index("## About this report") :]
    assert f"(2026-12-01, the service's daily ledger): **{figure}**" in about
    assert f"| **Total** | **{figure}** |" in about
    assert "0 invocations" not in md and "0 metrics requested" not in md
    assert f"| {figure} |" in md[: md.index("### The three")]  # the headline's card
    assert f"2026-12-01, the service&#39;s daily ledger: {figure})</caption>" in html
    assert f'<span class="value">{figure}</span>' in html  # the headline's card


def test_the_ledgers_ratio_is_stated_over_the_priced_hours_only() -> None:
    """Issue 30/31: the ledger's auditor side covers the days (fixed costs, every data-event window), its DynamoDB side
    the hours the metrics audit priced; the report states both with their periods and the ratio over the priced hours
    only (the auditor's cost in them), in Markdown and HTML; with no priced hour it states no ratio."""
    from datetime import date

    from auditor.cost.cost_model import SHARED, LedgerEntry, Spend, summarise
    from auditor.report.report_pages import money, pct, render_html, render_markdown

    day, hour = date(2026, 12, 1), 1_764_561_600  # 2026-12-01 04:00 UTC

    def ledger(hours: tuple[int, ...]) -> Any:
        return summarise(
            [
                LedgerEntry(
                    day=day,
                    table="Orders",
                    dynamodb=Spend(lines={"reads": 2.0} if hours else {}),
                    auditor=Spend(lines={"cloudtrail_data_events": 0.40, "cloudwatch_metrics": 0.001}),
                    hours=hours,
                    in_hours=Spend(
                        lines={"cloudtrail_data_events": 0.02, "cloudwatch_metrics": 0.001} if hours else {}
                    ),
                ),
                LedgerEntry(
                    day=day,
                    table=SHARED,
                    dynamodb=Spend(lines={}),
                    auditor=Spend(lines={"dashboards": 0.24}),
                    hours=hours,
                    in_hours=Spend(lines={"dashboards": 0.24 * len(hours) / 24}),
                ),
            ]
        )

    priced = ledger((hour,))
    assert priced.total.ratio == pytest.approx(0.031 / 2.0)  # not 0.641 / 2.0: a day against an hour
    report = build_report_from_findings([], NOW, week=W49, ledger=priced)
    md, html = render_markdown(report), render_html(report)
    figure, matched, ratio = money(priced.total.auditor_usd), money(0.031), pct(0.031 / 2.0)
    assert f"| **Total** | **{figure}** | **$2.00** | **1** | **{matched}** | **{ratio}** |" in md
    assert f"Ratio: **{ratio}** in total over the 1 priced hour." in md
    assert "covers the 1 priced hour" in md and "pro-rated" in md
    assert '<td class="num">1</td>' in html and f"{ratio} in total over the 1 priced hour" in html
    assert pct(0.641 / 2.0) not in md + html

    unpriced = ledger(())
    assert unpriced.total.ratio is None
    md = render_markdown(build_report_from_findings([], NOW, week=W49, ledger=unpriced))
    assert "No ratio: no hour of DynamoDB spend was priced" in md
    assert f"| **Total** | **{money(unpriced.total.auditor_usd)}** | **$0.00** | **0** | **$0.00** | **-** |" in md

"""One story per problem: throttling seen by several sources is one finding; CloudWatch's scan volume goes onto the
CloudTrail scan findings that name the scanners. The inputs are the real detectors' findings (CloudWatch metrics
detectors on planted series, CloudTrail detectors on aggregated calls). No AWS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from auditor.config import AnalysisConfig
from auditor.detectors.base import InsightsInput, MetricsInput
from auditor.detectors.findings import scan_volume, throttling_story
from auditor.detectors.insights import hot_key as ci_hot_key
from auditor.detectors.metrics import scan as cw_scan
from auditor.detectors.metrics import throttling as cw_throttling
from auditor.detectors.trail import scan, throttling
from auditor.engine import evaluate
from auditor.lifecycle import add_sightings, iso_week, transition
from auditor.models.finding import Finding, FindingKind, Severity, isoformat_z
from auditor.models.metrics import CAUSE_METRICS, SCAN_REQUESTS, InsightContributor, InsightReport
from auditor.report.model import build_report_from_findings
from auditor.service.record import carry_over
from tests.detectors.test_cw_detectors import T0, metrics, profile, put
from tests.factories import T0 as TRAIL_T0
from tests.factories import call, span

PTE = "ProvisionedThroughputExceededException"
GENERIC_PTE = "The level of configured provisioned throughput for the table was exceeded."
REASON_PTE = "Throughput exceeds the current capacity of your table. TableWriteProvisionedThroughputExceeded"
CLEANER = "arn:aws:iam::111122223333:role/session-cleaner"
ALICE = "arn:aws:iam::111122223333:user/alice"


def cw_key_range(writes_per_minute: float = 180.0, minutes: int = 12) -> list[Finding]:
    """CloudWatch: the per-cause metric says key range, ``minutes`` x ``writes_per_minute`` events."""
    p = profile(write=1000)
    tm = metrics(p)
    put(tm, "WriteThrottleEvents", range(0, minutes), writes_per_minute)
    put(tm, CAUSE_METRICS["key_range"]["write"], range(0, minutes), writes_per_minute)
    return cw_throttling.detect(MetricsInput(p, tm))


#: Seconds from the factories' T0 (CloudTrail calls) to the metrics' T0: calls at OFFSET are in the metrics' hour.
OFFSET = T0 - TRAIL_T0.timestamp()
#: When the report is made: the week of the metrics' T0.
REPORT_AT = datetime.fromtimestamp(T0 + 7200, UTC)


def ct_hot_partition(at: float = OFFSET) -> list[Finding]:
    """CloudTrail: 40 + 2 generic PTEs concentrated on one key (key range by inference) among healthy traffic,
    ``at`` seconds after the factories' T0."""
    calls = [call("GetItem", key={"pk": f"K{i % 500}"}, at=at + i * 0.1) for i in range(5000)]
    calls += [call("PutItem", key={"pk": "HOT"}, at=at + i * 0.1) for i in range(500)]
    calls += [call("PutItem", key={"pk": "HOT"}, at=at + i, error=PTE, message=GENERIC_PTE) for i in range(40)]
    calls += [call("PutItem", key={"pk": "K1"}, at=at + i, error=PTE, message=GENERIC_PTE) for i in range(2)]
    return throttling.detect(span(calls), throttling.ThrottlingConfig())


def only_throttling(findings: list[Finding]) -> Finding:
    found = [f for f in findings if f.kind is FindingKind.THROTTLING]
    assert len(found) == 1, [f.title for f in found]
    return found[0]


# --------------------------------------------------------------------------------------------- one story


def test_throttling_seen_by_cloudwatch_and_cloudtrail_is_one_finding_with_each_sources_count() -> None:
    cw, ct = cw_key_range(), ct_hot_partition()
    assert len(cw) == 1 and len(ct) == 1 and cw[0].id != ct[0].id  # two detectors' views of one problem
    story = only_throttling(throttling_story.merge_throttling([*cw, *ct]))
    assert story.id == throttling_story.story_id("111122223333", "us-east-1", "Orders", None)
    ev = story.evidence
    assert ev["sources"]["cloudwatch"]["events"] == 12 * 180 == 2160
    assert ev["sources"]["cloudtrail"]["events"] == 42
    # The top-level counts and totals are one source's (CloudWatch's), never the sum of both.
    assert (ev["write_throttle_events"], ev["read_throttle_events"], ev["source"]) == (2160, 0, "cloudwatch")
    assert story.totals is not None and story.totals.count == 2160
    assert story.totals.by_source is not None
    assert {s: t.count for s, t in story.totals.by_source.items()} == {"cloudwatch": 2160, "cloudtrail": 42}
    assert "2,202" not in story.summary and "2202" not in story.summary
    assert "CloudWatch counted 2,160 throttle events" in story.summary
    assert "CloudTrail logged 42 throttled calls" in story.summary
    # CloudWatch's per-cause metric decided the cause, and the finding says so.
    decided = (ev["cause"], ev["cause_decided_by"], ev["cause_decided_in"], ev["cause_source"])
    assert decided == ("key_range", "cloudwatch_cause_metrics", "cloudwatch", "cause_metrics")
    assert ev["causes"] == [{"cause": "key_range", "events": 2160, "share": 1.0, "decided_by": "cause_metrics"}]
    assert "decided by CloudWatch's per-cause throttle metrics" in story.summary
    assert not story.missing_evidence()


def test_cloudtrail_error_details_decide_over_cloudwatch_inference() -> None:
    p = profile(write=100)  # throttled far below capacity: CloudWatch infers a hot partition
    tm = metrics(p)
    put(tm, "WriteThrottleEvents", range(0, 5), 30)
    put(tm, "ConsumedWriteCapacityUnits", range(0, 5), 600)
    cw = cw_throttling.detect(MetricsInput(p, tm))
    assert [f.evidence["cause_source"] for f in cw] == ["inferred_low_utilisation"]
    ct = throttling.detect(
        span([call("PutItem", key={"pk": f"K{i}"}, at=i, error=PTE, message=REASON_PTE) for i in range(20)]),
        throttling.ThrottlingConfig(),
    )
    assert [f.evidence["cause_source"] for f in ct] == ["throttling_reasons"]
    story = only_throttling(throttling_story.merge_throttling([*cw, *ct]))
    assert (story.evidence["cause"], story.evidence["cause_decided_by"]) == ("provisioned", "cloudtrail_error_details")
    assert (story.evidence["cause_decided_in"], story.evidence["cause_source"]) == ("cloudtrail", "throttling_reasons")
    # The counts still come from CloudWatch, which counts every throttled request.
    assert (story.evidence["source"], story.evidence["write_throttle_events"]) == ("cloudwatch", 150)
    assert story.evidence["sources"]["cloudwatch"]["causes"] == {"key_range": 150}


#: DynamoDB's own messages, word for word (the API Reference, TransactWriteItems "Errors"; docs/capacity.md lists
#: them): an on-demand GSI's back-pressure on a base-table write, and a provisioned table's exhausted throughput.
GSI_ON_DEMAND = (
    "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically "
    "scaling your index so please try again shortly."
)
TABLE_PROVISIONED = (
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning "
    "level with the UpdateTable API."
)


@pytest.mark.parametrize(
    ("code", "message", "cause"),
    [
        ("ThrottlingException", GSI_ON_DEMAND, "gsi_backpressure"),
        (PTE, TABLE_PROVISIONED, "provisioned"),  # too few keys to tell a hot partition: the code and message decide
    ],
)
def test_a_cause_named_by_the_logged_error_is_decided_by_cloudtrails_error_details(
    code: str, message: str, cause: str
) -> None:
    calls = [call("PutItem", key=None, at=i, error=code, message=message) for i in range(20)]
    story = only_throttling(
        throttling_story.merge_throttling(throttling.detect(span(calls), throttling.ThrottlingConfig()))
    )
    ev = story.evidence
    assert (ev["cause"], ev["cause_source"], ev["causes"][0]["decided_by"]) == (cause, "error_message", "error_message")
    assert (ev["cause_decided_by"], ev["cause_decided_in"]) == ("cloudtrail_error_details", "cloudtrail")
    assert "decided by CloudTrail's error details" in story.summary


def test_between_inferences_cloudtrails_keys_decide_over_cloudwatchs_utilisation() -> None:
    p = profile(write=100)
    tm = metrics(p)
    put(tm, "WriteThrottleEvents", range(0, 5), 30)
    put(tm, "ConsumedWriteCapacityUnits", range(0, 5), 5_400)  # at capacity: CloudWatch infers provisioned
    cw = cw_throttling.detect(MetricsInput(p, tm))
    story = only_throttling(throttling_story.merge_throttling([*cw, *ct_hot_partition()]))
    assert (story.evidence["cause"], story.evidence["cause_decided_by"]) == ("key_range", "inference")
    assert (story.evidence["cause_decided_in"], story.evidence["cause_source"]) == (
        "cloudtrail",
        "concentrated_on_keys",
    )
    assert story.evidence["sources"]["cloudwatch"]["causes"] == {"provisioned": 150}


def test_several_causes_of_one_source_are_one_finding_with_their_shares() -> None:
    p = profile(write=100)
    tm = metrics(p)
    put(tm, "WriteThrottleEvents", range(0, 5), 40)
    put(tm, CAUSE_METRICS["key_range"]["write"], range(0, 5), 30)
    put(tm, CAUSE_METRICS["provisioned"]["write"], range(0, 5), 10)
    cw = cw_throttling.detect(MetricsInput(p, tm))
    assert sorted(f.evidence["cause"] for f in cw) == ["key_range", "provisioned"]
    [story] = throttling_story.merge_throttling(cw)
    assert [(c["cause"], c["events"], c["share"]) for c in story.evidence["causes"]] == [
        ("key_range", 150, 0.75),
        ("provisioned", 50, 0.25),
    ]
    assert story.title == "Throttling on Orders (key range 75%, provisioned 25%)"
    assert story.totals is not None and story.totals.count == 200 and story.totals.windows == 1
    assert "For the provisioned throttles:" in story.recommendation


def test_indexes_are_their_own_stories_and_ids_are_stable_whatever_the_cause() -> None:
    p = profile(write=100, gsis=("ByStatus",))
    tm = metrics(p)
    put(tm, "WriteThrottleEvents", range(0, 5), 30, index="ByStatus")
    put(tm, CAUSE_METRICS["provisioned"]["write"], range(0, 5), 30, index="ByStatus")
    put(tm, CAUSE_METRICS["key_range"]["write"], range(10, 15), 20)
    put(tm, "WriteThrottleEvents", range(10, 15), 20)
    stories = throttling_story.merge_throttling(cw_throttling.detect(MetricsInput(p, tm)))
    by_index = {f.index: f for f in stories}
    assert set(by_index) == {None, "ByStatus"}
    assert by_index["ByStatus"].id == throttling_story.story_id("111122223333", "us-east-1", "Orders", "ByStatus")
    # The same place with another cause keeps the id: dedup in the state table does not depend on the cause.
    again = throttling_story.merge_throttling(cw_key_range())
    assert only_throttling(again).id == by_index[None].id


def test_contributor_insights_throttled_keys_join_the_story_and_stay_hot_keys() -> None:
    p = profile(write=1000, ci="ENABLED")
    report = InsightReport(
        table="Orders",
        index=None,
        rule_name="DynamoDBContributorInsights-PKT-Orders-1",
        rule_kind="PKT",
        start=T0,
        end=T0 + 3600,
        period=60,
        aggregate_value=1000.0,
        unique_contributors=3,
        contributors=(InsightContributor(keys=("CUSTOMER#42",), aggregate=900.0, datapoints=((T0, 900.0),)),),
        key_labels=("pk",),
    )
    ci = ci_hot_key.detect(InsightsInput([report], {"Orders": p}))
    assert [f.kind for f in ci] == [FindingKind.HOT_KEY]
    merged = throttling_story.merge_throttling([*cw_key_range(), *ci])
    assert [f.kind for f in merged] == [FindingKind.THROTTLING, FindingKind.HOT_KEY]
    block = merged[0].evidence["sources"]["contributor_insights"]
    assert block["events"] == 1000 and block["keys"][0]["throttled_requests"] == 900
    assert merged[0].evidence["source"] == "cloudwatch" and merged[0].totals is not None
    assert merged[0].totals.count == 2160  # Contributor Insights' approximate count is stated, not counted
    assert "Contributor Insights counted about 1,000 throttled requests" in merged[0].summary
    # Contributor Insights alone makes no throttling story: its hot-key finding tells it.
    assert throttling_story.merge_throttling(ci) == ci


def test_analyze_trail_path_merges_causes_of_one_table() -> None:
    calls = [call("PutItem", key={"pk": "CUSTOMER#42"}, at=i, error=PTE, message=GENERIC_PTE) for i in range(12)]
    calls += [
        call(
            "GetItem",
            key={"pk": "CUSTOMER#42"},
            at=i,
            error="ThrottlingException",
            message=("Throughput exceeds the current capacity. TableReadKeyRangeThroughputExceeded"),
        )
        for i in range(3)
    ]
    agg = span(calls)
    assert len(throttling.detect(agg, throttling.ThrottlingConfig())) == 2  # two causes
    findings, errors = evaluate([agg], AnalysisConfig())
    story = only_throttling(findings)
    assert not errors
    assert story.evidence["sources"]["cloudtrail"]["events"] == 15
    assert story.totals is not None and story.totals.count == 15 and story.totals.windows == 1


# --------------------------------------------------------------------------------------------- service lifecycle


def test_the_service_keeps_one_story_across_runs_with_each_sources_weekly_count() -> None:
    """The evaluator records CloudTrail's part; the metrics audit's CloudWatch part joins the same stored finding."""
    # CloudTrail's throttled calls in the same hour as CloudWatch's throttle events (the metrics' T0).
    ct_story = only_throttling(throttling_story.merge_throttling(ct_hot_partition()))
    cw_story = only_throttling(throttling_story.merge_throttling(cw_key_range()))
    # The two runs' sightings have one id (the metrics audit audits the same account and Region).
    assert ct_story.id == cw_story.id
    now = cw_story.last_seen + timedelta(hours=1)
    first = transition(None, ct_story, now=now, resolve_after_seconds=86_400, horizon=None)
    assert first is not None
    stored = first.state
    seen = carry_over(stored.finding, cw_story, 86_400)
    assert set(seen.evidence["sources"]) == {"cloudwatch", "cloudtrail"}
    second = transition(stored, seen, now=now, resolve_after_seconds=86_400, horizon=None)
    assert second is not None and second.state.status.value == "ongoing"
    finding = second.state.finding
    assert finding.evidence["sources"]["cloudtrail"]["events"] == 42
    assert finding.evidence["sources"]["cloudwatch"]["events"] == 2160
    week = second.state.weekly_totals[iso_week(cw_story.first_seen)]
    assert week.by_source is not None
    assert {s: t.count for s, t in week.by_source.items()} == {"cloudtrail": 42, "cloudwatch": 2160}
    assert week.count == 2160  # CloudWatch's, not 2,202
    # The evaluator sights CloudTrail again, later: its count grows on its own; CloudWatch's part stays.
    later = ct_story.model_copy(
        update={
            "first_seen": ct_story.first_seen + timedelta(minutes=15),
            "last_seen": ct_story.last_seen + timedelta(minutes=15),
            "totals": ct_story.totals.model_copy(  # type: ignore[union-attr]
                update={
                    "by_source": {
                        "cloudtrail": ct_story.totals.by_source["cloudtrail"].model_copy(  # type: ignore[union-attr,index]
                            update={
                                "first_seen": ct_story.first_seen + timedelta(minutes=15),
                                "last_seen": ct_story.last_seen + timedelta(minutes=15),
                            }
                        )
                    }
                }
            ),
        }
    )
    third = transition(
        second.state, carry_over(finding, later, 86_400), now=now, resolve_after_seconds=86_400, horizon=None
    )
    assert third is not None
    again = third.state.weekly_totals[iso_week(cw_story.first_seen)]
    assert again.by_source is not None
    assert {s: t.count for s, t in again.by_source.items()} == {"cloudtrail": 84, "cloudwatch": 2160}
    assert set(third.state.finding.evidence["sources"]) == {"cloudwatch", "cloudtrail"}
    # Re-evaluating a window already counted adds nothing to either source.
    same = add_sightings(third.state.weekly_totals, [cw_story.sighting_totals()])
    assert same == third.state.weekly_totals


def test_a_stored_source_older_than_the_resolve_time_is_not_carried() -> None:
    ct_story = only_throttling(throttling_story.merge_throttling(ct_hot_partition()))
    cw_story = only_throttling(throttling_story.merge_throttling(cw_key_range()))
    stored = throttling_story.with_stored(cw_story, ct_story, 10**9)
    assert set(stored.evidence["sources"]) == {"cloudwatch", "cloudtrail"}
    late = ct_story.model_copy(update={"last_seen": ct_story.last_seen + timedelta(days=400)})
    assert set(throttling_story.with_stored(stored, late, 86_400).evidence["sources"]) == {"cloudtrail"}


# --------------------------------------------------------------------------------------------- scan volume


def _cw_scan_finding() -> Finding:
    p = profile(name="Sessions", mode="PAY_PER_REQUEST")
    tm = metrics(p)
    put(tm, SCAN_REQUESTS, range(0, 60), 12, operation="Scan", stat="SampleCount")
    [f] = cw_scan.detect(MetricsInput(p, tm))
    return f


def _ct_scan_findings() -> list[Finding]:
    calls = [call("Scan", table="Sessions", at=OFFSET + i * 5, principal=CLEANER) for i in range(700)]
    calls += [call("Scan", table="Sessions", at=OFFSET + t, principal=ALICE) for t in (100, 700)]
    return scan.detect(span(calls, window_seconds=3600), scan.ScanConfig())


def test_cloudwatch_scan_volume_is_attached_to_the_principals_cloudtrail_names() -> None:
    cw = _cw_scan_finding()
    assert cw.evidence["principal"] is None and cw.evidence["count"] == 720
    ct = _ct_scan_findings()
    out = scan_volume.attach_scan_volume([cw, *ct])
    assert cw.id not in {f.id for f in out}
    assert len(out) == 2
    by_principal = {f.evidence["principal"]: f for f in out}
    cleaner = by_principal[CLEANER]
    volume = cleaner.evidence["cloudwatch_scans"]
    assert volume["count"] == 720
    assert volume["attributed_pages"] == 702
    # Each count with its own period: CloudTrail's is the findings' window (here the whole hour of calls).
    assert volume["attributed_start"] == isoformat_z(min(f.first_seen for f in ct))
    assert volume["attributed_end"] == isoformat_z(max(f.last_seen for f in ct))
    assert [p["principal"] for p in volume["principals"]] == [CLEANER, ALICE]
    assert "CloudWatch counted 720 Scan requests on the table" in cleaner.summary
    assert "CloudTrail attributes 702 Scan requests to session-cleaner (700) and alice (2)" in cleaner.summary
    assert by_principal[ALICE].evidence["cloudwatch_scans"] == volume
    # Attaching twice does not repeat the sentence.
    twice = scan_volume.attach_scan_volume([cw, *out])
    assert [f.summary.count("CloudWatch counted") for f in twice] == [1, 1]


def test_a_table_cloudtrail_does_not_show_scanning_keeps_the_cloudwatch_finding() -> None:
    cw = _cw_scan_finding()
    other = [f.model_copy(update={"table": "Users"}) for f in _ct_scan_findings()]
    assert scan_volume.attach_scan_volume([cw, *other]) == [cw, *other]


def test_the_scan_volume_stays_on_a_later_cloudtrail_sighting() -> None:
    attached = scan_volume.attach_scan_volume([_cw_scan_finding(), *_ct_scan_findings()])
    fresh = next(f for f in _ct_scan_findings() if f.evidence["principal"] == CLEANER)
    stored = next(f for f in attached if f.evidence["principal"] == CLEANER)
    kept = carry_over(stored, fresh, 86_400)
    assert kept.evidence["cloudwatch_scans"] == stored.evidence["cloudwatch_scans"]
    assert kept.summary.count("CloudWatch counted") == 1
    # A CloudWatch count older than the resolve time is history: a later sighting does not carry it.
    later = fresh.model_copy(update={"last_seen": fresh.last_seen + timedelta(days=3)})
    assert "cloudwatch_scans" not in carry_over(stored, later, 86_400).evidence


def test_weekly_report_shows_no_unknown_principal_for_attributed_scans_and_states_sources() -> None:
    cw, ct = _cw_scan_finding(), _ct_scan_findings()
    story = only_throttling(throttling_story.merge_throttling([*cw_key_range(), *ct_hot_partition()]))
    report = build_report_from_findings([cw, *ct, story], REPORT_AT)
    assert [r.principal_name for r in report.scanners] == ["role/session-cleaner", "user/alice"]
    assert all(r.principal is not None for r in report.scanners)
    throttles = {(t.table, t.cause, t.source): t.total for t in report.throttles}
    assert throttles == {("Orders", "key_range", "cloudwatch"): 2160}
    deltas = {d.metric: d.current for d in report.deltas}
    assert deltas["Throttle events (CloudWatch)"] == 2160
    assert deltas["Throttled calls (CloudTrail)"] == 42
    assert deltas["Scan calls (CloudTrail)"] == 702
    assert "Scan calls in findings" not in deltas
    # Without CloudTrail's scanners the CloudWatch count stays, labelled as CloudWatch's.
    alone = build_report_from_findings([cw], REPORT_AT)
    assert [r.principal_name for r in alone.scanners] == ["(not logged: CloudWatch's count)"]
    assert {d.metric: d.current for d in alone.deltas}["Scan requests (CloudWatch)"] == 720


def test_merging_keeps_other_findings_and_their_order() -> None:
    ct = _ct_scan_findings()
    cw = cw_key_range()
    merged = throttling_story.merge_throttling([ct[0], *cw, ct[1]])
    assert [f.kind for f in merged] == [FindingKind.SCAN, FindingKind.THROTTLING, FindingKind.SCAN]
    assert merged[1].severity in (Severity.MEDIUM, Severity.HIGH)


def test_each_window_is_its_own_sighting_and_the_period_sums_them() -> None:
    """Windows evaluated together (analyze-trail's per-window pass) each give their own story sighting; the input's
    story totals sum them, as the service sums its windows."""
    from auditor.engine import period_totals
    from auditor.kernel.aggregates.window import AggregateSet

    cfg = AnalysisConfig()
    aggs = AggregateSet(cfg.window_seconds)
    for start in (0, 3600):  # two windows an hour apart, 12 and 30 throttled calls
        for i in range(12 if start == 0 else 30):
            aggs.add(call("PutItem", key={"pk": f"K{i}"}, at=start + i, error=PTE, message=REASON_PTE))
    per_window, _ = evaluate(list(aggs.windows.values()), cfg)
    stories = [f for f in per_window if f.kind is FindingKind.THROTTLING]
    assert len(stories) == 2 and len({f.id for f in stories}) == 1
    assert sorted(f.evidence["sources"]["cloudtrail"]["events"] for f in stories) == [12, 30]
    whole, _ = evaluate(aggs.spans(), cfg)
    [story] = period_totals([f for f in whole if f.kind is FindingKind.THROTTLING], aggs, cfg)
    assert story.totals is not None and (story.totals.count, story.totals.windows) == (42, 2)
    assert story.totals.by_source is not None and story.totals.by_source["cloudtrail"].windows == 2


def test_report_merges_an_audit_and_an_analyze_trail_output_into_one_story() -> None:
    """``report --findings audit.json --findings trail.json``: one throttling finding with both sources' parts."""
    from auditor.report.inputs import FindingInput, FindingsDocument, merge_findings_documents

    cw = only_throttling(throttling_story.merge_throttling(cw_key_range()))
    ct = only_throttling(throttling_story.merge_throttling(ct_hot_partition()))
    merged = merge_findings_documents([FindingsDocument(findings=[FindingInput(finding=f)]) for f in (cw, ct)]).findings
    assert len(merged) == 1
    story = merged[0].finding
    assert set(story.evidence["sources"]) == {"cloudwatch", "cloudtrail"}
    assert story.totals is not None and story.totals.by_source is not None
    assert {s: t.count for s, t in story.totals.by_source.items()} == {"cloudwatch": 2160, "cloudtrail": 42}
    assert story.totals.count == 2160

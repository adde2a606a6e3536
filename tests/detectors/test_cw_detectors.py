"""CloudWatch-side detectors: throttling by cause (metrics, inference, persistence, GSI back-pressure), scans,
unused indexes, Contributor Insights hot keys and the correlation with the CloudTrail path. No AWS."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from auditor.detectors.base import InsightsInput, MetricsInput
from auditor.detectors.findings import correlate
from auditor.detectors.insights import hot_key as ci_hot_key
from auditor.detectors.metrics import scan as cw_scan
from auditor.detectors.metrics import throttling as cw_throttling
from auditor.detectors.metrics import unused_index
from auditor.detectors.metrics.common import longest_run
from auditor.detectors.registry import all_detectors
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.models.inventory import Capacity, ContributorInsights, IndexProfile, TableProfile
from auditor.models.metrics import (
    CAUSE_METRICS,
    CONSUMED,
    SCAN_REQUESTS,
    ApiStats,
    InsightContributor,
    InsightReport,
    MetricSeries,
    SeriesKey,
    TableMetrics,
)

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z, a 5-minute boundary
HOUR = 3600


def profile(
    name: str = "Orders",
    mode: str = "PROVISIONED",
    read: int = 100,
    write: int = 100,
    gsis: tuple[str, ...] = (),
    od_max_write: int | None = None,
    table_class: str = "STANDARD",
    ci: str = "DISABLED",
) -> TableProfile:
    on_demand = mode == "PAY_PER_REQUEST"
    cap = Capacity(
        provisioned_read=0 if on_demand else read,
        provisioned_write=0 if on_demand else write,
        on_demand_max_write=od_max_write,
    )
    return TableProfile(
        name=name,
        account="111122223333",
        region="us-east-1",
        arn=f"arn:aws:dynamodb:us-east-1:111122223333:table/{name}",
        billing_mode=mode,  # type: ignore[arg-type]
        table_class=table_class,
        partition_key="pk",
        capacity=cap,
        contributor_insights=ContributorInsights(status=ci),
        indexes=tuple(
            IndexProfile(
                name=g,
                type="GSI",
                partition_key="status",
                projection="ALL",
                capacity=Capacity(provisioned_read=0 if on_demand else 50, provisioned_write=0 if on_demand else 50),
            )
            for g in gsis
        ),
    )


def metrics(p: TableProfile, seconds: int = HOUR, period: int = 60) -> TableMetrics:
    tm = TableMetrics(p.name, T0, T0 + seconds, period)
    for index in (None, *(g.name for g in p.gsis)):
        tm.resource(index)
    return tm


def put(
    tm: TableMetrics,
    metric: str,
    minutes: dict[int, float] | range,
    value: float = 0.0,
    index: str | None = None,
    operation: str | None = None,
    stat: str = "Sum",
    period: int = 60,
) -> None:
    """Datapoints at ``T0 + minute * 60`` (a range gives every minute the same ``value``)."""
    points = dict.fromkeys(minutes, value) if isinstance(minutes, range) else minutes
    key = SeriesKey(metric, tm.table, index, operation, stat, period)
    tm.resource(index).series[key.name] = MetricSeries(key, {T0 + m * 60: float(v) for m, v in points.items()})


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, [f.title for f in findings]
    return findings[0]


# ---------------------------------------------------------------- rate arithmetic and series helpers


def test_sum_over_a_minute_divided_by_sixty_is_units_per_second() -> None:
    s = MetricSeries(SeriesKey("ConsumedReadCapacityUnits", "T"), {T0: 600.0, T0 + 60: 30.0})
    assert s.rate(T0) == 10.0
    assert s.rate(T0 + 60) == 0.5
    assert s.rate(T0 + 120) == 0.0  # a missing counter datapoint is 0


def test_capacity_history_carries_five_minute_provisioned_values_forward_and_keeps_gsis_apart() -> None:
    p = profile(gsis=("byStatus",))
    tm = metrics(p, seconds=600)
    put(tm, "ConsumedWriteCapacityUnits", {0: 120, 1: 60})
    put(tm, "ConsumedWriteCapacityUnits", {0: 999}, index="byStatus")
    put(tm, "ProvisionedWriteCapacityUnits", {0: 5, 5: 10}, stat="Average", period=300)
    history = tm.capacity_history()
    table, gsi = history
    assert table["index"] is None and gsi["index"] == "byStatus"
    assert table["consumed_write"] == [120, 60, 0, 0, 0, 0, 0, 0, 0, 0]
    assert table["provisioned_write"] == [5, 5, 5, 5, 5, 10, 10, 10, 10, 10]
    assert table["provisioned_read"] is None
    assert gsi["consumed_write"][0] == 999 and gsi["provisioned_write"] is None


def test_longest_run_counts_consecutive_periods() -> None:
    assert longest_run([0, 60, 120, 300, 360], 60) == 3
    assert longest_run([], 60) == 0


def test_api_stats_cost_is_one_cent_per_thousand_metrics_requested() -> None:
    stats = ApiStats(metrics_requested=1500, insight_metrics_requested=500)
    stats.count("cloudwatch:ListMetrics", 3)
    assert stats.estimated_cost_usd == pytest.approx(0.02)
    assert stats.as_dict()["cloudwatch_requests_billed_per_request"] == 3


# ---------------------------------------------------------------- throttling: each cause from the cause metrics


@pytest.mark.parametrize("cause", ["key_range", "provisioned", "account_limit", "on_demand_max"])
@pytest.mark.parametrize("access", ["read", "write"])
def test_each_cause_metric_names_its_cause(cause: str, access: str) -> None:
    p = profile()
    tm = metrics(p)
    put(tm, CAUSE_METRICS[cause][access], range(10, 15), 40)
    put(tm, "ReadThrottleEvents" if access == "read" else "WriteThrottleEvents", range(10, 15), 40)
    f = only(cw_throttling.detect(MetricsInput(p, tm)))
    assert f.kind == FindingKind.THROTTLING and f.index is None
    assert f.evidence["cause"] == cause
    assert f.evidence["cause_source"] == "cause_metrics"
    assert f.evidence[f"{access}_throttle_events"] == 200
    assert f.evidence["read_throttle_events" if access == "write" else "write_throttle_events"] == 0
    assert f.evidence["source"] == "cloudwatch"
    assert f.evidence["throttled_minutes"] == 5
    assert f.first_seen == datetime.fromtimestamp(T0 + 600, UTC)
    assert f.last_seen == datetime.fromtimestamp(T0 + 900, UTC)
    assert not f.missing_evidence()


def test_two_causes_in_one_table_give_two_findings_with_distinct_stable_ids() -> None:
    p = profile()
    tm = metrics(p)
    put(tm, CAUSE_METRICS["key_range"]["write"], range(0, 4), 10)
    put(tm, CAUSE_METRICS["provisioned"]["read"], range(20, 26), 7)
    found = cw_throttling.detect(MetricsInput(p, tm))
    assert sorted(f.evidence["cause"] for f in found) == ["key_range", "provisioned"]
    assert len({f.id for f in found}) == 2
    assert [f.id for f in cw_throttling.detect(MetricsInput(p, tm))] == [f.id for f in found]
    # never the same id as a CloudTrail throttling finding of the same cause
    trail_id = fingerprint(FindingKind.THROTTLING, p.account, p.region, p.name, None, "key_range")
    assert trail_id not in {f.id for f in found}


def test_a_quiet_table_has_no_finding() -> None:
    p = profile(gsis=("byStatus",))
    tm = metrics(p)
    put(tm, "ConsumedReadCapacityUnits", range(0, 60), 1200)
    put(tm, "ConsumedWriteCapacityUnits", range(0, 60), 600, index="byStatus")
    put(tm, "ConsumedReadCapacityUnits", range(0, 60), 60, index="byStatus")
    assert cw_throttling.detect(MetricsInput(p, tm)) == []
    assert cw_scan.detect(MetricsInput(p, tm)) == []
    assert unused_index.detect(MetricsInput(p, metrics(p, seconds=2 * 86_400))) == []


# ---------------------------------------------------------------- persistence


def test_a_one_minute_blip_is_not_a_finding() -> None:
    p = profile()
    tm = metrics(p)
    put(tm, "WriteThrottleEvents", {30: 5000})
    put(tm, CAUSE_METRICS["provisioned"]["write"], {30: 5000})
    assert cw_throttling.detect(MetricsInput(p, tm)) == []


@pytest.mark.parametrize(("minutes", "expected"), [(2, 0), (3, 1)])
def test_persistence_threshold_in_minutes(minutes: int, expected: int) -> None:
    p = profile()
    tm = metrics(p)
    put(tm, CAUSE_METRICS["provisioned"]["write"], {m * 7: 3 for m in range(minutes)})  # not even consecutive
    assert len(cw_throttling.detect(MetricsInput(p, tm))) == expected


def test_persistence_is_configurable_and_needs_two_periods_on_five_minute_data() -> None:
    p = profile()
    tm = metrics(p, seconds=6 * HOUR, period=300)
    put(tm, CAUSE_METRICS["key_range"]["read"], {0: 50}, period=300)
    assert cw_throttling.detect(MetricsInput(p, tm)) == []  # one 5-minute period: could be a blip
    put(tm, CAUSE_METRICS["key_range"]["read"], {0: 50, 5: 50}, period=300)
    assert only(cw_throttling.detect(MetricsInput(p, tm))).evidence["throttled_minutes"] == 10
    tm1 = metrics(p)
    put(tm1, CAUSE_METRICS["key_range"]["read"], range(0, 5), 1)
    strict = cw_throttling.CwThrottlingConfig(min_throttled_minutes=10)
    assert cw_throttling.detect(MetricsInput(p, tm1), strict) == []


def test_severity_grows_with_persistence_and_volume() -> None:
    p = profile()
    tm = metrics(p)
    put(tm, CAUSE_METRICS["key_range"]["write"], range(0, 5), 1)
    assert only(cw_throttling.detect(MetricsInput(p, tm))).severity == Severity.MEDIUM
    put(tm, CAUSE_METRICS["key_range"]["write"], range(0, 40), 1)
    assert only(cw_throttling.detect(MetricsInput(p, tm))).severity == Severity.HIGH
    tm2 = metrics(p)
    put(tm2, CAUSE_METRICS["key_range"]["write"], range(0, 3), 5000)
    assert only(cw_throttling.detect(MetricsInput(p, tm2))).severity == Severity.HIGH


# ---------------------------------------------------------------- inference without cause metrics


def test_provisioned_table_throttled_far_below_capacity_is_a_hot_partition() -> None:
    p = profile(write=100)
    tm = metrics(p)
    put(tm, "WriteThrottleEvents", range(0, 10), 20)
    put(tm, "ConsumedWriteCapacityUnits", range(0, 60), 600)  # 10 WCU/s of 100 provisioned
    put(tm, "ProvisionedWriteCapacityUnits", {0: 100}, stat="Average", period=300)
    f = only(cw_throttling.detect(MetricsInput(p, tm)))
    assert f.evidence["cause"] == "key_range"
    assert f.evidence["cause_source"] == "inferred_low_utilisation"
    assert f.evidence["median_utilisation_when_throttled"] == pytest.approx(0.1)


def test_provisioned_table_throttled_at_capacity_is_provisioned() -> None:
    p = profile(read=50)
    tm = metrics(p)
    put(tm, "ReadThrottleEvents", range(0, 10), 20)
    put(tm, "ConsumedReadCapacityUnits", range(0, 60), 2940)  # 49 RCU/s of 50
    f = only(cw_throttling.detect(MetricsInput(p, tm)))  # no provisioned series: DescribeTable's 50 is used
    assert f.evidence["cause"] == "provisioned"
    assert f.evidence["cause_source"] == "inferred_high_utilisation"
    assert f.evidence["median_utilisation_when_throttled"] == pytest.approx(0.98)


def test_cause_metrics_take_precedence_and_only_the_rest_is_inferred() -> None:
    p = profile(write=100)
    tm = metrics(p)
    put(tm, "WriteThrottleEvents", range(0, 5), 30)
    put(tm, CAUSE_METRICS["provisioned"]["write"], range(0, 5), 10)
    put(tm, "ConsumedWriteCapacityUnits", range(0, 5), 600)
    found = {f.evidence["cause"]: f for f in cw_throttling.detect(MetricsInput(p, tm))}
    assert found["provisioned"].evidence["write_throttle_events"] == 50
    assert found["key_range"].evidence["write_throttle_events"] == 100
    assert found["key_range"].evidence["cause_source"] == "inferred_low_utilisation"


def test_on_demand_table_is_never_compared_with_provisioned_zero() -> None:
    p = profile(mode="PAY_PER_REQUEST")
    tm = metrics(p)
    put(tm, "ConsumedWriteCapacityUnits", range(0, 60), 60_000)  # 1,000 WRU/s, far below every on-demand limit
    put(tm, "WriteThrottleEvents", range(30, 35), 15)
    f = only(cw_throttling.detect(MetricsInput(p, tm)))
    assert f.evidence["cause"] == "key_range"
    assert f.evidence["cause_source"] == "inferred_below_on_demand_limits"
    assert f.evidence["capacity_mode"] == "PAY_PER_REQUEST"
    assert f.evidence["median_utilisation_when_throttled"] is None


def test_on_demand_table_at_its_own_maximum_is_on_demand_max() -> None:
    p = profile(mode="PAY_PER_REQUEST", od_max_write=100)
    tm = metrics(p)
    put(tm, "ConsumedWriteCapacityUnits", range(0, 60), 5940)  # 99 WRU/s of a 100 maximum
    put(tm, "WriteThrottleEvents", range(10, 14), 8)
    assert only(cw_throttling.detect(MetricsInput(p, tm))).evidence["cause"] == "on_demand_max"


def test_on_demand_table_near_the_account_quota_is_account_limit() -> None:
    p = profile(mode="PAY_PER_REQUEST")
    tm = metrics(p)
    put(tm, "ConsumedReadCapacityUnits", range(0, 60), 39_000 * 60)
    put(tm, "ReadThrottleEvents", range(10, 14), 8)
    assert only(cw_throttling.detect(MetricsInput(p, tm))).evidence["cause"] == "account_limit"


def test_on_demand_traffic_more_than_doubling_its_peak_is_on_demand_not_a_hot_partition() -> None:
    p = profile(mode="PAY_PER_REQUEST")
    tm = metrics(p)
    put(
        tm,
        "ConsumedWriteCapacityUnits",
        dict.fromkeys(range(0, 30), 3000 * 60) | dict.fromkeys(range(30, 36), 7000 * 60),
    )
    put(tm, "WriteThrottleEvents", range(30, 36), 100)
    f = only(cw_throttling.detect(MetricsInput(p, tm)))
    assert f.evidence["cause"] == "on_demand_max"  # decided (on-demand scaling): not unknown (issue 29)
    assert f.evidence["cause_source"] == "inferred_on_demand_ramp"


def test_no_capacity_data_and_unknown_billing_mode_gives_unknown() -> None:
    p = TableProfile(name="Denied")  # DescribeTable was denied
    tm = metrics(p)
    put(tm, "ReadThrottleEvents", range(0, 5), 3)
    f = only(cw_throttling.detect(MetricsInput(p, tm)))
    assert f.evidence["cause"] == "unknown"
    assert f.evidence["cause_source"] == "no_capacity_data"


# ---------------------------------------------------------------- GSI back-pressure


def test_gsi_write_throttling_is_back_pressure_naming_the_index() -> None:
    p = profile(gsis=("byStatus", "byDate"))
    tm = metrics(p)
    put(tm, CAUSE_METRICS["provisioned"]["write"], range(5, 12), 25, index="byStatus")
    put(tm, "WriteThrottleEvents", range(5, 12), 25, index="byStatus")
    put(tm, "WriteThrottleEvents", range(5, 12), 25)  # the base-table writes it throttled
    put(tm, "ConsumedWriteCapacityUnits", range(0, 60), 60)  # the table itself is nearly idle
    f = only(cw_throttling.detect(MetricsInput(p, tm)))
    assert f.evidence["cause"] == "gsi_backpressure"
    assert f.index == "byStatus"
    assert "byStatus" in f.title
    assert f.evidence["index_cause"] == "provisioned"
    assert f.evidence["write_throttle_events"] == 7 * 25 * 2
    assert f.evidence["cause_sources"] == {"cause_metrics": 175, "gsi_metrics": 175}


def test_gsi_read_throttling_stays_on_the_index_with_its_own_cause() -> None:
    p = profile(gsis=("byStatus",))
    tm = metrics(p)
    put(tm, CAUSE_METRICS["key_range"]["read"], range(0, 6), 9, index="byStatus")
    f = only(cw_throttling.detect(MetricsInput(p, tm)))
    assert (f.index, f.evidence["cause"]) == ("byStatus", "key_range")


def test_key_range_recommendation_suggests_contributor_insights_only_when_off() -> None:
    p_off, p_on = profile(ci="DISABLED"), profile(ci="ENABLED")
    for p, expected in ((p_off, True), (p_on, False)):
        tm = metrics(p)
        put(tm, CAUSE_METRICS["key_range"]["write"], range(0, 5), 10)
        assert ("THROTTLED_KEYS" in only(cw_throttling.detect(MetricsInput(p, tm))).recommendation) is expected


def test_throttled_keys_mode_is_recommended_with_its_price() -> None:
    p = profile(ci="DISABLED")
    tm = metrics(p)  # an hour
    put(tm, CAUSE_METRICS["key_range"]["write"], range(0, 5), 1000)  # 5,000 throttled events in the hour
    f = only(cw_throttling.detect(MetricsInput(p, tm)))
    # 5,000/h x 730 h = 3.65 M events: $0.11, plus one rule (no sort key) at $0.50
    assert f.evidence["contributor_insights_throttled_keys_price"] == {
        "rules": 1.0,
        "events_per_month": 3_650_000,
        "usd_month": 0.61,
    }
    assert "1 rule at $0.50 a month plus $0.03 per million throttled events" in f.recommendation
    assert "about $0.61 a month" in f.recommendation
    price = cw_throttling.throttled_keys_price(5000, 3600, sort_key=True, cfg=cw_throttling.CwThrottlingConfig())
    assert price == {"rules": 2.0, "events_per_month": 7_300_000, "usd_month": 1.22}  # x2 events and rules


# ---------------------------------------------------------------- scans


def test_scan_volume_from_sample_count_and_returned_items() -> None:
    p = profile()
    tm = metrics(p)
    put(tm, "SuccessfulRequestLatency", range(0, 60), 2, operation="Scan", stat="SampleCount")
    put(tm, "ReturnedItemCount", range(0, 60), 50, operation="Scan")
    put(tm, "ConsumedReadCapacityUnits", range(0, 60), 512)
    f = only(cw_scan.detect(MetricsInput(p, tm)))
    assert f.kind == FindingKind.SCAN and f.severity == Severity.HIGH
    assert f.evidence["source"] == "cloudwatch"
    assert (f.evidence["principal"], f.evidence["operation"], f.evidence["count"]) == (None, "Scan", 120)
    assert f.evidence["per_hour"] == 120
    assert f.evidence["returned_items"] == 3000
    assert f.evidence["max_share_of_consumed_read_units"] == 0.5  # 120 pages x 128 of 30,720 units
    assert not f.missing_evidence()


def test_rare_scans_are_low_and_a_couple_are_nothing() -> None:
    p = profile()
    tm = metrics(p, seconds=24 * HOUR)
    put(tm, "SuccessfulRequestLatency", {0: 1, 600: 1, 1200: 1}, operation="Scan", stat="SampleCount")
    assert only(cw_scan.detect(MetricsInput(p, tm))).severity == Severity.LOW
    tm2 = metrics(p)
    put(tm2, "SuccessfulRequestLatency", {0: 2}, operation="Scan", stat="SampleCount")
    assert cw_scan.detect(MetricsInput(p, tm2)) == []


# ---------------------------------------------------------------- unused indexes


def test_gsi_written_and_never_read_is_a_review_finding_with_its_monthly_cost() -> None:
    p = profile(mode="PAY_PER_REQUEST", gsis=("byStatus", "byDate"))
    tm = metrics(p, seconds=7 * 86_400)
    put(tm, "ConsumedWriteCapacityUnits", range(0, 100), 7_000_000, index="byStatus")
    put(tm, "ConsumedReadCapacityUnits", range(0, 100), 0, index="byStatus")  # emitted, all zeros
    put(tm, "ConsumedWriteCapacityUnits", range(0, 100), 10, index="byDate")
    put(tm, "ConsumedReadCapacityUnits", {50: 1}, index="byDate")
    f = only(unused_index.detect(MetricsInput(p, tm)))
    assert f.kind == FindingKind.UNUSED_INDEX and f.index == "byStatus"
    assert f.evidence["reads"] == 0 and f.evidence["writes"] == 700_000_000
    assert f.evidence["days_analyzed"] == 7
    # 100M write units a day x 730/24 days x $0.625 per million
    assert f.evidence["monthly_write_cost"] == pytest.approx(100 * 730 / 24 * 0.625, rel=1e-6)
    assert f.evidence["action"] == "review"
    assert f.severity == Severity.MEDIUM
    assert "never deletes" in f.recommendation
    assert not f.missing_evidence()


def test_provisioned_unused_index_costs_its_capacity() -> None:
    p = profile(gsis=("byStatus",), table_class="STANDARD_INFREQUENT_ACCESS")
    tm = metrics(p, seconds=2 * 86_400)
    put(tm, "ConsumedWriteCapacityUnits", {0: 5}, index="byStatus")
    f = only(unused_index.detect(MetricsInput(p, tm)))
    assert f.evidence["monthly_write_cost"] == pytest.approx(50 * 730 * 0.00081, abs=0.006)
    assert f.evidence["monthly_read_capacity_cost"] == pytest.approx(50 * 730 * 0.00016, abs=0.006)
    assert f.severity == Severity.LOW  # only two days of data


def test_unused_index_needs_known_reads_and_a_long_enough_window() -> None:
    p = profile(gsis=("byStatus",))
    short = metrics(p, seconds=HOUR)
    put(short, "ConsumedWriteCapacityUnits", {0: 5}, index="byStatus")
    assert unused_index.detect(MetricsInput(p, short)) == []
    denied = metrics(p, seconds=2 * 86_400)
    put(denied, "ConsumedWriteCapacityUnits", {0: 5}, index="byStatus")
    denied.resource("byStatus").unavailable.add("ConsumedReadCapacityUnits")
    assert unused_index.detect(MetricsInput(p, denied)) == []


# ---------------------------------------------------------------- Contributor Insights hot keys


def report(kind: str, contributors: list[tuple[tuple[str, ...], float, float]], **kw: object) -> InsightReport:
    total = kw.pop("total", sum(c[1] for c in contributors))
    return InsightReport(
        table=str(kw.pop("table", "Orders")),
        index=kw.pop("index", None),  # type: ignore[arg-type]
        rule_name=f"DynamoDBContributorInsights-{kind}-Orders-1576629651520",
        rule_kind=kind,
        start=T0,
        end=T0 + HOUR,
        period=60,
        key_labels=("pk", "sk") if kind.startswith("SK") else ("pk",),
        aggregate_value=float(total),  # type: ignore[arg-type]
        unique_contributors=len(contributors),
        contributors=tuple(
            InsightContributor(keys, agg, ((T0 + 120, peak), (T0 + 180, peak / 2))) for keys, agg, peak in contributors
        ),
    )


def test_throttled_keys_rule_names_the_hot_key() -> None:
    reports = [report("PKT", [(("USER#1",), 800, 120), (("USER#2",), 150, 20), (("USER#3",), 50, 5)])]
    found = ci_hot_key.detect(InsightsInput(reports, {"Orders": profile()}))
    assert len(found) == 2  # USER#3 is below 10% of the throttles
    top = found[0]
    assert top.kind == FindingKind.HOT_KEY and top.severity == Severity.HIGH
    assert top.evidence["key"] == {"pk": "USER#1"}
    assert top.evidence["share"] == 0.8
    assert top.evidence["requests"] == 800
    assert top.evidence["source"] == "contributor_insights"
    assert top.evidence["window_seconds"] == HOUR
    assert top.first_seen == datetime.fromtimestamp(T0 + 120, UTC)
    assert not top.missing_evidence()
    assert found[1].severity == Severity.MEDIUM


def test_accessed_keys_rule_severity_follows_partition_saturation() -> None:
    # 180,000 ConsumedThroughputUnits in one minute = the key alone saturated a partition for the minute
    reports = [report("PKC", [(("HOT",), 400_000, 180_000), (("WARM",), 300_000, 40_000), (("COLD",), 300_000, 100)])]
    found = {f.evidence["key"]["pk"]: f for f in ci_hot_key.detect(InsightsInput(reports, {}))}
    assert found["HOT"].severity == Severity.CRITICAL
    assert found["HOT"].evidence["saturation"] == 1.0
    assert found["WARM"].severity == Severity.MEDIUM  # 22% of a partition: headroom 4.5x
    assert "COLD" not in found  # big share, but far from any partition limit


def test_item_rules_attach_to_the_partition_key_finding() -> None:
    reports = [
        report("PKT", [(("USER#1",), 900, 100)]),
        report("SKT", [(("USER#1", "CART"), 700, 80), (("USER#9", "X"), 200, 30)]),
    ]
    found = ci_hot_key.detect(InsightsInput(reports, {"Orders": profile()}))
    by_key = {tuple(f.evidence["key"].values()): f for f in found}
    assert by_key[("USER#1",)].evidence["hot_items"] == [{"key": {"pk": "USER#1", "sk": "CART"}, "requests": 700}]
    assert ("USER#9", "X") in by_key  # not flagged by the partition-key rule: reported on its own


def test_gsi_reports_are_findings_on_the_index_with_the_index_key_names() -> None:
    p = profile(gsis=("byStatus",))
    r = report("PKT", [(("OPEN",), 500, 50)], index="byStatus")
    r = InsightReport(**{**{s: getattr(r, s) for s in r.__slots__}, "key_labels": ()})  # type: ignore[attr-defined]
    f = only(ci_hot_key.detect(InsightsInput([r], {"Orders": p})))
    assert f.index == "byStatus"
    assert f.evidence["key"] == {"status": "OPEN"}


# ---------------------------------------------------------------- correlation


def trail_hot_key(table: str = "Orders") -> Finding:
    return Finding(
        id=fingerprint(FindingKind.HOT_KEY, "111122223333", "us-east-1", table, None, {"pk": "USER#1"}),
        kind=FindingKind.HOT_KEY,
        severity=Severity.MEDIUM,
        account="111122223333",
        region="us-east-1",
        table=table,
        title="Hot partition key pk=USER#1",
        summary="40% of requests.",
        recommendation="Shard it.",
        evidence={
            "key": {"pk": "USER#1"},
            "share": 0.4,
            "requests": 4000,
            "window_seconds": 900,
            "source": "cloudtrail",
        },
        first_seen=datetime.fromtimestamp(T0, UTC),
        last_seen=datetime.fromtimestamp(T0 + 900, UTC),
    )


def cw_throttle(cause: str, table: str = "Orders") -> Finding:
    p = profile(name=table)
    tm = metrics(p)
    put(tm, CAUSE_METRICS[cause]["write"], range(0, 5), 10)
    return only(cw_throttling.detect(MetricsInput(p, tm)))


def test_hot_key_and_key_range_throttles_on_one_table_raise_and_link_both() -> None:
    hot, thr = trail_hot_key(), cw_throttle("key_range")
    out = correlate.correlate([hot, thr])
    new_hot, new_thr = out
    assert (new_hot.severity, new_thr.severity) == (Severity.HIGH, Severity.HIGH)
    assert new_hot.evidence["related_finding_ids"] == [thr.id]
    assert new_thr.evidence["related_finding_ids"] == [hot.id]
    assert new_hot.evidence["correlation"]["severity_raised_from"] == "medium"
    assert (new_hot.id, new_thr.id) == (hot.id, thr.id)
    assert correlate.correlate(out) == out  # correlating again changes nothing


def test_no_correlation_across_tables_or_with_other_causes() -> None:
    hot = trail_hot_key()
    assert correlate.correlate([hot, cw_throttle("key_range", table="Other")])[0] == hot
    assert correlate.correlate([hot, cw_throttle("provisioned")])[0] == hot


def test_every_cloudwatch_detector_declares_metadata() -> None:
    assert {"cw_throttling", "cw_scan", "unused_index", "ci_hot_key", "correlate"} <= {d.id for d in all_detectors()}
    assert set(cw_throttling.RECOMMENDATIONS) == set(cw_throttling.CAUSES)


# ---- large writes estimated from CloudWatch (tables without a watched stream) ----------------------------------


def test_large_writes_are_estimated_from_consumed_wcu_per_write() -> None:
    from auditor.service.audit import AuditConfig, large_write_estimate

    p = profile("Documents", mode="PAY_PER_REQUEST")
    tm = metrics(p)
    put(tm, CONSUMED["write"], range(60), 12_000.0)  # 720,000 WCU in the hour
    put(tm, SCAN_REQUESTS, range(60), 100.0, operation="PutItem", stat="SampleCount")  # 6,000 puts
    [f] = large_write_estimate(p, tm, AuditConfig().detector_config("large_item"))
    assert f.kind is FindingKind.LARGE_ITEM and f.evidence["key"] is None
    assert f.evidence["method"] == "consumed_wcu_per_write"
    assert f.evidence["writes"] == 6000  # 120 WCU per write: items of about 120 KB


def test_batch_requests_count_their_maximum_items_so_the_estimate_is_a_lower_bound() -> None:
    from auditor.service.audit import AuditConfig, large_write_estimate

    p = profile("Events", mode="PAY_PER_REQUEST")
    tm = metrics(p)
    put(tm, CONSUMED["write"], range(60), 12_000.0)
    # 100 BatchWriteItem requests a minute could be 2,500 items: at most ~4.8 WCU each, so no finding.
    put(tm, SCAN_REQUESTS, range(60), 100.0, operation="BatchWriteItem", stat="SampleCount")
    assert large_write_estimate(p, tm, AuditConfig().detector_config("large_item")) == []
    # Small writes (1 WCU each) are not flagged either.
    tm2 = metrics(p)
    put(tm2, CONSUMED["write"], range(60), 100.0)
    put(tm2, SCAN_REQUESTS, range(60), 100.0, operation="PutItem", stat="SampleCount")
    assert large_write_estimate(p, tm2, AuditConfig().detector_config("large_item")) == []

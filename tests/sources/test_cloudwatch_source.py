"""The CloudWatch and Contributor Insights sources: moto server for ListMetrics/GetMetricData with planted series,
botocore Stubber (responses shaped as the API reference documents them) for pagination of GetMetricData, errors and
GetInsightRuleReport, which moto does not implement."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from auditor.detectors.base import InsightsInput
from auditor.detectors.insights import hot_key as ci_hot_key
from auditor.models.inventory import ContributorInsights, IndexProfile, Inventory, TableProfile
from auditor.models.metrics import ApiStats, SeriesKey
from auditor.sources.cloudwatch import (
    align_window,
    candidate_series,
    choose_period,
    collect_metrics,
    discover_active,
    fetch_series,
)
from auditor.sources.contributor_insights import read_insight_reports, report_period, rule_kind
from tests.cw_support import aws, dims, minutes, put_data, put_points

DAY = 86_400


def now_window(span_minutes: int = 30) -> tuple[int, int]:
    """A window ending at the last whole minute (moto keeps datapoints with their real timestamps)."""
    now = int(time.time())
    end = now - now % 60
    return end - span_minutes * 60, end


def provisioned(name: str, gsis: tuple[str, ...] = ()) -> TableProfile:
    return TableProfile(
        name=name,
        billing_mode="PROVISIONED",
        indexes=tuple(IndexProfile(name=g, type="GSI") for g in gsis),
    )


@pytest.fixture
def cw(aws_reset: str) -> Any:
    return aws("cloudwatch", aws_reset)


def test_get_metric_data_batches_500_queries_per_call(cw: Any) -> None:
    start, end = now_window(3)
    keys = [SeriesKey("ConsumedReadCapacityUnits", f"t{i:04d}") for i in range(1001)]
    put_data(
        cw,
        [
            {
                "MetricName": k.metric,
                "Dimensions": k.dimensions(),
                "Timestamp": datetime.fromtimestamp(start + 60, UTC),
                "Value": float(i),
            }
            for i, k in enumerate(keys)
        ],
    )
    stats = ApiStats()
    series, failed = fetch_series(cw, keys, start, end, stats)
    assert failed == {}
    assert stats.calls["cloudwatch:GetMetricData"] == math.ceil(1001 / 500) == 3
    assert stats.metrics_requested == 1001
    assert stats.estimated_cost_usd == pytest.approx(1001 * 0.01 / 1000)
    assert all(series[k].points == {start + 60: float(i)} for i, k in enumerate(keys))


def test_table_and_gsi_series_are_never_folded_and_rates_are_sum_over_sixty(cw: Any) -> None:
    start, end = now_window(10)
    t = start + 120
    put_points(cw, "ConsumedWriteCapacityUnits", "Orders", {t: 600})
    put_points(cw, "ConsumedWriteCapacityUnits", "Orders", {t: 42}, index="byStatus")
    put_points(cw, "ReturnedItemCount", "Orders", {t: 7}, operation="Scan")
    stats = ApiStats()
    result = collect_metrics(cw, [provisioned("Orders", ("byStatus",))], start, end, stats, discover=False)
    orders = result.tables["Orders"]
    table_w = orders.resource(None).get("ConsumedWriteCapacityUnits")
    gsi_w = orders.resource("byStatus").get("ConsumedWriteCapacityUnits")
    assert table_w is not None and gsi_w is not None
    assert (table_w.total(), gsi_w.total()) == (600, 42)
    assert table_w.rate(t) == 10.0
    assert orders.resource(None).total("ReturnedItemCount:Scan") == 7
    assert stats.metrics_requested == len(candidate_series(provisioned("Orders", ("byStatus",)), 60))


def test_discovery_buys_only_listed_series_and_follows_list_metrics_pagination(cw: Any) -> None:
    start, end = now_window(10)
    t = start + 60
    tables = [provisioned(f"t{i:03d}") for i in range(520)]
    put_data(
        cw,
        [
            {
                "MetricName": "ConsumedReadCapacityUnits",
                "Dimensions": dims(p.name),
                "Timestamp": datetime.fromtimestamp(t, UTC),
                "Value": 5.0,
            }
            for p in tables
        ],
    )
    put_points(cw, "WriteThrottleEvents", "t007", minutes(t, 3, 4))
    put_points(cw, "WriteKeyRangeThroughputThrottleEvents", "t007", minutes(t, 3, 4))
    put_points(cw, "ConsumedReadCapacityUnits", "t007", {t: 9}, index="gsi-not-in-inventory")
    stats = ApiStats()

    result = collect_metrics(cw, tables, start, end, stats)

    # 12 counters, 2 provisioned, 2 Scan series, 5 write-operation request counts (for the average write size)
    assert stats.series_candidates == 520 * 21
    assert stats.series_active == 522  # a quiet table's throttle series do not exist: they are not bought
    assert stats.metrics_requested == 522
    assert stats.calls["cloudwatch:GetMetricData"] == 2
    # one ListMetrics sweep per metric name and operation (21), plus a second page for the 520
    # ConsumedReadCapacityUnits series
    assert stats.calls["cloudwatch:ListMetrics"] == 21 + 1
    hot = result.tables["t007"].resource(None)
    assert hot.total("WriteKeyRangeThroughputThrottleEvents") == 12
    assert result.tables["t001"].resource(None).get("WriteThrottleEvents") is None


def test_few_tables_are_discovered_with_one_list_metrics_call_each(cw: Any) -> None:
    start, _ = now_window(10)
    put_points(cw, "ConsumedReadCapacityUnits", "A", {start + 60: 1})
    put_points(cw, "ReadThrottleEvents", "B", {start + 60: 1}, index="g")
    stats = ApiStats()
    cands = [*candidate_series(provisioned("A"), 60), *candidate_series(provisioned("B", ("g",)), 60)]
    active, gaps = discover_active(cw, cands, stats)
    assert gaps == []
    assert {(k.table, k.index, k.metric) for k in active} == {
        ("A", None, "ConsumedReadCapacityUnits"),
        ("B", "g", "ReadThrottleEvents"),
    }
    assert stats.calls["cloudwatch:ListMetrics"] == 2


def test_on_demand_tables_do_not_request_provisioned_series_and_periods_follow_granularity() -> None:
    od = TableProfile(name="od", billing_mode="PAY_PER_REQUEST")
    assert not any(k.metric.startswith("Provisioned") for k in candidate_series(od, 60))
    prov = {k.metric: k for k in candidate_series(provisioned("p"), 60)}
    assert prov["ProvisionedReadCapacityUnits"].period == 300
    assert prov["ProvisionedReadCapacityUnits"].stat == "Average"
    assert prov["ConsumedReadCapacityUnits"].period == 60
    cands = candidate_series(provisioned("p"), 60)
    requests = {k.operation: k for k in cands if k.metric == "SuccessfulRequestLatency"}
    assert set(requests) == {"Scan", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
    assert {k.stat for k in requests.values()} == {"SampleCount"}
    assert all(k.index is None for k in requests.values())
    now = 100 * DAY
    assert choose_period(now - DAY, now, now) == 60
    assert choose_period(now - 7 * DAY, now, now) == 300
    assert choose_period(now - 30 * DAY, now - 29 * DAY, now) == 300  # 1-minute data is gone after 15 days
    assert choose_period(now - 90 * DAY, now, now) == 3600
    assert align_window(1000, 2000, 60) == (900, 1980)


# ---------------------------------------------------------------- Stubber: pagination, errors, throttling


def stub_client(service: str) -> Any:
    return boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


T = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
START = int(T.timestamp())


def test_get_metric_data_follows_next_token_and_merges_pages() -> None:
    cw = stub_client("cloudwatch")
    keys = [SeriesKey("ReadThrottleEvents", "Orders"), SeriesKey("ReadThrottleEvents", "Orders", "byStatus")]
    with Stubber(cw) as s:
        s.add_response(
            "get_metric_data",
            {
                "MetricDataResults": [
                    {
                        "Id": "m0",
                        "Label": "ReadThrottleEvents",
                        "Timestamps": [T],
                        "Values": [3.0],
                        "StatusCode": "PartialData",
                    },
                    {
                        "Id": "m1",
                        "Label": "ReadThrottleEvents",
                        "Timestamps": [],
                        "Values": [],
                        "StatusCode": "Forbidden",
                        "Messages": [{"Code": "Forbidden", "Value": "not authorized for this metric"}],
                    },
                ],
                "NextToken": "page-2",
                "Messages": [],
            },
            {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY, "ScanBy": "TimestampAscending"},
        )
        s.add_response(
            "get_metric_data",
            {
                "MetricDataResults": [
                    {
                        "Id": "m0",
                        "Label": "ReadThrottleEvents",
                        "Timestamps": [datetime.fromtimestamp(START + 60, UTC)],
                        "Values": [4.0],
                        "StatusCode": "Complete",
                    },
                ],
            },
            {
                "MetricDataQueries": ANY,
                "StartTime": ANY,
                "EndTime": ANY,
                "ScanBy": "TimestampAscending",
                "NextToken": "page-2",
            },
        )
        stats = ApiStats()
        series, failed = fetch_series(cw, keys, START, START + 600, stats)
    assert series[keys[0]].points == {START: 3.0, START + 60: 4.0}
    assert failed == {keys[1]: "Forbidden: not authorized for this metric"}
    assert keys[1] not in series
    assert stats.calls["cloudwatch:GetMetricData"] == 2
    assert stats.metrics_requested == 4  # a NextToken page re-sends the queries


def test_throttled_cloudwatch_calls_are_retried_with_a_bounded_backoff() -> None:
    cw = stub_client("cloudwatch")
    slept: list[float] = []
    key = SeriesKey("ConsumedReadCapacityUnits", "Orders")
    with Stubber(cw) as s:
        for _ in range(2):
            s.add_client_error("get_metric_data", "Throttling", "Rate exceeded", 400)
        s.add_response(
            "get_metric_data",
            {"MetricDataResults": [{"Id": "m0", "Timestamps": [T], "Values": [1.0], "StatusCode": "Complete"}]},
        )
        stats = ApiStats()
        series, failed = fetch_series(cw, [key], START, START + 600, stats, sleep=slept.append)
    assert series[key].points == {START: 1.0} and failed == {}
    assert slept == [0.5, 1.0]
    assert stats.throttled_retries == 2
    with Stubber(cw) as s:
        for _ in range(4):
            s.add_client_error("get_metric_data", "Throttling", "Rate exceeded", 400)
        series, failed = fetch_series(cw, [key], START, START + 600, ApiStats(), sleep=slept.append)
    assert failed == {key: "Throttling: Rate exceeded"}  # bounded: the series is unknown, the audit goes on


def test_access_denied_on_metrics_makes_series_unknown_not_zero() -> None:
    cw = stub_client("cloudwatch")
    profile = provisioned("Orders", ("byStatus",))
    with Stubber(cw) as s:
        s.add_client_error(
            "list_metrics", "AccessDenied", "User is not authorized to perform cloudwatch:ListMetrics", 403
        )
        s.add_client_error("get_metric_data", "AccessDenied", "not authorized: cloudwatch:GetMetricData", 403)
        result = collect_metrics(cw, [profile], START, START + 3600, ApiStats(), now=START + 3600)
    assert [g.call for g in result.gaps] == ["cloudwatch:ListMetrics", "cloudwatch:GetMetricData"]
    gsi = result.tables["Orders"].resource("byStatus")
    assert not gsi.known("ConsumedReadCapacityUnits")
    assert gsi.get("ConsumedReadCapacityUnits") is None


# ---------------------------------------------------------------- Contributor Insights


def insights_inventory() -> Inventory:
    pkt = "DynamoDBContributorInsights-PKT-Carts-1764583200000"
    skt = "DynamoDBContributorInsights-SKT-Carts-1764583200000"
    pkc = "DynamoDBContributorInsights-PKC-Carts-byStatus-1764583200001"
    carts = TableProfile(
        name="Carts",
        account="111122223333",
        region="us-east-1",
        partition_key="customer",
        sort_key="item",
        contributor_insights=ContributorInsights(status="ENABLED", mode="THROTTLED_KEYS", rule_names=(pkt, skt)),
        indexes=(
            IndexProfile(
                name="byStatus",
                type="GSI",
                partition_key="status",
                contributor_insights=ContributorInsights(
                    status="ENABLED", mode="ACCESSED_AND_THROTTLED_KEYS", rule_names=(pkc, "not-a-dynamodb-rule")
                ),
            ),
        ),
    )
    quiet = TableProfile(name="Quiet", contributor_insights=ContributorInsights(status="DISABLED"))
    return Inventory(tables=(carts, quiet))


def rule_params(rule: str) -> dict[str, Any]:
    return {
        "RuleName": rule,
        "StartTime": T,
        "EndTime": datetime.fromtimestamp(START + 3600, UTC),
        "Period": 60,
        "MaxContributorCount": 10,
        "Metrics": ["MaxContributorValue", "Maximum"],
        "OrderBy": "Maximum",
    }


def test_contributor_insights_reports_become_hot_key_findings() -> None:
    inv = insights_inventory()
    (pkt, _skt), (pkc, _) = (
        inv.tables[0].contributor_insights.rule_names,
        inv.tables[0].indexes[0].contributor_insights.rule_names,
    )
    t1, t2 = T, datetime.fromtimestamp(START + 60, UTC)
    cw = stub_client("cloudwatch")
    with Stubber(cw) as s:
        s.add_response(
            "get_insight_rule_report",
            {
                "KeyLabels": ["customer"],
                "AggregationStatistic": "Sum",
                "AggregateValue": 1000.0,
                "ApproximateUniqueCount": 3,
                "Contributors": [
                    {
                        "Keys": ["CUST#42"],
                        "ApproximateAggregateValue": 850.0,
                        "Datapoints": [
                            {"Timestamp": t1, "ApproximateValue": 500.0},
                            {"Timestamp": t2, "ApproximateValue": 350.0},
                        ],
                    },
                    {
                        "Keys": ["CUST#7"],
                        "ApproximateAggregateValue": 120.0,
                        "Datapoints": [{"Timestamp": t1, "ApproximateValue": 120.0}],
                    },
                    {
                        "Keys": ["CUST#9"],
                        "ApproximateAggregateValue": 30.0,
                        "Datapoints": [{"Timestamp": t2, "ApproximateValue": 30.0}],
                    },
                ],
                "MetricDatapoints": [
                    {"Timestamp": t1, "MaxContributorValue": 500.0, "Maximum": 500.0},
                    {"Timestamp": t2, "MaxContributorValue": 350.0, "Maximum": 350.0},
                ],
            },
            rule_params(pkt),
        )
        s.add_client_error("get_insight_rule_report", "ResourceNotFoundException", "rule deleted", 400)
        s.add_response(
            "get_insight_rule_report",
            {
                "KeyLabels": ["status"],
                "AggregationStatistic": "Sum",
                "AggregateValue": 400_000.0,
                "ApproximateUniqueCount": 2,
                "Contributors": [
                    {
                        "Keys": ["OPEN"],
                        "ApproximateAggregateValue": 390_000.0,
                        "Datapoints": [{"Timestamp": t1, "ApproximateValue": 180_000.0}],
                    },
                ],
                "MetricDatapoints": [{"Timestamp": t1, "MaxContributorValue": 180_000.0, "Maximum": 180_000.0}],
            },
            rule_params(pkc),
        )
        stats = ApiStats()
        reports, gaps = read_insight_reports(cw, inv, START, START + 3600, stats)
        s.assert_no_pending_responses()

    assert [(r.rule_kind, r.index) for r in reports] == [("PKT", None), ("PKC", "byStatus")]
    assert [g.describe() for g in gaps] == [
        "cloudwatch:GetInsightRuleReport on Carts: ResourceNotFoundException (contributor_insights unknown)"
    ]
    assert stats.calls["cloudwatch:GetInsightRuleReport"] == 3
    assert stats.insight_metrics_requested == 6
    assert reports[0].contributors[0].max_value == 500.0

    found = ci_hot_key.detect(InsightsInput(reports, {p.name: p for p in inv.tables}))
    by_key = {(f.index, tuple(f.evidence["key"].items())): f for f in found}
    top = by_key[(None, (("customer", "CUST#42"),))]
    assert top.severity.value == "high"
    assert (top.evidence["source"], top.evidence["share"], top.evidence["requests"]) == (
        "contributor_insights",
        0.85,
        850,
    )
    assert top.evidence["window_seconds"] == 3600
    assert (None, (("customer", "CUST#7"),)) in by_key
    assert (None, (("customer", "CUST#9"),)) not in by_key  # 3% of the throttles
    gsi = by_key[("byStatus", (("status", "OPEN"),))]
    assert gsi.severity.value == "critical"  # 180,000 units in a minute: one partition saturated
    assert not any(f.missing_evidence() for f in found)


def test_report_period_and_rule_kinds() -> None:
    assert report_period(0, DAY) == 60
    assert report_period(0, 7 * DAY) == 900
    assert rule_kind("DynamoDBContributorInsights-SKC-Music-1576629651520") == "SKC"
    assert rule_kind("MyOwnRule") is None

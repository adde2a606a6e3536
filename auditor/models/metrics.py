"""CloudWatch metric series of DynamoDB tables and GSIs, and the API-call/cost counter of an audit.

A series is one ``MetricStat`` (a table's series never include its GSIs), timestamps are period starts, and a
missing counter datapoint is 0. The conventions are in docs/sources.md.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from auditor.models.counters import add_counts

NAMESPACE = "AWS/DynamoDB"

#: GetMetricData and GetInsightRuleReport: $0.01 per 1,000 metrics requested (us-east-1, never free).
PRICE_PER_METRIC_REQUESTED = 0.01 / 1000
#: ListMetrics and other CloudWatch API requests: $0.01 per 1,000 requests beyond the 1M free requests a month.
PRICE_PER_API_REQUEST = 0.01 / 1000

# ---- metric names ----
CONSUMED = {"read": "ConsumedReadCapacityUnits", "write": "ConsumedWriteCapacityUnits"}
PROVISIONED = {"read": "ProvisionedReadCapacityUnits", "write": "ProvisionedWriteCapacityUnits"}
THROTTLE_EVENTS = {"read": "ReadThrottleEvents", "write": "WriteThrottleEvents"}
#: The four 2025 per-cause throttle counters, by cause, for reads and writes.
CAUSE_METRICS: dict[str, dict[str, str]] = {
    "key_range": {"read": "ReadKeyRangeThroughputThrottleEvents", "write": "WriteKeyRangeThroughputThrottleEvents"},
    "provisioned": {
        "read": "ReadProvisionedThroughputThrottleEvents",
        "write": "WriteProvisionedThroughputThrottleEvents",
    },
    "account_limit": {"read": "ReadAccountLimitThrottleEvents", "write": "WriteAccountLimitThrottleEvents"},
    "on_demand_max": {
        "read": "ReadMaxOnDemandThroughputThrottleEvents",
        "write": "WriteMaxOnDemandThroughputThrottleEvents",
    },
}
SCAN_REQUESTS = "SuccessfulRequestLatency"
#: Items TTL deleted (``TableName`` only; DynamoDB publishes it per minute, only when non-zero).
TTL_DELETED = "TimeToLiveDeletedItemCount"
#: Write operations whose request counts (``SuccessfulRequestLatency`` SampleCount) size the average write, with the
#: most items one request can write: a batch or transaction of unknown size counts as full, so the WCU per item
#: derived from them is a lower bound.
WRITE_OPERATIONS: dict[str, int] = {
    "PutItem": 1,
    "UpdateItem": 1,
    "DeleteItem": 1,
    "BatchWriteItem": 25,
    "TransactWriteItems": 100,
}
RETURNED_ITEMS = "ReturnedItemCount"


@dataclass(frozen=True, slots=True)
class SeriesKey:
    """One MetricStat: metric, exact dimensions, statistic and period."""

    metric: str
    table: str
    index: str | None = None
    operation: str | None = None
    stat: str = "Sum"
    period: int = 60

    def dimensions(self) -> list[dict[str, str]]:
        dims = [{"Name": "TableName", "Value": self.table}]
        if self.index is not None:
            dims.append({"Name": "GlobalSecondaryIndexName", "Value": self.index})
        if self.operation is not None:
            dims.append({"Name": "Operation", "Value": self.operation})
        return dims

    @property
    def name(self) -> str:
        """The name a resource's series is filed under: the metric, plus ``:Operation`` when dimensioned by it."""
        return f"{self.metric}:{self.operation}" if self.operation else self.metric

    def metric_stat(self) -> dict[str, Any]:
        return {
            "Metric": {"Namespace": NAMESPACE, "MetricName": self.metric, "Dimensions": self.dimensions()},
            "Period": self.period,
            "Stat": self.stat,
        }

    def label(self) -> str:
        where = self.table + (f"/{self.index}" if self.index else "") + (f" {self.operation}" if self.operation else "")
        return f"{where} {self.metric} {self.stat}/{self.period}s"


@dataclass(slots=True)
class MetricSeries:
    """Datapoints of one series: period start (epoch seconds) -> value."""

    key: SeriesKey
    points: dict[int, float] = field(default_factory=dict)

    @property
    def period(self) -> int:
        return self.key.period

    def value(self, t: int, default: float = 0.0) -> float:
        return self.points.get(t, default)

    def total(self) -> float:
        return float(sum(self.points.values()))

    def nonzero(self) -> list[int]:
        return sorted(t for t, v in self.points.items() if v > 0)

    def rate(self, t: int) -> float:
        """Average units per second in the period starting at ``t`` (a Sum divided by the period)."""
        return self.points.get(t, 0.0) / self.period

    def carried(self, t: int) -> float | None:
        """The latest value at or before ``t`` (provisioned capacity is published every 5 minutes)."""
        times = sorted(self.points)
        i = bisect.bisect_right(times, t)
        return self.points[times[i - 1]] if i else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.key.metric,
            "index": self.key.index,
            "operation": self.key.operation,
            "stat": self.key.stat,
            "period": self.key.period,
            "points": [[t, v] for t, v in sorted(self.points.items())],
        }


@dataclass(slots=True)
class ResourceMetrics:
    """The series of one table (``index=None``) or one of its GSIs."""

    table: str
    index: str | None = None
    series: dict[str, MetricSeries] = field(default_factory=dict)
    #: Series names that could not be read (Forbidden, errors): their values are unknown, not zero.
    unavailable: set[str] = field(default_factory=set)

    def get(self, name: str) -> MetricSeries | None:
        return self.series.get(name)

    def total(self, name: str) -> float:
        s = self.series.get(name)
        return s.total() if s is not None else 0.0

    def value(self, name: str, t: int) -> float:
        s = self.series.get(name)
        return s.value(t) if s is not None else 0.0

    def known(self, name: str) -> bool:
        return name not in self.unavailable


@dataclass(slots=True)
class TableMetrics:
    """Every series read for one table and its GSIs over ``[start, end)``."""

    table: str
    start: int
    end: int
    #: Period of the per-minute family (consumed, throttles, scans); provisioned uses ``max(period, 300)``.
    period: int = 60
    resources: dict[str | None, ResourceMetrics] = field(default_factory=dict)

    def resource(self, index: str | None = None) -> ResourceMetrics:
        if index not in self.resources:
            self.resources[index] = ResourceMetrics(self.table, index)
        return self.resources[index]

    @property
    def seconds(self) -> int:
        return max(0, self.end - self.start)

    @property
    def days(self) -> float:
        return self.seconds / 86_400

    def capacity_history(self) -> list[dict[str, Any]]:
        """Per-period consumed and provisioned units of the table and each GSI (the billing input's ``series``).

        Each list has one value per ``period`` from ``start``: consumed ``Sum`` (missing = 0), provisioned units in
        force (the 5-minute value carried forward; None for a resource without provisioned series).
        """
        times = list(range(self.start, self.end, self.period))
        out: list[dict[str, Any]] = []
        for index in sorted(self.resources, key=lambda i: (i is not None, i or "")):
            res = self.resources[index]
            entry: dict[str, Any] = {"index": index}
            for access in ("read", "write"):
                consumed = res.get(CONSUMED[access])
                entry[f"consumed_{access}"] = [consumed.value(t) if consumed else 0.0 for t in times]
                prov = res.get(PROVISIONED[access])
                entry[f"provisioned_{access}"] = [prov.carried(t) or 0.0 for t in times] if prov else None
            out.append(entry)
        return out


@dataclass(slots=True)
class ApiStats:
    """API calls made by one audit run, the metrics bought and their estimated CloudWatch cost."""

    #: ``service:Operation`` -> calls made (pages included, retries of a throttled call included).
    calls: Counter[str] = field(default_factory=Counter)
    #: MetricStat queries sent in GetMetricData requests (every page counts: the request is re-sent with NextToken).
    metrics_requested: int = 0
    #: Statistics requested in GetInsightRuleReport calls (billed like GetMetricData).
    insight_metrics_requested: int = 0
    datapoints: int = 0
    series_candidates: int = 0
    series_active: int = 0
    throttled_retries: int = 0

    def count(self, call: str, n: int = 1) -> None:
        self.calls[call] += n

    @property
    def cloudwatch_requests(self) -> int:
        """CloudWatch requests billed per request (ListMetrics...), inside the free tier for most accounts."""
        return sum(n for c, n in self.calls.items() if c.startswith("cloudwatch:") and c not in _PER_METRIC_CALLS)

    @property
    def estimated_cost_usd(self) -> float:
        """GetMetricData + GetInsightRuleReport: $0.01 per 1,000 metrics requested (always charged)."""
        return (self.metrics_requested + self.insight_metrics_requested) * PRICE_PER_METRIC_REQUESTED

    def merge(self, other: ApiStats) -> None:
        self.calls.update(other.calls)
        add_counts(self, other)

    def as_dict(self) -> dict[str, Any]:
        return {
            "api_calls": dict(sorted(self.calls.items())),
            "api_calls_total": sum(self.calls.values()),
            "get_metric_data_calls": self.calls.get("cloudwatch:GetMetricData", 0),
            "series_candidates": self.series_candidates,
            "series_active": self.series_active,
            "metrics_requested": self.metrics_requested,
            "insight_rule_metrics_requested": self.insight_metrics_requested,
            "datapoints": self.datapoints,
            "throttled_retries": self.throttled_retries,
            "estimated_cost_usd": round(self.estimated_cost_usd, 6),
            "cloudwatch_requests_billed_per_request": self.cloudwatch_requests,
        }


_PER_METRIC_CALLS = {"cloudwatch:GetMetricData", "cloudwatch:GetInsightRuleReport"}


@dataclass(frozen=True, slots=True)
class InsightContributor:
    """One key of a Contributor Insights report (values are CloudWatch's approximations)."""

    keys: tuple[str, ...]
    aggregate: float
    #: (period start epoch, value) for the periods in which this key appeared.
    datapoints: tuple[tuple[int, float], ...] = ()

    @property
    def max_value(self) -> float:
        return max((v for _, v in self.datapoints), default=0.0)


@dataclass(frozen=True, slots=True)
class InsightReport:
    """A ``GetInsightRuleReport`` of one DynamoDB Contributor Insights rule."""

    table: str
    index: str | None
    rule_name: str
    #: ``PKC``/``SKC`` (most accessed, ConsumedThroughputUnits) or ``PKT``/``SKT`` (most throttled, ThrottleCount).
    rule_kind: str
    start: int
    end: int
    period: int
    key_labels: tuple[str, ...] = ()
    aggregate_value: float = 0.0
    unique_contributors: int | None = None
    contributors: tuple[InsightContributor, ...] = ()
    #: Per period: the largest single-key value (``MaxContributorValue``).
    max_contributor_values: tuple[tuple[int, float], ...] = ()

    @property
    def throttled(self) -> bool:
        return self.rule_kind.endswith("T")

    @property
    def with_sort_key(self) -> bool:
        return self.rule_kind.startswith("SK")

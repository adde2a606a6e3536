"""GetMetricData and ListMetrics of the in-process local endpoint, fit for 14 days of 1-minute datapoints.

The local endpoint answers GetMetricData by scanning every stored datapoint of the window for every period (a 14-day
read at 60 s is 20,160 periods times every datapoint: minutes per query) and ListMetrics by comparing every datapoint
with every metric listed. :func:`fast_metric_reads` replaces both, while the demo runs, with equivalents that index the
datapoints once per request: the same selection (namespace, metric name, exact dimension set, ``[StartTime,
EndTime)``) and the same statistics (the endpoint's own ``Statistics``). The tests page the same computation the way
CloudWatch pages (tests/moto_metric_data.py).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from moto.cloudwatch.exceptions import InvalidParameterValue
from moto.cloudwatch.models import CloudWatchBackend, MetricDatumBase, Statistics
from moto.cloudwatch.responses import CloudWatchResponse
from moto.core.responses import ActionResult

#: CloudWatch's limit of queries per GetMetricData request, and of metrics per ListMetrics page.
MAX_QUERIES = 500

Key = tuple[str, str, frozenset[tuple[str, str]]]


def dims_of(dimensions: Any) -> frozenset[tuple[str, str]]:
    """A stored datapoint's dimensions as a set of (name, value)."""
    return frozenset((d.name, d.value) for d in dimensions)


def compute(
    backend: CloudWatchBackend, queries: list[dict[str, Any]], start: datetime, end: datetime, scan_by: str
) -> list[dict[str, Any]]:
    """Every MetricStat query's datapoints over ``[start, end)``, one per period with data (as the endpoint has)."""
    index: dict[Key, list[MetricDatumBase]] = defaultdict(list)
    for md in backend.get_all_metrics():
        if start <= md.timestamp < end:
            index[(md.namespace, md.name, dims_of(md.dimensions))].append(md)
    out: list[dict[str, Any]] = []
    for q in queries:
        if "MetricStat" not in q:
            raise InvalidParameterValue("this stand-in answers MetricStat queries only")
        ms, metric = q["MetricStat"], q["MetricStat"]["Metric"]
        dims = frozenset((d["Name"], d["Value"]) for d in metric.get("Dimensions", []))
        period, stat = int(ms["Period"]), ms["Stat"]
        buckets: dict[int, list[MetricDatumBase]] = defaultdict(list)
        for md in index.get((metric["Namespace"], metric["MetricName"], dims), ()):
            buckets[int((md.timestamp - start).total_seconds()) // period].append(md)
        timestamps: list[datetime] = []
        values: list[Any] = []
        for b in sorted(buckets):
            stats = Statistics([stat], start + timedelta(seconds=b * period))
            stats.metric_data = buckets[b]
            timestamps.append(stats.timestamp)
            values.append(stats.get_statistics_for_type(stat))
        if scan_by == "TimestampDescending":
            timestamps.reverse()
            values.reverse()
        out.append(
            {
                "id": q["Id"],
                "label": q.get("Label") or f"{metric['MetricName']} {stat}",
                "values": values,
                "timestamps": timestamps,
                "status_code": "Complete",
            }
        )
    return out


def matching_metrics(backend: CloudWatchBackend, params: dict[str, Any]) -> list[MetricDatumBase]:
    """The distinct metrics matching a ListMetrics request's namespace, name and dimension filters."""
    namespace, name = params.get("Namespace"), params.get("MetricName")
    wanted = {(d["Name"], d.get("Value")) for d in params.get("Dimensions", [])}
    unique: dict[Key, MetricDatumBase] = {}
    for md in backend.get_all_metrics():
        if (namespace and md.namespace != namespace) or (name and md.name != name):
            continue
        dims = dims_of(md.dimensions)
        if all((k, v) in dims if v is not None else k in dict(dims) for k, v in wanted):
            unique.setdefault((md.namespace, md.name, dims), md)
    return list(unique.values())


def paged_list_metrics() -> Callable[[CloudWatchResponse], ActionResult]:
    """ListMetrics over :func:`matching_metrics`, 500 metrics a page (its own page tokens)."""
    listed: dict[str, list[MetricDatumBase]] = {}

    def list_metrics(self: CloudWatchResponse) -> ActionResult:
        params = self._get_params()
        token = params.get("NextToken")
        if token:
            if token not in listed:
                raise InvalidParameterValue("Request parameter NextToken is invalid")
            metrics = listed.pop(token)
        else:
            metrics = matching_metrics(self.cloudwatch_backend, params)
        next_token = str(uuid.uuid4()) if len(metrics) > MAX_QUERIES else None
        if next_token is not None:
            listed[next_token] = metrics[MAX_QUERIES:]
        return ActionResult({"Metrics": metrics[:MAX_QUERIES], "NextToken": next_token})

    return list_metrics


@contextmanager
def fast_metric_reads() -> Iterator[None]:
    """GetMetricData (one response, no paging) and ListMetrics (500 a page) indexed, while the block runs."""

    def get_metric_data(self: CloudWatchResponse) -> ActionResult:
        params = self._get_params()
        queries = params.get("MetricDataQueries", [])
        if len(queries) > MAX_QUERIES:
            raise InvalidParameterValue(f"at most {MAX_QUERIES} MetricDataQueries per request")
        start = params["StartTime"].replace(microsecond=0)
        end = params["EndTime"].replace(microsecond=0)
        scan_by = params.get("ScanBy") or "TimestampDescending"
        return ActionResult({"MetricDataResults": compute(self.cloudwatch_backend, queries, start, end, scan_by)})

    list_metrics = paged_list_metrics()

    saved = CloudWatchResponse.get_metric_data, CloudWatchResponse.list_metrics
    CloudWatchResponse.get_metric_data = get_metric_data  # type: ignore[method-assign]
    CloudWatchResponse.list_metrics = list_metrics  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        CloudWatchResponse.get_metric_data, CloudWatchResponse.list_metrics = saved  # type: ignore[method-assign]

"""The scan and PartiQL requests of each table, from CloudWatch: what the capture controller's always-on selector
costs, table by table (each request, each page of a Scan, is one CloudTrail data event).

DynamoDB publishes ``SuccessfulRequestLatency`` per table and operation; its ``SampleCount`` is the number of
successful requests. One datapoint per table and operation covers the whole period (one metric requested each).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from auditor.cost.plan import ALWAYS_ON_EVENTS

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

__all__ = ["read_scan_pages"]


def read_scan_pages(cw: CloudWatchClient, names: list[str], start: int, end: int) -> dict[str, float]:
    """Per table: Scan and PartiQL requests (each page one) per second over [start, end), from the request count of
    DynamoDB's ``SuccessfulRequestLatency`` per operation (one datapoint per table and operation)."""
    out: dict[str, float] = {}
    period = max(60, (end - start) // 60 * 60)
    queries: list[dict[str, Any]] = [
        {
            "Id": f"s{i}_{j}",
            "MetricStat": {
                "Metric": {
                    "Namespace": "AWS/DynamoDB",
                    "MetricName": "SuccessfulRequestLatency",
                    "Dimensions": [{"Name": "TableName", "Value": name}, {"Name": "Operation", "Value": op}],
                },
                "Period": period,
                "Stat": "SampleCount",
            },
            "ReturnData": True,
        }
        for i, name in enumerate(names)
        for j, op in enumerate(ALWAYS_ON_EVENTS)
    ]
    paginator = cw.get_paginator("get_metric_data")
    window = {"StartTime": datetime.fromtimestamp(start, UTC), "EndTime": datetime.fromtimestamp(end, UTC)}
    for k in range(0, len(queries), 500):  # at most 500 queries a call
        for page in paginator.paginate(MetricDataQueries=queries[k : k + 500], **window):  # type: ignore[arg-type]
            for r in page.get("MetricDataResults", []):
                name = names[int(str(r["Id"])[1:].split("_")[0])]
                out[name] = out.get(name, 0.0) + sum(float(v) for v in r.get("Values", [])) / max(1, end - start)
    return out

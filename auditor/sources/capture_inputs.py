"""What the capture controller reads from AWS: the trail's event selectors, the audited tables, their consumed
capacity (:mod:`auditor.service.capture` decides from these; the writes are in :mod:`auditor.state.capture_store`
and :mod:`auditor.sinks.trail_selectors`).

CloudTrail allows 10 GetEventSelectors calls per second per account and Region; the controller makes one per run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_cloudtrail import CloudTrailClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["TrailSelectors", "list_tables", "read_peaks", "read_selectors"]

#: Error codes of GetEventSelectors that mean the trail is not there (any other error is raised).
MISSING_TRAIL_CODES = ("TrailNotFoundException", "InvalidTrailNameException")


@dataclass(frozen=True, slots=True)
class TrailSelectors:
    """A trail's event selectors as GetEventSelectors returns them, or why it could not be read."""

    advanced: list[dict[str, Any]]
    #: The trail uses basic (``EventSelectors``) rather than advanced selectors.
    basic: bool = False
    #: The error code when the trail is gone (then ``advanced`` is empty).
    missing: str | None = None


def read_selectors(ct: CloudTrailClient, trail: str) -> TrailSelectors:
    """The trail's advanced event selectors; ``missing`` set when the trail does not exist (deleted)."""
    try:
        current = ct.get_event_selectors(TrailName=trail)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in MISSING_TRAIL_CODES:
            return TrailSelectors([], missing=code)
        raise
    advanced = [dict(s) for s in current.get("AdvancedEventSelectors", [])]
    return TrailSelectors(advanced, basic=bool(current.get("EventSelectors")) and not advanced)


def list_tables(ddb: DynamoDBClient, skip: str) -> list[dict[str, Any]]:
    """Every table of the Region but ``skip`` (the state table), described (DescribeTable's ``Table``).

    A table deleted between ListTables and DescribeTable is left out. Pages are followed until ListTables stops
    returning ``LastEvaluatedTableName``.
    """
    names: list[str] = []
    kwargs: dict[str, Any] = {}
    while True:
        page = ddb.list_tables(**kwargs)
        names += page.get("TableNames", [])
        if not page.get("LastEvaluatedTableName"):
            break
        kwargs["ExclusiveStartTableName"] = page["LastEvaluatedTableName"]
    out = []
    for name in names:
        if name == skip:
            continue
        try:
            out.append(dict(ddb.describe_table(TableName=name)["Table"]))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
    return out


def read_peaks(cw: CloudWatchClient, names: list[str], start: int, end: int) -> dict[str, tuple[float, float, float]]:
    """Per table: (peak read units/s, peak write units/s, average units/s) over [start, end) at 1-minute periods.

    GetMetricData takes at most 500 queries per call; each call's pages are followed with ``NextToken``.
    """
    out: dict[str, tuple[float, float, float]] = {}
    if not names or end - start < 60:
        return out
    queries = []
    for i, name in enumerate(names):
        for j, metric in enumerate(("ConsumedReadCapacityUnits", "ConsumedWriteCapacityUnits")):
            queries.append(
                {
                    "Id": f"m{i}_{j}",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": "AWS/DynamoDB",
                            "MetricName": metric,
                            "Dimensions": [{"Name": "TableName", "Value": name}],
                        },
                        "Period": 60,
                        "Stat": "Sum",
                    },
                    "ReturnData": True,
                }
            )
    values: dict[str, list[float]] = {}
    for k in range(0, len(queries), 500):
        kwargs: dict[str, Any] = {
            "MetricDataQueries": queries[k : k + 500],
            "StartTime": datetime.fromtimestamp(start, UTC),
            "EndTime": datetime.fromtimestamp(end, UTC),
        }
        while True:
            resp = cw.get_metric_data(**kwargs)
            for r in resp.get("MetricDataResults", []):
                values.setdefault(r["Id"], []).extend(float(v) for v in r.get("Values", []))
            if not resp.get("NextToken"):
                break
            kwargs["NextToken"] = resp["NextToken"]
    minutes = max(1, (end - start) // 60)
    for i, name in enumerate(names):
        reads, writes = values.get(f"m{i}_0", []), values.get(f"m{i}_1", [])
        out[name] = (
            max(reads, default=0.0) / 60,
            max(writes, default=0.0) / 60,
            (sum(reads) + sum(writes)) / (minutes * 60),
        )
    return out

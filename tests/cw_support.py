"""Helpers for the tests that read CloudWatch and the inventory on moto: clients, tables, planted DynamoDB metrics."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.config import Config

REGION = "us-east-1"
#: moto cannot decode the gzip bodies botocore sends for large PutMetricData requests; one attempt keeps the
#: operations moto does not implement (HTTP 500) fast.
TEST_CONFIG = Config(disable_request_compression=True, retries={"total_max_attempts": 1})


def aws(service: str, endpoint: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=TEST_CONFIG,
    )


def create_table(
    ddb: Any,
    name: str,
    *,
    on_demand: bool = False,
    gsis: Iterable[str] = (),
    read: int = 100,
    write: int = 100,
    tags: dict[str, str] | None = None,
    sort_key: bool = False,
) -> None:
    gsis = list(gsis)
    attrs = [{"AttributeName": "pk", "AttributeType": "S"}]
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}]
    if sort_key:
        attrs.append({"AttributeName": "sk", "AttributeType": "S"})
        keys.append({"AttributeName": "sk", "KeyType": "RANGE"})
    if gsis:
        attrs.append({"AttributeName": "gk", "AttributeType": "S"})
    args: dict[str, Any] = {"TableName": name, "AttributeDefinitions": attrs, "KeySchema": keys}
    throughput = {"ReadCapacityUnits": read, "WriteCapacityUnits": write}
    if on_demand:
        args["BillingMode"] = "PAY_PER_REQUEST"
    else:
        args["BillingMode"] = "PROVISIONED"
        args["ProvisionedThroughput"] = throughput
    if gsis:
        args["GlobalSecondaryIndexes"] = [
            {
                "IndexName": g,
                "KeySchema": [{"AttributeName": "gk", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
            | ({} if on_demand else {"ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}})
            for g in gsis
        ]
    if tags:
        args["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
    ddb.create_table(**args)


def dims(table: str, index: str | None = None, operation: str | None = None) -> list[dict[str, str]]:
    out = [{"Name": "TableName", "Value": table}]
    if index:
        out.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    if operation:
        out.append({"Name": "Operation", "Value": operation})
    return out


def put_points(
    cw: Any,
    metric: str,
    table: str,
    points: dict[int, float],
    *,
    index: str | None = None,
    operation: str | None = None,
) -> None:
    """One datapoint per (epoch seconds -> value), published the way DynamoDB does (namespace AWS/DynamoDB)."""
    data = [
        {
            "MetricName": metric,
            "Dimensions": dims(table, index, operation),
            "Timestamp": datetime.fromtimestamp(t, UTC),
            "Value": float(v),
        }
        for t, v in sorted(points.items())
    ]
    put_data(cw, data)


def put_data(cw: Any, data: list[dict[str, Any]]) -> None:
    for i in range(0, len(data), 500):
        cw.put_metric_data(Namespace="AWS/DynamoDB", MetricData=data[i : i + 500])


def minutes(start: int, count: int, value: float, step: int = 1) -> dict[int, float]:
    """``count`` datapoints of ``value``, one every ``step`` minutes from ``start``."""
    return {start + 60 * step * i: value for i in range(count)}

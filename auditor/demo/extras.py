"""The demo's CloudWatch metrics and DynamoDB stream: the inputs of the metrics audit and the Streams watcher.

:func:`create_tables` creates the demo's tables on the local endpoint (before the first run, so DescribeTable answers);
:func:`plant_metrics` publishes 14 days of per-minute capacity and an hour of metrics with planted problems;
:func:`grow_items` makes two ``Documents`` items grow on a stream and returns its records as Lambda's event records.
What is planted is in docs/demo.md.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.config import Config

from auditor.demo.stack import ACCOUNT, REGION, aws_client

#: An hour of per-minute metrics with the planted problems (the audit's hour).
_MINUTES = 60
#: Days of per-minute capacity history before it: what the billing run needs (7 days) for a recommendation.
HISTORY_DAYS = 14
#: moto cannot decode the gzip bodies botocore sends for large PutMetricData requests.
_NO_COMPRESSION = Config(disable_request_compression=True)


def _client(service: str, endpoint: str) -> Any:
    return aws_client(service, endpoint, _NO_COMPRESSION if service == "cloudwatch" else None)


def _dims(table: str, index: str | None = None, operation: str | None = None) -> list[dict[str, str]]:
    out = [{"Name": "TableName", "Value": table}]
    if index:
        out.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    if operation:
        out.append({"Name": "Operation", "Value": operation})
    return out


def create_tables(endpoint: str, end: datetime) -> list[str]:
    """Create the demo's tables (Archive2024 and Carts backdated 90 days before ``end``); returns their names."""
    ddb = _client("dynamodb", endpoint)
    key = [{"AttributeName": "pk", "KeyType": "HASH"}]
    attrs = [{"AttributeName": "pk", "AttributeType": "S"}]
    ddb.create_table(
        TableName="Orders",
        KeySchema=[*key, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            *attrs,
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "status", "AttributeType": "S"},
        ],
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 2000, "WriteCapacityUnits": 1000},
        GlobalSecondaryIndexes=[
            {
                "IndexName": "ByStatus",
                "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 1000},
            }
        ],
    )
    for name in ("Sessions", "Catalog", "Jobs", "Users", "Attachments"):
        ddb.create_table(TableName=name, KeySchema=key, AttributeDefinitions=attrs, BillingMode="PAY_PER_REQUEST")
    idle_and_ttl_tables(ddb, end)
    ddb.create_table(
        TableName="Documents",
        KeySchema=[{"AttributeName": "docId", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "docId", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    return [*TABLES, "Documents"]


#: The tables of the metrics audit (Orders with its ByStatus GSI).
TABLES = ["Orders", "Sessions", "Catalog", "Jobs", "Users", "Attachments", "Archive2024", "Carts"]
#: Each table's (or GSI's) per-minute capacity at the daily peak: (table, index, metric, units a minute).
_STEADY: list[tuple[str, str | None, str, float]] = [
    ("Orders", None, "ConsumedWriteCapacityUnits", 21_000.0),
    ("Orders", None, "ConsumedReadCapacityUnits", 48_000.0),
    ("Orders", "ByStatus", "ConsumedWriteCapacityUnits", 21_000.0),
    ("Orders", "ByStatus", "ConsumedReadCapacityUnits", 0.0),
    ("Sessions", None, "ConsumedReadCapacityUnits", 9_000.0),
    ("Attachments", None, "ConsumedWriteCapacityUnits", 9_000.0),
    ("Users", None, "ConsumedReadCapacityUnits", 3_000.0),
    ("Users", None, "ConsumedWriteCapacityUnits", 300.0),
    ("Carts", None, "ConsumedWriteCapacityUnits", 600.0),
]
#: Orders' provisioned capacity in force (published every 5 minutes).
_PROVISIONED: list[tuple[str | None, str, float]] = [
    (None, "ProvisionedReadCapacityUnits", 2000.0),
    (None, "ProvisionedWriteCapacityUnits", 1000.0),
    ("ByStatus", "ProvisionedReadCapacityUnits", 100.0),
    ("ByStatus", "ProvisionedWriteCapacityUnits", 1000.0),
]


#: The report's capacity charts: (table, index, provisioned) read back from the local endpoint, hourly.
CHARTED: list[tuple[str, str | None, bool]] = [
    ("Orders", None, True),
    ("Orders", "ByStatus", True),
    ("Users", None, False),
]


def read_capacity(endpoint: str, start: datetime, end: datetime) -> list[Any]:
    """The charted tables' hourly capacity over ``[start, end)`` as the report's ``CapacitySeries``, read back from the
    local endpoint's CloudWatch (consumed ``Sum``, provisioned ``Average`` per hour)."""
    from auditor.demo.metric_data import fast_metric_reads
    from auditor.report.inputs import CapacitySeries

    cw = _client("cloudwatch", endpoint)
    hours = int((end - start).total_seconds()) // 3600
    out = []
    for table, index, provisioned in CHARTED:
        names = ["ConsumedReadCapacityUnits", "ConsumedWriteCapacityUnits"]
        names += ["ProvisionedReadCapacityUnits", "ProvisionedWriteCapacityUnits"] if provisioned else []
        queries = [
            {"Id": f"m{i}", "MetricStat": {"Metric": {"Namespace": "AWS/DynamoDB", "MetricName": n,
             "Dimensions": _dims(table, index)}, "Period": 3600, "Stat": "Sum" if "Consumed" in n else "Average"}}
            for i, n in enumerate(names)
        ]  # fmt: skip
        with fast_metric_reads():
            results = cw.get_metric_data(MetricDataQueries=queries, StartTime=start, EndTime=end)["MetricDataResults"]
        values: list[list[float | None]] = []
        for r in results:
            pairs = zip(r["Timestamps"], r["Values"], strict=True)
            by_hour = {int((t - start).total_seconds()) // 3600: v for t, v in pairs}
            values.append([by_hour.get(h) for h in range(hours)])
        out.append(
            CapacitySeries(
                table=table, index=index, start=start, period_seconds=3600, consumed_read=values[0],
                consumed_write=values[1], provisioned_read=values[2] if provisioned else None,
                provisioned_write=values[3] if provisioned else None,
            )
        )  # fmt: skip
    return out


def daily_shape(stamp: int) -> float:
    """The share of the daily peak at ``stamp`` (epoch seconds): 40% at night, 100% at 14:00 UTC."""
    return 0.7 - 0.3 * math.cos(2 * math.pi * ((stamp % 86_400) / 86_400 - 14 / 24))


def _put(cw: Any, data: list[dict[str, Any]]) -> None:
    for i in range(0, len(data), 1000):
        cw.put_metric_data(Namespace="AWS/DynamoDB", MetricData=data[i : i + 1000])


def _store_history(data: list[dict[str, Any]], account: str, region: str) -> None:
    """Store the capacity history in the in-process local endpoint's CloudWatch directly: the same datapoints
    PutMetricData would store, without serialising 200,000 of them over HTTP (the demo must stay quick)."""
    from moto.cloudwatch.models import cloudwatch_backends

    # as the endpoint stores what PutMetricData sends: naive UTC times, float values
    stored = [
        d | {"Timestamp": d["Timestamp"].astimezone(UTC).replace(tzinfo=None), "Value": float(d["Value"])} for d in data
    ]
    cloudwatch_backends[account][region].put_metric_data("AWS/DynamoDB", stored)


def capacity_history(t0: int, end: datetime, steady: list[tuple[str, str | None, str, float]]) -> list[dict[str, Any]]:
    """``HISTORY_DAYS`` days of per-minute capacity before ``t0`` (epoch seconds), following :func:`daily_shape`."""
    data: list[dict[str, Any]] = []
    for stamp in range(t0 - HISTORY_DAYS * 86_400, t0, 60):
        when, share = datetime.fromtimestamp(stamp, end.tzinfo), daily_shape(stamp)
        # Users is busy an hour a day (a daily batch) and quiet otherwise: on-demand is its right mode.
        burst = 1.0 if (stamp % 86_400) // 3600 == 13 else 0.02
        for table, index, metric, peak in steady:
            data.append({"MetricName": metric, "Dimensions": _dims(table, index), "Timestamp": when,
                         "Value": round(peak * (burst if table == "Users" else share))})  # fmt: skip
    return data


def plant_metrics(endpoint: str, end: datetime) -> list[str]:
    """14 days of per-minute capacity and an hour of metrics with planted problems ending at ``end``; returns the
    tables."""
    cw = _client("cloudwatch", endpoint)
    t0 = int(end.timestamp()) // 60 * 60 - 60 * _MINUTES
    history = capacity_history(t0, end, _STEADY)
    for stamp in range(t0 - HISTORY_DAYS * 86_400, t0, 300):
        for index, metric, units in _PROVISIONED:
            history.append({"MetricName": metric, "Dimensions": _dims("Orders", index),
                            "Timestamp": datetime.fromtimestamp(stamp, end.tzinfo), "Value": units})  # fmt: skip
    _store_history(history, ACCOUNT, REGION)
    data: list[dict[str, Any]] = []

    def series(metric: str, table: str, values: list[float], **dims: str | None) -> None:
        for i, v in enumerate(values):
            data.append(
                {
                    "MetricName": metric,
                    "Dimensions": _dims(table, dims.get("index"), dims.get("operation")),
                    "Timestamp": datetime.fromtimestamp(t0 + 60 * i, end.tzinfo),
                    "Value": float(v),
                }
            )

    def latency(table: str, operation: str, count: float, total: float, low: float, high: float) -> None:
        """One ``SuccessfulRequestLatency`` statistic set a minute: ``count`` requests of ``operation`` taking
        ``total`` milliseconds, from ``low`` to ``high``."""
        for i in range(_MINUTES):
            data.append(
                {
                    "MetricName": "SuccessfulRequestLatency",
                    "Dimensions": _dims(table, operation=operation),
                    "Timestamp": datetime.fromtimestamp(t0 + 60 * i, end.tzinfo),
                    "StatisticValues": {"SampleCount": count, "Sum": total, "Minimum": low, "Maximum": high},
                    "Unit": "Milliseconds",
                }
            )

    # Orders: ~35% of the provisioned writes, but one partition saturates for 12 minutes in the last hour (the
    # CUSTOMER#42 burst the trail shows).
    burst = range(_MINUTES - 40, _MINUTES - 28)
    series("ConsumedWriteCapacityUnits", "Orders", [21_000.0 + (6_000 if i in burst else 0) for i in range(_MINUTES)])
    series("ConsumedReadCapacityUnits", "Orders", [48_000.0] * _MINUTES)
    series("WriteThrottleEvents", "Orders", [180.0 if i in burst else 0.0 for i in range(_MINUTES)])
    series("WriteKeyRangeThroughputThrottleEvents", "Orders", [180.0 if i in burst else 0.0 for i in range(_MINUTES)])
    # Provisioned capacity in force (DynamoDB publishes it every 5 minutes; the audit reads 5-minute averages).
    series("ProvisionedReadCapacityUnits", "Orders", [2000.0] * _MINUTES)
    series("ProvisionedWriteCapacityUnits", "Orders", [1000.0] * _MINUTES)
    series("ProvisionedReadCapacityUnits", "Orders", [100.0] * _MINUTES, index="ByStatus")
    series("ProvisionedWriteCapacityUnits", "Orders", [1000.0] * _MINUTES, index="ByStatus")
    # Its ByStatus index is written with every order and never queried.
    series("ConsumedWriteCapacityUnits", "Orders", [21_000.0] * _MINUTES, index="ByStatus")
    series("ConsumedReadCapacityUnits", "Orders", [0.0] * _MINUTES, index="ByStatus")
    # Sessions is scanned by the cleanup job every minute.
    latency("Sessions", "Scan", 12.0, 540.0, 20.0, 80.0)
    series("ReturnedItemCount", "Sessions", [6_000.0] * _MINUTES, operation="Scan")
    series("ConsumedReadCapacityUnits", "Sessions", [9_000.0] * _MINUTES)
    # Attachments (no stream watched) stores files inline: about 150 KB per PutItem, seen from CloudWatch alone.
    series("ConsumedWriteCapacityUnits", "Attachments", [9_000.0] * _MINUTES)
    latency("Attachments", "PutItem", 60.0, 900.0, 8.0, 40.0)
    # Users is healthy.
    series("ConsumedReadCapacityUnits", "Users", [3_000.0] * _MINUTES)
    series("ConsumedWriteCapacityUnits", "Users", [300.0] * _MINUTES)
    # Carts takes writes all the time, but its TTL deletes nothing (TimeToLiveDeletedItemCount never published).
    series("ConsumedWriteCapacityUnits", "Carts", [600.0] * _MINUTES)
    _put(cw, data)
    return TABLES


def idle_and_ttl_tables(ddb: Any, end: datetime) -> None:
    """``Archive2024``: provisioned, no traffic at all; ``Carts``: TTL on ``expiresAt``, written in milliseconds.

    Both stand for tables created 90 days ago: the local endpoint stamps new tables with the current time, so the demo
    backdates them in its in-process state (:func:`auditor.demo.stack.backdate_table`).
    """
    from auditor.demo.stack import backdate_table

    key = [{"AttributeName": "pk", "KeyType": "HASH"}]
    attrs = [{"AttributeName": "pk", "AttributeType": "S"}]
    ddb.create_table(
        TableName="Archive2024",
        KeySchema=key,
        AttributeDefinitions=attrs,
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 200, "WriteCapacityUnits": 100},
    )
    ddb.create_table(TableName="Carts", KeySchema=key, AttributeDefinitions=attrs, BillingMode="PAY_PER_REQUEST")
    ddb.update_time_to_live(TableName="Carts", TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"})
    expires_ms = int(end.timestamp() * 1000) + 86_400_000  # the bug: milliseconds, so TTL never sees it expire
    for n in range(20):
        ddb.put_item(TableName="Carts", Item={"pk": {"S": f"CART#{n}"}, "expiresAt": {"N": str(expires_ms)}})
    for name in ("Archive2024", "Carts"):
        backdate_table(name, end - timedelta(days=90))


#: The demo's member account and its Region (the metrics audit assumes its member role there).
MEMBER_ACCOUNT = "444455556666"
MEMBER_REGION = "eu-west-1"


def plant_member_account(endpoint: str, end: datetime) -> list[str]:
    """A member account's table in another Region, scanned every minute (an hour of metrics ending at ``end``).

    The local endpoint attributes requests made with an assumed role's credentials to that role's account.
    """
    sts = _client("sts", endpoint)
    creds = sts.assume_role(RoleArn=f"arn:aws:iam::{MEMBER_ACCOUNT}:role/demo-setup", RoleSessionName="demo")[
        "Credentials"
    ]
    import boto3

    session = boto3.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
        region_name=MEMBER_REGION,
    )
    ddb = session.client("dynamodb", endpoint_url=endpoint, config=_NO_COMPRESSION)
    cw = session.client("cloudwatch", endpoint_url=endpoint, config=_NO_COMPRESSION)
    ddb.create_table(
        TableName="Ledger",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    t0 = int(end.timestamp()) // 60 * 60 - 60 * _MINUTES
    _store_history(
        capacity_history(t0, end, [("Ledger", None, "ConsumedReadCapacityUnits", 12_000.0)]),
        MEMBER_ACCOUNT,
        MEMBER_REGION,
    )
    data: list[dict[str, Any]] = []
    for i in range(_MINUTES):
        stamp = datetime.fromtimestamp(t0 + 60 * i, end.tzinfo)
        data.append(
            {
                "MetricName": "SuccessfulRequestLatency",
                "Dimensions": _dims("Ledger", operation="Scan"),
                "Timestamp": stamp,
                "StatisticValues": {"SampleCount": 20.0, "Sum": 900.0, "Minimum": 20.0, "Maximum": 90.0},
                "Unit": "Milliseconds",
            }
        )
        data.append({"MetricName": "ReturnedItemCount", "Dimensions": _dims("Ledger", operation="Scan"),
                     "Timestamp": stamp, "Value": 8_000.0})  # fmt: skip
        data.append({"MetricName": "ConsumedReadCapacityUnits", "Dimensions": _dims("Ledger"), "Timestamp": stamp,
                     "Value": 12_000.0})  # fmt: skip
    _put(cw, data)
    return ["Ledger"]


def grow_items(endpoint: str, end: datetime, days: float = 8.0) -> tuple[str, list[dict[str, Any]]]:
    """Grow two ``Documents`` items with ``list_append`` and return (stream ARN, Lambda stream event records)."""
    ddb = _client("dynamodb", endpoint)
    streams = _client("dynamodbstreams", endpoint)
    arn = ddb.describe_table(TableName="Documents")["Table"]["LatestStreamArn"]
    # DOC#7 is the document whose writes CloudTrail shows failing; DOC#42 is on its way there.
    plans = {"DOC#7": (96_000, 8_000, 37), "DOC#42": (70_000, 5_000, 20)}
    for doc, (start, step, appends) in plans.items():
        ddb.put_item(
            TableName="Documents",
            Item={"docId": {"S": doc}, "title": {"S": "Quarterly plan"}, "comments": {"L": [{"S": "x" * start}]}},
        )
        use_put = False
        for n in range(appends):
            comment = {"S": f"comment {n}: " + "y" * step}
            if not use_put:
                try:
                    ddb.update_item(
                        TableName="Documents",
                        Key={"docId": {"S": doc}},
                        UpdateExpression="SET comments = list_append(comments, :c)",
                        ExpressionAttributeValues={":c": {"L": [comment]}},
                    )
                    continue
                except ddb.exceptions.ClientError as exc:
                    if "exceeded the maximum allowed size" not in str(exc):
                        raise
                    # moto adds the old and the new value of a replaced attribute when it checks the size, so its
                    # list_append stops at about 200 KB; go on with the same append as a read-modify-write PutItem.
                    use_put = True
            item = ddb.get_item(TableName="Documents", Key={"docId": {"S": doc}}, ConsistentRead=True)["Item"]
            item["comments"]["L"].append(comment)
            ddb.put_item(TableName="Documents", Item=item)
    raw: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        it = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON")[
            "ShardIterator"
        ]
        while it:
            page = streams.get_records(ShardIterator=it, Limit=1000)
            raw.extend(page["Records"])
            it = page.get("NextShardIterator") if page["Records"] else None
    # Spread each item's writes evenly over the last `days` days (see the module docstring).
    per_doc: dict[str, list[dict[str, Any]]] = {}
    for rec in raw:
        per_doc.setdefault(rec["dynamodb"]["Keys"]["docId"]["S"], []).append(rec)
    records: list[tuple[float, dict[str, Any]]] = []
    span = timedelta(days=days).total_seconds()
    for recs in per_doc.values():
        for i, rec in enumerate(recs):
            at = end.timestamp() - span + span * i / max(1, len(recs) - 1)
            body = dict(rec["dynamodb"])
            body["ApproximateCreationDateTime"] = float(int(at))
            records.append(
                (
                    at,
                    {
                        "eventID": rec["eventID"],
                        "eventName": rec["eventName"],
                        "eventVersion": rec.get("eventVersion", "1.1"),
                        "eventSource": "aws:dynamodb",
                        "awsRegion": REGION,
                        "dynamodb": body,
                        "eventSourceARN": arn,
                    },
                )
            )
    records.sort(key=lambda r: r[0])
    return arn, [r for _, r in records]


def plant_write_burst(endpoint: str, table: str, at: datetime, *, units_per_second: float, minutes: int = 6) -> None:
    """Consumed write capacity of ``table`` at ``units_per_second`` for the ``minutes`` before ``at``."""
    cw = _client("cloudwatch", endpoint)
    t0 = int(at.timestamp()) // 60 * 60 - 60 * minutes
    cw.put_metric_data(
        Namespace="AWS/DynamoDB",
        MetricData=[
            {
                "MetricName": "ConsumedWriteCapacityUnits",
                "Dimensions": [{"Name": "TableName", "Value": table}],
                "Timestamp": datetime.fromtimestamp(t0 + 60 * i, UTC),
                "Value": units_per_second * 60,
                "Unit": "Count",
            }
            for i in range(minutes)
        ],
    )

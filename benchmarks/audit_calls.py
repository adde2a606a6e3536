"""Audit API-call benchmark: calls, metrics requested and CloudWatch cost of one ``ddb-audit audit`` run.

Run from the repository root::

    python -m benchmarks.audit_calls [--tables 10,100,2500] [--gsis 2] [--throttling-share 0.05]

For each N it starts a moto server, creates N provisioned tables with ``--gsis`` GSIs each, plants the series
DynamoDB really publishes (consumed and provisioned capacity for every table and GSI; throttle metrics, which
exist only when non-zero, for ``--throttling-share`` of the tables), runs :func:`auditor.service.audit.run_audit`
over one hour and prints what it cost: API calls by operation, GetMetricData calls, metrics requested and the
estimated CloudWatch cost, next to the archived awslabs evaluator's pattern (per table one ListMetrics, then two
GetMetricData calls of two metrics each per table and per GSI).

The datapoints are planted just before the audited hour: the counts do not depend on values, and moto's
GetMetricData scans every stored datapoint for every query and period, which would otherwise dominate the run.
It exits 0 whatever the results: it reports, it does not gate.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
import urllib.request
from datetime import UTC, datetime
from typing import Any

PRICE_PER_METRIC = 0.01 / 1000


def _client(service: str, endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=Config(disable_request_compression=True, retries={"total_max_attempts": 1}),
    )


def _plant(endpoint: str, n: int, gsis: int, throttling_share: float, t: int) -> None:
    ddb, cw = _client("dynamodb", endpoint), _client("cloudwatch", endpoint)
    data: list[dict[str, Any]] = []
    stamp = datetime.fromtimestamp(t, UTC)
    throttling = max(1, round(n * throttling_share))
    for i in range(n):
        name = f"bench-{i:05d}"
        ddb.create_table(
            TableName=name,
            BillingMode="PROVISIONED",
            ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}]
            + ([{"AttributeName": "gk", "AttributeType": "S"}] if gsis else []),
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            **(
                {
                    "GlobalSecondaryIndexes": [
                        {
                            "IndexName": f"gsi{j}",
                            "KeySchema": [{"AttributeName": "gk", "KeyType": "HASH"}],
                            "Projection": {"ProjectionType": "KEYS_ONLY"},
                            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
                        }
                        for j in range(gsis)
                    ]
                }
                if gsis
                else {}
            ),
        )
        for index in (None, *(f"gsi{j}" for j in range(gsis))):
            dims = [{"Name": "TableName", "Value": name}] + (
                [{"Name": "GlobalSecondaryIndexName", "Value": index}] if index else []
            )
            metrics = [
                "ConsumedReadCapacityUnits",
                "ConsumedWriteCapacityUnits",
                "ProvisionedReadCapacityUnits",
                "ProvisionedWriteCapacityUnits",
            ]
            if i < throttling and index is None:
                metrics += ["WriteThrottleEvents", "WriteKeyRangeThroughputThrottleEvents"]
            data += [{"MetricName": m, "Dimensions": dims, "Timestamp": stamp, "Value": 1.0} for m in metrics]
    for k in range(0, len(data), 500):
        cw.put_metric_data(Namespace="AWS/DynamoDB", MetricData=data[k : k + 500])


def run_one(n: int, gsis: int, throttling_share: float) -> dict[str, Any]:
    from moto.server import ThreadedMotoServer

    from auditor.service.audit import AuditClients, run_audit
    from auditor.sources.inventory import TableSelector

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=30).close()
        now = int(time.time())
        end = now - now % 300
        started = time.perf_counter()
        _plant(endpoint, n, gsis, throttling_share, end - 7200)
        planted = time.perf_counter() - started
        clients = AuditClients(
            dynamodb=_client("dynamodb", endpoint),
            cloudwatch=_client("cloudwatch", endpoint),
            autoscaling=_client("application-autoscaling", endpoint),
        )
        started = time.perf_counter()
        result = run_audit(clients, TableSelector(), start=end - 3600, end=end, now=now)
        elapsed = time.perf_counter() - started
    finally:
        server.stop()
    st = result.stats
    resources = n * (1 + gsis)
    return {
        "tables": n,
        "resources": resources,
        "calls": dict(sorted(st.calls.items())),
        "api_calls": sum(st.calls.values()),
        "get_metric_data_calls": st.calls.get("cloudwatch:GetMetricData", 0),
        "list_metrics_calls": st.calls.get("cloudwatch:ListMetrics", 0),
        "series_candidates": st.series_candidates,
        "metrics_requested": st.metrics_requested,
        "cost_usd": st.estimated_cost_usd,
        "evaluator_get_metric_data_calls": 2 * resources,
        "evaluator_list_metrics_calls": n,
        "evaluator_metrics_requested": 4 * resources,
        "evaluator_cost_usd": 4 * resources * PRICE_PER_METRIC,
        "seconds_plant": round(planted, 1),
        "seconds_audit": round(elapsed, 1),
        "findings": len(result.findings),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", default="10,100,2500")
    parser.add_argument("--gsis", type=int, default=2)
    parser.add_argument("--throttling-share", type=float, default=0.05)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # moto server logs the operations it does not implement as tracebacks
    from auditor.observability import configure_logging

    configure_logging("WARNING")
    header = (
        f"{'tables':>7} {'API calls':>9} {'GMD calls':>9} {'ListMetrics':>11} {'metrics':>8} {'cost $':>9} | "
        f"{'eval GMD':>8} {'eval metrics':>12} {'eval cost $':>11} | {'audit s':>7}"
    )
    print(header)
    for n in (int(x) for x in args.tables.split(",")):
        r = run_one(n, args.gsis, args.throttling_share)
        assert r["get_metric_data_calls"] == math.ceil(r["metrics_requested"] / 500)
        print(
            f"{r['tables']:>7} {r['api_calls']:>9} {r['get_metric_data_calls']:>9} {r['list_metrics_calls']:>11} "
            f"{r['metrics_requested']:>8} {r['cost_usd']:>9.4f} | {r['evaluator_get_metric_data_calls']:>8} "
            f"{r['evaluator_metrics_requested']:>12} {r['evaluator_cost_usd']:>11.4f} | {r['seconds_audit']:>7}",
            flush=True,
        )
        print(f"        calls by operation: {r['calls']}", flush=True)


if __name__ == "__main__":
    main()

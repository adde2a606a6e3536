"""The Lambda path: the real trail-ingest handler on a moto server, per million records.

Run from the repository root::

    python -m benchmarks.lambda_path [--records N] [--repeat R] [--memory-mb M]

What it does:

1. Takes the ingest benchmark's cached ``{"Records":[...]}`` ``.json.gz`` file (``benchmarks.ingest``; default
   200,000 records, generated once).
2. Starts a moto server (``ThreadedMotoServer``, real HTTP) in its own process, and in another process creates the
   state table (``auditor.demo.stack.create_state_table``, the template's key schema), the trail and reports
   buckets, and uploads the file under a CloudTrail log key.
3. Runs, ``R`` times (default 3, medians reported), a fresh process that imports ``handlers.trail_ingest`` and calls
   ``lambda_handler`` with an SQS event carrying the S3 notification of that object (the shape of
   ``events/trail_ingest_sqs.json``): S3 object in, state-table writes and the object's event fingerprints (one S3
   PUT, ``FINGERPRINTS_BUCKET`` as the template sets it) out. Each run uses a new object key and an
   empty state table, so every run ingests (none is a duplicate). In that process it measures:

   - CPU seconds of the invocation (``getrusage``: every thread, the gunzip reader included) and of its main
     thread alone (``time.thread_time``), and the cold start (imports and clients) separately;
   - peak memory: the process's ``ru_maxrss`` (what Lambda reports as "Max Memory Used": the whole process);
   - state-table write units: every ``PutItem`` and ``BatchWriteItem`` request the handler sends is sized with
     :func:`auditor.models.dynamodb_size.item_size` (the documented DynamoDB item-size rules) and charged
     ``ceil(size / 1 KB)`` write request units, as on-demand DynamoDB bills them.

4. Converts to the Lambda bill at the template's ``TrailIngestFunction`` memory setting (read from template.yaml,
   or ``--memory-mb``). Lambda gives a function CPU in proportion to its memory, one vCPU at 1,769 MB, so a
   CPU-bound invocation lasts about ``CPU s / (memory / 1769)`` below that; above it, no less than the main
   thread's CPU time. GB-seconds = memory in GB x that duration; arm64 price $0.0000133334 per GB-second (the
   template's architecture), plus $0.20 per million requests, the state table's $0.625 per million write
   request units and S3's $0.005 per 1,000 PUTs. Network time to S3 and DynamoDB is not modelled (a local moto
   server answers in microseconds).

Processes are spawned from this driver, which imports only the standard library and ``benchmarks.ingest`` (a child's
``ru_maxrss`` is never below its parent's; see ``benchmarks.ingest``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

from benchmarks.ingest import REPO, ensure_file, run_child

#: Lambda gives one vCPU at this memory size (MB), and CPU in proportion below it.
MB_PER_VCPU = 1769
#: USD, us-east-1, arm64 (the template's architecture).
PRICE_GB_SECOND = 0.0000133334
PRICE_REQUEST = 0.20 / 1_000_000
PRICE_WRITE_UNIT = 0.625 / 1_000_000
PRICE_S3_PUT = 0.005 / 1_000
#: CloudTrail writes at most 50 MB (compressed) per log file; SQS hands the function up to 5 objects at once.
MAX_OBJECT_GZ_BYTES = 50 * 1_000_000
BATCH_SIZE = 5

BUCKET = "aws-cloudtrail-logs-111122223333-bench"
#: The reports bucket, where trail ingest writes each object's event fingerprints (``FINGERPRINTS_BUCKET``).
REPORTS = "auditor-reports-bench"
TABLE = "auditor-state-bench"
REGION = "us-east-1"


def template_memory_mb(function: str = "TrailIngestFunction") -> int:
    """``MemorySize`` of ``function`` in template.yaml."""
    text = (REPO / "template.yaml").read_text()
    start = text.index(f"\n  {function}:\n")
    m = re.compile(r"\n      MemorySize: (\d+)\n").search(text, start)
    if m is None:
        raise RuntimeError(f"no MemorySize for {function} in template.yaml")
    return int(m.group(1))


# ----------------------------------------------------------------------------------------------- child processes


def _env(endpoint: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_SESSION_TOKEN="testing",
        AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION,
        AWS_ENDPOINT_URL=endpoint,
        STATE_TABLE_NAME=TABLE,
        FINGERPRINTS_BUCKET=REPORTS,
        LOG_LEVEL="WARNING",
        POWERTOOLS_SERVICE_NAME="trail-ingest",
        POWERTOOLS_METRICS_NAMESPACE="DdbTrafficAuditor",
        POWERTOOLS_TRACE_DISABLED="true",
        POWERTOOLS_METRICS_DISABLED="true",
    )
    return env


def _serve() -> int:
    """Child: a moto server on a free port; prints ``host:port`` and runs until stdin closes."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    print(f"{host}:{port}", flush=True)
    sys.stdin.read()
    server.stop()
    return 0


def _setup(path: str, key: str) -> int:
    """Child: an empty state table (recreated), the bucket, and the object under ``key``."""
    import boto3

    from auditor.demo.stack import create_state_table

    ddb = boto3.client("dynamodb")
    s3 = boto3.client("s3")
    if TABLE in ddb.list_tables()["TableNames"]:
        ddb.delete_table(TableName=TABLE)
    create_state_table(ddb, TABLE)
    buckets = [b["Name"] for b in s3.list_buckets().get("Buckets", [])]
    for bucket in (BUCKET, REPORTS):
        if bucket not in buckets:
            s3.create_bucket(Bucket=bucket)
    s3.upload_file(path, BUCKET, key)
    return 0


def _sqs_event(key: str, size: int) -> dict[str, Any]:
    notification = {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": REGION,
                "eventTime": "2026-12-01T10:05:00.000Z",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "bucket": {"name": BUCKET, "arn": f"arn:aws:s3:::{BUCKET}"},
                    "object": {"key": key, "size": size},
                },
            }
        ]
    }
    return {
        "Records": [
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": "bench",
                "body": json.dumps(notification),
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": "1764583500000",
                    "SenderId": "AIDAEXAMPLE",
                    "ApproximateFirstReceiveTimestamp": "1764583500001",
                },
                "messageAttributes": {},
                "md5OfBody": "0" * 32,
                "eventSource": "aws:sqs",
                "eventSourceARN": f"arn:aws:sqs:{REGION}:111122223333:trail-ingest",
                "awsRegion": REGION,
            }
        ]
    }


class _Context:
    function_name = "trail-ingest"
    function_version = "$LATEST"
    invoked_function_arn = f"arn:aws:lambda:{REGION}:111122223333:function:trail-ingest"
    memory_limit_in_mb = 1024
    aws_request_id = "5f1c7e1a-0000-4000-8000-000000000001"
    log_group_name = "/aws/lambda/trail-ingest"
    log_stream_name = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


def _invoke(key: str, size: int) -> int:
    """Child: cold start, one handler invocation, and what it cost; prints one JSON line."""
    import resource

    began = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    from handlers import runtime, trail_ingest

    runtime.prepare()  # the cold start: logging, then the clients the handler uses
    ddb = runtime.CLIENTS.dynamodb
    runtime.CLIENTS.s3  # noqa: B018 - built now, so the invocation's CPU excludes it (as in a warm container)
    from auditor.models.dynamodb_size import item_size, write_capacity_units

    writes = {"requests": 0, "items": 0, "units": 0}

    def count(params: dict[str, Any], **_: Any) -> None:
        items = [params["Item"]] if "Item" in params else []
        for requests in params.get("RequestItems", {}).values():
            items += [r["PutRequest"]["Item"] for r in requests if "PutRequest" in r]
        writes["requests"] += 1
        writes["items"] += len(items)
        writes["units"] += sum(write_capacity_units(item_size(item)) for item in items)

    for op in ("PutItem", "BatchWriteItem"):
        ddb.meta.events.register(f"before-parameter-build.dynamodb.{op}", count)
    puts = {"requests": 0}

    def count_put(**_: Any) -> None:
        puts["requests"] += 1

    runtime.CLIENTS.s3.meta.events.register("before-parameter-build.s3.PutObject", count_put)
    cold = resource.getrusage(resource.RUSAGE_SELF)
    cold_wall = time.perf_counter() - t0

    event = _sqs_event(key, size)
    main0 = time.thread_time()
    t1 = time.perf_counter()
    response = trail_ingest.lambda_handler(event, _Context())  # type: ignore[arg-type]
    wall = time.perf_counter() - t1
    main_cpu = time.thread_time() - main0
    done = resource.getrusage(resource.RUSAGE_SELF)

    from auditor.state import keys

    pk, sk = keys.object_pk(BUCKET, key), keys.OBJECT_SK
    mark = ddb.get_item(TableName=TABLE, Key={keys.PK: {"S": pk}, keys.SK: {"S": sk}}, ConsistentRead=True).get("Item")
    stats = {k: int(v["N"]) for k, v in mark["stats"]["M"].items()} if mark else {}
    print(
        json.dumps(
            {
                "failures": len(response.get("batchItemFailures", [])),
                "cold_cpu_s": (cold.ru_utime + cold.ru_stime) - (began.ru_utime + began.ru_stime),
                "cold_wall_s": cold_wall,
                "cpu_s": (done.ru_utime + done.ru_stime) - (cold.ru_utime + cold.ru_stime),
                "main_cpu_s": main_cpu,
                "wall_s": wall,
                "peak_mb": done.ru_maxrss / 1024,
                "stats": stats,
                "writes": writes,
                "s3_puts": puts["requests"],
            }
        ),
        flush=True,
    )
    return 0


# ----------------------------------------------------------------------------------------------------- the driver


def _child(args: list[str], env: dict[str, str]) -> str:
    done = run_child([sys.executable, "-m", "benchmarks.lambda_path", *args], env)
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return done.stdout


def lambda_cost(cpu_s: float, main_cpu_s: float, memory_mb: int) -> tuple[float, float]:
    """(estimated billed seconds, GB-seconds) of an invocation that used ``cpu_s`` (``main_cpu_s`` on its main
    thread) at ``memory_mb`` (see the module docstring)."""
    vcpus = memory_mb / MB_PER_VCPU
    duration = max(cpu_s / vcpus, main_cpu_s)
    return duration, memory_mb / 1024 * duration


def run(args: argparse.Namespace) -> None:
    path, _ = ensure_file(args.records, max(1, args.records // 4), 1)
    size = path.stat().st_size
    memory = args.memory_mb or template_memory_mb()
    print(f"object: {path.name} ({args.records:,} records, {size / 1e6:.1f} MB gz)", flush=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.lambda_path", "--serve"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        endpoint = "http://" + server.stdout.readline().strip()
        env = _env(endpoint)
        runs: list[dict[str, Any]] = []
        for i in range(args.repeat):
            key = f"AWSLogs/111122223333/CloudTrail/{REGION}/2026/12/01/111122223333_CloudTrail_{REGION}_{i}.json.gz"
            _child(["--setup", str(path), key], env)
            out = json.loads(_child(["--invoke", key, str(size)], env).strip().splitlines()[-1])
            runs.append(out)
            print(
                f"  run {i + 1}/{args.repeat}: {out['cpu_s']:.2f} s CPU ({out['main_cpu_s']:.2f} s main thread), "
                f"{out['wall_s']:.2f} s wall, peak {out['peak_mb']:.0f} MB, "
                f"{out['writes']['items']} items / {out['writes']['units']} write units, "
                f"failures {out['failures']}",
                flush=True,
            )
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)

    good = [r for r in runs if r["failures"] == 0 and r["stats"].get("records_read") == args.records]
    if not good:
        print("lambda path: not measured (every invocation failed or read a different number of records)")
        return
    cpu = statistics.median(r["cpu_s"] for r in good)
    main_cpu = statistics.median(r["main_cpu_s"] for r in good)
    peak = statistics.median(r["peak_mb"] for r in good)
    cold_cpu = statistics.median(r["cold_cpu_s"] for r in good)
    units = statistics.median(r["writes"]["units"] for r in good)
    items = statistics.median(r["writes"]["items"] for r in good)
    s3_puts = statistics.median(r["s3_puts"] for r in good)
    per_m = 1_000_000 / args.records
    stats = good[0]["stats"]
    print()
    print(
        f"records read {stats.get('records_read', 0):,}, data events {stats.get('data_events', 0):,}, "
        f"skipped {stats.get('records_skipped', 0):,}"
    )
    print(f"cold start (imports, clients): {cold_cpu:.2f} s CPU")
    print(f"CPU per million records: {cpu * per_m:.2f} s (main thread {main_cpu * per_m:.2f} s)")
    print(f"peak memory: {peak:.0f} MB for a {size / 1e6:.1f} MB gz object (streamed: bounded, not per record)")
    print(f"state-table writes per object: {items:.0f} items, {units:.0f} write request units")
    print(f"S3 PUTs per object: {s3_puts:.0f} (its event fingerprints)")
    records_max = args.records * MAX_OBJECT_GZ_BYTES / size
    print()
    print(
        f"{'memory MB':>9} {'s / 1M rec':>10} {'GB-s / 1M':>10} {'$ / 1M rec':>11} "
        f"{'s, 50 MB object':>15} {'s, batch of 5':>13}"
    )
    sizes = sorted({128, 256, 512, 1024, MB_PER_VCPU, 3008, memory})
    for mb in sizes:
        duration, gbs = lambda_cost(cpu * per_m, main_cpu * per_m, mb)
        # One invocation per object (BatchSize 5 shares one invocation between up to 5 objects: fewer requests).
        dollars = gbs * PRICE_GB_SECOND + per_m * (PRICE_REQUEST + units * PRICE_WRITE_UNIT + s3_puts * PRICE_S3_PUT)
        biggest, _ = lambda_cost(cpu * records_max / args.records, main_cpu * records_max / args.records, mb)
        mark = "  <- template" if mb == memory else ""
        fits = "" if peak < mb else "  (does not fit: peak memory)"
        print(
            f"{mb:>9} {duration:>10.2f} {gbs:>10.2f} {dollars:>11.5f} {biggest:>15.1f} "
            f"{biggest * BATCH_SIZE:>13.1f}{mark}{fits}"
        )
    duration, gbs = lambda_cost(cpu * per_m, main_cpu * per_m, memory)
    dollars = gbs * PRICE_GB_SECOND + per_m * (PRICE_REQUEST + units * PRICE_WRITE_UNIT + s3_puts * PRICE_S3_PUT)
    print()
    print(
        f"lambda_cpu_s_per_million={cpu * per_m:.3f} peak_mb={peak:.1f} memory_mb={memory} "
        f"gb_s_per_million={gbs:.3f} usd_per_million={dollars:.5f} write_units_per_object={units:.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    description = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lambda_path", description=description)
    parser.add_argument("--records", type=int, default=200_000, help="records in the object (default 200000)")
    parser.add_argument("--repeat", type=int, default=3, help="invocations, each in a fresh process (default 3)")
    parser.add_argument("--memory-mb", type=int, help="memory setting to price (default: the template's)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--setup", nargs=2, metavar=("FILE", "KEY"), help=argparse.SUPPRESS)
    parser.add_argument("--invoke", nargs=2, metavar=("KEY", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return _serve()
    if args.setup:
        return _setup(*args.setup)
    if args.invoke:
        # The handler runs its interpreted source, as in Lambda (whose package is built pure Python), even where
        # `pip install` compiled modules here.
        from benchmarks.interpreted import use_source

        use_source()
        return _invoke(args.invoke[0], int(args.invoke[1]))
    if args.records < 1 or args.repeat < 1:
        parser.error("--records and --repeat must be >= 1")
    try:
        run(args)
    except (RuntimeError, OSError) as exc:  # report, never gate
        print(f"benchmark could not run: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Organisation audit benchmark: call count and run time of the live audit over many accounts and Regions.

Run from the repository root::

    python -m benchmarks.org_audit [--accounts 200] [--regions us-east-1,eu-west-1,ap-southeast-2] [--tables 2]
                                   [--concurrency 1,8,16] [--latency-ms 40] [--scheduled [--limit-seconds 900]]

It starts a moto server (real HTTP), creates ``--tables`` provisioned tables in each account and Region (moto
attributes requests made with assumed-role credentials to that account), then runs
:func:`auditor.service.org_audit.run_org_audit` over every (account, Region) with each concurrency bound: AssumeRole
once per account, then inventory, CloudWatch metrics and Contributor Insights per target, one hour, no billing. It
prints the calls by operation, the wall time, and the time per target, so the reader can judge the Lambda limit
(900 s) for a larger Organization. The baseline is the first concurrency listed (1 by default), measured in the
same process.

With ``--scheduled`` it runs the deployed service's hourly metrics audit instead
(:func:`auditor.service.metrics_audit.run_org_metrics_audit`, the Lambda's code path): every pair is audited *and
recorded* (open findings read, findings and outbox written to a state table on the same server, one SNS drain), with
the cycle cursor in the state table. Each simulated invocation gets ``--limit-seconds`` of wall time (900, the Lambda
limit); invocations follow each other until the cycle is finished, so a cycle that does not fit shows how many
invocations it needs. Every AWS call is counted, the state table and SNS included (a botocore ``before-call`` hook).

It exits 0 whatever the results: it reports, it does not gate.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from functools import partial
from typing import Any


def _session(endpoint: str, account: str | None) -> Any:
    import boto3

    if account is None:
        return boto3.Session(region_name="us-east-1")
    sts = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1")
    creds = sts.assume_role(RoleArn=f"arn:aws:iam::{account}:role/setup", RoleSessionName="setup")["Credentials"]
    return boto3.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
    )


class CallCounter:
    """Counts every AWS call of the sessions it is attached to, by ``service:Operation`` (thread-safe)."""

    def __init__(self) -> None:
        import threading
        from collections import Counter

        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def attach(self, events: Any) -> None:
        events.register("before-call", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.calls[f"{model.service_model.endpoint_prefix}:{model.name}"] += 1


def _latent_factory() -> Any:
    from auditor.sources.org import SessionFactory

    class LatentFactory(SessionFactory):
        """Sessions whose every request first waits ``latency`` seconds (the network time of a real endpoint)."""

        latency = 0.0
        counter: CallCounter | None = None

        def session(self, account: str | None) -> Any:
            session = super().session(account)
            if not getattr(session, "_bench_hooked", False):
                if self.latency:
                    session.events.register("before-send", lambda **_: time.sleep(self.latency))
                if self.counter is not None:
                    self.counter.attach(session.events)
                session._bench_hooked = True
            return session

    return LatentFactory


def _seconds_to(deadline: float) -> float:
    return deadline - time.monotonic()


def _scheduled(endpoint: str, accounts: list[str], regions: list[str], concurrency: int, args: Any) -> None:
    """The scheduled metrics audit's cycle over every pair, invocation after invocation (see the module docstring)."""
    from datetime import UTC, datetime

    import boto3

    from auditor.demo.stack import create_state_table
    from auditor.service.metrics_audit import MetricsAuditParams, run_org_metrics_audit
    from auditor.service.record import LifecycleParams
    from auditor.state.audit_cycle import AuditCycleStore
    from auditor.state.findings_store import FindingsStore

    counter = CallCounter()
    base = boto3.Session(region_name="us-east-1")
    ddb, sns = base.client("dynamodb"), base.client("sns")
    sts = base.client("sts")  # the factory's AssumeRole client (counted from factory.assume_calls)
    for client in (ddb, sns):
        counter.attach(client.meta.events)
        if args.latency_ms:
            client.meta.events.register("before-send", lambda **_: time.sleep(args.latency_ms / 1000))
    state = f"bench-state-{concurrency}"
    create_state_table(ddb, state)
    topic = sns.create_topic(Name=f"bench-findings-{concurrency}")["TopicArn"]
    counter.calls.clear()
    params = MetricsAuditParams(lifecycle=LifecycleParams(topic_arn=topic), lookback_seconds=3_600)
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    cycles = AuditCycleStore(ddb, state)
    store = FindingsStore(ddb, state)
    invocations, began, pairs, gaps = 0, time.perf_counter(), 0, 0
    longest = 0.0
    while True:
        factory = _latent_factory()(base, "DdbTrafficAuditorMember", own_account="123456789012", sts=sts)
        factory.latency = args.latency_ms / 1000
        factory.counter = counter
        invocations += 1
        started = time.monotonic()
        deadline = started + args.limit_seconds
        result = run_org_metrics_audit(
            factory,
            lambda: (accounts, regions),
            store,
            sns,
            params,
            now,
            cycles=cycles,
            concurrency=concurrency,
            time_left=partial(_seconds_to, deadline),
        )
        longest = max(longest, time.monotonic() - started)
        pairs += len(result.runs)
        gaps += len(result.gaps)
        counter.calls["sts:AssumeRole"] += factory.assume_calls  # made by the factory's own STS client
        doc = result.as_dict()
        cycle = doc["cycle"]
        print(
            f"  invocation {invocations}: pairs {cycle['first']}..{cycle['next'] - 1} of {cycle['pairs']}, "
            f"{time.monotonic() - started:.1f} s, {cycle['remaining']} left"
        )
        if cycle["remaining"] == 0 or invocations >= 20:
            break
    seconds = time.perf_counter() - began
    total = sum(counter.calls.values())
    print(
        f"\nscheduled, concurrency {concurrency} (+{args.latency_ms:g} ms per call, {args.limit_seconds:g} s per "
        f"invocation): {pairs} pairs audited and recorded, {gaps} coverage gaps, in {invocations} invocation(s) "
        f"(longest {longest:.1f} s); {total} AWS calls ({total / max(1, pairs):.1f} per pair); {seconds:.1f} s "
        f"({1000 * seconds / max(1, pairs):.0f} ms per pair)"
    )
    for call, n in sorted(counter.calls.items()):
        print(f"  {call:45s} {n:7d}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accounts", type=int, default=200)
    parser.add_argument("--regions", default="us-east-1,eu-west-1,ap-southeast-2")
    parser.add_argument("--tables", type=int, default=2, help="tables per account and Region")
    parser.add_argument("--concurrency", default="1,8,16")
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="added to every AWS call of the audit (a botocore before-send hook): moto answers in about a "
        "millisecond of CPU, AWS in tens of milliseconds of network wait, which is what concurrency overlaps",
    )
    parser.add_argument("--scheduled", action="store_true", help="the deployed hourly metrics audit (see above)")
    parser.add_argument("--limit-seconds", type=float, default=900.0, help="--scheduled: wall time per invocation")
    args = parser.parse_args(argv)

    from botocore.config import Config
    from moto.server import ThreadedMotoServer

    from auditor.observability import configure_logging
    from auditor.service.org_audit import run_org_audit
    from auditor.sources.inventory import TableSelector
    from auditor.sources.org import targets

    _LatentFactory = _latent_factory()  # noqa: N806 - a class

    configure_logging("WARNING")
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_MAX_ATTEMPTS": "1",
    }.items():
        os.environ[key] = value
    try:
        regions = [r.strip() for r in args.regions.split(",") if r.strip()]
        accounts = [f"{300000000000 + i:012d}" for i in range(args.accounts)]
        began = time.perf_counter()
        config = Config(retries={"total_max_attempts": 1})
        for account in accounts:
            session = _session(endpoint, account)
            for region in regions:
                ddb = session.client("dynamodb", region_name=region, config=config)
                for t in range(args.tables):
                    ddb.create_table(
                        TableName=f"t{t}",
                        BillingMode="PROVISIONED",
                        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                    )
        print(
            f"setup: {len(accounts)} accounts x {len(regions)} Regions x {args.tables} tables "
            f"in {time.perf_counter() - began:.1f} s"
        )
        now = int(time.time())
        end = now - now % 60
        baseline: float | None = None
        for concurrency in [int(c) for c in args.concurrency.split(",")]:
            if args.scheduled:
                _scheduled(endpoint, accounts, regions, concurrency, args)
                continue
            factory = _LatentFactory(_session(endpoint, None), "DdbTrafficAuditorMember", own_account="123456789012")
            factory.latency = args.latency_ms / 1000
            result = run_org_audit(
                factory,
                targets(accounts, regions),
                TableSelector(),
                start=end - 3_600,
                end=end,
                now=now,
                max_workers=concurrency,
            )
            doc = result.to_dict()["stats"]
            baseline = baseline or result.seconds
            print(
                f"\nconcurrency {concurrency} (+{args.latency_ms:g} ms per call): {doc['targets']} targets, "
                f"{doc['targets_audited']} audited, "
                f"{doc['targets_not_covered']} not covered, {doc['tables_audited']} tables; "
                f"{doc['api_calls_total']} API calls; {result.seconds:.1f} s "
                f"({1000 * result.seconds / max(1, doc['targets']):.0f} ms per target; "
                f"{baseline / result.seconds:.2f}x as fast as the first run)"
            )
            for call, n in doc["api_calls"].items():
                print(f"  {call:45s} {n:7d}")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

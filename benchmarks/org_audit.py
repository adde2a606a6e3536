"""Organisation audit benchmark: call count and run time of the live audit over many accounts and Regions.

Run from the repository root::

    python -m benchmarks.org_audit [--accounts 200] [--regions us-east-1,eu-west-1,ap-southeast-2] [--tables 2]
                                   [--concurrency 1,8,16]

It starts a moto server (real HTTP), creates ``--tables`` provisioned tables in each account and Region (moto
attributes requests made with assumed-role credentials to that account), then runs
:func:`auditor.service.org_audit.run_org_audit` over every (account, Region) with each concurrency bound: AssumeRole
once per account, then inventory, CloudWatch metrics and Contributor Insights per target, one hour, no billing. It
prints the calls by operation, the wall time, and the time per target, so the reader can judge the Lambda limit
(900 s) for a larger Organization. The baseline is the first concurrency listed (1 by default), measured in the
same process.
It exits 0 whatever the results: it reports, it does not gate.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
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


def _latent_factory() -> Any:
    from auditor.sources.org import SessionFactory

    class LatentFactory(SessionFactory):
        """Sessions whose every request first waits ``latency`` seconds (the network time of a real endpoint)."""

        latency = 0.0

        def session(self, account: str | None) -> Any:
            session = super().session(account)
            if self.latency and not getattr(session, "_bench_latency", False):
                session.events.register("before-send", lambda **_: time.sleep(self.latency))
                session._bench_latency = True
            return session

    return LatentFactory


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

"""A deterministic generator of realistic CloudTrail DynamoDB data events, with planted problems.

Used by the tests, the benchmarks and ``make demo``; everything is driven by ``random.Random(seed)`` and a ``start``
time passed in, so the same arguments always give the same records and bytes. This module is the command
(``python -m auditor.demo.generator``) that writes them; its pieces and options are in docs/demo.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from auditor.demo.benchmark import write_large_log_file
from auditor.demo.records import DEFAULT_ACCOUNT, DEFAULT_REGION, DEFAULT_START
from auditor.demo.trail import write_trail
from auditor.demo.workload import Workload, generate_workload

__all__ = ["main"]


def _parse_start(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m auditor.demo.generator``: write a demo trail or one large benchmark log file."""
    parser = argparse.ArgumentParser(
        prog="python -m auditor.demo.generator", description="Generate realistic CloudTrail DynamoDB data events."
    )
    parser.add_argument("--out", type=Path, help="write the demo workload as a CloudTrail trail under DIR")
    parser.add_argument("--hours", type=float, default=1.0, help="length of the demo window (default 1)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default 7, or 1 for --benchmark)")
    parser.add_argument("--start", type=_parse_start, default=DEFAULT_START, help="ISO-8601 start (UTC)")
    parser.add_argument("--account", default=DEFAULT_ACCOUNT)
    parser.add_argument("--region", default=DEFAULT_REGION)
    parser.add_argument("--duplicates", type=int, default=5, help="records duplicated across files (default 5)")
    parser.add_argument("--benchmark", type=int, metavar="N", help="write N benchmark records to --file")
    parser.add_argument("--distinct-keys", type=int, metavar="K", help="distinct partition keys (benchmark)")
    parser.add_argument("--file", type=Path, help="output .json.gz file of --benchmark")
    args = parser.parse_args(argv)

    began = time.perf_counter()
    if args.benchmark is not None:
        if args.file is None:
            parser.error("--benchmark needs --file")
        keys = args.distinct_keys if args.distinct_keys is not None else max(1, args.benchmark // 4)
        seed = 1 if args.seed is None else args.seed
        try:
            count = write_large_log_file(args.file, args.benchmark, keys, seed)
        except ValueError as exc:
            parser.error(str(exc))
        size = args.file.stat().st_size
        elapsed = time.perf_counter() - began
        print(f"wrote {count} records ({keys} distinct keys) to {args.file}: {size / 1e6:.1f} MB in {elapsed:.1f} s")
        return 0
    if args.out is None:
        parser.error("give --out DIR (demo trail) or --benchmark N --file PATH")
    seed = 7 if args.seed is None else args.seed
    workload = Workload(account=args.account, region=args.region, hours=args.hours, seed=seed)
    records = generate_workload(workload, args.start)
    paths = write_trail(records, args.out, args.account, args.region, seed=seed, duplicates=args.duplicates)
    digests = sum(1 for p in paths if "CloudTrail-Digest" in p.parts)
    elapsed = time.perf_counter() - began
    print(
        f"wrote {len(records)} records in {len(paths) - digests} log files and {digests} digest file(s) "
        f"under {args.out} in {elapsed:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

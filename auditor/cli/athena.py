"""``ddb-audit athena``: a trail bucket's history analysed as SQL in Amazon Athena (auditor.service.athena_audit),
per table and window, with the same detectors and findings as ``analyze-trail``."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

from auditor.cli.common import (
    Command,
    Subparsers,
    add_aws_options,
    add_output_options,
    aws_session,
    info,
    output_result,
    warn,
)
from auditor.cli.progress import count_calls, progress
from auditor.config import get_settings, load_analysis_config
from auditor.exceptions import InputError
from auditor.findings_text import render_markdown, render_table

NAME = "athena"


def add_parser(sub: Subparsers) -> None:
    athena = sub.add_parser(
        NAME,
        help="analyse a trail bucket's history with Amazon Athena (SQL per table and window; same detectors and "
        "findings as analyze-trail)",
    )
    athena.add_argument("--bucket", required=True, metavar="NAME", help="the trail bucket (any account you can read)")
    athena.add_argument("--prefix", default="", metavar="P", help="the trail's S3 key prefix, if any")
    athena.add_argument(
        "--organization-id", metavar="o-...", help="organisation trail: AWSLogs/o-.../ACCOUNT/CloudTrail/REGION/..."
    )
    athena.add_argument("--accounts", required=True, metavar="ID,...", help="accounts whose events to read")
    athena.add_argument("--regions", required=True, metavar="R,...", help="Regions whose events to read")
    athena.add_argument("--start", metavar="ISO", help="start of the range, ISO 8601 (default: --hours before --end)")
    athena.add_argument("--end", metavar="ISO", help="end of the range, ISO 8601 (default: now, to the minute)")
    athena.add_argument("--hours", type=float, default=24.0, metavar="N", help="length of the range (default 24)")
    athena.add_argument("--database", default="default", metavar="DB", help="Glue database for the table")
    athena.add_argument("--workgroup", metavar="WG", help="Athena workgroup (default: primary)")
    athena.add_argument(
        "--output-location", metavar="S3URI", help="s3://... for query results (unless the workgroup sets one)"
    )
    athena.add_argument("--timeout", type=float, default=900.0, metavar="S", help="seconds per query (default 900)")
    athena.add_argument(
        "--price-per-tb", type=float, default=5.0, metavar="USD", help="Athena price per TB scanned (default 5)"
    )
    add_aws_options(athena, "the Athena Region (default: the standard boto3 configuration)")
    athena.add_argument("--config", metavar="FILE", help="analysis config JSON (window, key schema, thresholds)")
    add_output_options(athena)


def _utc_time(text: str, option: str) -> datetime:
    """``text`` as an aware UTC time (naive input is UTC), years 1970 to 2999."""
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{option}: not an ISO 8601 time: {text!r}") from None
    from auditor.sources.athena import MAX_YEAR, MIN_YEAR

    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    # The local year first: converting year 1 or 9999 to UTC can overflow.
    if not MIN_YEAR <= t.year <= MAX_YEAR or not MIN_YEAR <= t.astimezone(UTC).year <= MAX_YEAR:
        raise InputError(f"{option}: {text!r} is out of range (years {MIN_YEAR} to {MAX_YEAR})")
    return t.astimezone(UTC)


def _time_range(args: argparse.Namespace) -> tuple[datetime, datetime]:
    """``--start``/``--end``/``--hours`` as a UTC range, checked in full before any AWS call."""
    from auditor.sources.athena import check_time_range

    now = datetime.now(UTC).replace(second=0, microsecond=0)
    end = _utc_time(args.end, "--end") if args.end else now
    start = _utc_time(args.start, "--start") if args.start else end - timedelta(hours=args.hours)
    check_time_range(start, end)
    return start, end


def run(args: argparse.Namespace) -> int:
    """``athena``: the trail analysis as SQL in Amazon Athena (auditor.service.athena_audit)."""
    from auditor.service.athena_audit import run_athena_audit
    from auditor.sources.athena import AthenaScope
    from auditor.sources.aws_calls import CLIENT_CONFIG
    from auditor.sources.org import parse_accounts

    if not 0 < args.hours <= 24 * 400:
        raise InputError("--hours must be more than 0 and at most 9600")
    if args.timeout <= 0 or args.price_per_tb < 0:
        raise InputError("--timeout must be positive and --price-per-tb not negative")
    start, end = _time_range(args)
    scope = AthenaScope(
        bucket=args.bucket,
        prefix=args.prefix,
        organization_id=args.organization_id,
        accounts=tuple(parse_accounts(args.accounts)),
        regions=tuple(sorted({r.strip() for r in args.regions.split(",") if r.strip()})),
        start=start,
        end=end,
        database=args.database,
    )
    config = load_analysis_config(args.config or get_settings().audit_config)
    client = aws_session(args).client("athena", config=CLIENT_CONFIG)
    with progress("athena", unit=" calls") as bar:
        count_calls(client, bar)
        result = run_athena_audit(
            client,
            scope,
            config,
            workgroup=args.workgroup,
            output_location=args.output_location,
            timeout_seconds=args.timeout,
            price_per_tb=args.price_per_tb,
        )
    st = result.stats()
    info(
        f"Athena scanned {st['bytes_scanned']:,} bytes ({st['bytes_scanned'] / 1024**3:.3f} GiB) in "
        f"{len(result.queries)} queries; cost ${st['cost_usd']:.4f} at ${result.price_per_tb:g} per TB"
    )
    if result.rows.data_events == 0:
        warn(
            f"no DynamoDB data events under {scope.location} for {', '.join(scope.accounts)} in "
            f"{', '.join(scope.regions)} from {scope.start.isoformat()} to {scope.end.isoformat()} (check the bucket, "
            "--prefix, --organization-id and that the trail logs DynamoDB data events)"
        )
    warn(*result.rows.problems, *(f"detector failed: {err}" for err in result.detector_errors))
    return output_result(
        args,
        result,
        lambda kept, markdown: (render_markdown if markdown else render_table)(kept, result.access_patterns, st),
    )


COMMAND = Command(NAME, add_parser, run)

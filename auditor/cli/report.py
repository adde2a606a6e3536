"""``ddb-audit report``: the weekly HTML and Markdown report (auditor.report) from findings JSON files, with
capacity charts from capacity histories and billing traces."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from auditor.cli.common import EXIT_OK, Command, Subparsers, read_json
from auditor.exceptions import InputError

NAME = "report"


def add_parser(sub: Subparsers) -> None:
    report = sub.add_parser(NAME, help="render the weekly HTML and Markdown report from a findings JSON file")
    report.add_argument(
        "--findings",
        required=True,
        action="append",
        metavar="FILE",
        help="JSON output of analyze-trail, billing or audit, or a JSON array of findings (- for stdin); repeatable: "
        "the files are merged into one report, findings deduplicated by id",
    )
    report.add_argument("--out", required=True, metavar="DIR", help="directory for report.html and report.md")
    report.add_argument("--previous", metavar="FILE", help="last week's findings JSON, for week-over-week changes")
    report.add_argument(
        "--capacity",
        action="append",
        default=[],
        metavar="FILE",
        help="capacity history for the charts, in the billing --input format (repeatable)",
    )
    report.add_argument(
        "--trace",
        action="append",
        default=[],
        metavar="FILE.csv",
        help="billing --trace-out file to chart (simulated capacity as provisioned; the table is the file's name)",
    )
    report.add_argument(
        "--week",
        metavar="YYYY-Www",
        help="ISO week to report (default: the last complete ISO week, or the latest finding's week when the input "
        "has no finding in it)",
    )


def run(args: argparse.Namespace) -> int:
    from auditor.report.auditor_cost import AuditorUsage
    from auditor.report.inputs import capacity_from_billing_input, merge_findings_documents, parse_findings_document
    from auditor.report.model import IsoWeek, build_report_from_findings, default_week
    from auditor.report.report_pages import write_report

    doc = merge_findings_documents([parse_findings_document(read_json(p), p) for p in args.findings])
    previous = parse_findings_document(read_json(args.previous), args.previous) if args.previous else None
    capacity = [*doc.capacity]  # the series an audit read, then the ones given with --capacity
    capacity += [s for p in args.capacity for s in capacity_from_billing_input(read_json(p), p)]
    if args.trace:
        from auditor.billing.trace import read_trace

        for path in args.trace:
            capacity += capacity_from_billing_input(read_trace(path, Path(path).stem), path)
    now = datetime.now(UTC)
    week = IsoWeek.parse(args.week) if args.week else default_week(doc.findings, now)
    usage = AuditorUsage(cloudtrail_data_events=doc.stats["data_events"]) if "data_events" in doc.stats else None
    report = build_report_from_findings(
        doc.findings,
        now,
        week=week,
        previous_findings=previous.findings if previous else None,
        access_patterns=doc.access_patterns,
        capacity=capacity,
        usage=usage,
        input_stats=doc.stats,
        coverage_gaps=doc.coverage_gaps,
        audited_tables=doc.audited_tables,
    )
    try:
        html_path, md_path = write_report(report, args.out)
    except OSError as exc:
        raise InputError(f"{args.out}: cannot write the report: {exc.strerror or exc}") from exc
    sys.stdout.write(f"{html_path}\n{md_path}\n")
    return EXIT_OK


COMMAND = Command(NAME, add_parser, run)

"""``ddb-audit analyze-trail``: the trail analysis (:func:`auditor.engine.analyze_sources`) of CloudTrail data events
read from files, directories, EventBridge events or stdin, printed in any findings format; each input file opened
advances the progress display."""

from __future__ import annotations

import argparse
import sys

from auditor.cli.common import Command, Subparsers, add_output_options, output_result, warn
from auditor.cli.progress import counted_sources, progress
from auditor.config import get_settings, load_analysis_config
from auditor.exceptions import InputError
from auditor.findings_text import render_markdown, render_table

NAME = "analyze-trail"


def add_parser(sub: Subparsers) -> None:
    trail = sub.add_parser(
        NAME,
        help="analyse CloudTrail DynamoDB data events (files, directories, EventBridge events, or - for stdin)",
    )
    trail.add_argument("paths", nargs="+", metavar="PATH")
    trail.add_argument("--config", metavar="FILE", help="analysis config JSON (window, key schema, thresholds)")
    trail.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="processes reading the input (default: one per CPU, up to 4, for inputs over 8 MB; 1 for stdin)",
    )
    add_output_options(trail)


def run(args: argparse.Namespace) -> int:
    from auditor.engine import analyze_sources
    from auditor.kernel.inputs import discover

    config = load_analysis_config(args.config or get_settings().audit_config)
    if args.jobs is not None and args.jobs < 1:
        raise InputError("--jobs must be at least 1")
    found = discover(args.paths, stdin=sys.stdin.buffer if "-" in args.paths else None)
    with progress("analyze-trail", total=len(found), unit=" files") as bar:
        result = analyze_sources(counted_sources(found, bar), config, args.jobs)
    stats = result.stats
    if stats.files_read == 0:
        why = stats.problems[0] if stats.problems else "no CloudTrail log files found in " + ", ".join(args.paths)
        raise InputError(f"nothing could be read: {why}")
    warn(*stats.problems, *(f"detector failed: {err}" for err in result.detector_errors))
    service_calls = sum(result.service_calls().values())  # AWS services' own calls, kept apart from the users'
    return output_result(
        args,
        result,
        lambda kept, markdown: (render_markdown if markdown else render_table)(
            kept, result.access_patterns, {**stats.as_dict(), "service_calls": service_calls}
        ),
    )


COMMAND = Command(NAME, add_parser, run)

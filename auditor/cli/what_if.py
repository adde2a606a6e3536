"""``ddb-audit what-if``: which keys, indexes and tables throttle first if traffic grows (auditor.whatif), from
CloudTrail input and optionally an audit's CloudWatch capacity; can write a load-test profile. It reads ``--config``
as the detectors do: the tables' item sizes and the partition limits of the ``hot_key`` settings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from auditor.cli.common import EXIT_OK, Command, Subparsers, add_format_option, number_in, read_json, warn
from auditor.config import get_settings, load_analysis_config
from auditor.exceptions import InputError
from auditor.findings_text import FORMATS, to_json

NAME = "what-if"

_growth = number_in(0, 1_000_000, "must be more than 0 (3 means three times today's peak)", include_low=False)


def add_parser(sub: Subparsers) -> None:
    whatif = sub.add_parser(
        NAME,
        help="which keys, indexes and tables throttle first if traffic grows (CloudTrail, optionally CloudWatch)",
    )
    whatif.add_argument("paths", nargs="+", metavar="PATH", help="CloudTrail input, as for analyze-trail")
    whatif.add_argument(
        "--growth", type=_growth, default=2.0, metavar="G", help="traffic multiple to test (default: 2)"
    )
    whatif.add_argument(
        "--audit", metavar="FILE", help="JSON output of ddb-audit audit: CloudWatch capacity of tables and GSIs"
    )
    whatif.add_argument(
        "--profile-out", metavar="FILE", help="also write the load-test profile (JSON) of the observed traffic"
    )
    whatif.add_argument("--config", metavar="FILE", help="analysis config JSON (window, key schema, thresholds)")
    whatif.add_argument("--jobs", type=int, default=None, metavar="N", help="processes reading the input")
    add_format_option(whatif, FORMATS, "output format (default: table)")


def run(args: argparse.Namespace) -> int:
    from auditor.engine import apply_table_facts, ingest_parallel, plan_processes
    from auditor.kernel.inputs import discover
    from auditor.whatif.capacity import capacity_from_audit, profiles_from_audit
    from auditor.whatif.key_rates import finding_peaks
    from auditor.whatif.limits import WhatIfConfig, what_if
    from auditor.whatif.loadtest import load_profile
    from auditor.whatif.whatif_text import render_what_if

    config = load_analysis_config(args.config or get_settings().audit_config)
    if args.jobs is not None and args.jobs < 1:
        raise InputError("--jobs must be at least 1")
    audit = read_json(args.audit) if args.audit else None
    capacity, insight_findings = capacity_from_audit(audit, args.audit) if args.audit else ([], [])
    sources = discover(args.paths, stdin=sys.stdin.buffer if "-" in args.paths else None)
    aggs, stats = ingest_parallel(sources, config, plan_processes(sources, args.jobs))
    if stats.files_read == 0:
        why = stats.problems[0] if stats.problems else "no CloudTrail log files found in " + ", ".join(args.paths)
        raise InputError(f"nothing could be read: {why}")
    warn(*stats.problems)
    spans = aggs.spans()
    # the item sizes of the config, else of the audit (DescribeTable, CloudWatch), and the key schema, as the
    # detectors read them
    profiles = profiles_from_audit(audit) if audit is not None else {}
    for agg in spans:
        apply_table_facts(agg, config, profiles)
    hot_key = config.detector_config("hot_key")
    limits = WhatIfConfig.of_partition_settings(hot_key)
    result = what_if(
        spans,
        args.growth,
        capacity=capacity,
        insight_findings=insight_findings,
        config=limits,
        peak_of=finding_peaks(hot_key),
    )
    if args.profile_out:
        try:
            Path(args.profile_out).write_text(
                to_json(load_profile(spans, args.growth, aggs.windows.values())), encoding="utf-8"
            )
        except OSError as exc:
            raise InputError(f"{args.profile_out}: cannot write the profile: {exc.strerror or exc}") from exc
    text = to_json(result.to_dict()) if args.format == "json" else render_what_if(result, args.format)
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_OK


COMMAND = Command(NAME, add_parser, run)

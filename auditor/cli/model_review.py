"""``ddb-audit model-review``: proposals to change tables' keys and indexes from the access patterns observed in
CloudTrail input (auditor.review), priced by the capacity model; ``--replay`` shows each change at 1x and 2x the
average load and at the observed peak. The input is read once: the review signals are observed in the same pass as
the engine's analysis (:meth:`auditor.review.signals.ReviewSignals.normalizer`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from auditor.cli.common import EXIT_OK, Command, Subparsers, add_format_option, read_json, warn
from auditor.config import get_settings, load_analysis_config
from auditor.exceptions import InputError
from auditor.findings_text import FORMATS, to_json

NAME = "model-review"


def add_parser(sub: Subparsers) -> None:
    review = sub.add_parser(
        NAME, help="propose key, index and item changes from the access patterns in CloudTrail input, priced"
    )
    review.add_argument("paths", nargs="+", metavar="PATH", help="CloudTrail input, as for analyze-trail")
    review.add_argument(
        "--audit", metavar="FILE", help="JSON output of ddb-audit audit: table sizes, unused indexes, large items"
    )
    review.add_argument(
        "--config", metavar="FILE", help="analysis config JSON (window, key schema, item sizes, review thresholds)"
    )
    review.add_argument("--replay", action="store_true", help="also replay each change at 1x, 2x and the observed peak")
    add_format_option(review, FORMATS, "output format (default: table)")


def _audit(path: str | None) -> tuple[list[Mapping[str, Any]], dict[str, Mapping[str, Any]]]:
    """The audit's findings (as JSON dicts) and its table blocks by name."""
    if not path:
        return [], {}
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not the JSON output of ddb-audit audit")
    findings: list[Mapping[str, Any]] = [
        f for f in doc.get("findings") or [] if isinstance(f, dict) and isinstance(f.get("table"), str)
    ]
    tables: dict[str, Mapping[str, Any]] = {
        str(t["table"]): t for t in doc.get("tables") or [] if isinstance(t, dict) and t.get("table")
    }
    return findings, tables


def run(args: argparse.Namespace) -> int:
    from auditor.engine import analysis_of, ingest
    from auditor.kernel.inputs import discover
    from auditor.review.context import ReviewInput
    from auditor.review.review import replay, review
    from auditor.review.review_text import render_review, review_document
    from auditor.review.rewrite import whatif_replay
    from auditor.review.signals import ReviewSignals

    config = load_analysis_config(args.config or get_settings().audit_config)
    audit_findings, tables = _audit(args.audit)
    signals = ReviewSignals.of(config.model_review)
    found = discover(args.paths, stdin=sys.stdin.buffer if "-" in args.paths else None)
    result = analysis_of(*ingest(found, config, normalize=signals.normalizer()), config)
    signals.fold()
    if result.stats.files_read == 0:
        problems = result.stats.problems
        why = problems[0] if problems else "no CloudTrail log files found in " + ", ".join(args.paths)
        raise InputError(f"nothing could be read: {why}")
    warn(*result.stats.problems, *(f"detector failed: {err}" for err in result.detector_errors))
    data = ReviewInput(
        spans=result.aggregates.spans(),
        findings=[f.model_dump(mode="json") for f in result.findings] + audit_findings,
        patterns=result.access_patterns,
        signals=signals,
        tables=tables,
        item_sizes=config.item_size_bytes,
        config=config.model_review,
    )
    proposals = review(data)
    replayed = replay(proposals) if args.replay else None
    whatif = whatif_replay(proposals, data.spans) if args.replay else []
    if args.format == "json":
        text = to_json(review_document(proposals, replayed, whatif))
    else:
        text = render_review(proposals, replayed, args.format, whatif)
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_OK


COMMAND = Command(NAME, add_parser, run)

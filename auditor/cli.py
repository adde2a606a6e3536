"""``ddb-audit``: the command-line interface (docs/contract.md "CLI").

Exit codes: 0 ran; 1 findings at or above ``--fail-on``; 2 usage or input error (one line on stderr);
3 internal error. Output on stdout is built in full before it is written, so it is complete or absent.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import structlog

from auditor.config import get_settings, load_analysis_config
from auditor.exceptions import AuditorError, InputError
from auditor.findings_text import FORMATS, render_columns, render_markdown, render_table, to_json
from auditor.models.finding import Finding, Severity
from auditor.observability import configure_logging

if TYPE_CHECKING:  # the engine is imported lazily so `ddb-audit item-size` starts fast
    from auditor.engine import TrailAnalysis
    from auditor.models.billing import BillingConfig
    from auditor.mutelist import Muted
    from auditor.service.audit import AuditConfig
    from auditor.sources.inventory import TableSelector
    from auditor.sources.org import SessionFactory

#: Formats of every command that prints findings: the command's own three, and three for other tools.
FINDING_FORMATS = (*FORMATS, "csv", "sarif", "asff")

log = structlog.get_logger(__name__)

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        choices=FINDING_FORMATS,
        default="table",
        help="output format (default: table); csv, sarif (SARIF 2.1.0) and asff (AWS Security Finding Format) "
        "list the findings only",
    )
    p.add_argument(
        "--fail-on",
        choices=[s.value for s in Severity],
        default=None,
        metavar="SEVERITY",
        help="exit 1 when a finding is at or above this severity (critical, high, medium, low, info); muted "
        "findings do not count",
    )
    p.add_argument(
        "--mutelist",
        metavar="FILE",
        help="JSON array of mute rules (table, kind, principal, key: globs; until; reason): matching findings are "
        "listed as muted and do not count for --fail-on",
    )
    p.add_argument(
        "--account", metavar="ID", help="AWS account id for --format asff, for findings that do not carry one"
    )


def _add_org_options(p: argparse.ArgumentParser) -> None:
    """Credentials, accounts and Regions of a command that reads AWS (``audit``, ``athena``)."""
    p.add_argument("--profile", metavar="NAME", help="AWS named profile (default: the standard credential chain)")
    p.add_argument(
        "--regions",
        metavar="R,...|all",
        help="audit these Regions (comma-separated), or all where DynamoDB has an endpoint (default: --region)",
    )
    p.add_argument(
        "--accounts",
        metavar="ID,...",
        help="audit these accounts by assuming --role-name in each (comma-separated 12-digit ids)",
    )
    p.add_argument(
        "--org",
        action="store_true",
        help="audit every ACTIVE account of the Organization (organizations:ListAccounts; management or delegated "
        "administrator account), assuming --role-name in each",
    )
    p.add_argument(
        "--role-name",
        metavar="NAME",
        help="the read-only member role to assume in each account (templates/member-role.yaml), e.g. "
        "DdbTrafficAuditorMember",
    )
    p.add_argument("--external-id", metavar="ID", help="ExternalId the member role's trust policy requires, if any")
    p.add_argument(
        "--max-concurrency",
        type=int,
        default=8,
        metavar="N",
        help="accounts x Regions audited at once (1-64, default 8); each also makes a few calls in parallel",
    )


def tool_version() -> str:
    """The installed distribution's version."""
    try:
        return package_version("ddb-traffic-auditor")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = _Parser(prog="ddb-audit", description="Audit how DynamoDB tables are used, from real traffic.")
    parser.add_argument("--version", action="version", version=f"ddb-audit {tool_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    trail = sub.add_parser(
        "analyze-trail",
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
    _add_output_options(trail)

    size = sub.add_parser(
        "item-size", help="exact DynamoDB item sizes (DynamoDB JSON: one item, an array, or one item per line)"
    )
    size.add_argument("file", nargs="?", default="-", metavar="FILE", help="input file, or - for stdin (default)")
    size.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")

    report = sub.add_parser("report", help="render the weekly HTML and Markdown report from a findings JSON file")
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

    audit = sub.add_parser(
        "audit",
        help="read-only live audit: inventory, CloudWatch metrics and Contributor Insights (honours AWS_ENDPOINT_URL)",
    )
    audit.add_argument("--region", metavar="R", help="AWS Region (default: the standard boto3 configuration)")
    audit.add_argument("--tables", metavar="NAME,...", help="audit only these tables (comma-separated)")
    audit.add_argument("--prefix", metavar="P", help="audit only tables whose name starts with P")
    audit.add_argument("--tag", metavar="K=V", help="audit only tables tagged K=V")
    audit.add_argument(
        "--days", type=_audit_days, default=1.0, metavar="N", help="days to look back for the detectors (default: 1)"
    )
    audit.add_argument(
        "--billing-days",
        type=_billing_days,
        default=14.0,
        metavar="N",
        help="days of 1-minute capacity the billing decision reads, at most 15 (default: 14; 0 skips billing)",
    )
    audit.add_argument(
        "--idle-days",
        type=_idle_days,
        default=30.0,
        metavar="N",
        help="days of daily activity read for idle tables and TTL that deletes nothing (default: 30; 0 skips)",
    )
    audit.add_argument(
        "--config", metavar="FILE", help="analysis config JSON: its detector settings (detectors, tables) apply"
    )
    _add_org_options(audit)
    _add_output_options(audit)

    billing = sub.add_parser(
        "billing",
        help="billing-mode and table-class recommendation from one table's capacity history (offline)",
    )
    billing.add_argument(
        "--input", required=True, metavar="FILE", help="capacity history JSON (docs/contract.md), - for stdin"
    )
    billing.add_argument(
        "--simulation",
        choices=("aws", "evaluator"),
        default="aws",
        help="auto-scaling simulation: aws (documented AWS behaviour, default) or evaluator (archived awslabs tool)",
    )
    billing.add_argument("--prices", metavar="FILE", help="price file (JSON) instead of the bundled price table")
    billing.add_argument(
        "--region",
        metavar="R",
        help="price with region R's current list prices from the AWS Pricing API (needs credentials; falls back "
        "to the bundled table, labelled)",
    )
    billing.add_argument(
        "--config",
        metavar="FILE",
        help="decision settings (JSON object: target_utilization, margin, reaction_minutes, read/write: "
        "{target_utilization, min_capacity, max_capacity}, ...); the options below override it",
    )
    billing.add_argument("--target", type=float, metavar="PCT", help="target utilisation for reads and writes (20-90)")
    for dim in ("read", "write"):
        billing.add_argument(f"--{dim}-target", type=float, metavar="PCT", help=f"target utilisation of {dim}s")
        billing.add_argument(
            f"--{dim}-min", type=float, metavar="UNITS", help=f"minimum {dim} capacity (default: searched)"
        )
        billing.add_argument(
            f"--{dim}-max", type=float, metavar="UNITS", help=f"maximum {dim} capacity (default: 2x the peak need)"
        )
    billing.add_argument(
        "--trace-out",
        metavar="FILE.csv",
        help="write the per-minute consumed, simulated provisioned and throttled capacity of every series (CSV)",
    )
    billing.add_argument(
        "--reaction-minutes",
        type=int,
        metavar="N",
        help="minutes from the alarm to the new capacity in force, aws simulation (default 2, an assumption)",
    )
    _add_output_options(billing)

    whatif = sub.add_parser(
        "what-if",
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
    whatif.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")

    athena = sub.add_parser(
        "athena",
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
    athena.add_argument("--profile", metavar="NAME", help="AWS named profile (default: the standard credential chain)")
    athena.add_argument("--region", metavar="R", help="the Athena Region (default: the standard boto3 configuration)")
    athena.add_argument("--config", metavar="FILE", help="analysis config JSON (window, key schema, thresholds)")
    _add_output_options(athena)

    demo = sub.add_parser(
        "demo", help="run the deployed service end to end offline (local AWS endpoint, real handlers, Slack catcher)"
    )
    demo.add_argument("--out", default="audit-demo", metavar="DIR", help="output directory (default: ./audit-demo)")
    demo.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    demo.add_argument(
        "--trail",
        nargs="+",
        metavar="PATH",
        help="replay these CloudTrail files (files, directories, - for stdin; every format analyze-trail reads) "
        "through the pipeline instead of the generated traffic; windows follow the records' event times",
    )
    _add_output_options(demo)
    debug_help = "on an internal error, log the full traceback (JSON on stderr; never local variables)"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    for command in sub.choices.values():  # also accepted after the command; the top-level value is the default
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help)
    return parser


def _fails(findings: Sequence[Finding], fail_on: str | None) -> bool:
    if fail_on is None:
        return False
    floor = Severity(fail_on).rank
    return any(f.severity.rank >= floor for f in findings)


#: A command's own rendering of the findings still reported (json, table or markdown), given the muted ones.
Native = Callable[[list[Finding], "list[Muted] | None"], str]


def _output(args: argparse.Namespace, findings: Sequence[Finding], native: Native) -> int:
    """Apply ``--mutelist``, write the output in one piece, and return the exit code (``--fail-on``).

    ``muted`` is None without ``--mutelist`` (outputs stay as they were), else the muted findings.
    """
    from auditor.mutelist import apply_mutelist, load_mutelist

    now = datetime.now(UTC)
    muted: list[Muted] | None = None
    kept = list(findings)
    if args.mutelist:
        kept, muted = apply_mutelist(findings, load_mutelist(args.mutelist), now)
    fmt = args.format
    if fmt in ("csv", "sarif", "asff"):
        from auditor import formats

        if fmt == "csv":
            text = formats.render_csv(kept, muted or [])
        elif fmt == "sarif":
            text = to_json(formats.sarif_document(kept, muted or [], tool_version()))
        else:
            try:
                text = to_json(formats.asff_document(kept, muted or [], account=args.account, now=now))
            except ValueError as exc:
                raise InputError(str(exc)) from exc
    else:
        text = native(kept, muted)
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_FINDINGS if _fails(kept, args.fail_on) else EXIT_OK


def _with_muted(doc: dict[str, object], muted: list[Muted] | None) -> dict[str, object]:
    """A JSON output document with ``muted`` (each finding with the rule that muted it) under ``--mutelist``."""
    if muted is not None:
        doc["muted"] = [m.to_dict() for m in muted]
    return doc


def _muted_text(muted: list[Muted] | None, markdown: bool = False) -> str:
    """The muted findings as a closing section of a table or Markdown output."""
    if not muted:
        return ""
    head = "## Muted findings" if markdown else "Muted findings (--mutelist)\n==========================="
    lines = ["", head, ""]
    for m in muted:
        f = m.finding
        where = f.table + (f"/{f.index}" if f.index else "")
        text = f"{f.severity.value} {f.kind.value} {where}: {f.title} (muted: {m.rule.reason})"
        lines.append(("- " + text.replace("|", "\\|")) if markdown else text)
    return "\n".join(lines) + "\n"


def _cmd_analyze_trail(args: argparse.Namespace) -> int:
    from auditor.engine import analyze_trail

    config = load_analysis_config(args.config or get_settings().audit_config)
    if args.jobs is not None and args.jobs < 1:
        raise InputError("--jobs must be at least 1")
    stdin = sys.stdin.buffer if "-" in args.paths else None
    result = analyze_trail(args.paths, config, stdin=stdin, processes=args.jobs)
    stats = result.stats
    if stats.files_read == 0:
        why = stats.problems[0] if stats.problems else "no CloudTrail log files found in " + ", ".join(args.paths)
        raise InputError(f"nothing could be read: {why}")
    for problem in stats.problems:
        print(f"ddb-audit: warning: {problem}", file=sys.stderr)
    for err in result.detector_errors:
        print(f"ddb-audit: warning: detector failed: {err}", file=sys.stderr)
    return _output(args, result.findings, lambda kept, muted: _render_trail(args.format, result, kept, muted))


def _render_trail(fmt: str, result: TrailAnalysis, kept: list[Finding], muted: list[Muted] | None) -> str:
    """An analysis as json, table or markdown, with the findings still reported."""
    result.findings = kept
    if fmt == "json":
        return to_json(_with_muted(result.to_dict(), muted))
    if fmt == "markdown":
        return render_markdown(kept, result.access_patterns, result.stats.as_dict()) + _muted_text(muted, True)
    return render_table(kept, result.access_patterns, result.stats.as_dict()) + _muted_text(muted)


def _cmd_item_size(args: argparse.Namespace) -> int:
    from auditor.models.dynamodb_size import iter_item_results

    if args.file == "-":
        data, source = sys.stdin.buffer.read(), "<stdin>"
    else:
        try:
            data, source = Path(args.file).read_bytes(), args.file
        except OSError as exc:
            raise InputError(f"{args.file}: {exc.strerror or exc}") from exc
    results = [r.to_dict() for r in iter_item_results(data, source)]
    if args.format == "json":
        text = to_json(results)
    else:
        rows = [
            (str(n), str(r["size_bytes"]), f"{r['percent_of_limit']:.2f}%", str(r["limit_bytes"]))
            for n, r in enumerate(results, 1)
        ]
        header = ("item", "size_bytes", "of limit", "limit_bytes")
        if args.format == "markdown":
            lines = ["| " + " | ".join(header) + " |", "|---|---|---|---|"] + [
                "| " + " | ".join(r) + " |" for r in rows
            ]
            text = "\n".join(lines) + "\n"
        else:
            text = render_columns(rows, header)
    sys.stdout.write(text)
    return EXIT_OK


def _read_json(path: str) -> object:
    """A whole JSON document from a file or ``-`` (stdin); unreadable or invalid input is an InputError."""
    import orjson

    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from exc


def _cmd_report(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from auditor.report import model
    from auditor.report.report_pages import write_report

    doc = model.merge_findings_documents([model.parse_findings_document(_read_json(p), p) for p in args.findings])
    previous = model.parse_findings_document(_read_json(args.previous), args.previous) if args.previous else None
    capacity = [*doc.capacity]  # the series an audit read, then the ones given with --capacity
    capacity += [s for p in args.capacity for s in model.capacity_from_billing_input(_read_json(p), p)]
    if args.trace:
        from auditor.billing.trace import read_trace

        for path in args.trace:
            capacity += model.capacity_from_billing_input(read_trace(path, Path(path).stem), path)
    now = datetime.now(UTC)
    week = model.IsoWeek.parse(args.week) if args.week else model.default_week(doc.findings, now)
    usage = model.AuditorUsage(cloudtrail_data_events=doc.stats["data_events"]) if "data_events" in doc.stats else None
    report = model.build_report_from_findings(
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


def _cmd_demo(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("moto") is None:
        raise InputError("the demo needs its optional extra: pip install 'ddb-traffic-auditor[demo]' (or make demo)")
    from auditor.demo.service import run_service_demo, summary_text

    # The narrative is the demo's output; with --format json it goes to stderr and stdout carries the findings.
    narrate = sys.stderr if args.format == "json" else sys.stdout
    if args.trail:
        from auditor.demo.replay import replay_summary_text, run_replay

        result = run_replay(args.trail, Path(args.out), announce=lambda m: print(m, file=narrate, flush=True))
        summary_text = replay_summary_text
    else:
        result = run_service_demo(Path(args.out), seed=args.seed, announce=lambda m: print(m, file=narrate, flush=True))
    findings = [Finding.model_validate({k: v for k, v in f.items() if k != "status"}) for f in result.findings]

    def native(kept: list[Finding], muted: list[Muted] | None) -> str:
        if args.format == "json":
            ids = {f.id for f in kept}
            return to_json(_with_muted({"findings": [f for f in result.findings if f["id"] in ids]}, muted))
        if args.format == "markdown":
            return render_markdown(kept, [], {}) + _muted_text(muted, True)
        return summary_text(result) + _muted_text(muted)

    return _output(args, findings, native)


def _number_in(low: float, high: float, why: str, *, include_low: bool = True) -> Callable[[str], float]:
    """An argparse type: a number in [low, high] (or (low, high] without ``include_low``), else ``why``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not ((low <= value) if include_low else (low < value)) or not value <= high:  # NaN fails both
            raise argparse.ArgumentTypeError(why)
        return value

    return parse


_growth = _number_in(0, 1_000_000, "must be more than 0 (3 means three times today's peak)", include_low=False)
_audit_days = _number_in(0, 455, "must be more than 0 and at most 455 (CloudWatch keeps 15 months)", include_low=False)
_idle_days = _number_in(0, 455, "must be 0 (skip) to 455 (CloudWatch keeps hourly data 15 months)")
_billing_days = _number_in(0, 15, "must be 0 (no billing) to 15 (CloudWatch keeps 1-minute data 15 days)")


def _cmd_what_if(args: argparse.Namespace) -> int:
    from auditor.engine import ingest_parallel, plan_processes
    from auditor.kernel.reader import discover
    from auditor.whatif.capacity import capacity_from_audit
    from auditor.whatif.limits import what_if
    from auditor.whatif.loadtest import load_profile
    from auditor.whatif.whatif_text import render_what_if

    config = load_analysis_config(args.config or get_settings().audit_config)
    if args.jobs is not None and args.jobs < 1:
        raise InputError("--jobs must be at least 1")
    capacity, insight_findings = capacity_from_audit(_read_json(args.audit), args.audit) if args.audit else ([], [])
    sources = discover(args.paths, stdin=sys.stdin.buffer if "-" in args.paths else None)
    aggs, stats = ingest_parallel(sources, config, plan_processes(sources, args.jobs))
    if stats.files_read == 0:
        why = stats.problems[0] if stats.problems else "no CloudTrail log files found in " + ", ".join(args.paths)
        raise InputError(f"nothing could be read: {why}")
    for problem in stats.problems:
        print(f"ddb-audit: warning: {problem}", file=sys.stderr)
    spans = aggs.spans()
    result = what_if(spans, args.growth, capacity=capacity, insight_findings=insight_findings)
    if args.profile_out:
        try:
            Path(args.profile_out).write_text(to_json(load_profile(spans, args.growth)), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{args.profile_out}: cannot write the profile: {exc.strerror or exc}") from exc
    text = to_json(result.to_dict()) if args.format == "json" else render_what_if(result, args.format)
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_OK


def _audit_config(args: argparse.Namespace) -> AuditConfig:
    """The audit's detector tree: the ``detectors`` and ``tables`` of ``--config`` (or ``AUDIT_CONFIG``), the same
    document ``analyze-trail`` reads."""
    from auditor.service.audit import AuditConfig

    config = AuditConfig.from_tree(load_analysis_config(args.config or get_settings().audit_config))
    idle_days = getattr(args, "idle_days", 0)
    if not idle_days:
        return config
    # --idle-days sets the idle_table detector's period (over the file's idle_table settings, under per-table ones).
    idle = {**config.detectors.get("idle_table", {}), "idle_days": idle_days}
    return AuditConfig(detectors={**config.detectors, "idle_table": idle}, tables=config.tables)


def _cmd_audit(args: argparse.Namespace) -> int:
    import time

    from auditor.service.audit import AuditError, build_clients, render_audit, run_audit
    from auditor.sources.inventory import TableSelector, parse_tag
    from auditor.sources.pricing_api import PriceBook, pricing_client

    names = tuple(n.strip() for n in (args.tables or "").split(",") if n.strip())
    selector = TableSelector(names=names, prefix=args.prefix or None, tag=parse_tag(args.tag) if args.tag else None)
    now = int(time.time())
    end = now - now % 60
    if args.profile or args.regions or args.accounts or args.org:
        return _cmd_org_audit(args, selector, start=end - int(args.days * 86_400), end=end, now=now)
    result = run_audit(
        build_clients(args.region),
        selector,
        start=end - int(args.days * 86_400),
        end=end,
        now=now,
        billing_days=args.billing_days,
        prices=(book := PriceBook(pricing_client, datetime.now(UTC).date())),
        activity_days=args.idle_days,
        config=_audit_config(args),
    )
    for warning in book.warnings:
        print(f"ddb-audit: warning: {warning}", file=sys.stderr)
    inventory = result.inventory
    if not inventory.tables:
        if names and set(inventory.missing) >= set(names):
            raise InputError("no such table: " + ", ".join(inventory.missing))
        blocking = [g for g in inventory.gaps if g.facet == "tables"]
        if blocking:
            raise AuditError(f"nothing could be audited: {blocking[0].describe()}: {blocking[0].message}")
    for gap in result.gaps:
        print(f"ddb-audit: warning: {gap.describe()}", file=sys.stderr)
    for err in result.errors:
        print(f"ddb-audit: warning: detector failed: {err}", file=sys.stderr)

    def native(kept: list[Finding], muted: list[Muted] | None) -> str:
        result.findings = kept
        if args.format == "json":
            return to_json(_with_muted(result.to_dict(), muted))
        return render_audit(result, args.format) + _muted_text(muted, args.format == "markdown")

    return _output(args, result.findings, native)


def _org_session(args: argparse.Namespace) -> tuple[SessionFactory, list[str], list[str | None]]:
    """The base session, the per-account session factory, the Regions and the accounts of ``--profile``,
    ``--regions``, ``--accounts``/``--org`` and ``--role-name``."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from auditor.sources.aws_calls import CLIENT_CONFIG, error_message
    from auditor.sources.org import SessionFactory, organization_accounts, parse_accounts, parse_regions

    if args.accounts and args.org:
        raise InputError("--accounts and --org are exclusive: pick one")
    if (args.accounts or args.org) and not args.role_name:
        raise InputError("--accounts and --org need --role-name (the member role to assume in each account)")
    if args.regions and args.region:
        raise InputError("--region and --regions are exclusive: pick one")
    listed = parse_accounts(args.accounts) if args.accounts else None
    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    regions = parse_regions(args.regions, session)
    own: str | None = None
    accounts: list[str | None] = [None]
    try:
        if args.accounts or args.org:
            own = session.client("sts", config=CLIENT_CONFIG).get_caller_identity()["Account"]
        if listed is not None:
            accounts = list(listed)
        elif args.org:
            accounts = list(organization_accounts(session.client("organizations", config=CLIENT_CONFIG)))
            if not accounts:
                raise InputError("--org: the Organization lists no ACTIVE account")
    except ClientError as exc:
        raise InputError(f"cannot list the accounts to audit: {error_message(exc)}") from exc
    except BotoCoreError as exc:
        raise InputError(f"cannot reach AWS: {exc}") from exc
    factory = SessionFactory(session, args.role_name, own_account=own, external_id=args.external_id)
    return factory, regions, accounts


def _cmd_org_audit(args: argparse.Namespace, selector: TableSelector, *, start: int, end: int, now: int) -> int:
    """``audit`` over several accounts and/or Regions (or with --profile): see auditor.service.org_audit."""
    from auditor.service.audit import AuditResult
    from auditor.service.org_audit import render_org_audit, run_org_audit
    from auditor.sources.org import MAX_CONCURRENCY, TargetOutcome, targets
    from auditor.sources.pricing_api import PriceBook, pricing_client

    if not 1 <= args.max_concurrency <= MAX_CONCURRENCY:
        raise InputError(f"--max-concurrency must be 1..{MAX_CONCURRENCY}")
    factory, regions, accounts = _org_session(args)
    todo = targets(accounts, regions)
    done = [0]
    tty = sys.stderr.isatty()

    def progress(outcome: TargetOutcome[AuditResult]) -> None:
        done[0] += 1
        if tty:
            state = "ok" if outcome.gap is None else outcome.gap.reason.replace("_", " ")
            print(f"\r[{done[0]}/{len(todo)}] {outcome.target.describe()}: {state}\033[K", end="", file=sys.stderr)

    book = PriceBook(pricing_client, datetime.now(UTC).date())
    result = run_org_audit(
        factory,
        todo,
        selector,
        start=start,
        end=end,
        now=now,
        billing_days=args.billing_days,
        activity_days=args.idle_days,
        prices=book,
        max_workers=args.max_concurrency,
        on_done=progress,
        config=_audit_config(args),
    )
    if tty:
        print(file=sys.stderr)
    for warning in book.warnings:
        print(f"ddb-audit: warning: {warning}", file=sys.stderr)
    for gap in result.coverage_gaps:
        print(f"ddb-audit: warning: not audited: {gap.describe()}", file=sys.stderr)
    if not result.results:
        first = result.coverage_gaps[0]
        raise InputError(f"nothing could be audited: {first.describe()}")

    def native(kept: list[Finding], muted: list[Muted] | None) -> str:
        result.findings = kept
        if args.format == "json":
            return to_json(_with_muted(result.to_dict(), muted))
        return render_org_audit(result, args.format) + _muted_text(muted, args.format == "markdown")

    return _output(args, result.findings, native)


def _utc_time(text: str, option: str) -> datetime:
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{option}: not an ISO 8601 time: {text!r}") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _cmd_athena(args: argparse.Namespace) -> int:
    """``athena``: the trail analysis as SQL in Amazon Athena (auditor.service.athena_audit)."""
    from datetime import timedelta

    import boto3

    from auditor.service.athena_audit import run_athena_audit
    from auditor.sources.athena import AthenaScope
    from auditor.sources.aws_calls import CLIENT_CONFIG
    from auditor.sources.org import parse_accounts

    if not 0 < args.hours <= 24 * 400:
        raise InputError("--hours must be more than 0 and at most 9600")
    if args.timeout <= 0 or args.price_per_tb < 0:
        raise InputError("--timeout must be positive and --price-per-tb not negative")
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    end = _utc_time(args.end, "--end") if args.end else now
    start = _utc_time(args.start, "--start") if args.start else end - timedelta(hours=args.hours)
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
    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    client = session.client("athena", config=CLIENT_CONFIG)
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
    print(
        f"ddb-audit: Athena scanned {st['bytes_scanned']:,} bytes ({st['bytes_scanned'] / 1024**3:.3f} GiB) in "
        f"{len(result.queries)} queries; cost ${st['cost_usd']:.4f} at ${result.price_per_tb:g} per TB",
        file=sys.stderr,
    )
    if result.rows.data_events == 0:
        print(
            f"ddb-audit: warning: no DynamoDB data events under {scope.location} for {', '.join(scope.accounts)} in "
            f"{', '.join(scope.regions)} from {scope.start.isoformat()} to {scope.end.isoformat()} (check the bucket, "
            "--prefix, --organization-id and that the trail logs DynamoDB data events)",
            file=sys.stderr,
        )
    for problem in result.rows.problems:
        print(f"ddb-audit: warning: {problem}", file=sys.stderr)
    for err in result.detector_errors:
        print(f"ddb-audit: warning: detector failed: {err}", file=sys.stderr)

    def native(kept: list[Finding], muted: list[Muted] | None) -> str:
        result.findings = kept
        if args.format == "json":
            return to_json(_with_muted(result.to_dict(), muted))
        if args.format == "markdown":
            return render_markdown(kept, result.access_patterns, st) + _muted_text(muted, True)
        return render_table(kept, result.access_patterns, st) + _muted_text(muted)

    return _output(args, result.findings, native)


def _cmd_billing(args: argparse.Namespace) -> int:
    from auditor.billing.billing_text import render_billing_markdown, render_billing_table
    from auditor.billing.decide import analyze_billing
    from auditor.billing.pricing import load_price_file
    from auditor.models.billing import BillingInput

    if args.input == "-":
        data, source = sys.stdin.buffer.read(), "<stdin>"
    else:
        try:
            data, source = Path(args.input).read_bytes(), args.input
        except OSError as exc:
            raise InputError(f"{args.input}: {exc.strerror or exc}") from exc
    inp = BillingInput.from_json(data, source)
    prices = load_price_file(args.prices) if args.prices else None
    if prices is None and args.region:
        from auditor.sources.pricing_api import PriceBook, pricing_client

        prices, warning = PriceBook(pricing_client, datetime.now(UTC).date()).get(args.region)
        if warning:
            print(f"ddb-audit: warning: {warning}", file=sys.stderr)
    analysis = analyze_billing(
        inp, simulation=args.simulation, prices=prices, config=_billing_config(args), trace=bool(args.trace_out)
    )
    if args.trace_out:
        from auditor.billing.trace import write_trace

        write_trace(args.trace_out, analysis.traces)
    for warning in analysis.warnings:
        print(f"ddb-audit: warning: {warning}", file=sys.stderr)

    def native(kept: list[Finding], muted: list[Muted] | None) -> str:
        analysis.findings = kept
        if args.format == "json":
            return to_json(_with_muted(analysis.to_dict(), muted))
        if args.format == "markdown":
            return render_billing_markdown(analysis.result, kept) + _muted_text(muted, True)
        return render_billing_table(analysis.result, kept) + _muted_text(muted)

    return _output(args, analysis.findings, native)


def _billing_config(args: argparse.Namespace) -> BillingConfig:
    """The decision settings: ``--config`` (if given), then the per-option overrides."""
    from pydantic import ValidationError

    from auditor.models.billing import BillingConfig

    doc: dict[str, object] = {}
    if args.config:
        loaded = _read_json(args.config)
        if not isinstance(loaded, dict):
            raise InputError(f"{args.config}: billing config must be a JSON object")
        doc = dict(loaded)
    if args.target is not None:
        doc["target_utilization"] = args.target
    if args.reaction_minutes is not None:
        doc["reaction_minutes"] = args.reaction_minutes
    for dim in ("read", "write"):
        own = dict(doc.get(dim) or {})  # type: ignore[call-overload]
        for option, field in (("target", "target_utilization"), ("min", "min_capacity"), ("max", "max_capacity")):
            value = getattr(args, f"{dim}_{option}")
            if value is not None:
                own[field] = value
        if own:
            doc[dim] = own
    try:
        return BillingConfig.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        where = args.config or "billing options"
        raise InputError(f"{where}: {loc}: {str(err['msg']).removeprefix('Value error, ')}") from exc


COMMANDS = {
    "analyze-trail": _cmd_analyze_trail,
    "item-size": _cmd_item_size,
    "audit": _cmd_audit,
    "athena": _cmd_athena,
    "report": _cmd_report,
    "billing": _cmd_billing,
    "demo": _cmd_demo,
    "what-if": _cmd_what_if,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ddb-audit`` console script."""
    args = build_parser().parse_args(argv)
    try:
        settings = get_settings()
        configure_logging(settings.log_level if "log_level" in settings.model_fields_set else "WARNING")
        return COMMANDS[args.command](args)
    except InputError as exc:
        print(f"ddb-audit: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except AuditorError as exc:
        print(f"ddb-audit: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        user_error = environment_error(exc)
        if user_error is not None:
            print(f"ddb-audit: error: {user_error}", file=sys.stderr)
            return EXIT_INPUT
        # One line and a short id; the message itself may quote input (a record's text), so only the type is
        # printed. The traceback (frames only, never local variables) is logged with --debug.
        error_id = uuid.uuid4().hex[:8]
        if getattr(args, "debug", False):
            log.error("internal_error", error_id=error_id, exc_info=exc)
        hint = "" if getattr(args, "debug", False) else "; run again with --debug for the traceback"
        print(f"ddb-audit: internal error {error_id}: {type(exc).__name__}{hint}", file=sys.stderr)
        return EXIT_INTERNAL


#: botocore errors about the caller's credentials, profile or configuration (the user can fix them).
_AUTH_ERROR_CODES = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "MissingAuthenticationToken",
        "AuthFailure",
    }
)


def environment_error(exc: BaseException) -> str | None:
    """A one-line message when ``exc`` is a credential, profile or AWS configuration error; else ``None``."""
    try:
        from botocore import exceptions as bex
    except ImportError:  # pragma: no cover - botocore is a dependency
        return None
    config_errors = (
        bex.NoCredentialsError,
        bex.PartialCredentialsError,
        bex.ProfileNotFound,
        bex.NoRegionError,
        bex.CredentialRetrievalError,
        bex.TokenRetrievalError,
        bex.SSOError,
        bex.SSOTokenLoadError,
        bex.UnauthorizedSSOTokenError,
        bex.ConfigNotFound,
        bex.ConfigParseError,
        bex.InvalidConfigError,
        bex.UnknownCredentialError,
        bex.InvalidRegionError,
    )
    if isinstance(exc, config_errors):
        return f"AWS credentials or configuration: {_one_line(str(exc))}"
    if isinstance(exc, bex.EndpointConnectionError | bex.ConnectTimeoutError):
        return f"cannot reach AWS: {_one_line(str(exc))}"
    if isinstance(exc, bex.ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in _AUTH_ERROR_CODES:
            return f"AWS rejected the credentials ({code}): {_one_line(str(exc))}"
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]

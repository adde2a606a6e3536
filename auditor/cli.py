"""``ddb-audit``: the command-line interface (SPEC.md "CLI").

Exit codes: 0 ran; 1 findings at or above ``--fail-on``; 2 usage or input error (one line on stderr);
3 internal error. Output on stdout is built in full before it is written, so it is complete or absent.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import structlog

from auditor.config import get_settings, load_analysis_config
from auditor.exceptions import AuditorError, InputError
from auditor.models.finding import Finding, Severity
from auditor.observability import configure_logging
from auditor.render import FORMATS, render_columns, render_markdown, render_table, to_json

if TYPE_CHECKING:  # the engine is imported lazily so `ddb-audit item-size` starts fast
    from auditor.engine import TrailAnalysis

log = structlog.get_logger(__name__)

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    p.add_argument(
        "--fail-on",
        choices=[s.value for s in Severity],
        default=None,
        metavar="SEVERITY",
        help="exit 1 when a finding is at or above this severity (critical, high, medium, low, info)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = _Parser(prog="ddb-audit", description="Audit how DynamoDB tables are used, from real traffic.")
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

    demo = sub.add_parser("demo", help="generate a workload with planted problems and analyse it, offline")
    demo.add_argument("--out", default="audit-demo", metavar="DIR", help="output directory (default: ./audit-demo)")
    demo.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    _add_output_options(demo)
    return parser


def _fails(findings: Sequence[Finding], fail_on: str | None) -> bool:
    if fail_on is None:
        return False
    floor = Severity(fail_on).rank
    return any(f.severity.rank >= floor for f in findings)


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
    _emit(args.format, result)
    return EXIT_FINDINGS if _fails(result.findings, args.fail_on) else EXIT_OK


def _emit(fmt: str, result: TrailAnalysis) -> None:
    """Write an analysis to stdout in one piece (complete or absent)."""
    if fmt == "json":
        text = to_json(result.to_dict())
    elif fmt == "markdown":
        text = render_markdown(result.findings, result.access_patterns, result.stats.as_dict())
    else:
        text = render_table(result.findings, result.access_patterns, result.stats.as_dict())
    sys.stdout.write(text)
    sys.stdout.flush()


def _cmd_item_size(args: argparse.Namespace) -> int:
    from auditor.item_size import iter_item_results

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


def _cmd_demo(args: argparse.Namespace) -> int:
    from auditor.demo.run import run_demo

    result = run_demo(Path(args.out), seed=args.seed, announce=lambda m: print(m, file=sys.stderr))
    _emit(args.format, result)
    return EXIT_FINDINGS if _fails(result.findings, args.fail_on) else EXIT_OK


COMMANDS = {"analyze-trail": _cmd_analyze_trail, "item-size": _cmd_item_size, "demo": _cmd_demo}


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
        log.exception("internal_error")
        print(f"ddb-audit: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL

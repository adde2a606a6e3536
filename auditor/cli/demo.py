"""``ddb-audit demo``: the deployed service run end to end offline (auditor.demo: local AWS endpoint, the real
handlers, a Slack catcher), on generated traffic or replayed CloudTrail files."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.cli.common import Command, Subparsers, add_output_options, muted_text, output, quiet, with_muted
from auditor.exceptions import InputError
from auditor.findings_text import render_markdown, to_json
from auditor.models.finding import Finding

if TYPE_CHECKING:
    from auditor.mutelist import Muted

NAME = "demo"


def add_parser(sub: Subparsers) -> None:
    demo = sub.add_parser(
        NAME, help="run the deployed service end to end offline (local AWS endpoint, real handlers, Slack catcher)"
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
    add_output_options(demo)


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("moto") is None:
        raise InputError("the demo needs its optional extra: pip install 'ddb-traffic-auditor[demo]' (or make demo)")
    from auditor.demo.service import run_service_demo, summary_text

    # The narrative is the demo's output; with --format json it goes to stderr (none with --quiet) and stdout carries
    # the findings.
    narrate = sys.stderr if args.format == "json" else sys.stdout

    def announce(message: str) -> None:
        if narrate is sys.stdout or not quiet():
            print(message, file=narrate, flush=True)

    if args.trail:
        from auditor.demo.replay import replay_summary_text, run_replay

        result = run_replay(args.trail, Path(args.out), announce=announce)
        summary_text = replay_summary_text
    else:
        result = run_service_demo(Path(args.out), seed=args.seed, announce=announce)
    findings = [Finding.model_validate({k: v for k, v in f.items() if k != "status"}) for f in result.findings]

    def native(kept: list[Finding], muted: list[Muted] | None) -> str:
        if args.format == "json":
            ids = {f.id for f in kept}
            return to_json(with_muted({"findings": [f for f in result.findings if f["id"] in ids]}, muted))
        if args.format == "markdown":
            return render_markdown(kept, [], {}) + muted_text(muted, True)
        return summary_text(result) + muted_text(muted)

    return output(args, findings, native)


COMMAND = Command(NAME, add_parser, run)

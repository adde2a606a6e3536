"""What the ``ddb-audit`` commands share: exit codes, the parser class, the output options of the commands that
print findings, the AWS options (``--profile``, ``--region``), renamed options kept as deprecated aliases,
``--quiet`` and the info and warning lines it silences, and the output step (``--mutelist``, the formats for other
tools, ``--fail-on``).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeAlias

import orjson

from auditor.exceptions import InputError
from auditor.findings_text import FORMATS, to_json
from auditor.models.finding import Finding, Severity

if TYPE_CHECKING:
    import boto3

    from auditor.mutelist import Muted, MuteRule

#: Formats of every command that prints findings: the command's own three, and three for other tools.
FINDING_FORMATS = (*FORMATS, "csv", "sarif", "asff")

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class Parser(argparse.ArgumentParser):
    """A parser whose usage errors exit with ``EXIT_INPUT``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


#: What ``add_subparsers`` returns: each command adds its own parser to it.
Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: its name, the function that declares its parser and arguments, and its handler (exit code).

    The handler is wrapped so that a command's ``--mutelist`` is read and validated before any of its work.
    """

    name: str
    add_parser: Callable[[Subparsers], None]
    run: Callable[[argparse.Namespace], int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "run", _mutelist_first(self.run))


def _mutelist_first(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    @functools.wraps(run)
    def checked(args: argparse.Namespace) -> int:
        _QUIET[0] = bool(getattr(args, "quiet", False))
        try:
            read_mutelist(args)
            return run(args)
        finally:
            _QUIET[0] = False

    return checked


def read_mutelist(args: argparse.Namespace) -> tuple[MuteRule, ...] | None:
    """The rules of ``--mutelist`` (None without it), read and validated once and kept on ``args``; a rule whose
    ``until`` has passed is said in a warning line when the list is read."""
    path = getattr(args, "mutelist", None)
    if not path:
        return None
    rules: tuple[MuteRule, ...] | None = getattr(args, "mutelist_rules", None)
    if rules is None:
        from auditor.mutelist import expired_rules, load_mutelist

        rules = args.mutelist_rules = load_mutelist(path)
        warn(*(f"{path}: {text}" for text in expired_rules(rules, datetime.now(UTC))))
    return rules


#: Whether ``--quiet`` was given (set when a command starts): no progress, info or warning lines, only errors.
_QUIET = [False]


def quiet() -> bool:
    """Whether ``--quiet`` was given to the running command."""
    return _QUIET[0]


def add_quiet_option(p: argparse.ArgumentParser, default: Any = False) -> None:
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        default=default,
        help="no progress display and no info or warning lines on stderr (errors are still printed)",
    )


class _Deprecated(argparse.Action):
    """A renamed option's old name: it stores its value like the new name and prints one deprecation line."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new
        self.said = False

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        if not self.said:
            self.said = True
            print(f"ddb-audit: deprecated: {option} is now {self.new} (the old name still works)", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_renamed(p: argparse.ArgumentParser, new: str, old: str, **kwargs: Any) -> None:
    """Option ``new`` (``add_argument`` keywords), with its former name ``old`` still accepted: ``old`` is hidden
    from ``--help`` and prints a deprecation line on stderr when used."""
    action = p.add_argument(new, **kwargs)
    kept = {k: kwargs[k] for k in ("type", "metavar", "choices") if k in kwargs}
    p.add_argument(
        old, dest=action.dest, action=_Deprecated, new=new, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kept
    )


def add_aws_options(p: argparse.ArgumentParser, region_help: str) -> None:
    """``--profile`` and ``--region``, as in the AWS CLI (see :func:`aws_session`)."""
    p.add_argument("--profile", metavar="NAME", help="AWS named profile (default: the standard credential chain)")
    p.add_argument("--region", metavar="R", help=region_help)


def aws_session(args: argparse.Namespace) -> boto3.Session:
    """The boto3 session of ``--profile`` and ``--region`` (each, when absent, from the standard configuration)."""
    import boto3

    return boto3.Session(profile_name=args.profile, region_name=args.region)


def add_format_option(p: argparse.ArgumentParser, choices: Sequence[str], help: str) -> None:
    """``--format`` (also accepted as ``--output``, as in the AWS CLI), default ``table``."""
    p.add_argument("--format", "--output", dest="format", choices=choices, default="table", help=help)


def add_output_options(p: argparse.ArgumentParser) -> None:
    add_format_option(
        p,
        FINDING_FORMATS,
        "output format (default: table); csv, sarif (SARIF 2.1.0) and asff (AWS Security Finding Format) list the "
        "findings only",
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
    add_renamed(
        p,
        "--asff-account",
        "--account",
        metavar="ID",
        type=_account,
        help="AWS account id (AwsAccountId) for --format asff, for findings that do not carry one (12 digits)",
    )


def _account(value: str) -> str:
    """``--asff-account``, checked when the command line is read (before any work)."""
    from auditor.formats import validate_account

    try:
        return validate_account(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def tool_version() -> str:
    """The installed distribution's version."""
    try:
        return package_version("ddb-traffic-auditor")
    except PackageNotFoundError:  # running from a source tree without installing
        return "unknown"


def number_in(low: float, high: float, why: str, *, include_low: bool = True) -> Callable[[str], float]:
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


def read_input(path: str) -> tuple[bytes, str]:
    """The bytes of a file, or of stdin for ``-``, and the name to report them by (``<stdin>`` for stdin)."""
    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    try:
        return Path(path).read_bytes(), path
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc


def warn(*messages: object) -> None:
    """Each message as a ``ddb-audit: warning:`` line on stderr (none with ``--quiet``)."""
    if quiet():
        return
    for message in messages:
        print(f"ddb-audit: warning: {message}", file=sys.stderr)


def info(message: str) -> None:
    """A ``ddb-audit:`` line on stderr that is neither an error nor a warning (none with ``--quiet``)."""
    if not quiet():
        print(f"ddb-audit: {message}", file=sys.stderr)


def read_json(path: str) -> object:
    """A whole JSON document from a file or ``-`` (stdin); unreadable or invalid input is an InputError."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from exc


def fails(findings: Sequence[Finding], fail_on: str | None) -> bool:
    if fail_on is None:
        return False
    floor = Severity(fail_on).rank
    return any(f.severity.rank >= floor for f in findings)


#: A command's own rendering of the findings still reported (json, table or markdown), given the muted ones.
Native = Callable[[list[Finding], "list[Muted] | None"], str]


def output(args: argparse.Namespace, findings: Sequence[Finding], native: Native) -> int:
    """Apply ``--mutelist``, write the output in one piece, and return the exit code (``--fail-on``).

    ``muted`` is None without ``--mutelist`` (outputs stay as they were), else the muted findings.
    """
    from auditor.mutelist import apply_mutelist

    now = datetime.now(UTC)
    muted: list[Muted] | None = None
    kept = list(findings)
    rules = read_mutelist(args)
    if rules is not None:
        kept, muted = apply_mutelist(findings, rules, now)
    fmt = args.format
    if fmt in ("csv", "sarif", "asff"):
        from auditor import formats

        if fmt == "csv":
            text = formats.render_csv(kept, muted or [])
        elif fmt == "sarif":
            text = to_json(formats.sarif_document(kept, muted or [], tool_version()))
        else:
            skipped: list[str] = []
            try:
                text = to_json(
                    formats.asff_document(kept, muted or [], account=args.asff_account, now=now, skipped=skipped)
                )
            except ValueError as exc:
                raise InputError(str(exc)) from exc
            warn(*skipped)
    else:
        text = native(kept, muted)
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_FINDINGS if fails(kept, args.fail_on) else EXIT_OK


class Reported(Protocol):
    """A command's result that holds the findings it reports and gives its JSON document."""

    findings: list[Finding]

    def to_dict(self) -> dict[str, object]: ...


def output_result(args: argparse.Namespace, result: Reported, render: Callable[[list[Finding], bool], str]) -> int:
    """:func:`output` for a command whose result holds its findings: ``json`` is the result's document with the
    findings still reported (and ``muted``); ``table`` and ``markdown`` are ``render(kept, markdown)`` followed by
    the muted findings."""

    def native(kept: list[Finding], muted: list[Muted] | None) -> str:
        result.findings = kept
        if args.format == "json":
            return to_json(with_muted(result.to_dict(), muted))
        markdown = args.format == "markdown"
        return render(kept, markdown) + muted_text(muted, markdown)

    return output(args, result.findings, native)


def with_muted(doc: dict[str, object], muted: list[Muted] | None) -> dict[str, object]:
    """A JSON output document with ``muted`` (each finding with the rule that muted it) under ``--mutelist``."""
    if muted is not None:
        doc["muted"] = [m.to_dict() for m in muted]
    return doc


def muted_text(muted: list[Muted] | None, markdown: bool = False) -> str:
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

"""``ddb-audit``: the command-line interface (docs/contract.md "CLI"), one module per command.

Exit codes: 0 ran; 1 findings at or above ``--fail-on``; 2 usage or input error (one line on stderr);
3 internal error. ``--version`` prints ``ddb-audit <version>``; ``--quiet`` leaves only errors on stderr. Output on
stdout is built in full before it is written, so it is complete or absent. Each command module declares its parser
and its handler (``COMMAND``); what they share is in ``common``, the progress display in ``progress``.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable, Sequence

import structlog

from auditor.cli import analyze_trail, athena, audit, billing, demo, item_size, model_review, report, what_if
from auditor.cli.common import (
    EXIT_FINDINGS,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    FINDING_FORMATS,
    Command,
    Parser,
    add_quiet_option,
    tool_version,
)
from auditor.config import get_settings
from auditor.exceptions import AuditorError, InputError
from auditor.observability import configure_logging

__all__ = [
    "COMMANDS",
    "EXIT_FINDINGS",
    "EXIT_INPUT",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "FINDING_FORMATS",
    "build_parser",
    "environment_error",
    "main",
    "tool_version",
]

log = structlog.get_logger(__name__)

#: The commands, in the order ``--help`` lists them.
_COMMANDS: tuple[Command, ...] = (
    analyze_trail.COMMAND,
    item_size.COMMAND,
    report.COMMAND,
    audit.COMMAND,
    billing.COMMAND,
    what_if.COMMAND,
    model_review.COMMAND,
    athena.COMMAND,
    demo.COMMAND,
)

#: The handler of each command, by name.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {command.name: command.run for command in _COMMANDS}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = Parser(prog="ddb-audit", description="Audit how DynamoDB tables are used, from real traffic.")
    parser.add_argument("--version", action="version", version=f"ddb-audit {tool_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in _COMMANDS:
        command.add_parser(sub)
    debug_help = "on an internal error, log the full traceback (JSON on stderr; never local variables)"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    add_quiet_option(parser)
    for subparser in sub.choices.values():  # also accepted after the command; the top-level value is the default
        subparser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help)
        add_quiet_option(subparser, default=argparse.SUPPRESS)
    return parser


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

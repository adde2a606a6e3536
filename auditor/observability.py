"""structlog set-up: the one logging API, rendering JSON lines."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog
from structlog.tracebacks import ExceptionDictTransformer


def configure_logging(level: str = "INFO", stream: TextIO | None = None) -> None:
    """Configure structlog (and stdlib loggers such as botocore's) to write JSON lines to ``stream``."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO

    def factory(*_args: object) -> structlog.PrintLogger:
        # Resolve stderr at use time: tests and the CLI may swap sys.stderr after configuration.
        return structlog.PrintLogger(stream if stream is not None else sys.stderr)

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            # Tracebacks as frames only: structlog's default transformer also dumps every frame's local variables,
            # which would put records' text (keys, principals) into the logs.
            structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )
    # Third-party stdlib loggers are kept quiet below WARNING so they never interleave free text.
    for name in ("botocore", "boto3", "urllib3", "werkzeug"):
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))

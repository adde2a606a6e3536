"""Shared helpers of the audit sources: error classification, counted calls, bounded backoff on throttling.

Clients are built by the caller (handler or CLI) with :data:`CLIENT_CONFIG`: botocore's ``standard`` retry mode
retries throttling and transient errors itself; :func:`counted_call` adds a bounded, slower backoff on top for the
CloudWatch read APIs (a fleet audit can hit GetMetricData's 50 TPS or the 180,000 datapoints/s limit).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import structlog
from botocore.config import Config
from botocore.exceptions import ClientError

from auditor.models.inventory import Gap
from auditor.models.metrics import ApiStats

log = structlog.get_logger(__name__)

#: Retry mode for every audit client (the attempt count comes from botocore's defaults / AWS_MAX_ATTEMPTS).
CLIENT_CONFIG = Config(retries={"mode": "standard"}, user_agent_extra="ddb-traffic-auditor")

ACCESS_DENIED = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException", "NotAuthorized"}
)
THROTTLING = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "LimitExceededException",
        "RequestThrottled",
        "RequestThrottledException",
    }
)
NOT_FOUND = frozenset({"ResourceNotFoundException", "TableNotFoundException"})

T = TypeVar("T")


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore error (``ClientError``) or the exception class name."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code") or "Unknown")
    return type(exc).__name__


def error_message(exc: BaseException, limit: int = 200) -> str:
    """A short, single-line message (endpoints sometimes answer with an HTML page)."""
    if isinstance(exc, ClientError):
        text = str(exc.response.get("Error", {}).get("Message") or exc)
    else:
        text = str(exc)
    if text.lstrip().startswith("<"):
        text = "the endpoint returned an error page (operation not implemented?)"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def gap_from(exc: BaseException, call: str, facet: str, table: str | None = None, index: str | None = None) -> Gap:
    return Gap(call=call, table=table, index=index, error_code=error_code(exc), message=error_message(exc), facet=facet)


def counted_call(
    stats: ApiStats,
    call: str,
    fn: Callable[..., T],
    /,
    *,
    sleep: Callable[[float], None] = time.sleep,
    attempts: int = 4,
    base_delay: float = 0.5,
    **kwargs: Any,
) -> T:
    """Call ``fn(**kwargs)``, counting it in ``stats``; retry throttling errors ``attempts`` times in all.

    The delay doubles from ``base_delay`` (0.5, 1, 2 s). Any other error is raised at once.
    """
    for attempt in range(1, attempts + 1):
        stats.count(call)
        try:
            return fn(**kwargs)
        except ClientError as exc:
            if error_code(exc) not in THROTTLING or attempt == attempts:
                raise
            stats.throttled_retries += 1
            delay = base_delay * 2 ** (attempt - 1)
            log.warning("aws_call_throttled", call=call, attempt=attempt, retry_in_seconds=delay)
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover

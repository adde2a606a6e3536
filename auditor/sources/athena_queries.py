"""Athena queries: start one, wait for it (bounded, cancelled on timeout), read its result page by page, and what it
cost.

Each query is started with ``StartQueryExecution`` and polled with ``GetQueryExecution`` until it succeeds, fails
(its ``StateChangeReason`` is the error) or passes the timeout (then ``StopQueryExecution`` cancels it, so it stops
scanning). Athena bills a query's scanned bytes (``Statistics.DataScannedInBytes``) rounded up to the megabyte, at
least 10 MB, at a price per TB (``DEFAULT_PRICE_PER_TB``: the us-east-1 list price; other Regions differ).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError, ClientError

from auditor.exceptions import AuditorError
from auditor.sources.athena import iter_result_rows
from auditor.sources.aws_calls import error_message

if TYPE_CHECKING:
    from mypy_boto3_athena import AthenaClient

__all__ = ["DEFAULT_PRICE_PER_TB", "AthenaError", "QueryRun", "billed_bytes", "fetch_rows", "iter_rows", "run_query"]

log = structlog.get_logger(__name__)

#: USD per TB scanned (Athena SQL queries, us-east-1 list price).
DEFAULT_PRICE_PER_TB = 5.0
_MB = 1024 * 1024
_TB = 1024**4
_MIN_BILLED_BYTES = 10 * _MB


class AthenaError(AuditorError):
    """An Athena query failed, was cancelled or timed out (the message says which, with Athena's reason)."""


@dataclass(frozen=True, slots=True)
class QueryRun:
    """One finished query."""

    query_id: str
    kind: str  # "ddl" or "aggregation"
    bytes_scanned: int
    engine_ms: int
    #: What Athena bills for it (DDL is free; otherwise rounded up to the MB, at least 10 MB).
    billed_bytes: int

    def cost_usd(self, price_per_tb: float) -> float:
        return self.billed_bytes / _TB * price_per_tb


def billed_bytes(scanned: int, kind: str) -> int:
    if kind == "ddl":
        return 0
    return max(_MIN_BILLED_BYTES, math.ceil(scanned / _MB) * _MB)


def run_query(
    client: AthenaClient,
    sql: str,
    *,
    kind: str,
    database: str,
    workgroup: str | None,
    output_location: str | None,
    timeout_seconds: float,
    poll_seconds: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> QueryRun:
    """Start ``sql``, wait for it (at most ``timeout_seconds``), and return what it cost; raises AthenaError."""
    args: dict[str, Any] = {"QueryString": sql, "QueryExecutionContext": {"Database": database}}
    if workgroup:
        args["WorkGroup"] = workgroup
    if output_location:
        args["ResultConfiguration"] = {"OutputLocation": output_location}
    try:
        query_id = client.start_query_execution(**args)["QueryExecutionId"]
    except (ClientError, BotoCoreError) as exc:
        raise AthenaError(f"Athena did not start the {kind} query: {error_message(exc)}") from exc
    deadline = clock() + timeout_seconds
    delay = poll_seconds
    while True:
        try:
            execution = client.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]
        except (ClientError, BotoCoreError) as exc:
            raise AthenaError(f"Athena {kind} query {query_id}: {error_message(exc)}") from exc
        status = execution.get("Status", {})
        state = status.get("State")
        if state == "SUCCEEDED":
            stats = execution.get("Statistics", {})
            scanned = int(stats.get("DataScannedInBytes", 0))
            engine_ms = int(stats.get("EngineExecutionTimeInMillis", 0))
            run = QueryRun(query_id, kind, scanned, engine_ms, billed_bytes(scanned, kind))
            log.info("athena_query_succeeded", query_id=query_id, kind=kind, bytes_scanned=scanned)
            return run
        if state in ("FAILED", "CANCELLED"):
            reason = status.get("StateChangeReason") or status.get("AthenaError", {}).get("ErrorMessage") or state
            raise AthenaError(f"Athena {kind} query {query_id} {state.lower()}: {' '.join(str(reason).split())}")
        if clock() >= deadline:
            try:
                client.stop_query_execution(QueryExecutionId=query_id)
            except (ClientError, BotoCoreError) as exc:  # it is reported below either way
                log.warning("athena_stop_failed", query_id=query_id, error=error_message(exc))
            raise AthenaError(
                f"Athena {kind} query {query_id} did not finish within {timeout_seconds:g} s (cancelled; "
                "raise --timeout or narrow the range)"
            )
        sleep(delay)
        delay = min(delay * 2, 10.0)


def iter_rows(client: AthenaClient, query_id: str) -> Iterator[dict[str, Any]]:
    """The result rows of a finished query, read page by page (``GetQueryResults`` with ``NextToken``) as they are
    consumed: the next page is requested only after the rows of the current one, so at most one page is held."""
    try:
        pages = client.get_paginator("get_query_results").paginate(QueryExecutionId=query_id)
        yield from iter_result_rows(pages)
    except (ClientError, BotoCoreError) as exc:
        raise AthenaError(f"cannot read the results of Athena query {query_id}: {error_message(exc)}") from exc


def fetch_rows(client: AthenaClient, query_id: str) -> list[dict[str, Any]]:
    """Every result row of a finished query (all pages) in a list: only for a result known to be small."""
    return list(iter_rows(client, query_id))

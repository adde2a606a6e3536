"""``ddb-audit athena``: the CloudTrail traffic analysis run as SQL in Amazon Athena (:mod:`auditor.sources.athena`).

One run: ``CREATE EXTERNAL TABLE IF NOT EXISTS`` (DDL: not billed), then the aggregation query; each is started
with ``StartQueryExecution`` and polled with ``GetQueryExecution`` until it succeeds, fails (its
``StateChangeReason`` is the error) or passes the timeout (then ``StopQueryExecution`` cancels it, so it stops
scanning). The rows (``GetQueryResults``, every page) go through the same normaliser, aggregates and detectors as
``analyze-trail``. The bytes each query scanned (``Statistics.DataScannedInBytes``) and their cost are reported:
Athena bills a query's scanned bytes rounded up to the megabyte, at least 10 MB, at a price per TB
(``DEFAULT_PRICE_PER_TB``: the us-east-1 list price; other Regions differ).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError, ClientError

from auditor.config import AnalysisConfig
from auditor.engine import access_patterns, evaluate, new_aggregate_set
from auditor.exceptions import AuditorError
from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import Finding
from auditor.sources.athena import (
    AthenaScope,
    RowStats,
    aggregate_rows,
    aggregation_sql,
    create_table_sql,
    rows_from_result_set,
    table_name,
)
from auditor.sources.aws_calls import error_message

if TYPE_CHECKING:
    from mypy_boto3_athena import AthenaClient

__all__ = ["DEFAULT_PRICE_PER_TB", "AthenaAudit", "AthenaError", "QueryRun", "run_athena_audit", "run_query"]

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


def fetch_rows(client: AthenaClient, query_id: str) -> list[dict[str, Any]]:
    """Every result row of a finished query (all pages)."""
    try:
        pages = client.get_paginator("get_query_results").paginate(QueryExecutionId=query_id)
        return rows_from_result_set(list(pages))
    except (ClientError, BotoCoreError) as exc:
        raise AthenaError(f"cannot read the results of Athena query {query_id}: {error_message(exc)}") from exc


@dataclass(slots=True)
class AthenaAudit:
    """Findings and access patterns from Athena, with what the queries scanned and cost."""

    scope: AthenaScope
    table: str
    findings: list[Finding]
    access_patterns: list[AccessPattern]
    rows: RowStats
    queries: list[QueryRun] = field(default_factory=list)
    price_per_tb: float = DEFAULT_PRICE_PER_TB
    detector_errors: list[str] = field(default_factory=list)

    @property
    def bytes_scanned(self) -> int:
        return sum(q.bytes_scanned for q in self.queries)

    @property
    def cost_usd(self) -> float:
        return sum(q.cost_usd(self.price_per_tb) for q in self.queries)

    def stats(self) -> dict[str, Any]:
        return {
            "table": f"{self.scope.database}.{self.table}",
            "location": self.scope.location,
            "start": self.scope.start.isoformat(),
            "end": self.scope.end.isoformat(),
            "accounts": list(self.scope.accounts),
            "regions": list(self.scope.regions),
            "rows": self.rows.rows,
            "data_events": self.rows.data_events,
            "events_skipped": self.rows.events_skipped,
            "rows_malformed": self.rows.rows_malformed,
            "bytes_scanned": self.bytes_scanned,
            "cost_usd": round(self.cost_usd, 6),
            "price_per_tb_usd": self.price_per_tb,
            "query_ids": [q.query_id for q in self.queries],
        }

    def to_dict(self) -> dict[str, object]:
        return {
            "findings": [f.model_dump(mode="json") for f in self.findings],
            "access_patterns": [p.model_dump(mode="json") for p in self.access_patterns],
            "stats": self.stats(),
        }


def run_athena_audit(
    client: AthenaClient,
    scope: AthenaScope,
    config: AnalysisConfig,
    *,
    workgroup: str | None = None,
    output_location: str | None = None,
    timeout_seconds: float = 900.0,
    price_per_tb: float = DEFAULT_PRICE_PER_TB,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> AthenaAudit:
    """Create or reuse the table, run the aggregation, and evaluate it with the trail detectors."""
    common: dict[str, Any] = {
        "database": scope.database,
        "workgroup": workgroup,
        "output_location": output_location,
        "timeout_seconds": timeout_seconds,
        "sleep": sleep,
        "clock": clock,
    }
    ddl = run_query(client, create_table_sql(scope), kind="ddl", **common)
    query = run_query(client, aggregation_sql(scope), kind="aggregation", **common)
    rows = fetch_rows(client, query.query_id)
    aggregates = new_aggregate_set(config)
    row_stats = RowStats()
    aggregate_rows(rows, aggregates, row_stats)
    spans = aggregates.spans()
    findings, errors = evaluate(spans, config)
    return AthenaAudit(
        scope,
        table_name(scope),
        findings,
        access_patterns(spans),
        row_stats,
        [ddl, query],
        price_per_tb,
        errors,
    )

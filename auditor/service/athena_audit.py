"""``ddb-audit athena``: the CloudTrail traffic analysis run as SQL in Amazon Athena (:mod:`auditor.sources.athena`).

One run: ``CREATE EXTERNAL TABLE IF NOT EXISTS`` (DDL: not billed), then the aggregation query; each is started
with ``StartQueryExecution`` and polled with ``GetQueryExecution`` until it succeeds, fails (its
``StateChangeReason`` is the error) or passes the timeout (then ``StopQueryExecution`` cancels it, so it stops
scanning). The rows (``GetQueryResults``, streamed page by page, never all held) go through the same normaliser,
aggregates and detectors as ``analyze-trail``. The bytes each query scanned (``Statistics.DataScannedInBytes``) and
their cost are reported: Athena bills a query's scanned bytes rounded up to the megabyte, at least 10 MB, at a price per
TB (``DEFAULT_PRICE_PER_TB``: the us-east-1 list price; other Regions differ).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from auditor.config import AnalysisConfig
from auditor.engine import access_patterns, evaluate, new_aggregate_set, period_totals
from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import Finding
from auditor.sources.athena import (
    AthenaScope,
    RowStats,
    aggregate_rows,
    aggregation_sql,
    create_table_sql,
    table_name,
)
from auditor.sources.athena_queries import (
    DEFAULT_PRICE_PER_TB,
    AthenaError,
    QueryRun,
    iter_rows,
    run_query,
)

if TYPE_CHECKING:
    from mypy_boto3_athena import AthenaClient

__all__ = ["DEFAULT_PRICE_PER_TB", "AthenaAudit", "AthenaError", "QueryRun", "run_athena_audit", "run_query"]

log = structlog.get_logger(__name__)


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
    aggregates = new_aggregate_set(config)
    row_stats = RowStats()
    # streamed: each result page is aggregated before the next is read (memory is bounded by a page)
    aggregate_rows(iter_rows(client, query.query_id), aggregates, row_stats)
    spans = aggregates.spans()
    findings, errors = evaluate(spans, config)
    # stated for the scope's period as analyze-trail states them: totals, severity and cause from the windows
    findings = period_totals(findings, aggregates, config)
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

"""Plain data of one live audit that the layers below the service read.

:class:`BillingRead` is what the audit's billing read covered; :class:`AuditView` is what the cost ledger
(:mod:`auditor.cost.ledger`) reads of an audit's result. The result itself (:class:`auditor.service.audit.AuditResult`)
holds the sources' reads and renders itself with the ledger, so it stays in the service and satisfies this view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from auditor.models.inventory import Gap, Inventory
from auditor.models.metrics import ApiStats, TableMetrics


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class BillingRead:
    """What the billing read of one audit covered (:func:`auditor.service.audit.audit_billing`)."""

    #: The read window (epoch seconds): ``days`` before the audit's end, at most CloudWatch's 15 days.
    start: int
    end: int
    days: float
    period: int = 60
    #: Tables whose billing series were all read (and whose billing mode is known): a run may resolve their billing
    #: findings, unless the decision itself failed (an ``errors`` entry ``"billing on <table>: ..."``).
    read_complete: set[str] = field(default_factory=set)
    #: Decided tables: the days of data the decision used (from the first minute CloudWatch has to the end).
    coverage_days: dict[str, float] = field(default_factory=dict)
    #: Tables left undecided, with the reason.
    skipped: dict[str, str] = field(default_factory=dict)
    groups: int = 0
    stats: ApiStats = field(default_factory=ApiStats)
    gaps: list[Gap] = field(default_factory=list)

    def as_dict(self, *, per_table: bool = True) -> dict[str, Any]:
        """JSON-ready summary; without ``per_table`` the coverage and skip reasons are summarised (a log line for
        thousands of tables stays small): coverage days min/max, skipped tables counted by reason."""
        coverage: dict[str, Any] = {t: round(d, 3) for t, d in sorted(self.coverage_days.items())}
        skipped: dict[str, Any] = dict(sorted(self.skipped.items()))
        if not per_table:
            days = list(self.coverage_days.values())
            coverage = {"min": round(min(days), 3), "max": round(max(days), 3)} if days else {}
            reasons: dict[str, int] = {}
            for reason in self.skipped.values():
                reasons[reason] = reasons.get(reason, 0) + 1
            skipped = dict(sorted(reasons.items()))
        return {
            "window_start": _iso(self.start),
            "window_end": _iso(self.end),
            "days": round((self.end - self.start) / 86_400, 3),
            "period_seconds": self.period,
            "tables_read": len(self.read_complete),
            "tables_decided": len(self.coverage_days),
            "coverage_days": coverage,
            "skipped": skipped,
            "groups": self.groups,
            "get_metric_data_calls": self.stats.calls.get("cloudwatch:GetMetricData", 0),
            "list_metrics_calls": self.stats.calls.get("cloudwatch:ListMetrics", 0),
            "metrics_requested": self.stats.metrics_requested,
            "datapoints": self.stats.datapoints,
            "estimated_cost_usd": round(self.stats.estimated_cost_usd, 6),
        }


class AuditView(Protocol):
    """What the cost ledger reads of one audit's result: its window, the audited tables, each table's series and
    capacity history, and the CloudWatch reads made (the audited window's and the billing read's)."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def inventory(self) -> Inventory: ...

    @property
    def stats(self) -> ApiStats: ...

    @property
    def billing(self) -> BillingRead | None: ...

    def table_metrics(self, table: str) -> TableMetrics | None:
        """The table's series over the audited window, or None when it was not audited."""
        ...

    def capacity_history(self, table: str) -> dict[str, Any] | None:
        """The table's capacity history as the ``ddb-audit billing --input`` document, or None (not audited, or its
        billing mode unknown)."""
        ...

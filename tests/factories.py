"""Small builders for typed inputs, so unit tests do not depend on the CloudTrail parser."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.calls import Access, ApiCall, ItemAccess
from auditor.models.finding import Finding, FindingKind, Severity

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
ROLE = "arn:aws:iam::111122223333:role/app"

_WRITE_OPS = ("Put", "Update", "Delete", "BatchWrite", "TransactWrite")


def call(
    operation: str = "GetItem",
    table: str = "Orders",
    key: dict[str, Any] | None = None,
    *,
    at: float = 0.0,
    principal: str | None = ROLE,
    error: str | None = None,
    message: str | None = None,
    index: str | None = None,
    segment: int | None = None,
    total_segments: int | None = None,
    event_id: str | None = None,
    full_scan: bool | None = None,
) -> ApiCall:
    """One call; ``at`` is seconds after ``T0``."""
    access = Access.WRITE if operation.startswith(_WRITE_OPS) else Access.READ
    scan = operation == "Scan" if full_scan is None else full_scan
    item = ItemAccess(table=table, operation=operation, access=access, index=index, key=key, full_scan=scan)
    return ApiCall(
        event_id=event_id or f"ev-{operation}-{at}-{key}",
        time=T0 + timedelta(seconds=at),
        operation=operation.split(":")[0],
        access=access,
        account="111122223333",
        region="us-east-1",
        tables=(table,),
        items=(item,),
        principal=principal,
        index=index,
        error_code=error,
        error_message=message,
        scan_segment=segment,
        scan_total_segments=total_segments,
    )


def span(calls: list[ApiCall], window_seconds: int = 900, **kw: Any) -> TableWindow:
    """Aggregate ``calls`` (one table) into a single span aggregate."""
    aggs = AggregateSet(window_seconds, **kw)
    for c in calls:
        aggs.add(c)
    spans = aggs.spans()
    assert len(spans) == 1, spans
    return spans[0]


def stored_billing_finding(
    table: str, seen: datetime, *, account: str, region: str, days_analyzed: float = 14.0
) -> Finding:
    """A ``billing_mode`` finding as an earlier billing run stored it (on-demand -> provisioned)."""
    return Finding.create(
        FindingKind.BILLING_MODE,
        account=account,
        region=region,
        table=table,
        discriminator="billing_mode",
        severity=Severity.LOW,
        title=f"{table}: switch to provisioned saves $50.00/month",
        summary="An earlier billing run.",
        recommendation="Switch.",
        evidence={
            "current_mode": "PAY_PER_REQUEST",
            "recommended_mode": "PROVISIONED",
            "monthly_cost_current": 80.0,
            "monthly_cost_recommended": 30.0,
            "monthly_savings": 50.0,
            "days_analyzed": days_analyzed,
            "source": "cloudwatch_billing",
        },
        first_seen=seen - timedelta(days=1),
        last_seen=seen,
    )

"""The ledger of one live audit: each table's DynamoDB spend over the audited window next to what auditing it cost.

The DynamoDB side comes from the audit's own CloudWatch read (consumed capacity, provisioned units in force, billing
mode, table class, DescribeTable size: :func:`auditor.cost.model.usage_from_history`). The auditor side of a CLI
audit is the audit's own CloudWatch reads: one metric requested per series read for the table (its GSIs included),
at $0.01 per 1,000; the deployed service's ledger (:mod:`auditor.sinks.ledger_store`) adds CloudTrail data events,
Lambda, the state table and S3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from auditor.billing.pricing import RegionPrices, bundled_prices
from auditor.cost.model import (
    SHARED,
    AuditorRates,
    AuditorUsage,
    LedgerEntry,
    LedgerSummary,
    auditor_spend,
    dynamodb_spend,
    summarise,
    usage_from_history,
)

if TYPE_CHECKING:
    from auditor.service.audit import AuditResult


def audit_ledger(
    result: AuditResult, prices: RegionPrices | None = None, rates: AuditorRates | None = None
) -> LedgerSummary | None:
    """Per audited table: DynamoDB spend over the window and this audit's reads for it; None when nothing priced."""
    days = max((result.end - result.start) / 86_400, 1 / 1440)
    day = datetime.fromtimestamp(result.end, UTC).date()
    entries: list[LedgerEntry] = []
    counted = 0
    for profile in result.inventory.tables:
        history = result.capacity_history(profile.name)
        tm = result.table_metrics(profile.name)
        if history is None or tm is None:
            continue
        usage = usage_from_history(history, days)
        if usage.billing_mode == "PROVISIONED" and usage.rcu_hours == 0 and usage.wcu_hours == 0:
            # No Provisioned* series in the window (CloudWatch publishes them every 5 minutes, and not for a table
            # created moments ago): the units in force now, from DescribeTable, for the whole window.
            caps = [profile.capacity, *(g.capacity for g in profile.gsis)]
            hours = days * 24
            usage = usage.model_copy(
                update={
                    "rcu_hours": sum(c.provisioned_read for c in caps if c is not None) * hours,
                    "wcu_hours": sum(c.provisioned_write for c in caps if c is not None) * hours,
                }
            )
        book = prices or bundled_prices(str(history.get("region") or "us-east-1"))
        series = sum(len(r.series) for r in tm.resources.values())
        counted += series
        entries.append(
            LedgerEntry(
                day=day,
                account=profile.account,
                region=profile.region,
                table=profile.name,
                dynamodb=dynamodb_spend(usage, book.for_class(usage.table_class)),
                auditor=auditor_spend(AuditorUsage(days=days, metrics_requested=series), rates),
            )
        )
    if not entries:
        return None
    # Metrics requested that no table's series account for (a series listed but empty, the billing read).
    rest = max(0, result.stats.metrics_requested - counted)
    if result.billing is not None:
        rest += result.billing.stats.metrics_requested
    if rest:
        entries.append(
            LedgerEntry(
                day=day,
                table=SHARED,
                dynamodb=dynamodb_spend(
                    usage_from_history({"billing_mode": "PAY_PER_REQUEST", "series": []}, days),
                    bundled_prices("us-east-1").standard,
                ),
                auditor=auditor_spend(AuditorUsage(days=days, metrics_requested=rest), rates),
            )
        )
    return summarise(entries)


def ledger_lines(summary: LedgerSummary, *, markdown: bool = False) -> list[str]:
    """The ledger as text: one row per table and the total (auditor cost, audited DynamoDB cost, ratio)."""

    def ratio(r: float | None) -> str:
        return "-" if r is None else f"{r:.2%}"

    rows = [(r.table, f"${r.auditor_usd:,.4f}", f"${r.dynamodb_usd:,.4f}", ratio(r.ratio)) for r in summary.rows]
    rows.append(
        (
            "total",
            f"${summary.total.auditor_usd:,.4f}",
            f"${summary.total.dynamodb_usd:,.4f}",
            ratio(summary.total.ratio),
        )
    )
    header = ("table", "auditor cost", "audited DynamoDB cost", "ratio")
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|---|---:|---:|---:|"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return out
    from auditor.findings_text import render_columns

    return render_columns(rows, header).rstrip("\n").split("\n")


def combine_ledgers(parts: Sequence[tuple[str | None, str | None, Mapping[str, Any] | None]]) -> dict[str, Any] | None:
    """The ledgers of several account/Region pairs (each :meth:`AuditResult.cost_summary`) as one document.

    ``parts`` are ``(account, region, ledger)``; a pair without a ledger (no table priced) is left out. The result has
    every table row with its ``account`` and ``region``, one ``targets`` row per pair (its total), and the ``total``
    over all pairs: the sums of both sides and of the auditor lines, the ratio recomputed from the sums (never an
    average of ratios). None when no pair has a ledger.
    """
    kept = [(account, region, ledger) for account, region, ledger in parts if ledger is not None]
    if not kept:
        return None
    lines: dict[str, float] = {}
    auditor = dynamodb = shared = 0.0
    days = 0
    for _, _, ledger in kept:
        total = ledger["total"]
        auditor += float(total["auditor_usd"])
        dynamodb += float(total["dynamodb_usd"])
        shared += float(ledger.get("shared_usd", 0.0))
        days = max(days, int(total["days"]))
        for name, value in total.get("auditor_lines", {}).items():
            lines[name] = lines.get(name, 0.0) + float(value)
    return {
        "start": min(str(ledger["start"]) for _, _, ledger in kept),
        "end": max(str(ledger["end"]) for _, _, ledger in kept),
        "window_days": max(float(ledger.get("window_days", 0.0)) for _, _, ledger in kept),
        "auditor_source": kept[0][2].get("auditor_source"),
        "tables": [
            {"account": account, "region": region, **row}
            for account, region, ledger in kept
            for row in ledger["tables"]
        ],
        "targets": [{"account": account, "region": region, **ledger["total"]} for account, region, ledger in kept],
        "total": {
            "table": "total",
            "days": days,
            "auditor_usd": round(auditor, 9),
            "dynamodb_usd": round(dynamodb, 9),
            "ratio": round(auditor / dynamodb, 9) if dynamodb > 0 else None,
            "auditor_lines": {k: round(v, 9) for k, v in lines.items()},
        },
        "shared_usd": round(shared, 6),
    }

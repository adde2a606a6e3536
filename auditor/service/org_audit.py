"""The live audit over many accounts and Regions (``ddb-audit audit --accounts/--org/--regions``, and the scheduled
metrics audit when ``AUDIT_ACCOUNTS`` / ``AUDIT_ORG`` / ``AUDIT_REGIONS`` are set).

Each (account, Region) target is one :func:`auditor.service.audit.run_audit` with clients from that account's
session (:class:`auditor.sources.org.SessionFactory`: the read-only member role assumed there), run on a bounded
pool (:func:`auditor.sources.org.fan_out`). Findings carry their table's account and Region (from its ARN). A target
that cannot be read at all (role missing, access denied on ``ListTables``, Region not enabled, throttled) is a
coverage gap, reported next to the findings; the other targets are audited as usual. Billing prices each table with
its own Region's prices (one :class:`~auditor.billing.pricing.PriceBook` per run, one lookup per Region).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from auditor.findings_text import findings_table, markdown_inline, markdown_table, render_columns, to_json
from auditor.models.finding import Finding
from auditor.service.audit import AuditConfig, AuditError, AuditResult, run_audit
from auditor.sources.audit_clients import AuditClients, clients_for
from auditor.sources.aws_calls import error_code, error_message
from auditor.sources.org import (
    DEFAULT_CONCURRENCY,
    CoverageGap,
    SessionFactory,
    Target,
    TargetError,
    TargetOutcome,
    fan_out,
)

if TYPE_CHECKING:
    import boto3

    from auditor.sources.inventory import TableSelector
    from auditor.sources.pricing_api import PriceBook

__all__ = ["OrgAuditResult", "audit_target", "render_org_audit", "run_org_audit"]


def audit_target(target: Target, session: boto3.Session, audit: Callable[[AuditClients], AuditResult]) -> AuditResult:
    """One target's audit (``audit`` of the clients of ``session`` in the target's Region); raises
    :class:`TargetError` when nothing there could be read (its coverage gap)."""
    try:
        result = audit(clients_for(session, target.region))
    except AuditError as exc:  # no credentials or endpoint in that Region
        cause = exc.__cause__ or exc
        raise TargetError("audit", error_code(cause), error_message(cause)) from exc
    if not result.inventory.tables:
        blocking = [g for g in result.inventory.gaps if g.facet == "tables"]
        if blocking:
            raise TargetError(blocking[0].call, blocking[0].error_code, blocking[0].message)
    return result


@dataclass(slots=True)
class OrgAuditResult:
    """The audit of every target: findings of all, one summary per target, and the coverage gaps."""

    outcomes: list[TargetOutcome[AuditResult]]
    seconds: float = 0.0
    assume_role_calls: int = 0
    findings: list[Finding] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.findings:
            self.findings = sorted(
                (f for o in self.outcomes if o.result is not None for f in o.result.findings), key=Finding.sort_key
            )

    @property
    def coverage_gaps(self) -> list[CoverageGap]:
        return [o.gap for o in self.outcomes if o.gap is not None]

    @property
    def results(self) -> list[tuple[Target, AuditResult]]:
        return [(o.target, o.result) for o in self.outcomes if o.result is not None]

    def api_calls(self) -> dict[str, int]:
        """AWS calls of every target by ``service:Operation`` (AssumeRole included)."""
        calls: dict[str, int] = {}
        for _, r in self.results:
            for call, n in r.stats.calls.items():
                calls[call] = calls.get(call, 0) + n
        if self.assume_role_calls:
            calls["sts:AssumeRole"] = self.assume_role_calls
        return dict(sorted(calls.items()))

    def cost_summary(self) -> dict[str, Any] | None:
        """The audited window's ledger over every pair: each table with its account and Region, each pair's total,
        and the total (:func:`auditor.cost.ledger.combine_ledgers`)."""
        from auditor.cost.ledger import combine_ledgers

        return combine_ledgers([(t.account or _own(r), t.region, r.cost_summary()) for t, r in self.results])

    def to_dict(self) -> dict[str, Any]:
        ids = {f.id for f in self.findings}
        targets = []
        for target, r in self.results:
            kept = [f for f in r.findings if f.id in ids]
            targets.append(
                {
                    "account": target.account,
                    "region": target.region,
                    "tables": len(r.inventory.tables),
                    "findings": len(kept),
                    "gaps": len(r.gaps),
                    "api_calls": sum(r.stats.calls.values()),
                }
            )
        calls = self.api_calls()
        return {
            "findings": [f.model_dump(mode="json") for f in self.findings],
            "tables": [t.summary() for _, r in self.results for t in r.inventory.tables],
            "gaps": [
                {"account": t.account, "region": t.region, **g.model_dump()} for t, r in self.results for g in r.gaps
            ],
            "errors": [f"{t.describe()}: {e}" for t, r in self.results for e in r.errors],
            "targets": targets,
            "coverage_gaps": [g.to_dict() for g in self.coverage_gaps],
            "cost": self.cost_summary(),
            "stats": {
                "targets": len(self.outcomes),
                "targets_audited": len(targets),
                "targets_not_covered": len(self.coverage_gaps),
                "tables_audited": sum(t["tables"] for t in targets),
                "api_calls_total": sum(calls.values()),
                "api_calls": calls,
                "seconds": round(self.seconds, 3),
                "estimated_cost_usd": round(sum(r.stats.estimated_cost_usd for _, r in self.results), 6),
            },
        }


def run_org_audit(
    factory: SessionFactory,
    targets: Sequence[Target],
    selector: TableSelector,
    *,
    start: int,
    end: int,
    now: int,
    config: AuditConfig | None = None,
    billing_days: float = 0,
    activity_days: float = 0,
    prices: PriceBook | None = None,
    max_workers: int = DEFAULT_CONCURRENCY,
    should_start: Callable[[], bool] | None = None,
    on_done: Callable[[TargetOutcome[AuditResult]], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> OrgAuditResult:
    """Audit every target over ``[start, end)``; see the module docstring."""
    lock = threading.Lock()
    # PriceBook caches one answer per Region; concurrent targets of the same Region ask it one at a time.
    guarded = _LockedPrices(prices, lock) if prices is not None else None

    def audit(clients: AuditClients) -> AuditResult:
        return run_audit(
            clients,
            selector,
            start=start,
            end=end,
            now=now,
            config=config,
            billing_days=billing_days,
            activity_days=activity_days,
            prices=guarded,  # type: ignore[arg-type]
            sleep=sleep,
        )

    began = time.monotonic()
    outcomes = fan_out(
        targets,
        factory,
        lambda t, s: audit_target(t, s, audit),
        max_workers=max_workers,
        should_start=should_start,
        on_done=on_done,
    )
    return OrgAuditResult(outcomes, seconds=time.monotonic() - began, assume_role_calls=factory.assume_calls)


class _LockedPrices:
    """A PriceBook whose ``get`` is serialised (its cache is a plain dict)."""

    def __init__(self, book: PriceBook, lock: threading.Lock) -> None:
        self._book, self._lock = book, lock

    def get(self, region: str) -> Any:
        with self._lock:
            return self._book.get(region)


def render_org_audit(result: OrgAuditResult, fmt: str) -> str:
    """The multi-target audit as ``json``, ``table`` or ``markdown`` text."""
    doc = result.to_dict()
    if fmt == "json":
        return to_json(doc)
    header = ("account", "region", "tables", "findings", "gaps", "api calls")
    rows = [
        (t["account"] or "own", t["region"], str(t["tables"]), str(t["findings"]), str(t["gaps"]), str(t["api_calls"]))
        for t in doc["targets"]
    ]
    st = doc["stats"]
    cost = (
        f"{st['targets']} targets ({st['targets_audited']} audited, {st['targets_not_covered']} not covered), "
        f"{st['api_calls_total']} API calls, estimated CloudWatch cost ${st['estimated_cost_usd']:.4f}, "
        f"{st['seconds']:.1f} s"
    )
    gaps = [g.describe() for g in result.coverage_gaps]
    ledger = _ledger_rows(doc.get("cost"))
    ledger_header = ("account", "region", "table", "auditor cost", "audited DynamoDB cost", "ratio")
    if fmt == "markdown":
        out = ["# DynamoDB live audit (accounts and Regions)", "", "## Findings", ""]
        if result.findings:
            out += markdown_table(
                ("Severity", "Kind", "Account", "Region", "Table", "Finding"),
                (
                    (
                        f.severity.value,
                        f.kind.value,
                        f.account or "",
                        f.region or "",
                        markdown_inline(f.table + ("/" + f.index if f.index else "")),
                        markdown_inline(f.title),
                    )
                    for f in result.findings
                ),
            )
        else:
            out.append("No findings.")
        out += ["", "## Targets", "", *markdown_table(header, rows)]
        if gaps:
            out += ["", "## Coverage gaps (not audited)", ""] + [f"- {markdown_inline(g)}" for g in gaps]
        if ledger:
            out += ["", "## Cost ledger", "", "The audited window; auditor cost = this audit's CloudWatch reads.", ""]
            out += markdown_table(ledger_header, ([markdown_inline(c) for c in r] for r in ledger), right=3)
        out += ["", "## Cost of this run", "", cost, ""]
        return "\n".join(out)
    lines = ["Findings", "========", *findings_table(result.findings), "", "Targets", "======="]
    lines += render_columns(rows, header).rstrip("\n").split("\n") if rows else ["No target audited."]
    if gaps:
        lines += ["", "Coverage gaps (not audited)", "===========================", *gaps]
    if ledger:
        title = "Cost ledger (the audited window; auditor cost = this audit's CloudWatch reads)"
        lines += ["", title, "=" * len(title)]
        lines += render_columns(ledger, ledger_header).rstrip("\n").split("\n")
    lines += ["", f"Cost: {cost}"]
    return "\n".join(lines) + "\n"


def _own(result: AuditResult) -> str | None:
    """The account of a pair audited with the caller's own credentials (its tables' ARNs name it)."""
    return next((t.account for t in result.inventory.tables if t.account), None)


def _ledger_rows(cost: dict[str, Any] | None) -> list[tuple[str, ...]]:
    """Each table's row (account, Region, table, both costs, ratio), then each pair's total, then the total."""
    if not cost:
        return []

    def money(row: dict[str, Any]) -> tuple[str, str, str]:
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2%}"
        return f"${row['auditor_usd']:,.4f}", f"${row['dynamodb_usd']:,.4f}", ratio

    rows: list[tuple[str, ...]] = [
        (r["account"] or "own", r["region"] or "", r["table"], *money(r)) for r in cost["tables"]
    ]
    rows += [(p["account"] or "own", p["region"] or "", "(pair total)", *money(p)) for p in cost["targets"]]
    rows.append(("", "", "total", *money(cost["total"])))
    return rows

"""Table (terminal) and Markdown renderings of a billing analysis (``ddb-audit billing``)."""

from __future__ import annotations

from collections.abc import Sequence

from auditor.findings_text import findings_table, markdown_inline, markdown_table, render_columns
from auditor.models.billing import BillingResult, CapacityRecommendation, DimensionResult
from auditor.models.finding import Finding

_ACTIONS = {
    "keep": "keep the current configuration",
    "switch_to_on_demand": "switch to on-demand (PAY_PER_REQUEST)",
    "switch_to_provisioned": "switch to provisioned with auto scaling",
    "adjust_provisioned": "stay provisioned, change the auto-scaling settings",
}


def _money(x: float | None) -> str:
    return "-" if x is None else f"${x:,.2f}"


def _rows(result: BillingResult) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for s in result.series:
        for name, d in (("read", s.read), ("write", s.write)):
            rows.append(_row(s.index or "(table)", name, d))
    return rows


def _row(where: str, dim: str, d: DimensionResult) -> tuple[str, ...]:
    return (
        where,
        dim,
        f"${d.on_demand_cost:,.4f}",
        f"${d.provisioned_cost_simulated:,.4f}",
        f"${d.provisioned_cost_current:,.4f}",
        d.recommended_mode,
        f"{d.peak_units_per_second:,.1f}",
        "-" if d.throttled_share is None else f"{d.throttled_share:.3%}",
    )


_HEADER = ("series", "dim", "on-demand", "prov simulated", "prov current", "mode", "peak/s", "throttled")


def _capacity(c: CapacityRecommendation) -> str:
    return f"{c.index or 'table'}: {c.read.describe('reads')}, {c.write.describe('writes')}"


def _summary(result: BillingResult) -> list[str]:
    p = result.pricing
    lines = [
        f"Table {result.table} ({result.region}, {result.table_class}, {result.current_mode}): "
        f"{result.days_analyzed:.2f} days, {result.simulation} simulation, confidence {result.confidence_label} "
        f"({result.confidence:.2f}, {result.coverage:.1%} of datapoints present)",
        f"Prices: {p['source']}, as of {p['as_of']}" + (" (a labelled default)" if p["fallback"] else ""),
        "",
        f"Recommendation: {_ACTIONS[result.action]} ({result.recommended_mode})",
        f"  now {_money(result.monthly_cost_current)}/month, recommended {_money(result.monthly_cost_recommended)}"
        f"/month, saves {_money(result.monthly_savings)}/month (730 h/month)",
        f"  on-demand {_money(result.monthly_cost_on_demand)}, provisioned simulated "
        f"{_money(result.monthly_cost_provisioned_simulated)}, provisioned current "
        f"{_money(result.monthly_cost_provisioned_current)} per month",
        f"  why: {result.reason}",
    ]
    if result.recommended_mode == "PROVISIONED":
        lines.append("  auto scaling: " + "; ".join(_capacity(c) for c in result.capacity))
    if result.table_class_hint is not None:
        h = result.table_class_hint
        lines.append(
            f"  table class: {h.recommended_class} (Standard {_money(h.monthly_cost_standard)}, Standard-IA "
            f"{_money(h.monthly_cost_standard_ia)} per month; storage {h.storage_share:.0%} of the Standard cost)"
        )
    if result.reserved_capacity is not None:
        lines.append("  reserved capacity: " + result.reserved_capacity.note)
    lines += [f"  note: {n}" for n in result.notes]
    if result.assumptions:
        lines.append(f"  simulation ({result.simulation}):")
        lines += [f"    - {a}" for a in result.assumptions]
    return lines


def render_billing_table(result: BillingResult, findings: Sequence[Finding]) -> str:
    """Terminal rendering."""
    lines = ["Billing", "=======", *_summary(result), ""]
    lines.append("Window totals (USD over the analysed days):")
    lines += render_columns(_rows(result), _HEADER).rstrip("\n").split("\n")
    lines += ["", "Findings", "========", *findings_table(findings)]
    return "\n".join(lines) + "\n"


def render_billing_markdown(result: BillingResult, findings: Sequence[Finding]) -> str:
    """Markdown rendering (for tickets and wikis)."""
    out = [f"# DynamoDB billing: {markdown_inline(result.table)}", ""]
    out += [markdown_inline(line.strip()) if line.strip() else "" for line in _summary(result)]
    out += ["", "## Window totals (USD)", ""]
    out += markdown_table(_HEADER, ([markdown_inline(c) for c in row] for row in _rows(result)))
    out += ["", "## Findings", ""]
    if findings:
        for f in findings:
            out += [f"### {markdown_inline(f.title)}", "", f"**{f.severity.value}** · `{f.kind.value}` · `{f.id}`", ""]
            out += [markdown_inline(f.summary), "", f"**Fix:** {markdown_inline(f.recommendation)}", ""]
    else:
        out += ["No findings.", ""]
    return "\n".join(out)

"""``table_class``: Standard vs Standard-IA, from storage against throughput cost.

Pure: it reads the table-class hint of a :class:`~auditor.models.billing.BillingResult` (computed only when the
table size is known) and returns at most one finding. Not in the traffic-detector registry.
"""

from __future__ import annotations

from auditor.detectors.base import BillingResultInput, DetectorInput, DetectorMetadata
from auditor.detectors.billing.gate import SavingsConfig, collecting_data, savings_finding, savings_severity
from auditor.detectors.registry import register
from auditor.models.finding import Finding, FindingKind, Severity

METADATA = DetectorMetadata(
    id="table_class",
    kind=FindingKind.TABLE_CLASS,
    default_severity=Severity.LOW,
    title="Table class does not match its storage-to-throughput mix",
    risk=(
        "Standard-IA stores data 60% cheaper but charges about 25% more for reads and writes. A table whose "
        "storage dominates its bill overpays on Standard; a busy table overpays on Standard-IA."
    ),
    remediation=(
        "Change the table class (UpdateTable --table-class); it can be changed twice in any 30 days and "
        "applies to the table and its GSIs."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.TableClasses.html",
)


class TableClassConfig(SavingsConfig):
    """Severity by monthly savings (USD); preliminary below ``min_days`` of data or without a weekend."""


@register(METADATA, TableClassConfig, DetectorInput.BILLING_RESULT)
def detect(data: BillingResultInput, cfg: TableClassConfig) -> list[Finding]:
    """One finding when the other table class is cheaper by the decision's margin (none while the table is still
    collecting history: ``billing_mode`` says so once)."""
    result = data.result
    if collecting_data(result, cfg):
        return []
    hint = result.table_class_hint
    if hint is None or hint.recommended_class == hint.current_class:
        return []
    if hint.monthly_savings < cfg.min_monthly_savings:
        return []
    savings = hint.monthly_savings
    severity, preliminary = savings_severity(savings, result, cfg)
    to_ia = hint.recommended_class == "STANDARD_INFREQUENT_ACCESS"
    why = (
        f"storage is {hint.storage_share:.0%} of its Standard-class cost"
        if to_ia
        else f"storage is only {hint.storage_share:.0%} of its Standard-class cost"
    )
    return [
        savings_finding(
            METADATA,
            data,
            change=f"{'Standard-IA' if to_ia else 'Standard'} table class",
            savings=savings,
            severity=severity,
            preliminary=preliminary,
            summary=(
                f"{result.table} holds {hint.storage_gb:,.1f} GB and {why}: Standard costs "
                f"${hint.monthly_cost_standard:,.2f}/month, Standard-IA ${hint.monthly_cost_standard_ia:,.2f}/month "
                f"(storage plus {result.recommended_mode} throughput)."
            ),
            recommendation=(
                f"`aws dynamodb update-table --table-name {result.table} --table-class {hint.recommended_class}` "
                "(at most two class changes per 30 days; reserved capacity does not apply to Standard-IA)."
            ),
            evidence={
                "current_class": hint.current_class,
                "recommended_class": hint.recommended_class,
                "monthly_savings": round(savings, 2),
                "days_analyzed": round(result.days_analyzed, 3),
                "confidence": result.confidence,
                "preliminary": preliminary is not None,
                "preliminary_reason": preliminary,
                "storage_gb": round(hint.storage_gb, 3),
                "storage_share": round(hint.storage_share, 4),
                "monthly_cost_standard": round(hint.monthly_cost_standard, 2),
                "monthly_cost_standard_ia": round(hint.monthly_cost_standard_ia, 2),
                "billing_mode": result.recommended_mode,
                "pricing": result.pricing,
            },
        )
    ]

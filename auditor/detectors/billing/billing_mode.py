"""``billing_mode``: the table's billing mode (or its auto-scaling settings) costs more than it needs to.

Pure: it reads a :class:`~auditor.models.billing.BillingResult` (the per-table decision made by
:mod:`auditor.billing.decide`) and returns at most one finding. It is not in the traffic-detector registry
(``auditor.detectors.registry`` is for ``TableWindow`` detectors); the billing decision and the metrics audit call
it directly.
"""

from __future__ import annotations

from auditor.detectors.base import BillingResultInput, DetectorInput, DetectorMetadata
from auditor.detectors.billing.gate import (
    SavingsConfig,
    collecting_data,
    collecting_finding,
    savings_finding,
    savings_severity,
)
from auditor.detectors.registry import register
from auditor.models.billing import BillingResult, CapacityRecommendation
from auditor.models.finding import Finding, FindingKind, Severity

METADATA = DetectorMetadata(
    id="billing_mode",
    kind=FindingKind.BILLING_MODE,
    default_severity=Severity.LOW,
    title="Table pays more than it needs to for throughput",
    risk=(
        "Billing mode is a table-level setting that teams rarely revisit. Since the November 2024 price cut, "
        "on-demand is cheaper whenever provisioned capacity would run below about 29% average utilisation; "
        "steady, busy tables still cost 2-3 times more on-demand than provisioned with auto scaling."
    ),
    remediation=(
        "Switch the billing mode (UpdateTable --billing-mode), or set the auto-scaling target and min/max "
        "capacity the finding gives, then watch throttling for a week."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/capacity-mode.html",
)


class BillingModeConfig(SavingsConfig):
    """Severity by monthly savings (USD); the decision itself already applied the margin gates. Preliminary below
    ``min_days`` of data or without a weekend."""


def _settings(cap: CapacityRecommendation) -> str:
    where = f"index {cap.index}" if cap.index else "table"
    return f"{where}: {cap.read.describe('reads')}, {cap.write.describe('writes')}"


def _recommendation(result: BillingResult) -> str:
    t = result.table
    if result.action == "switch_to_on_demand":
        return (
            f"Switch {t} to on-demand: `aws dynamodb update-table --table-name {t} --billing-mode PAY_PER_REQUEST` "
            "(deregister its auto-scaling targets first). Consider an on-demand maximum throughput "
            "(OnDemandThroughput) to cap runaway cost."
        )
    settings = "; ".join(_settings(c) for c in result.capacity)
    if result.action == "switch_to_provisioned":
        text = (
            f"Switch {t} to provisioned with auto scaling on the table and every GSI ({settings}): "
            f"`aws dynamodb update-table --table-name {t} --billing-mode PROVISIONED` with those capacities, then "
            "register the scalable targets and target-tracking policies (application-autoscaling)."
        )
    else:
        text = f"Keep {t} provisioned but change its auto scaling to: {settings}."
    if result.reserved_capacity is not None:
        text += " " + result.reserved_capacity.note
    return text


@register(METADATA, BillingModeConfig, DetectorInput.BILLING_RESULT)
def detect(data: BillingResultInput, cfg: BillingModeConfig) -> list[Finding]:
    """One finding when the decision recommends a change worth at least ``min_monthly_savings``; with too little
    history (under ``min_days``), one ``collecting data`` finding instead when any change would be in question."""
    result = data.result
    if collecting_data(result, cfg):
        hint = result.table_class_hint
        in_question = result.action != "keep" or (hint is not None and hint.recommended_class != hint.current_class)
        return [collecting_finding(METADATA, data, cfg)] if in_question else []
    if result.action == "keep" or result.monthly_savings < cfg.min_monthly_savings:
        return []
    savings = result.monthly_savings
    severity, preliminary = savings_severity(savings, result, cfg, at_most_low=result.confidence_label == "low")
    change = {
        "switch_to_on_demand": "switch to on-demand",
        "switch_to_provisioned": "switch to provisioned",
        "adjust_provisioned": "right-size auto scaling",
    }[result.action]
    throttle = result.throttling
    provisioned = result.recommended_mode == "PROVISIONED"
    evidence = {
        "current_mode": result.current_mode,
        "recommended_mode": result.recommended_mode,
        "monthly_cost_current": round(result.monthly_cost_current, 2),
        "monthly_cost_recommended": round(result.monthly_cost_recommended, 2),
        "monthly_savings": round(savings, 2),
        "days_analyzed": round(result.days_analyzed, 3),
        "action": result.action,
        "simulation": result.simulation,
        "monthly_cost_on_demand": round(result.monthly_cost_on_demand, 2),
        "monthly_cost_provisioned_simulated": round(result.monthly_cost_provisioned_simulated, 2),
        "monthly_cost_provisioned_current": (
            None
            if result.monthly_cost_provisioned_current is None
            else round(result.monthly_cost_provisioned_current, 2)
        ),
        "confidence": result.confidence,
        "confidence_label": result.confidence_label,
        "preliminary": preliminary is not None,
        "preliminary_reason": preliminary,
        "throttled_share": throttle.throttled_share,
        "capacity": [c.model_dump(mode="json") for c in result.capacity] if provisioned else [],
        "pricing": result.pricing,
        "indexes": [s.index for s in result.series if s.index],
    }
    return [
        savings_finding(
            METADATA,
            data,
            change=change,
            savings=savings,
            severity=severity,
            preliminary=preliminary,
            summary=(
                f"{result.table} ({result.current_mode}, table plus {len(result.series) - 1} GSI(s)) costs "
                f"${result.monthly_cost_current:,.2f}/month for throughput; "
                f"{'on-demand' if result.recommended_mode == 'PAY_PER_REQUEST' else 'provisioned with auto scaling'}"
                f" would cost ${result.monthly_cost_recommended:,.2f}/month ({result.reason}). "
                f"Based on {result.days_analyzed:.1f} days ({result.simulation} simulation, confidence "
                f"{result.confidence_label})."
                + (f" Preliminary ({preliminary}): not alerted, not counted in savings." if preliminary else "")
            ),
            recommendation=_recommendation(result),
            evidence=evidence,
        )
    ]

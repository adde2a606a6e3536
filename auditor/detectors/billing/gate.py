"""When a billing or table-class recommendation is trusted enough to act on.

Under :data:`MIN_DAYS` days of 1-minute capacity history there is no recommendation at all: :func:`collecting_finding`
says ``collecting data: N of 7 days`` (info, no savings, no change advised). A recommendation from data that holds no
Saturday or Sunday is **preliminary**: recorded and shown in the report (with the days analysed and the confidence),
but with severity ``info``, ``"preliminary": true`` in its evidence, no weight in any savings headline, and never
alerted (the lifecycle stores both muted, see :func:`auditor.lifecycle.transition`). Weekday-only traffic misses the
weekly low that decides whether provisioned capacity pays off, and an hour or a day says little about a month's bill.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from auditor.detectors.base import (
    Amount,
    BillingResultInput,
    DetectorConfig,
    DetectorMetadata,
    Table,
    make_finding,
    tiered_severity,
)
from auditor.models.billing import BillingResult
from auditor.models.finding import Finding, Severity, utc

#: Days of 1-minute data a billing recommendation needs (configurable per detector: ``min_days``).
MIN_DAYS = 7.0
#: The reason stored on a preliminary recommendation (the lifecycle mutes it with this reason).
PRELIMINARY_REASON = "preliminary billing recommendation: too little data to act on"


def includes_weekend(start: datetime, end: datetime) -> bool:
    """Whether [start, end) holds any part of a Saturday or Sunday (UTC)."""
    start, end = utc(start), utc(end)
    if end <= start:
        return False
    if end - start >= timedelta(days=7):
        return True
    day = start.replace(hour=0, minute=0, second=0, microsecond=0)
    while day < end:  # at most 8 iterations: the span is under 7 days
        if day.weekday() >= 5:
            return True
        day += timedelta(days=1)
    return False


def preliminary_reason(
    days_analyzed: float, start: datetime, end: datetime, *, min_days: float = MIN_DAYS, require_weekend: bool = True
) -> str | None:
    """Why a recommendation from this data is preliminary (None: it is not)."""
    missing = []
    if days_analyzed < min_days:
        missing.append(f"{days_analyzed:.1f} of the {min_days:g} days of 1-minute data it needs")
    if require_weekend and not includes_weekend(start, end):
        missing.append("no weekend in the data")
    return "; ".join(missing) or None


def collecting_data(result: BillingResult, cfg: SavingsConfig) -> bool:
    """Too few days of capacity history for any billing or table-class recommendation."""
    return result.days_analyzed < cfg.min_days


def collecting_text(days: float, needed: float = MIN_DAYS) -> str:
    """``collecting data: 0.0 of 7 days`` (the words every output shows for a table still collecting)."""
    return f"collecting data: {days:.1f} of {needed:g} days"


def collecting_finding(meta: DetectorMetadata, data: BillingResultInput, cfg: SavingsConfig) -> Finding:
    """The one info finding of a table with too little capacity history: no change, no savings, never alerted."""
    result = data.result
    text = collecting_text(result.days_analyzed, cfg.min_days)
    return make_finding(
        meta,
        Table(data.account, result.region, result.table),
        discriminator=meta.id,
        severity=Severity.INFO,
        title=f"{result.table}: {text}",
        summary=(
            f"{result.table} has {result.days_analyzed:.1f} days of 1-minute capacity history; a billing "
            f"recommendation needs {cfg.min_days:g}. No change is advised and no saving counted until then."
        ),
        recommendation="Nothing to do yet: the billing run decides once the history covers the days it needs.",
        evidence={
            "collecting_data": True,
            "days_analyzed": round(result.days_analyzed, 3),
            "days_needed": cfg.min_days,
            "confidence": result.confidence,
            "current_mode": result.current_mode,
            "recommended_mode": result.current_mode,
            "preliminary": True,
            "preliminary_reason": text,
        },
        first=result.window_start,
        last=result.window_end,
    )


def is_preliminary(evidence: dict[str, Any]) -> bool:
    """A billing or table-class finding's evidence says it is preliminary."""
    return evidence.get("preliminary") is True


class SavingsConfig(DetectorConfig):
    """What the two billing detectors share: severity by monthly savings (USD) and the data a trusted
    recommendation needs."""

    min_monthly_savings: Amount = 0.0
    medium_monthly_savings: Amount = 100.0
    high_monthly_savings: Amount = 1000.0
    #: Below this many days of 1-minute data (or without a weekend) the recommendation is preliminary.
    min_days: Amount = MIN_DAYS
    require_weekend: bool = True


def savings_severity(
    savings: float, result: BillingResult, cfg: SavingsConfig, *, at_most_low: bool = False
) -> tuple[Severity, str | None]:
    """(severity, why the recommendation is preliminary or None): high, medium or low by ``savings`` (at most low
    when ``at_most_low``), and info whatever the savings when the data is too little to act on."""
    severity = tiered_severity(savings, cfg.high_monthly_savings, cfg.medium_monthly_savings)
    if at_most_low and severity.rank > Severity.LOW.rank:
        severity = Severity.LOW
    preliminary = preliminary_reason(
        result.days_analyzed,
        result.window_start,
        result.window_end,
        min_days=cfg.min_days,
        require_weekend=cfg.require_weekend,
    )
    return (Severity.INFO if preliminary else severity), preliminary


def savings_finding(
    meta: DetectorMetadata,
    data: BillingResultInput,
    *,
    change: str,
    savings: float,
    severity: Severity,
    preliminary: str | None,
    summary: str,
    recommendation: str,
    evidence: dict[str, Any],
) -> Finding:
    """A billing detector's one finding: on the decision's table over its window, titled by the change and what it
    saves a month (``Preliminary: ... might save`` when the data is too little to act on)."""
    result = data.result
    return make_finding(
        meta,
        Table(data.account, result.region, result.table),
        discriminator=meta.id,
        severity=severity,
        title=(
            f"{'Preliminary: ' if preliminary else ''}{result.table}: {change} "
            f"{'might save' if preliminary else 'saves'} ${savings:,.2f}/month"
        ),
        summary=summary,
        recommendation=recommendation,
        evidence=evidence,
        first=result.window_start,
        last=result.window_end,
    )

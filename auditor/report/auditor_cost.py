"""The auditor's own cost in the weekly report: what it consumed in the week (:class:`AuditorUsage`, from its metrics
or the input's counters), priced line by line at public us-east-1 prices (:class:`CostRates`)."""

from __future__ import annotations

from pydantic import Field

from auditor.models.base import FrozenModel


class AuditorUsage(FrozenModel):
    """What the auditor itself consumed in the week (counts come from its own metrics or the input stats)."""

    cloudtrail_data_events: int = Field(default=0, ge=0)
    cloudwatch_metrics_requested: int = Field(default=0, ge=0)
    lambda_gb_seconds: float = Field(default=0.0, ge=0)
    lambda_requests: int = Field(default=0, ge=0)


class CostRates(FrozenModel):
    """Public us-east-1 prices (USD) used for the auditor's own cost estimate."""

    cloudtrail_per_100k_data_events: float = 0.10
    cloudwatch_per_1k_metrics: float = 0.01
    #: Lambda on arm64 (Graviton), the template's architecture; x86_64 is 0.0000166667.
    lambda_per_gb_second: float = 0.0000133334
    lambda_per_million_requests: float = 0.20


class CostLine(FrozenModel):
    item: str
    quantity: float
    unit: str
    rate: str
    usd: float


class AuditorCost(FrozenModel):
    """The auditor's estimated cost, line by line (USD)."""

    lines: list[CostLine]
    total_usd: float


def _usd(value: float) -> str:
    """A unit price for people: ``$0.10``, ``$13.33`` (never ``$1.33334e-05``: tiny prices are stated per a larger
    quantity by the caller)."""
    return f"${value:,.2f}" if value >= 0.01 else f"${value:,.4f}"


def _priced(item: str, quantity: float, unit: str, price: float, per: int, per_text: str) -> CostLine:
    """A line priced at ``price`` per ``per`` units (said as ``per_text``)."""
    return CostLine(
        item=item, quantity=quantity, unit=unit, rate=f"{_usd(price)} per {per_text}", usd=quantity / per * price
    )


def estimate_auditor_cost(usage: AuditorUsage, rates: CostRates | None = None) -> AuditorCost:
    """Price the auditor's own usage: CloudTrail data events, CloudWatch GetMetricData metrics, Lambda."""
    r = rates or CostRates()
    lines = [
        _priced(
            "CloudTrail data events delivered",
            usage.cloudtrail_data_events,
            "events",
            r.cloudtrail_per_100k_data_events,
            100_000,
            "100,000 events",
        ),
        _priced(
            "CloudWatch GetMetricData",
            usage.cloudwatch_metrics_requested,
            "metrics requested",
            r.cloudwatch_per_1k_metrics,
            1_000,
            "1,000 metrics",
        ),
        CostLine(
            item="Lambda compute",
            quantity=usage.lambda_gb_seconds,
            unit="GB-seconds",
            rate=f"{_usd(r.lambda_per_gb_second * 1_000_000)} per million GB-seconds",
            usd=usage.lambda_gb_seconds * r.lambda_per_gb_second,
        ),
        _priced(
            "Lambda requests",
            usage.lambda_requests,
            "invocations",
            r.lambda_per_million_requests,
            1_000_000,
            "million invocations",
        ),
    ]
    return AuditorCost(lines=lines, total_usd=sum(line.usd for line in lines))

"""The auditor's own cost in the weekly report: what it consumed in the week (:class:`AuditorUsage`, from its metrics
or the input's counters), priced line by line by the one model of the stack's bill
(:func:`auditor.cost.bill.bill_lines`, the same the cost ledger and ``benchmarks.cost`` use)."""

from __future__ import annotations

from pydantic import Field

from auditor.cost.bill import AuditorRates, bill_lines
from auditor.cost.bill import AuditorUsage as StackUsage
from auditor.models.base import FrozenModel

#: The lines the report always shows (the others when the week used them).
ALWAYS_SHOWN = ("CloudTrail data events delivered", "CloudWatch GetMetricData", "Lambda compute", "Lambda requests")


class AuditorUsage(FrozenModel):
    """What the auditor itself consumed in the week (counts come from its own metrics or the input stats)."""

    cloudtrail_data_events: int = Field(default=0, ge=0)
    cloudwatch_metrics_requested: int = Field(default=0, ge=0)
    lambda_gb_seconds: float = Field(default=0.0, ge=0)
    lambda_requests: int = Field(default=0, ge=0)
    #: The rest of the stack's usage in the week (S3, logs, alarms, KMS...: :class:`auditor.cost.bill.AuditorUsage`).
    stack: StackUsage | None = None

    def usage(self) -> StackUsage:
        """The week as the bill model's usage."""
        own = StackUsage(
            days=7.0,
            data_events=self.cloudtrail_data_events,
            metrics_requested=self.cloudwatch_metrics_requested,
            lambda_gb_seconds=self.lambda_gb_seconds,
            lambda_requests=self.lambda_requests,
        )
        return own if self.stack is None else own.plus(self.stack)

    @classmethod
    def of(cls, usage: StackUsage) -> AuditorUsage:
        """The report's usage for a bill model's usage (the inverse of :meth:`usage`)."""
        return cls(stack=usage)


class CostRates(FrozenModel):
    """Public us-east-1 prices (USD) used for the auditor's own cost estimate."""

    cloudtrail_per_100k_data_events: float = 0.10
    cloudwatch_per_1k_metrics: float = 0.01
    #: Lambda on arm64 (Graviton), the template's architecture; x86_64 is 0.0000166667.
    lambda_per_gb_second: float = 0.0000133334
    lambda_per_million_requests: float = 0.20

    def rates(self) -> AuditorRates:
        return AuditorRates(
            data_event=self.cloudtrail_per_100k_data_events / 100_000,
            metric_requested=self.cloudwatch_per_1k_metrics / 1_000,
            lambda_gb_second=self.lambda_per_gb_second,
            lambda_request=self.lambda_per_million_requests / 1_000_000,
        )


class CostLine(FrozenModel):
    item: str
    quantity: float
    unit: str
    rate: str
    usd: float
    source: str = ""


class AuditorCost(FrozenModel):
    """The auditor's estimated cost, line by line (USD)."""

    lines: list[CostLine]
    total_usd: float


def estimate_auditor_cost(usage: AuditorUsage, rates: CostRates | None = None) -> AuditorCost:
    """Price the auditor's own usage with :func:`auditor.cost.bill.bill_lines`: every line the week used, and always
    CloudTrail data events, CloudWatch GetMetricData and Lambda."""
    priced = bill_lines(usage.usage(), (rates or CostRates()).rates())
    lines = [
        CostLine(item=b.item, quantity=b.quantity, unit=b.unit, rate=b.rate, usd=b.usd, source=b.source)
        for b in priced
        if b.item in ALWAYS_SHOWN or b.quantity > 0
    ]
    return AuditorCost(lines=lines, total_usd=sum(line.usd for line in lines))

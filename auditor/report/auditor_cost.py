"""The auditor's own cost in the weekly report, one figure: the service's cost ledger when it kept one
(:func:`ledger_cost`, its total's lines), else what it consumed in the week (:class:`AuditorUsage`, from its metrics
or the input's counters), priced line by line by the one model of the stack's bill
(:func:`auditor.cost.bill.bill_lines`, the same the cost ledger and ``benchmarks.cost`` use)."""

from __future__ import annotations

from pydantic import Field

from auditor.cost.bill import LEDGER_GROUPS, AuditorRates, bill_lines
from auditor.cost.bill import AuditorUsage as StackUsage
from auditor.cost.cost_model import LedgerSummary
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
    #: None: a ledger line, stored as its cost only
    quantity: float | None
    unit: str
    rate: str
    usd: float
    source: str = ""


class AuditorCost(FrozenModel):
    """The auditor's estimated cost, line by line (USD)."""

    lines: list[CostLine]
    total_usd: float
    #: Where the figure comes from and what period it covers (None: the week's usage, priced line by line).
    period: str | None = None


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


#: A ledger group as a reader sees it (:data:`auditor.cost.bill.LEDGER_GROUPS`).
GROUP_LABELS: dict[str, str] = {
    "cloudtrail_data_events": "CloudTrail data events",
    "lambda": "Lambda (compute and requests)",
    "state_table": "State table",
    "cloudwatch_metrics": "CloudWatch GetMetricData",
    "contributor_insights": "Contributor Insights",
    "s3": "S3 (requests and storage)",
    "cloudwatch_logs": "CloudWatch Logs",
    "custom_metrics": "CloudWatch custom metrics (EMF)",
    "alarms": "CloudWatch alarms",
    "dashboards": "CloudWatch dashboard",
    "kms": "KMS",
    "sns": "SNS",
    "sqs": "SQS",
    "secrets_manager": "Secrets Manager",
}


def ledger_period(ledger: LedgerSummary) -> str:
    """``2026-12-05`` or ``2026-11-30 to 2026-12-06``: the days the ledger covers."""
    start, end = ledger.start.isoformat(), ledger.end.isoformat()
    return start if start == end else f"{start} to {end}"


def ledger_cost(ledger: LedgerSummary) -> AuditorCost:
    """The auditor's cost as the ledger states it: its total, one line per ledger group that cost something (the
    ledger stores each line's cost, not its quantity). The report's headline, its cost table and its ledger table
    all state this one figure."""
    order = {g: i for i, g in enumerate(LEDGER_GROUPS)}
    groups = sorted(ledger.total.auditor_lines.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
    lines = [
        CostLine(item=GROUP_LABELS.get(g, g.replace("_", " ")), quantity=None, unit="", rate="-", usd=usd)
        for g, usd in groups
        if usd > 0
    ]
    return AuditorCost(
        lines=lines, total_usd=ledger.total.auditor_usd, period=f"{ledger_period(ledger)}, the service's daily ledger"
    )


def priced_hours(hours: int) -> str:
    """``1 priced hour``, ``7 priced hours``: the period a ledger's ratio covers."""
    return f"{hours} priced hour{'' if hours == 1 else 's'}"


def ledger_periods(ledger: LedgerSummary) -> str:
    """What each side of the ledger covers, and the period its ratio is computed over (docs/cost.md)."""
    hours = ledger.total.priced_hours
    if hours is None:
        return "Both sides cover the audited window."
    return (
        f"The audited DynamoDB cost covers the {priced_hours(hours)} (the hours the metrics audit priced); the "
        "auditor's cost covers the whole days: its fixed costs by the day, the data events of every window captured "
        "(each with its trail files' 30 days of storage) and the reads of every priced hour. The ratio compares the "
        "two over the priced hours only: the auditor's cost in them is their reads, the data events of the windows "
        "that start in them and the day's fixed costs pro-rated to them."
    )

"""The stack's bill, line by line: the one model the cost ledger, the weekly report and ``benchmarks.cost`` render.

:class:`AuditorUsage` counts what the deployed auditor uses in a period (data events, every Scan and PartiQL page
included; S3, Lambda, CloudWatch Logs, GetMetricData, custom metrics, alarms, dashboards, KMS, SNS, SQS, Secrets
Manager, the state table, Contributor Insights); :func:`bill_lines` prices it at the us-east-1 list prices of
:class:`AuditorRates`, each with its source (:data:`SOURCES`). Pure: no boto3, no clock. Free tiers are not applied
(an account's free tier is usually used by something else). The figures are in docs/cost.md.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, NonNegativeFloat, NonNegativeInt

from auditor.models.base import FrozenModel

HOURS_PER_MONTH = 730.0
DAYS_PER_MONTH = HOURS_PER_MONTH / 24
GIB = float(2**30)


class AuditorRates(FrozenModel):
    """The list prices of what the auditor uses (USD per unit, us-east-1; :data:`SOURCES`)."""

    data_event: NonNegativeFloat = 1e-06  # $0.1 per 100,000
    lambda_gb_second: NonNegativeFloat = 0.0000133334
    lambda_request: NonNegativeFloat = 2e-07  # $0.2 per 1,000,000
    state_read_unit: NonNegativeFloat = 1.25e-07  # $0.125 per 1,000,000
    state_write_unit: NonNegativeFloat = 6.25e-07  # $0.625 per 1,000,000
    state_gb_month: NonNegativeFloat = 0.25
    metric_requested: NonNegativeFloat = 1e-05  # $0.01 per 1,000
    custom_metric_month: NonNegativeFloat = 0.30
    alarm_month: NonNegativeFloat = 0.10
    dashboard_month: NonNegativeFloat = 3.00
    log_gb_ingested: NonNegativeFloat = 0.50
    log_gb_month: NonNegativeFloat = 0.03
    ci_rule_month: NonNegativeFloat = 0.50
    ci_event: NonNegativeFloat = 3e-08  # $0.03 per 1,000,000
    s3_put: NonNegativeFloat = 5e-06  # $0.005 per 1,000
    s3_get: NonNegativeFloat = 4e-07  # $0.0004 per 1,000
    s3_gb_month: NonNegativeFloat = 0.023
    kms_key_month: NonNegativeFloat = 1.00
    kms_request: NonNegativeFloat = 3e-06  # $0.03 per 10,000
    sns_publish: NonNegativeFloat = 5e-07  # $0.5 per 1,000,000
    sqs_request: NonNegativeFloat = 4e-07  # $0.4 per 1,000,000
    secret_month: NonNegativeFloat = 0.40
    secret_api_call: NonNegativeFloat = 5e-06  # $0.05 per 10,000


#: Where each price comes from (the public pricing pages, us-east-1).
SOURCES: dict[str, str] = {
    "cloudtrail": "https://aws.amazon.com/cloudtrail/pricing/ (data events, $0.10 per 100,000)",
    "lambda": "https://aws.amazon.com/lambda/pricing/ (arm64: $0.0000133334 per GB-second, $0.20 per million)",
    "dynamodb": "https://aws.amazon.com/dynamodb/pricing/on-demand/ (Standard: $0.125/M RRU, $0.625/M WRU, $0.25/GB)",
    "cloudwatch": "https://aws.amazon.com/cloudwatch/pricing/ (GetMetricData $0.01 per 1,000 metrics; custom metric "
    "$0.30; standard alarm $0.10; dashboard $3.00; Logs $0.50/GB ingested, $0.03/GB-month; Contributor Insights "
    "for DynamoDB $0.50 per rule, $0.03 per million events)",
    "s3": "https://aws.amazon.com/s3/pricing/ (Standard: $0.005 per 1,000 PUT, $0.0004 per 1,000 GET, $0.023/GB)",
    "kms": "https://aws.amazon.com/kms/pricing/ ($1.00 per customer managed key-month, $0.03 per 10,000 requests)",
    "sns": "https://aws.amazon.com/sns/pricing/ ($0.50 per million publishes)",
    "sqs": "https://aws.amazon.com/sqs/pricing/ (standard queues: $0.40 per million requests)",
    "secretsmanager": "https://aws.amazon.com/secrets-manager/pricing/ ($0.40 per secret-month, $0.05 per 10,000 "
    "calls)",
}


class AuditorUsage(FrozenModel):
    """What the auditor used in one period (``days`` long); resources billed per month (custom metrics, alarms,
    dashboards, keys, secrets, rules, stored bytes) count what was in place during the period."""

    days: float = Field(default=1.0, gt=0)
    #: every data event delivered, each Scan and PartiQL page one
    data_events: NonNegativeInt = 0
    lambda_gb_seconds: NonNegativeFloat = 0
    lambda_requests: NonNegativeInt = 0
    state_read_units: NonNegativeFloat = 0
    state_write_units: NonNegativeFloat = 0
    state_bytes_stored: NonNegativeFloat = 0
    metrics_requested: NonNegativeInt = 0
    custom_metrics: NonNegativeInt = 0
    alarms: NonNegativeInt = 0
    dashboards: NonNegativeInt = 0
    log_bytes_ingested: NonNegativeFloat = 0
    log_bytes_stored: NonNegativeFloat = 0
    #: Contributor Insights rules active during the period (a fraction for rules enabled part of it: rule-hours / hours)
    ci_rules: NonNegativeFloat = 0
    ci_events: NonNegativeInt = 0
    s3_puts: NonNegativeInt = 0
    s3_gets: NonNegativeInt = 0
    #: average bytes kept during the period
    s3_bytes_stored: NonNegativeFloat = 0
    kms_keys: NonNegativeInt = 0
    kms_requests: NonNegativeInt = 0
    sns_publishes: NonNegativeInt = 0
    sqs_requests: NonNegativeInt = 0
    secrets: NonNegativeInt = 0
    secret_api_calls: NonNegativeInt = 0

    def plus(self, other: AuditorUsage) -> AuditorUsage:
        """Two usages of the same period added (counts add; ``days`` is the longer of the two)."""
        merged: dict[str, Any] = {"days": max(self.days, other.days)}
        for name in type(self).model_fields:
            if name != "days":
                merged[name] = getattr(self, name) + getattr(other, name)
        return AuditorUsage(**merged)


class BillLine(FrozenModel):
    """One priced line: ``group`` is the ledger's line (several lines may share one), ``item`` what a reader sees."""

    group: str
    item: str
    quantity: float
    unit: str
    rate: str
    usd: float
    source: str


#: The ledger's groups, in order; the first six are always present, the others when they cost something.
LEDGER_GROUPS: tuple[str, ...] = (
    "cloudtrail_data_events",
    "lambda",
    "state_table",
    "cloudwatch_metrics",
    "contributor_insights",
    "s3",
    "cloudwatch_logs",
    "custom_metrics",
    "alarms",
    "dashboards",
    "kms",
    "sns",
    "sqs",
    "secrets_manager",
)

#: One line a row: ledger group | item | unit | usage field | how the field counts (``n``: as it is; ``month``: in
#: place during the period, billed per month; ``gib``: bytes; ``gib-month``: bytes kept) | rate | per | said as |
#: source.
_TABLE = """
    cloudtrail_data_events | CloudTrail data events delivered | events | data_events | n | data_event | 100000 | 100,000 events | cloudtrail
    lambda | Lambda compute | GB-seconds | lambda_gb_seconds | n | lambda_gb_second | 1000000 | million GB-seconds | lambda
    lambda | Lambda requests | invocations | lambda_requests | n | lambda_request | 1000000 | million invocations | lambda
    state_table | State table reads | read request units | state_read_units | n | state_read_unit | 1000000 | million units | dynamodb
    state_table | State table writes | write request units | state_write_units | n | state_write_unit | 1000000 | million units | dynamodb
    state_table | State table storage | GB-months | state_bytes_stored | gib-month | state_gb_month | 1 | GB-month | dynamodb
    cloudwatch_metrics | CloudWatch GetMetricData | metrics requested | metrics_requested | n | metric_requested | 1000 | 1,000 metrics | cloudwatch
    contributor_insights | Contributor Insights rules | rule-months | ci_rules | month | ci_rule_month | 1 | rule-month | cloudwatch
    contributor_insights | Contributor Insights events | events | ci_events | n | ci_event | 1000000 | million events | cloudwatch
    s3 | S3 PUT requests | requests | s3_puts | n | s3_put | 1000 | 1,000 requests | s3
    s3 | S3 GET requests | requests | s3_gets | n | s3_get | 1000 | 1,000 requests | s3
    s3 | S3 storage | GB-months | s3_bytes_stored | gib-month | s3_gb_month | 1 | GB-month | s3
    cloudwatch_logs | CloudWatch Logs ingestion | GB | log_bytes_ingested | gib | log_gb_ingested | 1 | GB | cloudwatch
    cloudwatch_logs | CloudWatch Logs storage | GB-months | log_bytes_stored | gib-month | log_gb_month | 1 | GB-month | cloudwatch
    custom_metrics | CloudWatch custom metrics (EMF) | metric-months | custom_metrics | month | custom_metric_month | 1 | metric-month | cloudwatch
    alarms | CloudWatch alarms | alarm-months | alarms | month | alarm_month | 1 | alarm-month | cloudwatch
    dashboards | CloudWatch dashboard | dashboard-months | dashboards | month | dashboard_month | 1 | dashboard-month | cloudwatch
    kms | KMS key | key-months | kms_keys | month | kms_key_month | 1 | key-month | kms
    kms | KMS requests | requests | kms_requests | n | kms_request | 10000 | 10,000 requests | kms
    sns | SNS publishes | publishes | sns_publishes | n | sns_publish | 1000000 | million publishes | sns
    sqs | SQS requests | requests | sqs_requests | n | sqs_request | 1000000 | million requests | sqs
    secrets_manager | Secrets Manager secrets | secret-months | secrets | month | secret_month | 1 | secret-month | secretsmanager
    secrets_manager | Secrets Manager API calls | calls | secret_api_calls | n | secret_api_call | 10000 | 10,000 calls | secretsmanager
"""  # noqa: E501
_LINES = [tuple(cell.strip() for cell in row.split("|")) for row in _TABLE.strip().splitlines()]


def _quantity(usage: AuditorUsage, field: str, counts: str) -> float:
    value = float(getattr(usage, field))
    if counts.startswith("gib"):
        value /= GIB
    if counts.endswith("month"):
        value *= usage.days / DAYS_PER_MONTH
    return value


def _usd(value: float) -> str:
    """A unit price for people: ``$0.10``, ``$0.125``, ``$13.33`` (at least two decimals, at most four)."""
    if value >= 1:
        return f"${value:,.2f}"
    text = f"{value:,.4f}".rstrip("0")
    return f"${text}" if len(text.split(".")[1]) >= 2 else f"${value:,.2f}"


def bill_lines(usage: AuditorUsage, rates: AuditorRates | None = None) -> list[BillLine]:
    """Every line of the auditor's bill for the period, in a fixed order (zero lines included)."""
    r = rates or AuditorRates()
    out: list[BillLine] = []
    for group, item, unit, field, counts, attr, per_cell, per_text, source in _LINES:
        q = _quantity(usage, field, counts)
        price = float(getattr(r, attr))
        per = int(per_cell)
        out.append(
            BillLine(
                group=group,
                item=item,
                quantity=q,
                unit=unit,
                rate=f"{_usd(price * per)} per {per_text}",
                usd=q * price,
                source=SOURCES[source],
            )
        )
    return out


def grouped(lines: list[BillLine]) -> dict[str, float]:
    """The lines summed per ledger group: the first six groups always, the others when they cost something."""
    sums = dict.fromkeys(LEDGER_GROUPS, 0.0)
    for line in lines:
        sums[line.group] = sums.get(line.group, 0.0) + line.usd
    return {k: v for i, (k, v) in enumerate(sums.items()) if i < 6 or v > 0}

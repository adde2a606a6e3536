"""The cost ledger's arithmetic: what the audited tables cost, what the auditor costs, and the ratio.

Pure functions of counts and prices (no boto3, no clock), per audited table and day: the DynamoDB spend estimated
from CloudWatch consumed capacity, class and storage, and the auditor's own spend (CloudTrail data events, Lambda,
state-table requests, CloudWatch reads, Contributor Insights, S3). The auditor's prices and the month convention are
in docs/cost.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any, Literal

from pydantic import Field

from auditor.billing.pricing import ClassPrices
from auditor.models.base import FrozenModel

HOURS_PER_MONTH = 730.0
DAYS_PER_MONTH = HOURS_PER_MONTH / 24
GIB = float(2**30)

AuditorLine = Literal[
    "cloudtrail_data_events", "lambda", "state_table", "cloudwatch_metrics", "contributor_insights", "s3"
]
AUDITOR_LINES: tuple[AuditorLine, ...] = (
    "cloudtrail_data_events",
    "lambda",
    "state_table",
    "cloudwatch_metrics",
    "contributor_insights",
    "s3",
)


class AuditorRates(FrozenModel):
    """The prices of what the auditor itself uses (USD per unit; module docstring for the sources)."""

    data_event: float = Field(default=0.10 / 100_000, ge=0)
    lambda_gb_second: float = Field(default=0.0000133334, ge=0)
    lambda_request: float = Field(default=0.20 / 1_000_000, ge=0)
    state_read_unit: float = Field(default=0.125 / 1_000_000, ge=0)
    state_write_unit: float = Field(default=0.625 / 1_000_000, ge=0)
    metric_requested: float = Field(default=0.01 / 1_000, ge=0)
    ci_rule_month: float = Field(default=0.50, ge=0)
    ci_event: float = Field(default=0.03 / 1_000_000, ge=0)
    s3_put: float = Field(default=0.005 / 1_000, ge=0)
    s3_get: float = Field(default=0.0004 / 1_000, ge=0)
    s3_gb_month: float = Field(default=0.023, ge=0)


class AuditorUsage(FrozenModel):
    """What the auditor used on behalf of one audited table in one period (``days`` long)."""

    days: float = Field(default=1.0, gt=0)
    data_events: int = Field(default=0, ge=0)
    lambda_gb_seconds: float = Field(default=0.0, ge=0)
    lambda_requests: int = Field(default=0, ge=0)
    state_read_units: float = Field(default=0.0, ge=0)
    state_write_units: float = Field(default=0.0, ge=0)
    metrics_requested: int = Field(default=0, ge=0)
    ci_rules: int = Field(default=0, ge=0, description="Contributor Insights rules active during the period")
    ci_events: int = Field(default=0, ge=0)
    s3_puts: int = Field(default=0, ge=0)
    s3_gets: int = Field(default=0, ge=0)
    s3_bytes_stored: float = Field(default=0.0, ge=0, description="average bytes kept during the period")

    def plus(self, other: AuditorUsage) -> AuditorUsage:
        """Two usages of the same period added (counts add; ``days`` is the longer of the two)."""
        merged: dict[str, Any] = {"days": max(self.days, other.days)}
        for name in type(self).model_fields:
            if name != "days":
                merged[name] = getattr(self, name) + getattr(other, name)
        return AuditorUsage(**merged)


class DynamoDBUsage(FrozenModel):
    """What one audited table (with its GSIs) consumed in one period, from CloudWatch and DescribeTable."""

    days: float = Field(default=1.0, gt=0)
    billing_mode: Literal["PAY_PER_REQUEST", "PROVISIONED"]
    table_class: Literal["STANDARD", "STANDARD_INFREQUENT_ACCESS"] = "STANDARD"
    read_units: float = Field(default=0.0, ge=0, description="consumed read capacity units (Sum)")
    write_units: float = Field(default=0.0, ge=0, description="consumed write capacity units (Sum)")
    rcu_hours: float = Field(default=0.0, ge=0, description="provisioned read units in force x hours")
    wcu_hours: float = Field(default=0.0, ge=0, description="provisioned write units in force x hours")
    storage_bytes: float = Field(default=0.0, ge=0)


class Spend(FrozenModel):
    """A cost split into named lines (USD)."""

    lines: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.lines.values())


def dynamodb_spend(usage: DynamoDBUsage, prices: ClassPrices) -> Spend:
    """The table's DynamoDB bill for the period: throughput by mode, plus storage."""
    if usage.billing_mode == "PAY_PER_REQUEST":
        reads = usage.read_units * prices.read_request_unit
        writes = usage.write_units * prices.write_request_unit
    else:
        reads = usage.rcu_hours * prices.rcu_hour
        writes = usage.wcu_hours * prices.wcu_hour
    storage = usage.storage_bytes / GIB * prices.storage_gb_month * usage.days / DAYS_PER_MONTH
    return Spend(lines={"reads": reads, "writes": writes, "storage": storage})


def auditor_spend(usage: AuditorUsage, rates: AuditorRates | None = None) -> Spend:
    """The auditor's own bill for the period, one line per service."""
    r = rates or AuditorRates()
    month_share = usage.days / DAYS_PER_MONTH
    return Spend(
        lines={
            "cloudtrail_data_events": usage.data_events * r.data_event,
            "lambda": usage.lambda_gb_seconds * r.lambda_gb_second + usage.lambda_requests * r.lambda_request,
            "state_table": usage.state_read_units * r.state_read_unit + usage.state_write_units * r.state_write_unit,
            "cloudwatch_metrics": usage.metrics_requested * r.metric_requested,
            "contributor_insights": usage.ci_rules * r.ci_rule_month * month_share + usage.ci_events * r.ci_event,
            "s3": usage.s3_puts * r.s3_put
            + usage.s3_gets * r.s3_get
            + usage.s3_bytes_stored / GIB * r.s3_gb_month * month_share,
        }
    )


class LedgerEntry(FrozenModel):
    """One audited table on one UTC day: both sides of the ledger, with what they were computed from."""

    day: date
    account: str | None = None
    region: str | None = None
    table: str
    dynamodb: Spend
    auditor: Spend
    #: Fraction of the table's requests that the capture plan logged that day (1.0 = full capture).
    captured_fraction: float | None = Field(default=None, ge=0, le=1)

    def to_item(self) -> dict[str, Any]:
        """The stored form (numbers as strings so that DynamoDB keeps them exactly as computed)."""
        item: dict[str, Any] = {
            "day": self.day.isoformat(),
            "account": self.account or "",
            "region": self.region or "",
            "table": self.table,
            "dynamodb": {k: repr(v) for k, v in self.dynamodb.lines.items()},
            "auditor": {k: repr(v) for k, v in self.auditor.lines.items()},
        }
        if self.captured_fraction is not None:
            item["captured_fraction"] = repr(self.captured_fraction)
        return item

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> LedgerEntry:
        fraction = item.get("captured_fraction")
        return cls(
            day=date.fromisoformat(str(item["day"])),
            account=str(item.get("account") or "") or None,
            region=str(item.get("region") or "") or None,
            table=str(item["table"]),
            dynamodb=Spend(lines={str(k): float(v) for k, v in dict(item["dynamodb"]).items()}),
            auditor=Spend(lines={str(k): float(v) for k, v in dict(item["auditor"]).items()}),
            captured_fraction=None if fraction is None else float(fraction),
        )


class LedgerRow(FrozenModel):
    """One table's (or the total's) costs over the ledger's period."""

    table: str
    days: int
    auditor_usd: float
    dynamodb_usd: float
    auditor_lines: dict[str, float]

    @property
    def ratio(self) -> float | None:
        """Auditor cost / audited DynamoDB cost (None when the audited cost is 0)."""
        return self.auditor_usd / self.dynamodb_usd if self.dynamodb_usd > 0 else None


class LedgerSummary(FrozenModel):
    """The ledger over a period: one row per table, and the total."""

    start: date
    end: date
    rows: list[LedgerRow]
    total: LedgerRow
    #: Auditor costs that belong to no table (shared Lambda runs, the report), already in ``total``.
    shared_usd: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        def row(r: LedgerRow) -> dict[str, Any]:
            return {
                "table": r.table,
                "days": r.days,
                "auditor_usd": round(r.auditor_usd, 9),
                "dynamodb_usd": round(r.dynamodb_usd, 9),
                "ratio": None if r.ratio is None else round(r.ratio, 9),
                "auditor_lines": {k: round(v, 9) for k, v in r.auditor_lines.items()},
            }

        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "tables": [row(r) for r in self.rows],
            "total": row(self.total),
            "shared_usd": round(self.shared_usd, 6),
        }


SHARED = "(shared)"


def summarise(entries: Iterable[LedgerEntry]) -> LedgerSummary | None:
    """Add the entries up per table and in total; entries of the table ``(shared)`` count in the total only."""
    by_table: dict[str, list[LedgerEntry]] = {}
    for e in entries:
        by_table.setdefault(e.table, []).append(e)
    if not by_table:
        return None
    days = sorted({e.day for es in by_table.values() for e in es})

    def row(name: str, es: list[LedgerEntry]) -> LedgerRow:
        lines: dict[str, float] = dict.fromkeys(AUDITOR_LINES, 0.0)
        for e in es:
            for k, v in e.auditor.lines.items():
                lines[k] = lines.get(k, 0.0) + v
        return LedgerRow(
            table=name,
            days=len({e.day for e in es}),
            auditor_usd=sum(e.auditor.total for e in es),
            dynamodb_usd=sum(e.dynamodb.total for e in es),
            auditor_lines=lines,
        )

    rows = [row(t, es) for t, es in sorted(by_table.items()) if t != SHARED]
    shared = by_table.get(SHARED, [])
    total = row("total", [e for es in by_table.values() for e in es])
    return LedgerSummary(
        start=days[0],
        end=days[-1],
        rows=rows,
        total=total,
        shared_usd=sum(e.auditor.total for e in shared),
    )


def usage_from_history(history: Mapping[str, Any], days: float) -> DynamoDBUsage:
    """A table's DynamoDB usage from its capacity history (the ``ddb-audit billing --input`` document)."""
    period_h = float(history.get("period_seconds", 60)) / 3600
    reads = writes = rcu_h = wcu_h = 0.0
    for s in history.get("series", []):
        reads += sum(float(v) for v in s.get("consumed_read") or [] if v is not None)
        writes += sum(float(v) for v in s.get("consumed_write") or [] if v is not None)
        rcu_h += sum(float(v) for v in s.get("provisioned_read") or [] if v is not None) * period_h
        wcu_h += sum(float(v) for v in s.get("provisioned_write") or [] if v is not None) * period_h
    cls = history.get("table_class") or "STANDARD"
    return DynamoDBUsage(
        days=days,
        billing_mode=history["billing_mode"],
        table_class=cls,
        read_units=reads,
        write_units=writes,
        rcu_hours=rcu_h,
        wcu_hours=wcu_h,
        storage_bytes=float(history.get("table_size_bytes") or 0),
    )


#: Per-run and per-event estimates of the deployed auditor's resource use, outside data events (the fixed part of
#: its bill). Lambda figures are GB-seconds per run at the template's memory sizes and typical durations.
FIXED_MODEL: dict[str, float] = {
    "evaluator_gb_s_per_run": 1.0,  # every 15 minutes: 2,920 runs a month
    "metrics_audit_gb_s_per_run": 30.0,  # hourly: 730 runs
    "controller_gb_s_per_run": 0.25,  # every 5 minutes: 8,760 runs
    "trail_objects_per_month": 8_760.0,  # CloudTrail delivers about one file per 5 minutes
    "state_write_units_per_object": 6.0,
    "state_read_units_per_evaluation": 20.0,
    "metrics_audit_metrics_per_table": 3.0,  # consumed read/write, plus provisioned on provisioned tables
    "lambda_gb_s_per_million_events": 40.0,  # the 1 GB ingest function at about 25,000 records/s
    "compressed_bytes_per_event": 150.0,
    # the daily cost ledger: 96 window updates (an item of about 2 KB: 2 write units) and 24 hour updates (about
    # 4 KB: 4 units) per table and day (auditor.state.ledger_store)
    "ledger_write_units_per_table_day": 96 * 2 + 24 * 4,
}
CONTROLLER_RUNS_PER_MONTH = 8_760


def fixed_monthly_usage(tables: int, controller_metrics: int = 0, *, controller: bool = True) -> AuditorUsage:
    """The auditor's usage in a month that does not depend on the data events (:data:`FIXED_MODEL`)."""
    m = FIXED_MODEL
    lam = 2_920 * m["evaluator_gb_s_per_run"] + 730 * m["metrics_audit_gb_s_per_run"]
    requests = 2_920 + 730 + int(m["trail_objects_per_month"])
    if controller:
        lam += CONTROLLER_RUNS_PER_MONTH * m["controller_gb_s_per_run"]
        requests += CONTROLLER_RUNS_PER_MONTH
    return AuditorUsage(
        days=DAYS_PER_MONTH,
        lambda_gb_seconds=lam,
        lambda_requests=requests,
        state_read_units=2_920 * m["state_read_units_per_evaluation"],
        state_write_units=m["trail_objects_per_month"] * m["state_write_units_per_object"]
        + (2 * CONTROLLER_RUNS_PER_MONTH if controller else 0)
        + tables * m["ledger_write_units_per_table_day"] * DAYS_PER_MONTH,
        # the metrics audit hourly, plus its daily billing read
        metrics_requested=int(tables * m["metrics_audit_metrics_per_table"] * (730 + 30)) + controller_metrics,
        s3_puts=int(m["trail_objects_per_month"]),
        s3_gets=int(m["trail_objects_per_month"]),
    )


def data_event_usage(events: float) -> AuditorUsage:
    """The auditor's usage that grows with the data events of a month (CloudTrail, ingest Lambda, S3 storage)."""
    m = FIXED_MODEL
    return AuditorUsage(
        days=DAYS_PER_MONTH,
        data_events=int(events),
        lambda_gb_seconds=events / 1e6 * m["lambda_gb_s_per_million_events"],
        s3_bytes_stored=events * m["compressed_bytes_per_event"] / 2,  # grows through the month: half on average
    )


def controller_poll_metrics(tables: int, busy_tables: int, poll_every_slices: int, watched: int = 5) -> int:
    """Metrics the controller requests in a month: every table hourly, busy ones every ``poll_every_slices``
    slices of 5 minutes, about ``watched`` tables every slice (two metrics each: consumed reads and writes)."""
    runs = CONTROLLER_RUNS_PER_MONTH
    return 2 * (tables * 730 + busy_tables * runs // poll_every_slices + watched * runs)


def fixed_monthly_usd(
    tables: int, busy_tables: int, poll_every_slices: int = 3, rates: AuditorRates | None = None
) -> float:
    """The budget's first claim: the auditor's monthly cost outside data events, with the controller's reads."""
    polls = controller_poll_metrics(tables, busy_tables, poll_every_slices)
    return auditor_spend(fixed_monthly_usage(tables, polls), rates).total

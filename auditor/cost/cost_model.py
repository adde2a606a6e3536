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
from auditor.cost.bill import (
    DAYS_PER_MONTH,
    GIB,
    HOURS_PER_MONTH,
    LEDGER_GROUPS,
    AuditorRates,
    AuditorUsage,
    BillLine,
    bill_lines,
    grouped,
)
from auditor.models.base import FrozenModel

#: The ledger lines every entry shows (the others when they cost something: :data:`auditor.cost.bill.LEDGER_GROUPS`).
AUDITOR_LINES: tuple[str, ...] = LEDGER_GROUPS[:6]
__all__ = ["DAYS_PER_MONTH", "GIB", "HOURS_PER_MONTH", "AuditorRates", "AuditorUsage", "BillLine", "bill_lines"]


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
    """The auditor's own bill for the period, one line per ledger group (:func:`auditor.cost.bill.bill_lines`)."""
    return Spend(lines=grouped(bill_lines(usage, rates)))


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
    #: The hours (epoch seconds of each UTC hour's start) the DynamoDB side was priced for: the service's daily entry
    #: books the metrics audit's hours, while its auditor side covers more (every data-event window, a day of fixed
    #: costs). None: both sides cover the same period (``ddb-audit audit``'s window).
    hours: tuple[int, ...] | None = None
    #: The auditor side's part within ``hours`` (those hours' reads, the data events of the windows that start in
    #: them, a day's fixed costs pro-rated to them): what the ratio compares. None: all of it.
    in_hours: Spend | None = None

    @property
    def matched_auditor(self) -> float:
        """The auditor's cost over the period the DynamoDB side covers."""
        return (self.auditor if self.in_hours is None else self.in_hours).total

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
    #: Hours the DynamoDB side was priced for (None: both sides cover the same period, the ledger's).
    priced_hours: int | None = None
    #: The auditor's cost over those hours (``auditor_usd`` when both sides cover the same period).
    matched_auditor_usd: float | None = None

    @property
    def ratio(self) -> float | None:
        """Auditor cost / audited DynamoDB cost over the period both sides cover: the priced hours when the sides
        cover different periods (None when no hour was priced or the audited cost is 0)."""
        if self.dynamodb_usd <= 0 or self.priced_hours == 0:
            return None
        matched = self.auditor_usd if self.matched_auditor_usd is None else self.matched_auditor_usd
        return matched / self.dynamodb_usd


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
                **(
                    {}
                    if r.priced_hours is None
                    else {"priced_hours": r.priced_hours, "matched_auditor_usd": round(r.matched_auditor_usd or 0.0, 9)}
                ),
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
        priced = [e for e in es if e.hours is not None]
        return LedgerRow(
            table=name,
            days=len({e.day for e in es}),
            auditor_usd=sum(e.auditor.total for e in es),
            dynamodb_usd=sum(e.dynamodb.total for e in es),
            auditor_lines=lines,
            priced_hours=len({h for e in priced for h in e.hours or ()}) if priced else None,
            matched_auditor_usd=sum(e.matched_auditor for e in es) if priced else None,
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
    "digest_objects_per_month": 730.0,  # log file validation: one digest file an hour
    "state_write_units_per_object": 6.0,
    "state_read_units_per_evaluation": 20.0,
    "state_bytes_per_table": 1_000_000.0,  # windows, findings, ledger and plan items kept (TTL-bounded)
    "metrics_audit_metrics_per_table": 3.0,  # consumed read/write, plus provisioned on provisioned tables
    "lambda_gb_s_per_million_events": 40.0,  # the 1 GB ingest function at about 25,000 records/s
    "compressed_bytes_per_event": 150.0,
    # the daily cost ledger: 96 window updates (an item of about 2 KB: 2 write units) and 24 hour updates (about
    # 4 KB: 4 units) per table and day (auditor.state.ledger_store)
    "ledger_write_units_per_table_day": 96 * 2 + 24 * 4,
    # what each evaluated window kept (auditor.state.window_store.SightingStore): one item per table and window, its
    # key-identified requests and top 20 keys per partition space (a hot key's share and requests over the week are
    # of them) and its findings' totals; about 0.7 to 1.5 KB: 2 write units
    "sighting_write_units_per_table_day": 96 * 2,
    # CloudWatch Logs: about 3 KB per invocation (START/END/REPORT, the run's summary line, its EMF line), 2 KB per
    # table per metrics-audit run; stored compressed (about 15 %) for the log groups' 30 days
    "log_bytes_per_run": 3_000.0,
    "log_bytes_per_table_audit": 2_000.0,
    "log_stored_fraction": 0.15,
    # KMS: CloudTrail's GenerateDataKey per object, the ingest's Decrypt per GET, the fingerprints' and the state
    # table's and log groups' calls (about 10 an hour)
    "kms_requests_per_object": 3.0,
    "kms_requests_per_hour": 10.0,
    # SQS: the event source mapping's long polls (5 pollers, one 20-second poll each) plus a delete per object
    "sqs_polls_per_month": 5 * 3 * 60 * HOURS_PER_MONTH,
    "sns_publishes_per_month": 300.0,  # alerts and alarm notifications
    "report_objects_per_month": 3 * 52 / 12,  # the weekly report's Markdown, HTML and JSON
}
CONTROLLER_RUNS_PER_MONTH = 8_760


class StackShape(FrozenModel):
    """What the deployed stack holds that bills by the month, whatever the traffic (template.yaml)."""

    controller: bool = True
    #: the default deployment's alarms (8), plus the controller's when it runs
    alarms: int = Field(default=8, ge=0)
    #: the EMF health metrics of the handlers (each name and dimension set is one custom metric)
    custom_metrics: int = Field(default=14, ge=0)
    dashboard: bool = True
    kms_key: bool = True
    #: a Slack webhook secret read by the notifier (the secret itself is yours: only its reads are counted)
    slack: bool = False
    #: the capture controller's CloudWatch reads a month, when known (the ledger otherwise estimates them)
    controller_metrics: int | None = None

    def lean(self) -> StackShape:
        """The stack trimmed for a small budget: no health dashboard, the 4 custom metrics the alarms need."""
        return self.model_copy(update={"dashboard": False, "custom_metrics": min(self.custom_metrics, LEAN_METRICS)})


#: Custom metrics the alarms read (evaluation lag, outbox age, unreadable objects, late contributions).
LEAN_METRICS = 4


def fixed_monthly_usage(
    tables: int, controller_metrics: int = 0, *, controller: bool = True, shape: StackShape | None = None
) -> AuditorUsage:
    """The auditor's usage in a month that does not depend on the data events (:data:`FIXED_MODEL`)."""
    m = FIXED_MODEL
    stack = (shape or StackShape()).model_copy(update={"controller": controller})
    objects = m["trail_objects_per_month"]
    lam = 2_920 * m["evaluator_gb_s_per_run"] + 730 * m["metrics_audit_gb_s_per_run"]
    requests = 2_920 + 730 + int(objects)
    if controller:
        lam += CONTROLLER_RUNS_PER_MONTH * m["controller_gb_s_per_run"]
        requests += CONTROLLER_RUNS_PER_MONTH
    logs = requests * m["log_bytes_per_run"] + 730 * tables * m["log_bytes_per_table_audit"]
    return AuditorUsage(
        days=DAYS_PER_MONTH,
        lambda_gb_seconds=lam,
        lambda_requests=requests,
        state_read_units=2_920 * m["state_read_units_per_evaluation"],
        state_write_units=objects * m["state_write_units_per_object"]
        + (2 * CONTROLLER_RUNS_PER_MONTH if controller else 0)
        + tables * (m["ledger_write_units_per_table_day"] + m["sighting_write_units_per_table_day"]) * DAYS_PER_MONTH,
        state_bytes_stored=tables * m["state_bytes_per_table"],
        # the metrics audit hourly, plus its daily billing read; the controller's daily read of the scan and PartiQL
        # requests (one metric per table and operation)
        metrics_requested=audit_metrics(tables)
        + controller_metrics
        + (int(4 * tables * DAYS_PER_MONTH) if controller else 0),
        custom_metrics=stack.custom_metrics,
        alarms=stack.alarms + (1 if controller else 0),
        dashboards=1 if stack.dashboard else 0,
        log_bytes_ingested=logs,
        log_bytes_stored=logs * m["log_stored_fraction"],
        # trail objects and digests (written by CloudTrail, billed to the bucket), fingerprints, reports
        s3_puts=int(2 * objects + m["digest_objects_per_month"] + m["report_objects_per_month"]),
        s3_gets=int(2 * objects),
        kms_keys=1 if stack.kms_key else 0,
        kms_requests=int(objects * m["kms_requests_per_object"] + HOURS_PER_MONTH * m["kms_requests_per_hour"]),
        sns_publishes=int(m["sns_publishes_per_month"]),
        sqs_requests=int(m["sqs_polls_per_month"] + objects),
        secret_api_calls=2_920 if stack.slack else 0,
    )


def audit_metrics(tables: int) -> int:
    """Metrics the metrics audit requests in a month: hourly, plus its daily billing read."""
    return int(tables * FIXED_MODEL["metrics_audit_metrics_per_table"] * (730 + 30))


def data_event_usage(events: float) -> AuditorUsage:
    """The auditor's usage that grows with the data events of a month (CloudTrail, ingest Lambda, S3 storage).

    The trail bucket expires objects after 30 days, so a steady month keeps a month of events."""
    m = FIXED_MODEL
    return AuditorUsage(
        days=DAYS_PER_MONTH,
        data_events=int(events),
        lambda_gb_seconds=events / 1e6 * m["lambda_gb_s_per_million_events"],
        s3_bytes_stored=events * m["compressed_bytes_per_event"],
    )


def controller_poll_metrics(tables: int, busy_tables: int, poll_every_slices: int, watched: int = 5) -> int:
    """Metrics the controller requests in a month: every table hourly, busy ones every ``poll_every_slices``
    slices of 5 minutes, about ``watched`` tables every slice (two metrics each: consumed reads and writes)."""
    runs = CONTROLLER_RUNS_PER_MONTH
    return 2 * (tables * 730 + busy_tables * runs // poll_every_slices + watched * runs)


def fixed_monthly_usd(
    tables: int,
    busy_tables: int,
    poll_every_slices: int = 3,
    rates: AuditorRates | None = None,
    shape: StackShape | None = None,
) -> float:
    """The budget's first claim: the auditor's monthly cost outside data events, with the controller's reads."""
    polls = controller_poll_metrics(tables, busy_tables, poll_every_slices)
    return auditor_spend(fixed_monthly_usage(tables, polls, shape=shape), rates).total


def month_lines(
    tables: int,
    data_events: float,
    controller_metrics: int,
    *,
    controller: bool,
    shape: StackShape | None = None,
    extra: AuditorUsage | None = None,
) -> list[BillLine]:
    """The month's bill, line by line, for an account of ``tables`` tables and ``data_events`` data events (every
    Scan and PartiQL page counted), plus ``extra`` (Contributor Insights on demand): what the benchmark prints and the
    week's ledger adds up to."""
    usage = fixed_monthly_usage(tables, controller_metrics, controller=controller, shape=shape)
    usage = usage.plus(data_event_usage(data_events))
    return bill_lines(usage.plus(extra) if extra is not None else usage)

"""The read-only live audit: inventory → CloudWatch metrics → Contributor Insights → detectors → findings.

:func:`run_audit` is what ``ddb-audit audit`` and the hourly metrics-audit Lambda call; it never writes to AWS, and a
failed call is a gap, never fatal. :func:`audit_billing` is the separate billing read and decision (``billing_mode``
and ``table_class`` findings, source ``cloudwatch_billing``). Which tables billing leaves out, and why, is in
docs/service.md.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError
from pydantic import Field

from auditor.billing.decide import analyze_billing
from auditor.billing.pricing import RegionPrices
from auditor.cost.ledger import audit_ledger, ledger_lines
from auditor.detectors.base import DetectorInput, InsightsInput, MetricsInput
from auditor.detectors.findings import correlate
from auditor.detectors.findings.throttling_story import merge_throttling
from auditor.detectors.insights import hot_key as ci_hot_key
from auditor.detectors.registry import all_detectors, guarded
from auditor.detectors.settings import DetectorSettings
from auditor.detectors.stream import large_item
from auditor.detectors.stream.large_item import Config as LargeItemConfig
from auditor.exceptions import AuditError
from auditor.findings_text import findings_table, markdown_table, render_columns, to_json
from auditor.models.audit import BillingRead
from auditor.models.base import FrozenModel
from auditor.models.billing import BillingConfig, BillingInput, Simulation
from auditor.models.finding import Finding, FindingKind
from auditor.models.inventory import ON_DEMAND, PROVISIONED, Gap, Inventory, TableProfile
from auditor.models.metrics import (
    CAUSE_METRICS,
    CONSUMED,
    SCAN_REQUESTS,
    THROTTLE_EVENTS,
    WRITE_OPERATIONS,
    ApiStats,
    InsightReport,
    MetricSeries,
    TableMetrics,
)
from auditor.models.metrics import PROVISIONED as PROVISIONED_METRIC
from auditor.service.record import SOURCE_CLOUDWATCH_BILLING
from auditor.sources.audit_clients import AuditClients, build_clients
from auditor.sources.aws_calls import error_message
from auditor.sources.cloudwatch import (
    ActivityRead,
    MetricsResult,
    billing_window,
    collect_metrics,
    read_activity,
    read_billing_metrics,
)
from auditor.sources.contributor_insights import read_insight_reports
from auditor.sources.inventory import TableSelector, collect_inventory
from auditor.sources.pricing_api import PriceBook

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

log = structlog.get_logger(__name__)

__all__ = [
    "AuditClients",
    "AuditConfig",
    "AuditError",
    "AuditResult",
    "BillingAuditConfig",
    "BillingRead",
    "audit_billing",
    "billing_blocker",
    "billing_findings",
    "build_clients",
    "capacity_history",
    "evaluate_billing",
    "evaluate_table",
    "render_audit",
    "run_audit",
    "table_billing",
]

#: The evidence ``source`` of the billing findings the audit makes (what the metrics audit may resolve them by).
BILLING_SOURCE = SOURCE_CLOUDWATCH_BILLING
#: Days of 1-minute capacity the billing decision reads by default (the archived awslabs evaluator's 14).
DEFAULT_BILLING_DAYS = 14
#: CloudWatch keeps 1-minute datapoints for 15 days.
MAX_BILLING_DAYS = 15
#: The billing read starts no new group of tables with less time than this left (``time_left``).
BILLING_TIME_RESERVE_SECONDS = 60.0


class BillingAuditConfig(FrozenModel):
    """The billing analysis of the audit: simulation, decision tunables and finding thresholds."""

    enabled: bool = True
    #: ``aws`` (documented AWS auto-scaling behaviour) or ``evaluator`` (the archived awslabs evaluator's rules).
    simulation: Simulation = "aws"
    decision: BillingConfig = Field(default_factory=BillingConfig)


class AuditConfig(DetectorSettings):
    """The audit's detector tree (``detectors`` by id, ``tables`` per table: :mod:`auditor.detectors.settings`),
    its billing analysis and how much it reads."""

    billing: BillingAuditConfig = Field(default_factory=BillingAuditConfig)
    #: Contributors read per Contributor Insights rule (DynamoDB rules allow at most 25).
    max_contributors: int = Field(default=10, ge=1, le=25)
    #: Parallel DescribeTable/tags/TTL calls.
    max_workers: int = Field(default=8, ge=1, le=32)


@dataclass(slots=True)
class AuditResult:
    """Findings of one audit run, with everything they were computed from."""

    findings: list[Finding]
    inventory: Inventory
    metrics: MetricsResult
    insight_reports: list[InsightReport]
    stats: ApiStats
    #: Detectors that failed on a table ("cw_throttling on Orders: ValueError: ...").
    errors: list[str] = field(default_factory=list)
    #: Findings passed in as ``related_findings`` that correlation changed (raised and linked): store them too.
    updated_related: list[Finding] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    #: The billing read, when the audit decided billing (``billing_days`` > 0).
    billing: BillingRead | None = None
    #: The daily activity read of the idle-table and TTL detectors, when made (``activity_days`` > 0).
    activity: ActivityRead | None = None

    @property
    def start(self) -> int:
        """The audited window's start (epoch seconds): the metrics read's."""
        return self.metrics.start

    @property
    def end(self) -> int:
        """The audited window's end (epoch seconds, exclusive): the metrics read's."""
        return self.metrics.end

    def table_metrics(self, table: str) -> TableMetrics | None:
        return self.metrics.tables.get(table)

    def capacity_history(self, table: str) -> dict[str, Any] | None:
        """The table's capacity history as the ``ddb-audit billing --input`` document (:func:`capacity_history`).

        None when the table was not audited or its billing mode is unknown.
        """
        profile, tm = self.inventory.get(table), self.metrics.tables.get(table)
        if profile is None or tm is None:
            return None
        return capacity_history(profile, tm)

    def summary_stats(self) -> dict[str, Any]:
        from auditor.detectors.metrics.common import iso

        return {
            "tables_audited": len(self.inventory.tables),
            "tables_missing": list(self.inventory.missing),
            "window_start": iso(self.start),
            "window_end": iso(self.end),
            "days": round((self.end - self.start) / 86_400, 3),
            "period_seconds": self.metrics.period,
            "insight_reports": len(self.insight_reports),
            "gaps": len(self.gaps),
            **self.stats.as_dict(),
            "billing": self.billing.as_dict() if self.billing is not None else None,
            "activity": self.activity.as_dict() if self.activity is not None else None,
        }

    def _capacity(self, profile: TableProfile) -> list[dict[str, Any]] | None:
        """Peak consumption and capacity settings of the table and its GSIs (read by ``ddb-audit what-if``)."""
        from auditor.whatif.capacity import resource_capacities

        tm = self.metrics.tables.get(profile.name)
        if tm is None or profile.billing_mode == "unknown":
            return None
        return [r.to_dict() for r in resource_capacities(profile, tm, self.inventory.quotas)]

    def _item_size(self, profile: TableProfile) -> dict[str, Any]:
        """The table's item size in the order of :func:`auditor.models.capacity.item_size` from what the audit read
        (DescribeTable's size over its item count, else CloudWatch's consumed units per write, a lower bound), with
        its source; and CloudWatch's estimate on its own (read by ``ddb-audit what-if --audit``)."""
        from auditor.models.capacity import item_size
        from auditor.whatif.capacity import cloudwatch_item_size

        tm = self.metrics.tables.get(profile.name)
        estimate = cloudwatch_item_size(tm) if tm is not None else None
        size, source = item_size(inventory=profile.described_item_size, cloudwatch=estimate)
        return {"item_size_bytes": size, "item_size_source": source, "cloudwatch_item_size_bytes": estimate}

    def to_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for f in self.findings:
            counts[f.table] = counts.get(f.table, 0) + 1
        return {
            "findings": [f.model_dump(mode="json") for f in self.findings],
            "tables": [
                t.summary()
                | {
                    "findings": counts.get(t.name, 0),
                    **self._item_size(t),
                    "capacity": self._capacity(t),
                    # the consumed/provisioned series read, for the report's capacity charts (billing --input form)
                    "capacity_history": self.capacity_history(t.name),
                }
                for t in self.inventory.tables
            ],
            "gaps": [g.model_dump() for g in self.gaps],
            "errors": list(self.errors),
            "stats": self.summary_stats(),
            "cost": self.cost_summary(),
        }

    def cost_summary(self) -> dict[str, Any] | None:
        """The audited window's ledger: each table's DynamoDB spend next to this audit's reads for it."""
        summary = audit_ledger(self)
        if summary is None:
            return None
        return summary.to_dict() | {
            "auditor_source": "this audit's CloudWatch reads ($0.01 per 1,000 metrics requested) and Contributor "
            "Insights where enabled ($0.50 per rule-month, $0.03 per million events)",
            "window_days": round((self.end - self.start) / 86_400, 3),
        }


def evaluate_table(
    profile: TableProfile, tm: TableMetrics, config: AuditConfig, errors: list[str] | None = None
) -> list[Finding]:
    """The CloudWatch detectors of one table over the audited window (pure). Billing has its own read and window:
    :func:`evaluate_billing`."""
    errs = errors if errors is not None else []
    data = MetricsInput(profile, tm)
    findings = [
        finding
        for det in all_detectors(DetectorInput.TABLE_METRICS)
        for finding in guarded(
            errs, det.id, profile.name, partial(det.run, data, config.detector_config(det.id, profile.name))
        )
    ]
    large_writes = config.detector_config("large_item", profile.name)
    return findings + guarded(
        errs, "large_item", profile.name, partial(large_write_estimate, profile, tm, large_writes)
    )


def evaluate_billing(
    profile: TableProfile,
    tm: TableMetrics,
    config: BillingAuditConfig,
    errors: list[str] | None = None,
    prices: PriceBook | None = None,
    detectors: DetectorSettings | None = None,
    *,
    throttled: bool = False,
) -> list[Finding]:
    """:func:`table_billing` on the table's billing read, a failure reported as ``"billing on <table>: ..."``."""
    errs = errors if errors is not None else []
    return guarded(
        errs,
        "billing",
        profile.name,
        lambda: table_billing(profile, tm, config, prices, detectors, throttled=throttled),
    )


def throttled_tables(findings: Sequence[Finding], metrics: Mapping[str, TableMetrics]) -> set[str]:
    """The tables that throttled in the audited window: a ``throttling`` finding of the audit names them, or their
    (or a GSI's) throttle-event series counted any. Billing never advises them lower or reserved capacity."""
    names = {f.table for f in findings if f.kind is FindingKind.THROTTLING and f.table}
    throttle_metrics = [*THROTTLE_EVENTS.values(), *(m for cause in CAUSE_METRICS.values() for m in cause.values())]
    for name, tm in metrics.items():
        if any(res.total(m) > 0 for res in tm.resources.values() for m in throttle_metrics):
            names.add(name)
    return names


# ------------------------------------------------------------------------------------------------------ billing


def capacity_history(profile: TableProfile, tm: TableMetrics) -> dict[str, Any] | None:
    """The table's capacity history as the ``ddb-audit billing --input`` document (docs/contract.md), or None (mode
    unknown).

    ``consumed_*`` are the per-period CloudWatch ``Sum`` values (missing = 0), for the table and every GSI (a GSI
    without series consumed nothing). ``provisioned_*`` are the units in force in each period (the 5-minute values
    carried forward; null before the first value, which the billing decision carries backwards) on a provisioned
    table, null on an on-demand one. ``table_size_bytes`` is the table plus its indexes (DescribeTable), when known.
    """
    if profile.billing_mode not in (ON_DEMAND, PROVISIONED):
        return None
    from auditor.detectors.metrics.common import iso

    provisioned = profile.billing_mode == PROVISIONED
    times = range(tm.start, tm.end, tm.period)
    series: list[dict[str, Any]] = []
    for index in (None, *sorted(g.name for g in profile.gsis)):
        res = tm.resources.get(index)
        entry: dict[str, Any] = {"index": index}
        for access in ("read", "write"):
            consumed = res.get(CONSUMED[access]) if res is not None else None
            points = consumed.points if consumed is not None else {}
            entry[f"consumed_{access}"] = [points.get(t, 0.0) for t in times]
            prov = res.get(PROVISIONED_METRIC[access]) if res is not None and provisioned else None
            # Capacity is never 0 on a provisioned resource: 0 here is "before the first 5-minute value".
            entry[f"provisioned_{access}"] = [v or None for v in _carried(prov, times)] if prov is not None else None
        # The auto-scaling settings in force (Application Auto Scaling), shown next to the simulated ones.
        capacity = profile.capacity if index is None else (g.capacity if (g := profile.gsi(index)) else None)
        scaling = {
            t.access: {
                "min_capacity": t.min_capacity,
                "max_capacity": t.max_capacity,
                "target_utilization": t.target_utilization,
            }
            for t in (capacity.auto_scaling if capacity is not None else ())
        }
        if scaling:
            entry["auto_scaling"] = scaling
        series.append(entry)
    doc: dict[str, Any] = {
        "table": profile.name,
        "region": profile.region or "us-east-1",
        "table_class": profile.table_class or "STANDARD",
        "billing_mode": profile.billing_mode,
        "start": iso(tm.start),
        "period_seconds": tm.period,
        "series": series,
    }
    sizes = [profile.size_bytes, *(i.size_bytes for i in profile.indexes)]
    if profile.size_bytes is not None:
        doc["table_size_bytes"] = sum(s for s in sizes if s is not None)
    return doc


def _carried(series: MetricSeries, times: range) -> list[float | None]:
    """The series' latest value at or before each of ``times`` (None before its first value), in one pass."""
    points = sorted(series.points.items())
    out: list[float | None] = []
    i, current = 0, None
    for t in times:
        while i < len(points) and points[i][0] <= t:
            current = points[i][1]
            i += 1
        out.append(current)
    return out


def _has_points(series: MetricSeries | None) -> bool:
    return series is not None and bool(series.points)


def billing_blocker(profile: TableProfile, tm: TableMetrics) -> str | None:
    """Why the table's billing cannot be decided from this audit's data, or None when it can."""
    if profile.billing_mode not in (ON_DEMAND, PROVISIONED):
        return "billing mode unknown"
    provisioned = profile.billing_mode == PROVISIONED
    metric_names = [*CONSUMED.values(), *(PROVISIONED_METRIC.values() if provisioned else ())]
    consumed_any = False
    for index in (None, *(g.name for g in profile.gsis)):
        where = f"index {index}" if index else "table"
        res = tm.resources.get(index)
        unreadable = sorted(n for n in metric_names if res is not None and not res.known(n))
        if unreadable:
            return f"{where}: {', '.join(unreadable)} could not be read"
        consumed_any = consumed_any or (res is not None and any(res.get(m) for m in CONSUMED.values()))
        if provisioned:
            missing = [m for m in PROVISIONED_METRIC.values() if res is None or not _has_points(res.get(m))]
            if missing:
                return f"{where}: no {', '.join(missing)} in CloudWatch (the capacity in force is unknown)"
    if not provisioned and not consumed_any:
        return "on-demand and no consumed capacity"
    return None


def billing_findings(
    profile: TableProfile,
    history: Mapping[str, Any],
    config: BillingAuditConfig | None = None,
    *,
    prices: RegionPrices | None = None,
    detectors: DetectorSettings | None = None,
    throttled: bool = False,
) -> list[Finding]:
    """The ``billing_mode`` and ``table_class`` findings of one table's capacity history (pure).

    ``history`` is the ``ddb-audit billing --input`` document (:func:`capacity_history`); an invalid one raises
    :class:`~auditor.exceptions.InputError`. ``prices`` default to the bundled prices of the history's region (a
    labelled us-east-1 default for a region without bundled prices). The findings carry the profile's account and
    ``evidence.source = "cloudwatch_billing"``. ``detectors`` is the detector tree (``billing_mode`` and
    ``table_class`` settings for the table; defaults when None). ``throttled``: the table throttled in the audited
    period (:func:`throttled_tables`), so no lower capacity and no reserved capacity is advised.
    """
    cfg = config or BillingAuditConfig()
    if not cfg.enabled:
        return []
    tree = detectors if detectors is not None else DetectorSettings()
    inp = BillingInput.from_document(dict(history), f"capacity history of {profile.name}")
    analysis = analyze_billing(
        inp,
        simulation=cfg.simulation,
        config=cfg.decision,
        prices=prices,
        account=profile.account,
        mode_config=tree.detector_config("billing_mode", profile.name),
        class_config=tree.detector_config("table_class", profile.name),
        throttled=throttled,
    )
    for warning in analysis.warnings:
        log.warning("billing_warning", table=profile.name, warning=warning)
    result = analysis.result
    log.info(
        "billing_decided",
        table=profile.name,
        action=result.action,
        monthly_savings=round(result.monthly_savings, 2),
        confidence=result.confidence,
        days=round(result.days_analyzed, 3),
    )
    return [f.model_copy(update={"evidence": {**f.evidence, "source": BILLING_SOURCE}}) for f in analysis.findings]


def _epoch(iso_time: str | None) -> int | None:
    if not iso_time:
        return None
    try:
        moment = datetime.fromisoformat(iso_time)
    except ValueError:
        return None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


def covered(profile: TableProfile, tm: TableMetrics) -> TableMetrics:
    """``tm`` from where CloudWatch can have the table's data (the same series): what the window really covers.

    That is the window start, or later for a table younger than the window: the earlier of its creation time
    (DescribeTable) and its first datapoint. (Minutes before a table existed are no evidence of idleness; minutes
    of an existing table without datapoints are idle ones. A table re-created under the same name keeps the name's
    older metrics: they count. Minutes CloudWatch no longer keeps are already outside the window.)
    """
    first = min((min(s.points) for res in tm.resources.values() for s in res.series.values() if s.points), default=None)
    created = _epoch(profile.created)
    known = [t for t in (first, created) if t is not None]
    if not known or min(known) <= tm.start:
        return tm
    begin = min(known)
    begin -= (begin - tm.start) % tm.period  # down to the window's periods
    return TableMetrics(tm.table, min(begin, tm.end), tm.end, tm.period, tm.resources)


def table_billing(
    profile: TableProfile,
    tm: TableMetrics,
    config: BillingAuditConfig,
    prices: PriceBook | None = None,
    detectors: DetectorSettings | None = None,
    *,
    throttled: bool = False,
) -> list[Finding]:
    """:func:`billing_findings` from a billing read, when the data allows a decision (:func:`billing_blocker`).

    The history starts where the table's data can (:func:`covered`), so ``days_analyzed`` is the real coverage.
    ``prices`` (one per run) gives the region's Pricing API prices; without it the bundled table is used.
    """
    if not config.enabled:
        return []
    reason = billing_blocker(profile, tm)
    history = capacity_history(profile, covered(profile, tm)) if reason is None else None
    if history is None:
        log.info("billing_skipped", table=profile.name, reason=reason)
        return []
    region_prices = None
    if prices is not None:
        region_prices, warning = prices.get(str(history["region"]))
        if warning:  # the caller reports the book's warnings (the CLI on stderr); logs stay quiet on stdout
            log.info("billing_prices", table=profile.name, warning=warning)
    return billing_findings(profile, history, config, prices=region_prices, detectors=detectors, throttled=throttled)


def audit_billing(
    cloudwatch: CloudWatchClient,
    profiles: Sequence[TableProfile],
    *,
    end: int,
    now: int,
    days: float,
    config: AuditConfig,
    errors: list[str],
    time_left: Callable[[], float] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    prices: PriceBook | None = None,
    throttled: Collection[str] = (),
) -> tuple[list[Finding], BillingRead]:
    """The billing findings of ``profiles`` from their own read of the ``days`` before ``end`` (read-only), decided
    with ``config.billing`` and its billing detectors' settings; the ``throttled`` tables (:func:`throttled_tables`)
    are never advised lower or reserved capacity.

    Tables are read and decided a group at a time (:func:`auditor.sources.cloudwatch.read_billing_metrics`); each
    group's series are dropped before the next is read. A decision that fails is an ``errors`` entry
    (``"billing on <table>: ..."``). With ``time_left`` (seconds left to run), no group is started with less than
    :data:`BILLING_TIME_RESERVE_SECONDS` left: the tables not reached are skipped (and not ``read_complete``); the
    tables are read in an order that changes daily, so the ones left out change too.
    """
    if not 0 < days <= MAX_BILLING_DAYS:
        raise ValueError(f"billing days must be more than 0 and at most {MAX_BILLING_DAYS}")
    start, stop = billing_window(end, days, now)
    read = BillingRead(start=start, end=stop, days=days)
    findings: list[Finding] = []
    # Read in an order that changes every day (and not within one: a retried event reads the same way), so that
    # when runs stop for time it is not always the same tables that go undecided.
    day = stop // 86_400
    known = sorted(
        (p for p in profiles if p.billing_mode in (ON_DEMAND, PROVISIONED)),
        key=lambda p: hashlib.sha256(f"{day}:{p.name}".encode()).digest(),
    )
    for p in profiles:
        if p.billing_mode not in (ON_DEMAND, PROVISIONED):
            read.skipped[p.name] = "billing mode unknown"
    by_name = {p.name: p for p in known}
    pending = set(by_name)

    def in_time() -> bool:
        return time_left is None or time_left() >= BILLING_TIME_RESERVE_SECONDS

    groups = read_billing_metrics(cloudwatch, known, start, stop, read.stats, proceed=in_time, sleep=sleep)
    try:
        for group in groups:
            read.groups += 1
            read.gaps += group.gaps
            for name, tm in group.tables.items():
                profile = by_name[name]
                pending.discard(name)
                reason = billing_blocker(profile, tm)
                if not any(res.unavailable for res in tm.resources.values()):
                    read.read_complete.add(name)
                if reason is not None:
                    read.skipped[name] = reason
                    log.info("billing_skipped", table=name, reason=reason)
                    continue
                failures = len(errors)
                findings += evaluate_billing(
                    profile, tm, config.billing, errors, prices, config, throttled=name in throttled
                )
                if len(errors) > failures:
                    read.skipped[name] = "the decision failed (see errors)"
                    continue
                window = covered(profile, tm)
                read.coverage_days[name] = (window.end - window.start) / 86_400
    except BotoCoreError as exc:  # the endpoint went away mid-read: the tables not reached stay undecided
        read.gaps.append(
            Gap(
                call="cloudwatch:GetMetricData",
                error_code=type(exc).__name__,
                message=error_message(exc),
                facet="billing_metrics",
            )
        )
    finally:
        groups.close()
    if pending and not in_time():
        log.warning("billing_out_of_time", tables_not_read=len(pending))
        read.gaps.append(
            Gap(
                call="cloudwatch:GetMetricData",
                error_code="OutOfTime",
                message=f"{len(pending)} tables not read: less than {BILLING_TIME_RESERVE_SECONDS:.0f} s left",
                facet="billing_metrics",
            )
        )
    for name in sorted(pending):
        read.skipped[name] = "not read"
    log.info("billing_read_finished", findings=len(findings), **read.as_dict(per_table=False))
    return findings, read


def large_write_estimate(profile: TableProfile, tm: TableMetrics, cfg: LargeItemConfig) -> list[Finding]:
    """``large_item`` with ``key: null`` when the table's average write costs 100+ WCU (pure; no stream needed).

    Writes are the ``SuccessfulRequestLatency`` SampleCount of the write operations, a batch or transaction request
    counted at its maximum item count, so the WCU per item is a lower bound and a flag is never an overstatement.
    """
    res = tm.resources.get(None)
    if res is None:
        return []
    writes = sum(res.total(f"{SCAN_REQUESTS}:{op}") * items for op, items in WRITE_OPERATIONS.items())
    finding = large_item.estimate_large_writes(
        profile.name,
        res.total(CONSUMED["write"]),
        round(writes),
        (datetime.fromtimestamp(tm.start, UTC), datetime.fromtimestamp(tm.end, UTC)),
        account=profile.account,
        region=profile.region,
        writes_source="cloudwatch SuccessfulRequestLatency SampleCount (write operations)",
        cfg=cfg,
    )
    return [finding] if finding is not None else []


def evaluate_activity(
    profile: TableProfile, activity: TableMetrics, config: AuditConfig, errors: list[str] | None = None
) -> list[Finding]:
    """The detectors of the daily activity read (pure): idle tables and TTL that deletes nothing."""
    errs = errors if errors is not None else []
    data = MetricsInput(profile, activity)
    return [
        finding
        for det in all_detectors(DetectorInput.TABLE_ACTIVITY)
        for finding in guarded(
            errs, det.id, profile.name, partial(det.run, data, config.detector_config(det.id, profile.name))
        )
    ]


def run_audit(
    clients: AuditClients,
    selector: TableSelector,
    *,
    start: int,
    end: int,
    now: int | None = None,
    config: AuditConfig | None = None,
    related_findings: Sequence[Finding] = (),
    billing_days: float = 0,
    time_left: Callable[[], float] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    prices: PriceBook | None = None,
    activity_days: float = 0,
) -> AuditResult:
    """Audit the selected tables over ``[start, end)`` (epoch seconds). Read-only.

    ``related_findings`` (e.g. the open CloudTrail ``hot_key`` findings from the state table) take part in the
    correlation; the ones it changes are returned in ``updated_related``. With ``billing_days`` > 0 (at most 15)
    billing is decided from its own read of the ``billing_days`` before ``end`` (:func:`audit_billing`; ``time_left``
    bounds it); 0 decides no billing. With ``activity_days`` > 0 the daily consumption (and TTL deletions) of the
    ``activity_days`` before ``end`` are read for the idle-table and TTL detectors (:func:`read_activity`).
    """
    config = config or AuditConfig()
    stats = ApiStats()
    try:
        inventory = collect_inventory(
            clients.dynamodb,
            clients.autoscaling,
            selector,
            stats=stats,
            max_workers=config.max_workers,
            quotas=clients.quotas,
        )
        metrics = collect_metrics(clients.cloudwatch, inventory, start, end, stats, now=now, sleep=sleep)
        reports, ci_gaps = read_insight_reports(
            clients.cloudwatch,
            inventory,
            metrics.start,
            metrics.end,
            stats,
            max_contributors=config.max_contributors,
            sleep=sleep,
        )
    except BotoCoreError as exc:  # credentials, endpoint, region: nothing can be read
        raise AuditError(f"cannot reach AWS: {exc}") from exc

    errors: list[str] = []
    findings: list[Finding] = []
    for profile in inventory.tables:
        tm = metrics.tables.get(profile.name)
        if tm is not None:
            findings += evaluate_table(profile, tm, config, errors)
    billing: BillingRead | None = None
    if billing_days > 0 and config.billing.enabled:
        billing_findings_, billing = audit_billing(
            clients.cloudwatch,
            inventory.tables,
            end=metrics.end,
            now=end if now is None else now,
            days=billing_days,
            config=config,
            errors=errors,
            time_left=time_left,
            sleep=sleep,
            prices=prices,
            throttled=throttled_tables(findings, metrics.tables),
        )
        findings += billing_findings_
        stats.merge(billing.stats)
    activity: ActivityRead | None = None
    if activity_days > 0:
        try:
            activity = read_activity(
                clients.cloudwatch, inventory.tables, end=metrics.end, days=activity_days, sleep=sleep
            )
        except BotoCoreError as exc:
            raise AuditError(f"cannot reach AWS: {exc}") from exc
        stats.merge(activity.stats)
        for profile in inventory.tables:
            activity_tm = activity.tables.get(profile.name)
            if activity_tm is not None:
                findings += evaluate_activity(profile, activity_tm, config, errors)
    profiles = {p.name: p for p in inventory.tables}
    findings += guarded(
        errors,
        "ci_hot_key",
        "*",
        partial(ci_hot_key.detect, InsightsInput(reports, profiles), config.detector_config("ci_hot_key")),
    )
    # CloudWatch's per-cause throttling findings and Contributor Insights' throttled keys: one story per table/index.
    findings = merge_throttling(findings)
    own = {f.id for f in findings}
    combined = correlate.correlate([*findings, *related_findings], config.detector_config("correlate"))
    findings = sorted((f for f in combined if f.id in own), key=Finding.sort_key)
    before = {f.id: f for f in related_findings}
    updated = [f for f in combined if f.id in before and f.id not in own and f != before[f.id]]
    gaps = [
        *inventory.all_gaps(),
        *metrics.gaps,
        *ci_gaps,
        *(billing.gaps if billing is not None else ()),
        *(activity.gaps if activity is not None else ()),
    ]
    result = AuditResult(
        findings=findings,
        inventory=inventory,
        metrics=metrics,
        insight_reports=reports,
        stats=stats,
        errors=errors,
        updated_related=updated,
        gaps=gaps,
        billing=billing,
        activity=activity,
    )
    log.info(
        "audit_finished",
        tables=len(inventory.tables),
        findings=len(findings),
        gaps=len(gaps),
        detector_errors=len(errors),
        api_calls=sum(stats.calls.values()),
        metrics_requested=stats.metrics_requested,
        estimated_cost_usd=round(stats.estimated_cost_usd, 6),
    )
    return result


def render_audit(result: AuditResult, fmt: str) -> str:
    """The audit as ``json``, ``table`` or ``markdown`` text (complete, ready to write in one piece)."""
    if fmt == "json":
        return to_json(result.to_dict())
    st = result.summary_stats()
    ledger = audit_ledger(result)
    cost = (
        f"{st['api_calls_total']} API calls ({st['get_metric_data_calls']} GetMetricData), "
        f"{st['metrics_requested']} metrics requested of {st['series_candidates']} candidate series, "
        f"estimated CloudWatch cost ${st['estimated_cost_usd']:.4f}"
    )
    window = f"{st['window_start']} to {st['window_end']} ({st['period_seconds']}-second periods)"
    billing = "not decided in this run"
    if result.billing is not None:
        b = result.billing.as_dict()
        billing = (
            f"{b['window_start']} to {b['window_end']} ({b['period_seconds']}-second periods): "
            f"{b['tables_decided']} tables decided, {len(b['skipped'])} skipped; {b['get_metric_data_calls']} "
            f"GetMetricData calls, {b['metrics_requested']} metrics requested, {b['datapoints']} datapoints"
        )
    rows = [
        (
            t.name,
            t.billing_mode,
            str(len(t.gsis)),
            t.contributor_insights.status,
            str(sum(1 for f in result.findings if f.table == t.name)),
        )
        for t in result.inventory.tables
    ]
    header = ("table", "billing mode", "GSIs", "contributor insights", "findings")
    if fmt == "markdown":
        out = ["# DynamoDB live audit", "", f"Window: {window}", "", "## Findings", ""]
        if result.findings:
            out += markdown_table(
                ("Severity", "Kind", "Table", "Finding"),
                (
                    (
                        f.severity.value,
                        f.kind.value,
                        f.table + ("/" + f.index if f.index else ""),
                        f.title.replace("|", "/"),
                    )
                    for f in result.findings
                ),
            )
            for f in result.findings:
                out += ["", f"### {f.title}", "", f"**{f.severity.value}** · `{f.kind.value}` · `{f.id}`", ""]
                out += [f.summary, "", f"**Fix:** {f.recommendation}"]
        else:
            out.append("No findings.")
        out += ["", "## Tables", "", *markdown_table(header, rows)]
        if result.gaps:
            out += ["", "## Gaps (unknown facets)", ""] + [f"- {g.describe()}" for g in result.gaps]
        out += ["", "## Billing read", "", billing]
        out += ["", "## Cost of this run", "", cost, ""]
        if ledger is not None:
            out += ["## Cost ledger", "", "The audited window; auditor cost = this audit's CloudWatch reads.", ""]
            out += [*ledger_lines(ledger, markdown=True), ""]
        return "\n".join(out)
    lines = ["Findings", "========", *findings_table(result.findings), "", "Tables", "======"]
    lines += render_columns(rows, header).rstrip("\n").split("\n") if rows else ["No tables audited."]
    if result.gaps:
        lines += ["", "Gaps (unknown facets)", "====================="] + [g.describe() for g in result.gaps]
    lines += ["", f"Window: {window}", f"Billing: {billing}", f"Cost: {cost}"]
    if ledger is not None:
        lines += ["", "Cost ledger (the audited window; auditor cost = this audit's CloudWatch reads)", "=" * 78]
        lines += ledger_lines(ledger)
    return "\n".join(lines) + "\n"

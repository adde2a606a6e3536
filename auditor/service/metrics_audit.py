"""The hourly metrics audit (scheduled): the read-only live audit, recorded through the findings lifecycle.

:func:`run_metrics_audit` runs :func:`auditor.service.audit.run_audit` over the selected tables (once a day also the
billing decision and the daily activity read), correlates with the stored CloudTrail findings, records the findings
resolving only what it can vouch for (:func:`audit_scope`), and books the hour in the daily cost ledger. It raises
only when the table list cannot be read. The steps and the resolve scope are in docs/service.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError, ClientError

from auditor.cost.ledger import audit_entries
from auditor.detectors.findings import correlate, scan_volume
from auditor.lifecycle import TableKey
from auditor.models.finding import Finding, FindingKind, isoformat_z, utc
from auditor.service.audit import AuditClients, AuditConfig, AuditError, AuditResult, run_audit
from auditor.service.record import (
    SOURCE_CLOUDTRAIL,
    SOURCE_CLOUDWATCH,
    SOURCE_CLOUDWATCH_ACTIVITY,
    SOURCE_CLOUDWATCH_BILLING,
    SOURCE_CONTRIBUTOR_INSIGHTS,
    LifecycleParams,
    OpenFindings,
    RecordResult,
    ResolveScope,
    finding_source,
)
from auditor.sinks.sns import PublishResult, publish_pending
from auditor.sources.inventory import TableSelector
from auditor.sources.org import CoverageGap, SessionFactory, Target, TargetError, fan_out
from auditor.state.audit_cycle import AuditCycle, AuditCycleStore
from auditor.state.findings_store import FindingsStore
from auditor.state.interfaces import HourLedger
from auditor.state.table_item_sizes import TableItemSizes

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

    from auditor.config import Settings

__all__ = [
    "MetricsAuditParams",
    "MetricsAuditResult",
    "OrgMetricsAuditResult",
    "OrgScope",
    "audit_scope",
    "correlate_with_stored",
    "run_metrics_audit",
    "run_org_metrics_audit",
]

log = structlog.get_logger(__name__)

#: The Contributor Insights detector (it runs once over every table: ``run_audit`` reports it on table ``*``).
_CI_DETECTOR = "ci_hot_key"
#: The billing decision (``run_audit`` reports a failure as ``"billing on <table>: ..."``).
_BILLING_DETECTOR = "billing"


@dataclass(frozen=True, slots=True)
class MetricsAuditParams:
    """The metrics audit's settings (see :meth:`from_settings`)."""

    lifecycle: LifecycleParams
    selector: TableSelector = field(default_factory=TableSelector)
    lookback_seconds: int = 86_400
    audit: AuditConfig = field(default_factory=AuditConfig)
    #: Days of 1-minute capacity the billing run reads (1..15).
    billing_lookback_days: int = 14
    #: The UTC hour whose run decides billing (0..23).
    billing_hour_utc: int = 6

    def __post_init__(self) -> None:
        if self.lookback_seconds < 60:
            raise ValueError("lookback_seconds must be >= 60")
        if not 1 <= self.billing_lookback_days <= 15:
            raise ValueError("billing_lookback_days must be 1..15")
        if not 0 <= self.billing_hour_utc <= 23:
            raise ValueError("billing_hour_utc must be 0..23")

    def bills_at(self, now: datetime) -> bool:
        """Whether the run scheduled at ``now`` decides billing: its UTC hour is the billing hour."""
        return utc(now).hour == self.billing_hour_utc

    @classmethod
    def from_settings(cls, settings: Settings) -> MetricsAuditParams:
        """Parameters from the process settings (raises ConfigurationError on a missing or invalid one)."""
        tag = settings.audit_table_tag  # validated by Settings: KEY=VALUE
        key, _, value = (tag or "").partition("=")
        return cls(
            lifecycle=LifecycleParams.from_settings(settings),
            selector=TableSelector(
                names=settings.audit_table_names(),
                prefix=settings.audit_table_prefix or None,
                tag=(key.strip(), value.strip()) if tag else None,
            ),
            lookback_seconds=settings.audit_lookback_seconds,
            audit=AuditConfig.from_tree(settings.analysis_config()),
            billing_lookback_days=settings.billing_lookback_days,
            billing_hour_utc=settings.billing_audit_hour_utc,
        )


@dataclass(slots=True)
class MetricsAuditResult:
    """What one run did (logged, and returned by the handler)."""

    window_start: int
    window_end: int
    tables: int
    tables_missing: list[str]
    findings: int
    #: Stored CloudTrail findings that correlation raised or linked (recorded with this run's findings).
    related_updated: int
    gaps: int
    detector_errors: list[str]
    api_calls: int
    metrics_requested: int
    estimated_cost_usd: float
    #: (source, table) pairs this run could resolve findings on.
    resolvable: int
    recorded: RecordResult
    #: The billing read when this run decided billing (the billing hour), summarised (:meth:`BillingRead.as_dict`).
    billing: dict[str, object] | None = None
    #: The audited window's cost ledger (:meth:`AuditResult.cost_summary`): each table's DynamoDB spend next to this
    #: run's reads for it.
    cost: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready summary (the ledger's total and its 10 costliest tables: a log line stays small)."""
        return {
            "window_start": self.window_start,
            "window_end": self.window_end,
            "tables": self.tables,
            "tables_missing": list(self.tables_missing),
            "findings": self.findings,
            "related_updated": self.related_updated,
            "gaps": self.gaps,
            "detector_errors": list(self.detector_errors),
            "api_calls": self.api_calls,
            "metrics_requested": self.metrics_requested,
            "estimated_cost_usd": round(self.estimated_cost_usd, 6),
            "resolvable": self.resolvable,
            "billing_run": self.billing is not None,
            "billing": self.billing,
            "cost": _ledger_head(self.cost),
            **self.recorded.as_dict(),
        }


def _ledger_head(cost: dict[str, Any] | None, n: int = 10) -> dict[str, Any] | None:
    """The ledger with its ``n`` costliest tables (and, across pairs, ``n`` costliest pairs) and their counts."""
    if cost is None:
        return None
    tables = sorted(cost["tables"], key=lambda r: -r["dynamodb_usd"])
    head = {**cost, "tables": tables[:n], "tables_count": len(tables)}
    if "targets" in cost:
        pairs = sorted(cost["targets"], key=lambda r: -r["dynamodb_usd"])
        head |= {"targets": pairs[:n], "targets_count": len(pairs)}
    return head


def _failed(errors: Sequence[str], table: str, detector: str | None = None) -> bool:
    """Whether ``detector`` (any detector when None) failed on ``table``.

    ``run_audit`` reports a failure as ``"{detector} on {table}: {error}"``.
    """
    if detector is not None:
        return any(e.startswith(f"{detector} on {table}: ") for e in errors)
    return any(f" on {table}: " in e for e in errors)


def audit_scope(result: AuditResult) -> ResolveScope:
    """What an audit run may resolve: see the module docstring. The horizon is the end of the audited window (of the
    billing read, for billing findings)."""
    horizon = datetime.fromtimestamp(result.end, UTC)
    ci_tables = {r.table for r in result.insight_reports}
    ci_failed = {g.table for g in result.gaps if g.facet == "contributor_insights"}
    ci_detector_failed = _failed(result.errors, "*", _CI_DETECTOR)
    horizons: dict[tuple[str, TableKey], datetime] = {}
    for profile in result.inventory.tables:
        key: TableKey = (profile.account, profile.region, profile.name)
        tm = result.metrics.tables.get(profile.name)
        complete = tm is not None and not any(res.unavailable for res in tm.resources.values())
        # A detector that failed proves no absence (billing has its own scope: it reads and decides on its own).
        table_errors = [e for e in result.errors if f" on {profile.name}: " in e]
        billing_failed = _failed(table_errors, profile.name, _BILLING_DETECTOR)
        if complete and len(table_errors) == int(billing_failed):
            horizons[(SOURCE_CLOUDWATCH, key)] = horizon
        billing = result.billing
        if billing is not None and profile.name in billing.read_complete and not billing_failed:
            horizons[(SOURCE_CLOUDWATCH_BILLING, key)] = datetime.fromtimestamp(billing.end, UTC)
        activity = result.activity
        if (
            activity is not None
            and profile.name in activity.read_complete
            and not _failed(table_errors, profile.name, "idle_table")
            and not _failed(table_errors, profile.name, "ttl_not_expiring")
        ):
            horizons[(SOURCE_CLOUDWATCH_ACTIVITY, key)] = datetime.fromtimestamp(activity.end, UTC)
        if profile.name in ci_tables and profile.name not in ci_failed and not ci_detector_failed:
            horizons[(SOURCE_CONTRIBUTOR_INSIGHTS, key)] = horizon
    return ResolveScope(horizons)


def correlate_with_stored(
    own: Sequence[Finding], stored: Sequence[Finding], audit: AuditConfig
) -> tuple[list[Finding], list[Finding]]:
    """Correlate the audit's findings with stored CloudTrail findings (pure).

    Returns the audit's findings (same order) and the stored findings that correlation changed. Correlating again is
    a no-op (:mod:`auditor.detectors.findings.correlate`), so the audit's own pairs are not raised twice.
    """
    if not stored:
        return list(own), []
    ids = {f.id for f in own}
    combined = correlate.correlate([*own, *stored], audit.detector_config("correlate"))
    # CloudWatch's scan volume goes onto the stored CloudTrail scan findings that name the scanners (and is not a
    # finding of its own there).
    combined = scan_volume.attach_scan_volume(combined)
    before = {f.id: f for f in stored}
    mine = [f for f in combined if f.id in ids]
    updated = [f for f in combined if f.id in before and f.id not in ids and f != before[f.id]]
    return mine, updated


#: The ledger books each run's period: the last hour of its window (runs are hourly; a retry books the same hour).
LEDGER_PERIOD_SECONDS = 3600


def run_metrics_audit(
    clients: AuditClients,
    findings_store: FindingsStore,
    sns: SNSClient,
    params: MetricsAuditParams,
    now: datetime,
    *,
    time_left: Callable[[], float] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    quiet_empty: bool = False,
    ledger: HourLedger | None = None,
    item_sizes: TableItemSizes | None = None,
) -> MetricsAuditResult:
    """Audit the selected tables over the lookback before ``now``, record the findings' lifecycle and publish.
    With ``item_sizes``, each table's CloudWatch item size (consumed write units per item write) is stored for the
    evaluator (its ``cloudwatch`` item size).

    ``now`` is the schedule time: in the billing hour (:meth:`MetricsAuditParams.bills_at`) the run also decides
    billing. ``time_left`` (seconds left in the invocation) keeps the billing read from starting work it cannot
    finish.
    """
    now = utc(now)
    now_s = int(now.timestamp())
    end = now_s - now_s % 60
    billing = params.bills_at(now)
    audit = run_audit(
        clients,
        params.selector,
        start=end - params.lookback_seconds,
        end=end,
        now=now_s,
        config=params.audit,
        billing_days=params.billing_lookback_days if billing else 0,
        # The daily activity read (idle tables, TTL) runs once a day too, with the billing decision.
        activity_days=params.audit.detector_config("idle_table").idle_days if billing else 0,
        time_left=time_left,
        sleep=sleep,
    )
    inventory = audit.inventory
    if not inventory.tables:
        blocking = [g for g in inventory.gaps if g.facet == "tables"]
        if blocking:
            raise AuditError(f"nothing could be audited: {blocking[0].describe()}: {blocking[0].message}")
        # one account/Region pair of many may well have no tables; a single-account audit without any is suspicious
        (log.info if quiet_empty else log.warning)(
            "metrics_audit_no_tables", selector=params.selector.describe(), missing=list(inventory.missing)
        )
    open_findings = OpenFindings(findings_store)
    related = [
        state.finding
        for profile in inventory.tables
        for state in open_findings.of((profile.account, profile.region, profile.name))
        if state.finding.kind in (FindingKind.HOT_KEY, FindingKind.SCAN)
        and finding_source(state.finding) == SOURCE_CLOUDTRAIL
    ]
    findings, updated = correlate_with_stored(audit.findings, related, params.audit)
    scope = audit_scope(audit)
    recorded = params.lifecycle.record(
        findings_store, sns, [*findings, *updated], now=now, scope=scope, open_findings=open_findings
    )
    result = MetricsAuditResult(
        window_start=audit.start,
        window_end=audit.end,
        tables=len(inventory.tables),
        tables_missing=list(inventory.missing),
        findings=len(findings),
        related_updated=len(updated),
        gaps=len(audit.gaps),
        detector_errors=list(audit.errors),
        api_calls=sum(audit.stats.calls.values()),
        metrics_requested=audit.stats.metrics_requested,
        estimated_cost_usd=audit.stats.estimated_cost_usd,
        resolvable=len(scope.horizons),
        recorded=recorded,
        billing=audit.billing.as_dict(per_table=False) if audit.billing is not None else None,
        cost=audit.cost_summary(),
    )
    if ledger is not None:  # the daily ledger: this run's hour of DynamoDB spend and its own reads, per table
        period = min(LEDGER_PERIOD_SECONDS, audit.end - audit.start)
        for entry in audit_entries(audit, last_seconds=period):
            ledger.put_hour(entry, audit.end - period)
    if item_sizes is not None:
        store_cloudwatch_item_sizes(audit, item_sizes, now)
    log.info("metrics_audit_finished", **result.as_dict())
    return result


def store_cloudwatch_item_sizes(audit: AuditResult, item_sizes: TableItemSizes, now: datetime) -> None:
    """Each audited table's CloudWatch item size, for the evaluator (a failure is logged: a hint, not a finding)."""
    from auditor.whatif.capacity import cloudwatch_item_size

    for profile in audit.inventory.tables:
        tm = audit.metrics.tables.get(profile.name)
        size = cloudwatch_item_size(tm) if tm is not None else None
        if size is None:
            continue
        try:
            item_sizes.put_cloudwatch((profile.account, profile.region, profile.name), size, now)
        except (ClientError, BotoCoreError) as exc:
            log.warning("cloudwatch_item_size_not_stored", table=profile.name, error=type(exc).__name__)


# ------------------------------------------------------------------------------------- across accounts and Regions

#: A run starts no new account/Region pair with less time than this left in the invocation (seconds).
TARGET_TIME_RESERVE_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class OrgScope:
    """Which accounts and Regions the scheduled audit covers (``AUDIT_ACCOUNTS`` / ``AUDIT_ORGANIZATION`` /
    ``AUDIT_REGIONS`` / ``MEMBER_ROLE_NAME`` / ``AUDIT_CONCURRENCY``). Empty: the function's own account and
    Region only (:func:`run_metrics_audit`)."""

    accounts: tuple[str, ...] = ()
    organization: bool = False
    regions: tuple[str, ...] = ()
    role_name: str | None = None
    concurrency: int = 8

    @property
    def enabled(self) -> bool:
        return bool(self.accounts or self.organization or self.regions)

    @classmethod
    def from_settings(cls, settings: Settings) -> OrgScope:
        from auditor.exceptions import ConfigurationError
        from auditor.sources.org import parse_accounts

        accounts = tuple(parse_accounts(settings.audit_accounts)) if settings.audit_accounts else ()
        if (accounts or settings.audit_organization) and not settings.member_role_name:
            raise ConfigurationError("AUDIT_ACCOUNTS / AUDIT_ORGANIZATION need MEMBER_ROLE_NAME")
        regions = tuple(sorted({r.strip() for r in (settings.audit_regions or "").split(",") if r.strip()}))
        return cls(
            accounts, settings.audit_organization, regions, settings.member_role_name, settings.audit_concurrency
        )

    def sessions(self, session: Any) -> SessionFactory:
        """The session factory: the member role in other accounts, ``session`` itself in its own account
        (``sts:GetCallerIdentity`` names it)."""
        from auditor.sources.org import caller_account

        return SessionFactory(session, self.role_name, own_account=caller_account(session))

    def plan(self, session: Any, own_account: str | None) -> tuple[list[str], list[str]]:
        """The accounts and Regions of a new cycle: the Organization's accounts are listed now
        (``organizations:ListAccounts``); no account named means the function's own; no Region its own."""
        from auditor.sources.org import session_organization_accounts

        accounts = [*self.accounts] or ([own_account] if own_account else [])
        if self.organization:
            accounts = [*session_organization_accounts(session)]
        regions = [*self.regions] or [session.region_name]
        return accounts, regions

    def run(
        self,
        session: Any,
        findings_store: FindingsStore,
        cycles: AuditCycleStore,
        sns: SNSClient,
        params: MetricsAuditParams,
        now: datetime,
        *,
        time_left: Callable[[], float] | None = None,
        ledger: HourLedger | None = None,
        item_sizes: TableItemSizes | None = None,
    ) -> OrgMetricsAuditResult:
        """One scheduled invocation over this scope (:func:`run_org_metrics_audit` with the cycle cursor)."""
        factory = self.sessions(session)
        return run_org_metrics_audit(
            factory,
            lambda: self.plan(session, factory.own_account),
            findings_store,
            sns,
            params,
            now,
            cycles=cycles,
            concurrency=self.concurrency,
            time_left=time_left,
            ledger=ledger,
            item_sizes=item_sizes,
        )


@dataclass(slots=True)
class OrgMetricsAuditResult:
    """One scheduled invocation over many accounts and Regions."""

    runs: list[tuple[Target, MetricsAuditResult]]
    gaps: list[CoverageGap]
    assume_role_calls: int
    #: The one outbox drain after every pair was recorded (None when publishing is off).
    publish: PublishResult | None = None
    #: The cycle this invocation worked on (see :mod:`auditor.state.audit_cycle`).
    cycle: AuditCycle | None = None
    #: Whether it continued a cycle an earlier invocation began.
    resumed: bool = False
    #: Index of the cycle's first pair this invocation took, and of the first pair it left for the next one.
    first: int = 0
    next: int = 0
    #: State-table writes for the cursor and the coverage gaps.
    state_writes: int = 0

    def as_dict(self) -> dict[str, object]:
        """The runs' counts summed (tables, findings, new, API calls...), the one drain's publish counts, per-pair
        counts and the combined cost ledger (pairs sorted by account and Region), the gaps and the cycle."""
        from auditor.cost.ledger import combine_ledgers

        runs = sorted(self.runs, key=lambda tr: (tr[0].account or "", tr[0].region))
        totals: dict[str, float] = {}
        billing: dict[str, float] = {}
        for _, run in runs:
            doc = run.as_dict()
            for key, value in doc.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    totals[key] = totals.get(key, 0) + value
            read = doc.get("billing")
            if isinstance(read, dict):
                billing["tables_decided"] = billing.get("tables_decided", 0) + int(read.get("tables_decided", 0))
                billing["days"] = max(billing.get("days", 0.0), float(read.get("days", 0.0)))
        publish = self.publish or PublishResult()
        cycle = self.cycle
        return {
            **totals,
            "published": publish.sent,
            "publish_failed": publish.failed,
            "digests": publish.digests,
            "api_calls": int(totals.get("api_calls", 0)) + self.assume_role_calls,
            "estimated_cost_usd": round(totals.get("estimated_cost_usd", 0.0), 6),
            "billing": billing or None,
            "targets": len(self.runs) + len(self.gaps),
            "targets_audited": len(self.runs),
            "per_target": [
                {"account": t.account, "region": t.region, "tables": r.tables, "findings": r.findings} for t, r in runs
            ],
            "coverage_gaps": [g.to_dict() for g in sorted(self.gaps, key=lambda g: (g.account or "", g.region or ""))],
            "cost": _ledger_head(combine_ledgers([(t.account, t.region, r.cost) for t, r in runs])),
            "cycle": None
            if cycle is None
            else {
                "id": cycle.id,
                "pairs": cycle.total,
                "resumed": self.resumed,
                "first": self.first,
                "next": self.next,
                "remaining": max(0, cycle.total - self.next),
                "state_writes": self.state_writes,
            },
        }


def _current_cycle(
    cycles: AuditCycleStore | None, plan: Callable[[], tuple[Sequence[str], Sequence[str]]], now: datetime
) -> tuple[AuditCycle, bool]:
    """The cycle to work on, and whether it was begun earlier: the stored one while unfinished, else a new one at
    ``now`` (a retried schedule event whose cycle is already finished finds nothing left to do)."""
    stored = cycles.load() if cycles is not None else None
    if stored is not None and (not stored.finished or stored.id == isoformat_z(now)):
        return stored, True
    accounts, regions = plan()
    cycle = AuditCycle(now, tuple(accounts), tuple(regions))
    if cycles is not None and not cycles.start(cycle, at=datetime.now(UTC)):
        # another invocation began a cycle meanwhile: continue that one
        stored = cycles.load()
        if stored is not None:
            return stored, True
    return cycle, False


def run_org_metrics_audit(
    factory: SessionFactory,
    plan: Callable[[], tuple[Sequence[str], Sequence[str]]],
    findings_store: FindingsStore,
    sns: SNSClient,
    params: MetricsAuditParams,
    now: datetime,
    *,
    cycles: AuditCycleStore | None = None,
    concurrency: int = 8,
    time_left: Callable[[], float] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    ledger: HourLedger | None = None,
    item_sizes: TableItemSizes | None = None,
) -> OrgMetricsAuditResult:
    """:func:`run_metrics_audit` in every account/Region pair (member role assumed), ``concurrency`` at a time.

    ``plan`` lists the accounts and Regions when a new cycle begins. With ``cycles`` (the state table) an invocation
    continues the stored cycle where the last one stopped, claims each pair before it starts it, starts no pair in
    the last :data:`TARGET_TIME_RESERVE_SECONDS` and leaves the rest to the next invocation: every pair of a cycle is
    audited once, all over the cycle's window (its schedule time). Without ``cycles`` every invocation is a new cycle
    and the pairs it cannot start are ``deferred`` gaps. With ``ledger`` each pair books the last hour of the
    cycle's window in the daily ledger (a cycle that takes more than an hour books one hour per pair, not all of
    them). A pair that cannot be read is a coverage gap (logged, in the result, and counted per ISO week in the
    state table). Every pair records its findings; the outbox is drained once at the end, so one invocation sends
    one digest.
    """
    from auditor.sources.audit_clients import clients_for
    from auditor.sources.org import targets

    cycle, resumed = _current_cycle(cycles, plan, utc(now))
    pairs = targets(cycle.accounts, cycle.regions)
    first = min(cycle.next, len(pairs))
    recording = replace(params, lifecycle=replace(params.lifecycle, publish_limit=0))

    def one(target: Target, session: Any) -> MetricsAuditResult:
        try:
            return run_metrics_audit(
                clients_for(session, target.region),
                findings_store,
                sns,
                recording,
                cycle.now,
                time_left=time_left,
                sleep=sleep,
                quiet_empty=True,
                ledger=ledger,
                item_sizes=item_sizes,
            )
        except AuditError as exc:  # nothing readable in that pair: its coverage gap
            raise TargetError("dynamodb:ListTables", "NothingReadable", str(exc)) from exc

    def should_start() -> bool:
        return time_left is None or time_left() > TARGET_TIME_RESERVE_SECONDS

    claim = None if cycles is None else (lambda i: cycles.claim(cycle, first + i, at=datetime.now(UTC)))
    outcomes = fan_out(pairs[first:], factory, one, max_workers=concurrency, should_start=should_start, claim=claim)
    started = [o for o in outcomes if o.gap is None or o.gap.reason != "deferred"]
    gaps = [o.gap for o in (started if cycles is not None else outcomes) if o.gap is not None]
    if cycles is not None:
        stamp = datetime.now(UTC)
        for gap in gaps:
            cycles.record_gap(
                week_of=cycle.now,
                account=gap.account,
                region=gap.region,
                reason=gap.reason,
                call=gap.call,
                error_code=gap.error_code,
                message=gap.message,
                at=stamp,
            )
    publish = None
    if params.lifecycle.publish_limit > 0:
        publish = publish_pending(
            findings_store, sns, params.lifecycle.topic_arn, params.lifecycle.publish_limit, now=utc(now)
        )
    result = OrgMetricsAuditResult(
        runs=[(o.target, o.result) for o in outcomes if o.result is not None],
        gaps=gaps,
        assume_role_calls=factory.assume_calls,
        publish=publish,
        cycle=cycle,
        resumed=resumed,
        first=first,
        next=first + len(started),
        state_writes=(cycles.writes + len(gaps)) if cycles is not None else 0,
    )
    log.info("org_metrics_audit_finished", **result.as_dict())
    return result

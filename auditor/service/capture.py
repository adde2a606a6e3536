"""The capture controller: keeps the stack's own trail's DynamoDB data-event selectors within the audit budget.

One run per slice (every 5 minutes, only when the stack creates its trail): read the controller's state and the
trail's selectors, read the tables' consumed capacity, plan the slice (:func:`auditor.cost.plan.plan_slice`), record
the plan in one conditional transaction *before* touching the trail, then put the selectors. A trail someone else
changed is left alone. The steps and the fallbacks are in docs/service.md.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from auditor.billing.pricing import bundled_prices
from auditor.cost.cost_model import DAYS_PER_MONTH, DynamoDBUsage, dynamodb_spend
from auditor.cost.plan import (
    ALWAYS_ON_NAME,
    SCAN_ROTATION_NAME,
    SLICE_NAME,
    CapturePlan,
    PlannerConfig,
    PlanState,
    TableTraffic,
    cap_findings,
    line_ratio,
    pages_per_scan,
    plan_slice,
    selectors_for,
    stack_for_budget,
    tables_to_poll,
)
from auditor.detectors.base import InsightsInput
from auditor.detectors.insights.hot_key import detect as detect_ci_hot_key
from auditor.detectors.settings import DetectorSettings
from auditor.lifecycle import TableKey
from auditor.models.finding import Finding
from auditor.service.record import SOURCE_CONTRIBUTOR_INSIGHTS, LifecycleParams, ResolveScope, apply_lifecycle
from auditor.sinks.contributor_insights import set_insights
from auditor.sinks.trail_selectors import put_selectors
from auditor.sources.capture_inputs import list_tables, read_peaks, read_selectors
from auditor.sources.insights_on_demand import describe_insights, read_table_reports
from auditor.sources.scan_requests import read_scan_pages
from auditor.state import keys
from auditor.state.capture_store import PLAN_RETENTION_DAYS, CaptureStore

if TYPE_CHECKING:
    from mypy_boto3_cloudtrail import CloudTrailClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sns import SNSClient

    from auditor.state.findings_store import FindingsStore

log = structlog.get_logger(__name__)

#: Selectors the controller manages: its own two, and the stack's initial all-tables selector it replaces.
MANAGED_NAMES = (ALWAYS_ON_NAME, SCAN_ROTATION_NAME, SLICE_NAME, "DynamoDB table data events")
PUT_ATTEMPTS = 4
__all__ = ["PLAN_RETENTION_DAYS", "CaptureClients", "ControllerResult", "advise_controller", "run_controller"]


@dataclass(slots=True)
class CaptureClients:
    cloudtrail: CloudTrailClient
    cloudwatch: CloudWatchClient
    dynamodb: DynamoDBClient  # the audited tables (ListTables, DescribeTable) and the state table
    #: Where the controller's findings (``capture_cap``, and the ``hot_key`` findings of Contributor Insights on
    #: demand) are recorded through the findings lifecycle (None: returned and logged only; recording needs the
    #: findings store's grants on the state table) ...
    findings: FindingsStore | None = None
    #: ... and, with both of these, published: the outbox is drained to the findings topic when the run queued an
    #: event (as the other sources of findings do; None: recorded only, the next source's drain publishes them).
    sns: SNSClient | None = None
    lifecycle: LifecycleParams | None = None


@dataclass(slots=True)
class ControllerResult:
    status: str  # applied | unchanged | fallback | lost_race | trail_missing | trail_changed | failed
    slice_start: int
    plan: dict[str, Any] | None = None
    detail: str = ""
    puts: int = 0
    notes: list[str] = field(default_factory=list)
    #: The ``capture_cap`` findings of the run (once a day: the tables whose scans reached the per-table cap).
    findings: list[Finding] = field(default_factory=list)
    #: Outbox entries this run published to the findings topic.
    published: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "slice_start": self.slice_start,
            "detail": self.detail,
            "puts": self.puts,
            "captured_tables": [c["table"] for c in (self.plan or {}).get("captures", [])],
            "captures": [
                {"table": c["table"], "reason": c["reason"], "seconds": c["seconds"]}
                for c in (self.plan or {}).get("captures", [])
            ],
            "notes": self.notes,
            "findings": [f.id for f in self.findings],
            "published": self.published,
        }


state_pk = keys.capture_pk
STATE_SK = keys.CAPTURE_STATE_SK
plan_sk = keys.capture_plan_sk


def _digest(selectors: list[dict[str, Any]]) -> str:
    return hashlib.sha256(orjson.dumps(selectors, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _managed(selectors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in selectors if s.get("Name") in MANAGED_NAMES]


def _others(selectors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in selectors if s.get("Name") not in MANAGED_NAMES]


def _monthly_usd(desc: dict[str, Any], rate: float) -> float:
    """The table's expected DynamoDB bill per month at ``rate`` units/s (half reads, half writes when unknown)."""
    region = str(desc.get("TableArn", "::::")).split(":")[3] or "us-east-1"
    cls = (desc.get("TableClassSummary") or {}).get("TableClass") or "STANDARD"
    mode = (desc.get("BillingModeSummary") or {}).get("BillingMode") or "PROVISIONED"
    seconds = DAYS_PER_MONTH * 86_400
    if mode == "PAY_PER_REQUEST":
        usage = DynamoDBUsage(
            days=DAYS_PER_MONTH,
            billing_mode="PAY_PER_REQUEST",
            table_class=cls,
            read_units=rate * seconds / 2,
            write_units=rate * seconds / 2,
            storage_bytes=float(desc.get("TableSizeBytes") or 0),
        )
    else:
        pt = desc.get("ProvisionedThroughput") or {}
        usage = DynamoDBUsage(
            days=DAYS_PER_MONTH,
            billing_mode="PROVISIONED",
            table_class=cls,
            rcu_hours=float(pt.get("ReadCapacityUnits") or 0) * DAYS_PER_MONTH * 24,
            wcu_hours=float(pt.get("WriteCapacityUnits") or 0) * DAYS_PER_MONTH * 24,
            storage_bytes=float(desc.get("TableSizeBytes") or 0),
        )
    return dynamodb_spend(usage, bundled_prices(region).for_class(usage.table_class)).total


def _month_elapsed(now: datetime) -> float:
    """The fraction of the calendar month (UTC) elapsed at ``now``."""
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    next_month = (month_start + timedelta(days=32)).replace(day=1)
    return (now - month_start) / (next_month - month_start)


def _pages(desc: dict[str, Any]) -> float:
    return pages_per_scan(float(desc.get("TableSizeBytes") or 0))


def run_controller(
    clients: CaptureClients,
    *,
    trail: str,
    state_table: str,
    now: datetime,
    config: PlannerConfig | None = None,
    fixed_usd_month: float | None = None,
    table_arns: frozenset[str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    detectors: DetectorSettings | None = None,
) -> ControllerResult:
    """One controller run for the slice that contains ``now`` (see the module docstring).

    ``table_arns`` limits the audited tables (the configuration document's ``service.capture_table_arns``);
    ``fixed_usd_month`` is the auditor's monthly cost outside data events, which the budget pays first (None:
    :func:`auditor.cost.cost_model.fixed_monthly_usd` for the tables listed); ``detectors`` tunes the ``ci_hot_key``
    detector of Contributor Insights on demand (the configuration document's detector tree; None: its defaults).
    """
    cfg = config or PlannerConfig()
    epoch = int(now.timestamp())
    slice_index = epoch // cfg.slice_seconds
    slice_start = slice_index * cfg.slice_seconds
    store = CaptureStore(clients.dynamodb, state_table, trail)

    version, state = store.load_state()
    current = read_selectors(clients.cloudtrail, trail)
    if current.missing:
        log.warning("capture_trail_missing", trail=trail)
        return ControllerResult(
            "trail_missing", slice_start, detail=f"{current.missing}: the trail is gone; nothing done"
        )
    selectors = current.advanced
    if current.basic:
        return ControllerResult(
            "trail_changed", slice_start, detail="the trail uses basic event selectors now: left as it is"
        )
    applied = state.get("applied")
    if applied is not None and _digest(_managed(selectors)) != applied:
        log.warning("capture_trail_changed", trail=trail)
        return ControllerResult(
            "trail_changed",
            slice_start,
            detail="the trail's DynamoDB selectors differ from what the controller last wrote: someone else changed "
            "them; left as they are (delete the controller's state item to hand the trail back)",
        )

    tables = list_tables(clients.dynamodb, state_table)
    last_ratio: dict[str, float] = dict(state.get("last_ratio", {}))
    last_read: dict[str, int] = {k: int(v) for k, v in state.get("last_read", {}).items()}
    rates: dict[str, float] = {k: float(v) for k, v in state.get("rates", {}).items()}
    names = {str(t["TableName"]) for t in tables}
    # CloudWatch publishes a minute about 2 minutes late: read up to the minute ending 2 minutes ago.
    end = (epoch // 60 - 2) * 60
    # Scan and PartiQL pages per second, read once a day (what the always-on selector costs, table by table).
    day = now.strftime("%Y-%m-%d")
    scan_rates: dict[str, float] = {k: float(v) for k, v in state.get("scan_rates", {}).items()}
    if state.get("scan_day") != day:
        scan_rates = read_scan_pages(clients.cloudwatch, sorted(names), end - 86_400, end)
    base = [
        TableTraffic(
            table=str(t["TableName"]),
            arn=str(t["TableArn"]),
            requests_per_second=rates.get(str(t["TableName"]), 0.0),
            monthly_dynamodb_usd=_monthly_usd(t, rates.get(str(t["TableName"]), 0.0)),
            rare_per_second=scan_rates.get(str(t["TableName"]), 0.0) / _pages(t),
            pages_per_scan=_pages(t),
        )
        for t in tables
        if t.get("TableStatus") in (None, "ACTIVE", "UPDATING") and (table_arns is None or t["TableArn"] in table_arns)
    ]
    stack_note: list[str] = []
    if fixed_usd_month is None:
        # the budget pays the fixed costs first: the stack as lean as the budget needs it
        busy = sum(1 for t in base if t.requests_per_second >= cfg.poll_min_rate)
        budget = sum(t.monthly_dynamodb_usd for t in base) * cfg.budget_percent / 100
        choice = stack_for_budget(budget, len(base), busy, cfg)
        cfg, fixed_usd_month, stack_note = choice.config, choice.fixed_usd_month, [choice.note]
    poll = sorted(tables_to_poll(base, last_ratio, slice_index, cfg))
    peaks: dict[str, tuple[float, float, float]] = {}
    for name in poll:
        start = max(last_read.get(name, end - 3600), end - 3600)
        peaks |= read_peaks(clients.cloudwatch, [name], start, end)
    traffic: list[TableTraffic] = []
    for tt in base:
        if tt.table in peaks:
            r, w, avg = peaks[tt.table]
            rate = avg if tt.table not in rates else 0.9 * rates[tt.table] + 0.1 * avg
            rates[tt.table] = rate
            last_read[tt.table] = end
            tt = TableTraffic(
                tt.table, tt.arn, rate, tt.monthly_dynamodb_usd, tt.rare_per_second, r, w, tt.pages_per_scan
            )
            last_ratio[tt.table] = line_ratio(tt, cfg)
        traffic.append(tt)
    month = now.strftime("%Y-%m")
    plan_state = PlanState(
        burst_spent_usd=float(state.get("burst_spent_usd", 0.0)) if state.get("month") == month else 0.0,
        month_elapsed=_month_elapsed(now),
        bursts={k: (int(v[0]), int(v[1])) for k, v in state.get("bursts", {}).items() if k in names},
        insights={k: int(v) for k, v in state.get("insights", {}).items() if k in names},
    )
    plan = plan_slice(traffic, slice_index, fixed_usd_month=fixed_usd_month, state=plan_state, config=cfg)
    # recorded before Contributor Insights is turned on, so a run that times out leaves it to the next one to end
    insights_on = _insights_owned(state, plan)
    desired = _others(selectors) + selectors_for(plan)
    after_probe = _others(selectors) + selectors_for(plan, probes=False)
    new_state = {
        "month": month,
        "burst_spent_usd": plan.state.burst_spent_usd,
        "bursts": {k: list(v) for k, v in plan.state.bursts.items()},
        "last_ratio": {k: v for k, v in last_ratio.items() if k in names},
        "last_read": {k: v for k, v in last_read.items() if k in names},
        "rates": {k: v for k, v in rates.items() if k in names},
        "scan_day": day,
        "scan_rates": {k: v for k, v in scan_rates.items() if k in names},
        "applied": applied,
        "last_good": state.get("last_good"),
        "insights": dict(plan.state.insights),
        "insights_on": insights_on,  # updated in place by _apply_insights
    }
    plan_doc = _plan_document(plan, slice_start)
    if not store.record(version, new_state, plan_doc, slice_start, now):
        return ControllerResult("lost_race", slice_start, detail="another run recorded this slice first")

    result = ControllerResult("applied", slice_start, plan=plan_doc, notes=[*stack_note, *plan.notes])
    if state.get("scan_day") != day:  # once a day, with the day's scan reading: the tables at the cap
        result.findings = _record_caps(clients, plan, [t.arn for t in base], end, now, result)
    result.findings += _apply_insights(clients, insights_on, plan, tables, (end, now), result, detectors)
    final: list[dict[str, Any]] | None = after_probe
    if _digest(_managed(desired)) == _digest(_managed(selectors)) and plan.probe_seconds is None:
        result.status = "unchanged"
    else:
        ok, detail = _put(clients.cloudtrail, trail, desired, result, sleep)
        if ok and plan.probe_seconds is not None:
            sleep(float(plan.probe_seconds))
            ok, detail = _put(clients.cloudtrail, trail, after_probe, result, sleep)
        if not ok:
            result.status, result.detail = "fallback", detail
            final = _fallback(clients.cloudtrail, trail, selectors, state.get("last_good"), result, sleep)
    new_state["applied"] = _digest(_managed(final)) if final is not None else applied
    if final is not None and result.status in ("applied", "unchanged"):
        new_state["last_good"] = _managed(final)
    if final is None:
        result.status = "failed"
    store.record(version + 1, new_state, None, slice_start, now)
    log.info("capture_plan", **result.as_dict())
    return result


def advise_controller(
    clients: CaptureClients,
    *,
    trail: str | None,
    state_table: str,
    now: datetime,
    config: PlannerConfig | None = None,
    table_arns: frozenset[str] | None = None,
) -> ControllerResult:
    """With a trail the stack does not own: the selectors the controller would set, and one command to apply them.

    Once a day (the first slice of the UTC day; other runs return ``idle``): each table's average rate and its scan
    and PartiQL pages over the last day, then the plan's static part: the always-on selector (with its per-table
    caps) and the tables the budget pays to capture continuously. Rotation and burst probes need the controller to
    own the trail. Nothing is written to the trail; the advice is logged (``capture_advice``) and returned.
    """
    cfg = config or PlannerConfig()
    epoch = int(now.timestamp())
    slice_index = epoch // cfg.slice_seconds
    slice_start = slice_index * cfg.slice_seconds
    if slice_index % (86_400 // cfg.slice_seconds) != 0:
        return ControllerResult("idle", slice_start, detail="advice is computed once a day")
    end = (epoch // 60 - 2) * 60
    tables = [
        t
        for t in list_tables(clients.dynamodb, state_table)
        if t.get("TableStatus") in (None, "ACTIVE", "UPDATING") and (table_arns is None or t["TableArn"] in table_arns)
    ]
    names = sorted(str(t["TableName"]) for t in tables)
    peaks = read_peaks(clients.cloudwatch, names, end - 86_400, end)
    scans = read_scan_pages(clients.cloudwatch, names, end - 86_400, end)
    traffic = []
    for t in tables:
        name = str(t["TableName"])
        rate = peaks.get(name, (0.0, 0.0, 0.0))[2]
        traffic.append(
            TableTraffic(
                name,
                str(t["TableArn"]),
                rate,
                _monthly_usd(t, rate),
                scans.get(name, 0.0) / _pages(t),
                pages_per_scan=_pages(t),
            )
        )
    busy = sum(1 for t in traffic if t.requests_per_second >= cfg.poll_min_rate)
    choice = stack_for_budget(
        sum(t.monthly_dynamodb_usd for t in traffic) * cfg.budget_percent / 100, len(traffic), busy, cfg
    )
    plan = plan_slice(traffic, slice_index, fixed_usd_month=choice.fixed_usd_month, config=choice.config)
    static = CapturePlan(
        plan.slice_index,
        plan.slice_seconds,
        tuple(c for c in plan.captures if c.reason == "continuous"),
        plan.budget_usd_month,
        plan.fixed_usd_month,
        plan.always_on_usd_month,
        plan.sampling_usd_month,
        0.0,
        plan.state,
        scan_capped=plan.scan_capped,
    )
    selectors = selectors_for(static)
    result = ControllerResult("advised", slice_start, plan=_plan_document(static, slice_start))
    findings = _record_caps(clients, plan, [t.arn for t in traffic], end, now, result)
    command = (
        f"aws cloudtrail put-event-selectors --trail-name {trail or 'YOUR-TRAIL'} --advanced-event-selectors "
        f"'{orjson.dumps(selectors).decode()}'"
    )
    notes = [
        choice.note,
        *plan.notes,
        "put-event-selectors replaces the trail's selectors: add the trail's other selectors (management events, "
        "other services) to the list before running the command",
    ]
    log.warning("capture_advice", trail=trail, selectors=selectors, command=command, notes=notes)
    result.detail, result.notes, result.findings = command, notes, findings
    return result


def _record_caps(
    clients: CaptureClients, plan: CapturePlan, arns: list[str], end: int, now: datetime, result: ControllerResult
) -> list[Finding]:
    """The plan's ``capture_cap`` findings over the day read (:func:`auditor.cost.plan.cap_findings`), a warning
    each in the log; recorded (and published) by :func:`_record` (a table no longer capped resolves after a day)."""
    findings = cap_findings(plan, end - 86_400, end)
    for f in findings:
        log.warning("capture_scan_cap_reached", table=f.table, finding=f.id, summary=f.summary)
    keys = {(a.split(":")[4] or None, a.split(":")[3] or None, a.split("/", 1)[-1]) for a in arns if a.count(":") >= 5}
    _record(clients, findings, ResolveScope.tables(dict.fromkeys(keys, now), ["capture_plan"]), now, result)
    return findings


def _record(
    clients: CaptureClients, findings: list[Finding], scope: ResolveScope, now: datetime, result: ControllerResult
) -> None:
    """Record the findings through the findings lifecycle (with a findings store); with the topic too, drain the
    outbox when this run queued an event, as the metrics audit does (:meth:`LifecycleParams.record`)."""
    if clients.findings is None:
        return
    if clients.sns is None or clients.lifecycle is None:
        apply_lifecycle(clients.findings, findings, now=now, scope=scope)
        return
    recorded = clients.lifecycle.record(
        clients.findings, clients.sns, findings, now=now, scope=scope, publish_when_idle=False
    )
    result.published += recorded.published


def _insights_owned(state: dict[str, Any], plan: CapturePlan) -> dict[str, list[int]]:
    """The tables whose Contributor Insights the controller turned on, each as [first slice, first slice after its
    window], with the plan's new windows and renewals (:attr:`CapturePlan.insights`) added."""
    owned = {str(k): [int(v[0]), int(v[1])] for k, v in state.get("insights_on", {}).items()}
    for table in plan.insights:
        until = plan.state.insights[table]
        first, last = owned.get(table, [plan.slice_index, until])
        owned[table] = [first, max(last, until)]
    return owned


def _apply_insights(
    clients: CaptureClients,
    owned: dict[str, list[int]],
    plan: CapturePlan,
    tables: list[dict[str, Any]],
    read_to: tuple[int, datetime],
    result: ControllerResult,
    detectors: DetectorSettings | None,
) -> list[Finding]:
    """Contributor Insights on demand (``PlannerConfig.insights_slices``); ``owned`` (:func:`_insights_owned`, in the
    controller's state) is updated in place.

    Each table whose window is over (or past it: a run that timed out) has its rules' report read over the window
    first, turned into ``hot_key`` findings (the ``ci_hot_key`` detector) and recorded, then Contributor Insights
    disabled (which deletes the rules). Each window this plan starts enables accessed-keys Contributor Insights,
    unless the table has it on already: someone else's, left as it is and never disabled by the controller.
    """
    end, now = read_to
    described = {str(t["TableName"]): t for t in tables}
    tuning = detectors or DetectorSettings()
    findings: list[Finding] = []
    horizons: dict[TableKey, datetime] = {}
    for table in sorted(t for t, (_, last) in owned.items() if last <= plan.slice_index):
        ci = describe_insights(clients.dynamodb, table)
        if ci.enabled and table in described:
            first = owned[table][0] * plan.slice_seconds
            profile, reports, gaps = read_table_reports(clients.cloudwatch, described[table], ci, first, end)
            ci_config = tuning.detector_config("ci_hot_key", table)
            findings += detect_ci_hot_key(InsightsInput(reports, {table: profile}), ci_config)
            if not gaps:
                horizons[(profile.account, profile.region, table)] = datetime.fromtimestamp(end, UTC)
        gone = ci.status in ("DISABLED", "DISABLING", "ResourceNotFoundException")
        update = None if gone else set_insights(clients.dynamodb, table, enable=False)
        if update is None or update.ok:
            del owned[table]
        else:
            result.notes.append(f"{table}: Contributor Insights not disabled ({update.detail}): the next run retries")
    for table in plan.insights:
        if owned.get(table, [None])[0] != plan.slice_index:
            continue  # on already (a renewed window), or not the controller's
        ci = describe_insights(clients.dynamodb, table)
        update = None if ci.status in ("ENABLED", "ENABLING") else set_insights(clients.dynamodb, table, enable=True)
        if update is None or not update.ok:
            del owned[table]
            why = "enabled by someone else: left as it is" if update is None else f"not enabled ({update.detail})"
            result.notes.append(f"{table}: Contributor Insights {why}")
    for f in findings:
        log.warning("capture_insights_hot_key", table=f.table, finding=f.id, summary=f.summary)
    if findings or horizons:
        _record(clients, findings, ResolveScope.tables(horizons, [SOURCE_CONTRIBUTOR_INSIGHTS]), now, result)
    return findings


def _plan_document(plan: CapturePlan, slice_start: int) -> dict[str, Any]:
    doc = plan.to_dict()
    for c in doc["captures"]:
        seconds = c["seconds"] or plan.slice_seconds
        c["window_start"] = slice_start
        c["window_end"] = slice_start + seconds
    return doc


def _put(
    ct: CloudTrailClient,
    trail: str,
    selectors: list[dict[str, Any]],
    result: ControllerResult,
    sleep: Callable[[float], None],
) -> tuple[bool, str]:
    """Put the selectors, retrying throttling with exponential backoff; (succeeded, error detail)."""
    detail = ""
    for attempt in range(PUT_ATTEMPTS):
        result.puts += 1
        outcome = put_selectors(ct, trail, selectors)
        if outcome.ok:
            return True, ""
        detail = outcome.detail
        if not outcome.throttled:
            return False, detail
        sleep(min(8.0, 1.0 * math.pow(2, attempt)))
    return False, detail


def _fallback(
    ct: CloudTrailClient,
    trail: str,
    selectors: list[dict[str, Any]],
    last_good: list[dict[str, Any]] | None,
    result: ControllerResult,
    sleep: Callable[[float], None],
) -> list[dict[str, Any]] | None:
    """Put the last good configuration, else the always-on selector alone; what the trail has now (None: unknown)."""
    others = _others(selectors)
    always_on = selectors_for(CapturePlan(0, 300, (), 0.0, 0.0, 0.0, 0.0, 0.0, PlanState()))
    for candidate in ([*others, *last_good] if last_good else None, [*others, *always_on]):
        if candidate is None:
            continue
        ok, _ = _put(ct, trail, candidate, result, sleep)
        if ok:
            return candidate
    return None

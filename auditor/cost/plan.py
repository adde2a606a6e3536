"""The capture planner: which tables the trail logs in full in the next time slice, within the audit budget.

Pure (no boto3, no clock): the capture controller and ``python -m benchmarks.cost`` call the same
:func:`plan_slice`. A plan keeps scans and PartiQL always on, captures tables near a partition's limit in full
(burst watch), and shares the rest of the budget by rotation; :func:`selectors_for` turns it into the trail's
advanced event selectors. The rules are in docs/cost.md.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from auditor.cost.cost_model import StackShape, fixed_monthly_usd
from auditor.detectors.capture.capture_cap import CaptureCapInput, ScanCap
from auditor.detectors.capture.capture_cap import detect as detect_capture_cap
from auditor.models.base import FrozenModel
from auditor.models.finding import Finding

DATA_EVENT_USD = 0.10 / 100_000
SECONDS_PER_MONTH = 730 * 3600
HALF_PARTITION_READ = 1500.0
HALF_PARTITION_WRITE = 500.0
#: What one partition serves per second (read units, write units).
PARTITION_READ = 3000.0
PARTITION_WRITE = 1000.0
#: Contributor Insights for DynamoDB (https://aws.amazon.com/cloudwatch/pricing/): $0.03 per million events (each item
#: read or written in accessed-keys mode), $0.50 per rule-month (costed here by the hour, an hour at least).
CI_EVENT_USD = 0.03 / 1e6
CI_RULE_USD_MONTH = 0.50
#: The operations logged on every table whatever the plan (scans and PartiQL).
ALWAYS_ON_EVENTS: tuple[str, ...] = ("Scan", "ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction")
ALWAYS_ON_NAME = "ddb-audit: scans and PartiQL (always on)"
SCAN_ROTATION_NAME = "ddb-audit: scans and PartiQL of capped tables this slice"
SLICE_NAME = "ddb-audit: full capture this slice"
#: A Scan or SELECT returns at most 1 MB a page, and each page is one data event.
PAGE_BYTES = 2**20
#: CloudTrail allows 500 values across all conditions of a trail's advanced event selectors.
MAX_SELECTOR_VALUES = 500

Reason = Literal["continuous", "rotation", "burst"]


class PlannerConfig(FrozenModel):
    budget_percent: float = Field(default=1.0, ge=0, le=100)
    slice_seconds: int = Field(default=300, ge=60, le=3600)
    burst_reserve: float = Field(default=0.5, ge=0, le=1)
    #: Share of the burst reserve usable from the first day of the month (the rest accrues with the month).
    reserve_up_front: float = Field(default=0.5, ge=0, le=1)
    burst_slices: int = Field(default=1, ge=1, le=12)
    #: A burst capture is a probe this long at the start of the slice (the controller puts the selectors, waits,
    #: and puts them back without the probe): a key above half a partition's limit makes hundreds of requests a
    #: second, so a minute is plenty for the hot-key detector, at a fifth of a 5-minute slice's cost.
    probe_seconds: int = Field(default=60, ge=1, le=3600)
    #: Slices after an episode's last burst capture before the same table can be burst-captured again.
    burst_cooldown_slices: int = Field(default=288, ge=0)
    half_partition_read: float = HALF_PARTITION_READ
    half_partition_write: float = HALF_PARTITION_WRITE
    data_event_usd: float = DATA_EVENT_USD
    #: A table is watched (its CloudWatch minute read every slice, not only hourly) while its last reading was at
    #: least this fraction of the half-partition line.
    watch_fraction: float = Field(default=0.25, gt=0, le=1)
    poll_every_slices: int = Field(default=3, ge=1)
    poll_min_rate: float = Field(default=1.0, ge=0)
    #: Headroom on selector values, for the trail's other selectors (management events, other services).
    max_values: int = Field(default=MAX_SELECTOR_VALUES - 20, ge=10, le=MAX_SELECTOR_VALUES)
    #: One table's scans and PartiQL may use at most this share of what the budget leaves for data events; above it,
    #: they are logged one slice in N (a note says so).
    scan_cap_share: float = Field(default=0.25, gt=0, le=1)
    #: Poll the busy tables every ``poll_every_slices`` slices (False: hourly and the watched tables only).
    poll_busy: bool = True
    #: Contributor Insights on demand: a table whose latest reading reaches ``insights_line`` of one partition's limit
    #: (the hot-key detector's floor) gets Contributor Insights in accessed-keys mode for ``insights_slices`` slices
    #: (renewed while it stays there; 0: never), paid from the burst reserve. An item access costs 33 times less
    #: there than as a data event, and the ``ci_hot_key`` detector names the key.
    insights_slices: int = Field(default=0, ge=0, le=288)
    insights_line: float = Field(default=0.25, gt=0, le=1)
    ci_event_usd: float = CI_EVENT_USD
    ci_rule_usd_month: float = CI_RULE_USD_MONTH
    #: The stack runs leaner until its fixed costs leave this share of the budget (:func:`stack_for_budget`).
    stack_keep_share: float = Field(default=0.5, ge=0, lt=1)


@dataclass(frozen=True, slots=True)
class TableTraffic:
    """What the planner knows about one audited table."""

    table: str
    arn: str
    #: Average requests per second over the last day (what a captured second costs in data events).
    requests_per_second: float
    #: Expected DynamoDB bill of the table per month (USD): its share of the budget.
    monthly_dynamodb_usd: float
    #: Scans and PartiQL calls per second (the always-on selector's share of the cost).
    rare_per_second: float = 0.0
    #: The latest CloudWatch minute's consumed units per second (None: not read this run).
    recent_read_units: float | None = None
    recent_write_units: float | None = None
    #: Expected pages (data events) per Scan or PartiQL statement: the table's size over 1 MB (:func:`pages_per_scan`).
    pages_per_scan: float = 1.0
    #: Contributor Insights rules of the table in accessed-keys mode (2; 4 with a sort key).
    ci_rules: int = 2


@dataclass(frozen=True, slots=True)
class PlanState:
    """What the previous plans leave for the next one (kept in the state table with the plan)."""

    #: Data-event spend of burst captures so far this month (USD), and the fraction of the month elapsed.
    burst_spent_usd: float = 0.0
    month_elapsed: float = 0.0
    #: Per table: (slice index of the episode's first burst capture, burst slices captured in it).
    bursts: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Per table: the first slice without Contributor Insights (on demand) after its current window.
    insights: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TableCapture:
    table: str
    arn: str
    reason: Reason
    #: Expected fraction of the table's traffic captured over time under this rule (1.0 for continuous).
    fraction: float
    every: int = 1
    #: Seconds captured from the slice's start (None: the whole slice). Burst probes are shorter.
    seconds: int | None = None


@dataclass(frozen=True, slots=True)
class CapturePlan:
    """One slice's capture: the tables logged in full, why, and the budget figures behind it."""

    slice_index: int
    slice_seconds: int
    captures: tuple[TableCapture, ...]
    budget_usd_month: float
    fixed_usd_month: float
    always_on_usd_month: float
    sampling_usd_month: float
    burst_usd: float
    state: PlanState
    notes: tuple[str, ...] = ()
    #: Tables whose scans and PartiQL reached the per-table cap (left out of the always-on selector), as ARNs ...
    scan_capped: tuple[str, ...] = ()
    #: ... and those of them whose scans and PartiQL this slice logs.
    scan_slice: tuple[str, ...] = ()
    #: The capped tables' figures (what :func:`cap_findings` reports).
    scan_caps: tuple[ScanCap, ...] = ()
    #: Tables with Contributor Insights on demand during this slice, and what this plan added to it (USD).
    insights: tuple[str, ...] = ()
    insights_usd: float = 0.0

    @property
    def probe_seconds(self) -> int | None:
        """How long the burst probes of this slice last (None: no probe)."""
        return max((c.seconds for c in self.captures if c.seconds is not None), default=None)

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(c.table for c in self.captures)

    def fraction_of(self, table: str) -> float:
        """The fraction of ``table``'s traffic that this slice captures (1.0 or 0.0)."""
        return 1.0 if table in self.tables else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "slice_index": self.slice_index,
            "slice_start": self.slice_index * self.slice_seconds,
            "slice_seconds": self.slice_seconds,
            "captures": [
                {
                    "table": c.table,
                    "reason": c.reason,
                    "fraction": round(c.fraction, 6),
                    "every": c.every,
                    "seconds": c.seconds,
                }
                for c in self.captures
            ],
            "budget_usd_month": round(self.budget_usd_month, 6),
            "fixed_usd_month": round(self.fixed_usd_month, 6),
            "always_on_usd_month": round(self.always_on_usd_month, 6),
            "sampling_usd_month": round(self.sampling_usd_month, 6),
            "burst_usd": round(self.burst_usd, 6),
            "notes": list(self.notes),
            "scan_capped": list(self.scan_capped),
            "scan_slice": list(self.scan_slice),
            "insights": list(self.insights),
            "insights_usd": round(self.insights_usd, 6),
        }


def _offset(table: str, every: int) -> int:
    """A stable slot in ``0..every-1`` for ``table`` (spreads busy tables over different slices)."""
    return int.from_bytes(hashlib.sha256(table.encode()).digest()[:8], "big") % every


def rotation(
    tables: Sequence[TableTraffic], sampling_usd_month: float, config: PlannerConfig
) -> dict[str, tuple[float, int]]:
    """Per table: (fraction of its traffic captured over time, capture one slice in every N)."""
    total_cost = sum(max(t.monthly_dynamodb_usd, 0.0) for t in tables)
    out: dict[str, tuple[float, int]] = {}
    if sampling_usd_month <= 0 or total_cost <= 0:
        return out
    for t in tables:
        share = sampling_usd_month * max(t.monthly_dynamodb_usd, 0.0) / total_cost
        # A table seen running above its average (a burst on a quiet table) is costed at what it runs now.
        rate = max(t.requests_per_second, (t.recent_read_units or 0.0) + (t.recent_write_units or 0.0))
        full_cost = rate * SECONDS_PER_MONTH * config.data_event_usd
        if full_cost <= share:
            out[t.table] = (1.0, 1)
            continue
        fraction = share / full_cost
        every = math.ceil(1 / fraction) if fraction > 0 else 0
        if every <= 0 or every > 100_000:
            continue
        out[t.table] = (1 / every, every)
    return out


def plan_slice(
    tables: Sequence[TableTraffic],
    slice_index: int,
    *,
    fixed_usd_month: float,
    state: PlanState | None = None,
    config: PlannerConfig | None = None,
) -> CapturePlan:
    """Decide which tables the trail captures in full during slice ``slice_index`` (see the module docstring)."""
    cfg = config or PlannerConfig()
    st = state or PlanState()
    dynamodb = sum(max(t.monthly_dynamodb_usd, 0.0) for t in tables)
    budget = dynamodb * cfg.budget_percent / 100
    notes: list[str] = []
    caps: list[ScanCap] = []
    always_on, capped = scan_budget(tables, budget - fixed_usd_month, cfg, notes, caps)
    sampling = max(0.0, budget - fixed_usd_month - always_on)
    if budget <= 0:
        notes.append("budget 0: always-on selector only")
    elif sampling <= 0:
        notes.append("the fixed costs and the always-on selector use the whole budget: no sampling")
    rot = rotation(tables, sampling * (1 - cfg.burst_reserve), cfg)
    reserve = sampling * cfg.burst_reserve
    # The reserve accrues through the month (a quarter of it up front), so early bursts cannot drain it.
    allowed = reserve * min(1.0, st.month_elapsed + cfg.reserve_up_front)
    captures: dict[str, TableCapture] = {}
    bursts = dict(st.bursts)
    burst_usd = 0.0
    spent = st.burst_spent_usd
    hot = sorted(
        (t for t in tables if _above_line(t, cfg)),
        key=lambda t: (
            -max(
                (t.recent_read_units or 0) / cfg.half_partition_read,
                (t.recent_write_units or 0) / cfg.half_partition_write,
            )
        ),
    )
    insights, insights_usd, spent = _insights(tables, slice_index, st, cfg, notes, spent, allowed, reserve)
    for t in hot:
        if insights.get(t.table, slice_index) > slice_index:
            continue  # Contributor Insights names its key, for less than a probe
        first, taken = bursts.get(t.table, (-(10**9), 0))
        in_episode = slice_index - first < taken + cfg.burst_cooldown_slices
        if in_episode and taken >= cfg.burst_slices:
            continue
        probe = min(cfg.probe_seconds, cfg.slice_seconds)
        cost = _recent_rate(t) * probe * cfg.data_event_usd
        if reserve <= 0 or spent + cost > allowed:
            notes.append(f"{t.table}: above half a partition's limit but the burst reserve is spent")
            continue
        spent += cost
        burst_usd += cost
        bursts[t.table] = (first, taken + 1) if in_episode else (slice_index, 1)
        captures[t.table] = TableCapture(t.table, t.arn, "burst", 1.0, seconds=probe)
    for t in tables:
        if t.table in captures or t.table not in rot:
            continue
        fraction, every = rot[t.table]
        if every == 1:
            captures[t.table] = TableCapture(t.table, t.arn, "continuous", 1.0, 1)
        elif slice_index % every == _offset(t.table, every):
            captures[t.table] = TableCapture(t.table, t.arn, "rotation", fraction, every)
    chosen = sorted(captures.values(), key=lambda c: ({"burst": 0, "continuous": 1, "rotation": 2}[c.reason], c.table))
    room = cfg.max_values - _always_on_values() - (2 * len(capped) + 6 if capped else 0)
    if len(chosen) > room:
        notes.append(f"{len(chosen) - room} captures dropped: CloudTrail allows {MAX_SELECTOR_VALUES} selector values")
        chosen = chosen[:room]
    in_full = {c.arn for c in chosen if c.seconds is None}
    scan_slice = sorted(
        t.arn
        for t in tables
        if t.table in capped
        and t.arn not in in_full
        and slice_index % capped[t.table] == _offset(t.table, capped[t.table])
    )
    return CapturePlan(
        slice_index=slice_index,
        slice_seconds=cfg.slice_seconds,
        captures=tuple(chosen),
        budget_usd_month=budget,
        fixed_usd_month=fixed_usd_month,
        always_on_usd_month=always_on,
        sampling_usd_month=sampling,
        burst_usd=burst_usd,
        state=PlanState(burst_spent_usd=spent, month_elapsed=st.month_elapsed, bursts=bursts, insights=insights),
        notes=tuple(notes),
        scan_capped=tuple(sorted(t.arn for t in tables if t.table in capped)),
        scan_slice=tuple(scan_slice),
        scan_caps=tuple(caps),
        insights=tuple(sorted(k for k, until in insights.items() if until > slice_index)),
        insights_usd=insights_usd,
    )


def insights_cost(t: TableTraffic, slices: int, cfg: PlannerConfig) -> float:
    """What ``slices`` slices of Contributor Insights (accessed-keys mode) on ``t`` cost at its current rate: an
    event per item access, and its rules by the hour (an hour at least)."""
    seconds = slices * cfg.slice_seconds
    rule_hours = t.ci_rules * max(1.0, seconds / 3600)
    return _recent_rate(t) * seconds * cfg.ci_event_usd + rule_hours * cfg.ci_rule_usd_month / 730


def _insights(
    tables: Sequence[TableTraffic],
    slice_index: int,
    st: PlanState,
    cfg: PlannerConfig,
    notes: list[str],
    spent: float,
    allowed: float,
    reserve: float,
) -> tuple[dict[str, int], float, float]:
    """Contributor Insights on demand (``insights_slices``): (per table the first slice after its window, the cost
    this plan adds, the reserve spent so far). A table read at ``insights_line`` of a partition or above gets (or
    keeps) a window of ``insights_slices`` slices from this one; only the slices added are paid."""
    until = {k: v for k, v in st.insights.items() if v > slice_index}
    added_usd = 0.0
    if cfg.insights_slices <= 0:
        return until, added_usd, spent
    for t in sorted(tables, key=lambda t: -partition_ratio(t)):
        if partition_ratio(t) < cfg.insights_line:
            break
        end = slice_index + cfg.insights_slices
        added = end - max(until.get(t.table, slice_index), slice_index)
        if added <= 0:
            continue
        cost = insights_cost(t, added, cfg)
        if reserve <= 0 or spent + cost > allowed:
            notes.append(f"{t.table}: at {partition_ratio(t):.0%} of a partition but the burst reserve is spent")
            continue
        spent += cost
        added_usd += cost
        until[t.table] = end
    return until, added_usd, spent


def partition_ratio(t: TableTraffic) -> float:
    """The table's latest reading over one partition's limit (the larger of reads and writes; 0 when not read)."""
    return max((t.recent_read_units or 0.0) / PARTITION_READ, (t.recent_write_units or 0.0) / PARTITION_WRITE)


@dataclass(frozen=True, slots=True)
class StackChoice:
    """How lean the stack runs for its budget: what it holds, how the controller polls, what that costs a month."""

    shape: StackShape
    config: PlannerConfig
    fixed_usd_month: float
    note: str


def stack_for_budget(
    budget_usd_month: float,
    tables: int,
    busy: int,
    config: PlannerConfig | None = None,
    keep_share: float | None = None,
) -> StackChoice:
    """The first of three steps whose fixed costs leave ``keep_share`` (default ``stack_keep_share``) of the budget
    for data events (else the leanest): the full stack; without the health dashboard and with the 4 custom metrics
    the alarms read; and, in addition, the busy tables read hourly only (the watched ones still every slice). The
    budget pays the fixed costs first; the note says which step and what it saves."""
    cfg = config or PlannerConfig()
    keep = cfg.stack_keep_share if keep_share is None else keep_share
    full = StackShape()
    steps = [
        (full, cfg, "full stack"),
        (full.lean(), cfg, "lean stack: no health dashboard, 4 custom metrics"),
        (
            full.lean(),
            cfg.model_copy(update={"poll_busy": False}),
            "lean stack: no health dashboard, 4 custom metrics, busy tables read hourly",
        ),
    ]
    costs = [fixed_monthly_usd(tables, busy if c.poll_busy else 0, c.poll_every_slices, shape=sh) for sh, c, _ in steps]
    pick = next((i for i, c in enumerate(costs) if c <= budget_usd_month * (1 - keep)), len(steps) - 1)
    shape, chosen, what = steps[pick]
    saved = costs[0] - costs[pick]
    note = f"{what}: fixed costs ${costs[pick]:,.2f}/month of a ${budget_usd_month:,.2f} budget"
    if saved > 0:
        note += f" (saves ${saved:,.2f} against the full stack's ${costs[0]:,.2f})"
    return StackChoice(shape, chosen, costs[pick], note)


def pages_per_scan(table_bytes: float) -> float:
    """Expected data events of one full-table Scan or SELECT: one per page of at most 1 MB."""
    return max(1.0, math.ceil(table_bytes / PAGE_BYTES))


def scan_budget(
    tables: Sequence[TableTraffic],
    data_budget: float,
    cfg: PlannerConfig,
    notes: list[str],
    caps: list[ScanCap] | None = None,
) -> tuple[float, dict[str, int]]:
    """(the always-on selector's expected monthly cost, the capped tables: one slice in N).

    Each table's scans and PartiQL cost their calls times their pages. When the budget leaves something for data
    events, a table may use at most ``scan_cap_share`` of it: above that its scans are logged one slice in N (a note
    names the table, the expected cost and the cap; ``caps`` receives its figures). With nothing left, every scan
    stays logged (the always-on selector is the floor of the service)."""
    total = 0.0
    capped: dict[str, int] = {}
    cap = cfg.scan_cap_share * data_budget
    for t in tables:
        cost = t.rare_per_second * t.pages_per_scan * SECONDS_PER_MONTH * cfg.data_event_usd
        if data_budget <= 0 or cost <= cap:
            total += cost
            continue
        every = math.ceil(cost / cap)
        capped[t.table] = every
        total += cost / every
        if caps is not None:
            pages = cost / cfg.data_event_usd
            caps.append(ScanCap(t.table, t.arn, pages, cap / cfg.data_event_usd, every, t.pages_per_scan, cost, cap))
        notes.append(
            f"{t.table}: scans and PartiQL would cost ${cost:,.2f}/month (about {t.pages_per_scan:,.0f} pages a "
            f"scan), above the per-table cap of ${cap:,.2f}: logged one slice in {every}"
        )
    return total, capped


def cap_findings(plan: CapturePlan, period_start: float, period_end: float) -> list[Finding]:
    """The ``capture_cap`` findings of ``plan``: one per table whose scans and PartiQL reached the per-table cap,
    over the period (epoch seconds) the plan's figures hold for (the controller's day)."""
    return detect_capture_cap(CaptureCapInput(plan.scan_caps, period_start, period_end))


def tables_to_poll(
    tables: Sequence[TableTraffic], last_ratio: dict[str, float], slice_index: int, config: PlannerConfig | None = None
) -> set[str]:
    """The tables whose CloudWatch consumed capacity the controller reads before planning ``slice_index``.

    GetMetricData is billed per metric requested, whatever the number of datapoints, so each read takes the
    per-minute peak since the table's previous read. Every table at the first slice of each hour; tables busy enough
    to hold a hot key (``poll_min_rate`` requests/s on average) every ``poll_every_slices`` slices; and the watched
    tables (last reading at least ``watch_fraction`` of the half-partition line) every slice. Reading every table
    every 5 minutes would cost more than the whole budget.
    """
    cfg = config or PlannerConfig()
    per_hour = max(1, 3600 // cfg.slice_seconds)
    if slice_index % per_hour == 0:
        return {t.table for t in tables}
    polled = {t.table for t in tables if last_ratio.get(t.table, 0.0) >= cfg.watch_fraction}
    if cfg.poll_busy and slice_index % cfg.poll_every_slices == 0:
        polled |= {t.table for t in tables if t.requests_per_second >= cfg.poll_min_rate}
    return polled


def _recent_rate(t: TableTraffic) -> float:
    return max((t.recent_read_units or 0.0) + (t.recent_write_units or 0.0), t.requests_per_second)


def line_ratio(t: TableTraffic, cfg: PlannerConfig) -> float:
    """The table's latest reading over the half-partition line (the larger of reads and writes)."""
    return max(
        (t.recent_read_units or 0.0) / cfg.half_partition_read, (t.recent_write_units or 0.0) / cfg.half_partition_write
    )


def _above_line(t: TableTraffic, cfg: PlannerConfig) -> bool:
    return (t.recent_read_units or 0.0) >= cfg.half_partition_read or (
        t.recent_write_units or 0.0
    ) >= cfg.half_partition_write


def _always_on_values() -> int:
    return 2 + len(ALWAYS_ON_EVENTS) + 2  # eventCategory, resources.type, the names; the slice's category and type


def selectors_for(plan: CapturePlan, *, probes: bool = True) -> list[dict[str, Any]]:
    """The plan's DynamoDB advanced event selectors: the always-on one, plus the slice's tables if any.

    With ``probes=False``, without the burst probes (what the controller puts back when a probe ends).
    """
    base = [
        {"Field": "eventCategory", "Equals": ["Data"]},
        {"Field": "resources.type", "Equals": ["AWS::DynamoDB::Table"]},
    ]
    names = {"Field": "eventName", "Equals": list(ALWAYS_ON_EVENTS)}
    except_capped = [{"Field": "resources.ARN", "NotEquals": list(plan.scan_capped)}] if plan.scan_capped else []
    out: list[dict[str, Any]] = [{"Name": ALWAYS_ON_NAME, "FieldSelectors": [*base, names, *except_capped]}]
    if plan.scan_slice:
        arn_equals = {"Field": "resources.ARN", "Equals": list(plan.scan_slice)}
        out.append({"Name": SCAN_ROTATION_NAME, "FieldSelectors": [*base, names, arn_equals]})
    arns = sorted({c.arn for c in plan.captures if probes or c.seconds is None})
    if arns:
        out.append({"Name": SLICE_NAME, "FieldSelectors": [*base, {"Field": "resources.ARN", "Equals": arns}]})
    return out


def is_ours(selector: dict[str, Any]) -> bool:
    """True for the selectors the controller manages (it leaves every other selector of the trail alone)."""
    return selector.get("Name") in (ALWAYS_ON_NAME, SCAN_ROTATION_NAME, SLICE_NAME)


def selectors_match(selectors: Sequence[dict[str, Any]], event_name: str, arn: str, read_only: bool) -> bool:
    """Whether a trail with these advanced event selectors logs a DynamoDB table data event.

    CloudTrail logs an event when any selector matches; a selector matches when all its field conditions do. Only
    the fields and operators the controller writes are evaluated (``Equals``/``NotEquals`` on ``eventCategory``,
    ``resources.type``, ``resources.ARN``, ``eventName``, ``readOnly``); a selector with any other condition is
    treated as not matching.
    """
    values = {
        "eventCategory": "Data",
        "resources.type": "AWS::DynamoDB::Table",
        "resources.ARN": arn,
        "eventName": event_name,
        "readOnly": "true" if read_only else "false",
    }
    for sel in selectors:
        ok = True
        for cond in sel.get("FieldSelectors", []):
            value = values.get(cond.get("Field", ""))
            if value is None:
                ok = False
            elif "Equals" in cond:
                ok = value in cond["Equals"]
            elif "NotEquals" in cond:
                ok = value not in cond["NotEquals"]
            else:
                ok = False
            if not ok:
                break
        if ok:
            return True
    return False


def captured_seconds(plans: Sequence[dict[str, Any]], table: str, start: int, end: int) -> float | None:
    """Seconds of ``[start, end)`` in which the trail logged all of ``table``'s data events, from the recorded plans
    (:meth:`CapturePlan.to_dict` documents, any order).

    A slice is captured for the seconds its own plan gives the table (``seconds``: a burst probe; None: the whole
    slice). A slice without a plan of its own (the controller did not run) keeps what the latest earlier plan left on
    the trail: its whole-slice captures, not its probes. None when no plan starts at or before ``start``: no
    controller manages the trail, which logs everything (the stack's initial full-capture selector).
    """
    by_start: dict[int, dict[str, Any]] = {}
    for p in plans:
        try:
            by_start[int(p["slice_start"])] = p
        except (KeyError, TypeError, ValueError):
            continue
    starts = sorted(by_start)
    if not starts or starts[0] > start:
        return None
    total = 0.0
    i = 0
    t = start
    while t < end:
        while i + 1 < len(starts) and starts[i + 1] <= t:
            i += 1
        plan = by_start[starts[i]]
        length = int(plan.get("slice_seconds") or 300)
        slice_start = starts[i] if starts[i] + length > t else t - (t - starts[i]) % length
        slice_end = min(end, slice_start + length)
        if i + 1 < len(starts):
            slice_end = min(slice_end, starts[i + 1])
        own = slice_start == starts[i]
        for c in plan.get("captures") or []:
            if not isinstance(c, dict) or c.get("table") != table:
                continue
            seconds = c.get("seconds")
            if seconds is None:
                total += slice_end - t
            elif own:
                total += max(0.0, min(float(slice_end), slice_start + float(seconds)) - t)
            break
        t = slice_end
    return min(total, float(end - start))

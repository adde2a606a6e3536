"""Cost benchmark: the auditor's monthly cost against the audited DynamoDB bill, and what each capture strategy finds.

Run from the repository root::

    python -m benchmarks.cost [--seed 16] [--budget-percent 1]

It models the reference account of issue 16 (seeded, deterministic): 100 tables, 1 billion requests a month, table
rates spread over four orders of magnitude with a diurnal cycle, a mix of on-demand and provisioned tables, Standard
and Standard-IA, 0.5 to 200 GB each; planted problems: hot-key bursts above half a partition's limit (write keys
above 500 WCU/s, read keys above 1,500 RCU/s, 15 minutes to 3 hours) and scan jobs (Scan and full-table PartiQL
SELECTs by named principals, a few a day to one every 10 minutes).

Three strategies, side by side in one run:

- ``full``: every data event of every table;
- ``writes-only``: the ``readOnly=false`` data events only;
- ``governor``: the capture controller's plan, decided every 5-minute slice by :func:`auditor.cost.plan.plan_slice`
  (the controller's own planner) from the CloudWatch readings the controller would have made
  (:func:`auditor.cost.plan.tables_to_poll`: every table at the top of each hour, the watched tables every slice;
  CloudWatch publishes a minute about 2 minutes late, so the planner sees the minute ending 2 minutes before the
  slice starts).

For each it prints every line of the auditor's monthly bill (:func:`auditor.cost.cost_model.month_lines`, the model
the ledger and the weekly report render: data events counted from the traffic model, every page of a Scan or SELECT
one event; the stack's fixed lines from :data:`auditor.cost.cost_model.FIXED_MODEL`; the governor runs the stack its
budget affords, :func:`auditor.cost.plan.stack_for_budget`), the audited DynamoDB bill (the scans' reads included),
the ratio, and the recall of the planted problems; then the adversarial groups (:mod:`benchmarks.cost_adversarial`),
recall per group for the governor and for full capture. ``--line``, ``--cooldown-slices`` and ``--poll-every`` tune
the governor (the trigger as a fraction of a partition, the probe cooldown, the busy tables' reading interval);
``--insights-slices`` turns on Contributor Insights on demand (:mod:`benchmarks.cost_insights`), ``--reserve`` and
``--keep-share`` split the budget (the burst reserve's share of sampling, the share the stack's fixed costs leave).
A table whose scans reach the per-table cap is listed with its ``capture_cap`` finding.
Recall is measured, not asserted: each strategy's captured traffic around every planted problem is generated as
normalised calls, aggregated by :class:`auditor.kernel.aggregates.window.TableWindow` and passed to the real detectors
(:func:`auditor.engine.evaluate`); a planted hot key counts as found when a ``hot_key`` finding names it, a planted
scan job when a ``scan`` finding names its table and principal. Hot keys are evaluated minute by minute (windows of
60 seconds; a detector's shares and per-minute peaks do not depend on uncaptured minutes), stopping at the first
minute that finds the key.

Planted throttling episodes (a hot partition, exhausted provisioned capacity, an on-demand maximum; half of them in a
Region or period without DynamoDB's per-cause throttle metrics, where the cause is inferred) are measured the same
way: the CloudWatch series the metrics audit would read (consumed and provisioned capacity from the traffic model,
throttle events, the per-cause counters where published) go through the real CloudWatch throttling detector, and
each strategy's captured throttled calls (with the ``ThrottlingReasons`` message DynamoDB returns) through the
CloudTrail one. A cause counts as found when a throttling finding on the table names it; the throttled key counts as
named (hot-partition episodes) when a CloudTrail throttling finding lists it. CloudWatch does not depend on the
capture, so the cause recall is the same for every strategy; naming the key does.

The last line reads ``governor ratio=<float> hot_key_recall=<float> scan_recall=<float> adversarial_recall=<float>``
(the adversarial recall over every key of the four groups; an earlier line gives the throttling recalls).
It exits 0 whatever the numbers: it reports, it does not gate.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from auditor.billing.pricing import bundled_prices
from auditor.config import AnalysisConfig
from auditor.cost.bill import AuditorUsage
from auditor.cost.cost_model import BillLine, DynamoDBUsage, StackShape, dynamodb_spend, month_lines
from auditor.cost.plan import (
    SECONDS_PER_MONTH,
    CapturePlan,
    PlannerConfig,
    PlanState,
    TableTraffic,
    cap_findings,
    pages_per_scan,
    plan_slice,
    selectors_for,
    selectors_match,
    stack_for_budget,
    tables_to_poll,
)
from auditor.detectors.base import MetricsInput
from auditor.detectors.metrics import throttling as cw_throttling
from auditor.engine import evaluate
from auditor.kernel.aggregates.window import TableWindow
from auditor.kernel.calls import Access, ApiCall, ItemAccess
from auditor.models.finding import FindingKind
from auditor.models.inventory import Capacity, ContributorInsights, TableProfile
from auditor.models.metrics import CAUSE_METRICS, CONSUMED, PROVISIONED, THROTTLE_EVENTS, MetricSeries, SeriesKey
from auditor.models.metrics import TableMetrics as CwTableMetrics

ACCOUNT = "123456789012"
REGION = "us-east-1"
TABLES = 100
REQUESTS_PER_MONTH = 1e9
MINUTES = 730 * 60
SLICE = 300
SLICES = MINUTES * 60 // SLICE
#: CloudWatch publishes a DynamoDB minute about this many minutes late.
CW_DELAY_MINUTES = 2
EPOCH0 = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp())


@dataclass(slots=True)
class Table:
    name: str
    arn: str
    avg_rate: float  # requests/s averaged over the month (without bursts)
    read_share: float
    read_units: float  # per read
    write_units: float  # per write
    mode: str
    table_class: str
    storage_gb: float
    phase: float

    def rate(self, minute: float) -> float:
        """Requests per second at ``minute`` of the month (diurnal cycle, +-50 %)."""
        return self.avg_rate * (1 + 0.5 * math.sin(2 * math.pi * (minute / 1440 + self.phase)))


@dataclass(slots=True)
class Burst:
    table: int
    start: int  # minute of the month
    minutes: int
    key: str
    rate: float  # units/s on the key
    write: bool

    def active(self, minute: int) -> bool:
        return self.start <= minute < self.start + self.minutes


@dataclass(slots=True)
class ScanJob:
    table: int
    principal: str
    operation: str  # Scan or ExecuteStatement
    minutes: list[int]
    #: data events per scan: one per page of at most 1 MB (the table's size)
    pages: int = 1


@dataclass(slots=True)
class Throttle:
    """A planted throttling episode: ``events_per_minute`` throttle events on table ``table`` for ``minutes``."""

    table: int
    start: int
    minutes: int
    cause: str  # key_range | provisioned | on_demand_max
    write: bool
    events_per_minute: int
    #: DynamoDB published the per-cause throttle metrics (else the detector infers the cause).
    cause_metrics: bool
    key: str


@dataclass(slots=True)
class Account:
    tables: list[Table]
    bursts: list[Burst]
    scans: list[ScanJob]
    throttles: list[Throttle] = field(default_factory=list)
    by_table: dict[int, list[Burst]] = field(default_factory=dict)

    def units(self, i: int, minute: int) -> tuple[float, float]:
        """(read units/s, write units/s) of table ``i`` at ``minute``, bursts included."""
        t = self.tables[i]
        r = t.rate(minute)
        reads = r * t.read_share * t.read_units
        writes = r * (1 - t.read_share) * t.write_units
        for b in self.by_table.get(i, ()):
            if b.active(minute):
                if b.write:
                    writes += b.rate
                else:
                    reads += b.rate
        return reads, writes

    def requests(self, i: int, minute: int) -> tuple[float, float]:
        """(reads/s, writes/s) of table ``i`` at ``minute`` (a burst's request is one unit)."""
        t = self.tables[i]
        r = t.rate(minute)
        reads, writes = r * t.read_share, r * (1 - t.read_share)
        for b in self.by_table.get(i, ()):
            if b.active(minute):
                if b.write:
                    writes += b.rate
                else:
                    reads += b.rate
        return reads, writes


def build_account(seed: int) -> Account:
    rng = random.Random(seed)
    weights = [10 ** rng.uniform(0, 4) for _ in range(TABLES)]
    scale = REQUESTS_PER_MONTH / SECONDS_PER_MONTH / sum(weights)
    tables = []
    for i, w in enumerate(weights):
        name = f"table{i:03d}"
        tables.append(
            Table(
                name=name,
                arn=f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}",
                avg_rate=w * scale,
                read_share=rng.uniform(0.55, 0.9),
                read_units=rng.choice([0.5, 1.0, 1.0, 2.0]),
                write_units=rng.choice([1.0, 1.0, 2.0, 3.0]),
                mode="PROVISIONED" if rng.random() < 0.4 else "PAY_PER_REQUEST",
                table_class="STANDARD_INFREQUENT_ACCESS" if rng.random() < 0.1 else "STANDARD",
                storage_gb=10 ** rng.uniform(math.log10(0.5), math.log10(200)),
                phase=rng.random(),
            )
        )
    # A hot key needs other keys around it: on a table that otherwise sees under 1 request/s, a key at 500+/s is
    # nearly all its traffic and is reported as low_cardinality_key, not hot_key. Bursts go to the other tables.
    busy = [i for i, t in enumerate(tables) if t.avg_rate >= 1.0]
    bursts = []
    for n in range(12):
        write = n < 9
        bursts.append(
            Burst(
                table=rng.choice(busy),
                start=rng.randrange(60, MINUTES - 300),
                minutes=rng.randint(15, 180),
                key=f"HOT#{n}",
                rate=rng.uniform(520, 700) if write else rng.uniform(1550, 1800),
                write=write,
            )
        )
    scans = []
    for n in range(8):
        table = rng.randrange(TABLES)
        if n % 2 == 0:  # a job every 10 minutes for a few hours, once
            start = rng.randrange(0, MINUTES - 600)
            minutes = list(range(start, start + rng.randint(60, 480), 10))
        else:  # a few a day, all month
            minutes = sorted(rng.randrange(0, MINUTES) for _ in range(rng.randint(30, 150)))
        scans.append(
            ScanJob(
                table=table,
                principal=f"arn:aws:iam::{ACCOUNT}:role/report-job-{n}",
                operation="ExecuteStatement" if n in (3, 6) else "Scan",
                minutes=minutes,
            )
        )
    throttles = []
    provisioned = [i for i in busy if tables[i].mode == "PROVISIONED"]
    on_demand = [i for i in busy if tables[i].mode == "PAY_PER_REQUEST"]
    for n, cause in enumerate(("key_range", "provisioned", "on_demand_max", "key_range") * 2):
        pool = provisioned if cause == "provisioned" else on_demand if cause == "on_demand_max" else busy
        throttles.append(
            Throttle(
                table=rng.choice(pool),
                start=rng.randrange(60, MINUTES - 300),
                minutes=rng.randint(10, 90),
                cause=cause,
                write=rng.random() < 0.7,
                events_per_minute=rng.randint(60, 3000),
                cause_metrics=n % 2 == 0,
                key=f"THROTTLED#{n}",
            )
        )
    for job in scans:
        job.pages = int(pages_per_scan(tables[job.table].storage_gb * 2**30))
    acct = Account(tables=tables, bursts=bursts, scans=scans, throttles=throttles)
    for b in bursts:
        acct.by_table.setdefault(b.table, []).append(b)
    return acct


# ---- cost


def dynamodb_bill(acct: Account) -> tuple[float, list[float]]:
    """The audited DynamoDB bill of the month (USD), total and per table."""
    prices = bundled_prices(REGION)
    per_table = []
    for i, t in enumerate(acct.tables):
        # Integrate per hour (the diurnal cycle) plus the bursts.
        reads = writes = 0.0
        peak_r = peak_w = 0.0
        for h in range(730):
            r, w = acct.units(i, h * 60 + 30)
            reads += r * 3600
            writes += w * 3600
            peak_r, peak_w = max(peak_r, r), max(peak_w, w)
        # a scanned page is 1 MB read eventually consistent: 128 read units (on provisioned tables: within capacity)
        reads += sum(len(j.minutes) * j.pages * 128 for j in acct.scans if j.table == i)
        if t.mode == "PROVISIONED":  # auto scaling at 70 % target over the diurnal cycle: average / 0.7
            scanned = sum(len(j.minutes) * j.pages * 128 for j in acct.scans if j.table == i)
            usage = DynamoDBUsage(
                days=730 / 24,
                billing_mode="PROVISIONED",
                table_class=t.table_class,  # type: ignore[arg-type]
                rcu_hours=max(1.0, (reads - scanned) / 3600 / 0.7 / 730) * 730,
                wcu_hours=max(1.0, writes / 3600 / 0.7 / 730) * 730,
                storage_bytes=t.storage_gb * 2**30,
            )
        else:
            usage = DynamoDBUsage(
                days=730 / 24,
                billing_mode="PAY_PER_REQUEST",
                table_class=t.table_class,  # type: ignore[arg-type]
                read_units=reads,
                write_units=writes,
                storage_bytes=t.storage_gb * 2**30,
            )
        per_table.append(dynamodb_spend(usage, prices.for_class(t.table_class)).total)  # type: ignore[arg-type]
    return sum(per_table), per_table


def _events(acct: Account, i: int, start_minute: int, minutes: int, writes_only: bool = False) -> float:
    """Data events of table ``i`` over ``minutes`` minutes from ``start_minute`` (per-minute integration)."""
    total = 0.0
    for m in range(start_minute, start_minute + minutes):
        r, w = acct.requests(i, m)
        total += (w if writes_only else r + w) * 60
    return total


def strategy_lines(
    acct: Account,
    events: float,
    controller_metrics: int,
    *,
    controller: bool,
    shape: StackShape | None = None,
    extra: AuditorUsage | None = None,
) -> list[BillLine]:
    """The month's bill of a strategy, line by line (:func:`auditor.cost.cost_model.month_lines`: the model the
    ledger and the weekly report render)."""
    return month_lines(len(acct.tables), events, controller_metrics, controller=controller, shape=shape, extra=extra)


def scan_pages(acct: Account) -> float:
    """Data events of every planted Scan and SELECT: each page one."""
    return float(sum(len(j.minutes) * j.pages for j in acct.scans))


# ---- governor


@dataclass(slots=True)
class GovernorRun:
    plans: dict[int, frozenset[int]]  # slice -> captured table indexes (only slices with captures)
    selectors: dict[int, list[dict[str, Any]]]  # slice -> the selectors the controller would write
    probe_selectors: dict[int, list[dict[str, Any]]]  # minute -> the selectors during a burst probe
    events: float
    always_on_events: float
    metrics_polled: int
    fixed_usd_month: float
    reasons: dict[str, int]
    first_plan: CapturePlan | None
    shape: StackShape = field(default_factory=StackShape)
    notes: list[str] = field(default_factory=list)
    #: Contributor Insights on demand: per table index, its windows [first minute, end minute); their usage.
    insights: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    ci_usage: AuditorUsage | None = None

    def found(self, acct: Account, b: Burst) -> bool:
        """Whether a Contributor Insights window of the governor named ``b``'s key."""
        from benchmarks.cost_insights import found

        return found(acct, b, self.insights.get(b.table, []))


def run_governor(
    acct: Account, bill_per_table: list[float], budget_percent: float, tuning: dict[str, Any] | None = None
) -> GovernorRun:
    cfg = PlannerConfig(budget_percent=budget_percent, slice_seconds=SLICE, **(tuning or {}))
    rare_rate = {j.table: 0.0 for j in acct.scans}
    for j in acct.scans:
        rare_rate[j.table] += len(j.minutes) / SECONDS_PER_MONTH
    # Fixed costs the planner subtracts first: the stack the budget affords (with the polling below).
    busy = sum(t.avg_rate >= cfg.poll_min_rate for t in acct.tables)
    choice = stack_for_budget(sum(bill_per_table) * budget_percent / 100, len(acct.tables), busy, cfg)
    cfg, fixed = choice.config, choice.fixed_usd_month
    base = [
        TableTraffic(
            table=t.name,
            arn=t.arn,
            requests_per_second=t.avg_rate,
            monthly_dynamodb_usd=bill_per_table[i],
            rare_per_second=rare_rate.get(i, 0.0),
            pages_per_scan=pages_per_scan(t.storage_gb * 2**30),
        )
        for i, t in enumerate(acct.tables)
    ]
    state = PlanState()
    day_peaks: dict[str, float] = {}
    last_read: dict[str, int] = {}
    plans: dict[int, frozenset[int]] = {}
    selectors: dict[int, list[dict[str, Any]]] = {}
    probe_selectors: dict[int, list[dict[str, Any]]] = {}
    events = 0.0
    metrics = 0
    reasons: dict[str, int] = {}
    index = {t.name: i for i, t in enumerate(acct.tables)}
    first: CapturePlan | None = None
    notes: set[str] = set()
    ci_slices: dict[int, list[int]] = {}
    for s in range(SLICES):
        minute = s * SLICE // 60
        seen = minute - CW_DELAY_MINUTES
        poll = tables_to_poll(base, day_peaks, s, cfg)
        metrics += 2 * len(poll)
        traffic = []
        for tt in base:
            if tt.table in poll and seen >= 0:
                i = index[tt.table]
                # The per-minute peak since this table's previous reading (one metric, many datapoints).
                since = max(0, last_read.get(tt.table, seen - 60) + 1)
                r = w = 0.0
                for m in range(since, seen + 1):
                    mr, mw = acct.units(i, m)
                    r, w = max(r, mr), max(w, mw)
                last_read[tt.table] = seen
                day_peaks[tt.table] = max(r / cfg.half_partition_read, w / cfg.half_partition_write)
                traffic.append(
                    TableTraffic(
                        tt.table,
                        tt.arn,
                        tt.requests_per_second,
                        tt.monthly_dynamodb_usd,
                        tt.rare_per_second,
                        r,
                        w,
                        tt.pages_per_scan,
                    )
                )
            else:
                traffic.append(tt)
        state = PlanState(state.burst_spent_usd, s / SLICES, state.bursts)
        plan = plan_slice(traffic, s, fixed_usd_month=fixed, state=state, config=cfg)
        state = plan.state
        if first is None:
            first = plan
        notes.update(n for n in plan.notes if "scans and PartiQL" in n)
        for name in plan.insights:
            ci_slices.setdefault(index[name], []).append(s)
        if plan.captures or plan.scan_capped:
            plans[s] = frozenset(index[c.table] for c in plan.captures)
            selectors[s] = selectors_for(plan, probes=False)
            if plan.probe_seconds:
                probe_minutes = math.ceil(plan.probe_seconds / 60)
                for m in range(minute, minute + probe_minutes):
                    probe_selectors[m] = selectors_for(plan)
            for c in plan.captures:
                reasons[c.reason] = reasons.get(c.reason, 0) + 1
                i = index[c.table]
                if c.seconds is None:
                    events += _events(acct, i, minute, SLICE // 60)
                else:
                    events += (
                        _events(acct, i, minute, math.ceil(c.seconds / 60))
                        * c.seconds
                        / (60 * math.ceil(c.seconds / 60))
                    )
    # The always-on selector's events: every page of each scan the trail logged then.
    no_capture = _plan_of(frozenset(), acct)
    always_on_events = 0.0
    for j in acct.scans:
        arn = acct.tables[j.table].arn
        for m in j.minutes:
            logged = probe_selectors.get(m) or selectors.get(m * 60 // SLICE, no_capture)
            always_on_events += j.pages * selectors_match(logged, j.operation, arn, True)
    from benchmarks.cost_insights import usage, windows

    ci_on = {i: windows(slices, SLICE // 60) for i, slices in ci_slices.items()}
    ci_usage, ci_reads = usage(acct, ci_on)
    return GovernorRun(
        plans,
        selectors,
        probe_selectors,
        events + always_on_events,
        always_on_events,
        metrics + ci_reads,
        fixed,
        reasons,
        first,
        choice.shape,
        [choice.note, *sorted(notes)],
        ci_on,
        ci_usage if ci_on else None,
    )


# ---- recall

Capture = Callable[[int, int], list[dict[str, Any]]]  # (table index, minute) -> the trail's selectors then


def _mode(acct: Account, capture: Capture, i: int, minute: int, op: str, read_only: bool) -> bool:
    return selectors_match(capture(i, minute), op, acct.tables[i].arn, read_only)


def _call(
    table: str,
    op: str,
    access: Access,
    key: dict[str, str] | None,
    epoch: float,
    principal: str,
    full_scan: bool = False,
) -> ApiCall:
    item = ItemAccess(table=table, operation=op, access=access, key=key, full_scan=full_scan)
    return ApiCall(
        event_id="",
        time=datetime.fromtimestamp(epoch, UTC),
        operation=op.split(":")[0],
        access=access,
        account=ACCOUNT,
        region=REGION,
        tables=(table,),
        items=(item,),
        principal=principal,
    )


def hot_key_found(acct: Account, b: Burst, capture: Capture, rng: random.Random) -> tuple[bool, int]:
    """Generate the captured traffic of ``b``'s table minute by minute and run the detectors; (found, events)."""
    t = acct.tables[b.table]
    config = AnalysisConfig(window_seconds=60)
    app = f"arn:aws:iam::{ACCOUNT}:role/app"
    generated = 0
    for minute in range(b.start, b.start + b.minutes):
        reads_logged = _mode(acct, capture, b.table, minute, "GetItem", True)
        writes_logged = _mode(acct, capture, b.table, minute, "PutItem", False)
        if not (reads_logged or writes_logged):
            continue
        epoch0 = EPOCH0 + minute * 60
        tw = TableWindow(ACCOUNT, REGION, t.name, epoch0, 60)
        r, w = acct.requests(b.table, minute)
        hot_reads = 0.0 if b.write else b.rate
        hot_writes = b.rate if b.write else 0.0
        bg_reads, bg_writes = r - hot_reads, w - hot_writes
        plan: list[tuple[int, bool, str | None]] = []
        if reads_logged:
            plan.append((int(bg_reads * 60), False, None))
            plan.append((int(hot_reads * 60), False, b.key))
        if writes_logged:
            plan.append((int(bg_writes * 60), True, None))
            plan.append((int(hot_writes * 60), True, b.key))
        hot_calls = {
            False: _call(t.name, "GetItem", Access.READ, {"pk": b.key}, epoch0, app),
            True: _call(t.name, "PutItem", Access.WRITE, {"pk": b.key}, epoch0, app),
        }
        for n, is_write, key in plan:
            for k in range(n):
                epoch = epoch0 + k * 60 / max(n, 1)
                if key is None:
                    op, acc = ("PutItem", Access.WRITE) if is_write else ("GetItem", Access.READ)
                    call = _call(t.name, op, acc, {"pk": f"USER#{rng.randrange(200_000)}"}, epoch, app)
                else:
                    call = hot_calls[is_write]
                tw.add(call, call.items, epoch)
                generated += 1
        tw.flush()
        findings, _ = evaluate([tw], config)
        if any(f.kind == FindingKind.HOT_KEY and f.evidence.get("key") == {"pk": b.key} for f in findings):
            return True, generated
    return False, generated


def scan_found(acct: Account, job: ScanJob, capture: Capture) -> bool:
    """Generate the captured calls of one scan job (one window per 15 minutes) and run the detectors."""
    t = acct.tables[job.table]
    windows: dict[int, TableWindow] = {}
    for minute in job.minutes:
        if not _mode(acct, capture, job.table, minute, job.operation, True):
            continue
        epoch = EPOCH0 + minute * 60
        start = epoch // 900 * 900
        tw = windows.setdefault(start, TableWindow(ACCOUNT, REGION, t.name, start, 900))
        op = "Scan" if job.operation == "Scan" else "ExecuteStatement:SELECT"
        call = _call(t.name, op, Access.READ, None, epoch, job.principal, full_scan=True)
        tw.add(call, call.items, epoch)
    found = False
    for tw in windows.values():
        tw.flush()
        findings, _ = evaluate([tw], AnalysisConfig())
        found = found or any(
            f.kind == FindingKind.SCAN and f.evidence.get("principal") == job.principal for f in findings
        )
    return found


#: The reason DynamoDB returns in ``ThrottlingReasons`` for each cause (the trail logs it in ``errorMessage``).
_REASON = {
    "key_range": "KeyRangeThroughput",
    "provisioned": "ProvisionedThroughput",
    "on_demand_max": "MaxOnDemandThroughput",
}


def _cw_series(tm: CwTableMetrics, metric: str, points: dict[int, float], stat: str = "Sum", period: int = 60) -> None:
    key = SeriesKey(metric, tm.table, None, None, stat, period)
    tm.resource(None).series[key.name] = MetricSeries(key, points)


def throttling_found(acct: Account, th: Throttle, capture: Capture, rng: random.Random) -> tuple[bool, bool]:
    """(cause found, throttled key named) for one planted episode: CloudWatch series through the CloudWatch detector,
    the captured throttled calls through the CloudTrail one."""
    t = acct.tables[th.table]
    access = "write" if th.write else "read"
    lo, hi = th.start - 30, th.start + th.minutes + 30
    start, end = EPOCH0 + lo * 60, EPOCH0 + hi * 60
    consumed: dict[int, float] = {}
    throttled: dict[int, float] = {}
    for m in range(lo, hi):
        reads, writes = acct.units(th.table, m)
        rate = writes if th.write else reads
        if th.start <= m < th.start + th.minutes:
            throttled[EPOCH0 + m * 60] = float(th.events_per_minute)
        consumed[EPOCH0 + m * 60] = rate * 60
    peak = max(consumed.values()) / 60
    # Provisioned tables: at capacity while throttled by it, far above it (30 % used) when a partition throttles.
    provisioned = 0
    if t.mode == "PROVISIONED":
        provisioned = max(1, math.ceil(peak / (0.99 if th.cause == "provisioned" else 0.3)))
        if th.cause == "provisioned":  # consumption pinned at the capacity while throttled
            for when in throttled:
                consumed[when] = provisioned * 60.0
    od_max = max(1, math.ceil(peak)) if th.cause == "on_demand_max" else None
    if od_max is not None:
        for when in throttled:
            consumed[when] = od_max * 60.0
    cap = Capacity(
        provisioned_read=provisioned if not th.write else 0,
        provisioned_write=provisioned if th.write else 0,
        on_demand_max_read=od_max if not th.write else None,
        on_demand_max_write=od_max if th.write else None,
    )
    if t.mode == "PROVISIONED":  # the other dimension's capacity is irrelevant here, but present
        cap = cap.model_copy(update={f"provisioned_{'read' if th.write else 'write'}": max(1, provisioned)})
    profile = TableProfile(
        name=t.name,
        account=ACCOUNT,
        region=REGION,
        arn=t.arn,
        billing_mode=t.mode,  # type: ignore[arg-type]
        partition_key="pk",
        capacity=cap,
        contributor_insights=ContributorInsights(status="DISABLED"),
    )
    tm = CwTableMetrics(t.name, start, end, 60)
    _cw_series(tm, CONSUMED[access], consumed)
    _cw_series(tm, THROTTLE_EVENTS[access], throttled)
    if th.cause_metrics:
        _cw_series(tm, CAUSE_METRICS[th.cause][access], throttled)
    if t.mode == "PROVISIONED":
        _cw_series(tm, PROVISIONED[access], {w: float(provisioned) for w in range(start, end, 300)}, "Average", 300)
    causes = {f.evidence.get("cause") for f in cw_throttling.detect(MetricsInput(profile, tm))}
    # The trail: the captured throttled calls, minute by minute (a hot partition's come from one key).
    app = f"arn:aws:iam::{ACCOUNT}:role/app"
    op, acc = ("PutItem", Access.WRITE) if th.write else ("GetItem", Access.READ)
    reason = f"Table{'Write' if th.write else 'Read'}{_REASON[th.cause]}Exceeded"
    message = f"Throughput exceeds the current capacity of your table or index. ThrottlingReasons: [{reason}]"
    code = "ProvisionedThroughputExceededException" if t.mode == "PROVISIONED" else "ThrottlingException"
    named = False
    for minute in range(th.start, th.start + th.minutes):
        if not _mode(acct, capture, th.table, minute, op, not th.write):
            continue
        epoch0 = EPOCH0 + minute * 60
        tw = TableWindow(ACCOUNT, REGION, t.name, epoch0, 60)
        n = min(th.events_per_minute, 600)  # enough calls to decide; the detector reads shares and counts
        for k in range(n):
            key = th.key if th.cause == "key_range" else f"USER#{rng.randrange(200_000)}"
            item = ItemAccess(table=t.name, operation=op, access=acc, key={"pk": key})
            call = ApiCall(
                event_id="",
                time=datetime.fromtimestamp(epoch0 + k * 60 / n, UTC),
                operation=op,
                access=acc,
                account=ACCOUNT,
                region=REGION,
                tables=(t.name,),
                items=(item,),
                principal=app,
                error_code=code,
                error_message=message,
            )
            tw.add(call, call.items, epoch0 + k * 60 / n)
        tw.flush()
        findings, _ = evaluate([tw], AnalysisConfig(window_seconds=60))
        for f in findings:
            if f.kind != FindingKind.THROTTLING:
                continue
            causes.add(f.evidence.get("cause"))
            keys = [k.get("key") for k in f.evidence.get("top_keys") or []]
            named = named or {"pk": th.key} in keys
        if th.cause in causes and (named or th.cause != "key_range"):
            break
    return th.cause in causes, named


def _plan_of(tables: frozenset[int], acct: Account) -> list[dict[str, Any]]:
    """The selectors of a slice that captures no table (the always-on selector alone)."""
    empty = CapturePlan(0, SLICE, (), 0.0, 0.0, 0.0, 0.0, 0.0, PlanState())
    return selectors_for(empty)


# ---- main


@dataclass(slots=True)
class Result:
    name: str
    events: float
    auditor_usd: float
    hot_found: int
    scans_found: int
    generated: int
    throttle_causes_found: int = 0
    throttled_keys_named: int = 0
    lines: list[BillLine] = field(default_factory=list)


def capture_of(gov: GovernorRun, no_capture: list[dict[str, Any]]) -> Capture:
    """The trail's selectors at each minute under the governor's plans."""

    def capture(i: int, minute: int) -> list[dict[str, Any]]:
        probe = gov.probe_selectors.get(minute)
        return probe if probe is not None else gov.selectors.get(minute * 60 // SLICE, no_capture)

    return capture


def adversarial(
    acct: Account, groups: Any, gov: GovernorRun, full: Capture, seed: int, budget: float, tuning: dict[str, Any]
) -> float:
    """Recall per adversarial group (:mod:`benchmarks.cost_adversarial`), the governor against full capture; a second
    account (the next seed) with its own governor. Returns the governor's recall over every adversarial key."""
    from benchmarks.cost_adversarial import print_groups, recall

    rng = random.Random(seed)
    no_capture = _plan_of(frozenset(), acct)
    captures = {"governor": capture_of(gov, no_capture), "full": full}

    def found(a: Account, g: GovernorRun, caps: dict[str, Capture], b: Burst, s: str) -> bool:
        return hot_key_found(a, b, caps[s], rng)[0] or (s == "governor" and g.found(a, b))

    rows = recall(groups, lambda b, s: found(acct, gov, captures, b, s))
    other = build_account(seed + 1)
    other_gov = run_governor(other, dynamodb_bill(other)[1], budget, tuning)
    other_captures = {"governor": capture_of(other_gov, no_capture), "full": full}
    rows += recall([("second account", other.bursts)], lambda b, s: found(other, other_gov, other_captures, b, s))
    return print_groups(rows)


def print_lines(results: list[Result]) -> None:
    """Every line of each strategy's monthly bill (USD), with its quantity under the governor and its price."""
    print()
    names = [r.name for r in results]
    print(
        f"{'cost line ($/month)':<34} " + " ".join(f"{n:>12}" for n in names) + f" {'quantity (governor)':>22}  price"
    )
    for k, line in enumerate(results[-1].lines):
        cells = " ".join(f"{r.lines[k].usd:>12,.2f}" for r in results)
        print(f"{line.item:<34} {cells} {line.quantity:>16,.2f} {line.unit[:5]:<5}  {line.rate}")
    print(f"{'total':<34} " + " ".join(f"{r.auditor_usd:>12,.2f}" for r in results))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=16)
    p.add_argument("--budget-percent", type=float, default=1.0)
    p.add_argument("--line", type=float, default=0.5, help="the burst trigger, as a fraction of a partition's limit")
    p.add_argument("--cooldown-slices", type=int, default=288, help="slices before a table is probed again")
    p.add_argument("--poll-every", type=int, default=3, help="read the busy tables every N slices")
    p.add_argument(
        "--insights-slices",
        type=int,
        default=PlannerConfig().insights_slices,
        help="Contributor Insights on demand for N slices on a table at the detector's floor (0: never)",
    )
    p.add_argument("--reserve", type=float, default=0.5, help="share of the sampling budget kept for bursts")
    p.add_argument("--keep-share", type=float, default=0.5, help="share of the budget the stack's fixed costs leave")
    args = p.parse_args(argv)
    tuning = {
        "burst_reserve": args.reserve,
        "stack_keep_share": args.keep_share,
        "half_partition_read": 3000 * args.line,
        "half_partition_write": 1000 * args.line,
        "burst_cooldown_slices": args.cooldown_slices,
        "poll_every_slices": args.poll_every,
        "insights_slices": args.insights_slices,
    }
    t0 = time.perf_counter()
    acct = build_account(args.seed)
    planted = list(acct.bursts)
    from benchmarks.cost_adversarial import plant

    groups = plant(acct, args.seed)  # the adversarial groups' keys, seen by the governor's CloudWatch readings
    bill, per_table = dynamodb_bill(acct)
    total_requests = sum(_events(acct, i, h * 60, 1) * 60 for i in range(TABLES) for h in range(730))
    write_events = sum(acct.requests(i, h * 60 + 30)[1] * 3600 for i in range(TABLES) for h in range(730))
    gov = run_governor(acct, per_table, args.budget_percent, tuning)

    base = [
        {"Field": "eventCategory", "Equals": ["Data"]},
        {"Field": "resources.type", "Equals": ["AWS::DynamoDB::Table"]},
    ]
    full_selectors = [{"Name": "all", "FieldSelectors": base}]
    writes_selectors = [{"Name": "writes", "FieldSelectors": [*base, {"Field": "readOnly", "Equals": ["false"]}]}]
    no_capture = _plan_of(frozenset(), acct)

    governor_capture = capture_of(gov, no_capture)

    def full_capture(i: int, minute: int) -> list[dict[str, Any]]:
        return full_selectors

    pages = scan_pages(acct)
    strategies: list[tuple[str, float, list[BillLine], Capture]] = [
        (
            "full",
            total_requests + pages,
            strategy_lines(acct, total_requests + pages, 0, controller=False),
            full_capture,
        ),
        (
            "writes-only",
            write_events,
            strategy_lines(acct, write_events, 0, controller=False),
            lambda i, m: writes_selectors,
        ),
        (
            "governor",
            gov.events,
            strategy_lines(acct, gov.events, gov.metrics_polled, controller=True, shape=gov.shape, extra=gov.ci_usage),
            governor_capture,
        ),
    ]
    results: list[Result] = []
    for name, events, lines, capture in strategies:
        rng = random.Random(args.seed)
        hot = 0
        generated = 0
        for b in planted:
            ok, n = hot_key_found(acct, b, capture, rng)
            hot += ok or (name == "governor" and gov.found(acct, b))
            generated += n
        scans = sum(scan_found(acct, j, capture) for j in acct.scans)
        causes = named = 0
        for th in acct.throttles:
            cause_ok, key_ok = throttling_found(acct, th, capture, rng)
            causes += cause_ok
            named += key_ok
        results.append(Result(name, events, sum(x.usd for x in lines), hot, scans, generated, causes, named, lines))

    print(
        f"reference account: {TABLES} tables, {total_requests / 1e9:.2f} billion requests/month "
        f"({write_events / total_requests:.0%} writes), DynamoDB bill ${bill:,.2f}/month; "
        f"planted: {len(planted)} hot keys above half a partition's limit, {len(acct.scans)} scan jobs, "
        f"{len(acct.throttles)} throttling episodes ({sum(th.cause == 'key_range' for th in acct.throttles)} hot "
        f"partitions; {sum(th.cause_metrics for th in acct.throttles)} with DynamoDB's per-cause metrics)"
    )
    print(
        f"governor: budget {args.budget_percent:g}% = ${bill * args.budget_percent / 100:,.2f}/month; "
        f"fixed auditor costs ${gov.fixed_usd_month:,.2f} (planner's estimate); captures by reason {gov.reasons}; "
        f"{gov.always_on_events:,.0f} always-on events (Scan and SELECT pages, of {pages:,.0f}); "
        f"{gov.metrics_polled:,} CloudWatch metrics polled"
    )
    if gov.insights:
        spans = sum(len(w) for w in gov.insights.values())
        print(f"  Contributor Insights on demand: {spans} windows on {len(gov.insights)} tables")
    for note in gov.notes:
        print(f"  {note}")
    if gov.first_plan is not None:
        for f in cap_findings(gov.first_plan, EPOCH0, EPOCH0 + 86_400):
            print(f"  capture_cap finding {f.id} ({f.severity}): {f.title}")
    print_lines(results)
    print()
    print(
        f"{'strategy':<12} {'data events':>14} {'auditor $/mo':>13} {'DynamoDB $/mo':>14} {'ratio':>9} "
        f"{'hot-key recall':>15} {'scan recall':>12} {'throttling-cause recall':>24} {'throttled key named':>20} "
        f"{'events simulated':>17}"
    )
    key_range = sum(th.cause == "key_range" for th in acct.throttles)
    for r in results:
        print(
            f"{r.name:<12} {r.events:>14,.0f} {r.auditor_usd:>13,.2f} {bill:>14,.2f} {r.auditor_usd / bill:>9.2%} "
            f"{r.hot_found / len(planted):>15.2f} {r.scans_found / len(acct.scans):>12.2f} "
            f"{r.throttle_causes_found / len(acct.throttles):>24.2f} {r.throttled_keys_named / key_range:>20.2f} "
            f"{r.generated:>17,}"
        )
    # Contributor Insights in throttled-keys mode, enabled (as the throttling findings recommend) on the tables whose
    # CloudWatch throttling is a hot partition: it names every throttled key whatever the capture, at one rule per
    # table (no sort key in the model) and $0.03 per million throttled events.
    ci_cfg = cw_throttling.CwThrottlingConfig()
    hot_partitions = [th for th in acct.throttles if th.cause == "key_range"]
    ci_tables = {th.table for th in hot_partitions}
    ci_events = sum(th.events_per_minute * th.minutes for th in hot_partitions)
    ci_usd = len(ci_tables) * ci_cfg.ci_rule_usd_month + ci_events / 1e6 * ci_cfg.ci_usd_per_million_events
    g = results[-1]
    print(
        f"governor + Contributor Insights (THROTTLED_KEYS) on the {len(ci_tables)} tables with hot-partition "
        f"throttling: +${ci_usd:,.2f}/month, ratio {(g.auditor_usd + ci_usd) / bill:.2%}, throttled key named 1.00 "
        f"(the governor alone: {g.throttled_keys_named / key_range:.2f})"
    )
    print(f"\n(run took {time.perf_counter() - t0:.0f} s)")
    print(
        f"governor throttling_cause_recall={g.throttle_causes_found / len(acct.throttles):.4f} "
        f"throttled_key_named={g.throttled_keys_named / key_range:.4f}"
    )
    adversarial_recall = adversarial(acct, groups, gov, full_capture, args.seed, args.budget_percent, tuning)
    print(
        f"governor ratio={g.auditor_usd / bill:.6f} hot_key_recall={g.hot_found / len(planted):.4f} "
        f"scan_recall={g.scans_found / len(acct.scans):.4f} adversarial_recall={adversarial_recall:.4f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

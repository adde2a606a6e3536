"""Cost ledger arithmetic and the capture planner (pure)."""

from __future__ import annotations

from datetime import date

import pytest

from auditor.billing.pricing import bundled_prices
from auditor.cost.cost_model import (
    DAYS_PER_MONTH,
    SHARED,
    AuditorUsage,
    DynamoDBUsage,
    LedgerEntry,
    Spend,
    auditor_spend,
    dynamodb_spend,
    summarise,
    usage_from_history,
)
from auditor.cost.plan import (
    ALWAYS_ON_EVENTS,
    PlannerConfig,
    PlanState,
    TableTraffic,
    plan_slice,
    selectors_for,
    selectors_match,
    tables_to_poll,
)

STD = bundled_prices("us-east-1").for_class("STANDARD")


def test_on_demand_spend_bills_consumed_units_and_storage() -> None:
    usage = DynamoDBUsage(
        days=1, billing_mode="PAY_PER_REQUEST", read_units=8e6, write_units=2e6, storage_bytes=10 * 2**30
    )
    spend = dynamodb_spend(usage, STD)
    assert spend.lines["reads"] == pytest.approx(8 * 0.125)
    assert spend.lines["writes"] == pytest.approx(2 * 0.625)
    assert spend.lines["storage"] == pytest.approx(10 * 0.25 / DAYS_PER_MONTH)


def test_provisioned_spend_bills_units_in_force_not_consumption() -> None:
    usage = DynamoDBUsage(days=1, billing_mode="PROVISIONED", read_units=1e9, rcu_hours=24 * 100, wcu_hours=24 * 10)
    spend = dynamodb_spend(usage, STD)
    assert spend.lines["reads"] == pytest.approx(2400 * 0.00013)
    assert spend.lines["writes"] == pytest.approx(240 * 0.00065)


def test_auditor_spend_lines() -> None:
    usage = AuditorUsage(
        days=DAYS_PER_MONTH,
        data_events=2_000_000,
        lambda_gb_seconds=1000,
        lambda_requests=1_000_000,
        metrics_requested=3000,
        ci_rules=2,
        ci_events=1_000_000,
        s3_puts=1000,
        s3_gets=1000,
        s3_bytes_stored=2**30,
    )
    lines = auditor_spend(usage).lines
    assert lines["cloudtrail_data_events"] == pytest.approx(2.0)
    assert lines["lambda"] == pytest.approx(1000 * 0.0000133334 + 0.20)
    assert lines["cloudwatch_metrics"] == pytest.approx(0.03)
    assert lines["contributor_insights"] == pytest.approx(1.0 + 0.03)
    assert lines["s3"] == pytest.approx(0.005 + 0.0004 + 0.023)


def test_usage_plus_adds_counts() -> None:
    a = AuditorUsage(data_events=5, metrics_requested=2)
    b = AuditorUsage(data_events=7, s3_puts=1)
    assert a.plus(b).model_dump() == AuditorUsage(data_events=12, metrics_requested=2, s3_puts=1).model_dump()


def _entry(table: str, day: int, ddb: float, aud: float) -> LedgerEntry:
    return LedgerEntry(
        day=date(2026, 12, day),
        table=table,
        dynamodb=Spend(lines={"reads": ddb}),
        auditor=Spend(lines={"cloudtrail_data_events": aud}),
    )


def test_summary_ratio_per_table_and_total_with_shared_costs() -> None:
    summary = summarise(
        [_entry("A", 1, 10.0, 0.05), _entry("A", 2, 10.0, 0.05), _entry("B", 1, 5.0, 0.5), _entry(SHARED, 1, 0, 0.2)]
    )
    assert summary is not None
    rows = {r.table: r for r in summary.rows}
    assert set(rows) == {"A", "B"}
    assert rows["A"].ratio == pytest.approx(0.1 / 20)
    assert rows["A"].days == 2
    assert rows["B"].ratio == pytest.approx(0.1)
    assert summary.total.auditor_usd == pytest.approx(0.8)
    assert summary.total.ratio == pytest.approx(0.8 / 25)
    assert summary.shared_usd == pytest.approx(0.2)
    assert summarise([]) is None


def test_ledger_entry_round_trips_through_its_item() -> None:
    e = _entry("Orders", 3, 1.2345678901234, 0.1)
    assert LedgerEntry.from_item(e.to_item()) == e


def test_usage_from_history_sums_table_and_gsis() -> None:
    history = {
        "billing_mode": "PROVISIONED",
        "table_class": "STANDARD",
        "period_seconds": 60,
        "table_size_bytes": 100,
        "series": [
            {
                "consumed_read": [60, 60],
                "consumed_write": [6, 0],
                "provisioned_read": [10, 10],
                "provisioned_write": [5, None],
            },
            {"consumed_read": [0, 30], "consumed_write": [0, 0], "provisioned_read": None, "provisioned_write": None},
        ],
    }
    u = usage_from_history(history, days=1 / 720)
    assert (u.read_units, u.write_units) == (150, 6)
    assert u.rcu_hours == pytest.approx(20 / 60)
    assert u.wcu_hours == pytest.approx(5 / 60)
    assert u.storage_bytes == 100


# ---- planner


def _t(name: str, rps: float, usd: float, r: float | None = None, w: float | None = None) -> TableTraffic:
    return TableTraffic(name, f"arn:aws:dynamodb:us-east-1:1:table/{name}", rps, usd, 0.0, r, w)


def test_budget_zero_leaves_the_always_on_selector_only() -> None:
    tables = [_t("A", 100, 500, w=900), _t("B", 0.001, 500)]
    plan = plan_slice(tables, 7, fixed_usd_month=0, config=PlannerConfig(budget_percent=0))
    assert plan.captures == ()
    sels = selectors_for(plan)
    assert len(sels) == 1
    assert selectors_match(sels, "Scan", tables[0].arn, True)
    assert selectors_match(sels, "ExecuteStatement", tables[1].arn, True)
    assert not selectors_match(sels, "GetItem", tables[0].arn, True)
    assert "budget 0" in plan.notes[0]


def test_quiet_table_is_continuous_busy_table_rotates_within_its_share() -> None:
    quiet = _t("Quiet", 0.001, 100)
    busy = _t("Busy", 100.0, 100)
    cfg = PlannerConfig(budget_percent=1, burst_reserve=0)
    plans = [plan_slice([quiet, busy], s, fixed_usd_month=0, config=cfg) for s in range(2000)]
    assert all("Quiet" in p.tables for p in plans)
    busy_slices = [p for p in plans if "Busy" in p.tables]
    every = busy_slices[0].captures[[c.table for c in busy_slices[0].captures].index("Busy")].every
    # Busy's share: $1/month; full capture would cost 100/s x 730 h x $1e-6 = $262.8 -> 1 slice in 263.
    assert every == 263
    assert len(busy_slices) in (7, 8)
    spent = len(busy_slices) / 2000 * 100 * 2_628_000 * 1e-6
    assert spent <= 1.0 * 1.05


def test_rotation_spreads_busy_tables_over_slices() -> None:
    tables = [_t(f"T{i}", 50.0, 100) for i in range(20)]
    cfg = PlannerConfig(burst_reserve=0)
    counts = [len(plan_slice(tables, s, fixed_usd_month=0, config=cfg).captures) for s in range(300)]
    assert max(counts) < 20 / 2  # never all busy tables in the same slice


def test_burst_above_half_partition_is_captured_once_per_episode() -> None:
    hot = _t("Hot", 10.0, 300, r=10, w=600)
    cfg = PlannerConfig(burst_reserve=1.0, burst_slices=1, burst_cooldown_slices=3)
    p1 = plan_slice([hot], 10, fixed_usd_month=0, state=PlanState(month_elapsed=0.5), config=cfg)
    assert [c.reason for c in p1.captures] == ["burst"]
    # A probe of 60 seconds at the table's current rate (10 reads/s + 600 writes/s).
    assert p1.burst_usd == pytest.approx(610 * 60 * 1e-6)
    assert p1.probe_seconds == 60
    during = selectors_for(p1)
    after = selectors_for(p1, probes=False)
    assert selectors_match(during, "PutItem", hot.arn, False)
    assert not selectors_match(after, "PutItem", hot.arn, False)
    assert selectors_match(after, "Scan", hot.arn, True)
    p2 = plan_slice([hot], 11, fixed_usd_month=0, state=p1.state, config=cfg)
    assert "Hot" not in [c.table for c in p2.captures if c.reason == "burst"]
    p3 = plan_slice([hot], 15, fixed_usd_month=0, state=p2.state, config=cfg)
    assert [c.reason for c in p3.captures] == ["burst"]


def test_burst_not_captured_when_reserve_is_spent() -> None:
    hot = _t("Hot", 10.0, 300, w=600)
    state = PlanState(burst_spent_usd=100.0, month_elapsed=0.5)
    plan = plan_slice([hot], 1, fixed_usd_month=0, state=state, config=PlannerConfig(burst_reserve=1.0))
    assert not [c for c in plan.captures if c.reason == "burst"]
    assert any("reserve is spent" in n for n in plan.notes)


def test_fixed_costs_above_budget_leave_no_sampling() -> None:
    plan = plan_slice([_t("A", 0.001, 100)], 0, fixed_usd_month=5.0)
    assert plan.sampling_usd_month == 0
    assert plan.captures == ()


def test_selector_values_stay_within_cloudtrails_limit() -> None:
    tables = [_t(f"T{i:04d}", 0.0001, 10) for i in range(700)]
    plan = plan_slice(tables, 0, fixed_usd_month=0, config=PlannerConfig(budget_percent=50))
    values = sum(len(c.get("Equals", [])) for s in selectors_for(plan) for c in s["FieldSelectors"])
    assert values <= 500
    assert any("dropped" in n for n in plan.notes)


def test_selectors_semantics() -> None:
    arn = "arn:aws:dynamodb:us-east-1:1:table/A"
    writes = [
        {
            "FieldSelectors": [
                {"Field": "eventCategory", "Equals": ["Data"]},
                {"Field": "readOnly", "Equals": ["false"]},
            ]
        }
    ]
    assert selectors_match(writes, "PutItem", arn, False)
    assert not selectors_match(writes, "Scan", arn, True)
    plan = plan_slice([_t("A", 0.001, 100)], 0, fixed_usd_month=0)
    sels = selectors_for(plan)
    assert sels[0]["FieldSelectors"][2]["Equals"] == list(ALWAYS_ON_EVENTS)
    assert selectors_match(sels, "GetItem", arn, True)
    assert not selectors_match(sels, "GetItem", arn.replace("/A", "/B"), True)


def test_tables_to_poll() -> None:
    tables = [_t("Busy", 5.0, 1), _t("Quiet", 0.01, 1)]
    assert tables_to_poll(tables, {}, 0) == {"Busy", "Quiet"}  # top of the hour
    assert tables_to_poll(tables, {}, 3) == {"Busy"}
    assert tables_to_poll(tables, {}, 4) == set()
    assert tables_to_poll(tables, {"Quiet": 0.3}, 4) == {"Quiet"}


def test_fixed_monthly_cost_grows_with_tables_and_the_controllers_reads() -> None:
    from auditor.cost.cost_model import controller_poll_metrics, fixed_monthly_usd

    assert controller_poll_metrics(100, 50, 3) == 2 * (100 * 730 + 50 * 8760 // 3 + 5 * 8760)
    small, large = fixed_monthly_usd(10, 5), fixed_monthly_usd(100, 50)
    assert 0 < small < large
    # 100 tables, every line counted: the CloudWatch reads (metrics audit $2.28, controller polls $3.06), the
    # custom metrics ($4.20), the dashboard ($3.00), the KMS key ($1.00), the alarms ($0.90) and the rest.
    assert 16.0 < large < 20.0
    from auditor.cost.cost_model import StackShape

    assert fixed_monthly_usd(100, 50, shape=StackShape().lean()) == pytest.approx(large - 3.0 - 10 * 0.30)


# ---------------------------------------------------------------- the service's daily ledger


def test_day_entry_adds_the_hours_and_prices_the_windows_data_events() -> None:
    from auditor.cost.cost_model import FIXED_MODEL, AuditorRates
    from auditor.cost.ledger import day_entry

    hours = {
        "hour_1": {"dynamodb": {"reads": "0.5", "writes": "1.25"}, "auditor": {"cloudwatch_metrics": "0.001"}},
        "hour_2": {"dynamodb": {"reads": "0.5", "bogus": "x"}, "auditor": {"contributor_insights": "0.002"}},
    }
    e = day_entry(date(2026, 12, 1), "1", "us-east-1", "Orders", hours, {"window_1": 600_000, "window_2": 400_000})
    assert e.dynamodb.lines == {"reads": 1.0, "writes": 1.25}
    r = AuditorRates()
    assert e.auditor.lines["cloudtrail_data_events"] == pytest.approx(1_000_000 * r.data_event)  # $1.00
    gb_s = FIXED_MODEL["lambda_gb_s_per_million_events"]
    assert e.auditor.lines["lambda"] == pytest.approx(gb_s * r.lambda_gb_second)
    assert e.auditor.lines["cloudwatch_metrics"] == pytest.approx(0.001)
    assert e.auditor.lines["contributor_insights"] == pytest.approx(0.002)
    none = day_entry(date(2026, 12, 1), None, None, "Quiet", {}, {})
    assert none.auditor.total == 0 and none.dynamodb.total == 0


def test_week_ledger_adds_each_days_shared_costs_to_the_total_only() -> None:
    from auditor.cost.ledger import shared_day_entry, week_ledger

    days = [date(2026, 11, 30), date(2026, 12, 1)]
    entries = [
        LedgerEntry(
            day=d,
            table=t,
            dynamodb=Spend(lines={"reads": 10.0}),
            auditor=Spend(lines={"cloudtrail_data_events": 0.01}),
        )
        for d in days
        for t in ("A", "B")
    ]
    summary = week_ledger(entries, controller=True)
    assert summary is not None
    assert [(r.table, r.days, r.auditor_usd, r.dynamodb_usd) for r in summary.rows] == [
        ("A", 2, pytest.approx(0.02), 20.0),
        ("B", 2, pytest.approx(0.02), 20.0),
    ]
    shared = shared_day_entry(days[0], 2, controller=True).auditor.total
    assert shared > shared_day_entry(days[0], 2, controller=False).auditor.total  # the controller's own runs
    assert summary.shared_usd == pytest.approx(2 * shared)
    assert summary.total.auditor_usd == pytest.approx(0.04 + 2 * shared)
    assert summary.total.ratio == pytest.approx((0.04 + 2 * shared) / 40.0)


def test_the_ratio_compares_the_auditor_and_dynamodb_over_the_hours_both_cover() -> None:
    """Issue 30/31: a day's ledger prices DynamoDB for the metrics audit's hours only, while its auditor side holds
    every data-event window and a whole day of fixed costs. The ratio is the auditor's cost over the priced hours
    (their reads, the data events of the windows in them, the day's fixed costs pro-rated) against those hours'
    DynamoDB cost; the stated totals keep every cost; with no priced hour there is no ratio."""
    from auditor.cost.cost_model import data_event_usage
    from auditor.cost.ledger import day_entry, shared_day_entry, week_ledger

    day, hour = date(2026, 12, 5), 1_764_968_400  # 2026-12-05 21:00 UTC
    priced = {f"hour_{hour}": {"dynamodb": {"reads": "2.0"}, "auditor": {"cloudwatch_metrics": "0.001"}}}
    windows = {f"window_{hour + 900}": 1_000, f"window_{hour - 3600}": 100_000, f"window_{hour + 3600}": 200_000}
    e = day_entry(day, None, None, "Orders", priced, windows)
    assert e.hours == (hour,)
    all_events = auditor_spend(data_event_usage(301_000)).total
    in_hour = auditor_spend(data_event_usage(1_000)).total
    assert e.auditor.total == pytest.approx(0.001 + all_events)
    assert e.matched_auditor == pytest.approx(0.001 + in_hour)

    summary = week_ledger([e], controller=False)
    assert summary is not None
    fixed = shared_day_entry(day, 1, controller=False).auditor.total
    assert summary.total.auditor_usd == pytest.approx(0.001 + all_events + fixed)  # every cost stated
    assert summary.total.priced_hours == 1
    assert summary.total.matched_auditor_usd == pytest.approx(0.001 + in_hour + fixed / 24)
    assert summary.total.ratio == pytest.approx((0.001 + in_hour + fixed / 24) / 2.0)
    assert summary.rows[0].ratio == pytest.approx((0.001 + in_hour) / 2.0)
    assert summary.to_dict()["total"]["priced_hours"] == 1

    # data events but no priced hour: both figures stand, no ratio
    unpriced = week_ledger([day_entry(day, None, None, "Orders", {}, windows)], controller=False)
    assert unpriced is not None and unpriced.total.priced_hours == 0
    assert unpriced.total.auditor_usd > 0 and unpriced.total.ratio is None


def test_contributor_insights_rules_and_events_by_mode() -> None:
    from auditor.cost.ledger import insights_usage
    from auditor.models.inventory import ContributorInsights, IndexProfile, TableProfile
    from auditor.models.metrics import MetricSeries, SeriesKey, TableMetrics

    def metrics() -> TableMetrics:
        tm = TableMetrics("T", 0, 7200)
        for index in (None, "G"):
            for metric, value in (("WriteThrottleEvents", 10.0), ("ConsumedReadCapacityUnits", 600.0)):
                key = SeriesKey(metric, "T", index)
                tm.resource(index).series[key.name] = MetricSeries(key, {0: value, 3600: value})
        return tm

    throttled = ContributorInsights(status="ENABLED", mode="THROTTLED_KEYS")
    accessed = ContributorInsights(status="ENABLED", mode="ACCESSED_AND_THROTTLED_KEYS")
    gsi = IndexProfile(name="G", type="GSI", partition_key="g", contributor_insights=accessed)
    p = TableProfile(name="T", sort_key="sk", contributor_insights=throttled, indexes=(gsi,))
    rules, events = insights_usage(p, metrics(), since=3600)
    # table: throttled-keys with a sort key = 2 rules, 10 throttled events x 2; GSI without a sort key in
    # accessed-and-throttled mode = 2 rules, 10 throttled + 600 consumed units (items) in the last hour
    assert (rules, events) == (4, 20 + 610)
    off = TableProfile(name="T", contributor_insights=ContributorInsights(status="DISABLED"))
    assert insights_usage(off, metrics(), since=0) == (0, 0)


# ---------------------------------------------------------------- scans by the page, the per-table cap, a lean stack


def test_scans_are_budgeted_by_the_page_and_capped_per_table() -> None:
    from auditor.cost.plan import SCAN_ROTATION_NAME, pages_per_scan

    assert pages_per_scan(0) == 1 and pages_per_scan(10 * 2**30) == 10 * 1024
    big = TableTraffic("Big", "arn:aws:dynamodb:us-east-1:1:table/Big", 1.0, 1000.0, 1 / 3600, pages_per_scan=10_240)
    small = TableTraffic("Small", "arn:aws:dynamodb:us-east-1:1:table/Small", 1.0, 1000.0, 1 / 3600)
    # budget $20, fixed $10: $10 for data events, so one table's scans may cost $2.50
    plans = [plan_slice([big, small], i, fixed_usd_month=10.0) for i in range(12)]
    big_cost = 10_240 * 730 * 1e-6  # a scan an hour of 10,240 pages: $7.48 a month
    assert any("Big: scans and PartiQL would cost $7.48/month" in n and "one slice in 3" in n for n in plans[0].notes)
    assert plans[0].always_on_usd_month == pytest.approx(big_cost / 3 + 730 * 1e-6)
    assert all(p.scan_capped == (big.arn,) for p in plans)
    rotated = [i for i, p in enumerate(plans) if p.scan_slice == (big.arn,)]
    in_full = [i for i, p in enumerate(plans) if big.table in p.tables]
    assert len(set(rotated) | set(in_full)) >= 4  # one slice in 3 at least (or captured in full)
    logged = [i for i, p in enumerate(plans) if selectors_match(selectors_for(p), "Scan", big.arn, True)]
    assert logged == sorted(set(rotated) | set(in_full))
    assert all(selectors_match(selectors_for(p), "Scan", small.arn, True) for p in plans)
    assert SCAN_ROTATION_NAME in {s["Name"] for s in selectors_for(plans[rotated[0]])}
    # with nothing left for data events, every scan stays logged (the service's floor)
    floor = plan_slice([big, small], 0, fixed_usd_month=50.0)
    assert floor.scan_capped == () and selectors_match(selectors_for(floor), "Scan", big.arn, True)


def test_a_small_budget_runs_a_leaner_stack() -> None:
    from auditor.cost.plan import stack_for_budget

    rich = stack_for_budget(100.0, 100, 60)
    assert rich.shape.dashboard and rich.config.poll_busy and rich.note.startswith("full stack")
    lean = stack_for_budget(30.0, 100, 60)
    assert not lean.shape.dashboard and lean.shape.custom_metrics == 4 and lean.config.poll_busy
    leanest = stack_for_budget(10.0, 100, 60)
    assert not leanest.config.poll_busy and "busy tables read hourly" in leanest.note
    assert leanest.fixed_usd_month < lean.fixed_usd_month < rich.fixed_usd_month
    assert "saves $" in leanest.note


def test_a_capped_table_gets_one_capture_cap_finding_per_period_with_its_figures() -> None:
    from auditor.cost.plan import cap_findings
    from auditor.models.finding import FindingKind

    big = TableTraffic("Big", "arn:aws:dynamodb:us-east-1:1:table/Big", 1.0, 1000.0, 1 / 3600, pages_per_scan=10_240)
    small = TableTraffic("Small", "arn:aws:dynamodb:us-east-1:1:table/Small", 1.0, 1000.0, 1 / 3600)
    day = 86_400 * 20_000
    plans = [plan_slice([big, small], i, fixed_usd_month=10.0) for i in range(3)]
    [cap] = plans[0].scan_caps
    assert (cap.table, cap.every) == ("Big", 3)
    assert cap.expected_pages == pytest.approx(10_240 * 730) and cap.cap_pages == pytest.approx(2.5e6)
    found = [cap_findings(p, day - 86_400, day) for p in plans]
    [f] = found[0]
    assert f.kind is FindingKind.CAPTURE_CAP and (f.account, f.region, f.table) == ("1", "us-east-1", "Big")
    assert not f.missing_evidence()
    assert f.evidence["every"] == 3 and f.evidence["expected_pages"] == 7_475_200
    assert f.evidence["period_end"].endswith("T00:00:00Z") and "about 67%" in f.evidence["not_seen"]
    assert {g.id for fs in found for g in fs} == {f.id}  # the same table, the same finding: deduplicated by its id
    # under the cap (a larger budget) or with nothing left for data events: no finding
    assert (
        cap_findings(plan_slice([big, small], 0, fixed_usd_month=0.0, config=PlannerConfig(budget_percent=5)), 0, 1)
        == []
    )
    assert cap_findings(plan_slice([big, small], 0, fixed_usd_month=50.0), 0, 1) == []


# ---------------------------------------------------------------- Contributor Insights on demand


def test_contributor_insights_on_demand_opens_a_window_at_the_detectors_floor_and_replaces_the_probe() -> None:
    from auditor.cost.plan import insights_cost

    cfg = PlannerConfig(insights_slices=3, burst_reserve=1.0, reserve_up_front=1.0)
    arn = "arn:aws:dynamodb:us-east-1:1:table/"

    def table(name: str, writes: float | None) -> TableTraffic:
        return TableTraffic(name, arn + name, 5.0, 500.0, recent_read_units=0.0, recent_write_units=writes)

    floor, hot, quiet = table("Floor", 300.0), table("Hot", 600.0), table("Quiet", 200.0)
    plan = plan_slice([floor, hot, quiet], 10, fixed_usd_month=1.0, config=cfg)
    assert plan.insights == ("Floor", "Hot")  # 30 % and 60 % of a partition; Quiet (20 %) is below the floor
    assert plan.state.insights == {"Floor": 13, "Hot": 13}
    assert "burst" not in {c.reason for c in plan.captures}  # Contributor Insights names Hot's key: no probe
    assert plan.insights_usd == pytest.approx(insights_cost(floor, 3, cfg) + insights_cost(hot, 3, cfg))
    # 15 minutes of 300 items/s: 270,000 events at $0.03 per million, and two rules for an hour
    assert insights_cost(floor, 3, cfg) == pytest.approx(270_000 * 0.03e-6 + 2 * 0.5 / 730)
    # the next slice, not read: the window goes on, nothing added; read again and still there: extended by a slice
    idle = plan_slice([table("Floor", None)], 11, fixed_usd_month=1.0, state=plan.state, config=cfg)
    assert idle.insights == ("Floor", "Hot") and idle.insights_usd == 0.0
    again = plan_slice([floor], 11, fixed_usd_month=1.0, state=plan.state, config=cfg)
    assert again.state.insights["Floor"] == 14
    assert again.insights_usd == pytest.approx(270_000 / 3 * 0.03e-6 + 2 * 0.5 / 730)
    assert plan_slice([table("Floor", None)], 13, fixed_usd_month=1.0, state=plan.state, config=cfg).insights == ()
    # off by default; and nothing when the reserve is spent (a note says so)
    assert plan_slice([floor, hot], 10, fixed_usd_month=1.0).insights == ()
    poor = plan_slice([floor], 10, fixed_usd_month=5.0, config=cfg)
    assert poor.insights == () and any(
        "Floor: at 30% of a partition but the burst reserve is spent" in n for n in poor.notes
    )


def test_the_share_the_stack_leaves_for_data_events_is_a_setting() -> None:
    from auditor.cost.plan import stack_for_budget

    assert not stack_for_budget(30.0, 100, 60).shape.dashboard  # the default keeps half the budget
    assert stack_for_budget(30.0, 100, 60, PlannerConfig(stack_keep_share=0.1)).shape.dashboard

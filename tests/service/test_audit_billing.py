"""Billing in the live audit: the capacity history built from the billing read's CloudWatch series (from the first
datapoint: the real coverage), the pure ``billing_findings`` on hand-built histories (hand-computed us-east-1
dollars), and the guard in ``evaluate_billing``.

Prices: provisioned $0.00013 / $0.00065 per RCU / WCU-hour; on-demand $0.125 / $0.625 per million RRU / WRU;
storage $0.25 (Standard) / $0.10 (Standard-IA) per GB-month. Monthly = window total x 730 / hours in the window.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from auditor.billing.decide import decide_table
from auditor.exceptions import InputError
from auditor.models.billing import BillingConfig, BillingInput
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.inventory import Capacity, IndexProfile, ScalingTarget, TableProfile
from auditor.models.metrics import MetricSeries, SeriesKey, TableMetrics
from auditor.service import audit
from auditor.service.audit import (
    AuditConfig,
    BillingAuditConfig,
    billing_blocker,
    billing_findings,
    capacity_history,
    covered,
    evaluate_billing,
    evaluate_table,
    table_billing,
    throttled_tables,
)
from auditor.service.record import SOURCE_CLOUDWATCH_BILLING, finding_source

ACCOUNT = "111122223333"
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
DAY = 1440
GIB = 2**30


def profile(
    mode: str = "PROVISIONED",
    read: int = 1000,
    write: int = 1000,
    gsis: tuple[str, ...] = (),
    size_bytes: int | None = None,
    gsi_size_bytes: int | None = None,
    table_class: str | None = None,
) -> TableProfile:
    on_demand = mode == "PAY_PER_REQUEST"
    return TableProfile(
        name="Orders",
        account=ACCOUNT,
        region="us-east-1",
        billing_mode=mode,  # type: ignore[arg-type]
        table_class=table_class,
        size_bytes=size_bytes,
        capacity=Capacity(provisioned_read=0 if on_demand else read, provisioned_write=0 if on_demand else write),
        indexes=tuple(
            IndexProfile(
                name=g,
                type="GSI",
                size_bytes=gsi_size_bytes,
                capacity=Capacity(provisioned_read=0 if on_demand else 5, provisioned_write=0 if on_demand else 5),
            )
            for g in gsis
        ),
    )


def history(
    reads: list[float | None],
    writes: list[float | None],
    *,
    mode: str = "PROVISIONED",
    provisioned: tuple[float, float] | None = (1000, 1000),
    **extra: Any,
) -> dict[str, Any]:
    """A ``ddb-audit billing --input`` document of the table alone, per-minute sums from T0."""
    series: dict[str, Any] = {"index": None, "consumed_read": reads, "consumed_write": writes}
    if mode == "PROVISIONED" and provisioned is not None:
        series["provisioned_read"] = [provisioned[0]] * len(reads)
        series["provisioned_write"] = [provisioned[1]] * len(writes)
    return {
        "table": "Orders",
        "region": "us-east-1",
        "table_class": "STANDARD",
        "billing_mode": mode,
        "start": "2026-01-01T00:00:00Z",
        "period_seconds": 60,
        "series": [series],
        **extra,
    }


def steady(units_per_second: float, days: float) -> list[float | None]:
    return [units_per_second * 60.0] * int(days * DAY)


def only(findings: list[Finding], kind: FindingKind) -> Finding:
    matching = [f for f in findings if f.kind is kind]
    assert len(matching) == 1, [f.title for f in findings]
    return matching[0]


# --------------------------------------------------------------------------------------- billing_findings (pure)


def test_steady_over_provisioned_table_gets_a_billing_mode_finding_with_its_savings() -> None:
    # Given 14 days of a steady 10 RCU/s and 5 WCU/s on a table provisioned at 1,000 RCU and 1,000 WCU
    doc = history(steady(10, 14), steady(5, 14))
    # When the audit's billing step runs on it
    findings = billing_findings(profile(), doc)
    # Then one billing_mode finding: today (1000 x 0.00013 + 1000 x 0.00065) x 730 = $569.40/month; auto scaling at
    # 70 % needs ceil(10 / 0.7) = 15 RCU and ceil(5 / 0.7) = 8 WCU: (15 x 0.00013 + 8 x 0.00065) x 730 = $5.2195
    f = only(findings, FindingKind.BILLING_MODE)
    ev = f.evidence
    assert ev["current_mode"] == ev["recommended_mode"] == "PROVISIONED"
    assert ev["action"] == "adjust_provisioned"
    assert ev["monthly_cost_current"] == pytest.approx(569.40, abs=0.005)
    assert ev["monthly_cost_recommended"] == pytest.approx(5.22, abs=0.005)
    assert ev["monthly_savings"] == pytest.approx(569.40 - 5.2195, abs=0.01)
    # on-demand: (10 x 0.125e-6 + 5 x 0.625e-6) x 3600 x 730 = $11.4975, more than right-sized auto scaling
    assert ev["monthly_cost_on_demand"] == pytest.approx(11.50, abs=0.005)
    assert ev["days_analyzed"] == 14.0 and ev["confidence"] == 1.0
    # The settings to apply: a steady load scales out once and stays, so the lowest minimum is the cheapest; the
    # maximum is twice what the peak needs
    (table_cap,) = ev["capacity"]
    assert (table_cap["read"]["min_capacity"], table_cap["read"]["max_capacity"]) == (1, 30)
    assert (table_cap["write"]["min_capacity"], table_cap["write"]["max_capacity"]) == (1, 16)
    assert table_cap["read"]["target_utilization"] == 70.0
    # $564/month is a medium finding at full confidence; it is the audit's billing read's, with its account
    assert f.severity is Severity.MEDIUM
    assert ev["source"] == "cloudwatch_billing" and finding_source(f) == SOURCE_CLOUDWATCH_BILLING
    assert (f.account, f.region, f.table, f.index) == (ACCOUNT, "us-east-1", "Orders", None)
    assert not f.missing_evidence()


def test_a_one_day_history_is_collecting_data_not_a_recommendation() -> None:
    # Given the same over-provisioned table seen for one day only (the metrics audit's default lookback)
    findings = billing_findings(profile(), history(steady(10, 1), steady(5, 1)))
    # Then no recommendation and no saving under 7 days of history: one info finding says how far the data got
    f = only(findings, FindingKind.BILLING_MODE)
    assert f.title == "Orders: collecting data: 1.0 of 7 days"
    assert "monthly_savings" not in f.evidence and f.evidence["collecting_data"] is True
    assert f.evidence["days_analyzed"] == 1.0 and f.evidence["days_needed"] == 7
    assert f.evidence["confidence"] == pytest.approx(1 / 14, abs=0.001)
    assert f.evidence["recommended_mode"] == f.evidence["current_mode"] == "PROVISIONED"
    # info, never alerted, not in savings figures
    assert f.severity is Severity.INFO and f.evidence["preliminary"] is True
    assert not [x for x in findings if x.kind is FindingKind.TABLE_CLASS]


def test_a_throttled_table_is_not_advised_lower_capacity() -> None:
    # Given the same 14 days of the over-provisioned table, which throttled in the audited period
    doc = history(steady(10, 14), steady(5, 14))
    # Then its capacity is not right-sized down (nor reserved): no billing finding
    assert billing_findings(profile(), doc, throttled=True) == []
    # Throttled tables: the audit's throttling findings name them, or their throttle-event series counted any
    tm = TableMetrics("Orders", T0, T0 + 600, 60)
    put(tm, "ReadThrottleEvents", {3: 0})
    quiet = TableMetrics("Quiet", T0, T0 + 600, 60)
    assert throttled_tables([], {"Orders": tm, "Quiet": quiet}) == set()
    put(tm, "WriteThrottleEvents", {4: 12}, index="byDay")
    assert throttled_tables([], {"Orders": tm, "Quiet": quiet}) == {"Orders"}
    story = Finding.create(
        FindingKind.THROTTLING,
        account=ACCOUNT,
        region="us-east-1",
        table="Quiet",
        discriminator="throttling",
        severity=Severity.HIGH,
        title="Quiet throttles",
        summary="s",
        recommendation="r",
        evidence={},
        first_seen=datetime.fromtimestamp(T0, UTC),
        last_seen=datetime.fromtimestamp(T0 + 60, UTC),
    )
    assert throttled_tables([story], {"Orders": tm, "Quiet": quiet}) == {"Orders", "Quiet"}


def test_spiky_on_demand_table_is_not_switched() -> None:
    # Given an on-demand table idle except one minute of 500 RRU/s every 10 minutes, for 14 days
    reads: list[float | None] = [30_000.0 if m % 10 == 0 else 0.0 for m in range(14 * DAY)]
    doc = history(reads, [0.0] * len(reads), mode="PAY_PER_REQUEST")
    # When billing is decided: on-demand costs 30,000 x 6 x 0.125e-6 = $0.0225/hour; provisioned would either
    # throttle every spike or hold ceil(500 / 0.7) = 715 RCU ($0.093/hour)
    findings = billing_findings(profile(mode="PAY_PER_REQUEST"), doc)
    # Then no switch is recommended
    assert findings == []


def test_storage_heavy_table_gets_a_table_class_finding_from_the_inventory_size() -> None:
    # Given an on-demand table of 900 GiB plus a 100 GiB GSI (DescribeTable), nearly idle for 14 days
    p = profile(mode="PAY_PER_REQUEST", gsis=("byDay",), size_bytes=900 * GIB, gsi_size_bytes=100 * GIB)
    tm = TableMetrics("Orders", T0, T0 + 14 * DAY * 60, 60)
    put(tm, "ConsumedReadCapacityUnits", dict.fromkeys(range(14 * DAY), 60.0))
    doc = capacity_history(p, tm)
    assert doc is not None and doc["table_size_bytes"] == 1000 * GIB
    # When billing is decided: 1,000 GB cost $250/month on Standard and $100 on Standard-IA; 1 RRU/s costs
    # $0.33/month on Standard and $0.41 on Standard-IA
    findings = billing_findings(p, doc)
    # Then a table_class finding recommends Standard-IA, saving about $150/month
    f = only(findings, FindingKind.TABLE_CLASS)
    assert (f.evidence["current_class"], f.evidence["recommended_class"]) == ("STANDARD", "STANDARD_INFREQUENT_ACCESS")
    assert f.evidence["monthly_savings"] == pytest.approx(250 - 100 - (0.155e-6 - 0.125e-6) * 3600 * 730, abs=0.01)
    assert f.evidence["source"] == "cloudwatch_billing" and f.account == ACCOUNT
    assert not f.missing_evidence()
    assert not [x for x in findings if x.kind is FindingKind.BILLING_MODE]


def test_disabled_billing_and_invalid_histories() -> None:
    doc = history(steady(10, 1), steady(5, 1))
    assert billing_findings(profile(), doc, BillingAuditConfig(enabled=False)) == []
    broken = history(steady(10, 1), steady(5, 1), provisioned=None)
    with pytest.raises(InputError, match=r"capacity history of Orders: .*series\[0\]: provisioned_read and"):
        billing_findings(profile(), broken)


def test_evaluator_simulation_can_be_chosen() -> None:
    cfg = BillingAuditConfig(simulation="evaluator")
    f = only(billing_findings(profile(), history(steady(10, 14), steady(5, 14)), cfg), FindingKind.BILLING_MODE)
    assert f.evidence["simulation"] == "evaluator"
    # The evaluator keeps fractional capacity: (10 / 0.7 x 0.00013 + 5 / 0.7 x 0.00065) x 730
    assert f.evidence["monthly_cost_provisioned_simulated"] == pytest.approx(
        (10 / 0.7 * 0.00013 + 5 / 0.7 * 0.00065) * 730, abs=0.005
    )


# ------------------------------------------------------------------------------ history from the audited series


def put(
    tm: TableMetrics,
    metric: str,
    points: dict[int, float],
    index: str | None = None,
    stat: str = "Sum",
    period: int = 60,
) -> None:
    """Datapoints at ``T0 + minute * 60``."""
    key = SeriesKey(metric, tm.table, index, None, stat, period)
    tm.resource(index).series[key.name] = MetricSeries(key, {T0 + m * 60: float(v) for m, v in points.items()})


def test_capacity_history_adds_idle_gsis_and_leaves_provisioned_units_before_the_first_value_unknown() -> None:
    p = profile(mode="PROVISIONED", gsis=("byDay", "idle"))
    tm = TableMetrics("Orders", T0, T0 + 600, 60)
    put(tm, "ConsumedWriteCapacityUnits", {0: 120, 1: 60})
    put(tm, "ProvisionedReadCapacityUnits", {5: 40}, stat="Average", period=300)
    put(tm, "ProvisionedWriteCapacityUnits", {0: 50, 5: 10}, stat="Average", period=300)
    put(tm, "ConsumedReadCapacityUnits", {3: 6}, index="byDay")
    doc = capacity_history(p, tm)
    assert doc is not None
    assert (doc["billing_mode"], doc["start"], doc["period_seconds"], doc["table_class"]) == (
        "PROVISIONED",
        "2026-01-01T00:00:00Z",
        60,
        "STANDARD",
    )
    assert "table_size_bytes" not in doc  # unknown size: no table-class hint
    table, by_day, idle = doc["series"]
    assert [s["index"] for s in doc["series"]] == [None, "byDay", "idle"]
    assert table["consumed_write"] == [120, 60, 0, 0, 0, 0, 0, 0, 0, 0]
    assert table["provisioned_read"] == [None] * 5 + [40] * 5
    assert table["provisioned_write"] == [50] * 5 + [10] * 5
    assert by_day["consumed_read"] == [0, 0, 0, 6, 0, 0, 0, 0, 0, 0]
    assert by_day["provisioned_read"] is None  # no series in CloudWatch: the blocker says so
    assert idle["consumed_read"] == idle["consumed_write"] == [0.0] * 10
    assert billing_blocker(p, tm) == (
        "index byDay: no ProvisionedReadCapacityUnits, ProvisionedWriteCapacityUnits in CloudWatch "
        "(the capacity in force is unknown)"
    )
    # An unknown billing mode has no history
    unknown = p.model_copy(update={"billing_mode": "unknown"})
    assert capacity_history(unknown, tm) is None and billing_blocker(unknown, tm) == "billing mode unknown"


def test_billing_blockers() -> None:
    on_demand = profile(mode="PAY_PER_REQUEST")
    tm = TableMetrics("Orders", T0, T0 + 600, 60)
    tm.resource(None)
    assert billing_blocker(on_demand, tm) == "on-demand and no consumed capacity"
    put(tm, "ConsumedReadCapacityUnits", {0: 60})
    assert billing_blocker(on_demand, tm) is None
    tm.resource(None).unavailable.add("ConsumedWriteCapacityUnits")
    assert billing_blocker(on_demand, tm) == "table: ConsumedWriteCapacityUnits could not be read"
    # A provisioned table with provisioned series but no consumption is decided (idle capacity is the costly case)
    idle = TableMetrics("Orders", T0, T0 + 600, 60)
    put(idle, "ProvisionedReadCapacityUnits", {0: 1000}, stat="Average", period=300)
    put(idle, "ProvisionedWriteCapacityUnits", {0: 1000}, stat="Average", period=300)
    assert billing_blocker(profile(), idle) is None


# ----------------------------------------------------------------------------------------------- evaluate_table


def over_provisioned_metrics(minutes: int) -> TableMetrics:
    tm = TableMetrics("Orders", T0, T0 + minutes * 60, 60)
    put(tm, "ConsumedReadCapacityUnits", dict.fromkeys(range(minutes), 600.0))
    put(tm, "ConsumedWriteCapacityUnits", dict.fromkeys(range(minutes), 300.0))
    put(tm, "ProvisionedReadCapacityUnits", dict.fromkeys(range(0, minutes, 5), 1000.0), stat="Average", period=300)
    put(tm, "ProvisionedWriteCapacityUnits", dict.fromkeys(range(0, minutes, 5), 1000.0), stat="Average", period=300)
    return tm


def test_billing_is_decided_on_its_own_read_not_with_the_window_detectors() -> None:
    # The window detectors leave billing out: it has its own (14-day) read
    errors: list[str] = []
    assert FindingKind.BILLING_MODE not in {
        f.kind for f in evaluate_table(profile(), over_provisioned_metrics(DAY), AuditConfig(), errors)
    }
    f = only(
        evaluate_billing(profile(), over_provisioned_metrics(14 * DAY), BillingAuditConfig(), errors),
        FindingKind.BILLING_MODE,
    )
    assert f.evidence["monthly_savings"] == pytest.approx(569.40 - 5.2195, abs=0.01)
    assert errors == []
    off = BillingAuditConfig(enabled=False)
    assert evaluate_billing(profile(), over_provisioned_metrics(DAY), off) == []


def test_a_billing_failure_is_an_error_entry_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: Any, **_k: Any) -> Any:
        raise ValueError("planted billing failure")

    monkeypatch.setattr(audit, "analyze_billing", boom)
    errors: list[str] = []
    findings = evaluate_billing(profile(), over_provisioned_metrics(60), BillingAuditConfig(), errors)
    assert errors == ["billing on Orders: ValueError: planted billing failure"]
    assert findings == []


def test_the_history_starts_where_the_table_can_have_data_so_days_analyzed_is_the_coverage() -> None:
    # Given a 14-day billing read of a table whose data starts 8 days before the end (created then, or CloudWatch no
    # longer has the older minutes)
    tm = TableMetrics("Orders", T0, T0 + 14 * DAY * 60, 60)
    first = 6 * DAY
    put(tm, "ConsumedReadCapacityUnits", dict.fromkeys(range(first + 2, 14 * DAY), 600.0))
    put(tm, "ConsumedWriteCapacityUnits", dict.fromkeys(range(first + 2, 14 * DAY), 300.0))
    put(
        tm, "ProvisionedReadCapacityUnits", dict.fromkeys(range(first, 14 * DAY, 5), 1000.0), stat="Average", period=300
    )
    put(
        tm,
        "ProvisionedWriteCapacityUnits",
        dict.fromkeys(range(first, 14 * DAY, 5), 1000.0),
        stat="Average",
        period=300,
    )
    window = covered(profile(), tm)
    assert (window.start, window.end) == (T0 + first * 60, tm.end)
    assert window.resources is tm.resources
    # When billing is decided
    f = only(table_billing(profile(), tm, BillingAuditConfig()), FindingKind.BILLING_MODE)
    # Then it analysed the 8 days CloudWatch has, not 14 days of which 6 were padded with zeros, and says so
    assert f.evidence["days_analyzed"] == 8.0
    assert f.evidence["confidence"] == pytest.approx(8 / 14, abs=0.001)
    assert f.evidence["monthly_savings"] == pytest.approx(569.40 - 5.2195, abs=0.05)
    # A read without any datapoint is left as it is (the blocker says why it cannot be decided)
    empty = TableMetrics("Orders", T0, T0 + 600, 60)
    assert covered(profile(), empty) is empty


def test_an_idle_start_of_an_older_table_is_idle_time_not_missing_time() -> None:
    # An on-demand table created 10 days into the window whose first traffic came 3 days before the end: its history
    # starts at its creation (the 7 quiet days were idle), not at the first datapoint
    created = datetime.fromtimestamp(T0 + 10 * DAY * 60, UTC).isoformat()
    p = profile(mode="PAY_PER_REQUEST").model_copy(update={"created": created})
    tm = TableMetrics("Orders", T0, T0 + 14 * DAY * 60, 60)
    put(tm, "ConsumedReadCapacityUnits", dict.fromkeys(range(11 * DAY, 14 * DAY), 600.0))
    assert covered(p, tm).start == T0 + 10 * DAY * 60
    # A table older than the window covers all of it (data or not); a table re-created under the same name keeps the
    # name's older datapoints
    old = p.model_copy(update={"created": datetime.fromtimestamp(T0 - 3600, UTC).isoformat()})
    assert covered(old, tm) is tm
    recreated = p.model_copy(update={"created": datetime.fromtimestamp(T0 + 13 * DAY * 60, UTC).isoformat()})
    assert covered(recreated, tm).start == T0 + 11 * DAY * 60
    doc = capacity_history(p, covered(p, tm))
    assert doc is not None and len(doc["series"][0]["consumed_read"]) == 4 * DAY  # the 4 days since its creation
    assert doc["series"][0]["consumed_read"][:DAY] == [0.0] * DAY  # its first (idle) day counts as idle


def test_capacity_history_carries_the_auto_scaling_settings_in_force_and_the_result_compares_them() -> None:
    scaling = (
        ScalingTarget(access="read", min_capacity=100, max_capacity=200, target_utilization=70.0),
        ScalingTarget(access="write", min_capacity=5, max_capacity=50, target_utilization=None),
    )
    p = profile(mode="PROVISIONED", gsis=("byDay",))
    p = p.model_copy(update={"capacity": p.capacity.model_copy(update={"auto_scaling": scaling})})
    tm = TableMetrics("Orders", T0, T0 + 600, 60)
    put(tm, "ConsumedReadCapacityUnits", dict.fromkeys(range(10), 4200))
    doc = capacity_history(p, tm)
    assert doc is not None
    table, gsi = doc["series"]
    assert table["auto_scaling"] == {
        "read": {"min_capacity": 100, "max_capacity": 200, "target_utilization": 70.0},
        "write": {"min_capacity": 5, "max_capacity": 50, "target_utilization": None},
    }
    assert "auto_scaling" not in gsi  # the GSI has no scalable target
    for s in doc["series"]:
        s["provisioned_read"] = s["provisioned_write"] = [100.0] * 10
    inp = BillingInput.from_document(doc, "audit")
    result, _ = decide_table(inp, config=BillingConfig(read={"min_capacity": 100}))
    read = result.capacity[0].read
    assert read.current is not None and (read.current.min_capacity, read.current.max_capacity) == (100, 200)
    assert read.already_optimal is True  # 70 units/s: 100-200 at 70 % is what the simulation keeps
    assert result.capacity[0].write.already_optimal is False
    assert result.capacity[1].read.current is None and result.capacity[1].read.already_optimal is None

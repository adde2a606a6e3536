"""The per-table billing decision, with hand-computed dollar figures (us-east-1 list prices).

Prices: on-demand $0.125 / $0.625 per million RRU / WRU; provisioned $0.00013 / $0.00065 per RCU / WCU-hour;
Standard-IA $0.155 / $0.78 per million, $0.00016 / $0.00081 per hour; storage $0.25 / $0.10 per GB-month.
Monthly = window total x 730 / hours in the window. A steady ``L`` units/s costs ``L * 3600 * 730 * P_req`` on
demand per month and ``ceil(L / 0.7) * 730 * P_hr`` provisioned (aws simulation, target 70 %).
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from typing import Any

import pytest

from auditor.billing.decide import analyze_billing, decide_table
from auditor.billing.pricing import bundled_prices
from auditor.billing.simulate import EvaluatorParams, ScalingPolicy
from auditor.models.billing import BillingConfig, BillingInput, DimensionSettings, Simulation
from auditor.models.finding import REQUIRED_EVIDENCE, FindingKind, Severity
from tests import billing_reference as reference

DAY = 1440
DAYS = 14
MONTH_SECONDS = 3600 * 730
START = datetime(2026, 11, 1, tzinfo=UTC)


def rate(units_per_second: float, minutes: int = DAYS * DAY) -> list[float | None]:
    return [units_per_second * 60.0] * minutes


def daily(shape: Any, days: int = DAYS) -> list[float | None]:
    """Per-minute sums from ``shape(minute_of_day) -> units per second``."""
    return [shape(i % DAY) * 60.0 for i in range(days * DAY)]


def make(
    reads: list[float | None],
    writes: list[float | None],
    *,
    mode: str = "PAY_PER_REQUEST",
    provisioned: tuple[float, float] | None = None,
    gsis: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> BillingInput:
    table: dict[str, Any] = {"index": None, "consumed_read": reads, "consumed_write": writes}
    if provisioned is not None:
        table["provisioned_read"] = [provisioned[0]] * len(reads)
        table["provisioned_write"] = [provisioned[1]] * len(writes)
    doc: dict[str, Any] = {
        "table": "Orders",
        "region": "us-east-1",
        "billing_mode": mode,
        "start": START.isoformat(),
        "series": [table, *(gsis or [])],
        **extra,
    }
    return BillingInput.model_validate(doc)


def provisioned_monthly(rcu: float, wcu: float, ia: bool = False) -> float:
    return (rcu * (0.00016 if ia else 0.00013) + wcu * (0.00081 if ia else 0.00065)) * 730


def on_demand_monthly(rps: float, wps: float, ia: bool = False) -> float:
    return (rps * (0.155e-6 if ia else 0.125e-6) + wps * (0.78e-6 if ia else 0.625e-6)) * MONTH_SECONDS


# ------------------------------------------------------------------------------------------------ on-demand


def test_steady_on_demand_table_switches_to_provisioned() -> None:
    analysis = analyze_billing(make(rate(100), rate(20)))
    r = analysis.result
    assert r.monthly_cost_on_demand == pytest.approx(on_demand_monthly(100, 20), rel=1e-9)  # $65.70
    assert r.monthly_cost_on_demand == pytest.approx(65.70, rel=1e-9)
    # ceil(100 / 0.7) = 143 RCU, ceil(20 / 0.7) = 29 WCU: $27.3312/month.
    assert r.monthly_cost_provisioned_simulated == pytest.approx(provisioned_monthly(143, 29), rel=1e-9)
    assert (r.action, r.current_mode, r.recommended_mode) == ("switch_to_provisioned", "PAY_PER_REQUEST", "PROVISIONED")
    assert r.monthly_cost_current == r.monthly_cost_on_demand
    assert r.monthly_savings == pytest.approx(65.70 - 27.3312, rel=1e-9)
    assert r.days_analyzed == 14.0 and r.confidence == 1.0 and r.confidence_label == "high"
    assert r.throttling.modelled and r.throttling.throttled_share == 0.0
    # Window totals per dimension: 100 RRU/s for 14 days = 120,960,000 RRU = $15.12.
    read = r.series[0].read
    assert read.on_demand_cost == pytest.approx(15.12, rel=1e-12)
    assert read.provisioned_cost_simulated == pytest.approx(143 * 336 * 0.00013, rel=1e-12)
    assert read.provisioned_cost_current == 0.0
    assert read.recommended_mode == "PROVISIONED"
    cap = r.capacity[0]
    assert (cap.read.target_utilization, cap.read.max_capacity, cap.write.max_capacity) == (70.0, 286, 58)
    # Steady 143 RCU: one block of 100 reserved RCU pays off. For 29 WCU a 1-year block (100 x $0.000299/h) costs
    # more than the 29 WCU ($0.01885/h), a 3-year block (100 x $0.0001495/h) less.
    assert r.reserved_capacity is not None
    one_year = next(t for t in r.reserved_capacity.terms if t.dimension == "read" and t.years == 1)
    offer = bundled_prices("us-east-1").reserved_offer("read", 1)
    assert offer is not None
    assert (one_year.units, one_year.upfront) == (100, 30.0)
    assert one_year.monthly_savings == pytest.approx(100 * (0.00013 - offer.per_unit_hour) * 730, rel=1e-9)
    writes = [(t.years, t.units) for t in r.reserved_capacity.terms if t.dimension == "write"]
    assert writes == [(3, 100)]
    three_year = bundled_prices("us-east-1").reserved_offer("write", 3)
    assert three_year is not None
    (write_term,) = [t for t in r.reserved_capacity.terms if t.dimension == "write"]
    assert write_term.monthly_savings == pytest.approx((29 * 0.00065 - 100 * three_year.per_unit_hour) * 730, rel=1e-9)
    # The finding carries the SPEC evidence.
    (finding,) = analysis.findings
    assert finding.kind == FindingKind.BILLING_MODE and finding.severity == Severity.LOW
    assert not finding.missing_evidence()
    assert finding.evidence["monthly_savings"] == pytest.approx(38.37, abs=0.01)
    assert "PROVISIONED" in finding.recommendation and "1-286 at 70%" in finding.recommendation


def test_evaluator_mode_tracks_fractional_capacity_and_uses_its_labels() -> None:
    r = analyze_billing(make(rate(100), rate(20)), simulation="evaluator").result
    # f(100) = 142.857..., f(20) = 28.571...: no rounding to whole units in the archived tool.
    assert r.monthly_cost_provisioned_simulated == pytest.approx(provisioned_monthly(100 / 0.7, 20 / 0.7), rel=1e-9)
    assert r.series[0].read.recommended_mode == "Provisioned"
    assert r.throttling.modelled is False and r.throttling.throttled_share is None
    assert r.series[0].read.throttled_units is None
    assert r.simulation == "evaluator"


def test_one_hour_daily_spike_stays_on_demand_with_aws_but_not_with_the_evaluator() -> None:
    spiky = make(daily(lambda m: 2000 if m < 60 else 0), rate(0))
    aws = analyze_billing(spiky).result
    # 2,000 RRU/s for one hour a day: 7.2 M RRU/day = $0.90/day = $27.375/month on demand.
    assert aws.monthly_cost_on_demand == pytest.approx(0.90 * 730 / 24, rel=1e-9)
    assert aws.action == "keep" and aws.recommended_mode == "PAY_PER_REQUEST"
    # Only a minimum capacity at the spike's level avoids throttling, and that costs more than on-demand.
    assert aws.monthly_cost_provisioned_simulated > aws.monthly_cost_on_demand
    assert aws.throttling.acceptable
    # The archived evaluator scales instantly and never throttles: it recommends provisioned.
    evaluator = analyze_billing(spiky, simulation="evaluator").result
    assert evaluator.action == "switch_to_provisioned"
    assert evaluator.monthly_cost_provisioned_simulated < evaluator.monthly_cost_on_demand


def test_day_night_step_searches_a_minimum_capacity_that_does_not_throttle() -> None:
    def day(m: int) -> float:
        return 300 if 480 <= m < 1200 else 0

    def day_writes(m: int) -> float:
        return 30 if 480 <= m < 1200 else 0

    step = make(daily(day), daily(day_writes))
    r = analyze_billing(step).result
    # 12 busy hours a day: reads 300 x 43,200 x $0.125/M + writes 30 x 43,200 x $0.625/M = $2.43/day.
    assert r.monthly_cost_on_demand == pytest.approx(2.43 * 730 / 24, rel=1e-9)
    assert r.throttling.acceptable
    assert r.throttling.throttled_share is not None and r.throttling.throttled_share <= 0.001
    assert r.capacity[0].read.min_capacity > 1  # waking from 1 unit would throttle for an hour every morning
    # Without the search (minimum 1 unit), the morning ramp throttles: provisioned is not recommended.
    no_search = analyze_billing(step, config=BillingConfig(search_min_capacity=False)).result
    assert no_search.throttling.acceptable is False
    assert no_search.throttling.throttled_share is not None and no_search.throttling.throttled_share > 0.001
    assert no_search.action == "keep"
    assert "throttling" in no_search.reason
    assert no_search.monthly_cost_provisioned_simulated < no_search.monthly_cost_on_demand


def test_gsis_are_summed_into_one_table_decision() -> None:
    gsi = {"index": "by-customer", "consumed_read": rate(30), "consumed_write": rate(20)}
    r = analyze_billing(make(rate(100), rate(20), gsis=[gsi])).result
    assert [s.index for s in r.series] == [None, "by-customer"]
    assert r.monthly_cost_on_demand == pytest.approx(on_demand_monthly(130, 40), rel=1e-9)
    # Each GSI has its own auto scaling: ceil(30 / 0.7) = 43 RCU, 29 WCU.
    assert r.monthly_cost_provisioned_simulated == pytest.approx(provisioned_monthly(143 + 43, 29 + 29), rel=1e-9)
    window = 730 / (DAYS * 24)
    total_od = sum(s.read.on_demand_cost + s.write.on_demand_cost for s in r.series)
    assert r.monthly_cost_on_demand == pytest.approx(total_od * window, rel=1e-12)
    assert [c.index for c in r.capacity] == [None, "by-customer"]
    assert r.capacity[1].read.max_capacity == 86


# ---------------------------------------------------------------------------------------------- provisioned


def test_over_provisioned_table_is_right_sized() -> None:
    r = analyze_billing(make(rate(100), rate(20), mode="PROVISIONED", provisioned=(1000, 200))).result
    assert r.monthly_cost_provisioned_current == pytest.approx(provisioned_monthly(1000, 200), rel=1e-9)  # $189.80
    assert r.monthly_cost_current == pytest.approx(189.80, rel=1e-9)
    assert r.action == "adjust_provisioned" and r.recommended_mode == "PROVISIONED"
    assert r.monthly_cost_recommended == pytest.approx(provisioned_monthly(143, 29), rel=1e-9)
    assert r.series[0].read.provisioned_cost_current == pytest.approx(1000 * 336 * 0.00013, rel=1e-12)


def test_right_sized_provisioned_table_is_kept() -> None:
    analysis = analyze_billing(make(rate(100), rate(20), mode="PROVISIONED", provisioned=(143, 29)))
    r = analysis.result
    assert r.action == "keep" and r.recommended_mode == "PROVISIONED" and r.monthly_savings == 0.0
    assert r.monthly_cost_current == pytest.approx(provisioned_monthly(143, 29), rel=1e-9)
    assert analysis.findings == []


def test_savings_under_the_margin_keep_the_current_settings() -> None:
    # 150/30 units cost $28.47/month against $27.33 simulated: 4 % < the 10 % margin.
    r = analyze_billing(make(rate(100), rate(20), mode="PROVISIONED", provisioned=(150, 30))).result
    assert r.monthly_cost_current == pytest.approx(provisioned_monthly(150, 30), rel=1e-9)
    assert r.action == "keep" and "10%" in r.reason
    lax = analyze_billing(
        make(rate(100), rate(20), mode="PROVISIONED", provisioned=(150, 30)), config=BillingConfig(margin=0.01)
    ).result
    assert lax.action == "adjust_provisioned"


def test_idle_provisioned_table_switches_to_on_demand() -> None:
    analysis = analyze_billing(make(rate(0), rate(0), mode="PROVISIONED", provisioned=(5, 5)))
    r = analysis.result
    assert r.action == "switch_to_on_demand" and r.recommended_mode == "PAY_PER_REQUEST"
    assert r.monthly_cost_current == pytest.approx(provisioned_monthly(5, 5), rel=1e-9)  # $2.847
    assert r.monthly_cost_recommended == 0.0
    assert r.monthly_savings == pytest.approx(2.847, rel=1e-9)
    (finding,) = analysis.findings
    assert "PAY_PER_REQUEST" in finding.recommendation
    assert finding.evidence["recommended_mode"] == "PAY_PER_REQUEST"


def test_provisioned_input_needs_the_provisioned_series() -> None:
    with pytest.raises(ValueError, match="provisioned_read and provisioned_write are required"):
        make(rate(1), rate(1), mode="PROVISIONED")


# ----------------------------------------------------------------------------------------- classes, prices


def test_standard_ia_tables_are_priced_at_ia_rates() -> None:
    r = analyze_billing(make(rate(100), rate(20), table_class="STANDARD_INFREQUENT_ACCESS")).result
    assert r.monthly_cost_on_demand == pytest.approx(on_demand_monthly(100, 20, ia=True), rel=1e-9)  # $81.73
    assert r.monthly_cost_provisioned_simulated == pytest.approx(provisioned_monthly(143, 29, ia=True), rel=1e-9)
    assert r.reserved_capacity is None  # reserved capacity does not apply to Standard-IA


def test_storage_heavy_table_gets_a_standard_ia_hint_and_finding() -> None:
    analysis = analyze_billing(make(rate(100), rate(20), table_size_bytes=1000 * 2**30))
    hint = analysis.result.table_class_hint
    assert hint is not None
    # Standard: 1,000 GB x $0.25 + provisioned throughput; Standard-IA: 1,000 x $0.10 + IA provisioned throughput.
    standard = 250 + provisioned_monthly(143, 29)
    ia = 100 + provisioned_monthly(143, 29, ia=True)
    assert hint.monthly_cost_standard == pytest.approx(standard, rel=1e-9)
    assert hint.monthly_cost_standard_ia == pytest.approx(ia, rel=1e-9)
    assert hint.recommended_class == "STANDARD_INFREQUENT_ACCESS"
    assert hint.monthly_savings == pytest.approx(standard - ia, rel=1e-9)
    assert hint.storage_share == pytest.approx(250 / standard, rel=1e-9)
    kinds = {f.kind: f for f in analysis.findings}
    table_class = kinds[FindingKind.TABLE_CLASS]
    assert not table_class.missing_evidence()
    assert table_class.severity == Severity.MEDIUM  # $143/month
    assert table_class.evidence["recommended_class"] == "STANDARD_INFREQUENT_ACCESS"


def test_busy_ia_table_with_little_storage_is_told_to_go_back_to_standard() -> None:
    analysis = analyze_billing(
        make(rate(100), rate(20), table_class="STANDARD_INFREQUENT_ACCESS", table_size_bytes=2**30)
    )
    hint = analysis.result.table_class_hint
    assert hint is not None and hint.recommended_class == "STANDARD"
    assert hint.monthly_savings == pytest.approx(hint.monthly_cost_standard_ia - hint.monthly_cost_standard)


def test_no_table_size_no_table_class_hint() -> None:
    analysis = analyze_billing(make(rate(100), rate(20)))
    assert analysis.result.table_class_hint is None
    assert all(f.kind != FindingKind.TABLE_CLASS for f in analysis.findings)


def test_unknown_region_uses_labelled_default_prices_and_warns() -> None:
    inp = make(rate(100), rate(20)).model_copy(update={"region": "ap-south-2"})
    analysis = analyze_billing(inp)
    assert analysis.result.pricing["fallback"] is True
    assert analysis.result.pricing["region"] == "ap-south-2"
    assert any("ap-south-2" in w for w in analysis.warnings)
    assert analysis.findings[0].evidence["pricing"]["fallback"] is True


# -------------------------------------------------------------------------------------- data, coverage


def test_gaps_are_zero_load_for_aws_and_dropped_for_the_evaluator() -> None:
    reads = rate(100)
    reads[DAY : 2 * DAY] = [None] * DAY  # CloudWatch returned nothing for day 2
    writes = rate(20)
    writes[DAY : 2 * DAY] = [None] * DAY
    inp = make(reads, writes)
    aws = analyze_billing(inp).result
    assert aws.coverage == pytest.approx(13 / 14, abs=1e-4)
    assert aws.confidence == pytest.approx(13 / 14, abs=1e-3) and aws.confidence_label == "high"
    assert aws.monthly_cost_on_demand == pytest.approx(on_demand_monthly(100, 20) * 13 / 14, rel=1e-9)
    assert any("missing" in n for n in aws.notes)
    # aws bills the missing day at the capacity the simulation holds (at least the minimum), the evaluator bills
    # nothing for hours without datapoints.
    evaluator = analyze_billing(inp, simulation="evaluator").result
    assert evaluator.monthly_cost_provisioned_simulated == pytest.approx(
        provisioned_monthly(100 / 0.7, 20 / 0.7) * 13 / 14, rel=1e-9
    )
    assert aws.monthly_cost_provisioned_simulated > provisioned_monthly(143, 29) * 13 / 14


def test_confidence_follows_the_days_covered() -> None:
    short = analyze_billing(make(rate(100, 3 * DAY), rate(20, 3 * DAY)))
    r = short.result
    assert r.days_analyzed == 3.0
    assert r.confidence == pytest.approx(3 / 14, abs=1e-3) and r.confidence_label == "low"
    # Monthly figures use 730 h whatever the window: 3 days of $2.16/day on demand.
    assert r.monthly_cost_on_demand == pytest.approx(on_demand_monthly(100, 20), rel=1e-9)
    (finding,) = short.findings
    assert finding.severity == Severity.INFO  # 3 days: preliminary (under the 7 days a recommendation needs)
    assert finding.evidence["preliminary"] is True


def test_five_minute_periods_are_spread_over_their_minutes() -> None:
    five = BillingInput.model_validate(
        {
            "table": "Orders",
            "billing_mode": "PAY_PER_REQUEST",
            "start": "2026-11-01T00:00:00Z",
            "period_seconds": 300,
            "series": [{"index": None, "consumed_read": [30000.0] * 2016, "consumed_write": [6000.0] * 2016}],
        }
    )
    r = analyze_billing(five).result
    assert r.days_analyzed == 7.0
    assert r.monthly_cost_on_demand == pytest.approx(on_demand_monthly(100, 20), rel=1e-9)
    assert any("300-second periods" in n for n in r.notes)


def test_evaluator_mode_window_totals_match_the_evaluator_rules() -> None:
    rng = random.Random(5)
    n = 3 * DAY
    reads: list[float | None] = []
    writes: list[float | None] = []
    level = 50.0
    for _ in range(n):
        if rng.random() < 0.02:
            level = rng.choice([0.0, 5.0, 50.0, 400.0])
        reads.append(None if rng.random() < 0.03 else level * 60 * rng.uniform(0.7, 1.3))
        writes.append(None if rng.random() < 0.03 else level * 12 * rng.uniform(0.7, 1.3))
    inp = make(reads, writes, mode="PROVISIONED", provisioned=(300, 80))
    r = decide_table(inp, simulation="evaluator")[0]
    # The same totals straight from the rule-by-rule reference implementation and the hourly costing.
    start = int(START.timestamp()) // 60
    rm = [start + i for i, v in enumerate(reads) if v is not None]
    wm = [start + i for i, v in enumerate(writes) if v is not None]
    params = EvaluatorParams(read=ScalingPolicy(70, 1, 80_000), write=ScalingPolicy(70, 1, 80_000))
    ref = reference.evaluator_naive(
        [v for v in reads if v is not None],
        [v for v in writes if v is not None],
        params,
        read_minutes=rm,
        write_minutes=wm,
    )
    read, write = r.series[0].read, r.series[0].write
    assert read.provisioned_cost_simulated == pytest.approx(ref.read.unit_hours * 0.00013, rel=1e-6)
    assert write.provisioned_cost_simulated == pytest.approx(ref.write.unit_hours * 0.00065, rel=1e-6)
    assert read.on_demand_cost == pytest.approx(ref.read.consumed_units * 0.125e-6, rel=1e-6)
    assert write.on_demand_cost == pytest.approx(ref.write.consumed_units * 0.625e-6, rel=1e-6)
    # Current provisioned: the hourly mean of 300 RCU over the hours the estimate covers.
    assert read.provisioned_cost_current == pytest.approx(len(ref.read.hours) * 300 * 0.00013, rel=1e-6)
    assert read.recommended_mode in {"Provisioned", "Provisioned_Modify", "Ondemand"}


def test_finding_ids_are_stable_and_evidence_complete() -> None:
    a = analyze_billing(make(rate(100), rate(20), table_size_bytes=1000 * 2**30), account="111122223333")
    b = analyze_billing(make(rate(90), rate(20), table_size_bytes=1000 * 2**30), account="111122223333")
    assert [f.id for f in a.findings] == [f.id for f in b.findings]
    for f in a.findings:
        assert set(REQUIRED_EVIDENCE[f.kind]) <= set(f.evidence)
        assert f.account == "111122223333" and f.region == "us-east-1"
        assert f.first_seen == START and f.last_seen == datetime(2026, 11, 15, tzinfo=UTC)


def test_big_savings_raise_the_severity() -> None:
    r = analyze_billing(make(rate(0), rate(0), mode="PROVISIONED", provisioned=(20_000, 5_000)))
    (finding,) = r.findings
    # (20,000 x 0.00013 + 5,000 x 0.00065) x 730 = $4,270.50/month
    assert finding.evidence["monthly_savings"] == pytest.approx(4270.5, abs=0.01)
    assert finding.severity == Severity.HIGH


def test_monthly_convention_is_730_hours() -> None:
    r = analyze_billing(make(rate(10, DAY), rate(0, DAY))).result
    window = r.series[0].read.on_demand_cost
    assert window == pytest.approx(10 * 86_400 * 0.125e-6, rel=1e-12)
    assert r.monthly_cost_on_demand == pytest.approx(window * 730 / 24, rel=1e-12)
    assert math.isclose(r.days_analyzed, 1.0)


# ------------------------------------------------------------------------------------ settings per dimension


def test_reads_and_writes_take_their_own_target_minimum_and_maximum() -> None:
    # Steady 70 RCU/s and 35 WCU/s. Reads at 50 % need ceil(70 / 0.5) = 140 units; writes keep the shared 70 %
    # (ceil(35 / 0.7) = 50) but with a configured minimum of 80 they never go below 80.
    inp = make(rate(70, 2 * DAY), rate(35, 2 * DAY))
    cfg = BillingConfig(read={"target_utilization": 50}, write={"min_capacity": 80, "max_capacity": 120})
    result, _ = decide_table(inp, config=cfg)
    (setting,) = result.capacity
    assert (setting.read.target_utilization, setting.write.target_utilization) == (50.0, 70.0)
    assert (setting.write.min_capacity, setting.write.max_capacity) == (80, 120)
    hours = 2 * 24
    series = result.series[0]
    assert series.read.provisioned_cost_simulated == pytest.approx(140 * hours * 0.00013)
    assert series.write.provisioned_cost_simulated == pytest.approx(80 * hours * 0.00065)
    assert series.read.simulated_max_capacity == 2 * 140  # twice the peak need, computed at the read target
    # The defaults are the shared settings: 70 % and the searched minimum for both.
    default, _ = decide_table(inp)
    assert default.series[0].read.provisioned_cost_simulated == pytest.approx(100 * hours * 0.00013)
    assert default.series[0].write.provisioned_cost_simulated == pytest.approx(50 * hours * 0.00065)


def test_the_evaluator_simulates_the_per_dimension_policies_it_is_given() -> None:
    rng = random.Random(5)
    reads = [rng.choice([0.0, 600.0, 6000.0]) for _ in range(DAY)]
    writes = [rng.choice([0.0, 60.0, 900.0]) for _ in range(DAY)]
    cfg = BillingConfig(read={"target_utilization": 45, "min_capacity": 3}, write={"max_capacity": 20})
    result, _ = decide_table(make(reads, writes), simulation="evaluator", config=cfg)
    params = EvaluatorParams(read=ScalingPolicy(45, 3, 80_000), write=ScalingPolicy(70, 1, 20))
    want = reference.evaluator_naive(reads, writes, params, start_minute=int(START.timestamp()) // 60)
    got = result.series[0]
    assert got.read.provisioned_cost_simulated == pytest.approx(want.read.unit_hours * 0.00013, rel=1e-12)
    assert got.write.provisioned_cost_simulated == pytest.approx(want.write.unit_hours * 0.00065, rel=1e-12)


def test_settings_in_force_are_shown_next_to_the_simulated_ones() -> None:
    # Steady 70/35 units/s with fixed minimums: simulated reads 100-200 at 70 %, writes 50-100 at 70 %.
    cfg = BillingConfig(read={"min_capacity": 100}, write={"min_capacity": 50})
    table: dict[str, Any] = {
        "index": None,
        "consumed_read": rate(70, DAY),
        "consumed_write": rate(35, DAY),
        "auto_scaling": {
            "read": {"min_capacity": 100, "max_capacity": 200, "target_utilization": 70.0},
            "write": {"min_capacity": 5, "max_capacity": 4000, "target_utilization": 70.0},
        },
    }
    doc = {"table": "Orders", "billing_mode": "PAY_PER_REQUEST", "start": START.isoformat(), "series": [table]}
    result, _ = decide_table(BillingInput.from_document(doc, "t"), config=cfg)
    (setting,) = result.capacity
    assert (setting.read.min_capacity, setting.read.max_capacity) == (100, 200)
    assert setting.read.current is not None and setting.read.already_optimal is True
    assert setting.write.current is not None and setting.write.current.max_capacity == 4000
    assert setting.write.already_optimal is False
    # Without them, nothing is claimed.
    assert decide_table(make(rate(70, DAY), rate(35, DAY)), config=cfg)[0].capacity[0].read.already_optimal is None


def test_per_dimension_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="min_capacity 10 is above max_capacity 5"):
        BillingConfig(read={"min_capacity": 10, "max_capacity": 5})
    with pytest.raises(ValueError):
        BillingConfig(write={"target_utilization": 95})


def test_a_throttled_table_is_never_advised_lower_or_reserved_capacity() -> None:
    """Consumption at the provisioned capacity in force is throttling: no right-sizing, no reserved capacity."""
    reads = rate(100.0)
    reads[DAY] = 400.0 * 60  # one minute at the 400 RCU provisioned
    r, _ = decide_table(make(reads, rate(20.0), mode="PROVISIONED", provisioned=(400.0, 200.0)))
    assert r.action not in ("adjust_provisioned", "switch_to_provisioned")
    assert r.reserved_capacity is None
    assert any("throttled" in n for n in r.notes)
    # The same table without that minute is right-sized with reserved capacity (the old advice).
    calm, _ = decide_table(make(rate(100.0), rate(20.0), mode="PROVISIONED", provisioned=(400.0, 200.0)))
    assert calm.action == "adjust_provisioned" and calm.reserved_capacity is not None
    told, _ = decide_table(
        make(rate(100.0), rate(20.0), mode="PROVISIONED", provisioned=(400.0, 200.0)), throttled=True
    )
    assert told.action != "adjust_provisioned" and told.reserved_capacity is None


@pytest.mark.parametrize("simulation", ["evaluator"])
def test_suggested_maximums_are_never_below_the_observed_need(simulation: Simulation) -> None:
    """A 5-minute peak of 1,000 RCU at 70% target needs 1,429 units: the maximum suggested is at least that, even
    under a configured maximum of 5."""
    reads = rate(10.0)
    for i in range(5):
        reads[3 * DAY + i] = 1000.0 * 60
    cfg = BillingConfig(read=DimensionSettings(max_capacity=5.0), write=DimensionSettings(max_capacity=5.0))
    r, _ = decide_table(make(reads, rate(0.0)), config=cfg, simulation=simulation)
    for cap in r.capacity:
        assert cap.read.max_capacity >= 1429 and cap.read.min_capacity >= 1
        assert cap.write.max_capacity >= cap.write.min_capacity >= 1

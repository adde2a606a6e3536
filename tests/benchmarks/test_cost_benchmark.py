"""benchmarks.cost: the throttling recall (a planted episode goes through the real detectors, CloudWatch for the cause
whatever the capture, the captured throttled calls for the key) and its cost lines (the ledger's and the report's)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from benchmarks.cost import Throttle, build_account, throttling_found

ALL = [
    {
        "Name": "all",
        "FieldSelectors": [
            {"Field": "eventCategory", "Equals": ["Data"]},
            {"Field": "resources.type", "Equals": ["AWS::DynamoDB::Table"]},
        ],
    }
]


def _full(i: int, minute: int) -> list[dict[str, Any]]:
    return ALL


def _nothing(i: int, minute: int) -> list[dict[str, Any]]:
    return []


@pytest.mark.parametrize("cause_metrics", [True, False])
@pytest.mark.parametrize("cause", ["key_range", "provisioned", "on_demand_max"])
def test_each_cause_is_found_from_cloudwatch_without_any_capture(cause: str, cause_metrics: bool) -> None:
    acct = build_account(16)
    mode = "PROVISIONED" if cause == "provisioned" else "PAY_PER_REQUEST"
    table = next(i for i, t in enumerate(acct.tables) if t.mode == mode and t.avg_rate >= 1.0)
    th = Throttle(table, 600, 20, cause, True, 200, cause_metrics, "THROTTLED#x")
    found, named = throttling_found(acct, th, _nothing, random.Random(1))
    assert found is True
    assert named is False  # nothing captured: no key


def test_a_hot_partitions_key_is_named_only_from_captured_calls() -> None:
    acct = build_account(16)
    table = next(i for i, t in enumerate(acct.tables) if t.mode == "PAY_PER_REQUEST" and t.avg_rate >= 1.0)
    th = Throttle(table, 600, 20, "key_range", True, 200, False, "THROTTLED#x")
    assert throttling_found(acct, th, _full, random.Random(1)) == (True, True)
    # Captured only from minute 615 on: still within the episode, still named.
    assert throttling_found(acct, th, lambda i, m: ALL if m >= 615 else [], random.Random(1)) == (True, True)
    # Captured only after the episode: the cause (CloudWatch) but not the key.
    assert throttling_found(acct, th, lambda i, m: ALL if m >= 620 else [], random.Random(1)) == (True, False)


# ---------------------------------------------------------------- one model of the bill


def test_the_weekly_reports_cost_lines_equal_the_benchmarks_model_for_the_same_usage() -> None:
    from datetime import UTC, date, datetime, timedelta

    from auditor.cost.bill import grouped
    from auditor.cost.cost_model import (
        DAYS_PER_MONTH,
        FIXED_MODEL,
        AuditorRates,
        StackShape,
        data_event_usage,
        fixed_monthly_usage,
    )
    from auditor.cost.ledger import day_entry, week_ledger
    from auditor.report.auditor_cost import AuditorUsage, estimate_auditor_cost
    from benchmarks.cost import strategy_lines

    acct = build_account(16)
    tables, polls = len(acct.tables), 304_022
    events = 510 * tables * DAYS_PER_MONTH  # 510 data events per table and day
    month = strategy_lines(acct, events, polls, controller=True)

    # The report's cost lines for the month's usage: the benchmark's lines, item by item.
    usage = fixed_monthly_usage(tables, polls, controller=True)
    report = estimate_auditor_cost(AuditorUsage.of(usage.plus(data_event_usage(events))))
    shown = {line.item: line.usd for line in report.lines}
    assert shown == pytest.approx({line.item: line.usd for line in month if line.item in shown})
    assert report.total_usd == pytest.approx(sum(line.usd for line in month))

    # The weekly report's ledger (7 stored days: each table's data events and the metrics audit's reads, plus the
    # shared costs) adds up to the same lines over a week.
    per_table_day = 510
    audit_metrics = FIXED_MODEL["metrics_audit_metrics_per_table"] * (730 + 30) / DAYS_PER_MONTH
    reads_usd = audit_metrics * AuditorRates().metric_requested
    days = [date(2026, 11, 30) + timedelta(days=i) for i in range(7)]

    # The metrics audit books each hour (hour_{start}), the evaluator each window (window_{start}).
    def stored(d: date) -> tuple[dict[str, Any], dict[str, Any]]:
        midnight = int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp())
        hours = {f"hour_{midnight + 3600 * h}": {"auditor": {"cloudwatch_metrics": reads_usd / 24}} for h in range(24)}
        return hours, {f"window_{midnight}": per_table_day}

    entries = [day_entry(d, None, None, t.name, *stored(d)) for d in days for t in acct.tables]
    summary = week_ledger(entries, controller=True, shape=StackShape(controller_metrics=polls))
    assert summary is not None
    expected = {k: v * 7 / DAYS_PER_MONTH for k, v in grouped(month).items()}
    assert summary.total.auditor_lines == pytest.approx(expected, rel=1e-6)
    # Every hour priced: the ratio's period is the whole week, so it counts every cost, as the benchmark's month does.
    assert summary.total.priced_hours == 7 * 24
    assert summary.total.matched_auditor_usd == pytest.approx(summary.total.auditor_usd)


def test_the_adversarial_groups_plant_where_the_reference_set_does_not_look() -> None:
    from benchmarks.cost_adversarial import plant

    acct = build_account(16)
    before = len(acct.bursts)
    groups = dict(plant(acct, 16))
    floor, short, repeat = groups.values()
    assert [len(g) for g in groups.values()] == [10, 10, 9]
    assert len(acct.bursts) == before + 10 + 10 + 9 + 9  # each repeated key follows a first one on its table
    assert all(300 <= (b.rate if b.write else b.rate / 3) <= 450 for b in floor)  # 30-45 % of a partition
    assert all(5 <= b.minutes <= 10 and (b.rate >= 520 if b.write else b.rate >= 1560) for b in short)
    for b in repeat:
        first = next(f for f in acct.by_table[b.table] if f.key == b.key.replace("REPEAT", "FIRST"))
        assert 120 <= b.start - (first.start + first.minutes) <= 480


def test_a_contributor_insights_window_names_the_key_it_overlaps_and_is_billed_by_the_event() -> None:
    from benchmarks.cost import Burst
    from benchmarks.cost_insights import found, usage, windows

    acct = build_account(16)
    table = next(i for i, t in enumerate(acct.tables) if t.avg_rate >= 1.0)
    floor = Burst(table, 600, 20, "FLOOR#x", 320.0, True)  # 32 % of a partition, 20 minutes
    acct.by_table.setdefault(table, []).append(floor)
    assert windows([120, 121, 122, 130], 5) == [(600, 615), (650, 655)]
    assert found(acct, floor, [(600, 615)]) is True
    assert found(acct, floor, [(619, 634)]) is False  # enabled in its last minute: the first minute is not counted
    assert found(acct, floor, [(560, 600)]) is False
    # billed: an event per request in the counted minutes, two rules for an hour at least, the reports read
    month, reads = usage(acct, {table: [(600, 615)]})
    expected = sum(sum(acct.requests(table, m)) * 60 for m in range(601, 615))
    assert month.ci_events == int(expected) and month.ci_rules == pytest.approx(2 / 730) and reads == 2

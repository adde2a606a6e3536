"""Limits from the account where they are known: each what-if item says where its limit comes from (the table's
description, Application Auto Scaling, Service Quotas, the observed peak, or the documented default)."""

from __future__ import annotations

from auditor.models.inventory import Capacity, ScalingTarget, TableProfile, ThroughputQuotas
from auditor.models.metrics import CONSUMED, MetricSeries, SeriesKey, TableMetrics
from auditor.whatif.capacity import capacity_from_audit, resource_capacities
from auditor.whatif.limits import ResourceCapacity, WhatIfConfig, capacity_limits, key_limits
from tests.factories import call, span


def _limits(items: list) -> dict[tuple[str, str | None], tuple[float, str | None]]:
    return {(i.limit, i.access): (i.limit_per_second, i.limit_source) for i in items}


def test_provisioned_limits_say_where_they_come_from() -> None:
    res = ResourceCapacity(
        "Orders",
        None,
        "PROVISIONED",
        peak_read=100.0,
        peak_write=50.0,
        provisioned_read=200,
        provisioned_write=100,
        autoscaling_max_write=400,
        table_max_read=60_000.0,
        account_max_write=120_000.0,
    )
    limits = _limits(capacity_limits([res]))
    assert limits[("provisioned", "read")] == (200.0, "describe_table")
    assert limits[("autoscaling_max", "write")] == (400.0, "application_autoscaling")
    assert limits[("table_max", "read")] == (60_000.0, "service_quotas")
    assert limits[("table_max", "write")] == (40_000.0, "default")
    assert limits[("account_quota", "read")] == (80_000.0, "default")
    assert limits[("account_quota", "write")] == (120_000.0, "service_quotas")
    # a quota raised in --config is the configuration's, not AWS's default
    configured = _limits(capacity_limits([res], WhatIfConfig(table_quota_write_units=50_000)))
    assert configured[("table_max", "write")] == (50_000.0, "config")


def test_on_demand_doubling_says_whether_the_peak_or_the_floor_bounds_it() -> None:
    busy = ResourceCapacity("Events", None, "PAY_PER_REQUEST", peak_read=9_000.0, peak_write=100.0, warm_write=6_000)
    limits = _limits(capacity_limits([busy]))
    assert limits[("on_demand_doubling", "read")] == (18_000.0, "observed_peak")
    assert limits[("on_demand_doubling", "write")] == (6_000.0, "describe_table")  # its warm throughput
    quiet = ResourceCapacity("Quiet", None, "PAY_PER_REQUEST", peak_read=10.0, peak_write=0.0)
    assert _limits(capacity_limits([quiet]))[("on_demand_doubling", "read")] == (12_000.0, "default")


def test_the_audits_quotas_reach_what_if_through_its_json() -> None:
    profile = TableProfile(
        name="Orders",
        billing_mode="PROVISIONED",
        capacity=Capacity(
            provisioned_read=10,
            provisioned_write=10,
            auto_scaling=(ScalingTarget(access="read", min_capacity=5, max_capacity=100),),
        ),
    )
    tm = TableMetrics(table="Orders", start=1_764_583_200, end=1_764_586_800, period=60)
    key = SeriesKey(CONSUMED["read"], "Orders")
    tm.resource(None).series[key.name] = MetricSeries(key, {1_764_583_200: 600.0})
    quotas = ThroughputQuotas(table_read=60_000.0, table_read_source="service_quotas")
    [entry] = [r.to_dict() for r in resource_capacities(profile, tm, quotas)]
    assert (entry["table_max_read"], entry["table_max_write"], entry["account_max_read"]) == (60_000.0, None, None)
    document = {"tables": [{"table": "Orders", "billing_mode": "PROVISIONED", "capacity": [entry]}]}
    [back], _ = capacity_from_audit(document, "audit.json")
    limits = _limits(capacity_limits([back]))
    assert limits[("autoscaling_max", "read")] == (100.0, "application_autoscaling")
    assert limits[("table_max", "read")] == (60_000.0, "service_quotas")


def test_a_keys_partition_limit_is_the_documented_one_unless_configured() -> None:
    agg = span([call("PutItem", key={"pk": "A"}, at=i * 0.1) for i in range(600)])
    [item] = key_limits(agg)
    assert (item.limit, item.limit_per_second, item.limit_source) == ("partition_write", 1000.0, "default")
    [item] = key_limits(agg, WhatIfConfig(partition_write_units=800))
    assert (item.limit_per_second, item.limit_source) == (800.0, "config")
    assert item.to_dict(2.0)["limit_source"] == "config"

"""``idle_table`` and ``ttl_not_expiring``: pure detectors over the daily activity read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from auditor.detectors.base import MetricsInput
from auditor.detectors.metrics import idle_table, ttl_not_expiring
from auditor.models.finding import REQUIRED_EVIDENCE, FindingKind, Severity
from auditor.models.inventory import Capacity, IndexProfile, TableProfile
from auditor.models.metrics import CONSUMED, TTL_DELETED, MetricSeries, SeriesKey, TableMetrics

DAY = 86_400
END = int(datetime(2026, 12, 1, tzinfo=UTC).timestamp())
START = END - 30 * DAY
OLD = "2026-06-01T00:00:00+00:00"


def profile(**kw: object) -> TableProfile:
    base: dict[str, object] = {
        "name": "Archive",
        "account": "111122223333",
        "region": "us-east-1",
        "arn": "arn:aws:dynamodb:us-east-1:111122223333:table/Archive",
        "billing_mode": "PROVISIONED",
        "table_class": "STANDARD",
        "created": OLD,
        "size_bytes": 4 * 1024**3,
        "item_count": 1_000_000,
        "capacity": Capacity(provisioned_read=100, provisioned_write=50),
        "indexes": (
            IndexProfile(
                name="ByDate",
                type="GSI",
                size_bytes=1024**3,
                capacity=Capacity(provisioned_read=10, provisioned_write=10),
            ),
        ),
    }
    base.update(kw)
    return TableProfile.model_validate(base)


def activity(
    p: TableProfile, values: dict[tuple[str | None, str], dict[int, float]] | None = None, days: int = 30
) -> TableMetrics:
    """Every activity series of ``p`` read (empty unless given), like read_activity files them."""
    tm = TableMetrics(p.name, END - days * DAY, END, DAY)
    names = [(i, CONSUMED[a]) for i in (None, *(g.name for g in p.gsis)) for a in ("read", "write")]
    if p.ttl_status == "ENABLED":
        names.append((None, TTL_DELETED))
    for index, metric in names:
        key = SeriesKey(metric, p.name, index, None, "Sum", DAY)
        tm.resource(index).series[key.name] = MetricSeries(key, dict((values or {}).get((index, metric), {})))
    return tm


def test_an_idle_provisioned_table_costs_its_capacity_and_storage() -> None:
    p = profile()
    [f] = idle_table.detect(MetricsInput(p, activity(p)))
    assert f.kind is FindingKind.IDLE_TABLE
    assert set(REQUIRED_EVIDENCE[FindingKind.IDLE_TABLE]) <= set(f.evidence)
    capacity = 730 * (110 * 0.00013 + 60 * 0.00065)
    storage = 5 * 0.25
    assert f.evidence["monthly_capacity_cost"] == pytest.approx(capacity, abs=0.01)
    assert f.evidence["monthly_storage_cost"] == pytest.approx(storage, abs=0.01)
    assert f.evidence["monthly_cost"] == pytest.approx(capacity + storage, abs=0.01)
    assert f.evidence["days_idle"] == 30 and f.evidence["reads"] == 0 and f.evidence["writes"] == 0
    assert f.evidence["options"] == ["on_demand", "export_to_s3_and_delete", "backup_and_delete"]
    assert f.severity is Severity.MEDIUM  # $40 a month
    assert "--billing-mode PAY_PER_REQUEST" in f.recommendation and "export-table-to-point-in-time" in f.recommendation
    assert f.title == f"Archive had no reads or writes in 30 days and costs ${capacity + storage:,.2f} a month"


def test_traffic_anywhere_means_not_idle() -> None:
    p = profile()
    for where in [(None, CONSUMED["read"]), (None, CONSUMED["write"]), ("ByDate", CONSUMED["read"])]:
        assert idle_table.detect(MetricsInput(p, activity(p, {where: {START + 3 * DAY: 1.0}}))) == []


def test_idle_needs_a_whole_period_an_old_enough_table_and_known_series() -> None:
    p = profile()
    assert idle_table.detect(MetricsInput(p, activity(p, days=20))) == []
    young = profile(created="2026-11-20T00:00:00+00:00")
    assert idle_table.detect(MetricsInput(young, activity(young))) == []
    assert idle_table.detect(MetricsInput(profile(created=None), activity(p))) == []
    unknown = activity(p)
    unknown.resource("ByDate").unavailable.add(CONSUMED["read"])
    assert idle_table.detect(MetricsInput(p, unknown)) == []


def test_an_idle_on_demand_table_pays_only_storage_and_tiny_costs_are_ignored() -> None:
    p = profile(billing_mode="PAY_PER_REQUEST", capacity=Capacity(), indexes=())
    [f] = idle_table.detect(MetricsInput(p, activity(p)))
    assert f.evidence["monthly_capacity_cost"] == 0 and f.evidence["monthly_cost"] == pytest.approx(1.0)
    assert f.evidence["options"] == ["export_to_s3_and_delete", "backup_and_delete"]
    assert f.severity is Severity.LOW
    small = profile(billing_mode="PAY_PER_REQUEST", capacity=Capacity(), indexes=(), size_bytes=1024**2)
    assert idle_table.detect(MetricsInput(small, activity(small))) == []


def ttl_profile(**kw: object) -> TableProfile:
    return profile(
        name="Carts",
        billing_mode="PAY_PER_REQUEST",
        capacity=Capacity(),
        indexes=(),
        ttl_status="ENABLED",
        ttl_attribute="expiresAt",
        **kw,
    )


def test_ttl_that_deletes_nothing_while_writes_go_on() -> None:
    p = ttl_profile()
    writes = {START + d * DAY: 5_000.0 for d in range(30)}
    [f] = ttl_not_expiring.detect(MetricsInput(p, activity(p, {(None, CONSUMED["write"]): writes})))
    assert f.kind is FindingKind.TTL_NOT_EXPIRING
    assert set(REQUIRED_EVIDENCE[FindingKind.TTL_NOT_EXPIRING]) <= set(f.evidence)
    assert f.evidence["ttl_attribute"] == "expiresAt"
    assert f.evidence["deleted_items"] == 0 and f.evidence["writes"] == 150_000 and f.evidence["write_days"] == 30
    assert f.evidence["monthly_storage_cost"] == pytest.approx(1.0)
    assert "milliseconds" in f.recommendation and "--projection-expression" in f.recommendation
    assert f.title == "TTL on Carts (expiresAt) deleted nothing in 30 days"


def test_ttl_is_quiet_when_it_deletes_or_nothing_is_written_or_data_is_missing() -> None:
    p = ttl_profile()
    writes = {(None, CONSUMED["write"]): {START: 10.0}}
    assert (
        ttl_not_expiring.detect(MetricsInput(p, activity(p, {**writes, (None, TTL_DELETED): {START + DAY: 3.0}}))) == []
    )
    assert ttl_not_expiring.detect(MetricsInput(p, activity(p))) == []  # no writes: nothing new to expire
    assert ttl_not_expiring.detect(MetricsInput(p, activity(p, writes, days=5))) == []  # too short a window
    off = profile(ttl_status="DISABLED")
    assert ttl_not_expiring.detect(MetricsInput(off, activity(off, writes))) == []
    young = ttl_profile(created="2026-11-25T00:00:00+00:00")
    assert ttl_not_expiring.detect(MetricsInput(young, activity(young, writes))) == []
    unknown = activity(p, writes)
    unknown.resource(None).unavailable.add(TTL_DELETED)
    assert ttl_not_expiring.detect(MetricsInput(p, unknown)) == []
    # TTL enabled after the read was planned (no TTL series read): unknown, not zero.
    not_read = activity(profile(), writes)
    assert ttl_not_expiring.detect(MetricsInput(p, not_read)) == []

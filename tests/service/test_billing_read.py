"""The billing read's plan and settings (no AWS): which series it buys, its window, when the metrics audit decides
billing, and the settings that say so."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel

from auditor.config import settings_from_env
from auditor.exceptions import ConfigurationError
from auditor.models.inventory import IndexProfile, TableProfile
from auditor.service.metrics_audit import MetricsAuditParams
from auditor.service.record import LifecycleParams
from auditor.sources.cloudwatch import ONE_MINUTE_RETENTION_SECONDS, billing_series, billing_window

DAY = 86_400
T = 1_767_225_600  # 2026-01-01T00:00:00Z
EVENTS = Path(__file__).resolve().parents[2] / "events"


def table(mode: str, gsis: tuple[str, ...] = ()) -> TableProfile:
    return TableProfile(
        name="Orders",
        billing_mode=mode,  # type: ignore[arg-type]
        indexes=tuple(IndexProfile(name=g, type="GSI") for g in gsis),
    )


def test_the_billing_read_buys_consumed_capacity_and_on_provisioned_tables_provisioned_capacity() -> None:
    on_demand = billing_series(table("PAY_PER_REQUEST", ("byDay",)))
    assert [(k.metric, k.index, k.stat, k.period) for k in on_demand] == [
        ("ConsumedReadCapacityUnits", None, "Sum", 60),
        ("ConsumedWriteCapacityUnits", None, "Sum", 60),
        ("ConsumedReadCapacityUnits", "byDay", "Sum", 60),
        ("ConsumedWriteCapacityUnits", "byDay", "Sum", 60),
    ]
    provisioned = billing_series(table("PROVISIONED", ("byDay",)))
    assert len(provisioned) == 8
    assert {(k.metric, k.stat, k.period) for k in provisioned if k.metric.startswith("Provisioned")} == {
        ("ProvisionedReadCapacityUnits", "Average", 300),  # published every 5 minutes
        ("ProvisionedWriteCapacityUnits", "Average", 300),
    }
    assert all(k.operation is None for k in provisioned)
    assert billing_series(table("unknown")) == []  # cannot be decided: nothing is bought


def test_the_billing_window_is_whole_minutes_and_never_older_than_15_days_of_1_minute_data() -> None:
    # 14 days before a whole 5-minute end: exactly 20,160 minutes
    assert billing_window(T, 14) == (T - 14 * DAY, T)
    # The end is rounded down to the minute, the start up to 5 minutes (the provisioned series' period)
    start, end = billing_window(T + 130, 14)
    assert (start, end) == (T - 14 * DAY + 300, T + 120)
    # 15 days ending two hours ago start no earlier than 15 days before now: CloudWatch has nothing older at 60 s
    now = T + 7200
    start, end = billing_window(T, 15, now)
    assert start >= now - ONE_MINUTE_RETENTION_SECONDS and start % 300 == 0 and end == T


def test_billing_settings_defaults_and_bounds() -> None:
    settings = settings_from_env({})
    assert (settings.billing_lookback_days, settings.billing_audit_hour_utc) == (14, 6)
    ok = settings_from_env({"BILLING_LOOKBACK_DAYS": "15", "BILLING_AUDIT_HOUR_UTC": "0"})
    assert (ok.billing_lookback_days, ok.billing_audit_hour_utc) == (15, 0)
    for name, value in [
        ("BILLING_LOOKBACK_DAYS", "0"),
        ("BILLING_LOOKBACK_DAYS", "16"),
        ("BILLING_LOOKBACK_DAYS", "7.5"),
        ("BILLING_AUDIT_HOUR_UTC", "24"),
        ("BILLING_AUDIT_HOUR_UTC", "-1"),
        ("BILLING_AUDIT_HOUR_UTC", "six"),
    ]:
        with pytest.raises(ConfigurationError, match=name.lower()):
            settings_from_env({name: value})


def test_the_run_in_the_billing_hour_decides_billing() -> None:
    settings = settings_from_env(
        {
            "FINDINGS_TOPIC_ARN": "arn:aws:sns:us-east-1:111122223333:t",
            "BILLING_AUDIT_HOUR_UTC": "23",
            "BILLING_LOOKBACK_DAYS": "3",
        }
    )
    params = MetricsAuditParams.from_settings(settings)
    assert (params.billing_hour_utc, params.billing_lookback_days) == (23, 3)
    day = datetime(2026, 12, 1, tzinfo=UTC)
    assert [h for h in range(24) if params.bills_at(day + timedelta(hours=h, minutes=17))] == [23]
    # The schedule time in another offset is compared in UTC
    assert params.bills_at(datetime(2026, 12, 2, 0, 30, tzinfo=timezone(timedelta(hours=1))))
    lifecycle = LifecycleParams(topic_arn="arn:aws:sns:us-east-1:111122223333:t")
    with pytest.raises(ValueError, match="billing_lookback_days"):
        MetricsAuditParams(lifecycle=lifecycle, billing_lookback_days=16)
    with pytest.raises(ValueError, match="billing_hour_utc"):
        MetricsAuditParams(lifecycle=lifecycle, billing_hour_utc=24)


@pytest.mark.parametrize(
    ("sample", "bills"), [("metrics_audit_billing_schedule.json", True), ("metrics_audit_schedule.json", False)]
)
def test_the_sample_schedule_events_and_the_default_billing_hour(sample: str, bills: bool) -> None:
    # events/ has an ordinary hourly run (13:00 UTC) and the day's billing run (06:00 UTC, the default hour)
    event = parse(event=json.loads((EVENTS / sample).read_text()), model=EventBridgeModel)
    params = MetricsAuditParams.from_settings(settings_from_env({"FINDINGS_TOPIC_ARN": "arn:aws:sns:us-east-1:1:t"}))
    assert params.bills_at(event.time) is bills

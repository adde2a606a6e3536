"""The metrics audit's once-a-day billing run on moto server: 14 days of 1-minute capacity put into CloudWatch ->
``billing_mode`` findings from the run in ``BILLING_AUDIT_HOUR_UTC``; the other hourly runs neither create nor
resolve billing findings; a billing run resolves only the billing findings of tables whose billing series it read in
full; the read's GetMetricData calls are packed by datapoints and follow the pages.

moto accepts datapoints 14 days old (PutMetricData does not check the age); its GetMetricData is swapped for an
indexed equivalent that pages like CloudWatch (:mod:`tests.moto_metric_data`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog

from auditor.config import get_settings
from auditor.lifecycle import FindingStatus
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.inventory import IndexProfile, TableProfile
from auditor.models.metrics import ApiStats
from auditor.service.metrics_audit import MetricsAuditParams, run_metrics_audit
from auditor.service.record import LifecycleParams, ResolveScope, record_findings
from auditor.sources.audit_clients import build_clients
from auditor.sources.cloudwatch import (
    MAX_DATAPOINTS_PER_CALL,
    billing_window,
    estimated_points,
    plan_batches,
    read_billing_metrics,
)
from auditor.sources.inventory import TableSelector
from auditor.state.findings_store import FindingsStore
from handlers import metrics_audit, runtime
from tests.cw_support import aws, create_table, dims, minutes, put_data, put_points
from tests.factories import stored_billing_finding
from tests.lambda_context import lambda_context
from tests.moto_metric_data import Served, install
from tests.moto_server import TopicInbox, client, create_state_table

EVENT = Path(__file__).resolve().parents[2] / "events" / "metrics_audit_schedule.json"
STATE = "auditor-state"
ACCOUNT, REGION = "123456789012", "us-east-1"
DAY = 86_400


@dataclass
class Env:
    endpoint: str
    inbox: TopicInbox
    store: FindingsStore
    served: Served
    now: datetime  # the schedule time: the current minute
    end: int  # its epoch seconds

    def invoke(self, at: datetime | None = None) -> dict[str, Any]:
        event = json.loads(EVENT.read_text())
        event["time"] = (at or self.now).strftime("%Y-%m-%dT%H:%M:%SZ")
        return metrics_audit.lambda_handler(event, lambda_context("metrics-audit"))

    def seed(self, *findings: Finding) -> None:
        record_findings(
            self.store, self.inbox.sns, self.inbox.topic_arn, findings, now=self.now - timedelta(days=2),
            scope=ResolveScope.nothing(),
        )  # fmt: skip
        self.inbox.messages()

    def billing_states(self) -> dict[str, Any]:
        """Stored billing_mode findings by table."""
        items = client("dynamodb", self.endpoint).scan(TableName=STATE, ConsistentRead=True)["Items"]
        out = {}
        for item in items:
            if item["pk"]["S"].startswith("FINDING#"):
                state = self.store.get(item["id"]["S"])
                if state is not None and state.finding.kind is FindingKind.BILLING_MODE:
                    out[state.finding.table] = state
        return out


@pytest.fixture
def env(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    """The state table, the topic and the handler's environment; billing is decided in the current UTC hour."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # moto answers HTTP 500 for Contributor Insights: do not retry it
    served = install(monkeypatch)
    create_state_table(client("dynamodb", aws_reset), STATE)
    inbox = TopicInbox(aws_reset)
    now_s = int(time.time())
    now = datetime.fromtimestamp(now_s - now_s % 60, UTC)
    monkeypatch.setenv("STATE_TABLE_NAME", STATE)
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", inbox.topic_arn)
    monkeypatch.setenv("RESOLVE_AFTER_SECONDS", "3600")
    monkeypatch.setenv("AUDIT_LOOKBACK_SECONDS", "3600")
    monkeypatch.setenv("AUDIT_TABLE_PREFIX", "t-")
    monkeypatch.setenv("BILLING_AUDIT_HOUR_UTC", str(now.hour))
    monkeypatch.setenv("BILLING_LOOKBACK_DAYS", "14")
    get_settings.cache_clear()
    runtime.reset()
    store = FindingsStore(client("dynamodb", aws_reset), STATE, sleep=lambda _s: None)
    yield Env(aws_reset, inbox, store, served, now, int(now.timestamp()))
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def over_provisioned(cw: Any, ddb: Any, name: str, start: int, end: int) -> None:
    """Provisioned at 1,000 RCU / 1,000 WCU from ``start``, steadily using 10 RCU/s and 5 WCU/s until ``end``."""
    create_table(ddb, name, read=1000, write=1000)
    n = (end - start) // 60
    put_points(cw, "ConsumedReadCapacityUnits", name, minutes(start, n, 600))
    put_points(cw, "ConsumedWriteCapacityUnits", name, minutes(start, n, 300))
    put_points(cw, "ProvisionedReadCapacityUnits", name, minutes(start, n // 5, 1000, step=5))
    put_points(cw, "ProvisionedWriteCapacityUnits", name, minutes(start, n // 5, 1000, step=5))


def stale_billing(table: str, seen: datetime) -> Finding:
    """A billing_mode finding an earlier billing run stored."""
    return stored_billing_finding(table, seen, account=ACCOUNT, region=REGION, days_analyzed=14.0)


# ---------------------------------------------------------------------------------------------------------- tests


def test_the_billing_hour_run_decides_billing_from_14_days_of_1_minute_data(env: Env) -> None:
    ddb, cw = aws("dynamodb", env.endpoint), aws("cloudwatch", env.endpoint)
    # Given 14 days of 1-minute capacity of an over-provisioned table, and 2 days of a table created 2 days ago
    over_provisioned(cw, ddb, "t-old", env.end - 14 * DAY, env.end)
    over_provisioned(cw, ddb, "t-young", env.end - 2 * DAY, env.end)
    # When the schedule fires in the billing hour
    result = env.invoke()
    # Then billing is decided over 14 days of 1-minute data
    assert result["billing_run"] is True and result["detector_errors"] == []
    read = result["billing"]
    assert read["days"] == pytest.approx(14.0, abs=0.004) and read["period_seconds"] == 60
    assert read["tables_decided"] == 2 and read["skipped"] == {}
    # The young table's coverage starts at its first datapoint: its first 5-minute provisioned datapoint is stamped
    # with the start of its 5-minute period (as CloudWatch stamps them), so up to 4 minutes (0.0028 days) early.
    assert read["coverage_days"]["min"] == pytest.approx(2.0, abs=0.0035)  # (the handler's summary: min and max)
    assert read["coverage_days"]["max"] == pytest.approx(14.0, abs=0.004)
    # The old table: the whole window (its start on a 5-minute boundary), full confidence, a medium finding
    states = env.billing_states()
    old = states["t-old"].finding
    assert old.evidence["source"] == "cloudwatch_billing" and states["t-old"].status is FindingStatus.NEW
    assert old.evidence["days_analyzed"] == pytest.approx(14.0, abs=0.004)
    assert old.evidence["confidence"] >= 0.99 and old.severity is Severity.MEDIUM
    # (1000 x 0.00013 + 1000 x 0.00065) x 730 = $569.40/month; auto scaling at 70 %: 15 RCU + 8 WCU = $5.22/month
    assert old.evidence["monthly_savings"] == pytest.approx(569.40 - 5.22, abs=0.05)
    # The young table: the same saving over the 2 days CloudWatch has, at 2/14 of the confidence; under the 7 days a
    # recommendation needs, so preliminary (info), stored muted
    young = states["t-young"].finding
    assert young.evidence["days_analyzed"] == pytest.approx(2.0, abs=0.0035)
    assert young.evidence["confidence"] == pytest.approx(2 / 14, abs=0.002) and young.severity is Severity.INFO
    assert young.evidence["preliminary"] is True and states["t-young"].muted
    # Only the old table's is announced (once, as new); the preliminary one is never alerted
    assert sorted((m["table"], m["kind"], m["status"]) for m in env.inbox.messages()) == [
        ("t-old", "billing_mode", "new"),
    ]
    # The read: 8 series (consumed and provisioned, read and write, of two tables); four 14-day 1-minute series
    # (80,640 datapoints) and four 14-day 5-minute ones (16,128) fit in one GetMetricData call of 100,800
    assert (read["get_metric_data_calls"], read["metrics_requested"]) == (1, 8)
    # (the billing run's 30-day activity read, for idle tables and TTL, is the one longer than 15 days)
    billing_pages = [p for p in env.served.pages if DAY < p.seconds <= 15 * DAY]
    assert [(p.queries, p.next_token) for p in billing_pages] == [(8, False)]
    # Every datapoint of the window came back: 2 x 14 and 2 x 2 days of minutes, and their 5-minute values (the
    # window starts up to 4 minutes after the oldest ones)
    assert read["datapoints"] == billing_pages[0].datapoints
    assert 32 * (1440 + 288) - 10 <= read["datapoints"] <= 32 * (1440 + 288)
    # And the next hour's run does not decide billing again
    before = len(env.served.pages)
    later = env.invoke(env.now + timedelta(hours=1))
    assert later["billing_run"] is False and later["billing"] is None
    assert [p.seconds <= 3600 + 300 for p in env.served.pages[before:]] == [True]  # the detectors' hour only


def test_other_hours_neither_create_nor_resolve_billing_findings(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    ddb, cw = aws("dynamodb", env.endpoint), aws("cloudwatch", env.endpoint)
    # Given an over-provisioned table (an hour of data) and a stale billing finding on a quiet on-demand table
    over_provisioned(cw, ddb, "t-over", env.end - 3600, env.end)
    create_table(ddb, "t-quiet", on_demand=True)
    put_points(cw, "ConsumedReadCapacityUnits", "t-quiet", minutes(env.end - 3600, 60, 6))
    stale = stale_billing("t-quiet", env.now - timedelta(days=2))
    env.seed(stale)
    # When the hourly run fires an hour before the billing hour
    monkeypatch.setenv("BILLING_AUDIT_HOUR_UTC", str((env.now.hour + 1) % 24))
    get_settings.cache_clear()
    result = env.invoke()
    # Then it reads no billing series, makes no billing finding and leaves the stale one open
    assert result["billing_run"] is False and result["billing"] is None
    assert max(p.seconds for p in env.served.pages) <= 3600 + 300  # only the detectors' hour
    assert set(env.billing_states()) == {"t-quiet"}
    assert env.store.get(stale.id).status is FindingStatus.NEW  # type: ignore[union-attr]
    assert result["resolved"] == 0
    # When the next run falls in the billing hour
    billing = env.invoke(env.now + timedelta(hours=1))
    # Then it decides billing: a finding for the over-provisioned table, and the stale one resolves (the quiet
    # table's series were read in full and it is fine on demand)
    assert billing["billing_run"] is True
    states = env.billing_states()
    assert states["t-over"].status is FindingStatus.NEW
    assert states["t-quiet"].status is FindingStatus.RESOLVED
    assert billing["resolved"] == 1


def test_a_billing_series_that_cannot_be_read_keeps_that_tables_billing_finding(env: Env) -> None:
    ddb, cw = aws("dynamodb", env.endpoint), aws("cloudwatch", env.endpoint)
    # Given two quiet on-demand tables with stale billing findings
    for name in ("t-flaky", "t-quiet"):
        create_table(ddb, name, on_demand=True)
        put_points(cw, "ConsumedReadCapacityUnits", name, minutes(env.end - 3600, 60, 6))
        put_points(cw, "ConsumedWriteCapacityUnits", name, minutes(env.end - 3600, 60, 6))
    flaky = stale_billing("t-flaky", env.now - timedelta(days=2))
    quiet = stale_billing("t-quiet", env.now - timedelta(days=2))
    env.seed(flaky, quiet)

    # And CloudWatch answers Forbidden for the billing read of one of t-flaky's series (not for the hourly read)
    def forbidden(query: dict[str, Any], seconds: int) -> bool:
        metric = query["MetricStat"]["Metric"]
        billing_read = DAY < seconds <= 15 * DAY  # (not the 30-day activity read)
        return (
            billing_read
            and metric["Dimensions"] == dims("t-flaky")
            and metric["MetricName"] == "ConsumedWriteCapacityUnits"
        )

    env.served.forbidden = forbidden
    # When the billing run fires
    result = env.invoke()
    # Then the unreadable series is a gap and leaves t-flaky undecided and its billing finding open
    read = result["billing"]
    assert read["skipped"] == {"table: ConsumedWriteCapacityUnits could not be read": 1}  # (counted by reason)
    assert read["tables_read"] == 1 and result["gaps"] >= 1
    assert env.store.get(flaky.id).status is FindingStatus.NEW  # type: ignore[union-attr]
    # While t-quiet, read in full and fine on demand, has its billing finding resolved
    assert env.store.get(quiet.id).status is FindingStatus.RESOLVED  # type: ignore[union-attr]
    assert result["resolved"] == 1


def test_a_billing_run_out_of_time_reads_nothing_and_resolves_nothing(env: Env) -> None:
    ddb, cw = aws("dynamodb", env.endpoint), aws("cloudwatch", env.endpoint)
    create_table(ddb, "t-quiet", on_demand=True)
    put_points(cw, "ConsumedReadCapacityUnits", "t-quiet", minutes(env.end - 3600, 60, 6))
    stale = stale_billing("t-quiet", env.now - timedelta(days=2))
    env.seed(stale)
    params = MetricsAuditParams(
        lifecycle=LifecycleParams(topic_arn=env.inbox.topic_arn, resolve_after_seconds=3600),
        selector=TableSelector(prefix="t-"),
        lookback_seconds=3600,
        billing_hour_utc=env.now.hour,
    )
    # When the billing run has less than a minute left once the hourly audit is done
    result = run_metrics_audit(
        build_clients(REGION), env.store, env.inbox.sns, params, env.now, time_left=lambda: 30.0, sleep=lambda _s: 0
    )
    # Then no billing series is bought, the gap says why, and the billing finding stays as it was
    assert result.billing is not None
    assert result.billing["tables_decided"] == 0 and result.billing["skipped"] == {"not read": 1}
    assert result.billing["get_metric_data_calls"] == 0
    assert env.store.get(stale.id).status is FindingStatus.NEW  # type: ignore[union-attr]


def test_the_billing_read_packs_calls_by_datapoints_follows_pages_and_reads_a_group_at_a_time(
    aws_reset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CloudWatch pages at 100,800 datapoints; this stand-in pages at 100 so that the read must follow the pages
    served = install(monkeypatch, page_datapoints=100)
    cw = aws("cloudwatch", aws_reset)
    now_s = int(time.time())
    end = now_s - now_s % 60
    start, stop = billing_window(end, 14)
    # Given three provisioned tables with two GSIs each, every series with a datapoint every 6 hours for 14 days
    profiles = [
        TableProfile(
            name=f"t{i}", billing_mode="PROVISIONED", indexes=tuple(IndexProfile(name=g, type="GSI") for g in "ab")
        )
        for i in range(3)
    ]
    hours = range(start, stop, 6 * 3600)
    data = [
        {"MetricName": m, "Dimensions": dims(p.name, index), "Timestamp": datetime.fromtimestamp(t, UTC), "Value": 5.0}
        for p in profiles
        for index in (None, "a", "b")
        for m in (
            "ConsumedReadCapacityUnits",
            "ConsumedWriteCapacityUnits",
            "ProvisionedReadCapacityUnits",
            "ProvisionedWriteCapacityUnits",
        )
        for t in hours
    ]
    put_data(cw, data)
    stats = ApiStats()
    # When the billing read runs with groups of four responses' worth (two of these tables: 2 x 145,152 estimated)
    groups = list(read_billing_metrics(cw, profiles, start, stop, stats, sleep=lambda _s: None))
    # Then the tables come a group at a time, every table's series complete
    assert [sorted(g.tables) for g in groups] == [["t0", "t1"], ["t2"]]
    for g in groups:
        for tm in g.tables.values():
            assert {(res.index, len(res.series)) for res in tm.resources.values()} == {(None, 4), ("a", 4), ("b", 4)}
            assert all(len(s.points) == len(hours) for res in tm.resources.values() for s in res.series.values())
            assert not any(res.unavailable for res in tm.resources.values())
    assert stats.datapoints == len(data)
    # Each call holds at most 100,800 estimated datapoints (five 14-day 1-minute series, or fewer with 5-minute ones),
    # so 36 series take the fewest calls their datapoints allow per group: ceil(2 x 145,152 / 100,800) = 3 and 2
    assert served.calls == math.ceil(2 * 145_152 / MAX_DATAPOINTS_PER_CALL) + math.ceil(
        145_152 / MAX_DATAPOINTS_PER_CALL
    )
    first_pages = [p for p in served.pages if not p.continued]
    assert max(p.queries for p in first_pages) <= 500
    # And the read followed every page: each page re-sends (and re-bills) the call's queries
    assert sum(p.continued for p in served.pages) >= served.calls
    assert stats.calls["cloudwatch:GetMetricData"] == served.requests
    assert stats.metrics_requested == sum(p.queries for p in served.pages)
    assert served.datapoints == len(data)


def test_batches_are_packed_by_datapoints() -> None:
    from auditor.models.metrics import SeriesKey

    end = 1_767_225_600
    start = end - 14 * DAY
    minute = [SeriesKey("ConsumedReadCapacityUnits", f"t{i}") for i in range(12)]
    five = [SeriesKey("ProvisionedReadCapacityUnits", f"t{i}", stat="Average", period=300) for i in range(12)]
    assert estimated_points(minute[0], start, end) == 20_160 and estimated_points(five[0], start, end) == 4_032
    # 14 days at 60 s: five series per call; the 5-minute ones fill the room left, then 25 per call
    batches = plan_batches([*minute, *five], start, end, max_datapoints=MAX_DATAPOINTS_PER_CALL)
    assert [len(b) for b in batches] == [5, 5, 2 + 12]
    assert all(sum(estimated_points(k, start, end) for k in b) <= MAX_DATAPOINTS_PER_CALL for b in batches)
    # One day at 60 s: 70 per call; never more than 500 queries
    day = plan_batches(minute * 100, end - DAY, end, max_datapoints=MAX_DATAPOINTS_PER_CALL)
    assert [len(b) for b in day] == [70] * 17 + [10]
    assert [len(b) for b in plan_batches(minute * 100, end - 3600, end, max_datapoints=MAX_DATAPOINTS_PER_CALL)] == [
        500,
        500,
        200,
    ]
    # A series longer than the budget gets a call of its own; without a budget, runs of 500 in order
    assert [len(b) for b in plan_batches(minute[:3], start, end, max_datapoints=10_000)] == [1, 1, 1]
    assert plan_batches(minute, start, end, batch_size=5) == [minute[:5], minute[5:10], minute[10:]]
    with pytest.raises(ValueError, match="max_datapoints"):
        plan_batches(minute, start, end, max_datapoints=0)


def test_the_daily_run_reads_activity_and_only_it_resolves_an_idle_table(env: Env) -> None:
    from tests.moto_server import backdate_table

    ddb, cw = aws("dynamodb", env.endpoint), aws("cloudwatch", env.endpoint)
    # Given a provisioned table created 90 days ago that nobody reads or writes
    create_table(ddb, "t-idle", read=50, write=20)
    backdate_table("t-idle", env.now - timedelta(days=90))
    # When the billing-hour run fires, it reads 30 days of daily activity and reports the idle table
    first = env.invoke()
    assert first["billing_run"] is True and first["detector_errors"] == []
    idle = [m for m in env.inbox.messages() if m["kind"] == "idle_table" and m["table"] == "t-idle"]
    assert [m["status"] for m in idle] == ["new"]
    states = [s for s in _states(env) if s.finding.kind is FindingKind.IDLE_TABLE]
    assert [(s.finding.table, s.status) for s in states] == [("t-idle", FindingStatus.NEW)]
    assert states[0].finding.evidence["source"] == "cloudwatch_activity"
    # An hourly run (no activity read) cannot vouch for the table's idleness: the finding stays open
    later = env.invoke(env.now + timedelta(hours=2))
    assert later["billing_run"] is False
    assert env.store.get(states[0].finding.id).status is FindingStatus.NEW  # type: ignore[union-attr]
    # Reads start; the next day's billing run reads them and resolves the finding
    put_points(cw, "ConsumedReadCapacityUnits", "t-idle", minutes(env.end + 3 * 3600, 3, 60))
    env.invoke(env.now + timedelta(days=1))
    assert env.store.get(states[0].finding.id).status is FindingStatus.RESOLVED  # type: ignore[union-attr]


def _states(env: Env) -> list[Any]:
    items = client("dynamodb", env.endpoint).scan(TableName=STATE, ConsistentRead=True)["Items"]
    found = (env.store.get(i["id"]["S"]) for i in items if i["pk"]["S"].startswith("FINDING#"))
    return [s for s in found if s is not None]

"""Billing in the live audit against moto server: planted consumed and provisioned capacity -> ``billing_mode``
findings from ``ddb-audit audit`` (its own ``--billing-days`` read, independent of ``--days``), and through the
metrics audit's billing run into the state table, where only a billing run (not the CloudTrail evaluator) may resolve
them. moto's GetMetricData is swapped for an indexed equivalent (:mod:`tests.moto_metric_data`): a 14-day
read at 60 s is too slow on moto's own."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest

from auditor.cli import main
from auditor.lifecycle import FindingStatus
from auditor.models.finding import Finding, FindingKind, fingerprint
from auditor.service.metrics_audit import MetricsAuditParams, run_metrics_audit
from auditor.service.record import SOURCE_CLOUDTRAIL, LifecycleParams, ResolveScope, record_findings
from auditor.sources.audit_clients import build_clients
from auditor.sources.inventory import TableSelector
from auditor.state.findings_store import FindingsStore
from tests.cw_support import aws, create_table, minutes, put_points
from tests.factories import stored_billing_finding
from tests.moto_metric_data import install
from tests.moto_server import TopicInbox, client, create_state_table

ACCOUNT, REGION = "123456789012", "us-east-1"  # moto's account: the tables' ARNs carry it
STATE = "auditor-state"
#: Minutes of planted metrics before the current minute (the audits below look back 70 minutes).
PLANTED = 100


@dataclass
class Planted:
    end: int  # the current whole minute when planted (epoch seconds)


@pytest.fixture
def planted(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Planted:
    """Three tables with per-minute capacity metrics over the last 100 minutes."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # moto answers HTTP 500 for Contributor Insights: do not retry it
    install(monkeypatch)
    ddb, cw = aws("dynamodb", aws_reset), aws("cloudwatch", aws_reset)
    now = int(time.time())
    end = now - now % 60
    t0 = end - PLANTED * 60

    # Provisioned at 1,000 RCU / 1,000 WCU, steadily using 10 RCU/s and 5 WCU/s
    create_table(ddb, "over-provisioned", read=1000, write=1000)
    put_points(cw, "ConsumedReadCapacityUnits", "over-provisioned", minutes(t0, PLANTED, 600))
    put_points(cw, "ConsumedWriteCapacityUnits", "over-provisioned", minutes(t0, PLANTED, 300))
    put_points(cw, "ProvisionedReadCapacityUnits", "over-provisioned", minutes(t0, PLANTED, 1000))
    put_points(cw, "ProvisionedWriteCapacityUnits", "over-provisioned", minutes(t0, PLANTED, 1000))

    # On demand, steadily writing 100 WCU/s (and reading 1 RCU/s)
    create_table(ddb, "steady-on-demand", on_demand=True)
    put_points(cw, "ConsumedWriteCapacityUnits", "steady-on-demand", minutes(t0, PLANTED, 6000))
    put_points(cw, "ConsumedReadCapacityUnits", "steady-on-demand", minutes(t0, PLANTED, 60))

    # On demand, idle but for one minute of 500 RRU/s every 10 minutes
    create_table(ddb, "spiky", on_demand=True)
    put_points(cw, "ConsumedReadCapacityUnits", "spiky", minutes(t0, PLANTED // 10, 30_000, step=10))
    return Planted(end)


def test_audit_reports_billing_mode_findings_from_consumed_and_provisioned_capacity(
    planted: Planted, capsys: pytest.CaptureFixture[str]
) -> None:
    # When the audit's detectors look back 72 minutes and billing reads its default 14 days
    code = main(["audit", "--format", "json", "--days", "0.05"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["errors"] == []
    assert doc["stats"]["days"] <= 0.06  # the detectors' window is --days
    read = doc["stats"]["billing"]
    assert 13.99 <= read["days"] <= 14.0 and read["period_seconds"] == 60
    assert read["tables_decided"] == 3 and read["skipped"] == {}
    # 7 series exist (the idle ones are not listed, so not bought): five 14-day 1-minute series fill one call's
    # 100,800 datapoints, the two 5-minute provisioned series take a second; 100 minutes of them come back (the
    # provisioned ones as 20 or 21 five-minute averages each, as the minutes fall)
    assert (read["get_metric_data_calls"], read["metrics_requested"]) == (2, 7)
    assert 5 * 100 - 10 * 9 + 2 * 20 <= read["datapoints"] <= 5 * 100 - 10 * 9 + 2 * 21  # spiky: one minute in ten
    billing = {f["table"]: f for f in doc["findings"] if f["kind"] == "billing_mode"}
    # Then the two tables whose billing is in question (the over-provisioned one, the steady on-demand one) each get
    # one 'collecting data' finding and no recommendation: 100 minutes are far from the 7 days a decision needs; the
    # spiky on-demand table stays as it is
    assert set(billing) == {"over-provisioned", "steady-on-demand"}
    over = billing["over-provisioned"]
    ev = over["evidence"]
    assert over["title"].startswith("over-provisioned: collecting data: 0.1 of 7 days")
    assert ev["collecting_data"] is True and ev["days_needed"] == 7
    assert ev["current_mode"] == ev["recommended_mode"] == "PROVISIONED"
    # A 14-day read of a table CloudWatch has 100 minutes of: analysed over the 100 minutes there are, no saving
    # (100 to 105 minutes: the first 5-minute provisioned period starts on the 5-minute boundary before the data)
    assert 0.069 <= ev["days_analyzed"] <= 0.073
    assert read["coverage_days"]["over-provisioned"] == pytest.approx(ev["days_analyzed"], abs=0.001)
    assert ev["confidence"] < 0.01
    assert over["severity"] == "info" and ev["preliminary"] is True  # never alerted
    assert (over["account"], over["region"], over["table"], over["index"]) == (
        ACCOUNT,
        REGION,
        "over-provisioned",
        None,
    )
    assert ev["source"] == "cloudwatch_billing"
    for f in billing.values():
        assert {"current_mode", "recommended_mode", "days_analyzed", "confidence"} <= set(f["evidence"])
        assert "monthly_savings" not in f["evidence"] and f["severity"] == "info"
    steady = billing["steady-on-demand"]["evidence"]
    assert steady["current_mode"] == steady["recommended_mode"] == "PAY_PER_REQUEST"
    assert "table_class" not in {f["kind"] for f in doc["findings"]}  # moto's tables hold no data


def test_billing_days_is_independent_of_days_and_zero_skips_billing(
    planted: Planted, capsys: pytest.CaptureFixture[str]
) -> None:
    # A one-day billing read over a one-hour detector window
    assert main(["audit", "--format", "json", "--days", "0.05", "--billing-days", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stats"]["billing"]["days"] == pytest.approx(1.0, abs=0.004)  # its start on a 5-minute boundary
    assert {f["table"] for f in doc["findings"] if f["kind"] == "billing_mode"} == {
        "over-provisioned",
        "steady-on-demand",
    }
    # --billing-days 0: no billing read, no billing findings, the other detectors as before
    assert main(["audit", "--format", "json", "--days", "0.05", "--billing-days", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stats"]["billing"] is None
    assert not [f for f in doc["findings"] if f["kind"] in ("billing_mode", "table_class")]
    # The table output says what the billing read covered
    assert main(["audit", "--days", "0.05", "--billing-days", "2"]) == 0
    text = capsys.readouterr().out
    assert "Billing: " in text and "3 tables decided, 0 skipped" in text
    # More than CloudWatch keeps at 1 minute is a usage error
    with pytest.raises(SystemExit) as exit_info:
        main(["audit", "--billing-days", "16"])
    assert exit_info.value.code == 2
    assert "--billing-days: must be 0 (no billing) to 15" in capsys.readouterr().err


#: Days of planted metrics for a real recommendation (a decision needs 7).
WEEK_DAYS = 8


def plant_over_provisioned(cw: object, ddb: object, name: str, t0: int, count: int) -> None:
    """Provisioned at 1,000 RCU / 1,000 WCU, steadily using 10 RCU/s and 5 WCU/s for ``count`` minutes from ``t0``."""
    create_table(ddb, name, read=1000, write=1000)
    put_points(cw, "ConsumedReadCapacityUnits", name, minutes(t0, count, 600))
    put_points(cw, "ConsumedWriteCapacityUnits", name, minutes(t0, count, 300))
    put_points(cw, "ProvisionedReadCapacityUnits", name, minutes(t0, count // 5, 1000, step=5))
    put_points(cw, "ProvisionedWriteCapacityUnits", name, minutes(t0, count // 5, 1000, step=5))


@pytest.fixture
def week_planted(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Planted:
    """Eight days of per-minute capacity: two over-provisioned tables (one throttled in the last hour) and a steady
    on-demand one."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    install(monkeypatch)
    ddb, cw = aws("dynamodb", aws_reset), aws("cloudwatch", aws_reset)
    now = int(time.time())
    end = now - now % 60
    count = WEEK_DAYS * 1440
    t0 = end - count * 60
    plant_over_provisioned(cw, ddb, "over-provisioned", t0, count)
    # The same table, but with 40 reads a minute throttled over 10 of the audited minutes (a hot partition: its
    # consumption stays far below its capacity)
    plant_over_provisioned(cw, ddb, "throttled", t0, count)
    put_points(cw, "ReadThrottleEvents", "throttled", minutes(end - 30 * 60, 10, 40))
    create_table(ddb, "steady-on-demand", on_demand=True)
    put_points(cw, "ConsumedWriteCapacityUnits", "steady-on-demand", minutes(t0, count, 6000))
    put_points(cw, "ConsumedReadCapacityUnits", "steady-on-demand", minutes(t0, count, 60))
    return Planted(end)


def test_a_week_of_capacity_gives_money_and_a_throttled_table_is_not_advised_lower_capacity(
    week_planted: Planted, capsys: pytest.CaptureFixture[str]
) -> None:
    # When the audit's detectors look back 72 minutes and billing reads its default 14 days (8 of them with data)
    code = main(["audit", "--format", "json", "--days", "0.05"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["errors"] == []
    assert doc["stats"]["billing"]["tables_decided"] == 3
    billing = {f["table"]: f for f in doc["findings"] if f["kind"] == "billing_mode"}
    # Then the over-provisioned table is told to right-size its auto scaling and the steady on-demand table to switch
    # to provisioned; the throttled twin of the over-provisioned table is not told to lower its capacity
    assert set(billing) == {"over-provisioned", "steady-on-demand"}
    ev = billing["over-provisioned"]["evidence"]
    assert (ev["current_mode"], ev["recommended_mode"], ev["action"]) == (
        "PROVISIONED",
        "PROVISIONED",
        "adjust_provisioned",
    )
    assert ev["days_analyzed"] == pytest.approx(WEEK_DAYS, abs=0.004) and not ev.get("preliminary")
    # (1000 x 0.00013 + 1000 x 0.00065) x 730 = $569.40/month today; 15 RCU + 8 WCU at 70 % = $5.22/month
    assert ev["monthly_cost_current"] == pytest.approx(569.40, rel=0.01)
    assert ev["monthly_cost_recommended"] == pytest.approx(5.22, rel=0.05)
    assert ev["monthly_savings"] == pytest.approx(564.2, rel=0.01)
    for f in billing.values():
        assert {
            "current_mode",
            "recommended_mode",
            "monthly_cost_current",
            "monthly_cost_recommended",
            "monthly_savings",
            "days_analyzed",
        } <= set(f["evidence"])
    steady = billing["steady-on-demand"]["evidence"]
    assert (steady["current_mode"], steady["recommended_mode"]) == ("PAY_PER_REQUEST", "PROVISIONED")
    # 100 WCU/s on demand: 100 x 3600 x 730 x 0.625e-6 = $164.25 (+ $0.33 of reads); ceil(100 / 0.7) = 143 WCU
    assert steady["monthly_cost_on_demand"] == pytest.approx(164.25 + 0.33, rel=0.03)
    assert steady["capacity"][0]["write"]["max_capacity"] == 286
    assert steady["throttled_share"] <= 0.001
    # The throttled table: its throttling is reported, and no billing finding (no right-sizing, no reserved capacity)
    assert "throttled" in {f["table"] for f in doc["findings"] if f["kind"] == "throttling"}


# -------------------------------------------------------------------------------------------- metrics audit


def stale_billing_finding(table: str, seen: datetime) -> Finding:
    """A billing_mode finding an earlier billing run stored."""
    return stored_billing_finding(table, seen, account=ACCOUNT, region=REGION, days_analyzed=1.0)


def test_metrics_audit_records_billing_findings_and_only_a_billing_run_resolves_them(
    aws_reset: str, planted: Planted
) -> None:
    create_state_table(client("dynamodb", aws_reset), STATE)
    inbox = TopicInbox(aws_reset)
    store = FindingsStore(client("dynamodb", aws_reset), STATE, sleep=lambda _s: None)
    now = datetime.fromtimestamp(planted.end, UTC)
    lifecycle = LifecycleParams(topic_arn=inbox.topic_arn, resolve_after_seconds=3600)
    # Given a billing finding on the spiky table that an audit two days ago stored
    stale = stale_billing_finding("spiky", now - timedelta(days=2))
    record_findings(
        store, inbox.sns, inbox.topic_arn, [stale], now=now - timedelta(days=2), scope=ResolveScope.nothing()
    )
    inbox.messages()
    params = MetricsAuditParams(
        lifecycle=lifecycle,
        selector=TableSelector(names=("over-provisioned", "spiky")),
        lookback_seconds=70 * 60,
        billing_hour_utc=now.hour,
    )
    # When the metrics audit runs in the billing hour
    result = run_metrics_audit(build_clients(REGION), store, inbox.sns, params, now, sleep=lambda _s: None)
    # Then the over-provisioned table's billing finding is stored, from the billing read; from 100 minutes of data it
    # is a 'collecting data' finding (no saving), stored muted and not announced
    assert result.detector_errors == []
    assert result.billing is not None and result.billing["tables_decided"] == 2
    over_id = fingerprint(FindingKind.BILLING_MODE, ACCOUNT, REGION, "over-provisioned", None, "billing_mode")
    state = store.get(over_id)
    assert state is not None and state.status is FindingStatus.NEW
    assert state.finding.evidence["source"] == "cloudwatch_billing"
    assert state.finding.evidence["collecting_data"] is True and "monthly_savings" not in state.finding.evidence
    assert state.finding.account == ACCOUNT
    assert state.finding.evidence["preliminary"] is True and state.muted
    assert inbox.messages() == []
    # And the stale one resolves: the billing run read the spiky table's series in full and found nothing to change
    resolved = store.get(stale.id)
    assert resolved is not None and resolved.status is FindingStatus.RESOLVED
    # When the CloudTrail window evaluator later resolves by absence on the same table (its scope: CloudTrail only)
    later = now + timedelta(days=3)
    record_findings(
        store,
        inbox.sns,
        inbox.topic_arn,
        [],
        now=later,
        scope=ResolveScope.tables({(ACCOUNT, REGION, "over-provisioned"): later}, [SOURCE_CLOUDTRAIL]),
        resolve_after_seconds=3600,
    )
    # Then the billing finding stays open: absence in CloudTrail proves nothing about billing
    kept = store.get(over_id)
    assert kept is not None and kept.status is FindingStatus.NEW
    # And the next billing run sees it again: ongoing, nothing new published (a minute later, in that minute's hour:
    # when the data ends in an hour's last minute, the next minute is in the next hour)
    next_run = now + timedelta(minutes=1)
    again = run_metrics_audit(
        build_clients(REGION),
        store,
        inbox.sns,
        replace(params, billing_hour_utc=next_run.hour),
        next_run,
        sleep=lambda _s: None,
    )
    assert (again.recorded.new, again.recorded.resolved) == (0, 0)
    ongoing = store.get(over_id)
    assert ongoing is not None and ongoing.status is FindingStatus.ONGOING

"""Billing in the live audit against moto server: planted consumed and provisioned capacity -> ``billing_mode``
findings from ``ddb-audit audit``, and through the metrics audit into the state table, where the metrics audit (not
the CloudTrail evaluator) may resolve them."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from auditor.cli import main
from auditor.lifecycle import FindingStatus
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.service.audit import build_clients
from auditor.service.metrics_audit import MetricsAuditParams, run_metrics_audit
from auditor.service.record import SOURCE_CLOUDTRAIL, LifecycleParams, ResolveScope, record_findings
from auditor.sinks.findings_store import FindingsStore
from auditor.sources.inventory import TableSelector
from tests.functional.conftest import TopicInbox, client, create_state_table
from tests.functional.cw_support import aws, create_table, minutes, put_points

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
    # When the audit looks back 72 minutes (the window starts on a 5-minute boundary: up to 77 minutes)
    code = main(["audit", "--format", "json", "--days", "0.05"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["errors"] == []
    billing = {f["table"]: f for f in doc["findings"] if f["kind"] == "billing_mode"}
    # Then the over-provisioned table is told to right-size its auto scaling and the steady on-demand table to switch
    # to provisioned; the spiky on-demand table stays as it is
    assert set(billing) == {"over-provisioned", "steady-on-demand"}
    over = billing["over-provisioned"]
    ev = over["evidence"]
    assert (ev["current_mode"], ev["recommended_mode"], ev["action"]) == (
        "PROVISIONED",
        "PROVISIONED",
        "adjust_provisioned",
    )
    # (1000 x 0.00013 + 1000 x 0.00065) x 730 = $569.40/month today; 15 RCU + 8 WCU at 70 % = $5.22/month
    assert ev["monthly_cost_current"] == pytest.approx(569.40, rel=0.01)
    assert ev["monthly_cost_recommended"] == pytest.approx(5.22, rel=0.05)
    assert ev["monthly_savings"] == pytest.approx(564.2, rel=0.01)
    # About an hour of data: a real saving, stated at low confidence and low severity (not 14 days' worth)
    assert 0.05 <= ev["days_analyzed"] <= 0.055
    assert ev["confidence"] < 0.01
    assert over["severity"] == "low"
    assert (over["account"], over["region"], over["table"], over["index"]) == (
        ACCOUNT,
        REGION,
        "over-provisioned",
        None,
    )
    assert ev["source"] == "cloudwatch"
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
    assert "table_class" not in {f["kind"] for f in doc["findings"]}  # moto's tables hold no data


# -------------------------------------------------------------------------------------------- metrics audit


def stale_billing_finding(table: str, seen: datetime) -> Finding:
    """A billing_mode finding as an earlier metrics audit stored it (CloudWatch-sourced)."""
    return Finding(
        id=fingerprint(FindingKind.BILLING_MODE, ACCOUNT, REGION, table, None, "billing_mode"),
        kind=FindingKind.BILLING_MODE,
        severity=Severity.LOW,
        account=ACCOUNT,
        region=REGION,
        table=table,
        title=f"{table}: switch to provisioned saves $50.00/month",
        summary="An earlier audit.",
        recommendation="Switch.",
        evidence={
            "current_mode": "PAY_PER_REQUEST",
            "recommended_mode": "PROVISIONED",
            "monthly_cost_current": 80.0,
            "monthly_cost_recommended": 30.0,
            "monthly_savings": 50.0,
            "days_analyzed": 1.0,
            "source": "cloudwatch",
        },
        first_seen=seen - timedelta(days=1),
        last_seen=seen,
    )


def test_metrics_audit_records_billing_findings_and_only_cloudwatch_resolves_them(
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
    )
    # When the hourly metrics audit runs
    result = run_metrics_audit(build_clients(REGION), store, inbox.sns, params, now, sleep=lambda _s: None)
    # Then the over-provisioned table's billing finding is stored, CloudWatch-sourced, and announced as new
    assert result.detector_errors == []
    over_id = fingerprint(FindingKind.BILLING_MODE, ACCOUNT, REGION, "over-provisioned", None, "billing_mode")
    state = store.get(over_id)
    assert state is not None and state.status is FindingStatus.NEW
    assert state.finding.evidence["source"] == "cloudwatch"
    assert state.finding.evidence["monthly_savings"] == pytest.approx(564.2, rel=0.01)
    assert state.finding.account == ACCOUNT
    msgs = inbox.messages()
    assert [(m["table"], m["kind"], m["status"]) for m in msgs] == [("over-provisioned", "billing_mode", "new")]
    # And the stale one resolves: the audit read the spiky table's metrics in full and billing found nothing there
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
    # And the next hourly run sees it again: ongoing, nothing new published
    again = run_metrics_audit(
        build_clients(REGION), store, inbox.sns, params, now + timedelta(minutes=1), sleep=lambda _s: None
    )
    assert (again.recorded.new, again.recorded.resolved) == (0, 0)
    ongoing = store.get(over_id)
    assert ongoing is not None and ongoing.status is FindingStatus.ONGOING

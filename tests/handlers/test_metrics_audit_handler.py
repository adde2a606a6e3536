"""The hourly metrics-audit Lambda end to end on moto server: planted CloudWatch metrics -> findings in the state
table -> SNS (-> SQS), once; its scope (it resolves its own findings only) and the correlation with CloudTrail."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog
from botocore.exceptions import ClientError

from auditor.config import get_settings
from auditor.exceptions import ConfigurationError
from auditor.lifecycle import FindingStatus
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.service.audit import AuditError
from auditor.service.record import ResolveScope, record_findings
from auditor.state.findings_store import FindingsStore
from handlers import metrics_audit, runtime
from tests.cw_support import aws, create_table, minutes, put_points
from tests.lambda_context import lambda_context
from tests.moto_server import TopicInbox, client, create_state_table

EVENT = Path(__file__).resolve().parents[2] / "events" / "metrics_audit_schedule.json"
STATE = "auditor-state"
ACCOUNT, REGION = "123456789012", "us-east-1"  # moto's account: the tables' ARNs carry it

CONTEXT = lambda_context("metrics-audit")


@dataclass
class Env:
    endpoint: str
    inbox: TopicInbox
    store: FindingsStore
    now: datetime

    def invoke(self, at: datetime | None = None) -> dict[str, Any]:
        event = json.loads(EVENT.read_text())
        event["time"] = (at or self.now).strftime("%Y-%m-%dT%H:%M:%SZ")
        return metrics_audit.lambda_handler(event, CONTEXT)

    def states(self) -> dict[tuple[str, str], Any]:
        """Stored findings by (table, kind) (one per pair in these tests)."""
        ddb = client("dynamodb", self.endpoint)
        items = ddb.scan(TableName=STATE, ConsistentRead=True)["Items"]
        out = {}
        for item in items:
            if item["pk"]["S"].startswith("FINDING#"):
                state = self.store.get(item["id"]["S"])
                assert state is not None
                out[(state.finding.table, state.finding.kind.value)] = state
        return out

    def seed(self, *findings: Finding) -> None:
        """Store findings as another source did (opened and announced earlier)."""
        record_findings(
            self.store, self.inbox.sns, self.inbox.topic_arn, findings, now=self.now - timedelta(days=2),
            scope=ResolveScope.nothing(),
        )  # fmt: skip
        self.inbox.messages()


@pytest.fixture
def env(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    """Planted metrics (the last 40 minutes) on three tables, the state table, the topic and the environment."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # moto answers HTTP 500 for Contributor Insights: do not retry it
    ddb, cw = aws("dynamodb", aws_reset), aws("cloudwatch", aws_reset)
    now = int(time.time())
    t0 = now - now % 60 - 40 * 60
    create_table(ddb, "hot-partition", read=1000, write=1000)
    put_points(cw, "WriteKeyRangeThroughputThrottleEvents", "hot-partition", minutes(t0, 6, 40))
    put_points(cw, "WriteThrottleEvents", "hot-partition", minutes(t0, 6, 40))
    put_points(cw, "ConsumedWriteCapacityUnits", "hot-partition", minutes(t0, 30, 6000))
    create_table(ddb, "under-provisioned", read=10, write=10)
    put_points(cw, "ReadProvisionedThroughputThrottleEvents", "under-provisioned", minutes(t0, 35, 20))
    put_points(cw, "ConsumedReadCapacityUnits", "under-provisioned", minutes(t0, 35, 600))
    create_table(ddb, "quiet")
    put_points(cw, "ConsumedReadCapacityUnits", "quiet", minutes(t0, 30, 120))

    create_state_table(client("dynamodb", aws_reset), STATE)
    inbox = TopicInbox(aws_reset)
    monkeypatch.setenv("STATE_TABLE_NAME", STATE)
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", inbox.topic_arn)
    monkeypatch.setenv("RESOLVE_AFTER_SECONDS", "3600")
    # Billing is decided in one hour of the day (tests/handlers/test_metrics_audit_billing.py): not in these runs
    monkeypatch.setenv("BILLING_AUDIT_HOUR_UTC", str((datetime.fromtimestamp(now, UTC).hour + 12) % 24))
    get_settings.cache_clear()
    runtime.reset()
    store = FindingsStore(client("dynamodb", aws_reset), STATE, sleep=lambda _s: None)
    yield Env(aws_reset, inbox, store, datetime.fromtimestamp(now, UTC))
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def cloudtrail_finding(kind: FindingKind, table: str, seen: datetime, **evidence: Any) -> Finding:
    """A finding as the window evaluator stores it (CloudTrail: same account and region as the tables)."""
    key = evidence.get("key")
    return Finding(
        id=fingerprint(kind, ACCOUNT, REGION, table, None, key or evidence.get("principal")),
        kind=kind,
        severity=Severity.MEDIUM,
        account=ACCOUNT,
        region=REGION,
        table=table,
        title=f"{kind} on {table} from CloudTrail",
        summary="Seen in the CloudTrail data events.",
        recommendation="Fix it.",
        evidence={**evidence, "source": "cloudtrail"},
        first_seen=seen - timedelta(minutes=15),
        last_seen=seen,
    )


# ---------------------------------------------------------------------------------------------------------- tests


def test_findings_are_stored_and_published_once(env: Env) -> None:
    # When the schedule fires
    first = env.invoke()
    # Then each throttling table has a CloudWatch finding in the state table, published once as new
    states = env.states()
    assert set(states) == {("hot-partition", "throttling"), ("under-provisioned", "throttling")}
    causes = {t: s.finding.evidence["cause"] for (t, _), s in states.items()}
    assert causes == {"hot-partition": "key_range", "under-provisioned": "provisioned"}
    assert all(s.status is FindingStatus.NEW and s.finding.evidence["source"] == "cloudwatch" for s in states.values())
    msgs = env.inbox.messages()
    assert sorted((m["table"], m["kind"], m["status"]) for m in msgs) == [
        ("hot-partition", "throttling", "new"),
        ("under-provisioned", "throttling", "new"),
    ]
    # (four tables: the state table is in the account too, and audited like any other)
    assert (first["tables"], first["findings"], first["new"], first["published"], first["publish_failed"]) == (
        4,
        2,
        2,
        2,
        0,
    )
    assert first["api_calls"] > 0 and first["metrics_requested"] > 0
    assert first["resolvable"] == 4  # CloudWatch on every table; no Contributor Insights report (moto has none)
    # When the next hourly run sees the same metrics
    second = env.invoke(env.now + timedelta(hours=1))
    # Then nothing new is published; the findings are ongoing
    assert env.inbox.messages() == []
    assert (second["new"], second["events_queued"], second["published"]) == (0, 0, 0)
    assert {s.status for s in env.states().values()} == {FindingStatus.ONGOING}


def test_it_resolves_its_own_stale_findings_and_never_cloudtrail_ones(env: Env) -> None:
    # Given a CloudWatch scan finding on the quiet table and a CloudTrail scan finding on it, both last seen 2 days ago
    old = env.now - timedelta(days=2)
    cw_scan = cloudtrail_finding(FindingKind.SCAN, "quiet", old, principal=None, operation="Scan", count=300)
    cw_scan = cw_scan.model_copy(
        update={
            "id": fingerprint(FindingKind.SCAN, ACCOUNT, REGION, "quiet", None, {"operation": "Scan"}),
            "evidence": {**cw_scan.evidence, "source": "cloudwatch"},
        }
    )
    trail_scan = cloudtrail_finding(
        FindingKind.SCAN, "quiet", old, principal="arn:aws:iam::123456789012:role/nightly", operation="Scan", count=40
    )
    env.seed(cw_scan, trail_scan)
    # When the audit reads the quiet table (all its series) and finds nothing there
    result = env.invoke()
    # Then its own stale CloudWatch finding resolves, and the CloudTrail finding stays open
    assert result["resolved"] == 1
    assert env.store.get(cw_scan.id).status is FindingStatus.RESOLVED  # type: ignore[union-attr]
    assert env.store.get(trail_scan.id).status is FindingStatus.NEW  # type: ignore[union-attr]


def test_a_cloudtrail_hot_key_is_raised_and_linked_with_key_range_throttling(env: Env) -> None:
    # Given an open CloudTrail hot_key on the table whose writes hit the key-range limit
    hot = cloudtrail_finding(
        FindingKind.HOT_KEY,
        "hot-partition",
        env.now - timedelta(minutes=20),
        key={"pk": "DEVICE#7"},
        share=0.6,
        requests=9000,
        window_seconds=900,
    )
    env.seed(hot)
    # When the audit runs
    env.invoke()
    # Then the hot key is raised one step and linked with the throttling finding, and announced as worsened
    states = env.states()
    stored_hot, throttling = states[("hot-partition", "hot_key")], states[("hot-partition", "throttling")]
    assert stored_hot.finding.severity is Severity.HIGH and stored_hot.status is FindingStatus.WORSENED
    assert stored_hot.finding.evidence["related_finding_ids"] == [throttling.id]
    assert throttling.finding.evidence["related_finding_ids"] == [hot.id]
    msgs = {(m["table"], m["kind"]): m for m in env.inbox.messages()}
    assert (msgs[("hot-partition", "hot_key")]["status"], msgs[("hot-partition", "hot_key")]["previous_severity"]) == (
        "worsened",
        "medium",
    )
    # A second run correlates again without raising twice
    env.invoke(env.now + timedelta(hours=1))
    assert env.states()[("hot-partition", "hot_key")].finding.severity is Severity.HIGH
    assert env.inbox.messages() == []


def test_table_selection_comes_from_the_environment(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUDIT_TABLES", "quiet,under-provisioned")
    get_settings.cache_clear()
    result = env.invoke()
    assert result["tables"] == 2
    assert set(env.states()) == {("under-provisioned", "throttling")}


def test_an_unreadable_table_list_fails_the_invocation(env: Env) -> None:
    def deny(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}}, "ListTables")

    audit_clients = runtime.CLIENTS.audit
    audit_clients.dynamodb.meta.events.register("before-parameter-build.dynamodb.ListTables", deny)
    with pytest.raises(AuditError, match="AccessDeniedException"):
        env.invoke()
    assert env.inbox.messages() == []


def test_missing_topic_is_a_clear_error(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FINDINGS_TOPIC_ARN")
    get_settings.cache_clear()
    with pytest.raises(ConfigurationError, match="FINDINGS_TOPIC_ARN is required"):
        env.invoke()


def test_a_detector_that_fails_on_a_table_proves_no_absence_there(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a stale CloudWatch throttling finding on the quiet table
    old = env.now - timedelta(days=2)
    stale = cloudtrail_finding(FindingKind.THROTTLING, "quiet", old, cause="provisioned")
    stale = stale.model_copy(update={"evidence": {**stale.evidence, "source": "cloudwatch"}})
    env.seed(stale)
    # When the scan-volume detector crashes on that table during the audit
    import dataclasses

    from auditor.detectors import registry

    real = registry.get("cw_scan")

    def crash_on_quiet(data: Any, cfg: Any) -> list[Finding]:
        if data.profile.name == "quiet":
            raise RuntimeError("planted detector failure")
        return real.detect(data, cfg)

    monkeypatch.setitem(registry._REGISTRY, "cw_scan", dataclasses.replace(real, detect=crash_on_quiet))
    result = env.invoke()
    # Then the failure is reported, the other tables are audited, and the stale finding stays open
    assert result["detector_errors"] == ["cw_scan on quiet: RuntimeError: planted detector failure"]
    assert result["new"] == 2 and result["resolved"] == 0
    assert env.store.get(stale.id).status is FindingStatus.NEW  # type: ignore[union-attr]


MEMBER = "222233334444"


def _member_session(endpoint: str) -> Any:
    """A session in the member account on moto (requests with assumed-role credentials count for that account)."""
    import boto3

    sts = boto3.Session().client("sts", endpoint_url=endpoint, region_name=REGION)  # not the default session
    creds = sts.assume_role(RoleArn=f"arn:aws:iam::{MEMBER}:role/setup", RoleSessionName="setup")["Credentials"]
    return boto3.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
    )


def test_accounts_and_regions_from_the_environment_are_each_audited_and_attributed(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a member account whose eu-west-1 table is throttled, and the audit told to cover both accounts and Regions
    from auditor.sources.audit_clients import clients_for
    from tests.cw_support import TEST_CONFIG

    member = clients_for(_member_session(env.endpoint), "eu-west-1")
    create_table(member.dynamodb, "member-throttled", read=10, write=10)
    now = int(env.now.timestamp())
    t0 = now - now % 60 - 40 * 60
    cw = _member_session(env.endpoint).client("cloudwatch", region_name="eu-west-1", config=TEST_CONFIG)
    put_points(cw, "ReadProvisionedThroughputThrottleEvents", "member-throttled", minutes(t0, 35, 20))
    put_points(cw, "ConsumedReadCapacityUnits", "member-throttled", minutes(t0, 35, 600))
    monkeypatch.setenv("AUDIT_ACCOUNTS", f"{ACCOUNT},{MEMBER}")
    monkeypatch.setenv("AUDIT_REGIONS", "us-east-1,eu-west-1")
    monkeypatch.setenv("MEMBER_ROLE_NAME", "DdbTrafficAuditorMember")
    get_settings.cache_clear()
    # When the schedule fires
    result = env.invoke()
    # Then all four account/Region pairs ran, and each finding carries its own account and Region
    assert (result["targets"], result["targets_audited"], result["coverage_gaps"]) == (4, 4, [])
    where = {(t, k): (s.finding.account, s.finding.region) for (t, k), s in env.states().items()}
    assert where == {
        ("hot-partition", "throttling"): (ACCOUNT, "us-east-1"),
        ("under-provisioned", "throttling"): (ACCOUNT, "us-east-1"),
        ("member-throttled", "throttling"): (MEMBER, "eu-west-1"),
    }
    messages = env.inbox.messages()
    assert {(m["table"], m["status"]) for m in messages if m["kind"] != "digest"} == {
        ("hot-partition", "new"),
        ("under-provisioned", "new"),
        ("member-throttled", "new"),
    }
    # every pair recorded its findings, and the invocation drained the outbox once: one digest for the three
    # (the inbox's per-finding subscription filters digests out)
    assert (result["published"], result["digests"]) == (3, 1)
    # the cost ledger of each pair with tables, and the total over them
    cost = result["cost"]
    pairs = {(p["account"], p["region"]) for p in cost["targets"]}
    assert pairs == {(ACCOUNT, "us-east-1"), (MEMBER, "eu-west-1")}
    assert {(r["account"], r["region"], r["table"]) for r in cost["tables"]} >= {
        (MEMBER, "eu-west-1", "member-throttled"),
        (ACCOUNT, "us-east-1", "hot-partition"),
    }
    assert cost["total"]["auditor_usd"] == pytest.approx(sum(p["auditor_usd"] for p in cost["targets"]))
    assert cost["total"]["dynamodb_usd"] == pytest.approx(sum(p["dynamodb_usd"] for p in cost["targets"]))
    assert cost["total"]["dynamodb_usd"] > 0
    total = cost["total"]
    assert total["ratio"] == pytest.approx(total["auditor_usd"] / total["dynamodb_usd"], abs=1e-9)
    # the pairs are listed in a fixed order (account, Region), whatever order they ran in
    assert [(p["account"], p["region"]) for p in result["per_target"]] == sorted(
        (p["account"], p["region"]) for p in result["per_target"]
    )
    # the cycle is stored and finished; the next hour's invocation begins a new one
    assert result["cycle"]["pairs"] == 4 and result["cycle"]["remaining"] == 0
    assert result["cycle"]["resumed"] is False


def test_with_too_little_time_left_no_pair_starts_and_each_is_a_deferred_gap(env: Env) -> None:
    import boto3

    from auditor.service.metrics_audit import MetricsAuditParams, run_org_metrics_audit
    from auditor.service.record import LifecycleParams
    from auditor.sources.org import SessionFactory

    params = MetricsAuditParams(lifecycle=LifecycleParams(topic_arn=env.inbox.topic_arn))
    result = run_org_metrics_audit(
        SessionFactory(boto3.Session(region_name=REGION), "DdbTrafficAuditorMember", own_account=ACCOUNT),
        lambda: ([ACCOUNT, MEMBER], [REGION]),
        env.store,
        env.inbox.sns,
        params,
        env.now,
        time_left=lambda: 90.0,  # below the 120-second reserve
    )
    assert result.runs == []
    assert sorted((g.account, g.reason) for g in result.gaps) == [(ACCOUNT, "deferred"), (MEMBER, "deferred")]
    assert env.states() == {}


# ------------------------------------------------------------------------------------------------ the daily ledger


def test_each_run_books_its_hour_in_the_daily_ledger_once(env: Env) -> None:
    from auditor.billing.pricing import bundled_prices
    from auditor.state.ledger_store import LedgerStore

    first = env.invoke()
    env.invoke()  # a retried event: the same hour, overwritten
    ledger = LedgerStore(client("dynamodb", env.endpoint), STATE)
    end = int(env.now.timestamp()) // 60 * 60
    day = datetime.fromtimestamp(end - 1, UTC).date()
    entries = {e.table: e for e in ledger.entries([day])}
    assert {"hot-partition", "under-provisioned", "quiet", STATE} <= set(entries)
    hot = entries["hot-partition"]
    prices = bundled_prices(REGION).standard
    # provisioned 1,000 RCU and 1,000 WCU in force (DescribeTable; moto publishes no Provisioned* series) for one hour
    assert hot.dynamodb.lines["reads"] == pytest.approx(1000 * prices.rcu_hour)
    assert hot.dynamodb.lines["writes"] == pytest.approx(1000 * prices.wcu_hour)
    assert hot.auditor.lines["cloudwatch_metrics"] > 0
    assert "cloudtrail_data_events" not in hot.auditor.lines  # no window evaluated: no data events booked
    booked = sum(e.auditor.lines.get("cloudwatch_metrics", 0.0) for e in entries.values())
    assert booked == pytest.approx(first["metrics_requested"] * 0.01 / 1000)  # every metric read, booked once
    items = client("dynamodb", env.endpoint).query(
        TableName=STATE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": f"LEDGER#{day.isoformat()}"}},
    )["Items"]
    hot_item = next(i for i in items if i["sk"]["S"] == f"{ACCOUNT}#{REGION}#hot-partition#H")
    assert [k for k in hot_item if k.startswith("hour_")] == [f"hour_{end - 3600}"]
    # The next hour is a second entry of the same day (or the next day's first)
    env.invoke(env.now + timedelta(hours=1))
    day2 = datetime.fromtimestamp(end + 3600 - 1, UTC).date()
    later = [e for e in ledger.entries(sorted({day, day2})) if e.table == "hot-partition"]
    assert sum(e.dynamodb.lines["writes"] for e in later) == pytest.approx(2 * 1000 * prices.wcu_hour)

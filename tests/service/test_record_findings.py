"""record_findings: the one lifecycle path every source stores and publishes through (moto server, SNS -> SQS)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from auditor.config import AnalysisConfig
from auditor.kernel.aggregates.window import AggregateSet
from auditor.lifecycle import FindingStatus, SuppressRule
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.service.evaluate import EvaluationParams, run_evaluation
from auditor.service.record import (
    SOURCE_CLOUDTRAIL,
    SOURCE_CLOUDWATCH,
    SOURCE_STREAMS,
    OpenFindings,
    RecordResult,
    ResolveScope,
    finding_source,
    record_findings,
)
from auditor.state import keys
from auditor.state.findings_store import FindingsStore
from auditor.state.window_store import WindowStore
from tests import factories as f
from tests.moto_server import TopicInbox, client, create_state_table

TABLE = "auditor-state"
ACCOUNT, REGION = "111122223333", "us-east-1"
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
ORDERS = (ACCOUNT, REGION, "Orders")


def finding(
    kind: FindingKind,
    *,
    source: str | None,
    table: str = "Orders",
    severity: Severity = Severity.MEDIUM,
    seen: datetime = T0,
    discriminator: Any = None,
) -> Finding:
    evidence: dict[str, Any] = {"source": source} if source else {}
    return Finding(
        id=fingerprint(kind, ACCOUNT, REGION, table, None, discriminator or source),
        kind=kind,
        severity=severity,
        account=ACCOUNT,
        region=REGION,
        table=table,
        title=f"{kind} on {table} ({source})",
        summary="A planted finding.",
        recommendation="Fix it.",
        evidence=evidence,
        first_seen=seen - timedelta(minutes=10),
        last_seen=seen,
    )


def throttling(source: str, **kw: Any) -> Finding:
    return finding(FindingKind.THROTTLING, source=source, **kw)


class Env:
    def __init__(self, endpoint: str) -> None:
        self.ddb = client("dynamodb", endpoint)
        create_state_table(self.ddb, TABLE)
        self.store = FindingsStore(self.ddb, TABLE, sleep=lambda _s: None)
        self.inbox = TopicInbox(endpoint)

    def record(self, findings: list[Finding], now: datetime, scope: ResolveScope, **kw: Any) -> RecordResult:
        kw.setdefault("resolve_after_seconds", 3600)
        return record_findings(self.store, self.inbox.sns, self.inbox.topic_arn, findings, now=now, scope=scope, **kw)

    def status(self, f: Finding) -> FindingStatus:
        state = self.store.get(f.id)
        assert state is not None, f.id
        return state.status

    def outbox(self) -> list[dict[str, Any]]:
        items = self.ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
        return [i for i in items if i[keys.PK]["S"].startswith("OUTBOX#")]


@pytest.fixture
def env(aws_reset: str) -> Env:
    return Env(aws_reset)


def cloudwatch_scope(at: datetime, *tables: tuple[str | None, str | None, str]) -> ResolveScope:
    return ResolveScope.tables(dict.fromkeys(tables or (ORDERS,), at), [SOURCE_CLOUDWATCH])


# ----------------------------------------------------------------------------------------------- store and publish


def test_new_findings_are_stored_and_published_once(env: Env) -> None:
    # Given two findings from the metrics audit
    found = [throttling(SOURCE_CLOUDWATCH, severity=Severity.HIGH), finding(FindingKind.SCAN, source="cloudwatch")]
    # When they are recorded
    first = env.record(found, T0 + HOUR, cloudwatch_scope(T0 + HOUR))
    # Then both are stored as new and published once each, with the finding contract's attributes
    counts = (first.findings_seen, first.new, first.events_queued, first.published, first.publish_failed)
    assert counts == (2, 2, 2, 2, 0)
    assert {env.status(x) for x in found} == {FindingStatus.NEW}
    msgs = env.inbox.messages()
    assert sorted((m["finding_id"], m["status"], m["kind"]) for m in msgs) == sorted(
        (x.id, "new", x.kind.value) for x in found
    )
    assert env.outbox() == []
    # When the same findings are recorded again (the next hourly run)
    again = env.record(found, T0 + 2 * HOUR, cloudwatch_scope(T0 + 2 * HOUR))
    # Then they are ongoing, and nothing is queued or published
    assert (again.states_written, again.events_queued, again.published) == (2, 0, 0)
    assert {env.status(x) for x in found} == {FindingStatus.ONGOING}
    assert env.inbox.messages() == []
    # and a third identical run changes nothing at all
    assert env.record(found, T0 + 3 * HOUR, cloudwatch_scope(T0 + 3 * HOUR)).states_written == 0


def test_a_severity_rise_is_published_as_worsened(env: Env) -> None:
    low = throttling(SOURCE_CLOUDWATCH, severity=Severity.LOW)
    env.record([low], T0, cloudwatch_scope(T0))
    env.inbox.messages()
    high = low.model_copy(update={"severity": Severity.HIGH, "last_seen": T0 + HOUR})
    result = env.record([high], T0 + HOUR, cloudwatch_scope(T0 + HOUR))
    assert (result.worsened, result.published) == (1, 1)
    (msg,) = env.inbox.messages()
    assert (msg["status"], msg["severity"], msg["previous_severity"]) == ("worsened", "high", "low")


# ----------------------------------------------------------------------------------------------- who resolves what


def test_a_source_resolves_only_its_own_findings_on_the_tables_it_read(env: Env) -> None:
    # Given open findings on Orders from CloudTrail, CloudWatch and Streams, and a CloudWatch one on another table
    trail = throttling(SOURCE_CLOUDTRAIL)
    metrics = throttling(SOURCE_CLOUDWATCH)
    stream = finding(FindingKind.LARGE_ITEM, source=SOURCE_STREAMS, discriminator={"pk": "A"})
    elsewhere = throttling(SOURCE_CLOUDWATCH, table="Invoices")
    env.record([trail, metrics, stream, elsewhere], T0, ResolveScope.nothing())
    # When the metrics audit reads Orders only, a day later, and sees nothing
    result = env.record([], T0 + 24 * HOUR, cloudwatch_scope(T0 + 24 * HOUR), publish_resolved=True)
    # Then only the CloudWatch finding on Orders resolves (and, with PUBLISH_RESOLVED, is announced)
    assert result.resolved == 1
    assert env.status(metrics) is FindingStatus.RESOLVED
    assert {env.status(x) for x in (trail, stream, elsewhere)} == {FindingStatus.NEW}
    (msg,) = [m for m in env.inbox.messages() if m["status"] == "resolved"]
    assert msg["finding_id"] == metrics.id


def test_absence_shorter_than_resolve_after_resolves_nothing(env: Env) -> None:
    metrics = throttling(SOURCE_CLOUDWATCH)
    env.record([metrics], T0, cloudwatch_scope(T0))
    # the horizon is 59 minutes after last_seen: not yet
    result = env.record([], T0 + HOUR, cloudwatch_scope(T0 + timedelta(minutes=59)))
    assert result.resolved == 0 and env.status(metrics) is FindingStatus.NEW


def test_resolved_events_are_stored_but_not_published_by_default(env: Env) -> None:
    metrics = throttling(SOURCE_CLOUDWATCH)
    env.record([metrics], T0, cloudwatch_scope(T0))
    env.inbox.messages()
    result = env.record([], T0 + 2 * HOUR, cloudwatch_scope(T0 + 2 * HOUR))
    assert (result.resolved, result.events_queued, result.published) == (1, 0, 0)
    assert env.status(metrics) is FindingStatus.RESOLVED
    assert env.inbox.messages() == []


def test_the_nothing_scope_never_resolves(env: Env) -> None:
    stream = finding(FindingKind.LARGE_ITEM, source=SOURCE_STREAMS, discriminator={"pk": "A"})
    env.record([stream], T0, ResolveScope.nothing())
    requests: list[str] = []
    env.ddb.meta.events.register("before-call.dynamodb", lambda model, **_: requests.append(model.name))
    result = env.record([], T0 + 30 * 24 * HOUR, ResolveScope.nothing(), publish_limit=0)
    assert requests == []  # no sighting, nothing in scope: no state-table request at all
    assert result.states_written == 0 and env.status(stream) is FindingStatus.NEW


def test_the_window_evaluator_does_not_resolve_other_sources_findings(env: Env) -> None:
    # Given an open CloudWatch throttling finding and an open CloudTrail scan finding on Sessions
    metrics = throttling(SOURCE_CLOUDWATCH, table="Sessions")
    trail_scan = finding(FindingKind.SCAN, source=SOURCE_CLOUDTRAIL, table="Sessions", seen=f.T0 - 24 * HOUR)
    metrics = metrics.model_copy(update={"last_seen": f.T0 - 24 * HOUR})
    env.record([metrics, trail_scan], f.T0 - 24 * HOUR, ResolveScope.nothing())
    # When the evaluator evaluates healthy traffic on Sessions, far past resolve_after
    windows = WindowStore(env.ddb, TABLE)
    aggs = AggregateSet(900)
    for i in range(20):
        aggs.add(f.call("GetItem", "Sessions", {"pk": f"S#{i}"}, at=i * 30, event_id=f"g{i}"))
    windows.put_contributions("s3://trail/a.json.gz", aggs, f.T0)
    params = EvaluationParams(
        AnalysisConfig(), env.inbox.topic_arn, resolve_after_seconds=3600, initial_lookback_seconds=3600
    )
    result = run_evaluation(windows, env.store, env.inbox.sns, params, f.T0 + timedelta(minutes=40))
    # Then the CloudTrail finding resolves and the CloudWatch one stays open
    assert result.tables == 1 and result.resolved == 1
    assert env.status(trail_scan) is FindingStatus.RESOLVED
    assert env.status(metrics) is FindingStatus.NEW


def test_finding_source_falls_back_to_the_kind_and_unknown_sources_never_resolve(env: Env) -> None:
    assert finding_source(finding(FindingKind.ITEM_SIZE_EXCEEDED, source=None)) == SOURCE_CLOUDTRAIL
    assert finding_source(finding(FindingKind.UNUSED_INDEX, source=None)) == SOURCE_CLOUDWATCH
    assert finding_source(finding(FindingKind.ITEM_GROWTH, source=None)) == SOURCE_STREAMS
    assert finding_source(finding(FindingKind.BILLING_MODE, source=None)) is None
    assert finding_source(throttling("cloudtrail")) == SOURCE_CLOUDTRAIL
    odd = finding(FindingKind.HOT_KEY, source=None)  # hot keys come from two sources: no fallback
    assert finding_source(odd) is None
    env.record([odd], T0, ResolveScope.nothing())
    scope = ResolveScope.tables({ORDERS: T0 + 48 * HOUR}, [SOURCE_CLOUDTRAIL, SOURCE_CLOUDWATCH, SOURCE_STREAMS])
    assert env.record([], T0 + 48 * HOUR, scope).resolved == 0
    assert env.status(odd) is FindingStatus.NEW


# ----------------------------------------------------------------------------------------------- rules and failures


def test_a_suppress_rule_stores_the_finding_without_publishing(env: Env) -> None:
    rule = SuppressRule(table="Orders", kind=FindingKind.THROTTLING, reason="known, capacity raise planned")
    result = env.record([throttling(SOURCE_CLOUDWATCH)], T0, cloudwatch_scope(T0), rules=[rule])
    assert (result.new, result.muted, result.events_queued, result.published) == (1, 1, 0, 0)
    state = env.store.get(throttling(SOURCE_CLOUDWATCH).id)
    assert state is not None and state.muted_reason == "known, capacity raise planned"
    assert env.inbox.messages() == []


def test_a_failed_publish_stays_pending_and_is_sent_by_the_next_run(env: Env) -> None:
    metrics = throttling(SOURCE_CLOUDWATCH)
    wrong = env.inbox.topic_arn.replace(":findings", ":no-such-topic")
    failed = record_findings(env.store, env.inbox.sns, wrong, [metrics], now=T0, scope=cloudwatch_scope(T0))
    assert (failed.events_queued, failed.published, failed.publish_failed) == (1, 0, 1)
    (entry,) = env.outbox()
    assert entry["attempts"] == {"N": "1"} and failed.publish_errors
    # A stream-style run that queued nothing does not drain; a scheduled run does
    idle = env.record([], T0 + HOUR, ResolveScope.nothing(), publish_when_idle=False)
    assert idle.published == 0 and len(env.outbox()) == 1
    retry = env.record([], T0 + HOUR, ResolveScope.nothing())
    assert (retry.published, retry.publish_failed) == (1, 0) and env.outbox() == []
    (msg,) = env.inbox.messages()
    assert (msg["finding_id"], msg["status"]) == (metrics.id, "new")


def test_open_findings_are_read_once_per_table(env: Env) -> None:
    env.record([throttling(SOURCE_CLOUDWATCH)], T0, cloudwatch_scope(T0))
    queries: list[str] = []
    env.ddb.meta.events.register(
        "before-parameter-build.dynamodb.Query", lambda params, **_: queries.append(params.get("IndexName", ""))
    )
    shared = OpenFindings(env.store)
    assert len(shared.of(ORDERS)) == 1
    env.record([], T0 + HOUR, cloudwatch_scope(T0 + HOUR), open_findings=shared, publish_limit=0)
    assert queries == [keys.GSI1]

"""The window evaluator end to end (moto): window contributions -> findings lifecycle -> SNS -> SQS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
import structlog

from auditor.config import AnalysisConfig, get_settings
from auditor.engine import ingest_source
from auditor.kernel.aggregates.window import AggregateSet
from auditor.kernel.reader import Deduper, InputSource
from auditor.kernel.stats import IngestStats
from auditor.lifecycle import FindingStatus, SuppressRule
from auditor.models.finding import FindingKind
from auditor.service.evaluate import EvaluationParams, EvaluationResult, closed_window_starts, run_evaluation
from auditor.service.late import Reevaluation
from auditor.state.findings_store import FindingsStore
from auditor.state.window_store import SightingStore, WindowStore
from handlers import evaluator, runtime
from tests import factories as f
from tests.emf import emitted
from tests.lambda_context import FakeLambdaContext, lambda_context
from tests.moto_server import PER_FINDING_SUBSCRIPTION, client, create_state_table

EVENTS = Path(__file__).resolve().parents[2] / "events"
TABLE = "auditor-state"
T0 = f.T0  # 2026-12-01T10:00Z, a window boundary
ALICE = "arn:aws:iam::111122223333:user/alice"
REPORTING = "arn:aws:iam::111122223333:role/reporting"

CONTEXT = lambda_context("window-evaluator", account="111122223333")


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


class Env:
    """State table, window and findings stores, the topic and one SQS subscription to read what was published."""

    def __init__(self, endpoint: str) -> None:
        self.ddb = client("dynamodb", endpoint)
        create_state_table(self.ddb, TABLE)
        self.windows = WindowStore(self.ddb, TABLE)
        self.findings = FindingsStore(self.ddb, TABLE, sleep=lambda _s: None)
        self.sns = client("sns", endpoint)
        self.sqs = client("sqs", endpoint)
        self.topic_arn = self.sns.create_topic(Name="findings")["TopicArn"]
        self.queue_url = self.sqs.create_queue(QueueName="inbox")["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        self.sns.subscribe(TopicArn=self.topic_arn, Protocol="sqs", Endpoint=arn, Attributes=PER_FINDING_SUBSCRIPTION)
        self.sources = 0

    def put(self, calls: list[Any]) -> None:
        """Store ``calls`` as one source's window contributions."""
        aggs = AggregateSet(900)
        for c in calls:
            aggs.add(c)
        self.sources += 1
        self.windows.put_contributions(f"s3://trail/src-{self.sources}.json.gz", aggs, at(0))

    def params(self, **kw: Any) -> EvaluationParams:
        base: dict[str, Any] = {
            "analysis": AnalysisConfig(),
            "topic_arn": self.topic_arn,
            "evaluation_delay_seconds": 1200,
            "resolve_after_seconds": 3600,
            "max_windows_per_run": 200,
        }
        return EvaluationParams(**(base | kw))

    def run(self, now: datetime, **kw: Any) -> EvaluationResult:
        return run_evaluation(self.windows, self.findings, self.sns, self.params(**kw), now)

    def published(self) -> list[dict[str, Any]]:
        """Messages delivered since the last call: {status, severity, kind, table, finding_id, subject, finding}."""
        out: list[dict[str, Any]] = []
        while True:
            msgs = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not msgs:
                return out
            for m in msgs:
                body = orjson.loads(m["Body"])
                attrs = {k: v["Value"] for k, v in body["MessageAttributes"].items()}
                out.append(
                    {
                        **{k: attrs[k] for k in ("status", "severity", "kind", "table", "finding_id")},
                        "subject": body["Subject"],
                        "finding": orjson.loads(attrs["finding_json"]),
                    }
                )
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])


@pytest.fixture
def env(aws_reset: str) -> Env:
    return Env(aws_reset)


def sessions_traffic(start_min: float, n: int = 20) -> list[Any]:
    """Healthy GetItems on Sessions spread over a window starting ``start_min`` minutes after T0."""
    return [
        f.call("GetItem", "Sessions", {"pk": f"SESSION#{i}"}, at=start_min * 60 + i * 30, event_id=f"g{start_min}-{i}")
        for i in range(n)
    ]


def alice_scans(start_min: float, n: int) -> list[Any]:
    return [
        f.call("Scan", "Sessions", None, at=start_min * 60 + 10 + i * 20, principal=ALICE, event_id=f"s{start_min}-{i}")
        for i in range(n)
    ]


# ---------------------------------------------------------------------------------------------------- the window walk


def test_closed_window_starts() -> None:
    start = int(T0.timestamp())
    # First run: from now - 24 h, aligned; a window counts once its end plus the delay has passed.
    starts, backlog = closed_window_starts(None, at(35), window_seconds=900, delay_seconds=1200, max_windows=500)
    assert starts[0] == start - 86_400 + 900 * 2  # 10:35 - 24 h = 10:35 the day before, aligned down to 10:30
    assert starts[-1] == start and not backlog  # 10:00-10:15 closed at 10:35; 10:15 not yet
    # Later runs: the windows after the cursor, bounded.
    assert closed_window_starts(start, at(35), window_seconds=900, delay_seconds=1200, max_windows=5) == ([], False)
    assert closed_window_starts(start - 1800, at(35), window_seconds=900, delay_seconds=1200, max_windows=1) == (
        [start - 900],
        True,
    )


def test_lifecycle_end_to_end(env: Env) -> None:
    # Window 10:00: alice scans Sessions twice (info); the reporting role scans Catalog twice.
    env.put(
        [
            *sessions_traffic(0),
            *alice_scans(0, 2),
            f.call("Scan", "Catalog", None, at=100, principal=REPORTING, event_id="c1"),
            f.call("Scan", "Catalog", None, at=400, principal=REPORTING, event_id="c2"),
        ]
    )

    # First run (10:35: window 10:00 has closed): both findings are new and published.
    first = env.run(at(35))
    assert (first.new, first.events_queued, first.published, first.publish_failed) == (2, 2, 2, 0)
    assert first.cursor == int(T0.timestamp()) and first.cursor_advanced
    msgs = env.published()
    assert sorted((m["table"], m["status"], m["severity"]) for m in msgs) == [
        ("Catalog", "new", "info"),
        ("Sessions", "new", "info"),
    ]
    alice_id = next(m["finding_id"] for m in msgs if m["table"] == "Sessions")
    catalog_id = next(m["finding_id"] for m in msgs if m["table"] == "Catalog")

    # Second run, no new closed window: nothing evaluated, nothing re-published.
    again = env.run(at(40))
    assert again.window_starts == [] and again.states_written == 0 and again.published == 0
    assert env.published() == []

    # Window 10:15: the same problem again -> ongoing, not published.
    env.put([*sessions_traffic(15), *alice_scans(15, 2)])
    ongoing = env.run(at(50))
    assert ongoing.published == 0 and ongoing.events_queued == 0
    assert env.published() == []
    state = env.findings.get(alice_id)
    assert state is not None and state.status is FindingStatus.ONGOING
    assert state.first_seen == at(0) + timedelta(seconds=10)
    assert state.last_seen == at(15) + timedelta(seconds=30)

    # Window 10:30: thirty scans in fifteen minutes -> high -> worsened, published.
    env.put([*sessions_traffic(30), *alice_scans(30, 30)])
    worse = env.run(at(65))
    assert (worse.worsened, worse.published) == (1, 1)
    (msg,) = env.published()
    assert (msg["finding_id"], msg["status"], msg["severity"]) == (alice_id, "worsened", "high")
    assert msg["finding"]["first_seen"] == "2026-12-01T10:00:10Z"

    # Window 10:45: healthy Sessions traffic, only 15 minutes after the last scan: still open.
    env.put(sessions_traffic(45))
    assert env.run(at(80)).states_written == 0
    assert env.findings.get(alice_id).status is FindingStatus.WORSENED  # type: ignore[union-attr]

    # Window 11:45: healthy traffic more than an hour after the last scan -> resolved (not published by default).
    env.put(sessions_traffic(105))
    resolved = env.run(at(140))
    assert resolved.resolved == 1 and resolved.events_queued == 0 and resolved.published == 0
    assert env.published() == []
    state = env.findings.get(alice_id)
    assert state is not None and state.status is FindingStatus.RESOLVED and state.resolved_at == at(140)
    # Catalog had no traffic since 10:15: no evidence either way, its finding stays open.
    catalog = env.findings.get(catalog_id)
    assert catalog is not None and catalog.status is FindingStatus.NEW
    assert [s.id for s in env.findings.open_findings("111122223333", "us-east-1", "Catalog")] == [catalog_id]

    # The same scans come back at 12:30: the finding is re-opened, new again.
    env.put([*sessions_traffic(150), *alice_scans(150, 2)])
    reopened = env.run(at(185))
    assert reopened.new == 1
    (msg,) = env.published()
    assert (msg["finding_id"], msg["status"]) == (alice_id, "new")
    assert env.findings.pending() == []


def test_resolved_is_published_when_configured(env: Env) -> None:
    env.put([*sessions_traffic(0), *alice_scans(0, 2)])
    env.run(at(35), publish_resolved=True)
    (new,) = env.published()
    env.put(sessions_traffic(90))
    result = env.run(at(125), publish_resolved=True)
    assert (result.resolved, result.published) == (1, 1)
    (msg,) = env.published()
    assert (msg["finding_id"], msg["status"]) == (new["finding_id"], "resolved")
    assert msg["subject"].startswith("[INFO] resolved: ")


def test_suppressed_findings_are_stored_not_published(env: Env) -> None:
    env.put([*sessions_traffic(0), *alice_scans(0, 2)])
    rule = SuppressRule(table="Sess*", kind=FindingKind.SCAN, principal="*:user/*", reason="people may scan")
    result = env.run(at(35), rules=(rule,))
    assert (result.new, result.muted, result.events_queued, result.published) == (1, 1, 0, 0)
    assert env.published() == []
    (state,) = env.findings.open_findings("111122223333", "us-east-1", "Sessions")
    assert state.muted_reason == "people may scan"


def test_backlog_is_bounded_per_run_and_continued(env: Env) -> None:
    for w in range(4):
        env.put([*sessions_traffic(15 * w), *alice_scans(15 * w, 2)])
    now = at(80)  # 10:00 .. 10:45 are closed
    start = int(T0.timestamp())

    one = env.run(now, max_windows_per_run=2, initial_lookback_seconds=80 * 60)
    assert one.window_starts == [start, start + 900] and one.backlog
    two = env.run(now, max_windows_per_run=2, initial_lookback_seconds=80 * 60)
    assert two.window_starts == [start + 1800, start + 2700] and not two.backlog
    assert env.run(now, max_windows_per_run=2).window_starts == []
    assert [m["status"] for m in env.published()] == ["new"]  # one finding, announced once
    state = env.findings.get(env.findings.open_findings("111122223333", "us-east-1", "Sessions")[0].id)
    assert state is not None and state.last_seen == at(45) + timedelta(seconds=30)


def test_failed_publishes_are_retried_by_the_next_run(env: Env) -> None:
    env.put([*sessions_traffic(0), *alice_scans(0, 2)])
    bad = env.run(at(35), topic_arn=env.topic_arn + "-gone")
    assert (bad.events_queued, bad.published, bad.publish_failed) == (1, 0, 1)
    assert env.published() == []
    good = env.run(at(40))  # no new window: the outbox is drained anyway
    assert (good.window_starts, good.published) == ([], 1)
    assert [m["status"] for m in env.published()] == ["new"]


def test_generated_trail_first_run_publishes_planted_problems_once(env: Env, tmp_path: Path) -> None:
    # An hour of realistic CloudTrail traffic with planted problems, ingested as one log file.
    path = tmp_path / "trail.json.gz"
    f.write_log_file(f.planted_workload(T0, hours=1), path)
    aggs = ingest_source(InputSource(str(path), lambda: path.open("rb")), AnalysisConfig(), Deduper(), IngestStats())
    assert aggs is not None
    env.windows.put_contributions(f"s3://trail/{path.name}", aggs, at(70))

    first = env.run(at(80))

    assert len(first.window_starts) > 4 and first.table_windows >= 4 * 5
    msgs = env.published()
    assert {m["status"] for m in msgs} == {"new"}
    assert len(msgs) == first.findings_seen == first.new == first.published
    assert len({m["finding_id"] for m in msgs}) == len(msgs)
    kinds = {(m["table"], m["kind"]) for m in msgs}
    assert {
        ("Orders", "hot_key"),
        ("Sessions", "scan"),
        ("Jobs", "low_cardinality_key"),
        ("Documents", "item_size_exceeded"),
        ("Catalog", "scan"),
    } <= kinds
    assert "Users" not in {m["table"] for m in msgs}
    # Stored and open; nothing left in the outbox.
    assert len(env.findings.week_findings(T0)) == len(msgs)
    assert env.findings.pending() == []

    # The same windows delivered again (a redelivered file) and the schedule firing again: nothing new.
    env.windows.put_contributions(f"s3://trail/{path.name}", aggs, at(70))
    assert env.run(at(81)).published == 0
    assert env.run(at(96)).published == 0  # 10:45 .. 11:00 had no new traffic
    assert env.published() == []


# ---------------------------------------------------------------------------------------------------- the handler


@pytest.fixture
def handler_env(env: Env, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    monkeypatch.setenv("STATE_TABLE_NAME", TABLE)
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", env.topic_arn)
    get_settings.cache_clear()
    runtime.reset()
    yield env
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def schedule_event() -> dict[str, Any]:
    return json.loads((EVENTS / "evaluator_schedule.json").read_text())


def test_handler_runs_on_the_sample_schedule_event(handler_env: Env) -> None:
    event = schedule_event()
    assert event["detail-type"] == "Scheduled Event" and event["time"] == "2026-12-01T12:00:00Z"
    handler_env.put([*sessions_traffic(0), *alice_scans(0, 2)])

    # A fresh deployment starts 24 h back and reads at most 32 windows per invocation.
    results = []
    for _ in range(5):
        results.append(evaluator.lambda_handler(event, CONTEXT))
        if not results[-1]["backlog"]:
            break
    assert [r["windows"] for r in results] == [32, 32, 30]
    assert results[-1]["last_window"] == int(datetime(2026, 12, 1, 11, 15, tzinfo=UTC).timestamp())
    assert sum(int(r["published"]) for r in results) == 1  # type: ignore[call-overload]
    assert [m["status"] for m in handler_env.published()] == ["new"]
    assert structlog.contextvars.get_contextvars()["function_request_id"] == FakeLambdaContext.aws_request_id

    # The same scheduled event again (an asynchronous retry): nothing to do.
    again = evaluator.lambda_handler(event, CONTEXT)
    assert (again["windows"], again["published"]) == (0, 0)


def test_handler_health_metrics_lag_and_outbox(
    handler_env: Env, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    handler_env.put([*sessions_traffic(0), *alice_scans(0, 2)])
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", handler_env.topic_arn + "-gone")  # every publish fails
    get_settings.cache_clear()
    event = schedule_event()  # 12:00: the windows up to 11:15-11:30 are closed
    while evaluator.lambda_handler(event, CONTEXT)["backlog"]:
        pass
    runs = emitted(capsys.readouterr().out)
    assert sum(r["FindingsOpened"] for r in runs) == 1 and sum(r["PublishFailures"] for r in runs) == 1
    assert (runs[-1]["EvaluationLag"], runs[-1]["OutboxPending"], runs[-1]["OutboxAge"]) == (1800, 1, 0)

    # Half an hour later the event is still unpublished (30 min old); the two windows closed since were evaluated.
    event["time"] = "2026-12-01T12:30:00Z"
    evaluator.lambda_handler(event, CONTEXT)
    [run] = emitted(capsys.readouterr().out)
    assert (run["EvaluationLag"], run["OutboxPending"], run["OutboxAge"], run["PublishFailures"]) == (1800, 1, 1800, 1)

    # The topic is back: the outbox drains.
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", handler_env.topic_arn)
    get_settings.cache_clear()
    event["time"] = "2026-12-01T12:45:00Z"
    evaluator.lambda_handler(event, CONTEXT)
    [run] = emitted(capsys.readouterr().out)
    assert (run["OutboxPending"], run["OutboxAge"], run["PublishFailures"]) == (0, 0, 0)
    assert [m["status"] for m in handler_env.published()] == ["new"]


def test_handler_rejects_an_event_that_is_not_a_schedule(handler_env: Env) -> None:
    event = schedule_event()
    del event["time"]
    with pytest.raises(ValueError, match="evaluator expects an EventBridge scheduled event: time: Field required"):
        evaluator.lambda_handler(event, CONTEXT)
    assert handler_env.findings.get_cursor() is None


# ---------------------------------------------------------------------------------------------------- sampled capture


def test_capture_plans_make_counts_estimates_and_keep_scans_exact(env: Env) -> None:
    """The controller's plans in the state table: Orders was captured 5 of the 15 minutes of window 10:00."""
    from auditor.state.capture_store import CaptureStore

    store = CaptureStore(env.ddb, TABLE, "audit-trail")
    start = int(T0.timestamp())
    for n, captures in enumerate(([{"table": "Orders", "reason": "rotation", "seconds": None}], [], [])):
        plan = {"slice_start": start + 300 * n, "slice_seconds": 300, "captures": captures}
        assert store.record(n, {"n": n}, plan, start + 300 * n, at(5 * n))
    assert [p["slice_start"] for p in store.plans(start - 3600, start + 900)] == [start, start + 300, start + 600]
    pte = "ProvisionedThroughputExceededException"
    msg = "The level of configured provisioned throughput for the table was exceeded."
    env.put(
        [
            *[f.call("PutItem", "Orders", {"pk": f"C#{i % 30}"}, at=i, error=pte, message=msg) for i in range(150)],
            *[f.call("Scan", "Orders", None, at=400 + 20 * i, principal=ALICE, event_id=f"os{i}") for i in range(12)],
        ]
    )
    result = run_evaluation(env.windows, env.findings, env.sns, env.params(), at(35), capture=store)
    assert result.new == 2
    by_kind = {m["kind"]: m["finding"] for m in env.published()}
    thr = by_kind["throttling"]
    assert thr["totals"]["count"] == 450 and thr["totals"]["margin"] > 0
    assert thr["evidence"]["capture"]["observed"] == 150
    assert "Sampled: the trail captured 5 of 15 minutes" in thr["summary"]
    scan = by_kind["scan"]
    assert scan["totals"]["count"] == 12 and "margin" not in scan["totals"]
    assert scan["evidence"]["capture"]["basis"].startswith("exact")


# ------------------------------------------------------------------- key schema from the table's description (PartiQL)


def _statement_record(n: int, statement: str, table: str) -> dict[str, Any]:
    """An ExecuteStatement data event as AWS's sample logs it (statement only; ``resources`` names the table)."""
    return {
        "eventVersion": "1.09",
        "userIdentity": {
            "type": "AssumedRole",
            "principalId": "AROAEXAMPLE:reporting-session",
            "arn": "arn:aws:sts::111122223333:assumed-role/reporting/reporting-session",
            "accountId": "111122223333",
            "sessionContext": {
                "sessionIssuer": {
                    "type": "Role",
                    "arn": REPORTING,
                    "accountId": "111122223333",
                    "userName": "reporting",
                }
            },
        },
        "eventTime": at(n * 0.5).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": "ExecuteStatement",
        "awsRegion": "us-east-1",
        "sourceIPAddress": "10.0.0.1",
        "userAgent": "aws-sdk-java/2.25.0",
        "requestParameters": {"statement": statement},
        "responseElements": None,
        "requestID": f"REQ{n:06d}{table}",
        "eventID": f"00000000-0000-4000-8000-{n:06d}{len(table):06d}",
        "readOnly": False,
        "resources": [
            {
                "accountId": "111122223333",
                "type": "AWS::DynamoDB::Table",
                "ARN": f"arn:aws:dynamodb:us-east-1:111122223333:table/{table}",
            }
        ],
        "eventType": "AwsApiCall",
        "managementEvent": False,
        "recipientAccountId": "111122223333",
        "eventCategory": "Data",
    }


def test_handler_decides_partiql_full_scans_from_the_tables_description(handler_env: Env, tmp_path: Path) -> None:
    # Accounts is keyed by accountId, with a GSI byTier keyed by tier. The trail only holds PartiQL statements, so it
    # cannot tell the key schema; `tier = ?` hides its value. Only DescribeTable can decide.
    handler_env.ddb.create_table(
        TableName="Accounts",
        KeySchema=[{"AttributeName": "accountId", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "accountId", "AttributeType": "S"},
            {"AttributeName": "tier", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "byTier",
                "KeySchema": [{"AttributeName": "tier", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    records = [_statement_record(i, 'SELECT * FROM "Accounts" WHERE "tier" = ?', "Accounts") for i in range(20)]
    # the same equality on the index keyed by tier is a key lookup, not a scan
    records += [
        _statement_record(100 + i, 'SELECT * FROM "Accounts"."byTier" WHERE "tier" = ?', "Accounts") for i in range(20)
    ]
    # a table this account cannot describe (deleted since): no schema, no decision, no failure
    records += [_statement_record(200 + i, 'SELECT * FROM "Gone" WHERE "tier" = ?', "Gone") for i in range(20)]
    path = tmp_path / "trail.json"
    path.write_text(json.dumps({"Records": records}))
    aggs = ingest_source(InputSource(str(path), lambda: path.open("rb")), AnalysisConfig(), Deduper(), IngestStats())
    assert aggs is not None
    handler_env.windows.put_contributions(f"s3://trail/{path.name}", aggs, at(70))

    event = schedule_event()
    while evaluator.lambda_handler(event, CONTEXT)["backlog"]:
        pass
    scans = [m["finding"] for m in handler_env.published() if m["kind"] == "scan"]
    assert [(s["table"], s["evidence"]["decided_by"], s["evidence"]["count"]) for s in scans] == [
        ("Accounts", "key_schema_inventory", 20)
    ]
    assert scans[0]["evidence"]["operation"] == "ExecuteStatement"


def test_each_evaluated_window_books_its_data_events_in_the_daily_ledger(env: Env) -> None:
    from auditor.cost.cost_model import AuditorRates
    from auditor.report.model import IsoWeek
    from auditor.report.report_pages import render_markdown
    from auditor.service.weekly_report import build_weekly_report, load_week_ledger
    from auditor.state.ledger_store import LedgerStore

    ledger = LedgerStore(env.ddb, TABLE)
    env.put([*sessions_traffic(0, 20), *alice_scans(0, 3)])
    env.put(sessions_traffic(15, 10))
    run_evaluation(env.windows, env.findings, env.sns, env.params(), at(50), ledger=ledger)
    # evaluated again (a crash before the cursor moved): the same windows overwrite their own entries
    env.ddb.delete_item(TableName=TABLE, Key={"pk": {"S": "CURSOR"}, "sk": {"S": "evaluator"}})
    run_evaluation(env.windows, env.findings, env.sns, env.params(), at(50), ledger=ledger)
    (entry,) = ledger.entries([T0.date()])
    assert entry.table == "Sessions"
    assert entry.auditor.lines["cloudtrail_data_events"] == pytest.approx(33 * AuditorRates().data_event)
    assert entry.auditor.lines["lambda"] > 0 and entry.auditor.lines["s3"] > 0
    # the week's report shows it, next to the audited cost (none booked here: no metrics audit ran)
    week = IsoWeek.of(T0)
    summary = load_week_ledger(ledger, week)
    assert summary is not None
    assert [r.table for r in summary.rows] == ["Sessions"]
    assert summary.total.auditor_usd > summary.rows[0].auditor_usd  # the shared runs are in the total only
    md = render_markdown(build_weekly_report([], week, at(60 * 24 * 7), ledger=summary))
    assert "What the audit cost" in md and "| Sessions |" in md and "| **Total** |" in md


def test_handler_evaluates_a_late_window_again_and_corrects_the_totals(handler_env: Env) -> None:
    handler_env.put([*sessions_traffic(0), *alice_scans(0, 2)])
    event = schedule_event()  # 12:00
    while evaluator.lambda_handler(event, CONTEXT)["backlog"]:
        pass
    [scan] = [s for s in handler_env.findings.week_findings(T0) if s.finding.kind is FindingKind.SCAN]
    assert scan.finding.totals is not None and scan.finding.totals.count == 2
    # a trail object of the 10:00 window retried long after the window was evaluated
    late = AggregateSet(900)
    for c in alice_scans(5, 3):
        late.add(c)
    handler_env.windows.put_contributions("s3://trail/late.json.gz", late, at(130))
    assert handler_env.windows.flag_late("s3://trail/late.json.gz", late, at(130))
    event["time"] = "2026-12-01T12:15:00Z"
    result = evaluator.lambda_handler(event, CONTEXT)
    assert (result["late_windows"], result["late_corrected"]) == (1, 1)
    [scan] = [s for s in handler_env.findings.week_findings(T0) if s.finding.kind is FindingKind.SCAN]
    assert scan.finding.totals is not None and scan.finding.totals.count == 5
    assert handler_env.windows.late_windows() == []


def test_late_windows_too_old_to_evaluate_again_are_dropped_and_the_rest_wait_their_turn(env: Env) -> None:
    store = WindowStore(env.ddb, TABLE, retention_days=3)
    late = Reevaluation(store, SightingStore(env.ddb, TABLE, retention_days=3))
    day = 86_400
    offsets = [10, day + 10, day + 910]  # three windows flagged late: 10:00 today, 10:00 and 10:15 tomorrow
    for n, offset in enumerate(offsets):
        aggs = AggregateSet(900)
        aggs.add(f.call("Scan", "Sessions", None, at=offset, principal=ALICE, event_id=f"late-{n}"))
        store.put_contributions(f"s3://trail/late-{n}.json.gz", aggs, at(0))
    store.seal(int(T0.timestamp()) + day + 900, at(0))
    for n, offset in enumerate(offsets):
        aggs = AggregateSet(900)
        aggs.add(f.call("Scan", "Sessions", None, at=offset + 5, principal=ALICE, event_id=f"again-{n}"))
        assert len(store.flag_late(f"s3://trail/again-{n}.json.gz", aggs, at(0))) == 1
    # two days and an hour later: retention 3 days less a day of margin, so the first window is too old
    params = env.params(max_windows_per_run=1, initial_lookback_seconds=0)
    now = T0 + timedelta(days=2, hours=1)
    result = run_evaluation(store, env.findings, env.sns, params, now, late=late)
    assert (result.late_expired, result.late_windows) == (1, 1)  # at most max_windows_per_run evaluated again
    result = run_evaluation(store, env.findings, env.sns, params, now + timedelta(minutes=15), late=late)
    assert (result.late_expired, result.late_windows) == (0, 1)
    assert store.late_windows() == []

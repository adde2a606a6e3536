"""``ddb-audit demo``: the deployed service, end to end, offline.

It starts a local AWS endpoint (moto server) and a local HTTP server standing in for Slack, creates the
stack's resources there (:mod:`auditor.demo.stack`), writes generated CloudTrail files into the trail bucket so
that S3's notifications land in the trail queue, and then runs the real Lambda handlers on the real events, in
the order AWS would: trail ingest (SQS batches), the window evaluator (schedule), SNS -> SQS, and the Slack
notifier (SNS events). A second hour of traffic with the same problems shows that nothing is alerted twice.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import orjson

from auditor.config import get_settings
from auditor.demo.stack import ACCOUNT, REGION, SlackCatcher, Stack, aws_client, create_stack
from auditor.demo.trail import write_trail
from auditor.demo.workload import Workload, generate_workload

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from auditor.cost.cost_model import LedgerSummary

Announce = Callable[[str], None]

#: The audited account: the local endpoint's account, so CloudTrail, CloudWatch and Streams findings meet.
TRAIL_ACCOUNT = ACCOUNT


@dataclass
class DemoContext:
    """The parts of the Lambda context object that handlers and Powertools read."""

    function_name: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = ""
    log_group_name: str = ""
    log_stream_name: str = ""
    deadline: float = field(default_factory=lambda: time.monotonic() + 300)

    def __post_init__(self) -> None:
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = f"{datetime.now(UTC):%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


def lambda_context(function_name: str) -> LambdaContext:
    """A context object for invoking a handler directly, as the Lambda runtime would."""
    return cast("LambdaContext", DemoContext(function_name))


@dataclass
class RunSummary:
    """What one pass of the pipeline did."""

    objects: int = 0
    messages: int = 0
    batches: int = 0
    failed_messages: int = 0
    evaluation: dict[str, Any] = field(default_factory=dict)
    sns_messages: int = 0
    slack_posts: int = 0


@dataclass
class DemoResult:
    """The outcome of the whole demo."""

    runs: list[RunSummary]
    findings: list[dict[str, Any]]
    slack_posts: list[dict[str, Any]]
    seconds: float
    out: Path
    files: list[Path] = field(default_factory=list)
    #: The handlers' health metrics (embedded metric format lines): per name, the unit and the sum (counts) or the
    #: last value (seconds: the lag and the outbox age are states, the last one is the state after the demo).
    health: dict[str, tuple[str, float]] = field(default_factory=dict)


def _health(lines: list[str]) -> dict[str, tuple[str, float]]:
    """The EMF lines the handlers wrote, per metric name (see :attr:`DemoResult.health`)."""
    out: dict[str, tuple[str, float]] = {}
    for line in lines:
        blob = orjson.loads(line)
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                name, unit = metric["Name"], metric["Unit"]
                values = blob[name] if isinstance(blob[name], list) else [blob[name]]
                _, before = out.get(name, (unit, 0.0))
                value = values[-1] if unit == "Seconds" else before + sum(values)
                out[name] = (unit, value)
    return out


def _cold_start() -> None:
    """Forget what the handlers keep per container (clients, the Slack secret), as a new container would."""
    from auditor.sinks.slack import forget_slack_secret
    from handlers import runtime

    runtime.reset()
    forget_slack_secret()
    get_settings.cache_clear()


@contextmanager
def _probe_without_waiting(handler_module: Any) -> Iterator[None]:
    """Run the capture controller's probe without its real wait.

    A deployed controller keeps a burst probe's selectors for ``probe_seconds`` (60 s) before it puts the
    selectors back; the demo's clock is simulated, so the handler's controller gets a sleep that returns at once
    (every other step, the selector puts included, is the real code against the local endpoint).
    """
    from functools import partial

    from auditor.service.capture import run_controller

    saved = handler_module.run_controller
    handler_module.run_controller = partial(run_controller, sleep=lambda _seconds: None)
    try:
        yield
    finally:
        handler_module.run_controller = saved


@contextmanager
def _metrics_to(write: Callable[[str], None]) -> Iterator[None]:
    """Collect the handlers' embedded-metric-format lines (a deployed function writes them to its log)."""
    from handlers import runtime

    previous = runtime.set_metrics_writer(write)
    try:
        yield
    finally:
        runtime.set_metrics_writer(previous)


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """Set the functions' environment for the handlers (and restore the caller's afterwards)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    _cold_start()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _cold_start()


def _queue_arn(sqs: Any, url: str) -> str:
    return str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


def _receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message currently in the queue, in batches of up to 10 (as the SQS event source polls)."""
    got: list[dict[str, Any]] = []
    empty = 0
    while empty < 2:
        resp = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"]
        )
        msgs = resp.get("Messages", [])
        if not msgs:
            empty += 1
            continue
        empty = 0
        got.extend(msgs)
    return got


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """The Lambda SQS event for ``messages`` (as the event source mapping builds it)."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": m.get("MessageAttributes", {}),
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
    }


def sns_event(envelope: dict[str, Any], subscription_arn: str) -> dict[str, Any]:
    """The Lambda SNS event for one SNS notification (as delivered to an SQS subscriber, raw delivery off)."""
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription_arn,
                "Sns": {
                    "Type": envelope.get("Type", "Notification"),
                    "MessageId": envelope["MessageId"],
                    "TopicArn": envelope["TopicArn"],
                    "Subject": envelope.get("Subject"),
                    "Message": envelope["Message"],
                    "Timestamp": envelope["Timestamp"],
                    "SignatureVersion": envelope.get("SignatureVersion", "1"),
                    "Signature": envelope.get("Signature", "EXAMPLE"),
                    "SigningCertUrl": envelope.get("SigningCertURL", "https://sns.us-east-1.amazonaws.com/cert.pem"),
                    "UnsubscribeUrl": envelope.get("UnsubscribeURL", "https://sns.us-east-1.amazonaws.com/unsub"),
                    "MessageAttributes": envelope.get("MessageAttributes", {}),
                },
            }
        ]
    }


def scheduled_event(now: datetime, rule_arn: str, account: str = ACCOUNT) -> dict[str, Any]:
    """An EventBridge "Scheduled Event" as the schedule delivers it at ``now``."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [rule_arn],
        "detail": {},
    }


class ServiceDemo:
    """Drives the handlers against the local stack."""

    def __init__(self, stack: Stack, catcher: SlackCatcher, work: Path, announce: Announce, trail_dir: Path) -> None:
        self.stack = stack
        self.catcher = catcher
        self.work = work
        #: Where the generated CloudTrail files are kept (``OUT/trail/<run>``), for ``analyze-trail`` afterwards.
        self.trail_dir = trail_dir
        self.say = announce
        self.s3 = aws_client("s3", stack.endpoint)
        self.sqs = aws_client("sqs", stack.endpoint)

    # -- steps -------------------------------------------------------------------------------------------------

    def upload_trail(self, start: datetime, seed: int, label: str) -> int:
        """Generate an hour of traffic and put its CloudTrail files into the bucket (S3 notifies the queue)."""
        folder = self.trail_dir / label
        records = generate_workload(Workload(hours=1.0, seed=seed, account=TRAIL_ACCOUNT), start)
        files = write_trail(records, folder, TRAIL_ACCOUNT, REGION, seed=seed)
        for path in files:
            key = path.relative_to(folder).as_posix()
            self.s3.put_object(Bucket=self.stack.bucket, Key=key, Body=path.read_bytes())
        logs = [f for f in files if "CloudTrail-Digest" not in f.parts]
        self.say(
            f"  S3      put {len(logs)} CloudTrail log files (+{len(files) - len(logs)} digests), "
            f"{len(records):,} records, {start:%H:%M}-{start + timedelta(hours=1):%H:%M} UTC"
        )
        return len(files)

    def redeliver_one(self) -> None:
        """Send one S3 notification a second time, as S3 and SQS may (at-least-once delivery)."""
        msgs = self.sqs.receive_message(QueueUrl=self.stack.trail_queue_url, MaxNumberOfMessages=1).get("Messages", [])
        for m in msgs:
            self.sqs.send_message(QueueUrl=self.stack.trail_queue_url, MessageBody=m["Body"])
            self.sqs.change_message_visibility(
                QueueUrl=self.stack.trail_queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
            )

    def ingest(self, summary: RunSummary) -> None:
        """Drain the trail queue through the trail-ingest handler, ten messages per invocation."""
        from handlers import trail_ingest

        arn = _queue_arn(self.sqs, self.stack.trail_queue_url)
        for attempt in range(5):
            messages = _receive_all(self.sqs, self.stack.trail_queue_url)
            if not messages:
                break
            failed_total = 0
            for i in range(0, len(messages), 10):
                batch = messages[i : i + 10]
                resp = trail_ingest.lambda_handler(sqs_event(batch, arn), lambda_context("trail-ingest"))
                failed = {f["itemIdentifier"] for f in (resp or {}).get("batchItemFailures", [])}
                summary.batches += 1
                summary.messages += len(batch)
                failed_total += len(failed)
                done = [m for m in batch if m["MessageId"] not in failed]
                for m in batch:  # what SQS does when the visibility timeout of a failed message runs out
                    if m["MessageId"] in failed:
                        self.sqs.change_message_visibility(
                            QueueUrl=self.stack.trail_queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
                        )
                if done:  # a batch holds at most 10 messages: one delete call
                    self.sqs.delete_message_batch(
                        QueueUrl=self.stack.trail_queue_url,
                        Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(done)],
                    )
            summary.failed_messages += failed_total
            if not failed_total:
                break
            self.say(f"  ingest  {failed_total} messages failed (attempt {attempt + 1}); SQS redelivers them")
        self.say(
            f"  ingest  {summary.messages} SQS messages in {summary.batches} Lambda batches "
            f"({summary.failed_messages} failed)"
        )

    def evaluate(self, summary: RunSummary, now: datetime) -> None:
        from handlers import evaluator

        totals: dict[str, Any] = {}
        invocations = 0
        while True:  # a backlog is worked off over several scheduled invocations, as the schedule would
            result: dict[str, Any] = dict(
                evaluator.lambda_handler(
                    scheduled_event(now, f"arn:aws:events:{REGION}:{ACCOUNT}:rule/ddb-auditor-evaluator"),
                    lambda_context("window-evaluator"),
                )
                or {}
            )
            invocations += 1
            for k in ("windows", "table_windows", "findings_seen", "new", "worsened", "resolved", "published"):
                totals[k] = totals.get(k, 0) + int(result.get(k, 0))
            if not result.get("backlog") or invocations >= 20:
                break
        summary.evaluation = totals
        self.say(
            f"  evaluate {invocations} scheduled invocations: {totals['windows']} closed windows, "
            f"{totals['table_windows']} with traffic; {totals['findings_seen']} findings seen: "
            f"{totals['new']} new, {totals['worsened']} worsened, {totals['resolved']} resolved; "
            f"{totals['published']} published to SNS"
        )

    def notify(self, summary: RunSummary) -> None:
        """Deliver the topic's messages to the Slack notifier (SNS -> Lambda)."""
        from handlers import notifier

        before = len(self.catcher.posts)
        messages = _receive_all(self.sqs, self.stack.alerts_queue_url)
        for m in messages:
            envelope = orjson.loads(m["Body"])
            sub = f"{self.stack.topic_arn}:{uuid.uuid4()}"
            notifier.lambda_handler(sns_event(envelope, sub), lambda_context("slack-notifier"))
            self.sqs.delete_message(QueueUrl=self.stack.alerts_queue_url, ReceiptHandle=m["ReceiptHandle"])
        summary.sns_messages = len(messages)
        summary.slack_posts = len(self.catcher.posts) - before
        self.say(
            f"  Slack   {_n(summary.sns_messages, 'message')} through the Slack subscription's filter (run digests at "
            f"medium or above); Slack received {_n(summary.slack_posts, 'post')}"
        )

    def metrics_audit(self, summary: RunSummary, now: datetime) -> None:
        """The hourly metrics audit over an hour of planted CloudWatch metrics: the day's billing run.

        Billing is decided by the run in ``BILLING_AUDIT_HOUR_UTC``, so the demo's run is given that hour; its read
        covers the 14 days of per-minute capacity planted before the hour (the local endpoint's metric reads are
        indexed while it runs: :mod:`auditor.demo.metric_data`).
        """
        from auditor.demo.extras import HISTORY_DAYS, MEMBER_ACCOUNT, MEMBER_REGION, plant_member_account, plant_metrics
        from auditor.demo.metric_data import fast_metric_reads
        from auditor.report.report_pages import money
        from handlers import metrics_audit

        tables = plant_metrics(self.stack.endpoint, now)
        self.say(
            f"  CloudWatch  {HISTORY_DAYS} days of per-minute capacity and an hour of per-minute metrics for "
            f"{len(tables)} tables (Orders with its ByStatus GSI)"
        )
        self.say(
            "  activity  Archive2024 and Carts stand for tables created 90 days ago (backdated on the local endpoint)"
        )
        member = plant_member_account(self.stack.endpoint, now)
        self.say(
            f"  CloudWatch  member account {MEMBER_ACCOUNT} in {MEMBER_REGION}: {', '.join(member)}, scanned every "
            "minute; the audit assumes its member role there"
        )
        billing = {
            "BILLING_AUDIT_HOUR_UTC": str(now.astimezone(UTC).hour),
            "BILLING_LOOKBACK_DAYS": str(HISTORY_DAYS),
            # two accounts x two Regions, through the read-only member role (templates/member-role.yaml)
            "AUDIT_ACCOUNTS": f"{ACCOUNT},{MEMBER_ACCOUNT}",
            "AUDIT_REGIONS": f"{REGION},{MEMBER_REGION}",
            "MEMBER_ROLE_NAME": "DdbTrafficAuditorMember",
        }
        with _environment(billing), fast_metric_reads():
            result: dict[str, Any] = dict(
                metrics_audit.lambda_handler(
                    scheduled_event(now, f"arn:aws:events:{REGION}:{ACCOUNT}:rule/ddb-auditor-metrics-audit"),
                    lambda_context("metrics-audit"),
                )
                or {}
            )
        summary.evaluation = result
        read = result.get("billing") or {}
        cycle = result.get("cycle") or {}
        self.say(
            f"  metrics audit  {cycle.get('pairs', 0)} account/Region pairs in one cycle "
            f"({cycle.get('remaining', 0)} left for a later invocation): {_counts(result)}"
        )
        for pair in result.get("per_target", []):
            counts = f"{_n(pair['tables'], 'table')}, {_n(pair['findings'], 'finding')}"
            self.say(f"    {pair['account']}/{pair['region']}: {counts}")
        for gap in result.get("coverage_gaps", []):
            self.say(f"    not audited: {gap['account']}/{gap['region']}: {gap['reason']} ({gap['error_code']})")
        self.say(
            f"  billing  the day's billing run: {read.get('tables_decided', 0)} tables decided from a "
            f"{read.get('days', 0):g}-day read of 1-minute capacity; Ledger in {MEMBER_REGION} is priced at the "
            "bundled us-east-1 list prices (the one billing_warning on stderr)"
        )
        cost = result.get("cost")
        if isinstance(cost, dict):
            # a part of the audit's cost, booked to the day's ledger: the cost itself is stated once, by the ledger
            # line after the report (the report's figure)
            self.say(
                f"  CloudWatch reads  this run's GetMetricData ${cost['total']['auditor_usd']:.6f} and its hour of "
                "audited DynamoDB, booked to the day's cost ledger, per account/Region:"
            )
            for pair in sorted(cost.get("targets", []), key=lambda p: (p["account"] or "", p["region"] or "")):
                self.say(
                    f"    {pair['account']}/{pair['region']:<10} reads ${pair['auditor_usd']:.6f}  "
                    f"DynamoDB {money(pair['dynamodb_usd'])}"
                )

    def capture_controller(self, now: datetime) -> None:
        """The capture controller on the stack's own trail: a plan, then a change when Orders bursts."""
        from auditor.demo.extras import plant_write_burst
        from handlers import capture_controller

        ct = aws_client("cloudtrail", self.stack.endpoint)
        trail = f"{self.stack.table_name}-dynamodb-data-events"
        ct.create_trail(Name=trail, S3BucketName=self.stack.bucket)
        ct.put_event_selectors(
            TrailName=trail,
            AdvancedEventSelectors=[
                {
                    "Name": "DynamoDB table data events",
                    "FieldSelectors": [
                        {"Field": "eventCategory", "Equals": ["Data"]},
                        {"Field": "resources.type", "Equals": ["AWS::DynamoDB::Table"]},
                    ],
                }
            ],
        )
        rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/ddb-auditor-capture-controller"
        hour = now.replace(minute=0, second=5, microsecond=0)
        plans: list[dict[str, Any]] = []
        with (
            _environment({"CAPTURE_TRAIL_NAME": trail, "AUDIT_BUDGET_PERCENT": "1"}),
            _probe_without_waiting(capture_controller),
        ):
            for n, at in enumerate((hour, hour + timedelta(minutes=5))):
                if n == 1:
                    plant_write_burst(self.stack.endpoint, "Orders", at, units_per_second=700)
                    self.say("  CloudWatch  Orders writes 700 WCU/s for 6 minutes (above half a partition's 1,000)")
                result: dict[str, Any] = dict(
                    capture_controller.lambda_handler(scheduled_event(at, rule), lambda_context("capture-controller"))
                )
                plans.append(result)
                shown = [
                    f"{c['table']} ({c['reason']}{', ' + str(c['seconds']) + ' s probe' if c['seconds'] else ''})"
                    for c in result["captures"]
                ]
                self.say(
                    f"  capture plan  {at:%H:%M} UTC slice: {result['status']}, full capture of "
                    f"{', '.join(shown) or 'no table'}; scans and PartiQL of every table always"
                )
        before, after = ({str(t) for t in p["captured_tables"]} for p in plans)
        if before != after:
            self.say(f"  capture plan change  added {sorted(after - before)}, dropped {sorted(before - after)}")

    def stream_item_sizes(self, summary: RunSummary, now: datetime) -> None:
        """Documents items growing towards 400 KB, through the table's stream and the item-size watcher."""
        from auditor.demo.extras import grow_items
        from handlers import stream_item_size

        _arn, records = grow_items(self.stack.endpoint, now)
        self.say(
            f"  Streams  {len(records)} NEW_AND_OLD_IMAGES records of two growing Documents items "
            "(spread over 8 days: the local stream stamps them all now)"
        )
        failed = 0
        for i in range(0, len(records), 100):
            resp = stream_item_size.lambda_handler({"Records": records[i : i + 100]}, lambda_context("item-size"))
            failed += len((resp or {}).get("batchItemFailures", []))
        self.say(f"  item size  {len(records)} records, {failed} failed")

    def run(self, label: str, start: datetime, seed: int, now: datetime, *, redeliver: bool) -> RunSummary:
        summary = RunSummary()
        summary.objects = self.upload_trail(start, seed, label)
        if redeliver:
            self.redeliver_one()
        self.ingest(summary)
        self.evaluate(summary, now)
        self.notify(summary)
        return summary


def ledger_line(ledger: LedgerSummary) -> str:
    """The audit's cost as the report states it (the same figures, rounded the same way): the ledger's total, each
    side with its period, and the ratio over the period both sides cover (the priced hours; none when none was)."""
    from auditor.report.auditor_cost import ledger_period, priced_hours
    from auditor.report.report_pages import money, pct

    total = ledger.total
    head = f"ledger  what the audit cost, {ledger_period(ledger)} (the service's daily ledger, the report's figure): "
    if total.priced_hours is None:
        return f"{head}auditor {money(total.auditor_usd)} vs audited DynamoDB {money(total.dynamodb_usd)}: " + (
            f"ratio {pct(total.ratio)}"
        )
    hours = priced_hours(total.priced_hours)
    sides = f"auditor {money(total.auditor_usd)} (all of it), audited DynamoDB {money(total.dynamodb_usd)} ({hours})"
    if total.ratio is None:
        return f"{head}{sides}; no ratio (no period both sides cover)"
    return (
        f"{head}{sides}; like for like over the {hours}: auditor {money(total.matched_auditor_usd)} vs DynamoDB "
        f"{money(total.dynamodb_usd)}: ratio {pct(total.ratio)}"
    )


def _counts(result: dict[str, Any]) -> str:
    # the run's cost is not among them: the ledger states the audit's cost, once (ledger_line)
    keep = ("tables", "findings", "new", "worsened", "resolved", "published", "api_calls")
    parts = [f"{k.replace('_', ' ')} {result[k]}" for k in keep if k in result and not isinstance(result[k], dict)]
    return ", ".join(parts) or "done"


def _write_report(
    stack: Stack, out: Path, findings: list[dict[str, Any]], start: datetime, end: datetime
) -> tuple[list[Path], LedgerSummary | None]:
    """The weekly report over the demo's findings and the traffic windows in the state table, and the cost ledger it
    states (the auditor's cost: one figure, the ledger's, in the report and on the console)."""
    from auditor.demo.extras import read_capacity
    from auditor.engine import access_patterns
    from auditor.kernel.aggregates.window import AggregateSet
    from auditor.report.model import IsoWeek, build_report_from_findings
    from auditor.report.report_pages import write_report
    from auditor.service.weekly_report import load_week_ledger
    from auditor.state.capture_store import CaptureStore
    from auditor.state.ledger_store import LedgerStore
    from auditor.state.window_store import WindowStore

    ddb = aws_client("dynamodb", stack.endpoint)
    store = WindowStore(ddb, stack.table_name)
    step = 900
    first = int(start.timestamp()) // step * step
    windows = store.load_windows(range(first, int(end.timestamp()), step))
    aggs = AggregateSet(step)
    for tw in windows:
        aggs.windows[(tw.account, tw.region, tw.table, tw.window_start)] = tw
    spans = aggs.spans()
    week = IsoWeek.of(end)
    # the daily ledger the evaluator and the metrics audit kept in the state table, as the weekly report shows it: the
    # auditor's cost (the data events ingested, the reads, the service's runs), so no separate usage is priced
    ledger = load_week_ledger(
        LedgerStore(ddb, stack.table_name),
        IsoWeek.of(end),
        CaptureStore(ddb, stack.table_name, f"{stack.table_name}-dynamodb-data-events"),
    )
    report = build_report_from_findings(
        findings,
        end,
        week=week,
        # the week's capacity, read back from the local endpoint's CloudWatch
        capacity=read_capacity(stack.endpoint, week.start, end.replace(minute=0, second=0, microsecond=0)),
        access_patterns=access_patterns(spans),
        title="DynamoDB weekly audit (demo)",
        ledger=ledger,
    )
    html, md = write_report(report, out)
    return [html, md], ledger


def _stored_findings(stack: Stack, now: datetime) -> list[dict[str, Any]]:
    """This week's findings from the state table (the evaluator's output), as docs/contract.md Finding JSON, each
    with its week's totals over the part of the week the trail had data in and what they decide, its severity, cause
    and evidence, as the weekly report states them (:func:`auditor.service.weekly_report.week_totals`)."""
    from auditor.report.model import IsoWeek
    from auditor.service.weekly_report import load_key_requests, week_period, week_totals
    from auditor.state.findings_store import FindingsStore
    from auditor.state.window_store import SightingStore

    ddb = aws_client("dynamodb", stack.endpoint)
    store = FindingsStore(ddb, stack.table_name)
    week = IsoWeek.of(now)
    states = store.week(now)
    sightings = SightingStore(ddb, stack.table_name)
    keyed = load_key_requests(sightings, states, week)
    period = week_period(sightings, week)
    return [week_totals(s, week, keyed, period).finding.model_dump(mode="json") | {"status": s.status} for s in states]


@contextmanager
def local_stack(prefix: str) -> Iterator[tuple[Stack, SlackCatcher, Path]]:
    """The stack on a local AWS endpoint (moto) with an empty account, the Slack catcher its secret points to and a
    work folder (named ``prefix...``); the endpoint and the catcher stop and the folder goes on exit."""
    from moto.server import ThreadedMotoServer

    work = Path(tempfile.mkdtemp(prefix=prefix))
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    catcher = SlackCatcher().start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        # moto keeps its state per process, not per server: start from an empty account.
        with urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10):
            pass
        yield create_stack(endpoint, catcher.url), catcher, work
    finally:
        catcher.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def demo_result(
    out: Path,
    runs: list[RunSummary],
    findings: list[dict[str, Any]],
    reports: list[Path],
    catcher: SlackCatcher,
    began: float,
    emf: list[str],
) -> DemoResult:
    """The outcome of a demo that began at ``began`` (``time.perf_counter()``); writes the findings to
    ``out/findings.json``, the first of its files (then the report files)."""
    findings_path = out / "findings.json"
    findings_path.write_bytes(orjson.dumps({"findings": findings}, option=orjson.OPT_INDENT_2))
    files = [findings_path, *reports]
    return DemoResult(runs, findings, list(catcher.posts), time.perf_counter() - began, out, files, _health(emf))


def _n(count: int, noun: str) -> str:
    """``1 digest``, ``2 digests``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def run_service_demo(
    out: Path, *, announce: Announce = lambda _m: None, seed: int = 7, now: datetime | None = None
) -> DemoResult:
    """The whole offline run; writes ``findings.json`` (and the report, when available) to ``out``.

    The traffic is placed in the hours before ``now`` (default: the clock). The capture controller's plan depends on
    the time (a rotating table is captured in one slice of every few), so a run at a given ``now`` is reproducible
    and runs at other times may show other rotating tables.
    """
    from auditor.demo.extras import create_tables

    began = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    with local_stack("ddb-audit-demo-") as (stack, catcher, work):
        announce(f"local AWS endpoint {stack.endpoint}: bucket, trail queue, topic, state table and Slack secret")
        tables = create_tables(stack.endpoint, (now or datetime.now(UTC)).replace(minute=0, second=0, microsecond=0))
        announce(f"tables  {', '.join(tables)} on the local endpoint (DescribeTable answers for every audited table)")
        # Traffic in the recent past; each evaluation runs at the scheduled time just after its hour closed
        # (the schedule's event time is the evaluator's "now").
        hour = (now or datetime.now(UTC)).replace(minute=0, second=0, microsecond=0)
        delay = timedelta(seconds=get_settings().evaluation_delay_seconds)
        trail_dir = out / "trail"
        shutil.rmtree(trail_dir, ignore_errors=True)  # only this run's files: analyze-trail reads the whole folder
        demo = ServiceDemo(stack, catcher, work, announce, trail_dir)
        emf: list[str] = []
        with _environment(stack.environment()), _metrics_to(emf.append):
            announce("run 1: an hour of production traffic with planted problems")
            start1 = hour - timedelta(hours=3)
            first = demo.run("run1", start1, seed, start1 + timedelta(hours=1) + delay, redeliver=True)
            announce("run 2: the next hour, the same problems: nothing new, so nothing is alerted again")
            start2 = hour - timedelta(hours=2)
            second = demo.run("run2", start2, seed + 1, start2 + timedelta(hours=1) + delay, redeliver=False)
            end = start2 + timedelta(hours=1) + delay
            announce("run 3: the hourly metrics audit (CloudWatch) and the Streams item-size watcher")
            third = RunSummary()
            demo.metrics_audit(third, end)
            demo.stream_item_sizes(third, end)
            demo.notify(third)
            announce("run 4: the capture controller keeps the stack's trail within 1% of the DynamoDB bill")
            demo.capture_controller(end)
            findings = _stored_findings(stack, end)
        reports, ledger = _write_report(stack, out, findings, start1, end)
        if ledger is not None:
            announce(ledger_line(ledger))
        result = demo_result(out, [first, second, third], findings, reports, catcher, began, emf)
        announce(f"report: {', '.join(str(p) for p in result.files[1:])}; CloudTrail files: {trail_dir}")
        return result


def summary_text(result: DemoResult) -> str:
    """What the demo found and sent, for a person to read."""
    from auditor.findings_text import render_columns, shorten

    rows = [
        (
            f["severity"],
            str(f.get("status", "")),
            f["kind"],
            f"{f.get('account') or '-'}/{f.get('region') or '-'}",
            f["table"],
            shorten(f["title"], 70),
        )
        for f in sorted(result.findings, key=lambda f: (-_RANK.get(f["severity"], 0), f["table"], f["kind"]))
    ]
    accounts = sorted({f.get("account") or "-" for f in result.findings})
    regions = sorted({f.get("region") or "-" for f in result.findings})
    lines = [
        "",
        f"Findings in the state table ({len(rows)}, in {len(accounts)} accounts and {len(regions)} Regions: "
        f"each attributed to its own account and Region):",
        "",
    ]
    lines.append(render_columns(rows, ("severity", "status", "kind", "account/region", "table", "title")).rstrip("\n"))
    first, second = result.runs[0], result.runs[1]
    lines += [
        "",
        f"Alerts: run 1 published {_n(first.evaluation.get('published', 0), 'finding event')} to SNS and Slack "
        f"received {_n(first.slack_posts, 'digest')}; run 2 published {second.evaluation.get('published', 0)} "
        f"(the same problems, still open: no repeat alerts).",
    ]
    if len(result.runs) > 2:
        third = result.runs[2]
        lines.append(
            f"Run 3 (metrics audit and Streams watcher, one digest each) sent Slack "
            f"{_n(third.slack_posts, 'more digest')}."
        )
    if result.health:
        shown = [
            f"{name} {value:,.0f}{' s' if unit == 'Seconds' else ''}"
            for name, (unit, value) in sorted(result.health.items())
        ]
        lines.append(
            "The auditor's own health (CloudWatch EMF, namespace DdbTrafficAuditor; "
            "counts summed, seconds the last value):"
        )
        lines += ["  " + ", ".join(shown[i : i + 5]) for i in range(0, len(shown), 5)]
    if result.slack_posts:
        lines.append(f"First Slack digest: {shorten(result.slack_posts[0].get('text', ''), 160)}")
    lines += [f"Files: {p}" for p in result.files]
    lines.append(f"Finished in {result.seconds:.1f} s.")
    return "\n".join(lines) + "\n"


_RANK = {"critical": 5, "high": 4, "medium": 3, "low": 2, "info": 1}

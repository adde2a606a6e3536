"""The functions' IAM roles against what their code really calls.

The real handlers run end to end against a moto server (an S3 trail bucket with generated CloudTrail files and
planted problems, the state table, the findings topic, the Slack secret and a local stand-in for the webhook, audited
tables with planted CloudWatch metrics, the reports bucket): trail ingest, events ingest, the evaluator, the Slack
notifier, the stream item-size watcher, the metrics audit, the capture controller (managing the stack's own trail,
and advising with an existing one), the weekly report and the model review. The rarer paths run too: publishes
that fail (the outbox marks them failed, the next run sends them), a weekly announcement and a model proposal
released after a failed publish and not repeated on a retry, and a finding written concurrently by someone else (a
version conflict).

A botocore hook records every AWS call each handler makes; each call is mapped to the IAM action it needs
(``TransactWriteItems`` to the actions of its items, a presigned URL to the action it authorises) and, for DynamoDB,
to its target: the state table or one of its indexes, an audited table, or none (account-level listings). The role
template.yaml gives the function must grant every one of them; the state-table grants are exactly the calls the code
makes; audited tables are only ever described (metadata), never read or written.

Where moto lacks an API (Contributor Insights: ``ListContributorInsights``, ``DescribeContributorInsights``,
``GetInsightRuleReport``) a ``before-call`` hook answers with responses shaped as AWS documents them.
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from botocore.validate import validate_parameters

from auditor.config import get_settings
from handlers import (
    capture_controller,
    evaluator,
    events_ingest,
    metrics_audit,
    model_review,
    notifier,
    runtime,
    security_hub,
    stream_item_size,
    trail_ingest,
    weekly_report,
)
from tests.cw_support import create_table, dims, minutes, put_data, put_points
from tests.factories import planted_workload, scheduled_event, sns_event, sqs_event, write_trail
from tests.lambda_context import lambda_context
from tests.moto_server import ACCOUNT, REGION, SlackCatcher, client, create_stack
from tests.template.test_template import (
    AUDITED_INDEXES_ARN,
    AUDITED_TABLE_METADATA,
    AUDITED_TABLES_ARN,
    INSIGHT_RULES_ARN,
    REPORT_OBJECTS_ARN,
    STATE_TABLE_ARN,
    as_list,
    function_props,
    index_arn,
    role_statements,
)
from tests.template.variants import VARIANTS, load_template, resolve

ROOT = Path(__file__).resolve().parents[2]
TRAIL_ACCOUNT = "111122223333"
START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # a Tuesday of ISO week 2026-W49
REPORT_TIME = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)  # the weekly schedule after it: reports 2026-W49
AUDITED_PREFIX = "audited-"
CI_RULES = (
    "DynamoDBContributorInsights-PKC-audited-hot-1764547200000",
    "DynamoDBContributorInsights-PKT-audited-hot-1764547200000",
)


class _Current:
    """The function whose handler runs now. Process-wide, not a context variable: the handlers' worker threads
    (the audit describes tables in parallel) must be attributed too. Handlers run one at a time."""

    function: str | None = None


_current = _Current()

#: DynamoDB TransactWriteItems is authorised per item (there is no IAM action of that name).
_TRANSACT_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}
#: A DynamoDB call's target: "table" / an index name (the state table), "audited" (another table), None (no table).
Call = tuple[str, str | None]


@dataclass
class Recorder:
    """Collects the IAM actions of the AWS calls made while a function is marked current."""

    table_name: str
    calls: dict[str, set[Call]] = field(default_factory=dict)
    #: (function, action, table) of DynamoDB calls on tables other than the state table.
    foreign: list[tuple[str, str, str]] = field(default_factory=list)
    #: (function, bucket, key) of S3 object calls; (function, rule) of Contributor Insights reports.
    s3_objects: list[tuple[str, str, str]] = field(default_factory=list)
    insight_rules: list[tuple[str, str]] = field(default_factory=list)

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        function = _current.function
        if function is None:
            return
        prefix = model.service_model.endpoint_prefix
        calls = self.calls.setdefault(function, set())
        if prefix == "s3" and "Key" in params:
            self.s3_objects.append((function, params["Bucket"], params["Key"]))
        if prefix == "monitoring" and model.name == "GetInsightRuleReport":
            self.insight_rules.append((function, params["RuleName"]))
        if prefix != "dynamodb":
            service = {"monitoring": "cloudwatch"}.get(prefix, prefix)
            calls.add((f"{service}:{model.name}", None))
            return
        for action, table, index in self._dynamodb(model.name, params):
            if table is None:
                calls.add((action, None))
            elif table != self.table_name:
                self.foreign.append((function, action, table))
                calls.add((action, "audited"))
            else:
                calls.add((action, index or "table"))

    @staticmethod
    def _dynamodb(operation: str, params: dict[str, Any]) -> Iterator[tuple[str, str | None, str | None]]:
        if operation == "TransactWriteItems":
            for item in params["TransactItems"]:
                ((kind, body),) = item.items()
                yield _TRANSACT_ITEM_ACTIONS[kind], body["TableName"], None
        elif operation == "TransactGetItems":
            for item in params["TransactItems"]:
                yield "dynamodb:GetItem", item["Get"]["TableName"], None
        elif operation in ("BatchGetItem", "BatchWriteItem"):
            for table in params["RequestItems"]:
                yield f"dynamodb:{operation}", table, None
        elif "TableName" in params:
            yield f"dynamodb:{operation}", params["TableName"], params.get("IndexName")
        elif "ResourceArn" in params:  # ListTagsOfResource: arn:...:table/NAME
            yield f"dynamodb:{operation}", params["ResourceArn"].split(":table/", 1)[1].split("/")[0], None
        else:  # ListTables, ListContributorInsights
            yield f"dynamodb:{operation}", None, None


class Invoker:
    """Runs handlers with the function marked current (fresh clients: their caches are cleared first).

    Each function runs in its own containers: switching to another function starts a new container (the
    runtime's clients are built again, with the hooks registered on the session by then).
    """

    last: str | None = None

    def clear_caches(self) -> None:
        get_settings.cache_clear()
        runtime.reset()

    def __call__(self, function: str, module: ModuleType, event: dict[str, Any]) -> Any:
        get_settings.cache_clear()  # the tests change the environment between runs
        if function != self.last:
            self.clear_caches()
            self.last = function
        _current.function = function
        try:
            return module.lambda_handler(event, lambda_context(function))
        finally:
            _current.function = None


def outside_functions(action: Callable[[], Any]) -> Any:
    """Run ``action`` unrecorded (a hook acting as another writer inside a function's call)."""
    function, _current.function = _current.function, None
    try:
        return action()
    finally:
        _current.function = function


def _receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while True:
        msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"]).get("Messages", [])
        if not msgs:
            return got
        got.extend(msgs)
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(msgs)]
        )


def _attributes(message: dict[str, Any]) -> dict[str, str]:
    envelope = json.loads(message["Body"])
    return {k: v["Value"] for k, v in (envelope.get("MessageAttributes") or {}).items()}


# ------------------------------------------------------------------------------------- moto gaps: Contributor Insights


def contributor_insights_stub(table: str) -> Callable[..., Any]:
    """A ``before-call`` hook answering the Contributor Insights APIs moto lacks, shaped as AWS documents them.

    Each response is validated against the operation's output shape (as botocore's Stubber does). For the capture
    controller the table's Contributor Insights is off until it enables it (``UpdateContributorInsights``), its
    Contributor Insights on demand; for the other functions it is on (enabled two days ago).
    """
    controller_on: set[str] = set()

    def status(name: str) -> str:
        controller = (_current.function or "").startswith("CaptureController")
        return "ENABLED" if not controller or name in controller_on else "DISABLED"

    def respond(model: Any, response: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
        validate_parameters(response, model.output_shape)
        meta = {"ResponseMetadata": {"HTTPStatusCode": 200, "RequestId": str(uuid.uuid4())}}
        return AWSResponse(None, 200, {}, None), response | meta

    def answer(model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        now = datetime.now(UTC).replace(microsecond=0)
        if model.name == "UpdateContributorInsights":
            body = json.loads(params["body"])
            on = body["ContributorInsightsAction"] == "ENABLE"
            (controller_on.add if on else controller_on.discard)(body["TableName"])
            answer = {"TableName": body["TableName"], "ContributorInsightsStatus": "ENABLING" if on else "DISABLING"}
            return respond(model, answer | ({"ContributorInsightsMode": body["ContributorInsightsMode"]} if on else {}))
        if model.name == "ListContributorInsights":
            summary = {"TableName": table, "ContributorInsightsStatus": "ENABLED"}
            return respond(model, {"ContributorInsightsSummaries": [summary]})
        if model.name == "DescribeContributorInsights":
            if status(table) != "ENABLED":
                return respond(model, {"TableName": table, "ContributorInsightsStatus": "DISABLED"})
            return respond(
                model,
                {
                    "TableName": table,
                    "ContributorInsightsRuleList": list(CI_RULES),
                    "ContributorInsightsStatus": "ENABLED",
                    "LastUpdateDateTime": now - timedelta(days=2),
                },
            )
        if model.name == "GetInsightRuleReport":
            at = now - timedelta(minutes=5)
            return respond(
                model,
                {
                    "KeyLabels": ["pk"],
                    "AggregationStatistic": "Sum",
                    "AggregateValue": 1200.0,
                    "ApproximateUniqueCount": 3,
                    "Contributors": [
                        {
                            "Keys": ["DEVICE#1"],
                            "ApproximateAggregateValue": 1000.0,
                            "Datapoints": [{"Timestamp": at, "ApproximateValue": 1000.0}],
                        }
                    ],
                    "MetricDatapoints": [{"Timestamp": at, "MaxContributorValue": 1000.0}],
                },
            )
        return None

    return answer


# ------------------------------------------------------------------------------------- a writer racing the audit


def concurrent_writer(ddb: Any, table: str) -> Callable[..., None]:
    """A ``before-parameter-build`` hook: the metrics audit's first finding transaction is written by someone else
    first.

    The same state and outbox entry land just before the function's own transaction, whose conditions then fail:
    the function re-reads the finding (version conflict) and finds nothing left to do.
    """
    done: list[bool] = []

    def race(params: dict[str, Any], **_: Any) -> None:
        if done or _current.function != "MetricsAuditFunction":
            return
        items = params.get("TransactItems", [])
        if not all(item.get("Put", {}).get("TableName") == table for item in items):
            return
        done.append(True)
        outside_functions(lambda: ddb.transact_write_items(TransactItems=copy.deepcopy(items)))

    return race


# ------------------------------------------------------------------------------------- the runs


@dataclass
class Recorded:
    recorder: Recorder
    catcher: SlackCatcher
    announcements: list[dict[str, str]]
    audit_results: list[dict[str, Any]]
    report_results: list[Any]
    #: the capture controller's run without a trail of the stack's own (it advises)
    advice: dict[str, Any] = field(default_factory=dict)


def _stream_events() -> tuple[dict[str, Any], dict[str, Any]]:
    """The NEW_AND_OLD_IMAGES sample, and a second batch: its large item written under another key (a new finding)."""
    first = json.loads((ROOT / "events" / "stream_item_size_new_and_old.json").read_text())
    large = max(first["Records"], key=lambda r: len(json.dumps(r["dynamodb"].get("NewImage", {}))))
    record = copy.deepcopy(large)
    record["eventID"] = uuid.uuid4().hex
    record["dynamodb"]["Keys"]["pk"] = {"S": "DEVICE#iam-runtime"}
    record["dynamodb"]["NewImage"]["pk"] = {"S": "DEVICE#iam-runtime"}
    record["dynamodb"]["SequenceNumber"] = "400000000000000000001"
    return first, {"Records": [record]}


@pytest.fixture(scope="module")
def recorded(moto_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """Run every handler end to end against moto, once for the module; yields what was recorded."""
    catcher = SlackCatcher().start()
    invoke = Invoker()
    tmp_path = tmp_path_factory.mktemp("trail")
    with pytest.MonkeyPatch.context() as monkeypatch:
        try:
            yield _run_everything(moto_url, tmp_path, monkeypatch, catcher, invoke)
        finally:
            invoke.clear_caches()
            catcher.stop()


def _run_everything(
    moto_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catcher: SlackCatcher, invoke: Invoker
) -> Recorded:
    # Every message of the topic (no filter): the notifier and the Security Hub sink both see finding events here.
    stack = create_stack(moto_url, catcher.url, prefix=f"iam-{uuid.uuid4().hex[:8]}")
    for name, value in stack.environment().items():
        monkeypatch.setenv(name, value)
    session = boto3.Session()
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)  # handlers' clients come from the default session
    recorder = Recorder(stack.table_name)
    session.events.register("before-parameter-build", recorder)
    invoke.clear_caches()
    s3, sqs, ddb = client("s3", moto_url), client("sqs", moto_url), client("dynamodb", moto_url)
    missing_topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:no-such-topic"

    # Trail ingest: a quarter hour of generated traffic, delivered by S3 notifications through the queue.
    files = write_trail(planted_workload(START, hours=0.25, seed=7), tmp_path, TRAIL_ACCOUNT, REGION, seed=7)
    for path in files:
        s3.put_object(Bucket=stack.bucket, Key=path.relative_to(tmp_path).as_posix(), Body=path.read_bytes())
    queue_arn = sqs.get_queue_attributes(QueueUrl=stack.trail_queue_url, AttributeNames=["QueueArn"])
    messages = _receive_all(sqs, stack.trail_queue_url)
    assert messages
    for i in range(0, len(messages), 5):
        event = sqs_event(messages[i : i + 5], queue_arn["Attributes"]["QueueArn"])
        assert invoke("TrailIngestFunction", trail_ingest, event) == {"batchItemFailures": []}
    # A truncated object: recorded as unreadable (UpdateItem) and its message fails
    cut = files[0].read_bytes()
    s3.put_object(
        Bucket=stack.bucket, Key=files[0].relative_to(tmp_path).as_posix()[:-8] + "-cut.json.gz", Body=cut[:99]
    )
    [message] = _receive_all(sqs, stack.trail_queue_url)
    event = sqs_event([message], queue_arn["Attributes"]["QueueArn"])
    assert len(invoke("TrailIngestFunction", trail_ingest, event)["batchItemFailures"]) == 1

    # Events ingest: the sample EventBridge batch.
    event = json.loads((ROOT / "events" / "events_ingest_sqs_eventbridge.json").read_text())
    assert invoke("EventsIngestFunction", events_ingest, event) == {"batchItemFailures": []}

    # Evaluator: the windows closed an hour later; it works off any backlog over several scheduled runs.
    for _ in range(20):
        now = START + timedelta(hours=1)
        rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/evaluator"
        result = invoke("EvaluatorFunction", evaluator, scheduled_event(now, rule))
        if not result.get("backlog"):
            break
    # Notifier: what the evaluator published (SNS -> the subscription stand-in -> the SNS event).
    published = _receive_all(sqs, stack.alerts_queue_url)
    assert published, "the planted problems publish findings"
    outside_functions(lambda: client("securityhub", moto_url).enable_security_hub())
    for message in published:
        envelope = json.loads(message["Body"])
        invoke("NotifierFunction", notifier, sns_event(envelope, f"{stack.topic_arn}:{uuid.uuid4()}"))
        # The Security Hub sink gets the same events from its own subscription.
        imported = invoke("SecurityHubFunction", security_hub, sns_event(envelope, f"{stack.topic_arn}:{uuid.uuid4()}"))
        assert imported["failed"] == 0, imported

    # Stream watcher: a batch whose finding cannot be published (marked failed, kept), then a batch with a new
    # finding, which publishes both.
    first, second = _stream_events()
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", missing_topic)
    assert invoke("StreamItemSizeFunction", stream_item_size, first) == {"batchItemFailures": []}
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", stack.topic_arn)
    invoke.clear_caches()
    assert invoke("StreamItemSizeFunction", stream_item_size, second) == {"batchItemFailures": []}
    stream_published = [_attributes(m) for m in _receive_all(sqs, stack.alerts_queue_url)]
    assert sum(1 for a in stream_published if a.get("kind") == "large_item") >= 2, stream_published

    # Metrics audit over audited-* tables with planted throttling (one with auto scaling, one with Contributor
    # Insights), a writer racing its first finding, and a first run whose publishes fail.
    cw, aas = client("cloudwatch", moto_url), client("application-autoscaling", moto_url)
    now_s = int(time.time())
    t0 = now_s - now_s % 60 - 40 * 60
    create_table(ddb, f"{AUDITED_PREFIX}hot", read=1000, write=1000)
    put_points(cw, "WriteKeyRangeThroughputThrottleEvents", f"{AUDITED_PREFIX}hot", minutes(t0, 6, 40))
    put_points(cw, "WriteThrottleEvents", f"{AUDITED_PREFIX}hot", minutes(t0, 6, 40))
    put_points(cw, "ConsumedWriteCapacityUnits", f"{AUDITED_PREFIX}hot", minutes(t0, 30, 6000))
    create_table(ddb, f"{AUDITED_PREFIX}small", read=10, write=10)
    put_points(cw, "ReadProvisionedThroughputThrottleEvents", f"{AUDITED_PREFIX}small", minutes(t0, 35, 20))
    put_points(cw, "ConsumedReadCapacityUnits", f"{AUDITED_PREFIX}small", minutes(t0, 35, 600))
    aas.register_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId=f"table/{AUDITED_PREFIX}small",
        ScalableDimension="dynamodb:table:ReadCapacityUnits",
        MinCapacity=5,
        MaxCapacity=10,
    )
    aas.put_scaling_policy(
        PolicyName="read-target",
        ServiceNamespace="dynamodb",
        ResourceId=f"table/{AUDITED_PREFIX}small",
        ScalableDimension="dynamodb:table:ReadCapacityUnits",
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": 70.0,
            "PredefinedMetricSpecification": {"PredefinedMetricType": "DynamoDBReadCapacityUtilization"},
        },
    )
    session.events.register("before-call.dynamodb", contributor_insights_stub(f"{AUDITED_PREFIX}hot"))
    session.events.register("before-call.cloudwatch.GetInsightRuleReport", contributor_insights_stub("-"))
    session.events.register(
        "before-parameter-build.dynamodb.TransactWriteItems", concurrent_writer(ddb, stack.table_name)
    )
    monkeypatch.setenv("AUDIT_TABLE_PREFIX", AUDITED_PREFIX)
    rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/metrics-audit"
    audit_now = datetime.fromtimestamp(now_s, UTC)
    # The first run is the day's billing run (its 14-day billing read is recorded too), the second an ordinary one
    monkeypatch.setenv("BILLING_AUDIT_HOUR_UTC", str(audit_now.hour))
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", missing_topic)
    audit_results = [invoke("MetricsAuditFunction", metrics_audit, scheduled_event(audit_now, rule))]
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", stack.topic_arn)
    invoke.clear_caches()
    audit_now += timedelta(hours=1)
    audit_results.append(invoke("MetricsAuditFunction", metrics_audit, scheduled_event(audit_now, rule)))
    announcements = [_attributes(m) for m in _receive_all(sqs, stack.alerts_queue_url)]

    # Capture controller (CreateTrail=true): the stack's trail with its initial all-tables selector; two runs, the
    # first at the top of an hour (every table's consumed capacity is read), the second in the next slice.
    ct = client("cloudtrail", moto_url)
    trail = f"{stack.table_name}-dynamodb-data-events"
    ct.create_trail(Name=trail, S3BucketName=stack.bucket)
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
    monkeypatch.setenv("CAPTURE_TRAIL_NAME", trail)
    monkeypatch.setenv("AUDIT_BUDGET_PERCENT", "100")
    invoke.clear_caches()
    rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/capture-controller"
    hour = datetime.fromtimestamp(now_s - now_s % 3600 + 5, UTC)
    # 50 million one-page scans of the small table in the day read: above the per-table cap (a capture_cap finding,
    # recorded and published by the first run; the second, the same day, records nothing). Contributor Insights on
    # demand for 2 slices: the hot table written at 300 units/s (30 % of a partition) before the first run gets it,
    # and the third run, when the window is over, reads its report, then disables it.
    monkeypatch.setenv("CAPTURE_INSIGHTS_SLICES", "2")
    first_end = (int(hour.timestamp()) // 60 - 2) * 60
    put_points(cw, "ConsumedWriteCapacityUnits", f"{AUDITED_PREFIX}hot", minutes(first_end - 600, 9, 300 * 60))
    scans = {"SampleCount": 5e7, "Sum": 2.5e8, "Minimum": 5.0, "Maximum": 5.0}
    at = hour - timedelta(hours=2)
    scan_dims = dims(f"{AUDITED_PREFIX}small", None, "Scan")
    put_data(
        cw,
        [
            {
                "MetricName": "SuccessfulRequestLatency",
                "Dimensions": scan_dims,
                "Timestamp": at,
                "StatisticValues": scans,
            }
        ],
    )
    capture_results = [
        invoke("CaptureControllerFunction", capture_controller, scheduled_event(hour + timedelta(minutes=5 * n), rule))
        for n in range(3)
    ]
    assert capture_results[0]["status"] == "applied", capture_results
    assert len(capture_results[0]["findings"]) == 1 and capture_results[0]["published"] >= 1, capture_results
    assert capture_results[1]["findings"] == [] and capture_results[1]["published"] == 0, capture_results
    monkeypatch.delenv("CAPTURE_INSIGHTS_SLICES")
    # With an existing trail (CAPTURE_TRAIL_NAME empty): the day's first slice, the advice (no trail call).
    monkeypatch.setenv("CAPTURE_TRAIL_NAME", "")
    day = datetime.fromtimestamp(now_s - now_s % 86_400 + 86_400 + 5, UTC)
    advice = invoke(ADVISING_CONTROLLER, capture_controller, scheduled_event(day, rule))
    monkeypatch.setenv("CAPTURE_TRAIL_NAME", trail)

    # Weekly report: the first announcement fails (released, raised), the retry announces, a third run does not.
    reports_bucket = f"{stack.bucket}-reports"
    s3.create_bucket(Bucket=reports_bucket)
    kms_key = client("kms", moto_url).create_key(Description="stack key")["KeyMetadata"]["Arn"]
    monkeypatch.setenv("REPORTS_BUCKET", reports_bucket)
    monkeypatch.setenv("REPORTS_KMS_KEY_ID", kms_key)
    rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/weekly-report"
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", missing_topic)
    with pytest.raises(ClientError):
        invoke("WeeklyReportFunction", weekly_report, scheduled_event(REPORT_TIME, rule))
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", stack.topic_arn)
    invoke.clear_caches()
    report_results = [
        invoke("WeeklyReportFunction", weekly_report, scheduled_event(REPORT_TIME + timedelta(minutes=n), rule))
        for n in (1, 2)
    ]
    announcements += [_attributes(m) for m in _receive_all(sqs, stack.alerts_queue_url)]

    # Model review (ExtraOutputs with model-review), in the week of the trail: the first announcement fails (the new
    # proposal is forgotten again), the retry announces, a third run has nothing new.
    rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/model-review"
    review_time = START + timedelta(days=2)
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", missing_topic)
    with pytest.raises(ClientError):
        invoke("ModelReviewFunction", model_review, scheduled_event(review_time, rule))
    monkeypatch.setenv("FINDINGS_TOPIC_ARN", stack.topic_arn)
    invoke.clear_caches()
    reviews = [
        invoke("ModelReviewFunction", model_review, scheduled_event(review_time + timedelta(hours=n), rule))
        for n in (1, 2)
    ]
    assert reviews[0]["new"] and not reviews[1]["new"], reviews
    _receive_all(sqs, stack.alerts_queue_url)
    return Recorded(recorder, catcher, announcements, audit_results, report_results, advice)


# ------------------------------------------------------------------------------------- what the roles grant


@dataclass
class Grants:
    actions: set[str] = field(default_factory=set)
    #: DynamoDB grants on the state table: (action, "table" or index name).
    state_table: set[tuple[str, str]] = field(default_factory=set)
    audited: set[str] = field(default_factory=set)
    unscoped: set[str] = field(default_factory=set)


def _granted(stack: dict[str, Any], function: str) -> Grants:
    props = function_props(stack, function)
    role = props["Role"]["Fn::GetAtt"][0]
    grants = Grants()
    targets = {json.dumps(STATE_TABLE_ARN): "table"} | {json.dumps(index_arn(i)): i for i in ("gsi1", "gsi2")}
    for statement in role_statements(stack, role):
        for action in as_list(statement["Action"]):
            grants.actions.add(action)
            for resource in as_list(statement["Resource"]):
                if resource == "*":
                    grants.unscoped.add(action)
                elif resource in (AUDITED_TABLES_ARN, AUDITED_INDEXES_ARN):
                    grants.audited.add(action)
                elif action.startswith("dynamodb:") and json.dumps(resource) in targets:
                    grants.state_table.add((action, targets[json.dumps(resource)]))
    return grants


ALL_FUNCTIONS = {
    "CaptureControllerFunction",
    "TrailIngestFunction",
    "EventsIngestFunction",
    "EvaluatorFunction",
    "NotifierFunction",
    "SecurityHubFunction",
    "StreamItemSizeFunction",
    "MetricsAuditFunction",
    "WeeklyReportFunction",
    "ModelReviewFunction",
}
#: The capture controller's run with an existing trail (CreateTrail=false), recorded apart from its managing runs.
ADVISING_CONTROLLER = "CaptureControllerFunction (existing trail)"


def test_every_call_the_handlers_make_is_granted_and_dynamodb_grants_are_exactly_used(recorded: Recorded) -> None:
    recorder = recorded.recorder
    assert recorded.catcher.posts, "the notifier posted to the Slack stand-in"
    stack = resolve(load_template(), VARIANTS["all-features"])
    assert set(recorder.calls) == ALL_FUNCTIONS | {ADVISING_CONTROLLER}
    wrong: list[str] = []  # every function's mismatch, not only the first one's
    for function, calls in recorder.calls.items():
        if function == ADVISING_CONTROLLER:
            continue  # another variant: test_the_advising_controller_needs_no_trail_permission
        grants = _granted(stack, function)
        _assert_granted(function, calls, grants)
        used_state = {(action, target) for action, target in calls if target not in (None, "audited")}
        used_state = {c for c in used_state if c[0].startswith("dynamodb:")}
        if used_state != grants.state_table:
            wrong.append(
                f"{function}: state table used but not granted {sorted(used_state - grants.state_table)}, "
                f"granted but unused {sorted(grants.state_table - used_state)}"
            )
    assert not wrong, "; ".join(wrong)


def _assert_granted(label: str, calls: set[Call], grants: Grants) -> None:
    """Every action called is granted; audited-table calls on the audited tables, table-less ones on '*'."""
    used = {action for action, _ in calls}
    assert used <= grants.actions, f"{label} calls ungranted {sorted(used - grants.actions)}"
    audited = {action for action, target in calls if target == "audited"}
    assert audited <= grants.audited, f"{label}: audited-table calls not granted: {sorted(audited)}"
    tableless = {action for action, target in calls if target is None and action.startswith("dynamodb:")}
    assert tableless <= grants.unscoped, f"{label}: {sorted(tableless)} need Resource '*'"


def test_the_advising_controller_needs_no_trail_permission(recorded: Recorded) -> None:
    """With an existing trail (CreateTrail=false) the controller calls no CloudTrail API (its role has none) and every
    call it makes is granted; it returns the selectors and the command to apply them."""
    assert recorded.advice["status"] == "advised" and "put-event-selectors" in recorded.advice["detail"]
    calls = recorded.recorder.calls[ADVISING_CONTROLLER]
    assert {
        ("dynamodb:ListTables", None),
        ("dynamodb:DescribeTable", "audited"),
        ("cloudwatch:GetMetricData", None),
    } <= calls
    assert not {action for action, _ in calls if action.startswith("cloudtrail:")}, calls
    for variant in ("existing-bucket", "org-trail-log-archive"):
        grants = _granted(resolve(load_template(), VARIANTS[variant]), "CaptureControllerFunction")
        assert not {a for a in grants.actions if a.startswith("cloudtrail:")}, variant
        _assert_granted(f"{ADVISING_CONTROLLER} in {variant}", calls, grants)


def test_audited_tables_are_only_described(recorded: Recorded) -> None:
    """Only the metrics audit and the capture controller touch other tables, and only their metadata; the audit read
    every metadata grant, the controller only describes them (and their Contributor Insights, which it turns on and
    off on demand: the managing controller only)."""
    foreign = recorded.recorder.foreign
    controllers = {"CaptureControllerFunction", ADVISING_CONTROLLER}
    assert {function for function, _, _ in foreign} == {"MetricsAuditFunction"} | controllers
    assert {action for f, action, _ in foreign if f == "MetricsAuditFunction"} == AUDITED_TABLE_METADATA
    assert {action for f, action, _ in foreign if f == ADVISING_CONTROLLER} == {"dynamodb:DescribeTable"}
    assert {action for f, action, _ in foreign if f in controllers} == {
        "dynamodb:DescribeTable",
        "dynamodb:DescribeContributorInsights",
        "dynamodb:UpdateContributorInsights",
    }
    assert {t for f, _, t in foreign if f == "MetricsAuditFunction"} <= {
        f"{AUDITED_PREFIX}hot",
        f"{AUDITED_PREFIX}small",
    }


def test_the_rare_paths_ran(recorded: Recorded) -> None:
    """The runs above exercised what the grants are for (else the exact-grant test would prove less)."""
    calls = recorded.recorder.calls
    audit = recorded.audit_results
    assert audit[0]["publish_failed"] > 0 and audit[0]["conflicts"] == 1, audit[0]
    assert audit[1]["published"] >= audit[0]["publish_failed"], audit[1]
    assert audit[0]["billing_run"] and audit[0]["billing"]["get_metric_data_calls"] > 0, audit[0]  # the billing read
    assert not audit[1]["billing_run"], audit[1]
    assert ("cloudwatch:GetInsightRuleReport", None) in calls["MetricsAuditFunction"]
    controller = calls["CaptureControllerFunction"]
    assert {("cloudwatch:GetMetricData", None), ("cloudtrail:PutEventSelectors", None)} <= controller
    assert {  # Contributor Insights on demand: enabled, then read before it is disabled
        ("dynamodb:DescribeContributorInsights", "audited"),
        ("dynamodb:UpdateContributorInsights", "audited"),
        ("cloudwatch:GetInsightRuleReport", None),
    } <= controller
    assert ("application-autoscaling:DescribeScalingPolicies", None) in calls["MetricsAuditFunction"]
    assert {rule for _, rule in recorded.recorder.insight_rules} == set(CI_RULES)
    kinds = [a.get("kind") for a in recorded.announcements]
    assert kinds.count("weekly_report") == 1, kinds  # released after the failure, announced once
    assert [r["announcement"] for r in recorded.report_results] == ["published", "already_published"]
    assert recorded.report_results[0]["findings"] > 0, "the evaluator's week-49 findings are in the report"


def test_report_objects_stay_under_the_granted_prefix(recorded: Recorded) -> None:
    prefix = REPORT_OBJECTS_ARN["Fn::Sub"].split("}/", 1)[1].rstrip("*")
    objects = [
        (bucket, key) for function, bucket, key in recorded.recorder.s3_objects if function == "WeeklyReportFunction"
    ]
    assert objects and all(key.startswith(prefix) for _, key in objects), objects
    assert ("s3:GetObject", None) in recorded.recorder.calls["WeeklyReportFunction"], "the presigned link's action"
    assert INSIGHT_RULES_ARN["Fn::Sub"].endswith("insight-rule/DynamoDBContributorInsights-*")


# ------------------------------------------------------------------------------------- the member-role template

#: The services whose calls the audit makes in an audited account (the rest is the stack's own: state, SNS, KMS).
_AUDIT_SERVICES = ("dynamodb:", "cloudwatch:", "application-autoscaling:", "servicequotas:")


def test_member_role_grants_exactly_the_reads_the_metrics_audit_makes(recorded: Recorded) -> None:
    """templates/member-role.yaml (assumed in each member account) grants the audit's read calls, no more, no less;
    audited-table calls are granted on tables and indexes of every Region, never a data-plane action."""
    calls = recorded.recorder.calls["MetricsAuditFunction"]
    used = {action for action, target in calls if target in (None, "audited") and action.startswith(_AUDIT_SERVICES)}
    member = load_template(ROOT / "templates" / "member-role.yaml")
    statements = role_statements(member, "MemberRole")
    granted = {action for s in statements for action in as_list(s["Action"])}
    assert granted == used, f"granted but unused {sorted(granted - used)}, used but ungranted {sorted(used - granted)}"
    audited = {action for action, target in calls if target == "audited"}
    for statement in statements:
        resources = [json.dumps(r) for r in as_list(statement["Resource"])]
        for action in as_list(statement["Action"]):
            if action in audited:
                assert all(":dynamodb:*:${AWS::AccountId}:table/" in r for r in resources), (action, resources)
    assert not granted & {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:BatchGetItem"}
    trust = member["Resources"]["MemberRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert [s["Action"] for s in trust] == ["sts:AssumeRole"]
    assert json.dumps(trust[0]["Principal"]) == json.dumps(
        {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AuditorAccountId}:root"}}
    )

"""The functions' IAM roles against what their code really calls.

The real handlers run end to end against a moto server (an S3 trail bucket with generated CloudTrail files and
planted problems, the state table, the findings topic, the Slack secret and a local stand-in for the webhook): trail
ingest, events ingest, the evaluator and the Slack notifier. A botocore hook records every AWS call each handler
makes; each call is mapped to the IAM action it needs (``TransactWriteItems`` to the actions of its items) and, for
DynamoDB, to the state-table target (table or index). The role template.yaml gives the function must grant every
one of them, and for DynamoDB nothing else: the state-table grants are exactly the calls the code makes.
"""

from __future__ import annotations

import contextvars
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest

from auditor.config import get_settings
from auditor.demo.generator import demo_workload, write_trail
from auditor.demo.service import lambda_context, scheduled_event, sns_event, sqs_event
from auditor.demo.stack import ACCOUNT, REGION, SlackCatcher, aws_client, create_stack
from handlers import evaluator, events_ingest, notifier, trail_ingest
from tests.template.test_template import STATE_TABLE_ARN, as_list, function_props, index_arn, role_statements
from tests.template.variants import VARIANTS, load_template, resolve

ROOT = Path(__file__).resolve().parents[2]
TRAIL_ACCOUNT = "111122223333"
START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

_current_function: contextvars.ContextVar[str | None] = contextvars.ContextVar("current_function", default=None)

#: DynamoDB TransactWriteItems is authorised per item (there is no IAM action of that name).
_TRANSACT_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}

Call = tuple[str, str | None]  # (IAM action, DynamoDB target: "table" / index name; None for other services)


class Recorder:
    """Collects the IAM actions of the AWS calls made while a function is marked current."""

    def __init__(self, table_name: str) -> None:
        self.table_name = table_name
        self.calls: dict[str, set[Call]] = {}
        self.foreign_tables: list[tuple[str, str]] = []

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        function = _current_function.get()
        if function is None:
            return
        prefix = model.service_model.endpoint_prefix
        calls = self.calls.setdefault(function, set())
        if prefix != "dynamodb":
            calls.add((f"{prefix}:{model.name}", None))
            return
        for action, table, target in self._dynamodb(model.name, params):
            if table != self.table_name:
                self.foreign_tables.append((function, table))
            calls.add((action, target))

    @staticmethod
    def _dynamodb(operation: str, params: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
        if operation == "TransactWriteItems":
            for item in params["TransactItems"]:
                ((kind, body),) = item.items()
                yield _TRANSACT_ITEM_ACTIONS[kind], body["TableName"], "table"
        elif operation == "TransactGetItems":
            for item in params["TransactItems"]:
                yield "dynamodb:GetItem", item["Get"]["TableName"], "table"
        elif operation in ("BatchGetItem", "BatchWriteItem"):
            for table in params["RequestItems"]:
                yield f"dynamodb:{operation}", table, "table"
        else:
            yield f"dynamodb:{operation}", params["TableName"], params.get("IndexName") or "table"


class Invoker:
    """Runs handlers with the function marked current (fresh clients: their caches are cleared first)."""

    def __init__(self) -> None:
        self.modules = (trail_ingest, events_ingest, evaluator, notifier)

    def clear_caches(self) -> None:
        get_settings.cache_clear()
        for module in self.modules:
            for value in vars(module).values():
                if (
                    callable(value)
                    and hasattr(value, "cache_clear")
                    and getattr(value, "__module__", "") == (module.__name__)
                ):
                    value.cache_clear()

    def __call__(self, function: str, module: ModuleType, event: dict[str, Any]) -> Any:
        token = _current_function.set(function)
        try:
            return module.lambda_handler(event, lambda_context(function))
        finally:
            _current_function.reset(token)


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


def _granted(stack: dict[str, Any], function: str) -> tuple[set[str], set[tuple[str, str]]]:
    """(every action the function's role allows, its DynamoDB (action, target) grants)."""
    props = function_props(stack, function)
    role = props["Role"]["Fn::GetAtt"][0]
    actions: set[str] = set()
    dynamodb: set[tuple[str, str]] = set()
    targets = {json.dumps(STATE_TABLE_ARN): "table"} | {json.dumps(index_arn(i)): i for i in ("gsi1", "gsi2")}
    for statement in role_statements(stack, role):
        for action in as_list(statement["Action"]):
            actions.add(action)
            if action.startswith("dynamodb:"):
                for resource in as_list(statement["Resource"]):
                    dynamodb.add((action, targets[json.dumps(resource)]))
    return actions, dynamodb


@pytest.fixture
def recorded(moto_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Recorder, Any]]:
    """Run every handler end to end against moto; yields the recorder and the Slack stand-in."""
    catcher = SlackCatcher().start()
    invoke = Invoker()
    try:
        stack = create_stack(moto_url, catcher.url, prefix=f"iam-{uuid.uuid4().hex[:8]}")
        for name, value in stack.environment().items():
            monkeypatch.setenv(name, value)
        session = boto3.Session()
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)  # handlers' clients come from the default session
        recorder = Recorder(stack.table_name)
        session.events.register("before-parameter-build", recorder)
        invoke.clear_caches()
        s3, sqs = aws_client("s3", moto_url), aws_client("sqs", moto_url)

        # Trail ingest: a quarter hour of generated traffic, delivered by S3 notifications through the queue.
        files = write_trail(demo_workload(START, hours=0.25, seed=7), tmp_path, TRAIL_ACCOUNT, REGION, seed=7)
        for path in files:
            s3.put_object(Bucket=stack.bucket, Key=path.relative_to(tmp_path).as_posix(), Body=path.read_bytes())
        queue_arn = sqs.get_queue_attributes(QueueUrl=stack.trail_queue_url, AttributeNames=["QueueArn"])
        messages = _receive_all(sqs, stack.trail_queue_url)
        assert messages
        for i in range(0, len(messages), 5):
            event = sqs_event(messages[i : i + 5], queue_arn["Attributes"]["QueueArn"])
            assert invoke("TrailIngestFunction", trail_ingest, event) == {"batchItemFailures": []}

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
        for message in published:
            envelope = json.loads(message["Body"])
            invoke("NotifierFunction", notifier, sns_event(envelope, f"{stack.topic_arn}:{uuid.uuid4()}"))
        yield recorder, catcher
    finally:
        invoke.clear_caches()
        catcher.stop()


def test_every_call_the_handlers_make_is_granted_and_dynamodb_grants_are_exactly_used(
    recorded: tuple[Recorder, Any],
) -> None:
    recorder, catcher = recorded
    assert catcher.posts, "the notifier posted to the Slack stand-in"
    assert not recorder.foreign_tables, f"calls on tables other than the state table: {recorder.foreign_tables}"
    stack = resolve(load_template(), VARIANTS["all-features"])
    assert set(recorder.calls) == {
        "TrailIngestFunction",
        "EventsIngestFunction",
        "EvaluatorFunction",
        "NotifierFunction",
    }
    for function, calls in recorder.calls.items():
        granted_actions, granted_dynamodb = _granted(stack, function)
        used_actions = {action for action, _ in calls}
        assert used_actions <= granted_actions, f"{function} calls ungranted {sorted(used_actions - granted_actions)}"
        used_dynamodb = {(action, target) for action, target in calls if target is not None}
        assert used_dynamodb == granted_dynamodb, (
            f"{function}: DynamoDB used but not granted {sorted(used_dynamodb - granted_dynamodb)}, "
            f"granted but unused {sorted(granted_dynamodb - used_dynamodb)}"
        )

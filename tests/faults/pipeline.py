"""The fault-injection driver: the real handlers (trail ingest, evaluator, Slack notifier) on a moto server, in the
order AWS runs them, with one injected fault, and what came out (stored totals, Slack posts, e-mails).

Faults are botocore event hooks on the default session (the handlers' clients are built from it) that act on the
n-th call of one operation in one handler, once; a Lambda timeout is :class:`LambdaTimeout`. The driver does what
AWS does after a failure: SQS redelivers failed trail messages, the schedule runs the evaluator again, Lambda
retries a failed notifier event (twice, then its DLQ), SNS delivers a message twice. docs/faults.md describes the
suite and its table.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.message import Message
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import botocore.endpoint
import orjson
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from botocore.httpsession import URLLib3Session

from auditor.demo.replay import replay_findings
from auditor.demo.service import (
    _environment,
    _health,
    _metrics_to,
    _receive_all,
    lambda_context,
    scheduled_event,
    sns_event,
    sqs_event,
)
from auditor.demo.stack import ACCOUNT, REGION, SlackCatcher, Stack, aws_client, create_stack
from auditor.demo.trail import write_trail
from auditor.demo.workload import Workload, generate_workload
from auditor.engine import analyze_trail
from auditor.sinks import slack
from auditor.state.findings_store import FindingsStore

#: The trail: a quarter of an hour of the demo's workload, slowed down (about 4,000 records in three files, which
#: deliver a few records again in the next file), with every kind of traffic finding the demo plants.
START = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
WORKLOAD = Workload(
    hours=0.25,
    seed=5,
    hot_key_burst_rps=8,
    orders_rate=0.3,
    sessions_rate=0.3,
    cleaner_interval_s=30,
    jobs_rate=0.5,
    catalog_rate=0.5,
    users_rate=0.5,
    documents_rate=0.2,
)
#: The evaluator's schedule time: every window of the trail closed (window end + the evaluation delay).
EVALUATE_AT = START + timedelta(minutes=15 + 20, seconds=30)
#: ``late``: the next schedule, when the messages that failed before the evaluation came back and were ingested.
LATE_BY = timedelta(minutes=15)
#: The e-mail subscription: every message but the digests and the weekly announcement.
PER_FINDING = {
    "RawMessageDelivery": "false",
    "FilterPolicy": '{"kind": [{"anything-but": ["digest", "weekly_report"]}]}',
}

#: The fault kinds: an error the handler's code sees (``throttled``: as when botocore's retries are spent), errors
#: botocore retries (``transient``: a 500, then no connection, before AWS carried the call out; ``response_lost``: the
#: answer lost after AWS carried it out), a Lambda timeout right after a call returned, the Slack webhook answering
#: 500 once or accepting a post just before the notifier's timeout, and SNS delivering the posted message once more.
#: ``late`` is a throttled trail-ingest call whose message comes back only after the evaluator evaluated its windows
#: (the evaluator evaluates them again: auditor/service/late.py).
KINDS = ("throttled", "transient", "response_lost", "timeout")
SLACK_KINDS = ("slack_500", "slack_timeout", "sns_duplicate")
HANDLERS = ("trail-ingest", "evaluator", "notifier")


class LambdaTimeout(BaseException):  # stands for Lambda stopping the invocation, not an error
    """Lambda stopped the invocation at its timeout: nothing after this point ran (no ``except Exception`` sees it)."""


@dataclass(frozen=True, order=True)
class Fault:
    """One fault: ``kind`` at the ``occurrence``-th call (1-based) of ``operation`` in ``handler`` over the run."""

    handler: str
    operation: str
    occurrence: int
    kind: str

    @property
    def id(self) -> str:
        return f"{self.handler}:{self.operation}#{self.occurrence or 'last'}:{self.kind}"

    def placed(self, calls: list[tuple[str, str]]) -> Fault:
        """This fault with its call counted (occurrence 0: the last call of a clean run's ``calls``)."""
        if self.occurrence:
            return self
        return replace(self, occurrence=calls.count((self.handler, self.operation)))


class _Raw:
    """The raw body of a response made up here."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_kw: Any) -> Iterator[bytes]:
        yield self.body


def _throttled(service: str, operation: str) -> ClientError:
    code, status = ("SlowDown", 503) if service == "s3" else ("ThrottlingException", 400)
    error = {"Code": code, "Message": "Rate exceeded (injected)"}
    return ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": status}}, operation)  # type: ignore[typeddict-item]


@dataclass
class Injector:
    """Counts every AWS call (and Slack post) of the handler running now, and applies :attr:`fault` once."""

    fault: Fault | None = None
    handler: str | None = None
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: The calls in order: (handler, operation).
    log: list[tuple[str, str]] = field(default_factory=list)
    fired: bool = False
    #: ``sns_duplicate``: the notifier's message is delivered once more after the invocation that posted it.
    duplicate: bool = False
    _send: str | None = None
    _crash: str | None = None

    def reset(self, fault: Fault | None) -> None:
        self.fault, self.fired, self.handler, self._send, self._crash = fault, False, None, None, None
        self.duplicate = False
        self.calls.clear()
        self.log.clear()

    def install(self) -> None:
        events = boto3._get_default_session().events  # the handlers' clients copy these hooks when built
        events.register("before-call", self._before_call, unique_id="fault-injector-call")
        events.register("before-send", self._before_send, unique_id="fault-injector-send")
        events.register("after-call", self._after_call, unique_id="fault-injector-after")

    def uninstall(self) -> None:
        events = boto3._get_default_session().events
        events.unregister("before-call", unique_id="fault-injector-call")
        events.unregister("before-send", unique_id="fault-injector-send")
        events.unregister("after-call", unique_id="fault-injector-after")

    def count(self, operation: str) -> bool:
        """Count a call of ``operation``; True when the fault is due at it (it is then spent)."""
        if self.handler is None:
            return False
        key = (self.handler, operation)
        self.calls[key] += 1
        self.log.append(key)
        f = self.fault
        due = f is not None and not self.fired and (f.handler, f.operation, f.occurrence) == (*key, self.calls[key])
        self.fired = self.fired or due
        return due

    def _before_call(self, model: Any, **_kw: Any) -> None:
        operation = f"{model.service_model.service_name}.{model.name}"
        if not self.count(operation):
            return
        assert self.fault is not None
        if self.fault.kind in ("throttled", "late"):
            raise _throttled(model.service_model.service_name, model.name)
        if self.fault.kind == "timeout":
            self._crash = operation
        else:
            self._send = self.fault.kind

    def _before_send(self, request: AWSPreparedRequest, **_kw: Any) -> AWSResponse | None:
        kind, self._send = self._send, None
        if kind == "transient":  # this attempt gets a 500, the next one no connection
            self._send = "connection_error"
            return AWSResponse(request.url, 500, {}, _Raw(b""))
        if kind == "connection_error":
            raise EndpointConnectionError(endpoint_url=request.url)
        if kind == "response_lost":  # carried out, but the answer never arrives: botocore sends it again
            URLLib3Session().send(request)
            raise ReadTimeoutError(endpoint_url=request.url)
        return None

    def _after_call(self, model: Any, **_kw: Any) -> None:
        if self._crash is not None and self._crash == f"{model.service_model.service_name}.{model.name}":
            self._crash = None
            raise LambdaTimeout(f"{model.service_model.service_name}.{model.name}")


INJECTOR = Injector()


@contextmanager
def _slack_faults() -> Iterator[None]:
    """Slack posts counted (operation ``slack.post``) and faulted like AWS calls."""
    real_post, real_open = slack.post_webhook, slack._OPENER.open
    failing: list[bool] = []

    def post(url: str, payload: Any, **kw: Any) -> slack.Delivery:
        due = INJECTOR.count("slack.post")
        kind = INJECTOR.fault.kind if due and INJECTOR.fault else None
        if kind == "slack_500":
            failing.append(True)
        INJECTOR.duplicate = INJECTOR.duplicate or kind == "sns_duplicate"
        delivery = real_post(url, payload, **{**kw, "sleep": lambda _s: None})
        if kind == "slack_timeout":
            raise LambdaTimeout("slack.post")
        return delivery

    def open_(request: Any, *args: Any, **kw: Any) -> Any:
        if failing:
            failing.clear()
            raise urllib.error.HTTPError(request.full_url, 500, "Internal Server Error (injected)", Message(), None)
        return real_open(request, *args, **kw)

    slack.post_webhook = post  # type: ignore[assignment]
    slack._OPENER.open = open_  # type: ignore[method-assign]
    try:
        yield
    finally:
        slack.post_webhook = real_post
        slack._OPENER.open = real_open  # type: ignore[method-assign]


def reset_moto(endpoint: str) -> None:
    """Empty the moto server's state (every account and service)."""
    with urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10):
        pass


@contextmanager
def _no_backoff() -> Iterator[None]:
    """botocore retries at once (its backoff is a real sleep; what is retried stays the same)."""
    real = botocore.endpoint.time
    botocore.endpoint.time = SimpleNamespace(sleep=lambda _s: None)  # type: ignore[assignment]
    try:
        yield
    finally:
        botocore.endpoint.time = real


@dataclass
class Trail:
    """The trail files and what ``analyze-trail`` reports on them."""

    folder: Path
    files: list[Path]
    expected: dict[str, dict[str, Any]]
    period: tuple[datetime, datetime]


def make_trail(folder: Path) -> Trail:
    records = generate_workload(WORKLOAD, START)
    files = write_trail(records, folder, seed=5, duplicates=5, late_fraction=0.0, file_minutes=5)
    found = analyze_trail([str(folder)], processes=1).findings
    expected = {f.id: orjson.loads(f.model_dump_json()) for f in found}
    totals = [f.totals for f in found if f.totals is not None]
    period = (min(t.period_start for t in totals), max(t.period_end for t in totals))
    return Trail(folder, files, expected, period)


@dataclass
class Outcome:
    """What one run of the pipeline left: stored findings, Slack's finding ids, the e-mails, health metrics."""

    findings: dict[str, dict[str, Any]]
    #: The finding ids listed in each of Slack's posts (a digest lists several), in order.
    slack_posts: list[list[str]]
    mails: Counter[tuple[str, str]]
    health: dict[str, float]
    parked: int
    calls: list[tuple[str, str]]

    @property
    def slack_ids(self) -> Counter[str]:
        """How often Slack was told each finding."""
        return Counter(fid for post in self.slack_posts for fid in post)

    @property
    def repeated_mails(self) -> int:
        return sum(n - 1 for n in self.mails.values())


class Pipeline:
    """The stack on the moto server at ``endpoint`` and the handlers driven over it."""

    def __init__(self, endpoint: str, catcher: SlackCatcher, trail: Trail) -> None:
        self.catcher, self.trail = catcher, trail
        self.stack: Stack = create_stack(endpoint, catcher.url, prefix="faults")
        self.sqs = aws_client("sqs", endpoint)
        self.s3 = aws_client("s3", endpoint)
        sns = aws_client("sns", endpoint)
        self.mail_url = self.sqs.create_queue(QueueName="faults-mail")["QueueUrl"]
        arn = self._arn(self.mail_url)
        sns.subscribe(TopicArn=self.stack.topic_arn, Protocol="sqs", Endpoint=arn, Attributes=PER_FINDING)
        self.emf: list[str] = []
        self.parked = 0

    def _arn(self, url: str) -> str:
        return str(self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])

    def _invoke(self, handler: str, function: Callable[[Any, Any], Any], event: dict[str, Any]) -> tuple[bool, Any]:
        """(completed, result); a failed invocation is a new container for the next one, as after a timeout."""
        INJECTOR.handler = handler
        try:
            return True, function(event, lambda_context(handler))
        except (Exception, LambdaTimeout):
            from auditor.demo.service import _cold_start

            _cold_start()
            return False, None
        finally:
            INJECTOR.handler = None

    def run(self) -> Outcome:
        self.catcher.posts.clear()
        with _environment(self.stack.environment()), _metrics_to(self.emf.append), _slack_faults(), _no_backoff():
            for path in self.trail.files:
                key = path.relative_to(self.trail.folder).as_posix()
                self.s3.put_object(Bucket=self.stack.bucket, Key=key, Body=path.read_bytes())
            # The evaluator has been running: its cursor is at the window before the trail's first.
            window = 900
            FindingsStore(aws_client("dynamodb", self.stack.endpoint), self.stack.table_name).advance_cursor(
                int(START.timestamp()) - window, expected=None, now=START
            )
            late = INJECTOR.fault is not None and INJECTOR.fault.kind == "late"
            held = self.ingest(hold=late)
            self.evaluate(EVALUATE_AT)
            if held:  # the failed messages come back only after the evaluator evaluated their windows
                for handle in held:
                    self.sqs.change_message_visibility(
                        QueueUrl=self.stack.trail_queue_url, ReceiptHandle=handle, VisibilityTimeout=0
                    )
                self.ingest(hold=False)
                self.evaluate(EVALUATE_AT + LATE_BY)
            self.notify()
            ddb = aws_client("dynamodb", self.stack.endpoint)
            states = FindingsStore(ddb, self.stack.table_name).week_findings(START)
        findings = {f["id"]: f for f in replay_findings(states, self.trail.period)}
        slack_posts = []
        for post in self.catcher.posts:
            texts = [str(block.get("text", {}).get("text", "")) for block in post.get("blocks", [])]
            slack_posts.append(
                [line.split("`")[1] for text in texts for line in text.splitlines() if line.startswith("Finding `")]
            )
        mails: Counter[tuple[str, str]] = Counter()
        for m in _receive_all(self.sqs, self.mail_url):
            attrs = orjson.loads(m["Body"])["MessageAttributes"]
            mails[(attrs["finding_id"]["Value"], attrs["status"]["Value"])] += 1
        health = {name: value for name, (_unit, value) in _health(self.emf).items()}
        return Outcome(findings, slack_posts, mails, health, self.parked, list(INJECTOR.log))

    def ingest(self, *, hold: bool) -> list[str]:
        """The trail queue through trail ingest, ten messages a batch; failed messages come back (SQS), or with
        ``hold`` stay invisible: their receipt handles are returned (the caller lets them come back later)."""
        from handlers import trail_ingest

        url = self.stack.trail_queue_url
        arn = self._arn(url)
        held: list[str] = []
        for _ in range(6):
            messages = _receive_all(self.sqs, url)
            if not messages:
                break
            for i in range(0, len(messages), 10):
                batch = messages[i : i + 10]
                done, resp = self._invoke("trail-ingest", trail_ingest.lambda_handler, sqs_event(batch, arn))
                failed = {f["itemIdentifier"] for f in resp["batchItemFailures"]} if done else {"*"}
                for m in batch:
                    handle = m["ReceiptHandle"]
                    if not ("*" in failed or m["MessageId"] in failed):
                        self.sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)
                    elif hold:
                        held.append(handle)
                    else:
                        self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=0)
        return held

    def evaluate(self, at: datetime) -> None:
        """The evaluator at the schedule time ``at`` until it completed, has no backlog and the outbox is empty."""
        from handlers import evaluator

        outbox = FindingsStore(aws_client("dynamodb", self.stack.endpoint), self.stack.table_name)
        event = scheduled_event(at, f"arn:aws:events:{REGION}:{ACCOUNT}:rule/evaluator")
        for _ in range(8):
            done, result = self._invoke("evaluator", evaluator.lambda_handler, event)
            if done and not result.get("backlog") and not outbox.pending(1):
                return

    def notify(self) -> None:
        """Each message of the Slack subscription to the notifier; a failed one is retried twice, then parked."""
        from handlers import notifier

        url = self.stack.alerts_queue_url
        for m in _receive_all(self.sqs, url):
            event = sns_event(orjson.loads(m["Body"]), f"{self.stack.topic_arn}:slack")
            for _attempt in range(3):
                done, _ = self._invoke("notifier", notifier.lambda_handler, event)
                if done and INJECTOR.duplicate:  # SNS delivers the message again (at least once)
                    INJECTOR.duplicate = False
                    done = False
                if done:
                    break
            else:
                self.parked += 1
            self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])

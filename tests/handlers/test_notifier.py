"""The Slack notifier against a real local HTTP server (the webhook) and moto Secrets Manager (server mode)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import structlog
from botocore.exceptions import ClientError
from structlog.testing import capture_logs

from auditor.config import Settings, get_settings
from auditor.exceptions import ConfigurationError
from auditor.messages import FindingNotification
from auditor.redact import redact_value
from auditor.sinks.slack import SlackDeliveryError, forget_slack_secret, get_slack_secret, notify_slack, post_webhook
from auditor.state.slack_deliveries import SlackDeliveries
from handlers import runtime
from tests.emf import emitted
from tests.lambda_context import lambda_context
from tests.moto_server import client, create_state_table
from tests.sinks.test_slack_blocks import assert_valid_message

EVENT_FILE = Path(__file__).resolve().parents[2] / "events" / "notifier_sns.json"
#: The secret part of the webhook path: it must never show up in an error or a log line.
TOKEN = "XoXoSeCrEtToKeN42"
PATH = f"/services/T0001/B0001/{TOKEN}"


# ----------------------------------------------------------------------------- a recording Slack webhook


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Post:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class SlackStub:
    """Records every POST and answers from a script (then from ``default``), or from a function of the post."""

    def __init__(self) -> None:
        self.posts: list[Post] = []
        self.script: list[Reply] = []
        self.default = Reply()
        self.respond: Callable[[Post], Reply] | None = None
        self.lock = threading.Lock()
        self.release = threading.Event()  # ends any slow reply at teardown
        self.url = ""

    def next_reply(self, post: Post) -> Reply:
        with self.lock:
            self.posts.append(post)
            if self.respond is not None:
                return self.respond(post)
            return self.script.pop(0) if self.script else self.default


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        stub = self.server.stub
        reply = stub.next_reply(Post(self.path, dict(self.headers.items()), body))
        if reply.delay:
            stub.release.wait(reply.delay)
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    def log_message(self, *_args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stub: SlackStub


@pytest.fixture
def slack() -> Iterator[SlackStub]:
    """A real HTTP server on 127.0.0.1 (free port) standing in for Slack's incoming webhook."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.stub = SlackStub()
    server.stub.url = f"http://127.0.0.1:{server.server_address[1]}{PATH}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server.stub
    server.stub.release.set()
    server.shutdown()
    server.server_close()


class Sleeps:
    """An injected sleep that records the waits instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


PAYLOAD = {"text": "hello", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "hello"}}]}


def _post(slack: SlackStub, sleep: Sleeps, **kw: Any) -> Any:
    return post_webhook(slack.url, PAYLOAD, timeout=kw.pop("timeout", 2.0), max_attempts=kw.pop("attempts", 3),
                        sleep=sleep, **kw)  # fmt: skip


# ----------------------------------------------------------------------------- posting with retries


def test_success_posts_json_once(slack: SlackStub) -> None:
    sleep = Sleeps()
    delivery = _post(slack, sleep)
    assert (delivery.status, delivery.attempts) == (200, 1)
    [post] = slack.posts
    assert post.path == PATH
    assert post.headers["Content-Type"].startswith("application/json")
    assert post.json() == PAYLOAD
    assert sleep.calls == []


def test_500_then_200_is_retried_and_delivered_once(slack: SlackStub) -> None:
    slack.script = [Reply(500, b"internal_error")]
    sleep = Sleeps()
    delivery = _post(slack, sleep)
    assert (delivery.status, delivery.attempts) == (200, 2)
    assert len(slack.posts) == 2 and all(p.json() == PAYLOAD for p in slack.posts)
    [wait] = sleep.calls
    assert 0.25 <= wait <= 0.5  # backoff 0.5 s with jitter (between half and all of it)


def test_always_500_stops_after_the_configured_attempts(slack: SlackStub) -> None:
    slack.default = Reply(503, b"service_unavailable")
    sleep = Sleeps()
    with capture_logs() as logs, pytest.raises(SlackDeliveryError) as exc:
        _post(slack, sleep, attempts=4)
    assert len(slack.posts) == 4
    assert exc.value.retryable and exc.value.status == 503 and exc.value.attempts == 4
    assert "after 4 attempts" in str(exc.value) and "503" in str(exc.value)
    # Exponential backoff with jitter: 0.5, 1, 2 seconds, each between half and all of it.
    assert len(sleep.calls) == 3
    for wait, base in zip(sleep.calls, (0.5, 1.0, 2.0), strict=True):
        assert base / 2 <= wait <= base
    assert TOKEN not in str(exc.value) and TOKEN not in json.dumps(logs)


def test_timeout_is_retried(slack: SlackStub) -> None:
    slack.script = [Reply(200, delay=3.0)]  # the first answer comes long after the client's timeout
    sleep = Sleeps()
    delivery = _post(slack, sleep, timeout=0.3)
    assert delivery.attempts == 2 and len(slack.posts) == 2 and len(sleep.calls) == 1


def test_timeouts_every_time_end_in_a_clear_error(slack: SlackStub) -> None:
    slack.default = Reply(200, delay=3.0)
    with pytest.raises(SlackDeliveryError) as exc:
        _post(slack, Sleeps(), timeout=0.2, attempts=2)
    assert len(slack.posts) == 2
    assert exc.value.retryable and exc.value.status is None
    assert "timed out" in str(exc.value).lower() and TOKEN not in str(exc.value)


def test_429_honours_retry_after(slack: SlackStub) -> None:
    slack.script = [Reply(429, b"rate_limited", {"Retry-After": "2"})]
    sleep = Sleeps()
    delivery = _post(slack, sleep)
    assert delivery.attempts == 2 and sleep.calls == [2.0]


def test_429_retry_after_is_capped(slack: SlackStub) -> None:
    slack.script = [Reply(429, b"rate_limited", {"Retry-After": "3600"})]
    sleep = Sleeps()
    _post(slack, sleep, max_retry_after=30.0)
    assert sleep.calls == [30.0]


def test_400_is_not_retried_and_says_why(slack: SlackStub) -> None:
    slack.default = Reply(400, b"invalid_blocks")
    sleep = Sleeps()
    with pytest.raises(SlackDeliveryError) as exc:
        _post(slack, sleep)
    assert len(slack.posts) == 1 and sleep.calls == []
    assert not exc.value.retryable and exc.value.status == 400 and exc.value.body == "invalid_blocks"
    assert str(exc.value) == "Slack rejected the message: HTTP 400 invalid_blocks (not retried)"


@pytest.mark.parametrize(("status", "body"), [(403, b"action_prohibited"), (404, b"no_service"), (302, b"")])
def test_other_non_success_statuses_are_not_retried(slack: SlackStub, status: int, body: bytes) -> None:
    slack.default = Reply(status, body, {"Location": "https://elsewhere.example/"} if status == 302 else {})
    with pytest.raises(SlackDeliveryError) as exc:
        _post(slack, Sleeps())
    assert len(slack.posts) == 1 and exc.value.status == status and not exc.value.retryable


def test_connection_refused_is_retried_then_fails() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port = server.server_address[1]
    server.server_close()  # nothing listens there any more
    sleep = Sleeps()
    with pytest.raises(SlackDeliveryError) as exc:
        post_webhook(f"http://127.0.0.1:{port}{PATH}", PAYLOAD, timeout=1.0, max_attempts=3, sleep=sleep)
    assert exc.value.attempts == 3 and len(sleep.calls) == 2 and exc.value.retryable
    assert TOKEN not in str(exc.value)


def test_time_budget_stops_retrying_early(slack: SlackStub) -> None:
    slack.default = Reply(500)
    with pytest.raises(SlackDeliveryError) as exc:
        _post(slack, Sleeps(), timeout=2.0, attempts=5, budget_seconds=2.2)
    assert len(slack.posts) == 1 and "no time is left" in str(exc.value)


def test_webhook_url_must_be_https_off_the_loopback() -> None:
    with pytest.raises(ConfigurationError):
        post_webhook("http://hooks.example.com/x", PAYLOAD, timeout=1, max_attempts=1)


# ----------------------------------------------------------------------------- the secret (moto server)


def _create_secret(endpoint: str, value: str, name: str = "auditor/slack") -> str:
    sm = client("secretsmanager", endpoint)
    return sm.create_secret(Name=name, SecretString=value)["ARN"]


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    forget_slack_secret()
    get_settings.cache_clear()
    yield
    forget_slack_secret()
    get_settings.cache_clear()


@pytest.mark.parametrize("form", ["json", "bare"])
def test_secret_formats_from_secrets_manager(aws_reset: str, form: str) -> None:
    url = "https://hooks.slack.com/services/T0/B0/abc"
    value = json.dumps({"webhook_url": url, "redaction_salt": "pepper"}) if form == "json" else url
    arn = _create_secret(aws_reset, value)
    secret = get_slack_secret(client("secretsmanager", aws_reset), arn)
    assert secret.webhook_url == url
    assert secret.redaction_salt == ("pepper" if form == "json" else "")


def test_secret_is_cached_per_container_until_it_expires_or_is_forgotten(aws_reset: str) -> None:
    sm = client("secretsmanager", aws_reset)
    arn = _create_secret(aws_reset, "https://hooks.slack.com/services/T0/B0/one")
    now = [0.0]
    first = get_slack_secret(sm, arn, clock=lambda: now[0])
    sm.put_secret_value(SecretId=arn, SecretString="https://hooks.slack.com/services/T0/B0/two")
    assert get_slack_secret(sm, arn, clock=lambda: now[0]) is first  # cached: no second read
    now[0] = 901.0
    assert get_slack_secret(sm, arn, clock=lambda: now[0]).webhook_url.endswith("/two")  # expired: read again
    sm.put_secret_value(SecretId=arn, SecretString="https://hooks.slack.com/services/T0/B0/three")
    forget_slack_secret(arn)
    assert get_slack_secret(sm, arn, clock=lambda: now[0]).webhook_url.endswith("/three")


def test_missing_secret_is_a_clear_configuration_error(aws_reset: str) -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:nope-AbCdEf"
    with pytest.raises(ConfigurationError, match=r"cannot read the Slack secret .*nope.*ResourceNotFoundException"):
        get_slack_secret(client("secretsmanager", aws_reset), arn)


# ----------------------------------------------------------------------------- notify_slack and the handler


def _sns_event() -> dict[str, Any]:
    return json.loads(EVENT_FILE.read_text())


def _another(event: dict[str, Any], n: int = 2) -> dict[str, Any]:
    """The event as another message (its SNS message id and ``event_id``): a message posted already is not again."""
    sns = event["Records"][0]["Sns"]
    sns["MessageId"] = f"{sns['MessageId'][:-2]}{n:02d}"
    sns["MessageAttributes"]["event_id"]["Value"] += f"-{n}"
    return event


def _configure(monkeypatch: pytest.MonkeyPatch, endpoint: str, url: str, **env: str) -> str:
    arn = _create_secret(endpoint, json.dumps({"webhook_url": url}))
    monkeypatch.setenv("STATE_TABLE_NAME", create_state_table(client("dynamodb", endpoint)))
    monkeypatch.setenv("SLACK_SECRET_ARN", arn)
    monkeypatch.setenv("SLACK_TIMEOUT_SECONDS", "2")
    monkeypatch.setenv("SLACK_MAX_ATTEMPTS", "2")
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    runtime.reset()  # the client binds AWS_ENDPOINT_URL when it is created
    return arn


def test_handler_posts_the_sample_event_redacted(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    from handlers.notifier import lambda_handler

    _configure(monkeypatch, aws_reset, slack.url)
    event = _sns_event()
    finding = json.loads(event["Records"][0]["Sns"]["MessageAttributes"]["finding_json"]["Value"])
    assert finding["evidence"]["key"] == {"pk": "CUSTOMER#42"}  # the sample carries a raw key

    result = lambda_handler(event, lambda_context("notifier", remaining_ms=60_000))

    assert result == {"skipped": 0, "delivered": 1, "text_only": 0, "from_message": 0, "failed": 0}
    [post] = slack.posts
    assert b"CUSTOMER#42" not in post.body  # the raw value is nowhere in what left the account
    payload = post.json()
    assert_valid_message(payload)
    assert redact_value("CUSTOMER#42") in post.body.decode()
    assert payload["blocks"][0]["text"]["text"].startswith(":large_orange_circle: Hot partition key pk=CUSTOMER#…")
    assert finding["id"] in post.body.decode()


def test_handler_without_redaction_sends_raw_keys(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    from handlers.notifier import lambda_handler

    _configure(monkeypatch, aws_reset, slack.url, REDACT_KEYS="false")
    lambda_handler(_sns_event(), lambda_context("notifier", remaining_ms=60_000))
    assert b"CUSTOMER#42" in slack.posts[0].body


def test_handler_falls_back_to_the_message_text(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    from handlers.notifier import lambda_handler

    _configure(monkeypatch, aws_reset, slack.url)
    event = _sns_event()
    del event["Records"][0]["Sns"]["MessageAttributes"]["finding_json"]
    result = lambda_handler(event, lambda_context("notifier", remaining_ms=60_000))
    assert result["delivered"] == 1 and result["from_message"] == 1
    payload = slack.posts[0].json()
    assert_valid_message(payload)
    body = slack.posts[0].body.decode()
    assert "CUSTOMER#42" not in body and redact_value("CUSTOMER#42") in body
    assert "Hot partition key" in body and "Recommendation" in body


def test_handler_raises_when_slack_keeps_failing(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    from handlers.notifier import lambda_handler

    _configure(monkeypatch, aws_reset, slack.url)
    slack.default = Reply(500, b"oops")
    with pytest.raises(SlackDeliveryError) as exc:
        lambda_handler(_sns_event(), lambda_context("notifier", remaining_ms=60_000))
    assert len(slack.posts) == 2  # SLACK_MAX_ATTEMPTS
    assert "1 of 1 Slack message not delivered" in str(exc.value) and TOKEN not in str(exc.value)


def test_handler_emits_slack_health_metrics(
    aws_reset: str, slack: SlackStub, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from handlers.notifier import lambda_handler

    _configure(monkeypatch, aws_reset, slack.url)
    capsys.readouterr()
    lambda_handler(_sns_event(), lambda_context("notifier", remaining_ms=60_000))
    slack.default = Reply(500, b"oops")
    with pytest.raises(SlackDeliveryError):  # the failure is counted before the invocation fails
        lambda_handler(_another(_sns_event()), lambda_context("notifier", remaining_ms=60_000))
    assert emitted(capsys.readouterr().out) == [
        {"SlackDelivered": 1, "SlackFailures": 0},
        {"SlackDelivered": 0, "SlackFailures": 1},
    ]


def test_rejected_blocks_degrade_to_plain_text(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    from handlers.notifier import lambda_handler

    _configure(monkeypatch, aws_reset, slack.url)
    slack.respond = lambda post: Reply(400, b"invalid_blocks") if "blocks" in post.json() else Reply()
    result = lambda_handler(_sns_event(), lambda_context("notifier", remaining_ms=60_000))
    assert result["delivered"] == 1 and result["text_only"] == 1
    assert [set(p.json()) for p in slack.posts] == [{"text", "blocks"}, {"text"}]
    assert b"CUSTOMER#42" not in slack.posts[1].body


def test_revoked_webhook_is_reread_from_the_secret_on_the_retry(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    from handlers.notifier import lambda_handler

    arn = _configure(monkeypatch, aws_reset, slack.url.replace(TOKEN, "revoked"))
    slack.respond = lambda post: Reply(404, b"no_service") if "revoked" in post.path else Reply()
    with pytest.raises(SlackDeliveryError):
        lambda_handler(_sns_event(), lambda_context("notifier", remaining_ms=60_000))
    # The team rotates the URL in the secret; Lambda's async retry in the same container picks it up.
    client("secretsmanager", aws_reset).put_secret_value(SecretId=arn, SecretString=slack.url)
    assert lambda_handler(_sns_event(), lambda_context("notifier", remaining_ms=60_000))["delivered"] == 1
    assert [p.path.endswith(TOKEN) for p in slack.posts] == [False, True]


def test_handler_rejects_a_malformed_event(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    from handlers.notifier import lambda_handler

    _configure(monkeypatch, aws_reset, slack.url)
    with pytest.raises(
        ValueError, match=r"notifier expects an SNS event: Records\.0\.EventSource: Input should be 'aws:sns'"
    ):
        lambda_handler({"Records": [{"EventSource": "aws:sqs"}]}, lambda_context("notifier", remaining_ms=60_000))
    assert slack.posts == []


def test_missing_secret_setting_is_a_clear_error(monkeypatch) -> None:
    with pytest.raises(ConfigurationError, match="SLACK_SECRET_ARN"):
        notify_slack([], secrets_client=None, settings=Settings())  # type: ignore[arg-type]


def test_every_event_is_attempted_and_failures_are_counted(aws_reset: str, slack: SlackStub) -> None:
    arn = _create_secret(aws_reset, json.dumps({"webhook_url": slack.url, "redaction_salt": "pepper"}))
    settings = Settings(slack_secret_arn=arn, slack_max_attempts=1)
    finding = json.loads(_sns_event()["Records"][0]["Sns"]["MessageAttributes"]["finding_json"]["Value"])
    events = [
        FindingNotification(f"m-{i}", "text", {"finding_json": json.dumps(finding), "status": "new"}) for i in range(3)
    ]
    slack.script = [Reply(), Reply(500), Reply()]
    with structlog.testing.capture_logs() as logs, pytest.raises(SlackDeliveryError) as exc:
        notify_slack(events, secrets_client=client("secretsmanager", aws_reset), settings=settings, sleep=Sleeps())
    assert len(slack.posts) == 3 and "1 of 3" in str(exc.value)
    failed = [e for e in logs if e["event"] == "slack_delivery_failed"]
    assert [e["message_id"] for e in failed] == ["m-1"]
    # The salt from the secret keys the hash.
    assert redact_value("CUSTOMER#42", salt="pepper") in slack.posts[0].body.decode()
    assert TOKEN not in json.dumps(logs, default=str)


def test_worsened_event_from_the_sns_publisher(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    """The publisher's real rendering (auditor.sinks.sns) of a worsened event, end to end through the handler."""
    from auditor.lifecycle import EventKind, FindingEvent
    from auditor.models.finding import Finding, Severity
    from auditor.sinks.sns import render
    from handlers.notifier import lambda_handler

    _configure(monkeypatch, aws_reset, slack.url)
    event = _sns_event()
    sns = event["Records"][0]["Sns"]
    finding = Finding.model_validate_json(sns["MessageAttributes"]["finding_json"]["Value"])
    msg = render(
        FindingEvent(
            kind=EventKind.WORSENED,
            finding=finding.model_copy(update={"severity": Severity.CRITICAL}),
            at=datetime(2026, 12, 1, 11, tzinfo=UTC),
            previous_severity=Severity.HIGH,
        ),
        "evt-2",
    )
    sns["Message"] = msg.text
    sns["MessageAttributes"] = {k: {"Type": "String", "Value": v} for k, v in msg.attributes.items()}
    lambda_handler(event, lambda_context("notifier", remaining_ms=60_000))
    payload = slack.posts[0].json()
    assert_valid_message(payload)
    assert payload["blocks"][0]["text"]["text"].startswith(":red_circle: Worsened: Hot partition key")
    assert "*Severity*\nhigh → critical" in [f["text"] for f in payload["blocks"][1]["fields"]]
    assert b"CUSTOMER#42" not in slack.posts[0].body


# ----------------------------------------------------------------------------- the delivery records (state table)


class _Stop(BaseException):  # Lambda stopping the invocation at its timeout: no ``except Exception`` sees it
    """The invocation stopped here."""


def _invoke(event: dict[str, Any] | None = None) -> dict[str, int]:
    from handlers.notifier import lambda_handler

    return lambda_handler(event or _sns_event(), lambda_context("notifier", remaining_ms=60_000))


def _throttled(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, operation)


def test_a_duplicate_sns_delivery_is_posted_once(
    aws_reset: str, slack: SlackStub, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _configure(monkeypatch, aws_reset, slack.url)
    capsys.readouterr()
    assert _invoke()["delivered"] == 1
    again = _invoke()  # SNS delivers the message again (or Lambda retries it after the record)
    assert again["delivered"] == 0 and again["already_posted"] == 1 and "repeated" not in again
    assert len(slack.posts) == 1
    assert emitted(capsys.readouterr().out) == [
        {"SlackDelivered": 1, "SlackFailures": 0},
        {"SlackDelivered": 0, "SlackFailures": 0},
    ]


def test_a_stop_between_the_post_and_its_record_posts_again_counted(
    aws_reset: str, slack: SlackStub, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _configure(monkeypatch, aws_reset, slack.url)

    def stop(*_a: Any, **_k: Any) -> None:
        raise _Stop

    with monkeypatch.context() as patch:
        patch.setattr(SlackDeliveries, "posted", stop)
        with pytest.raises(_Stop):
            _invoke()
    capsys.readouterr()
    result = _invoke()  # Lambda's retry: the record says "posting", Slack may have the message
    assert result["delivered"] == 1 and result["repeated"] == 1
    assert len(slack.posts) == 2 and slack.posts[0].body == slack.posts[1].body
    assert emitted(capsys.readouterr().out) == [{"SlackDelivered": 1, "SlackFailures": 0, "RepeatedPublishes": 1}]
    assert _invoke()["already_posted"] == 1 and len(slack.posts) == 2  # recorded now


def test_a_stop_after_the_record_posts_nothing_more(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    _configure(monkeypatch, aws_reset, slack.url)
    real = SlackDeliveries.posted

    def record_then_stop(self: SlackDeliveries, *args: Any) -> None:
        real(self, *args)
        raise _Stop

    with monkeypatch.context() as patch:
        patch.setattr(SlackDeliveries, "posted", record_then_stop)
        with pytest.raises(_Stop):
            _invoke()
    result = _invoke()
    assert result["delivered"] == 0 and result["already_posted"] == 1 and len(slack.posts) == 1


def test_a_failed_posted_mark_keeps_the_post_and_a_later_delivery_counts(
    aws_reset: str, slack: SlackStub, monkeypatch
) -> None:
    _configure(monkeypatch, aws_reset, slack.url)

    def throttled(*_a: Any, **_k: Any) -> None:
        raise _throttled("UpdateItem")

    with monkeypatch.context() as patch:
        patch.setattr(SlackDeliveries, "posted", throttled)
        first = _invoke()  # delivered: the invocation succeeds, nothing is retried
    assert first["delivered"] == 1 and first["bookkeeping_failed"] == 1 and len(slack.posts) == 1
    again = _invoke()  # a duplicate delivery of it: a possible repeat, counted, never a loss
    assert again["delivered"] == 1 and again["repeated"] == 1 and len(slack.posts) == 2


def test_a_failed_delivery_record_fails_the_message_unposted(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    _configure(monkeypatch, aws_reset, slack.url)

    def throttled(*_a: Any, **_k: Any) -> None:
        raise _throttled("PutItem")

    with monkeypatch.context() as patch:
        patch.setattr(SlackDeliveries, "begin", throttled)
        with pytest.raises(SlackDeliveryError, match="cannot record the delivery"):
            _invoke()  # Lambda retries it: delayed, never lost
    assert slack.posts == []
    result = _invoke()
    assert result["delivered"] == 1 and "repeated" not in result and len(slack.posts) == 1


def test_a_refused_post_is_a_first_post_on_the_retry(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    _configure(monkeypatch, aws_reset, slack.url)
    slack.script = [Reply(404, b"no_service")]
    with pytest.raises(SlackDeliveryError):
        _invoke()
    result = _invoke()
    assert result["delivered"] == 1 and "repeated" not in result and len(slack.posts) == 2


def test_a_post_without_an_answer_keeps_its_mark(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    """A timeout may hide an accepted post: the retry posts again, counted."""
    _configure(monkeypatch, aws_reset, slack.url, SLACK_MAX_ATTEMPTS="1", SLACK_TIMEOUT_SECONDS="0.3")
    slack.script = [Reply(200, delay=2.0)]
    with pytest.raises(SlackDeliveryError):
        _invoke()
    result = _invoke()
    assert result["delivered"] == 1 and result["repeated"] == 1 and len(slack.posts) == 2


def test_the_record_is_keyed_on_the_event_id(aws_reset: str, slack: SlackStub, monkeypatch) -> None:
    """A message the evaluator published again (the same ``event_id``, a new SNS message id) is posted once."""
    _configure(monkeypatch, aws_reset, slack.url)
    _invoke()
    event = _sns_event()
    event["Records"][0]["Sns"]["MessageId"] = "another-sns-message-id"
    assert _invoke(event)["already_posted"] == 1
    del event["Records"][0]["Sns"]["MessageAttributes"]["event_id"]  # no event_id: the SNS message id
    assert _invoke(event)["delivered"] == 1 and len(slack.posts) == 2

"""Faults in the outbox drain on the moto server: a refused digest, a failed removal, a crash right after a publish.

Every notification stays an outbox entry until the message carrying it is accepted (for new and worsened events, the
run digest that Slack receives): none of these faults loses a finding or repeats one in a digest."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError, ReadTimeoutError

from auditor.lifecycle import EventKind, FindingEvent
from auditor.messages import parse_digest
from auditor.service import health
from auditor.service.record import RecordResult
from auditor.sinks.sns import publish_pending
from auditor.state.findings_store import FindingsStore
from tests.moto_server import client, create_state_table
from tests.sinks.test_sns_publisher import scan_finding

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


class Topic:
    """The findings topic with a per-finding subscriber (the e-mail) and a digest subscriber (Slack's default)."""

    def __init__(self, endpoint: str) -> None:
        self.sns = client("sns", endpoint)
        self.sqs = client("sqs", endpoint)
        self.arn = self.sns.create_topic(Name="findings")["TopicArn"]
        self.mail = self._subscribe("mail", {"kind": [{"anything-but": ["digest"]}]})
        self.slack = self._subscribe("slack", {"kind": ["digest"]})

    def _subscribe(self, name: str, policy: dict[str, Any]) -> str:
        url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        attributes = {"RawMessageDelivery": "false", "FilterPolicy": orjson.dumps(policy).decode()}
        self.sns.subscribe(TopicArn=self.arn, Protocol="sqs", Endpoint=arn, Attributes=attributes)
        return url

    def drain(self, url: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while msgs := self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            for m in msgs:
                out.append(orjson.loads(m["Body"]))
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        return out

    def digest_ids(self) -> list[list[str]]:
        """The finding ids of every digest Slack received, one list per digest."""
        digests = [parse_digest(m["MessageAttributes"]["digest_json"]["Value"])[0] for m in self.drain(self.slack)]
        assert None not in digests
        return [[item.id for item in d.findings] for d in digests if d is not None]

    def mail_ids(self) -> list[str]:
        return [m["MessageAttributes"]["finding_id"]["Value"] for m in self.drain(self.mail)]


@pytest.fixture
def topic(aws_reset: str) -> Topic:
    return Topic(aws_reset)


@pytest.fixture
def store(aws_reset: str) -> FindingsStore:
    ddb = client("dynamodb", aws_reset)
    return FindingsStore(ddb, create_state_table(ddb), sleep=lambda _s: None)


def _queue(store: FindingsStore, n: int = 6) -> list[str]:
    ids = []
    for i in range(n):
        finding = scan_finding(f"arn:aws:iam::111122223333:role/job{i}")
        store.enqueue(FindingEvent(kind=EventKind.NEW, finding=finding, at=T0 + timedelta(seconds=i)))
        ids.append(finding.id)
    return ids


def _throttle() -> ClientError:
    return ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "Inject")


def _once(fault: Callable[[dict[str, Any]], BaseException | None]) -> Callable[..., None]:
    """An event hook raising the first exception ``fault`` returns for a call's params, then never again."""
    fired: list[bool] = []

    def hook(params: dict[str, Any], **_kw: Any) -> None:
        if not fired and (exc := fault(params)) is not None:
            fired.append(True)
            raise exc

    return hook


def test_a_throttled_digest_keeps_its_entries_and_the_next_run_sends_the_digest_with_all(
    topic: Topic, store: FindingsStore
) -> None:
    ids = _queue(store)
    is_digest = lambda p: _throttle() if p["MessageAttributes"]["kind"]["StringValue"] == "digest" else None  # noqa: E731
    topic.sns.meta.events.register("provide-client-params.sns.Publish", _once(is_digest))
    first = publish_pending(store, topic.sns, topic.arn, now=T0)
    # The six e-mails went out, the digest was refused: all six entries stay in the outbox
    assert (first.sent, first.digests, first.digest_failed) == (6, 0, 1)
    assert sorted(topic.mail_ids()) == sorted(ids)
    assert topic.digest_ids() == []
    assert sorted(e.finding_id for e in store.pending()) == sorted(ids)
    # The next run publishes the digest with all six, and no e-mail again
    second = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (second.sent, second.digests, second.repeated) == (0, 1, 0)
    assert [sorted(d) for d in topic.digest_ids()] == [sorted(ids)]
    assert topic.mail_ids() == []
    assert store.pending() == []


def test_a_throttled_delete_keeps_that_entry_only_and_the_next_run_loses_and_repeats_nothing(
    topic: Topic, store: FindingsStore, aws_reset: str
) -> None:
    ids = _queue(store)
    store._client.meta.events.register("before-call.dynamodb.DeleteItem", _once(lambda _p: _throttle()))
    first = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (first.sent, first.digests, first.bookkeeping_failed) == (6, 1, 1)
    left = store.pending()
    assert len(left) == 1 and left[0].digested  # the others were removed
    assert sorted(topic.mail_ids()) == sorted(ids)
    assert [sorted(d) for d in topic.digest_ids()] == [sorted(ids)]
    # The next run only removes it: nothing lost, nothing repeated
    second = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (second.sent, second.digests, second.repeated, second.left) == (0, 0, 0, 0)
    assert topic.mail_ids() == [] and topic.digest_ids() == []
    assert store.pending() == []


def test_a_throttled_delete_of_a_resolved_event_is_not_published_again(topic: Topic, store: FindingsStore) -> None:
    finding = scan_finding()
    store.enqueue(FindingEvent(kind=EventKind.RESOLVED, finding=finding, at=T0))
    store._client.meta.events.register("before-call.dynamodb.DeleteItem", _once(lambda _p: _throttle()))
    first = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (first.sent, first.bookkeeping_failed, first.left) == (1, 1, 1)
    second = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (second.sent, second.repeated, second.left) == (0, 0, 0)
    assert topic.mail_ids() == [finding.id]
    assert store.pending() == []


def test_a_crash_right_after_an_accepted_publish_loses_nothing(topic: Topic, store: FindingsStore) -> None:
    ids = _queue(store)
    calls: list[int] = []

    def crash_after_fourth(**_kw: Any) -> None:
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("Task timed out")

    topic.sns.meta.events.register("after-call.sns.Publish", crash_after_fourth)
    with pytest.raises(RuntimeError):
        publish_pending(store, topic.sns, topic.arn, now=T0)
    assert len(store.pending()) == 6
    # The next run sends the fourth e-mail again (counted) and the digest of all six, once
    second = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (second.sent, second.repeated, second.digests) == (3, 1, 1)
    mails = topic.mail_ids()
    assert sorted(set(mails)) == sorted(ids) and len(mails) == 7
    assert [sorted(d) for d in topic.digest_ids()] == [sorted(ids)]
    assert store.pending() == []
    # ...and the repeat is a health metric of the run that made it
    recorded = RecordResult()
    recorded.take_publish(second)
    assert {m.name: m.value for m in health.recorded(recorded)}["RepeatedPublishes"] == 1.0


def _crash_after(calls: int) -> Callable[..., None]:
    """An ``after-call`` hook: the Lambda times out right after the ``calls``-th call returned."""
    seen: list[int] = []

    def hook(**_kw: Any) -> None:
        seen.append(1)
        if len(seen) == calls:
            raise RuntimeError("Task timed out")

    return hook


def test_a_crash_after_the_digest_was_recorded_as_accepted_does_not_repeat_it(
    topic: Topic, store: FindingsStore
) -> None:
    ids = _queue(store)
    # Six e-mails, the digest, the record of its acceptance; the run stops during the first removal.
    store._client.meta.events.register("after-call.dynamodb.DeleteItem", _crash_after(1))
    with pytest.raises(RuntimeError):
        publish_pending(store, topic.sns, topic.arn, now=T0)
    assert [sorted(d) for d in topic.digest_ids()] == [sorted(ids)]
    assert sorted(topic.mail_ids()) == sorted(ids)
    assert len(store.pending()) == 5
    second = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (second.sent, second.digests, second.repeated, second.repeated_digests) == (0, 0, 0, 0)
    assert topic.digest_ids() == [] and topic.mail_ids() == []
    assert store.pending() == []


def test_a_crash_at_the_instant_sns_accepted_the_digest_sends_it_again_once_and_counts_it(
    topic: Topic, store: FindingsStore
) -> None:
    """Before its acceptance is recorded, nothing can tell an accepted digest from a lost one: it is sent again (the
    one repeat in Slack, counted in RepeatedPublishes), never dropped."""
    ids = _queue(store)
    topic.sns.meta.events.register("after-call.sns.Publish", _crash_after(7))  # six e-mails, then the digest
    with pytest.raises(RuntimeError):
        publish_pending(store, topic.sns, topic.arn, now=T0)
    assert [sorted(d) for d in topic.digest_ids()] == [sorted(ids)]
    assert sorted(topic.mail_ids()) == sorted(ids)
    second = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (second.sent, second.digests, second.repeated, second.repeated_digests) == (0, 1, 1, 1)
    assert [sorted(d) for d in topic.digest_ids()] == [sorted(ids)]
    assert topic.mail_ids() == []
    assert store.pending() == []
    third = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (third.digests, third.repeated) == (0, 0)


def test_a_digest_whose_answer_was_lost_is_sent_again_and_counted(topic: Topic, store: FindingsStore) -> None:
    """A read timeout may follow an accepted publish: the digest's marks stay, so the next digest is counted."""
    ids = _queue(store)
    is_digest = lambda p: (  # noqa: E731
        ReadTimeoutError(endpoint_url="sns") if p["MessageAttributes"]["kind"]["StringValue"] == "digest" else None
    )
    topic.sns.meta.events.register("provide-client-params.sns.Publish", _once(is_digest))
    first = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (first.sent, first.digests, first.digest_failed, first.repeated) == (6, 0, 1, 0)
    assert all(e.digest_id for e in store.pending())
    second = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (second.sent, second.digests, second.repeated, second.repeated_digests) == (0, 1, 1, 1)
    assert [sorted(d) for d in topic.digest_ids()] == [sorted(ids)]
    assert store.pending() == []


def test_a_publish_the_client_sent_twice_is_counted(topic: Topic, store: FindingsStore) -> None:
    """botocore sends a publish again after a 500 or a lost answer: the first attempt may have been accepted too."""
    _queue(store, 1)
    sent: list[int] = []

    def server_error_once(request: Any, **_kw: Any) -> AWSResponse | None:
        if sent:
            return None
        sent.append(1)
        return AWSResponse(request.url, 500, {}, _Raw())

    topic.sns.meta.events.register("before-send.sns.Publish", server_error_once)
    result = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (result.sent, result.digests, result.repeated, result.repeated_digests) == (1, 1, 1, 0)


class _Raw:
    def stream(self, **_kw: Any) -> Any:
        yield b""


def test_a_finding_event_whose_answer_was_lost_is_published_again_and_counted(
    topic: Topic, store: FindingsStore
) -> None:
    finding = scan_finding()
    store.enqueue(FindingEvent(kind=EventKind.RESOLVED, finding=finding, at=T0))
    topic.sns.meta.events.register(
        "provide-client-params.sns.Publish", _once(lambda _p: ReadTimeoutError(endpoint_url="sns"))
    )
    first = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (first.sent, first.failed, first.left) == (0, 1, 1)
    [entry] = store.pending()
    assert entry.publishing and entry.attempts == 1  # the mark stays: SNS may have accepted it
    second = publish_pending(store, topic.sns, topic.arn, now=T0)
    assert (second.sent, second.repeated, second.left) == (1, 1, 0)
    assert topic.mail_ids() == [finding.id]

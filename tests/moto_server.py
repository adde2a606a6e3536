"""The moto server (real HTTP) of the tests that call AWS: one server for the session, reset per test, and what the
tests build on it (clients, the state table, a topic inbox, a Slack webhook stand-in, the stack's resources).

A pytest plugin (``tests/conftest.py`` loads it), so that the fixtures ``moto_endpoint`` and ``aws_reset`` serve
every test folder; the helpers are imported from here."""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from auditor.demo import stack as demo_stack
from auditor.demo.stack import (
    ACCOUNT,
    REGION,
    SlackCatcher,
    Stack,
    backdate_table,
    create_state_table,
)

__all__ = [
    "ACCOUNT",
    "PER_FINDING_SUBSCRIPTION",
    "REGION",
    "SlackCatcher",
    "Stack",
    "TopicInbox",
    "aws_reset",
    "backdate_table",
    "client",
    "create_stack",
    "create_state_table",
    "moto_endpoint",
]

#: The stack, the state table, the clients and the Slack stand-in are the demo's (``auditor/demo/stack.py``): one
#: definition of the resources template.yaml creates, which the tests and the demo share.
client = demo_stack.aws_client


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto server on a free loopback port for the whole session."""
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def aws_reset(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Empty moto state and dummy credentials pointing boto3 at the server; yields the endpoint URL."""
    req = urllib.request.Request(f"{moto_endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(req, timeout=10):
        pass
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    yield moto_endpoint


#: A subscriber of the per-finding messages (like the e-mail subscription): the run digests are filtered out by SNS
#: (they have their own tests in tests/sinks/test_slack_digest.py and tests/template/test_filter_policies.py).
PER_FINDING_SUBSCRIPTION = {
    "RawMessageDelivery": "false",
    "FilterPolicy": '{"kind": [{"anything-but": ["digest"]}]}',
}


class TopicInbox:
    """A topic with one SQS subscription (SNS envelope, not raw), to read back what was published."""

    def __init__(self, endpoint: str, name: str = "findings") -> None:
        self.sns = client("sns", endpoint)
        self.sqs = client("sqs", endpoint)
        self.topic_arn: str = self.sns.create_topic(Name=name)["TopicArn"]
        self.queue_url: str = self.sqs.create_queue(QueueName=f"{name}-inbox")["QueueUrl"]
        queue_arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        self.sns.subscribe(
            TopicArn=self.topic_arn, Protocol="sqs", Endpoint=queue_arn, Attributes=PER_FINDING_SUBSCRIPTION
        )

    def envelopes(self) -> list[dict[str, Any]]:
        """The SNS envelopes delivered since the last call (removed from the queue)."""
        out: list[dict[str, Any]] = []
        while True:
            msgs = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not msgs:
                return out
            for m in msgs:
                out.append(json.loads(m["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])

    def messages(self) -> list[dict[str, Any]]:
        """Like :meth:`envelopes`, flattened: the message attributes' values plus ``subject`` and ``message``."""
        return [
            {k: v["Value"] for k, v in (e.get("MessageAttributes") or {}).items()}
            | {"subject": e.get("Subject"), "message": e["Message"]}
            for e in self.envelopes()
        ]


def create_stack(endpoint: str, webhook_url: str, *, prefix: str) -> Stack:
    """The resources template.yaml creates, on the moto server (the demo's builder, one definition kept in step with
    the template), with the notifier's queue subscribed to every message of the findings topic."""
    return demo_stack.create_stack(endpoint, webhook_url, prefix=prefix, filter_policy={})

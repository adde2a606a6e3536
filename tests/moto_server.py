"""The moto server (real HTTP) of the tests that call AWS: one server for the session, reset per test, and what the
tests build on it (clients, the state table, a topic inbox, a Slack webhook stand-in, the stack's resources).

A pytest plugin (``tests/conftest.py`` loads it), so that the fixtures ``moto_endpoint`` and ``aws_reset`` serve
every test folder; the helpers are imported from here."""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

from auditor.state import keys

REGION = "us-east-1"
#: moto's account id.
ACCOUNT = "123456789012"


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


def client(service: str, endpoint: str, config: Config | None = None) -> Any:
    """A boto3 client for ``service`` on the moto server (dummy credentials)."""
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=config,
    )


def create_state_table(ddb: Any, name: str = "auditor-state") -> str:
    """The state table as template.yaml defines it: the key design of :mod:`auditor.state.keys`, TTL on."""
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": a, "AttributeType": "S"}
            for a in (keys.PK, keys.SK, keys.GSI1_PK, keys.GSI1_SK, keys.GSI2_PK, keys.GSI2_SK)
        ],
        KeySchema=[{"AttributeName": keys.PK, "KeyType": "HASH"}, {"AttributeName": keys.SK, "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": index,
                "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"},
            }
            for index, pk, sk in ((keys.GSI1, keys.GSI1_PK, keys.GSI1_SK), (keys.GSI2, keys.GSI2_PK, keys.GSI2_SK))
        ],
    )
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": keys.TTL_ATTR})
    return name


def backdate_table(name: str, created: datetime) -> None:
    """Make a table on the moto server report an older ``CreationDateTime`` (moto has no API for it: this reaches
    into its in-memory state, so it works only with the in-process server of :func:`moto_endpoint`)."""
    from moto.dynamodb.models import dynamodb_backends

    dynamodb_backends[ACCOUNT][REGION].tables[name].created_at = created.astimezone(UTC).replace(tzinfo=None)


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


@dataclass
class SlackCatcher:
    """A local HTTP server standing in for a Slack incoming webhook: it records every JSON post."""

    posts: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/services/T000/B000/XXXX"

    def start(self) -> SlackCatcher:
        catcher = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    catcher.posts.append(json.loads(body))
                except ValueError:
                    catcher.posts.append({"raw": body.decode("utf-8", "replace")})
                self.send_response(catcher.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, name="slack-catcher", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@dataclass
class Stack:
    """The names and addresses of the stack's resources on the moto server."""

    endpoint: str
    bucket: str
    trail_queue_url: str
    alerts_queue_url: str
    topic_arn: str
    secret_arn: str
    table_name: str
    reports_bucket: str

    def environment(self) -> dict[str, str]:
        """The environment template.yaml gives the functions, pointed at the moto server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "STATE_TABLE_NAME": self.table_name,
            "FINDINGS_TOPIC_ARN": self.topic_arn,
            "SLACK_SECRET_ARN": self.secret_arn,
            "REPORTS_BUCKET": self.reports_bucket,
            "FINGERPRINTS_BUCKET": self.reports_bucket,
            "LOG_LEVEL": "WARNING",
            # Tests plant an hour of CloudWatch metrics: the metrics audit reads that hour (default: a day).
            "AUDIT_LOOKBACK_SECONDS": "3600",
        }


def create_stack(endpoint: str, webhook_url: str, *, prefix: str) -> Stack:
    """The resources template.yaml creates, on the moto server: the CloudTrail bucket notifying the trail queue
    (with its dead-letter queue), the findings topic with an SQS subscription to every message (standing in for the
    notifier's), the Slack webhook secret, the state table and the reports bucket."""
    s3, sqs, sns = client("s3", endpoint), client("sqs", endpoint), client("sns", endpoint)

    def queue(name: str, attributes: dict[str, str] | None = None) -> tuple[str, str]:
        url: str = sqs.create_queue(QueueName=name, Attributes=attributes or {})["QueueUrl"]
        return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    bucket = f"{prefix}-cloudtrail-{ACCOUNT}"
    s3.create_bucket(Bucket=bucket)
    _, dlq_arn = queue(f"{prefix}-trail-dlq")
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"})
    trail_url, trail_arn = queue(f"{prefix}-trail", {"VisibilityTimeout": "60", "RedrivePolicy": redrive})
    s3.put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "QueueArn": trail_arn,
                    "Events": ["s3:ObjectCreated:*"],
                    "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "AWSLogs/"}]}},
                }
            ]
        },
    )
    topic_arn: str = sns.create_topic(Name=f"{prefix}-findings")["TopicArn"]
    alerts_url, alerts_arn = queue(f"{prefix}-notifier")
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=alerts_arn)
    secret = json.dumps({"webhook_url": webhook_url})
    secrets = client("secretsmanager", endpoint)
    secret_arn: str = secrets.create_secret(Name=f"{prefix}/slack-webhook", SecretString=secret)["ARN"]
    table = create_state_table(client("dynamodb", endpoint), f"{prefix}-state")
    reports = f"{prefix}-reports-{ACCOUNT}"
    s3.create_bucket(Bucket=reports)
    return Stack(endpoint, bucket, trail_url, alerts_url, topic_arn, secret_arn, table, reports)

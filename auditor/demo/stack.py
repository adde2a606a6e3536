"""The stack's resources on a local AWS endpoint (moto server), for ``make demo`` and the benchmarks.

This mirrors ``template.yaml``: the CloudTrail bucket with its S3 -> SQS notification, the trail queue, the
findings topic with an SQS subscription standing in for the Slack notifier's subscription, the Slack webhook
secret, and the state table with the key design of :mod:`auditor.state.keys`.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
from botocore.config import Config

from auditor.state import keys

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's account id


#: template.yaml's Slack subscription filter policy with its defaults (SlackMessages=digest, SlackMinSeverity=medium).
SLACK_FILTER_POLICY = {
    "$or": [
        {"kind": ["weekly_report"]},
        {"kind": ["digest"], "severity": ["critical", "high", "medium"]},
    ]
}


def aws_client(service: str, endpoint: str, config: Config | None = None) -> Any:
    """A boto3 client for ``service`` on the local endpoint (dummy credentials)."""
    return boto3.client(  # type: ignore[call-overload]  # service is chosen at run time
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=config,
    )


def backdate_table(name: str, created: datetime, *, account: str = ACCOUNT, region: str = REGION) -> None:
    """Make a table on the in-process local endpoint (moto) report an older ``CreationDateTime``.

    The local endpoint stamps a new table with the current time and has no API to change it; the demo (and tests)
    use this to stand for a table created weeks ago, so that "no traffic for 30 days" can be shown. It reaches into
    moto's in-memory state, so it works only when moto runs in this process (``ThreadedMotoServer``).
    """
    from moto.dynamodb.models import dynamodb_backends

    dynamodb_backends[account][region].tables[name].created_at = created.astimezone(UTC).replace(tzinfo=None)


def create_state_table(ddb: Any, name: str = "auditor-state") -> str:
    """Create the state table exactly as template.yaml defines it (see :mod:`auditor.state.keys`)."""
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
                "IndexName": idx,
                "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"},
            }
            for idx, pk, sk in (
                (keys.GSI1, keys.GSI1_PK, keys.GSI1_SK),
                (keys.GSI2, keys.GSI2_PK, keys.GSI2_SK),
            )
        ],
    )
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": keys.TTL_ATTR})
    return name


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
    """The names and addresses of the stack's resources on the local endpoint."""

    endpoint: str
    bucket: str
    trail_queue_url: str
    alerts_queue_url: str
    topic_arn: str
    secret_arn: str
    table_name: str
    #: Weekly reports, and the trail objects' event fingerprints (``fingerprints/``), as in template.yaml.
    reports_bucket: str

    def environment(self) -> dict[str, str]:
        """The environment template.yaml gives the functions, pointed at the local endpoint."""
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
            # The demo plants an hour of CloudWatch metrics: the metrics audit reads that hour (default: a day).
            "AUDIT_LOOKBACK_SECONDS": "3600",
        }


def create_stack(
    endpoint: str, webhook_url: str, *, prefix: str = "ddb-auditor-demo", filter_policy: dict[str, Any] | None = None
) -> Stack:
    """Create the stack's resources on ``endpoint`` and wire the S3 -> SQS and SNS -> SQS deliveries.

    The notifier's queue is subscribed with ``filter_policy`` (default: :data:`SLACK_FILTER_POLICY`, the
    template's default Slack subscription); ``{}`` subscribes it to every message of the topic.
    """
    policy = SLACK_FILTER_POLICY if filter_policy is None else filter_policy
    # The local endpoint's request log (and its tracebacks for the calls moto does not implement, such as
    # ListContributorInsights, which the audit records as gaps) is not the demo's output.
    logging.getLogger("werkzeug").disabled = True
    s3 = aws_client("s3", endpoint)
    sqs = aws_client("sqs", endpoint)
    sns = aws_client("sns", endpoint)
    secrets = aws_client("secretsmanager", endpoint)
    ddb = aws_client("dynamodb", endpoint)

    bucket = f"{prefix}-cloudtrail-{ACCOUNT}"
    s3.create_bucket(Bucket=bucket)
    dlq_url = sqs.create_queue(QueueName=f"{prefix}-trail-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    trail_url = sqs.create_queue(
        QueueName=f"{prefix}-trail",
        Attributes={
            "VisibilityTimeout": "60",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"}),
        },
    )["QueueUrl"]
    trail_arn = sqs.get_queue_attributes(QueueUrl=trail_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
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
    topic_arn = sns.create_topic(Name=f"{prefix}-findings")["TopicArn"]
    alerts_url = sqs.create_queue(QueueName=f"{prefix}-notifier")["QueueUrl"]
    alerts_arn = sqs.get_queue_attributes(QueueUrl=alerts_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    # The notifier's subscription filter, as template.yaml deploys it with its defaults (a test compares them).
    sns.subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=alerts_arn,
        Attributes={"FilterPolicy": json.dumps(policy), "FilterPolicyScope": "MessageAttributes"} if policy else {},
    )
    secret_arn = secrets.create_secret(
        Name=f"{prefix}/slack-webhook", SecretString=json.dumps({"webhook_url": webhook_url})
    )["ARN"]
    table = create_state_table(ddb, f"{prefix}-state")
    reports = f"{prefix}-reports-{ACCOUNT}"
    s3.create_bucket(Bucket=reports)
    return Stack(endpoint, bucket, trail_url, alerts_url, topic_arn, secret_arn, table, reports)

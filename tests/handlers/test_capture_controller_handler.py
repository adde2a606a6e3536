"""The capture controller's Lambda end to end on moto server: a table whose scans reach the per-table cap -> one
``capture_cap`` finding stored in the state table and published to the findings topic once; the next day's run
sees the same finding and announces nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog

from auditor.config import get_settings
from auditor.state.findings_store import FindingsStore
from handlers import capture_controller, runtime
from tests.cw_support import aws, create_table, dims, put_data
from tests.factories import scheduled_event
from tests.lambda_context import lambda_context
from tests.moto_server import TopicInbox, create_state_table

STATE = "auditor-state"
TRAIL = "audit-stack-dynamodb-data-events"
RULE = "arn:aws:events:us-east-1:123456789012:rule/capture-controller"
CONTEXT = lambda_context("capture-controller")


@pytest.fixture
def env(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    s3, ct, ddb, cw = (aws(s, aws_reset) for s in ("s3", "cloudtrail", "dynamodb", "cloudwatch"))
    s3.create_bucket(Bucket="trail-bucket")
    ct.create_trail(Name=TRAIL, S3BucketName="trail-bucket")
    create_state_table(ddb, STATE)
    inbox = TopicInbox(aws_reset)
    for name, value in {
        "STATE_TABLE_NAME": STATE,
        "FINDINGS_TOPIC_ARN": inbox.topic_arn,
        "CAPTURE_TRAIL_NAME": TRAIL,
        "AUDIT_BUDGET_PERCENT": "100",
    }.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    runtime.reset()
    yield {"ddb": ddb, "cw": cw, "inbox": inbox}
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def test_a_capped_table_is_stored_and_alerted_once(env: dict[str, Any]) -> None:
    create_table(env["ddb"], "Scanned")
    t = int(time.time())
    hour = datetime.fromtimestamp(t - t % 3600 + 5, UTC)
    tomorrow = hour + timedelta(days=1)
    for day in (hour, tomorrow):  # 50 million one-page scans a day: far above a quarter of the table's budget
        stats = {"SampleCount": 5e7, "Sum": 2.5e8, "Minimum": 5.0, "Maximum": 5.0}
        at = day - timedelta(hours=1)
        put_data(
            env["cw"],
            [{"MetricName": "SuccessfulRequestLatency", "Dimensions": dims("Scanned", None, "Scan"), "Timestamp": at,
              "StatisticValues": stats}],
        )  # fmt: skip

    first = capture_controller.lambda_handler(scheduled_event(hour, RULE), CONTEXT)
    assert first["status"] == "applied" and len(first["findings"]) == 1 and first["published"] >= 1, first
    [finding_id] = first["findings"]
    stored = FindingsStore(env["ddb"], STATE).get(finding_id)
    assert stored is not None and stored.finding.kind.value == "capture_cap" and stored.finding.table == "Scanned"
    kinds = [m.get("kind") for m in env["inbox"].messages()]
    assert kinds.count("capture_cap") == 1, kinds

    second = capture_controller.lambda_handler(scheduled_event(tomorrow, RULE), CONTEXT)
    assert second["findings"] == [finding_id] and second["published"] == 0, second
    assert env["inbox"].messages() == []

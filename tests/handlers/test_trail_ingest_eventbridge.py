"""Trail ingest end to end with the template's default path: S3 "Object Created" events that EventBridge delivers
to the trail queue (events/trail_ingest_sqs_eventbridge_object_created.json) -> handler -> state table (moto)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from tests.handlers.test_trail_ingest import BUCKET, env, invoke, local_aggregate, starts, store, trail_files  # noqa: F401

EVENTS = Path(__file__).resolve().parents[2] / "events"
SAMPLE = EVENTS / "trail_ingest_sqs_eventbridge_object_created.json"


def _eventbridge_message(bucket: str, key: str, message_id: str) -> dict[str, Any]:
    """The sample's SQS record, naming ``bucket``/``key``."""
    record = copy.deepcopy(json.loads(SAMPLE.read_text())["Records"][0])
    event = json.loads(record["body"])
    event["detail"]["bucket"]["name"] = bucket
    event["resources"] = [f"arn:aws:s3:::{bucket}"]
    event["detail"]["object"]["key"] = key
    record["body"] = json.dumps(event)
    record["messageId"] = message_id
    return record


def test_object_created_events_are_ingested_like_notifications(
    env: tuple[Any, Any],  # noqa: F811
    trail_files: list[tuple[str, bytes]],  # noqa: F811
) -> None:
    s3, ddb = env
    key, body = trail_files[0]
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    record = _eventbridge_message(BUCKET, key, "eb-1")
    missing = _eventbridge_message(BUCKET, key.replace(".json.gz", "-gone.json.gz"), "eb-2")
    assert invoke({"Records": [record, missing]}) == ["eb-2"]  # a missing object fails its message, as always
    assert store(ddb).is_processed(BUCKET, key)
    local, stats = local_aggregate(body)
    assert sum(w.calls for w in store(ddb).load_windows(starts(local))) == stats.data_events


def test_the_sample_event_runs_against_its_own_bucket(
    env: tuple[Any, Any],  # noqa: F811
    trail_files: list[tuple[str, bytes]],  # noqa: F811
) -> None:
    """events/trail_ingest_sqs_eventbridge_object_created.json as `sam local invoke -e` would send it."""
    s3, ddb = env
    event = json.loads(SAMPLE.read_text())
    detail = json.loads(event["Records"][0]["body"])["detail"]
    bucket, key = detail["bucket"]["name"], detail["object"]["key"]
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key=key, Body=trail_files[3][1])
    assert invoke(event) == []
    assert store(ddb).is_processed(bucket, key)

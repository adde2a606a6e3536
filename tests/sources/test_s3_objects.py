"""S3 "Object Created" events as EventBridge delivers them to the trail queue (the template's default path), read
like S3 event notifications; the events/ sample's shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_lambda_powertools.utilities.parser.models import SqsModel

from auditor.sources.s3_objects import NotificationError, S3ObjectRef, parse_s3_notification

EVENTS = Path(__file__).resolve().parents[2] / "events"
SAMPLE = EVENTS / "trail_ingest_sqs_eventbridge_object_created.json"
KEY = "AWSLogs/111122223333/CloudTrail/us-east-1/2026/12/01/111122223333_CloudTrail_us-east-1_20261201T1005Z_x.json.gz"


def _event(key: str = KEY, **detail: object) -> dict[str, object]:
    """The "Object created" example of the S3 user guide (EventBridge event message structure)."""
    return {
        "version": "0",
        "id": "17793124-05d4-b198-2fde-7ededc63b103",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "111122223333",
        "time": "2026-12-01T10:07:31Z",
        "region": "us-east-1",
        "resources": ["arn:aws:s3:::trail"],
        "detail": {
            "version": "0",
            "bucket": {"name": "trail"},
            "object": {
                "key": key,
                "size": 5,
                "etag": "b1946ac92492d2347c6235b4d2611184",
                "sequencer": "00617F08299329D189",
            },
            "request-id": "N4N7GDK58NMKJ12R",
            "requester": "123456789012",
            "source-ip-address": "1.2.3.4",
            "reason": "PutObject",
            **detail,
        },
    }


def test_object_created_event_names_the_object() -> None:
    refs = parse_s3_notification(json.dumps(_event()))
    assert refs == [
        S3ObjectRef("trail", KEY, "ObjectCreated:PutObject", size=5, etag="b1946ac92492d2347c6235b4d2611184")
    ]


def test_eventbridge_keys_are_taken_as_they_are() -> None:
    """Unlike S3 notifications, EventBridge events carry the key unencoded: "+" and "%" are part of it."""
    assert parse_s3_notification(json.dumps(_event("a/b+c%3D.json.gz")))[0].key == "a/b+c%3D.json.gz"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": "aws.ec2"}, "not an S3 Object Created event: source"),
        ({"detail-type": "Object Deleted"}, "not an S3 Object Created event: detail-type"),
        ({"detail": {"bucket": {"name": "trail"}}}, "not an S3 Object Created event: detail.object"),
    ],
)
def test_other_events_are_rejected(change: dict[str, object], message: str) -> None:
    with pytest.raises(NotificationError, match=message):
        parse_s3_notification(json.dumps({**_event(), **change}))


def test_the_sample_is_an_sqs_event_of_an_object_created_event() -> None:
    """events/trail_ingest_sqs_eventbridge_object_created.json: what the trail ingest gets from the rule's queue."""
    event = json.loads(SAMPLE.read_text())
    SqsModel.model_validate(event)
    (record,) = event["Records"]
    (ref,) = parse_s3_notification(record["body"])
    assert ref.bucket == "aws-cloudtrail-logs-111122223333-5f2c9a1e"
    assert ref.key.endswith("_CloudTrail_us-east-1_20261201T1005Z_Zb3kQ9xTgA1mPv7L.json.gz")
    assert ref.event_name == "ObjectCreated:PutObject"

"""S3 event notification parsing and log-key selection (no AWS), and the events/ samples' shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel, SqsModel

from auditor.service.ingest import NotificationError, S3ObjectRef, is_trail_log_key, parse_s3_notification

EVENTS = Path(__file__).resolve().parents[2] / "events"
KEY = "AWSLogs/111122223333/CloudTrail/us-east-1/2026/12/01/111122223333_CloudTrail_us-east-1_20261201T1005Z_x.json.gz"


def _note(key: str, event: str = "ObjectCreated:Put", **obj: object) -> str:
    record = {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "eventName": event,
        "s3": {"bucket": {"name": "trail"}, "object": {"key": key, **obj}},
    }
    return json.dumps({"Records": [record]})


def test_object_created_notification() -> None:
    refs = parse_s3_notification(_note(KEY, size=12, eTag="abc"))
    assert refs == [S3ObjectRef("trail", KEY, "ObjectCreated:Put", size=12, etag="abc")]


@pytest.mark.parametrize(
    ("encoded", "key"),
    [
        ("a/my+file%2Bx%3D1.json.gz", "a/my file+x=1.json.gz"),  # S3: space as +, + and = percent-encoded
        ("a%2Fb%2Fc.json.gz", "a/b/c.json.gz"),  # moto also encodes "/"
        ("a/%C3%A9t%C3%A9.json", "a/été.json"),
    ],
)
def test_keys_are_url_decoded(encoded: str, key: str) -> None:
    assert parse_s3_notification(_note(encoded))[0].key == key


def test_test_event_has_no_objects() -> None:
    body = '{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-12-01T09:58:02Z","Bucket":"trail"}'
    assert parse_s3_notification(body) == []


def test_sns_envelope_is_unwrapped() -> None:
    body = json.dumps({"Type": "Notification", "MessageId": "m", "TopicArn": "arn:t", "Message": _note(KEY)})
    assert parse_s3_notification(body.encode())[0].key == KEY


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "message body is not JSON"),
        ("[]", "not an S3 event notification: (root): Input should be a valid dictionary"),
        ('{"Records": "x"}', "not an S3 event notification: Records: Input should be a valid list"),
        (_note("").replace('"key": ""', '"size": 1'), "not an S3 event notification: Records.0.s3.object.key"),
        (_note(KEY).replace("aws:s3", "aws:sqs"), "not an S3 event notification: Records.0.eventSource"),
    ],
)
def test_malformed_bodies_are_clear_errors(body: str, message: str) -> None:
    with pytest.raises(NotificationError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_s3_notification(body)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (KEY, True),
        ("logs/custom.json", True),
        ("AWSLogs/1/CloudTrail-Digest/us-east-1/2026/12/01/1_CloudTrail-Digest_us-east-1_t_us-east-1_x.json.gz", False),
        ("AWSLogs/1/CloudTrail-Insight/us-east-1/2026/12/01/1_CloudTrail-Insight_us-east-1_x.json.gz", False),
        ("flat/1_CloudTrail-Digest_us-east-1_t_us-east-1_20261201T104946Z.json.gz", False),
        ("AWSLogs/1/CloudTrail/us-east-1/2026/12/01/", False),
        ("AWSLogs/1/CloudTrail/us-east-1/2026/12/01/notes.txt", False),
    ],
)
def test_trail_log_keys(key: str, expected: bool) -> None:
    assert is_trail_log_key(key) is expected


@pytest.mark.parametrize(
    "name", ["trail_ingest_sqs_s3.json", "trail_ingest_sqs_test_event.json", "events_ingest_sqs_eventbridge.json"]
)
def test_sample_events_are_valid_sqs_events(name: str) -> None:
    event = SqsModel.model_validate_json((EVENTS / name).read_text())
    for record in event.Records:
        body = str(record.body)
        if name.startswith("events_"):
            ev = EventBridgeModel.model_validate_json(body)
            assert (ev.source, ev.detail_type) == ("aws.dynamodb", "AWS API Call via CloudTrail")
        else:
            refs = parse_s3_notification(body)
            assert all(is_trail_log_key(r.key) for r in refs)
            assert bool(refs) is (name == "trail_ingest_sqs_s3.json")

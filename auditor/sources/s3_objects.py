"""CloudTrail log objects in S3: the S3 event notifications that name them, and reading them.

- :func:`parse_s3_notification`: the body of an SQS message is an S3 event notification (``{"Records": [{"eventSource":
  "aws:s3", "eventName": "ObjectCreated:Put", "s3": {...}}]}``), possibly wrapped in an SNS envelope (S3 -> SNS ->
  SQS without raw delivery), or an EventBridge ``Object Created`` event (S3 -> EventBridge -> SQS). ``s3:TestEvent``
  messages name no object. Notification keys are URL-decoded (``unquote_plus``: S3 encodes a space as ``+``);
  EventBridge keys are not encoded. Anything else raises :class:`NotificationError`.
- :func:`is_trail_log_key`: digest and Insights files and objects that are not ``.json``/``.json.gz`` are not logs.
- :func:`trail_object`: the object as an :class:`~auditor.kernel.reader.InputSource` streamed from S3 (never
  read whole into memory); a missing object, or a stream that breaks off, raises :class:`ObjectUnreadableError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import unquote_plus

import orjson
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from auditor.exceptions import AuditorError, InputError
from auditor.kernel.reader import InputSource

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "NotificationError",
    "ObjectReadInterruptedError",
    "ObjectUnreadableError",
    "S3ObjectRef",
    "TrailObject",
    "is_trail_log_key",
    "parse_s3_notification",
    "trail_object",
]

_Model = TypeVar("_Model", bound=BaseModel)
_SKIPPED_FOLDERS = frozenset({"CloudTrail-Digest", "CloudTrail-Insight"})
_LOG_SUFFIXES = (".json.gz", ".json")
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound", "NoSuchBucket"})


class NotificationError(InputError):
    """An SQS message body is not an S3 event notification (the message fails and goes to the DLQ)."""


class ObjectUnreadableError(AuditorError):
    """A CloudTrail object cannot be read (missing, corrupt); nothing was stored and the message is retried."""


class ObjectReadInterruptedError(ObjectUnreadableError):
    """The object's stream broke off while it was read (timeout, connection reset, short read): a passing fault, so
    whoever reads it fails and is retried rather than treating the object as unreadable for good."""


# ---------------------------------------------------------------------------------------------------------------------
# S3 event notifications
# ---------------------------------------------------------------------------------------------------------------------


class _S3Bucket(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1)


class _S3Object(BaseModel):
    model_config = ConfigDict(extra="ignore")
    key: str = Field(min_length=1)
    size: int | None = None
    etag: str | None = Field(default=None, alias="eTag")


class _S3Entity(BaseModel):
    model_config = ConfigDict(extra="ignore")
    bucket: _S3Bucket
    obj: _S3Object = Field(alias="object")


class _S3Record(BaseModel):
    model_config = ConfigDict(extra="ignore")
    event_source: Literal["aws:s3"] = Field(alias="eventSource")
    event_name: str = Field(alias="eventName")
    s3: _S3Entity


class _S3Notification(BaseModel):
    model_config = ConfigDict(extra="ignore")
    records: list[_S3Record] = Field(alias="Records")


class _EventBridgeObject(BaseModel):
    model_config = ConfigDict(extra="ignore")
    key: str = Field(min_length=1)
    size: int | None = None
    etag: str | None = None


class _EventBridgeDetail(BaseModel):
    model_config = ConfigDict(extra="ignore")
    bucket: _S3Bucket
    obj: _EventBridgeObject = Field(alias="object")
    reason: str | None = None


class _EventBridgeObjectCreated(BaseModel):
    """S3's ``Object Created`` event as EventBridge delivers it (the event itself is the SQS message body). Shape:
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html ("Object created"); the key is not
    URL-encoded there, unlike in S3 event notifications."""

    model_config = ConfigDict(extra="ignore")
    source: Literal["aws.s3"]
    detail_type: Literal["Object Created"] = Field(alias="detail-type")
    detail: _EventBridgeDetail


@dataclass(frozen=True, slots=True)
class S3ObjectRef:
    """One object named by an S3 event notification (``key`` already URL-decoded)."""

    bucket: str
    key: str
    event_name: str
    size: int | None = None
    etag: str | None = None


def parse_s3_notification(body: str | bytes) -> list[S3ObjectRef]:
    """The objects of one S3 event notification (an SQS message body); ``[]`` for an ``s3:TestEvent``.

    Accepts the S3 -> SQS format and the same wrapped in an SNS notification envelope. Raises
    :class:`NotificationError` for anything else (not JSON, or not shaped like a notification).
    """
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise NotificationError(f"message body is not JSON: {exc}") from exc
    if isinstance(doc, dict) and doc.get("Type") == "Notification" and isinstance(doc.get("Message"), str):
        return parse_s3_notification(doc["Message"])  # S3 -> SNS -> SQS
    if isinstance(doc, dict) and doc.get("Event") == "s3:TestEvent":
        return []
    if isinstance(doc, dict) and "detail-type" in doc:
        return [_eventbridge_object(doc)]  # S3 -> EventBridge -> SQS
    note = _validated(_S3Notification, doc, "an S3 event notification")
    return [
        S3ObjectRef(
            bucket=r.s3.bucket.name,
            key=unquote_plus(r.s3.obj.key),
            event_name=r.event_name,
            size=r.s3.obj.size,
            etag=r.s3.obj.etag,
        )
        for r in note.records
    ]


def _validated(model: type[_Model], doc: object, what: str) -> _Model:
    """``doc`` as ``model``, or :class:`NotificationError` naming the first problem."""
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise NotificationError(f"not {what}: {'.'.join(map(str, err['loc'])) or '(root)'}: {err['msg']}") from exc


def _eventbridge_object(doc: dict[str, Any]) -> S3ObjectRef:
    detail = _validated(_EventBridgeObjectCreated, doc, "an S3 Object Created event").detail
    return S3ObjectRef(
        bucket=detail.bucket.name,
        key=detail.obj.key,
        event_name=f"ObjectCreated:{detail.reason or 'Unknown'}",
        size=detail.obj.size,
        etag=detail.obj.etag,
    )


def is_trail_log_key(key: str) -> bool:
    """True for a CloudTrail log object: ``.json``/``.json.gz``, not a digest or Insights file."""
    parts = key.split("/")
    if any(p in _SKIPPED_FOLDERS for p in parts[:-1]):
        return False
    name = parts[-1]
    if "_CloudTrail-Digest_" in name or "_CloudTrail-Insight_" in name:
        return False
    return name.endswith(_LOG_SUFFIXES)


# ---------------------------------------------------------------------------------------------------------------------
# Reading an object
# ---------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrailObject:
    """One S3 object open for reading: the input source (named ``s3://bucket/key``) and its ETag."""

    source: InputSource
    etag: str | None


def _open_object(s3: S3Client, bucket: str, key: str) -> tuple[Any, str | None]:
    """(streaming body, ETag) of an object; a missing object raises ``ObjectUnreadableError``."""
    try:
        resp = s3.get_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in _MISSING_CODES:
            raise ObjectUnreadableError(f"s3://{bucket}/{key}: object not found ({code})") from exc
        raise
    return resp["Body"], resp.get("ETag")


@contextmanager
def trail_object(s3: S3Client, bucket: str, key: str) -> Iterator[TrailObject]:
    """The object streamed from S3, closed on exit. A missing object, or a stream that breaks off while it is read
    (timeout, connection reset, short read), raises :class:`ObjectUnreadableError`."""
    source_id = f"s3://{bucket}/{key}"
    body, etag = _open_object(s3, bucket, key)
    try:
        yield TrailObject(InputSource(name=source_id, open=lambda: body), etag)
    except BotoCoreError as exc:
        raise ObjectReadInterruptedError(f"{source_id}: read error: {exc}") from exc
    finally:
        with suppress(BotoCoreError):  # closing a body cut short checks its length again: the read already failed
            body.close()

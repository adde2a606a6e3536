"""The weekly report's stored state: its files in the reports bucket, presigned links to them, and the once-per-week
announcement marker in the state table (``pk=REPORT#{week}``, ``sk=PUBLISHED``).

The use case that decides what to write is :mod:`auditor.service.weekly_report`; the announcement itself goes out on
the findings topic through :mod:`auditor.sinks.report_announcement`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import structlog
from botocore.exceptions import ClientError

from auditor.models.finding import isoformat_z
from auditor.report.model import IsoWeek
from auditor.state import keys
from auditor.state.attributes import string as _s

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef
    from mypy_boto3_s3 import S3Client

__all__ = [
    "CLAIM_STALE_SECONDS",
    "MARKER_RETENTION",
    "MARKER_SK",
    "ReportAnnouncements",
    "ReportFiles",
    "marker_pk",
]

log = structlog.get_logger(__name__)

#: A claim older than this (no invocation runs longer than Lambda's 15 minutes) belongs to a crashed invocation.
CLAIM_STALE_SECONDS = 900
MARKER_SK = "PUBLISHED"
#: How long a week's marker is kept after the week ends (retries and re-runs come within days).
MARKER_RETENTION = timedelta(days=35)


def marker_pk(week: IsoWeek) -> str:
    """The partition key of a week's announcement marker (``sk`` is ``PUBLISHED``)."""
    return f"REPORT#{week.label}"


class ReportFiles:
    """The report files in the reports bucket (KMS-encrypted when a key is given) and presigned links to them."""

    def __init__(self, s3: S3Client, bucket: str, *, kms_key_id: str | None = None) -> None:
        self._s3 = s3
        self._bucket = bucket
        self._kms_key_id = kms_key_id

    def put(self, key: str, body: str, content_type: str, week: IsoWeek) -> None:
        extra: dict[str, Any] = {}
        if self._kms_key_id:
            extra = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": self._kms_key_id}
        self._s3.put_object(
            Bucket=self._bucket,
            Key=key,
            Body=body.encode(),
            ContentType=content_type,
            CacheControl="private, no-cache",
            Metadata={"report-week": week.label},
            **extra,
        )

    def link(self, key: str, expires_in: int) -> str:
        """A presigned GET link to ``key``, valid ``expires_in`` seconds (SigV4: at most 7 days) or until the signing
        credentials expire, whichever comes first (see :meth:`credentials_expire_at`)."""
        return self._s3.generate_presigned_url(
            "get_object", Params={"Bucket": self._bucket, "Key": key}, ExpiresIn=expires_in
        )

    def credentials_expire_at(self) -> datetime | None:
        """When the credentials that sign the links expire, where botocore knows it (credentials from an assumed
        role, a container or instance profile); None when it does not (Lambda hands its role's session to the
        function as environment variables, without their expiry)."""
        signer = getattr(self._s3, "_request_signer", None)
        expiry = getattr(getattr(signer, "_credentials", None), "_expiry_time", None)
        return expiry.astimezone(UTC) if isinstance(expiry, datetime) else None

    def console_link(self, key: str, region: str) -> str:
        """The object's page in the S3 console: it needs an AWS sign-in with read access to the bucket, and works as
        long as the report is kept (365 days: the reports bucket's lifecycle rule)."""
        return (
            f"https://console.aws.amazon.com/s3/object/{quote(self._bucket)}?region={quote(region)}"
            f"&prefix={quote(key, safe='')}"
        )


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class ReportAnnouncements:
    """The once-per-week announcement marker (``pk=REPORT#{week}``, ``sk=PUBLISHED``) in the state table.

    Attributes: ``status`` (``claimed`` then ``published``), ``claim_token``, ``claimed_at``, ``published_at``,
    ``message_id``, ``html_key``, ``expires_at`` (TTL: the week's end plus :data:`MARKER_RETENTION`).
    """

    def __init__(self, client: DynamoDBClient, table_name: str, *, stale_after_seconds: int = CLAIM_STALE_SECONDS):
        self._client = client
        self._table = table_name
        self._stale = timedelta(seconds=stale_after_seconds)

    def _key(self, week: IsoWeek) -> dict[str, AttributeValueTypeDef]:
        return {keys.PK: _s(marker_pk(week)), keys.SK: _s(MARKER_SK)}

    def claim(self, week: IsoWeek, token: str, now: datetime) -> bool:
        """Claim the week's announcement; False when it is published or claimed (recently) by someone else."""
        expires = int((week.end + MARKER_RETENTION).timestamp())
        try:
            self._client.put_item(
                TableName=self._table,
                Item={
                    **self._key(week),
                    "status": _s("claimed"),
                    "claim_token": _s(token),
                    "claimed_at": _s(isoformat_z(now)),
                    keys.TTL_ATTR: {"N": str(expires)},
                },
                ConditionExpression="attribute_not_exists(#pk) OR (#st = :claimed AND #at < :stale)",
                ExpressionAttributeNames={"#pk": keys.PK, "#st": "status", "#at": "claimed_at"},
                ExpressionAttributeValues={
                    ":claimed": _s("claimed"),
                    ":stale": _s(isoformat_z(now - self._stale)),
                },
            )
        except ClientError as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def status(self, week: IsoWeek) -> str | None:
        """``claimed``, ``published`` or None (no marker)."""
        item = self._client.get_item(TableName=self._table, Key=self._key(week), ConsistentRead=True).get("Item")
        return item["status"]["S"] if item and "status" in item else None

    def mark_published(self, week: IsoWeek, token: str, message_id: str, html_key: str, now: datetime) -> None:
        """Record the publish on our claim (a claim taken over meanwhile is left alone, and logged)."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key=self._key(week),
                UpdateExpression="SET #st = :published, #pa = :now, #mid = :mid, #hk = :hk",
                ConditionExpression="#tok = :tok",
                ExpressionAttributeNames={
                    "#st": "status",
                    "#pa": "published_at",
                    "#mid": "message_id",
                    "#hk": "html_key",
                    "#tok": "claim_token",
                },
                ExpressionAttributeValues={
                    ":published": _s("published"),
                    ":now": _s(isoformat_z(now)),
                    ":mid": _s(message_id),
                    ":hk": _s(html_key),
                    ":tok": _s(token),
                },
            )
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
            log.warning("report_claim_taken_over", week=week.label)

    def release(self, week: IsoWeek, token: str) -> None:
        """Give our claim up (the publish failed): the next invocation claims and announces."""
        try:
            self._client.delete_item(
                TableName=self._table,
                Key=self._key(week),
                ConditionExpression="#tok = :tok",
                ExpressionAttributeNames={"#tok": "claim_token"},
                ExpressionAttributeValues={":tok": _s(token)},
            )
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise

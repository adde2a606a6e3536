"""Event fingerprints of ingested trail objects, in S3: one object per ingested CloudTrail object.

Written by trail ingest before the object's window contributions, read by the evaluator (:mod:`auditor.service.dedupe`).
They live under ``fingerprints/`` in the stack's reports bucket (KMS-encrypted; a lifecycle rule expires them with
the window contributions, after ``StateRetentionDays``). About 8 bytes per event: 600 KB for a five-minute object of
75,000 events, one PUT per object.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import structlog
from botocore.exceptions import BotoCoreError, ClientError

from auditor.exceptions import AuditorError
from auditor.kernel.aggregates.fingerprints import EventFingerprints

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["PREFIX", "FingerprintStore", "FingerprintStoreError"]

log = structlog.get_logger(__name__)

PREFIX = "fingerprints/"


class FingerprintStoreError(AuditorError):
    """Fingerprints could not be written (the object's ingest fails and is retried) or read (the evaluation fails
    before its cursor moves, and is retried)."""


class FingerprintStore:
    def __init__(self, s3: S3Client, bucket: str, prefix: str = PREFIX) -> None:
        self._s3 = s3
        self._bucket = bucket
        self._prefix = prefix

    def key(self, source_id: str) -> str:
        """The S3 key of a source's fingerprints (a hash of the source id: no log key structure leaks into it)."""
        return self._prefix + hashlib.sha256(source_id.encode("utf-8", "surrogatepass")).hexdigest() + ".bin"

    def put(self, source_id: str, fingerprints: EventFingerprints) -> None:
        try:
            self._s3.put_object(Bucket=self._bucket, Key=self.key(source_id), Body=fingerprints.to_bytes())
        except (BotoCoreError, ClientError) as exc:
            raise FingerprintStoreError(f"{source_id}: fingerprints not written: {exc}") from exc

    def _listed(self, key: str, source_id: str) -> bool:
        """Whether ``key`` exists, by listing it (any error raises :class:`FingerprintStoreError`)."""
        try:
            page = self._s3.list_objects_v2(Bucket=self._bucket, Prefix=key, MaxKeys=1)
        except (ClientError, BotoCoreError) as exc:
            raise FingerprintStoreError(f"{source_id}: fingerprints not read: {exc}") from exc
        return any(item.get("Key") == key for item in page.get("Contents", []))

    def get(self, source_id: str) -> EventFingerprints | None:
        """A source's fingerprints; None when there are none (ingested before fingerprints existed, or expired:
        S3 answers NoSuchKey or 404) or they do not decode (logged): that source is then merged as it is, unchecked.

        Any other error reading them (throttling, a server error, the network) raises
        :class:`FingerprintStoreError`: merging the source unchecked would count its shared events twice for good
        once the evaluator's cursor moves past the window, so the run fails and is retried instead.
        """
        key = self.key(source_id)
        try:
            body = self._s3.get_object(Bucket=self._bucket, Key=key)["Body"]
            data = body.read()
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("NoSuchKey", "404"):
                return None
            if code in ("AccessDenied", "403") and not self._listed(key, source_id):
                # S3 answers 403 for a missing key when s3:ListBucket does not apply to the GetObject request (the
                # role's ListBucket is limited to the fingerprints prefix): a listing of the exact key tells.
                return None
            raise FingerprintStoreError(f"{source_id}: fingerprints not read: {exc}") from exc
        except BotoCoreError as exc:
            raise FingerprintStoreError(f"{source_id}: fingerprints not read: {exc}") from exc
        try:
            return EventFingerprints.from_bytes(data)
        except ValueError as exc:
            log.warning("fingerprints_unreadable", source=source_id, error=str(exc))
            return None

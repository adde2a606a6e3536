"""Reading a trail object's fingerprints: only a key that is not there means "none"; S3 answers 403 instead of 404
for a missing key when the role's s3:ListBucket (limited to the fingerprints prefix) does not apply to the GetObject
request, so a 403 is settled by listing the exact key. Responses shaped as the S3 API documents them (Stubber)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from auditor.state.fingerprint_store import FingerprintStore, FingerprintStoreError

BUCKET = "reports-bucket"
SOURCE = "s3://trail/AWSLogs/111122223333/CloudTrail/us-east-1/2026/12/01/x.json.gz"


def _store() -> tuple[FingerprintStore, Stubber]:
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return FingerprintStore(s3, BUCKET), Stubber(s3)


def test_a_403_for_a_key_the_listing_does_not_show_means_none() -> None:
    store, stub = _store()
    key = store.key(SOURCE)
    stub.add_client_error("get_object", "AccessDenied", "Access Denied", 403, {"Bucket": BUCKET, "Key": key})
    stub.add_response(
        "list_objects_v2",
        {"IsTruncated": False, "KeyCount": 0, "Name": BUCKET, "Prefix": key, "MaxKeys": 1},
        {"Bucket": BUCKET, "Prefix": key, "MaxKeys": 1},
    )
    with stub:
        assert store.get(SOURCE) is None
    stub.assert_no_pending_responses()


def test_a_403_for_a_key_that_is_there_fails_the_read() -> None:
    store, stub = _store()
    key = store.key(SOURCE)
    stub.add_client_error("get_object", "AccessDenied", "Access Denied", 403, {"Bucket": BUCKET, "Key": key})
    stub.add_response(
        "list_objects_v2",
        {"Contents": [{"Key": key, "Size": 10}], "IsTruncated": False, "KeyCount": 1, "Name": BUCKET, "MaxKeys": 1},
        {"Bucket": BUCKET, "Prefix": key, "MaxKeys": 1},
    )
    with stub, pytest.raises(FingerprintStoreError, match="fingerprints not read"):
        store.get(SOURCE)


@pytest.mark.parametrize(("code", "status"), [("InternalError", 500), ("SlowDown", 503)])
def test_other_errors_fail_the_read_without_listing(code: str, status: int) -> None:
    store, stub = _store()
    stub.add_client_error("get_object", code, code, status, {"Bucket": BUCKET, "Key": store.key(SOURCE)})
    with stub, pytest.raises(FingerprintStoreError):
        store.get(SOURCE)
    stub.assert_no_pending_responses()


def test_no_such_key_means_none() -> None:
    store, stub = _store()
    stub.add_client_error("get_object", "NoSuchKey", "missing", 404, {"Bucket": BUCKET, "Key": store.key(SOURCE)})
    with stub:
        assert store.get(SOURCE) is None

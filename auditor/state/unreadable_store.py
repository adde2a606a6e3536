"""Trail objects that could not be read (corrupt or truncated gzip, broken JSON), kept in the state table.

One item per object and ISO week (the week of the windows the object belongs to): every failed read of it counts
one more attempt on that item, so the weekly report lists each object once however often SQS retried it. Items
expire with the state table's TTL (kept two weeks at least, for the report of their week). The item is in
docs/state-table.md, the choice of windows in docs/service.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor.models.finding import isoformat_z, utc
from auditor.state import keys
from auditor.state.attributes import number as _n
from auditor.state.attributes import retention
from auditor.state.attributes import string as _s
from auditor.state.paging import query_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef

__all__ = ["StoredUnreadable", "UnreadableObjectStore", "object_windows", "unreadable_pk"]

#: ``..._CloudTrail_eu-west-1_20261201T1005Z_abc.json.gz``: the time CloudTrail wrote the file.
_KEY_TIME = re.compile(r"_(\d{8}T\d{4}Z)_[^/]*$")


def unreadable_pk(moment: datetime) -> str:
    """Partition of the unreadable objects whose windows lie in the ISO week of ``moment``."""
    return f"UNREADABLE#{keys.week_of(utc(moment))}"


def key_time(key: str) -> datetime | None:
    """The time a CloudTrail object's name carries (when CloudTrail wrote it), or None for another name."""
    match = _KEY_TIME.search(key)
    if match is None:
        return None
    return datetime.strptime(match.group(1), "%Y%m%dT%H%MZ").replace(tzinfo=UTC)


def object_windows(key: str, failed_at: datetime, window_seconds: int) -> tuple[datetime, list[int]]:
    """(the time the windows are taken from, the window starts the object's events lie in).

    CloudTrail names a file by the time it wrote it and delivers an event within about 15 minutes, so its events lie
    in the ``window_seconds`` before that time: the windows overlapping ``[time - window_seconds, time]``. A key
    without that time falls back to the time the read failed.
    """
    moment = key_time(key) or utc(failed_at)
    end = int(moment.timestamp())
    first = (end - window_seconds) // window_seconds * window_seconds
    last = end // window_seconds * window_seconds
    return moment, list(range(first, last + 1, window_seconds))


@dataclass(frozen=True, slots=True)
class StoredUnreadable:
    """One unreadable object over one ISO week, as stored."""

    bucket: str
    key: str
    reason: str
    windows: tuple[int, ...]
    first_seen: str
    last_seen: str
    attempts: int

    @property
    def source_id(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


class UnreadableObjectStore:
    """The unreadable trail objects (see the module docstring)."""

    def __init__(self, client: DynamoDBClient, table_name: str, *, retention_days: int = 14) -> None:
        self._client = client
        self._table = table_name
        #: At least two weeks, so the report of an object's week (run the Monday after it) still finds it.
        self._retention = max(retention(retention_days), timedelta(days=14))

    def record(
        self, bucket: str, key: str, reason: str, *, at: datetime, window_seconds: int
    ) -> StoredUnreadable | None:
        """Count one failed read of ``s3://bucket/key`` (one item per object and week; ``attempts`` grows)."""
        moment, windows = object_windows(key, at, window_seconds)
        source_id = f"s3://{bucket}/{key}"
        stamp = isoformat_z(utc(at))
        expires = int((max(utc(at), moment) + self._retention).timestamp())
        response = self._client.update_item(
            TableName=self._table,
            Key={keys.PK: _s(unreadable_pk(moment)), keys.SK: _s(keys.source_sk(source_id))},
            UpdateExpression=(
                "SET #bucket = :bucket, #key = :key, #reason = :reason, #windows = :windows, #last = :at, "
                "#first = if_not_exists(#first, :at), #ttl = :ttl ADD #attempts :one"
            ),
            ExpressionAttributeNames={
                "#bucket": "bucket",
                "#key": "key",
                "#reason": "reason",
                "#windows": "windows",
                "#last": "last_seen",
                "#first": "first_seen",
                "#ttl": keys.TTL_ATTR,
                "#attempts": "attempts",
            },
            ExpressionAttributeValues={
                ":bucket": _s(bucket),
                ":key": _s(key),
                ":reason": _s(reason.removeprefix(f"{source_id}: ")[:1000]),  # the item names the object
                ":windows": {"L": [_n(w) for w in windows]},
                ":at": _s(stamp),
                ":ttl": _n(expires),
                ":one": _n(1),
            },
            ReturnValues="ALL_NEW",
        )
        item = response.get("Attributes")
        return _unreadable(item) if item else None

    def week_objects(self, moment: datetime) -> list[StoredUnreadable]:
        """The unreadable objects of the ISO week of ``moment`` (every page), by their first window, then key."""
        params: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": keys.PK},
            "ExpressionAttributeValues": {":pk": _s(unreadable_pk(moment))},
            "ConsistentRead": True,
        }
        found = [_unreadable(item) for item in query_items(self._client, params)]
        return sorted(found, key=lambda u: (u.windows[:1], u.bucket, u.key))


def _unreadable(item: dict[str, Any]) -> StoredUnreadable:
    def text(name: str) -> str:
        value = item.get(name)
        return str(value["S"]) if isinstance(value, dict) and "S" in value else ""

    windows = item.get("windows", {}).get("L", [])
    return StoredUnreadable(
        bucket=text("bucket"),
        key=text("key"),
        reason=text("reason"),
        windows=tuple(int(w["N"]) for w in windows),
        first_seen=text("first_seen"),
        last_seen=text("last_seen"),
        attempts=int(item.get("attempts", {}).get("N", "0")),
    )

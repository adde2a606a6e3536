"""Bounded per-key item-size history in the state table, for the stream item-size watcher.

Only items at or above a floor (64 KB by default) get a history: one item per audited key, at most ``max_samples``
samples thinned by :func:`downsample`, written with a versioned conditional ``PutItem``; a record whose
``SequenceNumber`` was applied already is not applied again. The item's attributes, the bounding and the
concurrency rules are in docs/state-table.md.
"""

from __future__ import annotations

import binascii
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

import orjson
import structlog
from botocore.exceptions import ClientError

from auditor.exceptions import AuditorError
from auditor.models.stream import ItemSizeObservation
from auditor.state import keys
from auditor.state.attributes import number as _n
from auditor.state.window_store import RETRY_CONFIG  # the state table's one client set-up

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = [
    "HISTORY_SK",
    "RETRY_CONFIG",
    "HistoryConflictError",
    "HistoryUpdate",
    "ItemHistoryStore",
    "Sample",
    "SizeHistory",
    "add_sample",
    "downsample",
    "history_pk",
]

log = structlog.get_logger(__name__)

HISTORY_SK: Final = "HISTORY"
DEFAULT_MAX_SAMPLES: Final = 48
DEFAULT_RETENTION_DAYS: Final = 30
_MAX_GROWTH_ATTRIBUTES: Final = 5
_MAX_ATTEMPTS: Final = 5
_LADDER: Final = (3_600, 3 * 3_600, 6 * 3_600, 12 * 3_600, 86_400, 2 * 86_400, 4 * 86_400, 7 * 86_400, 14 * 86_400)
_LADDER_LAST: Final = 30 * 86_400

#: ``(epoch seconds, size bytes)``.
Sample = tuple[int, int]


class HistoryConflictError(AuditorError):
    """The history item kept changing under us (concurrent writers); the record should be retried."""


def history_pk(account: str | None, region: str | None, table: str, key: Mapping[str, Any]) -> str:
    """``ITEMSIZE#{account}#{region}#{table}#{sha256(key)[:32]}``; the key is DynamoDB JSON, hashed sorted."""
    digest = hashlib.sha256(orjson.dumps(key, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]
    return f"ITEMSIZE#{keys.table_ref(account, region, table)}#{digest}"


# ----------------------------------------------------------------------------------------------------------- pure


def downsample(samples: Sequence[Sample], max_samples: int) -> tuple[Sample, ...]:
    """Thin time-ordered ``samples`` to at most ``max_samples`` (see the module docstring); keeps first and newest."""
    if len(samples) <= max_samples:
        return tuple(samples)
    if max_samples < 2:
        raise ValueError("max_samples must be at least 2")
    first, newest, middle = samples[0], samples[-1], samples[1:-1]
    room = max_samples - 2
    for width in (*_LADDER, _LADDER_LAST):
        buckets: dict[int, Sample] = {}
        for sample in middle:
            buckets[sample[0] // width] = sample  # time order: the latest of each bucket wins
        kept = sorted(buckets.values())
        if len(kept) <= room:
            return (first, *kept, newest)
    return (first, *(kept[len(kept) - room :] if room else ()), newest)


def add_sample(samples: Sequence[Sample], sample: Sample, max_samples: int) -> tuple[Sample, ...]:
    """``samples`` with ``sample`` added in time order (replacing one at the same second), then bounded."""
    merged = sorted([s for s in samples if s[0] != sample[0]] + [sample])
    return downsample(merged, max_samples)


def _applied(sequence: str, last: str | None) -> bool:
    """Whether the record ``sequence`` was applied already (stream sequence numbers grow per item)."""
    if last is None:
        return False
    if sequence.isdigit() and last.isdigit():
        return int(sequence) <= int(last)
    return sequence == last


def _top_growth(growth: Mapping[str, int]) -> dict[str, int]:
    ranked = sorted(growth.items(), key=lambda kv: (-kv[1], kv[0]))
    return dict(ranked[:_MAX_GROWTH_ATTRIBUTES])


@dataclass(frozen=True, slots=True)
class SizeHistory:
    """One item's stored size history."""

    samples: tuple[Sample, ...] = ()
    growth: dict[str, int] = field(default_factory=dict)
    last_sequence: str | None = None
    first_seen: int | None = None
    max_size_bytes: int = 0
    version: int = 0

    @property
    def driver(self) -> str | None:
        """The attribute that added the most bytes over the history, if image deltas showed any."""
        return min(self.growth.items(), key=lambda kv: (-kv[1], kv[0]))[0] if self.growth else None

    def with_observation(self, obs: ItemSizeObservation, max_samples: int) -> SizeHistory:
        """This history with ``obs`` applied (pure)."""
        growth = dict(self.growth)
        for grown in obs.growth:
            growth[grown.name] = growth.get(grown.name, 0) + grown.delta
        at = int(obs.time)
        return SizeHistory(
            samples=add_sample(self.samples, (at, obs.size_bytes), max_samples),
            growth=_top_growth(growth),
            last_sequence=obs.sequence_number,
            first_seen=min(self.first_seen, at) if self.first_seen is not None else at,
            max_size_bytes=max(self.max_size_bytes, obs.size_bytes),
            version=self.version + 1,
        )


@dataclass(frozen=True, slots=True)
class HistoryUpdate:
    """The history after a record; ``applied`` is False for a record applied before (a redelivery)."""

    history: SizeHistory
    applied: bool


# ----------------------------------------------------------------------------------------------------------- codec


def _key_value(typed: Mapping[str, Any]) -> AttributeValueTypeDef:
    """A key attribute from stream JSON for the low-level client: ``B`` text is base64, the client wants bytes."""
    binary = typed.get("B")
    if isinstance(binary, str):
        return {"B": binascii.a2b_base64(binary)}
    return cast("AttributeValueTypeDef", typed)


def _encode(obs: ItemSizeObservation, history: SizeHistory, expires_at: int) -> dict[str, AttributeValueTypeDef]:
    item: dict[str, AttributeValueTypeDef] = {
        keys.PK: {"S": history_pk(obs.account, obs.region, obs.table, obs.key)},
        keys.SK: {"S": HISTORY_SK},
        "key": {"M": {name: _key_value(value) for name, value in obs.key.items()}},
        "account": {"S": obs.account or ""},
        "region": {"S": obs.region or ""},
        "table": {"S": obs.table},
        "samples": {"L": [{"L": [_n(t), _n(size)]} for t, size in history.samples]},
        "size_bytes": _n(obs.size_bytes),
        "max_size_bytes": _n(history.max_size_bytes),
        "growth": {"M": {name: _n(added) for name, added in history.growth.items()}},
        "last_sequence": {"S": history.last_sequence or ""},
        "version": _n(history.version),
        "first_seen": _n(history.first_seen if history.first_seen is not None else int(obs.time)),
        "updated_at": _n(int(obs.time)),
        keys.TTL_ATTR: _n(expires_at),
    }
    return item


def _decode(item: Mapping[str, Any]) -> SizeHistory:
    samples = tuple((int(pair["L"][0]["N"]), int(pair["L"][1]["N"])) for pair in item["samples"]["L"])
    growth = {name: int(value["N"]) for name, value in item.get("growth", {}).get("M", {}).items()}
    return SizeHistory(
        samples=samples,
        growth=growth,
        last_sequence=item.get("last_sequence", {}).get("S") or None,
        first_seen=int(item["first_seen"]["N"]) if "first_seen" in item else None,
        max_size_bytes=int(item.get("max_size_bytes", {}).get("N", "0")),
        version=int(item["version"]["N"]),
    )


# ----------------------------------------------------------------------------------------------------------- store


class ItemHistoryStore:
    """Reads and writes size histories in the state table (client injected; build it with :data:`RETRY_CONFIG`)."""

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        retention_days: int = DEFAULT_RETENTION_DAYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_samples < 3:
            raise ValueError("max_samples must be at least 3")
        self.client = client
        self.table_name = table_name
        self.max_samples = max_samples
        self.retention_seconds = retention_days * 86_400
        self._clock = clock
        # Histories read or written by this store (one batch): saves a read per record of a busy key. A stale
        # entry only costs a failed condition and a re-read.
        self._cache: dict[str, SizeHistory] = {}

    def get(self, account: str | None, region: str | None, table: str, key: Mapping[str, Any]) -> SizeHistory | None:
        """The stored history of one item (a consistent read), or None."""
        return self._read(history_pk(account, region, table, key))

    def _read(self, pk: str) -> SizeHistory | None:
        resp = self.client.get_item(
            TableName=self.table_name,
            Key={keys.PK: {"S": pk}, keys.SK: {"S": HISTORY_SK}},
            ConsistentRead=True,
        )
        item = resp.get("Item")
        return _decode(item) if item else None

    def record(self, obs: ItemSizeObservation) -> HistoryUpdate:
        """Add ``obs`` to its item's history (once, however often the record is delivered)."""
        pk = history_pk(obs.account, obs.region, obs.table, obs.key)
        current = self._cache.get(pk)
        if current is None:
            current = self._read(pk)
        for _attempt in range(_MAX_ATTEMPTS):
            if current is not None and _applied(obs.sequence_number, current.last_sequence):
                self._cache[pk] = current
                return HistoryUpdate(current, applied=False)
            updated = (current or SizeHistory()).with_observation(obs, self.max_samples)
            expires_at = int(max(self._clock(), obs.time)) + self.retention_seconds
            condition: dict[str, Any] = (
                {"ConditionExpression": "attribute_not_exists(#pk)", "ExpressionAttributeNames": {"#pk": keys.PK}}
                if current is None
                else {
                    "ConditionExpression": "#v = :v",
                    "ExpressionAttributeNames": {"#v": "version"},
                    "ExpressionAttributeValues": {":v": _n(current.version)},
                }
            )
            try:
                self.client.put_item(TableName=self.table_name, Item=_encode(obs, updated, expires_at), **condition)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
                log.info("item_history_conflict", pk=pk, version=current.version if current else None)
                self._cache.pop(pk, None)
                current = self._read(pk)
                continue
            self._cache[pk] = updated
            return HistoryUpdate(updated, applied=True)
        raise HistoryConflictError(f"{pk}: the history changed {_MAX_ATTEMPTS} times while being updated")

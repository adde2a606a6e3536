"""Window aggregates and ingest idempotency in the state table (key design: :mod:`auditor.state.keys`).

:class:`WindowStore` writes one contribution per (source, window) under a key derived from the source, so a
redelivered object never counts twice, indexes the windows that have traffic, marks processed objects, and commits
event batches with a conditional marker per event id in one transaction (:meth:`WindowStore.commit_events`). The
items, their attributes and the retry rules are in docs/state-table.md.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import orjson
import structlog
from botocore.config import Config
from botocore.exceptions import ClientError

from auditor.exceptions import AuditorError
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.state import keys
from auditor.state.attributes import number as _n
from auditor.state.attributes import retention
from auditor.state.attributes import string as _s
from auditor.state.paging import query_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        QueryInputTypeDef,
        TransactWriteItemTypeDef,
        WriteRequestTypeDef,
    )

__all__ = ["EVENT_SK", "RETRY_CONFIG", "TRANSACT_MAX_ITEMS", "StoreError", "WindowStore", "event_pk"]

log = structlog.get_logger(__name__)

#: botocore retry set-up for the state-table client: standard mode retries throttling and transient errors.
RETRY_CONFIG = Config(retries={"mode": "standard", "max_attempts": 8}, connect_timeout=5, read_timeout=30)

#: DynamoDB's limit of actions in one ``TransactWriteItems``.
TRANSACT_MAX_ITEMS = 100
#: DynamoDB's limit of requests in one ``BatchWriteItem``.
_BATCH_MAX_ITEMS = 25
#: Rounds of ``UnprocessedItems`` / transaction-conflict retries before giving up.
_MAX_ROUNDS = 8
_BACKOFF_BASE = 0.05
_BACKOFF_CAP = 2.0

EVENT_SK = "EVT"
AGG_ATTR = "agg"


def event_pk(event_id: str) -> str:
    """Partition key of the processed-event marker of one CloudTrail ``eventID``."""
    return f"EVT#{event_id}"


class StoreError(AuditorError):
    """A state-table write could not be completed (after retries)."""


def _backoff(attempt: int) -> None:
    time.sleep(min(_BACKOFF_CAP, _BACKOFF_BASE * (2**attempt)))


class WindowStore:
    """Window contributions, the window index, and processed-object/event marks in the state table."""

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        retention_days: int = 14,
        query_page_size: int | None = None,
    ) -> None:
        """``query_page_size`` caps the items per Query page (None: DynamoDB's 1 MB pages; tests use it)."""
        self._client = client
        self._table = table_name
        self._retention_seconds = int(retention(retention_days).total_seconds())
        self._page_size = query_page_size

    @property
    def table_name(self) -> str:
        return self._table

    def _expires_at(self, now: datetime) -> int:
        return int(now.timestamp()) + self._retention_seconds

    # ------------------------------------------------------------------------------------------------ contributions

    def _items(
        self, source_id: str, aggregates: AggregateSet, now: datetime
    ) -> tuple[list[dict[str, AttributeValueTypeDef]], list[dict[str, AttributeValueTypeDef]]]:
        """(index items, contribution items) of one source, in a deterministic order."""
        expires = _n(self._expires_at(now))
        written_at = _s(now.isoformat())
        sk = _s(keys.source_sk(source_id))
        index: list[dict[str, AttributeValueTypeDef]] = []
        contributions: list[dict[str, AttributeValueTypeDef]] = []
        for wk in sorted(aggregates.windows, key=lambda w: (w[0] or "", w[1] or "", w[2], w[3])):
            tw = aggregates.windows[wk]
            account, region, table, start = wk
            common: dict[str, AttributeValueTypeDef] = {
                "account": _s(account or ""),
                "region": _s(region or ""),
                "table": _s(table),
                "window_start": _n(start),
                keys.TTL_ATTR: expires,
            }
            index.append(
                {
                    keys.PK: _s(keys.window_index_pk(start)),
                    keys.SK: _s(keys.table_ref(account, region, table)),
                    **common,
                }
            )
            contributions.append(
                {
                    keys.PK: _s(keys.window_pk(account, region, table, start)),
                    keys.SK: sk,
                    AGG_ATTR: {"B": zlib.compress(tw.to_json(), 6)},
                    "source": _s(source_id),
                    "calls": _n(tw.calls),
                    "written_at": written_at,
                    **common,
                }
            )
        return index, contributions

    def put_contributions(self, source_id: str, aggregates: AggregateSet, now: datetime) -> int:
        """Write one item per ``TableWindow`` of ``aggregates`` plus its window-index item.

        Contributions go under ``pk=keys.window_pk(...)``, ``sk=keys.source_sk(source_id)``; the index under
        ``pk=keys.window_index_pk(start)``, ``sk=keys.table_ref(...)``. Deterministic: writing the same source again
        overwrites the same items (idempotent, never double counts). Index items are written first. Returns the
        number of items written. The aggregate is stored as binary (zlib-compressed ``TableWindow.to_json()``);
        items carry the ``expires_at`` TTL.
        """
        index, contributions = self._items(source_id, aggregates, now)
        self._batch_put(index)
        self._batch_put(contributions)
        return len(index) + len(contributions)

    def _batch_put(self, items: Sequence[dict[str, AttributeValueTypeDef]]) -> None:
        for i in range(0, len(items), _BATCH_MAX_ITEMS):
            pending: list[WriteRequestTypeDef] = [
                {"PutRequest": {"Item": item}} for item in items[i : i + _BATCH_MAX_ITEMS]
            ]
            for attempt in range(_MAX_ROUNDS):
                resp = self._client.batch_write_item(RequestItems={self._table: pending})
                pending = cast("list[WriteRequestTypeDef]", resp.get("UnprocessedItems", {}).get(self._table, []))
                if not pending:
                    break
                _backoff(attempt)
            else:
                raise StoreError(f"{self._table}: {len(pending)} items still unprocessed after {_MAX_ROUNDS} rounds")

    # ------------------------------------------------------------------------------------------------ reads

    def _query(self, pk: str) -> Iterator[dict[str, Any]]:
        """Every item of one partition (strongly consistent, paginated)."""
        params: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": keys.PK},
            "ExpressionAttributeValues": {":pk": _s(pk)},
            "ConsistentRead": True,
        }
        if self._page_size:
            params["Limit"] = self._page_size
        return query_items(self._client, params)

    def load_windows(self, starts: Iterable[int]) -> list[TableWindow]:
        """All contributions of the given windows, merged into one ``TableWindow`` per (account, region, table, start).

        For each window start: Query the window index, then Query each window partition (paginated). Sorted by
        (table, start, account, region). A contribution that cannot be decoded is logged and skipped.
        """
        return merge_parts(self.load_window_parts(starts))

    def load_window_parts(self, starts: Iterable[int]) -> list[list[tuple[str, TableWindow]]]:
        """The contributions of the given windows, unmerged: for each (account, region, table, start), its
        (source id, aggregate) pairs. A contribution that cannot be decoded is logged and skipped."""
        out: list[list[tuple[str, TableWindow]]] = []
        for start in sorted(set(starts)):
            for ref in self._query(keys.window_index_pk(start)):
                account = ref.get("account", {}).get("S") or None
                region = ref.get("region", {}).get("S") or None
                table = ref["table"]["S"]
                parts: list[tuple[str, TableWindow]] = []
                for item in self._query(keys.window_pk(account, region, table, start)):
                    part = self._decode(item)
                    if part is not None:
                        parts.append((str(item.get("source", {}).get("S") or item[keys.SK]["S"]), part))
                if parts:
                    out.append(parts)
        return out

    @staticmethod
    def _decode(item: Mapping[str, Any]) -> TableWindow | None:
        try:
            raw = item[AGG_ATTR]["B"]
            return TableWindow.from_dict(_loads(zlib.decompress(bytes(raw))))
        except (KeyError, TypeError, ValueError, zlib.error) as exc:
            log.error(
                "window_contribution_unreadable",
                pk=item.get(keys.PK, {}).get("S"),
                sk=item.get(keys.SK, {}).get("S"),
                error=f"{type(exc).__name__}: {exc}",
            )
            return None

    # ------------------------------------------------------------------------------------------------ objects

    def _object_key(self, bucket: str, key: str) -> dict[str, AttributeValueTypeDef]:
        return {keys.PK: _s(keys.object_pk(bucket, key)), keys.SK: _s(keys.OBJECT_SK)}

    def is_processed(self, bucket: str, key: str) -> bool:
        """Whether ``s3://bucket/key`` was already marked processed."""
        resp = self._client.get_item(
            TableName=self._table,
            Key=self._object_key(bucket, key),
            ConsistentRead=True,
            ProjectionExpression="#pk",
            ExpressionAttributeNames={"#pk": keys.PK},
        )
        return "Item" in resp

    def mark_processed(
        self, bucket: str, key: str, *, etag: str | None, stats: Mapping[str, int], now: datetime
    ) -> bool:
        """Conditionally mark ``s3://bucket/key`` processed (``attribute_not_exists(pk)``).

        Stores the stats and time. Returns False when it was already marked (a conflict is not an error).
        """
        item: dict[str, AttributeValueTypeDef] = {
            **self._object_key(bucket, key),
            "bucket": _s(bucket),
            "key": _s(key),
            "stats": {"M": {name: _n(int(value)) for name, value in stats.items()}},
            "processed_at": _s(now.isoformat()),
            keys.TTL_ATTR: _n(self._expires_at(now)),
        }
        if etag:
            item["etag"] = _s(etag)
        try:
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": keys.PK},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    # ------------------------------------------------------------------------------------------------ events

    def commit_events(
        self, event_ids: Sequence[str], source_id: str, aggregates: AggregateSet, now: datetime
    ) -> set[str]:
        """Atomically record ``event_ids`` as processed and store ``aggregates`` as their contribution.

        One ``TransactWriteItems``: a conditional put (``attribute_not_exists(pk)``) of ``pk=EVT#{eventID}`` per
        event, and the contribution items of ``source_id`` (the window-index items are written before, outside
        the transaction: they are idempotent, and keeping them out avoids conflicts between concurrent batches).
        Returns the ids that were already recorded: when non-empty, **nothing** was written and the caller
        retries without them. An empty result means everything was committed. ``event_ids`` must be unique and
        ``len(event_ids) + len(aggregates.windows)`` at most :data:`TRANSACT_MAX_ITEMS`.
        """
        if len(set(event_ids)) != len(event_ids):
            raise ValueError("event_ids must be unique")
        index, contributions = self._items(source_id, aggregates, now)
        if len(event_ids) + len(contributions) > TRANSACT_MAX_ITEMS:
            raise ValueError(f"a transaction holds at most {TRANSACT_MAX_ITEMS} items")
        if not event_ids and not contributions:
            return set()
        expires = _n(self._expires_at(now))
        processed_at = _s(now.isoformat())
        actions: list[TransactWriteItemTypeDef] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        keys.PK: _s(event_pk(eid)),
                        keys.SK: _s(EVENT_SK),
                        "source": _s(source_id),
                        "processed_at": processed_at,
                        keys.TTL_ATTR: expires,
                    },
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": keys.PK},
                }
            }
            for eid in event_ids
        ]
        actions.extend({"Put": {"TableName": self._table, "Item": item}} for item in contributions)
        self._batch_put(index)
        for attempt in range(_MAX_ROUNDS):
            try:
                self._client.transact_write_items(TransactItems=actions)
                return set()
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                    raise
                reasons = exc.response.get("CancellationReasons", [])
                codes = [r.get("Code") or "None" for r in reasons]
                existing = {
                    eid for eid, code in zip(event_ids, codes, strict=False) if code == "ConditionalCheckFailed"
                }
                if existing:
                    return existing
                retryable = {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "None"}
                if not codes or not set(codes) <= retryable:
                    raise StoreError(f"{self._table}: transaction cancelled: {', '.join(codes) or exc}") from exc
                log.info("transaction_retry", attempt=attempt + 1, reasons=sorted(set(codes) - {"None"}))
                _backoff(attempt)
        raise StoreError(f"{self._table}: transaction still conflicting after {_MAX_ROUNDS} attempts")


def _loads(data: bytes) -> dict[str, Any]:
    value = orjson.loads(data)
    if not isinstance(value, dict):
        raise ValueError("aggregate is not a JSON object")
    return value


def merge_parts(parts: Iterable[Sequence[tuple[str, TableWindow]]]) -> list[TableWindow]:
    """One merged ``TableWindow`` per group of contributions, sorted by (table, start, account, region)."""
    merged: list[TableWindow] = []
    for group in parts:
        window: TableWindow | None = None
        for _, part in group:
            if window is None:
                window = part
            else:
                window.merge(part)
        if window is not None:
            merged.append(window)
    merged.sort(key=lambda w: (w.table, w.window_start, w.account or "", w.region or ""))
    return merged

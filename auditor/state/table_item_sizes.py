"""Each table's item sizes as the stream item-size watcher measured them (exact), for the evaluator's item size.

The watcher adds the count and the bytes of the items it sized to one item per table and ISO week (``UpdateItem
ADD``, so concurrent environments add up; a redelivered batch adds its items again, which moves a mean little), a
thousand items or fifteen minutes at a time (:class:`PendingSizes`). The evaluator reads this week's and last
week's of the tables it evaluates (``BatchGetItem``) and takes their mean as the table's ``streams`` item size
(:func:`auditor.models.capacity.item_size`); the metrics audit sets CloudWatch's estimate of the week on the same
item (the ``cloudwatch`` size). Items expire after ``retention_days``. Keys: docs/state-table.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor.models.inventory import TableProfile
from auditor.state import keys
from auditor.state.attributes import number, retention, string

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["PendingSizes", "TableItemSizes", "TableRef", "with_stream_sizes"]

#: (account, region, table), as the evaluator's windows name a table.
TableRef = tuple[str | None, str | None, str]
#: Keys per BatchGetItem request (the API's maximum).
_BATCH = 100
_MAX_ROUNDS = 5


class TableItemSizes:
    """The per-table, per-week sums of the sizes the stream watcher measured, in the state table."""

    def __init__(self, ddb: DynamoDBClient, table_name: str, *, retention_days: int = 21) -> None:
        self._ddb = ddb
        self._table = table_name
        self._retention = retention(retention_days)

    def add(self, sums: Mapping[tuple[TableRef, str], tuple[int, int]], now: float | None = None) -> None:
        """Add ``(items, bytes)`` to each (table, ISO week) of ``sums``: one UpdateItem each."""
        expires = int((now if now is not None else time.time()) + self._retention.total_seconds())
        for ((account, region, table), week), (items, size) in sorted(sums.items(), key=str):
            self._ddb.update_item(
                TableName=self._table,
                Key={keys.PK: string(keys.item_sizes_pk(account, region, table)), keys.SK: string(week)},
                UpdateExpression="ADD #n :n, #b :b SET #t = :t",
                ExpressionAttributeNames={"#n": "items", "#b": "bytes", "#t": keys.TTL_ATTR},
                ExpressionAttributeValues={":n": number(items), ":b": number(size), ":t": number(expires)},
            )

    def put_cloudwatch(self, ref: TableRef, size: int, now: datetime) -> None:
        """CloudWatch's estimate of the table's item size this week (consumed write units per item write, a lower
        bound: :func:`auditor.whatif.capacity.cloudwatch_item_size`); a later audit of the week replaces it."""
        expires = int(now.timestamp() + self._retention.total_seconds())
        self._ddb.update_item(
            TableName=self._table,
            Key={keys.PK: string(keys.item_sizes_pk(*ref)), keys.SK: string(keys.week_of(now))},
            UpdateExpression="SET #c = :c, #t = :t",
            ExpressionAttributeNames={"#c": "cloudwatch_bytes", "#t": keys.TTL_ATTR},
            ExpressionAttributeValues={":c": number(size), ":t": number(expires)},
        )

    def means(self, tables: Iterable[TableRef], now: datetime) -> dict[TableRef, int]:
        """The mean size of the items measured this ISO week and the one before, per table (tables without any
        are left out)."""
        return {ref: streams for ref, (streams, _) in self.read(tables, now).items() if streams is not None}

    def read(self, tables: Iterable[TableRef], now: datetime) -> dict[TableRef, tuple[int | None, int | None]]:
        """Per table, (the mean size the stream watcher measured this ISO week and the one before, CloudWatch's
        latest estimate of them); tables with neither are left out."""
        weeks = (keys.week_of(now), keys.week_of(now - timedelta(days=7)))
        wanted = sorted({(ref, week) for ref in tables for week in weeks}, key=str)
        sums: dict[TableRef, list[int]] = {}
        estimates: dict[TableRef, tuple[str, int]] = {}
        for start in range(0, len(wanted), _BATCH):
            request: dict[str, Any] = {
                self._table: {
                    "Keys": [
                        {keys.PK: string(keys.item_sizes_pk(*ref)), keys.SK: string(week)}
                        for ref, week in wanted[start : start + _BATCH]
                    ]
                }
            }
            for _ in range(_MAX_ROUNDS):
                answer = self._ddb.batch_get_item(RequestItems=request)
                for item in answer.get("Responses", {}).get(self._table, []):
                    ref = _ref(item[keys.PK]["S"])
                    total = sums.setdefault(ref, [0, 0])
                    total[0] += int(item.get("items", {}).get("N", "0"))
                    total[1] += int(item.get("bytes", {}).get("N", "0"))
                    week, estimate = item[keys.SK]["S"], int(item.get("cloudwatch_bytes", {}).get("N", "0"))
                    if estimate > 0 and week >= estimates.get(ref, ("", 0))[0]:
                        estimates[ref] = (week, estimate)
                request = dict(answer.get("UnprocessedKeys") or {})
                if not request:
                    break
        out: dict[TableRef, tuple[int | None, int | None]] = {}
        for ref in sums.keys() | estimates.keys():
            n, b = sums.get(ref, [0, 0])
            streams = max(1, round(b / n)) if n > 0 else None
            cloudwatch = estimates[ref][1] if ref in estimates else None
            if streams is not None or cloudwatch is not None:
                out[ref] = (streams, cloudwatch)
        return out


class PendingSizes:
    """The sizes a watcher measured but has not stored yet, kept across the batches one Lambda environment serves:
    they are stored once ``max_items`` items wait, or the stream times of the waiting items span ``max_seconds``,
    so a trickle of small batches costs no state-table request each (and the sizes of an environment that ends
    before then are not stored: they are a sample)."""

    def __init__(self, *, max_items: int = 1_000, max_seconds: float = 900.0) -> None:
        self.max_items = max_items
        self.max_seconds = max_seconds
        self._sums: dict[tuple[TableRef, str], tuple[int, int]] = {}
        self._count = 0
        self._first: float | None = None
        self._last: float | None = None

    def add(self, ref: TableRef, at: float, size: int) -> None:
        """One item of ``size`` bytes written to ``ref`` at ``at`` (its stream record's epoch seconds)."""
        slot = (ref, keys.week_of(datetime.fromtimestamp(at, UTC)))
        items, total = self._sums.get(slot, (0, 0))
        self._sums[slot] = (items + 1, total + size)
        self._count += 1
        self._first = at if self._first is None else min(self._first, at)
        self._last = at if self._last is None else max(self._last, at)

    @property
    def due(self) -> bool:
        """Enough is waiting to be stored."""
        if not self._count or self._first is None or self._last is None:
            return False
        return self._count >= self.max_items or self._last - self._first >= self.max_seconds

    def take(self) -> dict[tuple[TableRef, str], tuple[int, int]]:
        """What waits, emptied."""
        sums, self._sums, self._count, self._first, self._last = self._sums, {}, 0, None, None
        return sums

    def put_back(self, sums: Mapping[tuple[TableRef, str], tuple[int, int]]) -> None:
        """Sums that could not be stored, to try again with the next ones."""
        for slot, (items, total) in sums.items():
            have = self._sums.get(slot, (0, 0))
            self._sums[slot] = (have[0] + items, have[1] + total)
            self._count += items


def _ref(pk: str) -> TableRef:
    """The table of an item-size partition key (the inverse of :func:`auditor.state.keys.item_sizes_pk`)."""
    account, region, table = pk.removeprefix(keys.ITEM_SIZES_PREFIX).split("#", 2)
    return account or None, region or None, table


def with_stream_sizes(
    describe: Callable[[set[TableRef]], Mapping[TableRef, TableProfile]],
    sizes: TableItemSizes,
    now: datetime | None = None,
) -> Callable[[set[TableRef]], dict[TableRef, TableProfile]]:
    """``describe`` (the tables' descriptions) with the measured item sizes added: the stream watcher's mean
    (``stream_item_size_bytes``) and the metrics audit's CloudWatch estimate (``cloudwatch_item_size_bytes``); a
    table measured but not described gets a profile of its own."""

    def described(tables: set[TableRef], /) -> dict[TableRef, TableProfile]:
        profiles = dict(describe(tables))
        for ref, (streams, cloudwatch) in sizes.read(tables, now or datetime.now(UTC)).items():
            profile = profiles.get(ref) or TableProfile(name=ref[2], account=ref[0], region=ref[1])
            update = {"stream_item_size_bytes": streams, "cloudwatch_item_size_bytes": cloudwatch}
            profiles[ref] = profile.model_copy(update=update)
        return profiles

    return described

"""The daily cost ledger in the state table (key design: :mod:`auditor.state.keys`, docs/state-table.md).

One item per table and day for each side (the hourly metrics audit's ``hour_{start}`` attributes, the evaluator's
``window_{start}`` ones), each set with one UpdateItem, so a retry overwrites its own attribute and nothing counts
twice. :meth:`LedgerStore.entries` reads a week. The items are in docs/state-table.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from auditor.cost.cost_model import LedgerEntry
from auditor.cost.ledger import day_entry
from auditor.state import keys
from auditor.state.paging import query_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef

__all__ = ["LEDGER_RETENTION_DAYS", "LedgerStore"]

LEDGER_RETENTION_DAYS = 400
#: One attribute per hour and per window on the day's item (top-level, so one UpdateItem sets it).
HOUR_PREFIX = "hour_"
WINDOW_PREFIX = "window_"
#: Pages read per day (a day's partition holds one item per audited table, about 10 KB each).
MAX_PAGES_PER_DAY = 100


def _expires(day: date) -> str:
    start = datetime(day.year, day.month, day.day).timestamp()
    return str(int(start) + LEDGER_RETENTION_DAYS * 86_400)


class LedgerStore:
    """Reads and writes the daily ledger items (client injected; build it with ``RETRY_CONFIG``)."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._ddb = client
        self._table = table

    def _set(
        self, entry_day: date, account: str | None, region: str | None, table: str, side: str, attr: str, value: Any
    ) -> None:
        """One UpdateItem: ``SET {attr} = :v`` on one side (``H``/``W``) of the table's day (created when missing)."""
        self._ddb.update_item(
            TableName=self._table,
            Key={
                keys.PK: {"S": keys.ledger_pk(entry_day)},
                keys.SK: {"S": f"{keys.table_ref(account, region, table)}#{side}"},
            },
            UpdateExpression="SET #a = :account, #r = :region, #t = :table, #d = :day, #ttl = :exp, #e = :v",
            ExpressionAttributeNames={
                "#a": "account",
                "#r": "region",
                "#t": "table",
                "#d": "day",
                "#ttl": keys.TTL_ATTR,
                "#e": attr,
            },
            ExpressionAttributeValues={
                ":account": {"S": account or ""},
                ":region": {"S": region or ""},
                ":table": {"S": table},
                ":day": {"S": entry_day.isoformat()},
                ":exp": {"N": _expires(entry_day)},
                ":v": value,
            },
        )

    def put_hour(self, entry: LedgerEntry, hour_start: int) -> None:
        """The hourly metrics audit's entry for the hour starting at ``hour_start`` (epoch seconds)."""
        doc = {
            "M": {
                side: {"M": {k: {"S": repr(v)} for k, v in spend.lines.items() if v}}
                for side, spend in (("dynamodb", entry.dynamodb), ("auditor", entry.auditor))
            }
        }
        self._set(entry.day, entry.account, entry.region, entry.table, "H", f"{HOUR_PREFIX}{hour_start}", doc)

    def put_window(
        self, day: date, account: str | None, region: str | None, table: str, window_start: int, data_events: int
    ) -> None:
        """The data events ingested for ``table`` in the window starting at ``window_start``."""
        value = {"N": str(max(0, int(data_events)))}
        self._set(day, account, region, table, "W", f"{WINDOW_PREFIX}{window_start}", value)

    def entries(self, days: Iterable[date]) -> list[LedgerEntry]:
        """Every table's priced day for the given days (an unreadable item is skipped)."""
        out: list[LedgerEntry] = []
        for day in days:
            items: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
            params: QueryInputTypeDef = {
                "TableName": self._table,
                "KeyConditionExpression": "#pk = :pk",
                "ExpressionAttributeNames": {"#pk": keys.PK},
                "ExpressionAttributeValues": {":pk": {"S": keys.ledger_pk(day)}},
            }
            for item in query_items(self._ddb, params, max_pages=MAX_PAGES_PER_DAY):
                ref = tuple(item.get(a, {}).get("S", "") for a in ("account", "region", "table"))
                items.setdefault(ref, []).append(dict(item))
            for parts in items.values():
                entry = _entry(day, {k: v for part in parts for k, v in part.items()})
                if entry is not None:
                    out.append(entry)
        return out


def _entry(day: date, item: dict[str, Any]) -> LedgerEntry | None:
    try:
        hours = {
            name: {side: {k: v["S"] for k, v in doc["M"][side]["M"].items()} for side in doc["M"]}
            for name, doc in item.items()
            if name.startswith(HOUR_PREFIX)
        }
        windows = {name: float(v["N"]) for name, v in item.items() if name.startswith(WINDOW_PREFIX)}
        return day_entry(
            day,
            item.get("account", {}).get("S") or None,
            item.get("region", {}).get("S") or None,
            item["table"]["S"],
            hours,
            windows,
        )
    except (KeyError, TypeError, ValueError):
        return None

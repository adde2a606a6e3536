"""Window aggregates and ingest idempotency in the state table (key design: :mod:`auditor.state.keys`).

:class:`WindowStore` writes one contribution per (source, window) under a key derived from the source, so a
redelivered object never counts twice, indexes the windows that have traffic, marks processed objects, and commits
event batches with a conditional marker per event id in one transaction (:meth:`WindowStore.commit_events`). A
contribution to a window the evaluator had already sealed is flagged late (:class:`LateWindow`), for the evaluator
to evaluate that window again; :class:`SightingStore` keeps what each evaluated window sighted, so that the window
evaluated again replaces its part of the findings' weekly totals (and its key-identified requests and top keys, every
evaluated window's, which a hot key's share and requests over the week are of). The items, their attributes and the
retry rules are in docs/state-table.md.
"""

from __future__ import annotations

import time
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import orjson
import structlog
from botocore.config import Config
from botocore.exceptions import ClientError

from auditor.exceptions import AuditorError
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.inputs import source_order
from auditor.models.finding import STORED, Totals
from auditor.models.period_evidence import PeriodKeys, SpaceKeys
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

__all__ = [
    "EVENT_SK",
    "RETRY_CONFIG",
    "TRANSACT_MAX_ITEMS",
    "LateWindow",
    "SightingStore",
    "StoreError",
    "WindowSightings",
    "WindowStore",
    "event_pk",
    "events_fit",
    "ids_ever",
    "sum_week",
    "week_keys",
]

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
#: The seal's attribute: the start of the latest window an evaluator began to load.
SEAL_ATTR = "through"
#: A late window's attribute: a token written anew by every late contribution (the evaluator clears the flag only
#: while it is the token it read).
LATE_FLAG_ATTR = "flag"


def events_fit(events: int, windows: int) -> bool:
    """Whether ``events`` with contributions to ``windows`` fit one :meth:`WindowStore.commit_events`: a marker per
    event, a contribution and maybe a late flag per window, and the check of the evaluator's seal."""
    return events + 2 * windows + 1 <= TRANSACT_MAX_ITEMS


@dataclass(frozen=True, slots=True)
class LateWindow:
    """A (table, window) that got a contribution after the evaluator sealed it (:meth:`WindowStore.late_windows`)."""

    account: str | None
    region: str | None
    table: str
    window_start: int
    #: The token of the latest late contribution (the evaluator clears the flag only while it is still this one).
    flag: str


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

    @property
    def retention_seconds(self) -> int:
        """How long a contribution is kept after it is written (its TTL)."""
        return self._retention_seconds

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
        self,
        event_ids: Sequence[str],
        source_id: str,
        aggregates: AggregateSet,
        now: datetime,
        late: list[LateWindow] | None = None,
    ) -> set[str]:
        """Atomically record ``event_ids`` as processed and store ``aggregates`` as their contribution.

        One ``TransactWriteItems``: a conditional put (``attribute_not_exists(pk)``) of ``pk=EVT#{eventID}`` per
        event, and the contribution items of ``source_id`` (the window-index items are written before, outside
        the transaction: they are idempotent, and keeping them out avoids conflicts between concurrent batches),
        and a check of the evaluator's seal: when it already covers a window of the batch, the transaction is
        committed again with a late flag per such window (appended to ``late``), so the flag and the contribution
        are stored together or not at all. Returns the ids that were already recorded: when non-empty,
        **nothing** was written and the caller retries without them. An empty result means everything was
        committed. ``event_ids`` must be unique and fit one transaction (:func:`events_fit`).
        """
        if len(set(event_ids)) != len(event_ids):
            raise ValueError("event_ids must be unique")
        index, contributions = self._items(source_id, aggregates, now)
        if not events_fit(len(event_ids), len(contributions)):
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
        windows = sorted(aggregates.windows)
        sealed: int | None = None  # the seal read after a failed check: None expects no window of the batch sealed
        flagged: list[LateWindow] = []
        for attempt in range(_MAX_ROUNDS):
            flags: list[TransactWriteItemTypeDef] = [
                {"Put": {"TableName": self._table, "Item": self._late_item(w, source_id, now)}} for w in flagged
            ]
            check = self._seal_check(min(w[3] for w in windows) if windows else 0, sealed)
            try:
                self._client.transact_write_items(TransactItems=[*actions, *flags, check])
                if late is not None:
                    late.extend(flagged)
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
                if len(codes) == len(actions) + len(flags) + 1 and codes[-1] == "ConditionalCheckFailed":
                    # the evaluator sealed a window of the batch: flag it late (the check returns the seal it met)
                    met: Mapping[str, Any] = reasons[-1].get("Item") or {}
                    seen = met.get(SEAL_ATTR, {}).get("N")
                    sealed = int(seen) if seen is not None else self.sealed_through()
                    flagged = [_late_window(w) for w in windows if sealed is not None and w[3] <= sealed]
                    continue
                retryable = {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "None"}
                if not codes or not set(codes) <= retryable:
                    raise StoreError(f"{self._table}: transaction cancelled: {', '.join(codes) or exc}") from exc
                log.info("transaction_retry", attempt=attempt + 1, reasons=sorted(set(codes) - {"None"}))
                _backoff(attempt)
        raise StoreError(f"{self._table}: transaction still conflicting after {_MAX_ROUNDS} attempts")

    # ------------------------------------------------------------------------------------------------ late windows

    def _seal_key(self) -> dict[str, AttributeValueTypeDef]:
        return {keys.PK: _s(keys.CURSOR_PK), keys.SK: _s(keys.EVALUATOR_SEAL_SK)}

    def _seal_check(self, first_start: int, sealed: int | None) -> TransactWriteItemTypeDef:
        """The transaction's check of the seal: it covers no window from ``first_start`` on (``sealed`` None), or it
        is still ``sealed`` (read after a failed check; the windows it covers are flagged late)."""
        if sealed is None:
            condition, value = "attribute_not_exists(#t) OR #t < :t", first_start
        else:
            condition, value = "#t = :t", sealed
        return {
            "ConditionCheck": {
                "TableName": self._table,
                "Key": self._seal_key(),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#t": SEAL_ATTR},
                "ExpressionAttributeValues": {":t": _n(value)},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def seal(self, through: int, now: datetime) -> None:
        """The evaluator, before it loads windows up to the one starting at ``through``: a contribution stored from
        now on to a window at or before it is flagged late. Only ever moves forward."""
        # the seal only moves forward: a later window's seal is kept
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": self._seal_key(),
            "UpdateExpression": "SET #t = :t, updated_at = :now",
            "ConditionExpression": "attribute_not_exists(#t) OR #t < :t",
            "ExpressionAttributeNames": {"#t": SEAL_ATTR},
            "ExpressionAttributeValues": {":t": _n(through), ":now": _s(now.isoformat())},
        }
        try:
            self._client.update_item(**request)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def sealed_through(self) -> int | None:
        """The start of the latest window an evaluator sealed (None: none yet)."""
        resp = self._client.get_item(TableName=self._table, Key=self._seal_key(), ConsistentRead=True)
        value = resp.get("Item", {}).get(SEAL_ATTR, {}).get("N")
        return int(value) if value is not None else None

    def _late_item(self, late: LateWindow, source_id: str, now: datetime) -> dict[str, AttributeValueTypeDef]:
        """The item that flags one (table, window) late, with its ``flag`` token (see :meth:`clear_late`)."""
        return {
            keys.PK: _s(keys.LATE_PK),
            keys.SK: _s(keys.late_sk(late.account, late.region, late.table, late.window_start)),
            "account": _s(late.account or ""),
            "region": _s(late.region or ""),
            "table": _s(late.table),
            "window_start": _n(late.window_start),
            LATE_FLAG_ATTR: _s(late.flag),
            "last_source": _s(source_id),
            "last_at": _s(now.isoformat()),
            keys.TTL_ATTR: _n(self._expires_at(now)),
        }

    def flag_late(self, source_id: str, aggregates: AggregateSet, now: datetime) -> list[LateWindow]:
        """After ``source_id``'s contributions are stored: flag each of its windows the evaluator sealed already.

        Called after :meth:`put_contributions` (the seal is read after the write, so a window the evaluator loaded
        before the write is always flagged). Returns the windows flagged."""
        sealed = self.sealed_through()
        if sealed is None:
            return []
        flagged = [_late_window(w) for w in sorted(aggregates.windows) if w[3] <= sealed]
        for late in flagged:
            self._client.put_item(TableName=self._table, Item=self._late_item(late, source_id, now))
        return flagged

    def late_windows(self) -> list[LateWindow]:
        """The windows flagged late and not cleared yet, oldest first (strongly consistent)."""
        out: list[LateWindow] = []
        for item in self._query(keys.LATE_PK):
            out.append(
                LateWindow(
                    account=item.get("account", {}).get("S") or None,
                    region=item.get("region", {}).get("S") or None,
                    table=item["table"]["S"],
                    window_start=int(item["window_start"]["N"]),
                    flag=item[LATE_FLAG_ATTR]["S"],
                )
            )
        return out

    def clear_late(self, late: LateWindow) -> bool:
        """Clear a late flag once its window was evaluated again, only if no contribution was flagged since
        (its ``flag`` token unchanged); False when one was (the next run evaluates the window again)."""
        try:
            self._client.delete_item(
                TableName=self._table,
                Key={
                    keys.PK: _s(keys.LATE_PK),
                    keys.SK: _s(keys.late_sk(late.account, late.region, late.table, late.window_start)),
                },
                ConditionExpression="#f = :f",
                ExpressionAttributeNames={"#f": LATE_FLAG_ATTR},
                ExpressionAttributeValues={":f": _s(late.flag)},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True


def _late_window(window: tuple[str | None, str | None, str, int]) -> LateWindow:
    account, region, table, start = window
    return LateWindow(account, region, table, start, uuid.uuid4().hex)  # a fresh token for every late contribution


def _loads(data: bytes) -> dict[str, Any]:
    value = orjson.loads(data)
    if not isinstance(value, dict):
        raise ValueError("aggregate is not a JSON object")
    return value


def merge_parts(parts: Iterable[Sequence[tuple[str, TableWindow]]]) -> list[TableWindow]:
    """One merged ``TableWindow`` per group of contributions, sorted by (table, start, account, region). A group's
    contributions merge in the order of their sources (:func:`auditor.kernel.inputs.source_order`, as
    ``analyze-trail`` merges its files), not in the order the store lists them (by a digest of the source)."""
    merged: list[TableWindow] = []
    for group in parts:
        window: TableWindow | None = None
        for _, part in sorted(group, key=lambda sp: source_order(sp[0])):
            if window is None:
                window = part
            else:
                window.merge(part)
        if window is not None:
            merged.append(window)
    merged.sort(key=lambda w: (w.table, w.window_start, w.account or "", w.region or ""))
    return merged


# ---------------------------------------------------------------------------------------------------------------------
# What each evaluated table window sighted
# ---------------------------------------------------------------------------------------------------------------------

#: A window's key-identified requests by partition space (JSON: ``{"": n, "<index>": m}``).
KEY_REQUESTS_ATTR = "key_requests"
#: A window's top keys by partition space (binary: zlib-compressed JSON, ``{space: SpaceKeys.to_json()}``).
TOP_KEYS_ATTR = "top_keys"

#: A week's items outlive the week by a contribution's retention: a window of the week can be evaluated again as
#: long as its contributions are kept, and its week is then summed from the week's first window on.
_SIGHTINGS_EXTRA_SECONDS = 8 * 86_400


@dataclass(slots=True)
class WindowSightings:
    """One evaluated table window: each finding's totals there, and every id ever sighted there (a finding that a
    second evaluation no longer sees keeps its id here, so its week is summed again without the window)."""

    window_start: int
    totals: dict[str, Totals] = field(default_factory=dict)
    ever: set[str] = field(default_factory=set)
    #: The window's key-identified requests by partition space (``""`` the table's, else an index's name): what a
    #: hot key's share over a period is of. Kept for every evaluated window, with findings or without.
    key_requests: dict[str, int] = field(default_factory=dict)
    #: The window's top keys by partition space (:func:`auditor.engine.window_keys`): what a hot key's requests over a
    #: period are summed from. None: an item kept before them.
    top_keys: dict[str, SpaceKeys] | None = field(default_factory=dict)


class SightingStore:
    """The evaluated windows' sightings (see the module docstring)."""

    def __init__(self, client: DynamoDBClient, table_name: str, *, retention_days: int = 14) -> None:
        self._client = client
        self._table = table_name
        self._expiry = int(retention(retention_days).total_seconds()) + _SIGHTINGS_EXTRA_SECONDS

    def put(
        self,
        account: str | None,
        region: str | None,
        table: str,
        week: str,
        sightings: WindowSightings,
        now: datetime,
    ) -> None:
        """Store one window's sightings (overwrites: a window evaluated again replaces its item)."""
        doc = {fid: t.model_dump(mode="json", context=STORED) for fid, t in sorted(sightings.totals.items())}
        item: dict[str, Any] = {
            keys.PK: _s(keys.sightings_pk(account, region, table, week)),
            keys.SK: _s(keys.sightings_sk(sightings.window_start)),
            "window_start": _n(sightings.window_start),
            "totals": {"B": zlib.compress(orjson.dumps(doc), 6)},
            "written_at": _s(now.isoformat()),
            keys.TTL_ATTR: _n(int(now.timestamp()) + self._expiry),
        }
        ever = sorted(sightings.ever | set(sightings.totals))
        if ever:
            item["ever"] = {"SS": ever}
        if sightings.key_requests:
            item[KEY_REQUESTS_ATTR] = _s(orjson.dumps(dict(sorted(sightings.key_requests.items()))).decode())
        if sightings.top_keys:  # at most 20 keys of up to 200 characters per space: well under the item limit
            doc_keys = {space: k.to_json() for space, k in sorted(sightings.top_keys.items())}
            item[TOP_KEYS_ATTR] = {"B": zlib.compress(orjson.dumps(doc_keys), 6)}
        self._client.put_item(TableName=self._table, Item=item)

    def week(self, account: str | None, region: str | None, table: str, week: str) -> dict[int, WindowSightings]:
        """Every stored window of a table's ISO week, by window start (strongly consistent)."""
        params: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": keys.PK},
            "ExpressionAttributeValues": {":pk": _s(keys.sightings_pk(account, region, table, week))},
            "ConsistentRead": True,
        }
        out: dict[int, WindowSightings] = {}
        for item in query_items(self._client, params):
            start = int(item["window_start"]["N"])
            raw = orjson.loads(zlib.decompress(bytes(item["totals"]["B"])))
            totals = {fid: Totals.model_validate(doc) for fid, doc in raw.items()}
            spaces = orjson.loads(item[KEY_REQUESTS_ATTR]["S"]) if KEY_REQUESTS_ATTR in item else {}
            top: dict[str, SpaceKeys] | None = {}
            if TOP_KEYS_ATTR in item:
                docs = orjson.loads(zlib.decompress(bytes(item[TOP_KEYS_ATTR]["B"])))
                top = {str(space): SpaceKeys.from_json(doc) for space, doc in docs.items()}
            elif spaces:  # kept before the top keys were
                top = None
            out[start] = WindowSightings(start, totals, set(item.get("ever", {}).get("SS", [])), spaces, top)
        return out

    def cover(self, week: str, starts: Iterable[int], window_seconds: int, now: datetime) -> None:
        """Add ``starts`` (windows of ``window_seconds``) to the windows of ``week`` the evaluator found trail data in
        (a set: adding a window again, after a crash or as a late window, changes nothing)."""
        numbers = sorted({str(int(s)) for s in starts})
        if not numbers:
            return
        self._client.update_item(
            TableName=self._table,
            Key={keys.PK: _s(keys.data_windows_pk(week)), keys.SK: _s(keys.data_windows_pk(week))},
            UpdateExpression="ADD #w :w SET #s = :s, #x = :x",
            ExpressionAttributeNames={"#w": "windows", "#s": "window_seconds", "#x": keys.TTL_ATTR},
            ExpressionAttributeValues={
                ":w": {"NS": numbers},
                ":s": _n(window_seconds),
                ":x": _n(int(now.timestamp()) + self._expiry),
            },
        )

    def coverage(self, week: str) -> tuple[list[int], int] | None:
        """The window starts of ``week`` the evaluator found trail data in, in time order, and the windows' length
        (None: none recorded). Strongly consistent."""
        resp = self._client.get_item(
            TableName=self._table,
            Key={keys.PK: _s(keys.data_windows_pk(week)), keys.SK: _s(keys.data_windows_pk(week))},
            ConsistentRead=True,
        )
        item = resp.get("Item", {})
        if "windows" not in item:
            return None
        return sorted(int(n) for n in item["windows"]["NS"]), int(item["window_seconds"]["N"])


def sum_week(windows: Iterable[WindowSightings], finding_id: str) -> Totals | None:
    """A finding's totals over the given windows (in time order), None when none of them sighted it."""
    total: Totals | None = None
    for w in sorted(windows, key=lambda w: w.window_start):
        part = w.totals.get(finding_id)
        if part is not None:
            total = part if total is None else total.merged(part)
    return total


def week_keys(windows: Iterable[WindowSightings]) -> PeriodKeys:
    """The given windows' key-identified requests and top keys, with the ids each sighted (each window once: a window
    evaluated again replaced its item), in time order."""
    out = PeriodKeys()
    for w in sorted(windows, key=lambda w: w.window_start):
        out.add(w.key_requests, w.top_keys, w.totals)
    return out


def ids_ever(windows: Mapping[int, WindowSightings]) -> set[str]:
    """Every finding id any of the windows ever sighted."""
    return {fid for w in windows.values() for fid in w.ever | set(w.totals)}

"""Finding states, the publish outbox and the evaluator cursor in the state table (keys: :mod:`auditor.state.keys`).

:class:`FindingsStore` writes a state change and its publish intent in one transaction, conditional on the version
it read (:meth:`FindingsStore.apply` re-applies the transition on a conflict), and moves the evaluator's cursor
only from the value read. The items, their attributes and the delivery guarantees are in docs/state-table.md.
"""

from __future__ import annotations

import hashlib
import heapq
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

import structlog
from botocore.exceptions import ClientError

from auditor.exceptions import AuditorError
from auditor.lifecycle import FindingEvent, FindingState, StateChange
from auditor.models.finding import STORED, isoformat_z, utc
from auditor.state import keys
from auditor.state.attributes import number as _n
from auditor.state.attributes import retention
from auditor.state.attributes import string as _s
from auditor.state.paging import query_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        KeysAndAttributesTypeDef,
        PutTypeDef,
        QueryInputTypeDef,
        TransactWriteItemTypeDef,
        UpdateItemInputTypeDef,
    )

__all__ = [
    "ConcurrencyError",
    "FindingsStore",
    "FindingsStoreError",
    "OutboxEntry",
    "VersionConflictError",
]

log = structlog.get_logger(__name__)

#: DynamoDB's limit of keys in one ``BatchGetItem``.
_BATCH_GET_MAX = 100
#: Rounds of ``UnprocessedKeys`` retries before giving up.
_MAX_ROUNDS = 8
_BACKOFF_BASE = 0.05
_BACKOFF_CAP = 2.0
#: Longest ``last_error`` kept on an outbox entry.
_MAX_ERROR_CHARS = 500
#: The record of an accepted run digest (``pk=DIGEST#{digest id}``, ``sk=DIGEST``), kept long after its entries.
_DIGEST_PK_PREFIX = "DIGEST#"
_DIGEST_SK = "DIGEST"
_DIGEST_RETENTION = timedelta(days=14)


class FindingsStoreError(AuditorError):
    """A state-table operation on findings could not be completed."""


class VersionConflictError(FindingsStoreError):
    """The stored finding is not at the version the write expected (someone else wrote it first)."""


class ConcurrencyError(FindingsStoreError):
    """A finding kept changing under us for every retry of :meth:`FindingsStore.apply`."""


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """One pending publish."""

    pk: str
    sk: str
    finding_id: str
    event: FindingEvent
    created: str
    attempts: int = 0
    last_error: str | None = None
    #: A publish was started (it may have been accepted: publishing it again may repeat it).
    publishing: bool = False
    #: SNS accepted its message; it stays until the run digest carrying it is accepted.
    published: bool = False
    #: A run digest carrying it was accepted; only its removal is left.
    digested: bool = False
    #: The run digest listing it that a run started to send (it may have been accepted: ``digest_accepted()``).
    digest_id: str | None = None

    @property
    def event_id(self) -> str:
        """A stable id of this publish intent (the same on every retry), for consumers that deduplicate."""
        return hashlib.sha256(f"{self.pk}|{self.sk}".encode()).hexdigest()[:32]


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _created(at: datetime) -> str:
    """Outbox sort-key time: microsecond precision, so entries sort by creation."""
    return utc(at).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class FindingsStore:
    """Finding states, the outbox and the evaluator cursor in the state table.

    Args:
        client: a DynamoDB client (build it with ``auditor.state.window_store.RETRY_CONFIG``).
        table_name: the state table.
        retention_days: how long resolved findings are kept (``FINDING_RETENTION_DAYS``).
        max_conflict_retries: re-reads and re-applies of one change before :class:`ConcurrencyError`.
        sleep: the backoff sleep (tests pass a no-op).
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        retention_days: int = 90,
        max_conflict_retries: int = 5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._table = table_name
        self._retention = retention(retention_days)
        self._max_conflict_retries = max_conflict_retries
        self._sleep = sleep
        #: Conflicts met by :meth:`apply` since this store was built (a run summary counter).
        self.conflicts = 0

    @property
    def table_name(self) -> str:
        """The state table."""
        return self._table

    def _backoff(self, attempt: int) -> None:
        self._sleep(min(_BACKOFF_CAP, _BACKOFF_BASE * (2**attempt)))

    # ------------------------------------------------------------------------------------------------ items

    def _state_item(self, state: FindingState, version: int) -> dict[str, AttributeValueTypeDef]:
        f = state.finding
        last = isoformat_z(f.last_seen)
        item: dict[str, AttributeValueTypeDef] = {
            keys.PK: _s(keys.finding_pk(f.id)),
            keys.SK: _s(keys.FINDING_SK),
            keys.GSI1_PK: _s(keys.table_gsi_pk(f.account, f.region, f.table)),
            keys.GSI1_SK: _s(keys.table_gsi_sk(state.is_open, f.id)),
            keys.GSI2_PK: _s(keys.week_gsi_pk(f.last_seen)),
            keys.GSI2_SK: _s(f"{last}#{f.id}"),
            "version": _n(version),
            "id": _s(f.id),
            "kind": _s(f.kind.value),
            "severity": _s(f.severity.value),
            "status": _s(state.status.value),
            "table": _s(f.table),
            "first_seen": _s(isoformat_z(f.first_seen)),
            "last_seen": _s(last),
            "updated_at": _s(isoformat_z(state.updated_at)),
            "state": _s(state.model_dump_json(exclude={"version"}, context=STORED)),
        }
        optional = {
            "account": f.account,
            "region": f.region,
            "index": f.index,
            "published_severity": state.published_severity.value if state.published_severity else None,
            "muted_reason": state.muted_reason,
        }
        item.update({name: _s(value) for name, value in optional.items() if value})
        if not state.is_open:
            resolved = state.resolved_at or state.updated_at
            item[keys.TTL_ATTR] = _n(int((resolved + self._retention).timestamp()))
        return item

    @staticmethod
    def _parse_state(item: dict[str, Any]) -> FindingState:
        try:
            state = FindingState.model_validate_json(item["state"]["S"])
            return state.model_copy(update={"version": int(item["version"]["N"])})
        except (KeyError, ValueError) as exc:
            pk = item.get(keys.PK, {}).get("S")
            raise FindingsStoreError(f"{pk}: unreadable finding state: {exc}") from exc

    def _key(self, finding_id: str) -> dict[str, AttributeValueTypeDef]:
        return {keys.PK: _s(keys.finding_pk(finding_id)), keys.SK: _s(keys.FINDING_SK)}

    # ------------------------------------------------------------------------------------------------ reads

    def get(self, finding_id: str) -> FindingState | None:
        """One finding's state (strongly consistent), or None."""
        resp = self._client.get_item(TableName=self._table, Key=self._key(finding_id), ConsistentRead=True)
        item = resp.get("Item")
        return self._parse_state(item) if item else None

    def get_many(self, finding_ids: Iterable[str]) -> dict[str, FindingState]:
        """The stored states of ``finding_ids`` (absent ids are left out), strongly consistent.

        ``BatchGetItem`` in chunks of 100; ``UnprocessedKeys`` are retried with backoff.
        """
        ids = sorted(set(finding_ids))
        found: dict[str, FindingState] = {}
        for i in range(0, len(ids), _BATCH_GET_MAX):
            request: dict[str, KeysAndAttributesTypeDef] = {
                self._table: {"Keys": [self._key(fid) for fid in ids[i : i + _BATCH_GET_MAX]], "ConsistentRead": True}
            }
            for attempt in range(_MAX_ROUNDS):
                resp = self._client.batch_get_item(RequestItems=request)
                for item in resp.get("Responses", {}).get(self._table, []):
                    state = self._parse_state(item)
                    found[state.id] = state
                unprocessed = resp.get("UnprocessedKeys", {}).get(self._table)
                if not unprocessed or not unprocessed.get("Keys"):
                    break
                request = {self._table: cast("KeysAndAttributesTypeDef", unprocessed)}
                self._backoff(attempt)
            else:
                raise FindingsStoreError(f"{self._table}: keys still unprocessed after {_MAX_ROUNDS} rounds")
        return found

    def _query(self, params: QueryInputTypeDef) -> Iterator[dict[str, Any]]:
        return query_items(self._client, params)

    def open_findings(self, account: str | None, region: str | None, table: str) -> list[FindingState]:
        """The open findings of one audited table (GSI1, eventually consistent), in id order."""
        params: QueryInputTypeDef = {
            "TableName": self._table,
            "IndexName": keys.GSI1,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :open)",
            "ExpressionAttributeNames": {"#pk": keys.GSI1_PK, "#sk": keys.GSI1_SK},
            "ExpressionAttributeValues": {
                ":pk": _s(keys.table_gsi_pk(account, region, table)),
                ":open": _s(keys.table_gsi_sk(True, "")),
            },
        }
        return [self._parse_state(item) for item in self._query(params)]

    def week_findings(self, moment: datetime, *, page_size: int = 100) -> list[FindingState]:
        """The findings last seen in the ISO week of ``moment`` (GSI2, paginated), oldest ``last_seen`` first."""
        params: QueryInputTypeDef = {
            "TableName": self._table,
            "IndexName": keys.GSI2,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": keys.GSI2_PK},
            "ExpressionAttributeValues": {":pk": _s(keys.week_gsi_pk(utc(moment)))},
            "Limit": page_size,
        }
        return [self._parse_state(item) for item in self._query(params)]

    def week(self, moment: datetime) -> list[FindingState]:
        """Alias of :meth:`week_findings` (the weekly report's read)."""
        return self.week_findings(moment)

    # ------------------------------------------------------------------------------------------------ writes

    def save(self, change: StateChange) -> FindingState:
        """Write ``change.state`` (and queue ``change.event``) if the stored version is ``change.previous``'s.

        Returns the state as stored (with its new version). Raises :class:`VersionConflictError` when the
        stored item is not at the expected version.
        """
        expected = change.previous.version if change.previous is not None else None
        version = (expected or 0) + 1
        put: dict[str, Any] = {"TableName": self._table, "Item": self._state_item(change.state, version)}
        if expected is None:
            put["ConditionExpression"] = "attribute_not_exists(#pk)"
            put["ExpressionAttributeNames"] = {"#pk": keys.PK}
        else:
            put["ConditionExpression"] = "#v = :v"
            put["ExpressionAttributeNames"] = {"#v": "version"}
            put["ExpressionAttributeValues"] = {":v": _n(expected)}
        try:
            if change.event is None:
                self._client.put_item(**put)
            else:
                outbox = self._outbox_item(change.event)
                token = hashlib.sha256(f"{change.id}|{version}|{outbox[keys.SK]['S']}".encode()).hexdigest()[:36]
                actions: list[TransactWriteItemTypeDef] = [
                    {"Put": cast("PutTypeDef", put)},
                    {
                        "Put": {
                            "TableName": self._table,
                            "Item": outbox,
                            "ConditionExpression": "attribute_not_exists(#pk)",
                            "ExpressionAttributeNames": {"#pk": keys.PK},
                        }
                    },
                ]
                self._client.transact_write_items(TransactItems=actions, ClientRequestToken=token)
        except ClientError as exc:
            code = _code(exc)
            if code == "ConditionalCheckFailedException":
                raise VersionConflictError(f"finding {change.id}: stored version is not {expected}") from exc
            if code in ("IdempotentParameterMismatchException", "TransactionInProgressException"):
                # Another evaluator is writing the same version of this finding right now: re-read and re-apply.
                raise VersionConflictError(f"finding {change.id}: {code}") from exc
            if code == "TransactionCanceledException":
                reasons = [r.get("Code") or "None" for r in exc.response.get("CancellationReasons", [])]
                if reasons and reasons[0] in ("ConditionalCheckFailed", "TransactionConflict"):
                    raise VersionConflictError(f"finding {change.id}: {reasons[0]}") from exc
                raise FindingsStoreError(f"finding {change.id}: transaction cancelled: {', '.join(reasons)}") from exc
            raise
        return change.state.model_copy(update={"version": version})

    def apply(
        self, change: StateChange, recompute: Callable[[FindingState | None], StateChange | None]
    ) -> StateChange | None:
        """:meth:`save` ``change``; on a version conflict re-read the finding and save ``recompute(stored)``.

        ``recompute`` re-applies the caller's transition to the state stored now (it may return None: nothing
        left to do). Returns the change as stored (its state carries the new version), or None. Raises
        :class:`ConcurrencyError` after ``max_conflict_retries`` conflicts in a row.
        """
        current: StateChange | None = change
        conflicts = 0
        while current is not None:
            try:
                stored = self.save(current)
            except VersionConflictError as exc:
                self.conflicts += 1
                conflicts += 1
                log.info("finding_write_conflict", finding_id=current.id, conflicts=conflicts)
                if conflicts > self._max_conflict_retries:
                    raise ConcurrencyError(
                        f"finding {change.id}: still conflicting after {self._max_conflict_retries} retries"
                    ) from exc
                if conflicts > 1:
                    self._backoff(conflicts - 1)
                current = recompute(self.get(current.id))
                continue
            return StateChange(current.previous, stored, current.event, current.muted_event)
        return None

    # ------------------------------------------------------------------------------------------------ outbox

    def _outbox_item(self, event: FindingEvent) -> dict[str, AttributeValueTypeDef]:
        fid = event.finding.id
        created = _created(event.at)
        return {
            keys.PK: _s(keys.outbox_pk(fid)),
            keys.SK: _s(keys.outbox_sk(created, fid, event.kind.value)),
            "finding_id": _s(fid),
            "event": _s(event.kind.value),
            "created": _s(created),
            "attempts": _n(0),
            "payload": _s(event.model_dump_json()),
        }

    def enqueue(self, event: FindingEvent) -> OutboxEntry:
        """Queue one event on its own (state changes queue theirs through :meth:`save`, atomically)."""
        item = self._outbox_item(event)
        self._client.put_item(
            TableName=self._table,
            Item=item,
            ConditionExpression="attribute_not_exists(#pk)",
            ExpressionAttributeNames={"#pk": keys.PK},
        )
        return self._parse_entry(item)

    @staticmethod
    def _parse_entry(item: dict[str, Any]) -> OutboxEntry:
        return OutboxEntry(
            pk=item[keys.PK]["S"],
            sk=item[keys.SK]["S"],
            finding_id=item["finding_id"]["S"],
            event=FindingEvent.model_validate_json(item["payload"]["S"]),
            created=item["created"]["S"],
            attempts=int(item.get("attempts", {}).get("N", "0")),
            last_error=item.get("last_error", {}).get("S"),
            publishing="publishing_at" in item,
            published="published_at" in item,
            digested="digested_at" in item,
            digest_id=item.get("digest_id", {}).get("S"),
        )

    def _shard(self, shard: int, limit: int) -> Iterator[OutboxEntry]:
        params: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": keys.PK},
            "ExpressionAttributeValues": {":pk": _s(f"OUTBOX#{shard}")},
            "ConsistentRead": True,
            "ScanIndexForward": True,
            "Limit": limit,
        }
        for n, item in enumerate(self._query(params)):
            if n >= limit:
                return
            try:
                yield self._parse_entry(item)
            except (KeyError, ValueError) as exc:
                # Never dropped: it stays in the table for an operator; it only cannot be published.
                log.error("outbox_entry_unreadable", pk=item.get(keys.PK), sk=item.get(keys.SK), error=str(exc))

    def pending(self, limit: int = 100) -> list[OutboxEntry]:
        """Up to ``limit`` queued publishes over all outbox shards, oldest first."""
        if limit <= 0:
            return []
        shards = [self._shard(s, limit) for s in range(keys.OUTBOX_SHARDS)]
        merged = heapq.merge(*shards, key=lambda e: e.sk)
        return [entry for _, entry in zip(range(limit), merged, strict=False)]

    def mark_sent(self, entry: OutboxEntry) -> None:
        """Delete a published entry."""
        self._client.delete_item(TableName=self._table, Key={keys.PK: _s(entry.pk), keys.SK: _s(entry.sk)})

    def _update_entry(
        self, entry: OutboxEntry, update: str, names: dict[str, str], values: dict[str, AttributeValueTypeDef]
    ) -> None:
        """Apply ``update`` to the entry if it is still there (another publisher may have removed it meanwhile);
        any other error propagates."""
        params: UpdateItemInputTypeDef = {
            "TableName": self._table,
            "Key": {keys.PK: _s(entry.pk), keys.SK: _s(entry.sk)},
            "UpdateExpression": update,
            "ConditionExpression": "attribute_exists(#pk)",
            "ExpressionAttributeNames": {**names, "#pk": keys.PK},
        }
        if values:  # DynamoDB refuses an empty map
            params["ExpressionAttributeValues"] = values
        try:
            self._client.update_item(**params)
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
            log.info("outbox_entry_gone", sk=entry.sk)

    def _stamp(self, entry: OutboxEntry, attribute: str, now: datetime) -> None:
        """Set ``attribute`` to ``now`` on the entry if it is still there."""
        self._update_entry(entry, "SET #m = :t", {"#m": attribute}, {":t": _s(isoformat_z(now))})

    def mark_publishing(self, entry: OutboxEntry, now: datetime) -> None:
        """Record that a publish of the entry starts (a later run that finds it unpublished may repeat it)."""
        self._stamp(entry, "publishing_at", now)

    def mark_published(self, entry: OutboxEntry, now: datetime) -> None:
        """Record that SNS accepted the entry's message (it waits for the run digest that carries it)."""
        self._stamp(entry, "published_at", now)

    def mark_digested(self, entry: OutboxEntry, now: datetime) -> None:
        """Record that an accepted run digest carried the entry (when deleting it failed)."""
        self._stamp(entry, "digested_at", now)

    def mark_digesting(self, entry: OutboxEntry, digest_id: str, now: datetime) -> None:
        """Record, before the run digest ``digest_id`` listing the entry is sent, that it is being sent."""
        self._update_entry(
            entry,
            "SET #d = :d, #t = :t",
            {"#d": "digest_id", "#t": "digesting_at"},
            {":d": _s(digest_id), ":t": _s(isoformat_z(now))},
        )

    def clear_digesting(self, entry: OutboxEntry) -> None:
        """Forget the digest mark of an entry whose digest was refused (the next digest lists it, as a first send)."""
        self._update_entry(entry, "REMOVE #d, #t", {"#d": "digest_id", "#t": "digesting_at"}, {})

    @staticmethod
    def _digest_key(digest_id: str) -> dict[str, AttributeValueTypeDef]:
        return {keys.PK: _s(f"{_DIGEST_PK_PREFIX}{digest_id}"), keys.SK: _s(_DIGEST_SK)}

    def record_digest(self, digest_id: str, findings: int, now: datetime) -> None:
        """Record that SNS accepted the run digest ``digest_id`` (one write: its entries need only be removed)."""
        expires = int((utc(now) + _DIGEST_RETENTION).timestamp())
        item = self._digest_key(digest_id) | {
            "accepted_at": _s(isoformat_z(now)),
            "findings": _n(findings),
            keys.TTL_ATTR: _n(expires),
        }
        self._client.put_item(TableName=self._table, Item=item)

    def digest_accepted(self, digest_id: str) -> bool:
        """Whether :meth:`record_digest` recorded the digest (strongly consistent)."""
        resp = self._client.get_item(TableName=self._table, Key=self._digest_key(digest_id), ConsistentRead=True)
        return "Item" in resp

    def mark_failed(self, entry: OutboxEntry, error: str, now: datetime, *, maybe_sent: bool = False) -> None:
        """Count a failed publish on the entry and keep it for the next run; ``maybe_sent`` (the answer was lost, not
        the request) keeps the ``publishing_at`` mark, so that the next publish is counted as a possible repeat."""
        clear = "" if maybe_sent else " REMOVE publishing_at"
        self._update_entry(
            entry,
            "SET #a = if_not_exists(#a, :zero) + :one, #e = :e, #t = :t" + clear,
            {"#a": "attempts", "#e": "last_error", "#t": "last_attempt_at"},
            {
                ":zero": _n(0),
                ":one": _n(1),
                ":e": _s(error[:_MAX_ERROR_CHARS] or "unknown error"),
                ":t": _s(isoformat_z(now)),
            },
        )

    # ------------------------------------------------------------------------------------------------ cursor

    def _cursor_key(self) -> dict[str, AttributeValueTypeDef]:
        return {keys.PK: _s(keys.CURSOR_PK), keys.SK: _s(keys.EVALUATOR_CURSOR_SK)}

    def get_cursor(self) -> int | None:
        """The start (epoch seconds) of the last evaluated window, or None before the first evaluation."""
        resp = self._client.get_item(TableName=self._table, Key=self._cursor_key(), ConsistentRead=True)
        item = resp.get("Item")
        if not item or "last_window_start" not in item:
            return None
        return int(item["last_window_start"]["N"])

    def advance_cursor(self, window_start: int, *, expected: int | None, now: datetime) -> bool:
        """Move the cursor from ``expected`` (None: unset) to ``window_start``.

        Conditional: returns False, changing nothing, when the stored cursor is no longer ``expected`` (another
        evaluator moved it first).
        """
        if expected is not None and window_start <= expected:
            raise ValueError(f"the cursor only moves forward ({expected} -> {window_start})")
        values: dict[str, AttributeValueTypeDef] = {":new": _n(window_start), ":t": _s(isoformat_z(now))}
        if expected is None:
            condition = "attribute_not_exists(#c)"
        else:
            condition = "#c = :old"
            values[":old"] = _n(expected)
        try:
            self._client.update_item(
                TableName=self._table,
                Key=self._cursor_key(),
                UpdateExpression="SET #c = :new, #t = :t",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#c": "last_window_start", "#t": "updated_at"},
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

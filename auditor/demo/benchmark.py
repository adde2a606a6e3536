"""Benchmark records: a stream of realistic data events over exactly the requested number of distinct partition keys.

:func:`benchmark_records` streams them (nothing is accumulated), :func:`write_large_log_file` writes them as one gzip
log file, what ``python -m benchmarks.ingest`` reads (through ``python -m auditor.demo.generator --benchmark``).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from auditor.demo.records import (
    CONDITIONAL_FAILED_ERROR,
    DEFAULT_ACCOUNT,
    DEFAULT_REGION,
    DEFAULT_START,
    PTEE_ERROR,
    REDACTED,
    THROTTLING_ERROR,
    TLS12,
    TLS13,
    UA_BOTO3,
    UA_GO,
    Error,
    Principal,
    Record,
    RecordFactory,
    delete_item_params,
    get_item_params,
    private_ips,
    put_item_params,
    query_params,
    update_item_params,
)
from auditor.demo.trail import write_log_file

_BENCH_TABLES: Final = ("Accounts", "Carts", "DeviceEvents", "Profiles")
_MASK48: Final = (1 << 48) - 1
_ODD48: Final = 0x9E3779B97F4B  # odd: multiplication by it is a bijection modulo 2**48
_PERM10: Final = 2654435761  # coprime with 10: a bijection modulo 10**10

_BENCH_MIX: Final = (
    (0.36, "GetItem"),
    (0.50, "PutItem"),
    (0.66, "UpdateItem"),
    (0.69, "DeleteItem"),
    (0.83, "Query"),
    (0.84, "Scan"),
    (0.88, "BatchGetItem"),
    (0.92, "BatchWriteItem"),
    (0.94, "TransactWriteItems"),
    (1.00, "ExecuteStatement"),
)
_KEYED_SINGLE: Final = ("GetItem", "PutItem", "UpdateItem")


class _KeyPicker:
    """Hands out key ids so that exactly ``distinct`` of them appear over ``n`` records.

    A new id is drawn with probability unseen/remaining; when the unseen ids equal the remaining records the
    caller must use a single-key operation with a new id (``forced``).
    """

    __slots__ = ("distinct", "n", "next_new", "rng")

    def __init__(self, rng: random.Random, n: int, distinct: int) -> None:
        self.rng = rng
        self.n = n
        self.distinct = distinct
        self.next_new = 0

    def forced(self, i: int) -> bool:
        return self.distinct - self.next_new >= self.n - i

    def pick(self, i: int) -> int:
        unseen = self.distinct - self.next_new
        if unseen > 0 and (self.next_new == 0 or self.rng.random() * (self.n - i) < unseen):
            self.next_new += 1
            return self.next_new - 1
        return self.rng.randrange(self.next_new)


def _bench_key(k: int, salt: int, ts_iso: str) -> tuple[str, dict[str, Any]]:
    """(table, key) of key id ``k``: distinct ids give distinct partition keys, spread over four tables."""
    table = _BENCH_TABLES[k & 3]
    if table == "Accounts":
        return table, {"pk": f"ACCOUNT#{(k * _PERM10 + salt) % 10**10:010d}", "sk": "META"}
    if table == "Carts":
        low = (k * _ODD48 + salt) & _MASK48
        high = (k * 0x5851F42D4C957F2D + salt) & 0xFFFFFFFFFFFFFFFF
        return table, {"cartId": str(uuid.UUID(int=(high << 64) | low, version=4))}
    if table == "DeviceEvents":
        return table, {"deviceId": f"DEVICE#{(k * _PERM10 + salt) % 10**10:010d}", "eventTs": ts_iso}
    return table, {"userId": f"USER#{(k * _PERM10 + salt) % 10**10:010d}"}


_BENCH_ATTRS: Final = {
    "Accounts": ("pk", "sk", "name", "plan", "owner", "createdAt", "billingAddress", "limits"),
    "Carts": ("cartId", "userId", "lines", "total", "currency", "updatedAt", "expiresAt"),
    "DeviceEvents": ("deviceId", "eventTs", "type", "payload", "firmware", "ttl"),
    "Profiles": ("userId", "email", "displayName", "avatarUrl", "locale", "preferences", "createdAt"),
}


_Params = tuple[dict[str, Any], Sequence[str]]


def _batch_get_params(picker: _KeyPicker, salt: int, i: int, ts_iso: str, rand: Callable[[], float]) -> _Params:
    """``requestParameters`` and tables of a BatchGetItem over 2 to 5 keys (key ids picked for record ``i``)."""
    by_table: dict[str, list[dict[str, Any]]] = {}
    for _ in range(2 + int(rand() * 4)):
        table, key = _bench_key(picker.pick(i), salt, ts_iso)
        by_table.setdefault(table, []).append(key)
    return {"requestItems": {t: {"keys": ks} for t, ks in by_table.items()}}, tuple(by_table)


def _batch_write_params(picker: _KeyPicker, salt: int, i: int, ts_iso: str, rand: Callable[[], float]) -> _Params:
    """``requestParameters`` and tables of a BatchWriteItem of 2 to 4 puts (80 %) and deletes."""
    writes: dict[str, list[dict[str, Any]]] = {}
    for _ in range(2 + int(rand() * 3)):
        table, key = _bench_key(picker.pick(i), salt, ts_iso)
        if rand() < 0.8:
            request: dict[str, Any] = {"putRequest": {"key": key, "item": list(_BENCH_ATTRS[table])}}
        else:
            request = {"deleteRequest": {"key": key}}
        writes.setdefault(table, []).append(request)
    return {"requestItems": writes, "returnConsumedCapacity": "TOTAL"}, tuple(writes)


def _transact_write_params(picker: _KeyPicker, salt: int, i: int, ts_iso: str, rand: Callable[[], float]) -> _Params:
    """``requestParameters`` and tables of a TransactWriteItems of 2 or 3 puts and updates, in the AWS sample's mixed
    key casing."""
    items: list[dict[str, Any]] = []
    tables: list[str] = []
    for j in range(2 + int(rand() * 2)):
        table, key = _bench_key(picker.pick(i), salt, ts_iso)
        if table not in tables:
            tables.append(table)
        if j % 2:
            items.append(
                {
                    "operation": "Update",
                    "TableName": table,
                    "Key": key,
                    "updateExpression": "SET #v = #v + :one",
                    "ExpressionAttributeNames": {"#v": "version"},
                }
            )
        else:
            items.append(
                {
                    "operation": "Put",
                    "tableName": table,
                    "key": key,
                    "items": list(_BENCH_ATTRS[table]),
                    "conditionExpression": "attribute_not_exists(#v)",
                    "expressionAttributeNames": {"#v": "version"},
                }
            )
    return {"requestItems": items, "returnConsumedCapacity": "TOTAL"}, tables


def benchmark_records(
    n: int,
    distinct_keys: int,
    seed: int = 1,
    start: datetime = DEFAULT_START,
    *,
    account: str = DEFAULT_ACCOUNT,
    region: str = DEFAULT_REGION,
    rate: float = 250.0,
) -> Iterator[Record]:
    """Stream ``n`` records (about 1.2 KB each serialised) whose keys use exactly ``distinct_keys`` partition keys.

    The operation mix is mostly single-item calls, with Queries, batches, transactions, PartiQL and rare Scans,
    and about 1 % errors. Records are generated lazily; nothing is accumulated.
    """
    if n < 0 or distinct_keys < 0:
        raise ValueError("n and distinct_keys must be >= 0")
    if distinct_keys > n:
        raise ValueError(f"distinct_keys ({distinct_keys}) cannot exceed n ({n})")
    if n > 0 and distinct_keys == 0:
        raise ValueError("distinct_keys must be >= 1 when n > 0")
    rng = random.Random(seed)
    f = RecordFactory(rng, account, region)
    salt = rng.getrandbits(32)
    # Lambda functions (session name = function name) with compact user agents: ~1.2 KB per record.
    principals = [
        f.role(name, [f"{name}-fn"], ua, private_ips(rng, 1, i + 1), tls)
        for i, (name, ua, tls) in enumerate(
            (
                ("account-service", UA_BOTO3, TLS13),
                ("cart-api", UA_GO, TLS13),
                ("telemetry-ingest", UA_GO, TLS13),
                ("profile-service", UA_BOTO3, TLS13),
                ("checkout", UA_BOTO3, TLS12),
                ("notifications", UA_GO, TLS13),
            )
        )
    ]
    # Two legacy workers still on IAM users with long-term keys (a quarter of the traffic).
    principals += [f.user("batch-importer", UA_GO, "10.7.3.21"), f.user("legacy-sync", UA_BOTO3, "10.7.4.9")]
    analyst = f.role("analytics", ["glue-job"], UA_BOTO3, ["198.51.100.88"])
    picker = _KeyPicker(rng, n, distinct_keys)
    t0 = start.timestamp()
    step = 1.0 / rate if rate > 0 else 0.0
    rand = rng.random
    choose: Callable[[Sequence[Principal]], Principal] = rng.choice
    record = f.record
    for i in range(n):
        ts = t0 + i * step + rand() * step
        ts_iso = f.event_time(ts)
        p = choose(principals)
        if picker.forced(i):
            op = _KEYED_SINGLE[i % 3]
        else:
            r = rand()
            op = next(name for limit, name in _BENCH_MIX if r < limit)
        error: Error | None = None
        e = rand()
        if e < 0.004:
            error = PTEE_ERROR
        elif e < 0.006:
            error = THROTTLING_ERROR
        if op in ("GetItem", "PutItem", "UpdateItem", "DeleteItem"):
            table, key = _bench_key(picker.pick(i), salt, ts_iso)
            if op == "GetItem":
                yield record(ts, p, op, get_item_params(table, key, consistent=rand() < 0.2), (table,), True, error)
            elif op == "PutItem":
                params = put_item_params(table, key, _BENCH_ATTRS[table])
                yield record(ts, p, op, params, (table,), False, error)
            elif op == "UpdateItem":
                condition = "attribute_exists(#v)" if rand() < 0.3 else None
                if error is None and condition is not None and rand() < 0.05:
                    error = CONDITIONAL_FAILED_ERROR
                params = update_item_params(
                    table, key, "SET #v = #v + :one, updatedAt = :now", {"#v": "version"}, condition
                )
                yield record(ts, p, op, params, (table,), False, error)
            else:
                yield record(ts, p, op, delete_item_params(table, key), (table,), False, error)
        elif op == "Query":
            table = _BENCH_TABLES[int(rand() * 4)]
            attr = _BENCH_ATTRS[table][0]
            params = query_params(table, "#k = :k", names={"#k": attr}, limit=50, forward=rand() < 0.5)
            yield record(ts, p, op, params, (table,), True, error)
        elif op == "Scan":
            table = _BENCH_TABLES[int(rand() * 4)]
            params = {"tableName": table, "limit": 1000, "segment": int(rand() * 8), "totalSegments": 8}
            yield record(ts, analyst, op, params, (table,), True, error)
        elif op == "BatchGetItem":
            params, tables = _batch_get_params(picker, salt, i, ts_iso, rand)
            yield record(ts, p, op, params, tables, True, error)
        elif op == "BatchWriteItem":
            params, tables = _batch_write_params(picker, salt, i, ts_iso, rand)
            yield record(ts, p, op, params, tables, False, error)
        elif op == "TransactWriteItems":
            params, tables = _transact_write_params(picker, salt, i, ts_iso, rand)
            yield record(ts, p, op, params, tables, False, error)
        else:  # ExecuteStatement: a key lookup, sometimes with a redacted non-key condition
            table, key = _bench_key(picker.pick(i), salt, ts_iso)
            where = " AND ".join(f"{a} = '{v}'" for a, v in key.items())
            stmt = f'SELECT * FROM "{table}" WHERE {where}'
            if rand() < 0.3:
                stmt += f" AND status = {REDACTED}"
            yield record(ts, p, op, {"statement": stmt}, (table,), False, error)


def write_large_log_file(path: Path, n: int, distinct_keys: int, seed: int = 1) -> int:
    """Stream :func:`benchmark_records` into one gzip log file without holding the records; returns ``n``."""
    return write_log_file(benchmark_records(n, distinct_keys, seed=seed), Path(path), gz=True)

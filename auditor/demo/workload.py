"""The demo workload: realistic traffic on six tables, with planted problems each detector should find.

:func:`demo_workload` plants a hot key and key-range throttling on ``Orders``, scans on ``Sessions``, a
low-cardinality key on ``Jobs``, rejected oversize writes on ``Documents``, a PartiQL full scan on ``Catalog``, and
keeps ``Users`` clean, over background noise that must not produce findings. Everything is driven by
``random.Random(seed)`` and the ``start`` passed in (:mod:`auditor.demo.records` builds the records). The table of
planted problems, with their counts, is in docs/demo.md.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any, Final

from auditor.demo.records import (
    CONDITIONAL_FAILED_ERROR,
    DEFAULT_ACCOUNT,
    DEFAULT_REGION,
    ITEM_SIZE_ERROR,
    ITEM_SIZE_UPDATE_ERROR,
    PTEE,
    PTEE_ERROR,
    REDACTED,
    THROTTLING_ERROR,
    TLS12,
    TXN_CANCELED_ERROR,
    UA_BOTO3,
    UA_BOTO3_LAMBDA,
    UA_CLI,
    UA_GO,
    UA_JAVA,
    UA_NODE,
    Error,
    Principal,
    Record,
    RecordFactory,
    delete_item_params,
    get_item_params,
    iso_time,
    private_ips,
    put_item_params,
    query_params,
    update_item_params,
)


@dataclass(frozen=True, slots=True)
class PlantedProblem:
    """One problem :func:`demo_workload` plants, and the finding it should produce."""

    table: str
    kind: str  # a FindingKind value
    severity: str  # the severity we expect (a hint: the detectors decide)
    key: dict[str, Any] | None = None
    principal: str | None = None
    operation: str | None = None
    note: str = ""


def _role_arn(name: str, account: str = DEFAULT_ACCOUNT) -> str:
    return f"arn:aws:iam::{account}:role/{name}"


#: What :func:`demo_workload` plants (account 111122223333). ``Users`` must produce no finding at all.
PLANTED_PROBLEMS: Final[tuple[PlantedProblem, ...]] = (
    PlantedProblem(
        "Orders", "hot_key", "high", key={"pk": "CUSTOMER#42"}, note="35% of key-identified requests, burst"
    ),
    PlantedProblem(
        "Orders",
        "throttling",
        "high",
        key={"pk": "CUSTOMER#42"},
        note=f"{PTEE} on the hot key (cause key_range)",
    ),
    PlantedProblem(
        "Sessions",
        "scan",
        "high",
        principal=_role_arn("session-cleaner"),
        operation="Scan",
        note="parallel scan (4 segments) every ~5 s",
    ),
    PlantedProblem("Sessions", "scan", "low", principal=f"arn:aws:iam::{DEFAULT_ACCOUNT}:user/alice", operation="Scan"),
    PlantedProblem("Jobs", "low_cardinality_key", "medium", note="partition key status: 4 distinct values"),
    PlantedProblem("Documents", "item_size_exceeded", "high", key={"docId": "DOC#7"}, note="UpdateItem x5"),
    PlantedProblem("Documents", "item_size_exceeded", "medium", key={"docId": "DOC#913"}, note="PutItem x2"),
    PlantedProblem(
        "Catalog",
        "scan",
        "medium",
        principal=_role_arn("reporting"),
        operation="ExecuteStatement",
        note='SELECT * FROM "Catalog" WHERE price > ***(Redacted), every ~60 s',
    ),
)


#: Tables of :func:`demo_workload` that must produce no finding.
HEALTHY_TABLES: Final = ("Users",)


@dataclass(frozen=True, slots=True)
class Workload:
    """The knobs of :func:`generate_workload`. Rates are requests per second of event time.

    The defaults keep a one-hour demo under ~60k records.
    """

    account: str = DEFAULT_ACCOUNT
    region: str = DEFAULT_REGION
    hours: float = 1.0
    seed: int = 7
    # Orders: healthy key-identified traffic, plus the hot key.
    orders_rate: float = 4.0
    orders_customers: int = 2000
    orders_query_rate: float = 0.6
    hot_customer: int = 42
    hot_key_share: float = 0.35
    hot_key_burst_fraction: float = 0.9
    hot_key_burst_rps: float = 200.0
    hot_key_burst_at: float = 0.3  # fraction of the window where the burst starts
    hot_key_throttled: float = 0.06  # fraction of the burst requests that fail with PTEE
    # Sessions.
    sessions_rate: float = 1.2
    sessions_pool: int = 3000
    cleaner_interval_s: float = 5.0
    cleaner_segments: int = 4
    alice_scans: int = 2
    # Jobs.
    jobs_rate: float = 2.5
    jobs_throttled: float = 0.005
    # Documents.
    documents_rate: float = 0.4
    documents: int = 300
    doc7_appends_per_hour: float = 30.0
    doc7_failures: int = 5
    doc913_failures: int = 2
    # Catalog.
    catalog_rate: float = 1.2
    catalog_products: int = 1000
    reporting_interval_s: float = 60.0
    # Users.
    users_rate: float = 2.0
    users: int = 5000

    @property
    def seconds(self) -> float:
        """The length of the window in seconds."""
        return self.hours * 3600.0


# ---------------------------------------------------------------------------------------------------------------
# Building the workload
# ---------------------------------------------------------------------------------------------------------------


_Out = list[tuple[float, Record]]

_ORDER_ATTRS: Final = ("pk", "sk", "status", "createdAt", "total", "currency", "lineItems", "shippingAddress")
_ORDER_STATUSES: Final = ("PLACED", "PAID", "PACKED", "SHIPPED", "DELIVERED", "CANCELLED")
_JOB_STATUSES: Final = ("PENDING", "RUNNING", "DONE", "FAILED")
_JOB_WEIGHTS: Final = (0.40, 0.30, 0.25, 0.05)
#: The operations whose records are read-only.
_READS: Final = frozenset({"GetItem", "Query"})
#: One kind of call on a key: the cumulative share of draws up to which it is made, the operation and its parameters.
_Call = tuple[float, str, Callable[[dict[str, Any]], dict[str, Any]]]


def _times(rng: random.Random, n: int, t0: float, span: float) -> list[float]:
    return [t0 + rng.random() * span for _ in range(n)]


def _count(rate: float, seconds: float) -> int:
    return max(0, round(rate * seconds))


def _task_ids(rng: random.Random, n: int) -> list[str]:
    return [format(rng.getrandbits(128), "032x") for _ in range(n)]


def _instance_ids(rng: random.Random, n: int) -> list[str]:
    return ["i-0" + format(rng.getrandbits(64), "016x") for _ in range(n)]


class _Demo:
    """Builds the demo workload table by table into one list of (time, record)."""

    def __init__(self, w: Workload, start: datetime) -> None:
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        self.w = w
        self.t0 = start.timestamp()
        self.span = w.seconds
        self.rng = random.Random(w.seed)
        self.f = RecordFactory(self.rng, w.account, w.region)
        self.out: _Out = []
        f, rng = self.f, self.rng
        self.order_service = f.role("order-service", _task_ids(rng, 3), UA_JAVA, private_ips(rng, 3, 1), TLS12)
        self.fulfillment = f.role("fulfillment-worker", _task_ids(rng, 2), UA_GO, private_ips(rng, 2, 1))
        self.session_api = f.role("session-api", ["session-api"], UA_NODE, ["198.51.100.23"])
        self.cleaner = f.role("session-cleaner", ["session-cleaner"], UA_BOTO3_LAMBDA, ["198.51.100.77"])
        self.alice = f.user("alice", UA_CLI, "203.0.113.45")
        self.job_worker = f.role("job-worker", _instance_ids(rng, 4), UA_BOTO3, private_ips(rng, 4, 2))
        self.doc_service = f.role("document-service", ["document-service"], UA_NODE, ["198.51.100.140"])
        self.catalog_service = f.role("catalog-service", _task_ids(rng, 2), UA_JAVA, private_ips(rng, 2, 3), TLS12)
        self.reporting = f.role("reporting", ["catalog-report"], UA_BOTO3_LAMBDA, ["198.51.100.201"])
        self.user_service = f.role("user-service", ["user-service"], UA_BOTO3_LAMBDA, ["198.51.100.9"])

    def emit(
        self,
        ts: float,
        p: Principal,
        name: str,
        params: dict[str, Any],
        tables: Sequence[str],
        read_only: bool,
        error: Error | None = None,
    ) -> None:
        self.out.append((ts, self.f.record(ts, p, name, params, tables, read_only, error)))

    def one_of(
        self,
        ts: float,
        p: Principal,
        table: str,
        key: dict[str, Any],
        calls: Sequence[_Call],
        error: Error | None = None,
    ) -> None:
        """One call on ``key`` of ``table``: the first of ``calls`` whose share the draw is below (the last: 1.0)."""
        r = self.rng.random()
        _, name, params = next(call for call in calls if r < call[0])
        self.emit(ts, p, name, params(key), (table,), name in _READS, error)

    def past_iso(self, max_days: float) -> str:
        return iso_time(self.t0 - self.rng.uniform(0.0, max_days * 86400.0))

    def run(self) -> list[Record]:
        self.orders()
        self.sessions()
        self.jobs()
        self.documents()
        self.catalog()
        self.users()
        self.out.sort(key=itemgetter(0))
        return [rec for _, rec in self.out]

    # -- Orders: healthy traffic plus the hot key CUSTOMER#42 -------------------------------------------------

    def _order_sk(self) -> str:
        if self.rng.random() < 0.6:
            return "ORDER#" + self.f.uuid()
        return "ORDER#" + self.past_iso(700)

    def _orders_keyed(self, ts: float, key: dict[str, Any], error: Error | None = None) -> None:
        rng, p = self.rng, self.order_service
        r = rng.random()
        if r < 0.5:
            projection = "#s, total, createdAt" if rng.random() < 0.3 else None
            params = get_item_params("Orders", key, consistent=rng.random() < 0.2, projection=projection)
            if projection is not None:
                params["expressionAttributeNames"] = {"#s": "status"}
            self.emit(ts, p, "GetItem", params, ("Orders",), True, error)
        elif r < 0.7:
            params = put_item_params("Orders", key, _ORDER_ATTRS, "attribute_not_exists(pk)")
            self.emit(ts, p, "PutItem", params, ("Orders",), False, error)
        else:
            if rng.random() < 0.5:
                params = update_item_params(
                    "Orders", key, "SET #s = :s, updatedAt = :now", {"#s": "status"}, "attribute_exists(pk)"
                )
            else:
                params = update_item_params(
                    "Orders", key, "SET #s = :s, version = version + :one", {"#s": "status"}, "version = :expected"
                )
                if error is None and rng.random() < 0.03:
                    error = CONDITIONAL_FAILED_ERROR
            self.emit(ts, p, "UpdateItem", params, ("Orders",), False, error)

    def _orders_hot(self, ts: float, sks: Sequence[str], weights: Sequence[float], error: Error | None) -> None:
        rng, p = self.rng, self.order_service
        key = {"pk": f"CUSTOMER#{self.w.hot_customer}", "sk": rng.choices(sks, weights)[0]}
        update = "SET #s = :s, updatedAt = :now ADD loyaltyPoints :p"
        calls: tuple[_Call, ...] = (
            (0.3, "GetItem", lambda key: get_item_params("Orders", key)),
            (0.5, "PutItem", lambda key: put_item_params("Orders", key, _ORDER_ATTRS)),
            (1.0, "UpdateItem", lambda key: update_item_params("Orders", key, update, {"#s": "status"}, None)),
        )
        self.one_of(ts, p, "Orders", key, calls, error)

    def orders(self) -> None:
        w, rng, t0, span = self.w, self.rng, self.t0, self.span
        # Healthy traffic over ~2,000 customers (mild skew, no key above ~0.3 %).
        baseline = _count(w.orders_rate, span)
        for ts in _times(rng, baseline, t0, span):
            customer = int(w.orders_customers * rng.random() ** 1.2) + 1
            self._orders_keyed(ts, {"pk": f"CUSTOMER#{customer}", "sk": self._order_sk()})
        # GSI and base-table Queries: efficient, not key-identified (no values in CloudTrail).
        for ts in _times(rng, _count(w.orders_query_rate, span), t0, span):
            if rng.random() < 0.7:
                params = query_params(
                    "Orders",
                    "#s = :s AND createdAt > :since",
                    index="ByStatus",
                    names={"#s": "status"},
                    limit=100,
                    forward=False,
                )
                self.emit(ts, self.fulfillment, "Query", params, ("Orders",), True)
            else:
                params = query_params("Orders", "pk = :pk AND begins_with(sk, :prefix)", limit=20, forward=False)
                self.emit(ts, self.order_service, "Query", params, ("Orders",), True)
        # The hot key: hot / (hot + baseline) == hot_key_share.
        hot = round(baseline * w.hot_key_share / (1.0 - w.hot_key_share))
        sks = [self._order_sk() for _ in range(20)]
        weights = [1.0 / (i + 1) for i in range(len(sks))]
        burst = round(hot * w.hot_key_burst_fraction)
        burst_len = burst / w.hot_key_burst_rps if w.hot_key_burst_rps > 0 else 0.0
        burst_len = min(burst_len, span * 0.5)
        burst_t0 = t0 + span * w.hot_key_burst_at
        for ts in _times(rng, hot - burst, t0, span):
            self._orders_hot(ts, sks, weights, None)
        throttled = PTEE_ERROR
        for ts in _times(rng, burst, burst_t0, burst_len):
            self._orders_hot(ts, sks, weights, throttled if rng.random() < w.hot_key_throttled else None)

    # -- Sessions: the cleaner's hot-path parallel Scan, alice's two scans ------------------------------------

    def sessions(self) -> None:
        w, rng, t0, span = self.w, self.rng, self.t0, self.span
        pool = [{"sessionId": self.f.uuid()} for _ in range(w.sessions_pool)]
        api = self.session_api
        names = ("sessionId", "userId", "expiresAt", "createdAt", "device", "roles")
        calls: tuple[_Call, ...] = (
            (0.7, "GetItem", lambda key: get_item_params("Sessions", key, consistent=True)),
            (0.85, "PutItem", lambda key: put_item_params("Sessions", key, names)),
            (
                0.95,
                "UpdateItem",
                lambda key: update_item_params("Sessions", key, "SET expiresAt = :exp, lastSeen = :now"),
            ),
            (1.0, "DeleteItem", lambda key: delete_item_params("Sessions", key)),
        )
        for ts in _times(rng, _count(w.sessions_rate, span), t0, span):
            self.one_of(ts, api, "Sessions", dict(rng.choice(pool)), calls)
        # session-cleaner: every ~5 s, a parallel scan of 4 segments, then a batch delete of what expired.
        ts = t0 + rng.uniform(0.0, w.cleaner_interval_s)
        end = t0 + span
        while ts < end:
            for segment in range(w.cleaner_segments):
                pages = 2 if rng.random() < 0.3 else 1
                for page in range(pages):
                    params = {
                        "tableName": "Sessions",
                        "projectionExpression": "sessionId, #e",
                        "filterExpression": "#e < :now",
                        "expressionAttributeNames": {"#e": "expiresAt"},
                        "segment": segment,
                        "totalSegments": w.cleaner_segments,
                    }
                    if page:
                        params["exclusiveStartKey"] = dict(rng.choice(pool))
                    at = min(ts + segment * 0.05 + page * 0.4 + rng.random() * 0.1, end - 0.001)
                    self.emit(at, self.cleaner, "Scan", params, ("Sessions",), True)
            if rng.random() < 0.3:
                deletes = [{"deleteRequest": {"key": dict(rng.choice(pool))}} for _ in range(rng.randint(1, 25))]
                params = {"requestItems": {"Sessions": deletes}, "returnConsumedCapacity": "TOTAL"}
                self.emit(min(ts + 1.0, end - 0.001), self.cleaner, "BatchWriteItem", params, ("Sessions",), False)
            ts += w.cleaner_interval_s + rng.uniform(-0.5, 0.5)
        # alice, from her laptop: two ad-hoc scans.
        for i in range(w.alice_scans):
            at = t0 + span * (0.4 + 0.3 * i / max(1, w.alice_scans - 1)) + rng.uniform(0.0, 30.0)
            params = {"tableName": "Sessions", "limit": 25}
            if i % 2:
                params = {
                    "tableName": "Sessions",
                    "filterExpression": "#u = :u",
                    "expressionAttributeNames": {"#u": "userId"},
                }
            self.emit(at, self.alice, "Scan", params, ("Sessions",), True)

    # -- Jobs: partition key "status" with four values ------------------------------------------------------

    def jobs(self) -> None:
        w, rng, t0, span = self.w, self.rng, self.t0, self.span
        p = self.job_worker
        names = ("status", "jobId", "payload", "attempts", "createdAt", "updatedAt", "owner")
        throttled = THROTTLING_ERROR
        calls: tuple[_Call, ...] = (
            (0.05, "Query", lambda _: query_params("Jobs", "#s = :s", names={"#s": "status"}, limit=10)),
            (0.35, "GetItem", lambda key: get_item_params("Jobs", key, consistent=True)),
            (0.6, "PutItem", lambda key: put_item_params("Jobs", key, names, "attribute_not_exists(jobId)")),
            (
                0.8,
                "UpdateItem",
                lambda key: update_item_params("Jobs", key, "SET attempts = attempts + :one, updatedAt = :now"),
            ),
            (1.0, "DeleteItem", lambda key: delete_item_params("Jobs", key, "attribute_exists(jobId)")),
        )
        for ts in _times(rng, _count(w.jobs_rate, span), t0, span):
            status = rng.choices(_JOB_STATUSES, _JOB_WEIGHTS)[0]
            key = {"status": status, "jobId": "JOB#" + self.f.uuid()}
            error = throttled if status == "PENDING" and rng.random() < w.jobs_throttled * 2.5 else None
            self.one_of(ts, p, "Jobs", key, calls, error)

    # -- Documents: DOC#7 grows with list_append until it fails ---------------------------------------------

    def documents(self) -> None:
        w, rng, t0, span = self.w, self.rng, self.t0, self.span
        p = self.doc_service
        names = ("docId", "title", "body", "ownerId", "updatedAt", "tags", "comments")
        calls: tuple[_Call, ...] = (
            (0.6, "GetItem", lambda key: get_item_params("Documents", key)),
            (0.7, "PutItem", lambda key: put_item_params("Documents", key, names)),
            (
                1.0,
                "UpdateItem",
                lambda key: update_item_params("Documents", key, "SET #t = :t, updatedAt = :now", {"#t": "title"}),
            ),
        )
        for ts in _times(rng, _count(w.documents_rate, span), t0, span):
            self.one_of(ts, p, "Documents", {"docId": f"DOC#{rng.randint(1, w.documents)}"}, calls)
        append = "SET #c = list_append(if_not_exists(#c, :empty), :new), updatedAt = :now"
        doc7 = {"docId": "DOC#7"}
        for ts in _times(rng, max(3, _count(w.doc7_appends_per_hour / 3600.0, span)), t0, span * 0.8):
            params = update_item_params("Documents", dict(doc7), append, {"#c": "comments"})
            self.emit(ts, p, "UpdateItem", params, ("Documents",), False)
        too_big = ITEM_SIZE_UPDATE_ERROR
        for i in range(w.doc7_failures):
            ts = t0 + span * (0.82 + 0.17 * i / max(1, w.doc7_failures)) + rng.uniform(0.0, 5.0)
            params = update_item_params("Documents", dict(doc7), append, {"#c": "comments"})
            self.emit(ts, p, "UpdateItem", params, ("Documents",), False, too_big)
        for i in range(w.doc913_failures):
            ts = t0 + span * 0.5 + i * rng.uniform(0.5, 3.0)
            params = put_item_params("Documents", {"docId": "DOC#913"}, names)
            self.emit(ts, p, "PutItem", params, ("Documents",), False, ITEM_SIZE_ERROR)

    # -- Catalog: PartiQL (a full scan by reporting, efficient selects), batches, transactions ---------------

    def _product(self) -> str:
        return f"PRODUCT#{self.rng.randint(1, self.w.catalog_products)}"

    def _catalog_key(self) -> dict[str, Any]:
        return {"pk": self._product(), "sk": "DETAILS" if self.rng.random() < 0.8 else "INVENTORY"}

    def _transaction(self) -> list[dict[str, Any]]:
        """A TransactWriteItems list with the AWS sample's mixed casing."""
        rng = self.rng
        product = self._product()
        items: list[dict[str, Any]] = [
            {
                "operation": "Update",
                "tableName": "Catalog",
                "key": {"pk": product, "sk": "INVENTORY"},
                "updateExpression": "SET #q = #q - :n",
                "ConditionExpression": "#q >= :n",
                "ExpressionAttributeNames": {"#q": "quantity"},
                "returnValuesOnConditionCheckFailure": "ALL_OLD",
            },
            {
                "operation": "Put",
                "tableName": "Catalog",
                "key": {"pk": product, "sk": "RESERVATION#" + self.f.uuid()},
                "items": ["pk", "sk", "quantity", "expiresAt"],
                "conditionExpression": "attribute_not_exists(#sk)",
                "expressionAttributeNames": {"#sk": "sk"},
                "returnValuesOnConditionCheckFailure": "NONE",
            },
        ]
        # Each optional item with its chance, built only when drawn (the draws and the ids keep their order).
        optional: tuple[tuple[float, Callable[[], dict[str, Any]]], ...] = (
            (
                0.5,
                lambda: {
                    "operation": "ConditionCheck",
                    "TableName": "Catalog",
                    "Key": {"pk": product, "sk": "DETAILS"},
                    "ConditionExpression": "#st = :active",
                    "ExpressionAttributeNames": {"#st": "state"},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                },
            ),
            (
                0.3,
                lambda: {
                    "operation": "Delete",
                    "TableName": "Catalog",
                    "key": {"pk": product, "sk": "RESERVATION#" + self.f.uuid()},
                    "conditionExpression": "#e < :now",
                    "expressionAttributeNames": {"#e": "expiresAt"},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                },
            ),
        )
        items.extend(item() for chance, item in optional if rng.random() < chance)
        return items

    def catalog(self) -> None:
        w, rng, t0, span = self.w, self.rng, self.t0, self.span
        p = self.catalog_service
        tables = ("Catalog",)
        for ts in _times(rng, _count(w.catalog_rate, span), t0, span):
            r = rng.random()
            if r < 0.5:
                product = self._product()
                v = rng.random()
                if v < 0.5:
                    stmt = f"SELECT * FROM \"Catalog\" WHERE pk = '{product}' AND sk = 'DETAILS'"
                elif v < 0.8:
                    stmt = f"SELECT title, price FROM \"Catalog\" WHERE pk = '{product}'"
                else:
                    stmt = (
                        f"SELECT * FROM \"Catalog\" WHERE pk = '{product}' AND sk = 'DETAILS' AND inStock = {REDACTED}"
                    )
                self.emit(ts, p, "ExecuteStatement", {"statement": stmt}, tables, False)
            elif r < 0.58:
                stmt = f"UPDATE \"Catalog\" SET price = {REDACTED} WHERE pk = '{self._product()}' AND sk = 'DETAILS'"
                self.emit(ts, p, "ExecuteStatement", {"statement": stmt}, tables, False)
            elif r < 0.78:
                keys = [self._catalog_key() for _ in range(rng.randint(2, 25))]
                params: dict[str, Any] = {
                    "requestItems": {"Catalog": {"keys": keys, "projectionExpression": "pk, sk, title, price"}},
                    "returnConsumedCapacity": "TOTAL",
                }
                self.emit(ts, p, "BatchGetItem", params, tables, True)
            elif r < 0.88:
                writes: list[dict[str, Any]] = []
                for _ in range(rng.randint(2, 25)):
                    if rng.random() < 0.85:
                        names = ["pk", "sk", "title", "price", "category", "updatedAt"]
                        writes.append({"putRequest": {"key": self._catalog_key(), "item": names}})
                    else:
                        writes.append({"deleteRequest": {"key": self._catalog_key()}})
                params = {"requestItems": {"Catalog": writes}, "returnConsumedCapacity": "TOTAL"}
                self.emit(ts, p, "BatchWriteItem", params, tables, False)
            elif r < 0.97:
                params = {
                    "requestItems": self._transaction(),
                    "returnConsumedCapacity": "TOTAL",
                    "returnItemCollectionMetrics": "SIZE",
                }
                error = TXN_CANCELED_ERROR if rng.random() < 0.04 else None
                self.emit(ts, p, "TransactWriteItems", params, tables, False, error)
            else:
                where = f"pk = '{self._product()}' AND sk = 'DETAILS'"
                stmts = [
                    {"statement": f'UPDATE "Catalog" SET price = {REDACTED} WHERE {where}'},
                    {
                        "statement": f"INSERT INTO \"Catalog\" VALUE {{'pk' : {REDACTED}, 'sk' : {REDACTED}, "
                        f"'title' : {REDACTED}, 'price' : {REDACTED}}}"
                    },
                ]
                self.emit(ts, p, "BatchExecuteStatement", {"requestItems": stmts}, tables, False)
        # reporting: a PartiQL full scan every ~60 s.
        ts = t0 + rng.uniform(0.0, w.reporting_interval_s)
        while ts < t0 + span:
            stmt = f'SELECT * FROM "Catalog" WHERE price > {REDACTED}'
            self.emit(ts, self.reporting, "ExecuteStatement", {"statement": stmt}, tables, False)
            ts += w.reporting_interval_s + rng.uniform(-2.0, 2.0)

    # -- Users: healthy, uniform over 5,000 keys -------------------------------------------------------------

    def users(self) -> None:
        w, rng, t0, span = self.w, self.rng, self.t0, self.span
        p = self.user_service
        names = ("userId", "email", "displayName", "createdAt", "plan", "preferences")
        calls: tuple[_Call, ...] = (
            (0.7, "GetItem", lambda key: get_item_params("Users", key)),
            (
                0.85,
                "UpdateItem",
                lambda key: update_item_params("Users", key, "SET #p = :p, updatedAt = :now", {"#p": "preferences"}),
            ),
            (0.9, "PutItem", lambda key: put_item_params("Users", key, names, "attribute_not_exists(userId)")),
            (1.0, "Query", lambda _: query_params("Users", "email = :e", index="ByEmail", limit=1)),
        )
        for ts in _times(rng, _count(w.users_rate, span), t0, span):
            self.one_of(ts, p, "Users", {"userId": f"USER#{rng.randint(1, w.users)}"}, calls)


def generate_workload(workload: Workload, start: datetime) -> list[Record]:
    """All the records of ``workload`` from ``start``, sorted by event time."""
    return _Demo(workload, start).run()


def demo_workload(start: datetime, hours: float = 1.0, seed: int = 7) -> list[Record]:
    """The demo traffic with the planted problems of the module docstring, sorted by event time."""
    return generate_workload(Workload(hours=hours, seed=seed), start)

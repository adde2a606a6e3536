"""Test data: typed inputs (so unit tests do not depend on the CloudTrail parser), CloudTrail records, a workload with
planted problems, trails as CloudTrail delivers them to S3, and the Lambda events the handlers receive."""

from __future__ import annotations

import gzip
import random
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

# The Lambda event envelopes (SQS, SNS, the schedule) are the demo's, which drives the handlers with the same shapes:
# one definition of how AWS delivers an event to a function (re-exported for the tests).
from auditor.demo.service import scheduled_event as scheduled_event
from auditor.demo.service import sns_event as sns_event
from auditor.demo.service import sqs_event as sqs_event
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.calls import Access, ApiCall, ItemAccess
from auditor.models.finding import Finding, FindingKind, Severity

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
ROLE = "arn:aws:iam::111122223333:role/app"

_WRITE_OPS = ("Put", "Update", "Delete", "BatchWrite", "TransactWrite")


def call(
    operation: str = "GetItem",
    table: str = "Orders",
    key: dict[str, Any] | None = None,
    *,
    at: float = 0.0,
    principal: str | None = ROLE,
    error: str | None = None,
    message: str | None = None,
    index: str | None = None,
    segment: int | None = None,
    total_segments: int | None = None,
    event_id: str | None = None,
    full_scan: bool | None = None,
) -> ApiCall:
    """One call; ``at`` is seconds after ``T0``."""
    access = Access.WRITE if operation.startswith(_WRITE_OPS) else Access.READ
    scan = operation == "Scan" if full_scan is None else full_scan
    item = ItemAccess(table=table, operation=operation, access=access, index=index, key=key, full_scan=scan)
    return ApiCall(
        event_id=event_id or f"ev-{operation}-{at}-{key}",
        time=T0 + timedelta(seconds=at),
        operation=operation.split(":")[0],
        access=access,
        account="111122223333",
        region="us-east-1",
        tables=(table,),
        items=(item,),
        principal=principal,
        index=index,
        error_code=error,
        error_message=message,
        scan_segment=segment,
        scan_total_segments=total_segments,
    )


def span(calls: list[ApiCall], window_seconds: int = 900, **kw: Any) -> TableWindow:
    """Aggregate ``calls`` (one table) into a single span aggregate."""
    aggs = AggregateSet(window_seconds, **kw)
    for c in calls:
        aggs.add(c)
    spans = aggs.spans()
    assert len(spans) == 1, spans
    return spans[0]


def stored_billing_finding(
    table: str, seen: datetime, *, account: str, region: str, days_analyzed: float = 14.0
) -> Finding:
    """A ``billing_mode`` finding as an earlier billing run stored it (on-demand -> provisioned)."""
    return Finding.create(
        FindingKind.BILLING_MODE,
        account=account,
        region=region,
        table=table,
        discriminator="billing_mode",
        severity=Severity.LOW,
        title=f"{table}: switch to provisioned saves $50.00/month",
        summary="An earlier billing run.",
        recommendation="Switch.",
        evidence={
            "current_mode": "PAY_PER_REQUEST",
            "recommended_mode": "PROVISIONED",
            "monthly_cost_current": 80.0,
            "monthly_cost_recommended": 30.0,
            "monthly_savings": 50.0,
            "days_analyzed": days_analyzed,
            "source": "cloudwatch_billing",
        },
        first_seen=seen - timedelta(days=1),
        last_seen=seen,
    )


# ---------------------------------------------------------------------------------------------------------------
# CloudTrail records (the data-event shapes of tests/fixtures/cloudtrail)
# ---------------------------------------------------------------------------------------------------------------

#: One CloudTrail record, as parsed JSON.
Record = dict[str, Any]
#: An error a call fails with: (errorCode, errorMessage).
Error = tuple[str, str]

ACCOUNT = "111122223333"
REGION = "us-east-1"
REDACTED = "***(Redacted)"

PTEE: Error = (
    "ProvisionedThroughputExceededException",
    "The level of configured provisioned throughput for the table was exceeded. "
    "Consider increasing your provisioning level with the UpdateTable API.",
)
#: What an on-demand table answers when a partition is over its limit.
THROTTLED: Error = (
    "ThrottlingException",
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your "
    "table or index so please try again shortly.",
)
ITEM_TOO_LARGE: Error = ("ValidationException", "Item size has exceeded the maximum allowed size")
UPDATE_TOO_LARGE: Error = ("ValidationException", "Item size to update has exceeded the maximum allowed size")
CONDITION_FAILED: Error = ("ConditionalCheckFailedException", "The conditional request failed")
TRANSACTION_CANCELED: Error = (
    "TransactionCanceledException",
    "Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None]",
)


@dataclass(frozen=True)
class Caller:
    """Who calls: a role, assumed under one of its session names, or an IAM user (``user=True``)."""

    name: str
    user: bool = False
    sessions: tuple[str, ...] = ("app",)
    user_agent: str = "Boto3/1.34.0 md/Botocore#1.34.0 ua/2.0 os/linux#5.10 lang/python#3.12.1 Botocore/1.34.0"
    source_ip: str = "198.51.100.10"

    def arn(self, account: str = ACCOUNT) -> str:
        """The ARN findings name: the role's or the user's."""
        return f"arn:aws:iam::{account}:{'user' if self.user else 'role'}/{self.name}"

    def identity(self, account: str, session: str) -> dict[str, Any]:
        """The record's ``userIdentity``."""
        unique_id = "AID" if self.user else "ARO"
        unique_id += "A" + self.name.upper().replace("-", "")[:13].ljust(13, "X") + "EXA"
        if self.user:
            return {
                "type": "IAMUser",
                "principalId": unique_id,
                "arn": self.arn(account),
                "accountId": account,
                "accessKeyId": "AKIAIOSFODNN7EXAMPLE",
                "userName": self.name,
            }
        return {
            "type": "AssumedRole",
            "principalId": f"{unique_id}:{session}",
            "arn": f"arn:aws:sts::{account}:assumed-role/{self.name}/{session}",
            "accountId": account,
            "accessKeyId": "ASIAIOSFODNN7EXAMPLE",
            "sessionContext": {
                "sessionIssuer": {
                    "type": "Role",
                    "principalId": unique_id,
                    "arn": self.arn(account),
                    "accountId": account,
                    "userName": self.name,
                },
                "attributes": {"creationDate": "2026-01-01T00:00:00Z", "mfaAuthenticated": "false"},
            },
        }


def iso_time(ts: float) -> str:
    """``eventTime``'s format: whole seconds, UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def cloudtrail_record(
    ts: float,
    caller: Caller,
    operation: str,
    params: dict[str, Any],
    tables: Sequence[str],
    *,
    read_only: bool,
    event_id: str,
    error: Error | None = None,
    session: str | None = None,
    account: str = ACCOUNT,
    region: str = REGION,
) -> Record:
    """One DynamoDB data event as CloudTrail logs it, at ``ts`` (seconds since the epoch)."""
    rec: Record = {
        "eventVersion": "1.08",
        "userIdentity": caller.identity(account, session or caller.sessions[0]),
        "eventTime": iso_time(ts),
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": operation,
        "awsRegion": region,
        "sourceIPAddress": caller.source_ip,
        "userAgent": caller.user_agent,
    }
    if error is not None:
        rec["errorCode"], rec["errorMessage"] = error
    rec |= {
        "requestParameters": params,
        "responseElements": None,
        "requestID": event_id.replace("-", "").upper()[:26] + "VV4KQNSO5AEMVJF66Q9ASUAAJG",
        "eventID": event_id,
        "readOnly": read_only,
        "resources": [
            {
                "accountId": account,
                "type": "AWS::DynamoDB::Table",
                "ARN": f"arn:aws:dynamodb:{region}:{account}:table/{t}",
            }
            for t in tables
        ],
        "eventType": "AwsApiCall",
        "apiVersion": "2012-08-10",
        "managementEvent": False,
        "recipientAccountId": account,
        "eventCategory": "Data",
    }
    return rec


# ---------------------------------------------------------------------------------------------------------------
# A workload with planted problems
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """Traffic on six tables with the problems each CloudTrail detector should find (rates per second of event time).

    ==============  ===========================================================================================
    ``Orders``      ``hot_key`` and ``throttling`` (key range): ``{"pk": "CUSTOMER#42"}`` takes ``hot_key_share``
                    of the key-identified requests, most in one burst at ``hot_key_burst_rps`` that starts 30 %
                    into the window, ``hot_key_throttled`` of them failing with ProvisionedThroughputExceeded
    ``Sessions``    ``scan``: role ``session-cleaner`` runs a parallel Scan (4 segments) every ~5 s (high), user
                    ``alice`` scans twice (low or info)
    ``Jobs``        ``low_cardinality_key``: partition key ``status`` takes four values
    ``Documents``   ``item_size_exceeded``: ``DOC#7`` grows until 5 UpdateItems fail, ``DOC#913`` fails 2 PutItems
    ``Catalog``     ``scan``: role ``reporting`` runs a PartiQL full scan every ~60 s; efficient PartiQL, batches and
                    transactions besides
    ``Users``       nothing: uniform traffic over 5,000 keys
    ==============  ===========================================================================================

    The same workload and start always give the same records (one ``random.Random(seed)``).
    """

    account: str = ACCOUNT
    region: str = REGION
    hours: float = 1.0
    seed: int = 7
    orders_rate: float = 4.0
    hot_key_share: float = 0.35
    hot_key_burst_fraction: float = 0.9
    hot_key_burst_rps: float = 200.0
    hot_key_throttled: float = 0.06
    sessions_rate: float = 1.2
    jobs_rate: float = 2.5
    documents_rate: float = 0.4
    catalog_rate: float = 1.2
    users_rate: float = 2.0


_ORDER_SERVICE = Caller("order-service", sessions=("task-1", "task-2", "task-3"), source_ip="10.1.0.11")
_FULFILLMENT = Caller("fulfillment-worker", sessions=("task-4", "task-5"), source_ip="10.1.0.12")
_SESSION_API = Caller("session-api", sessions=("session-api",), source_ip="198.51.100.23")
_CLEANER = Caller("session-cleaner", sessions=("session-cleaner",), source_ip="198.51.100.77")
_ALICE = Caller("alice", user=True, user_agent="aws-cli/2.15.30 md/command#dynamodb.scan", source_ip="203.0.113.45")
_JOB_WORKER = Caller("job-worker", sessions=("i-0a1", "i-0b2", "i-0c3", "i-0d4"), source_ip="10.2.0.20")
_DOC_SERVICE = Caller("document-service", sessions=("document-service",), source_ip="198.51.100.140")
_CATALOG_SERVICE = Caller("catalog-service", sessions=("task-6", "task-7"), source_ip="10.3.0.30")
_REPORTING = Caller("reporting", sessions=("catalog-report",), source_ip="198.51.100.201")
_USER_SERVICE = Caller("user-service", sessions=("user-service",), source_ip="198.51.100.9")


class _Traffic:
    """Builds a :class:`Workload`'s records table by table."""

    def __init__(self, w: Workload, start: datetime) -> None:
        self.w = w
        self.t0 = start.timestamp()
        self.span = w.hours * 3600.0
        self.rng = random.Random(w.seed)
        self.out: list[tuple[float, Record]] = []

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def times(self, rate: float, t0: float | None = None, span: float | None = None) -> list[float]:
        """``rate * span`` moments spread at random over ``[t0, t0 + span)`` (default: the whole window)."""
        t0, span = (self.t0 if t0 is None else t0), (self.span if span is None else span)
        return [t0 + self.rng.random() * span for _ in range(max(0, round(rate * span)))]

    def emit(
        self,
        ts: float,
        caller: Caller,
        operation: str,
        params: dict[str, Any],
        table: str,
        read_only: bool,
        error: Error | None = None,
    ) -> None:
        session = self.rng.choice(caller.sessions)
        record = cloudtrail_record(
            ts,
            caller,
            operation,
            params,
            (table,),
            read_only=read_only,
            event_id=self.uuid(),
            error=error,
            session=session,
            account=self.w.account,
            region=self.w.region,
        )
        self.out.append((ts, record))

    def run(self) -> list[Record]:
        for table in (self.orders, self.sessions, self.jobs, self.documents, self.catalog, self.users):
            table()
        self.out.sort(key=lambda entry: entry[0])
        return [rec for _, rec in self.out]

    def keyed(
        self, ts: float, caller: Caller, table: str, key: dict[str, Any], mix: Sequence[float], **kw: Any
    ) -> None:
        """A GetItem, PutItem, UpdateItem or DeleteItem on ``key``, chosen by the cumulative shares ``mix``."""
        r = self.rng.random()
        base = {"tableName": table, "key": key}
        if r < mix[0]:
            self.emit(ts, caller, "GetItem", base, table, True, kw.get("error"))
        elif r < mix[1]:
            params = base | {"item": list(kw.get("names", ("id", "updatedAt"))), "returnConsumedCapacity": "TOTAL"}
            self.emit(ts, caller, "PutItem", params, table, False, kw.get("error"))
        elif r < mix[2]:
            params = base | {"updateExpression": kw.get("update", "SET updatedAt = :now")}
            error = kw.get("error")
            if error is None and self.rng.random() < kw.get("conflicts", 0.0):
                params["conditionExpression"] = "version = :expected"
                error = CONDITION_FAILED
            self.emit(ts, caller, "UpdateItem", params, table, False, error)
        else:
            self.emit(ts, caller, "DeleteItem", base, table, False, kw.get("error"))

    def orders(self) -> None:
        w, rng = self.w, self.rng
        baseline = self.times(w.orders_rate)
        for ts in baseline:  # ~2,000 customers, mild skew
            key = {"pk": f"CUSTOMER#{int(2000 * rng.random() ** 1.2) + 1}", "sk": "ORDER#" + self.uuid()}
            self.keyed(ts, _ORDER_SERVICE, "Orders", key, (0.5, 0.7, 1.0), conflicts=0.015)
        for ts in self.times(0.6):  # Queries: efficient, not key-identified
            if rng.random() < 0.7:
                params = {"tableName": "Orders", "indexName": "ByStatus", "keyConditionExpression": "#s = :s"}
                params["expressionAttributeNames"] = {"#s": "status"}
                self.emit(ts, _FULFILLMENT, "Query", params, "Orders", True)
            else:
                params = {"tableName": "Orders", "keyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)"}
                self.emit(ts, _ORDER_SERVICE, "Query", params, "Orders", True)
        # The hot key: hot / (hot + baseline) == hot_key_share, over 20 sort keys, mostly in one burst.
        hot = round(len(baseline) * w.hot_key_share / (1.0 - w.hot_key_share))
        sks = ["ORDER#" + self.uuid() for _ in range(20)]
        weights = [1.0 / (i + 1) for i in range(len(sks))]
        burst = round(hot * w.hot_key_burst_fraction)
        burst_len = min(burst / w.hot_key_burst_rps, self.span * 0.5)
        burst_t0 = self.t0 + self.span * 0.3
        moments = [(self.t0 + rng.random() * self.span, False) for _ in range(hot - burst)]
        moments += [(burst_t0 + rng.random() * burst_len, True) for _ in range(burst)]
        for ts, in_burst in moments:
            key = {"pk": "CUSTOMER#42", "sk": rng.choices(sks, weights)[0]}
            error = PTEE if in_burst and rng.random() < w.hot_key_throttled else None
            self.keyed(ts, _ORDER_SERVICE, "Orders", key, (0.3, 0.5, 1.0), error=error, update="ADD loyaltyPoints :p")

    def sessions(self) -> None:
        w, rng = self.w, self.rng
        pool = [{"sessionId": self.uuid()} for _ in range(3000)]
        for ts in self.times(w.sessions_rate):
            self.keyed(ts, _SESSION_API, "Sessions", dict(rng.choice(pool)), (0.7, 0.85, 0.95))
        end = self.t0 + self.span
        ts = self.t0 + rng.uniform(0.0, 5.0)
        while ts < end:  # the cleaner: a parallel scan of 4 segments every ~5 s, sometimes a second page
            for segment in range(4):
                for page in range(2 if rng.random() < 0.3 else 1):
                    params: dict[str, Any] = {
                        "tableName": "Sessions",
                        "filterExpression": "#e < :now",
                        "expressionAttributeNames": {"#e": "expiresAt"},
                        "segment": segment,
                        "totalSegments": 4,
                    }
                    if page:
                        params["exclusiveStartKey"] = dict(rng.choice(pool))
                    at = min(ts + segment * 0.05 + page * 0.4 + rng.random() * 0.1, end - 0.001)
                    self.emit(at, _CLEANER, "Scan", params, "Sessions", True)
            if rng.random() < 0.3:
                deletes = [{"deleteRequest": {"key": dict(rng.choice(pool))}} for _ in range(rng.randint(1, 25))]
                params = {"requestItems": {"Sessions": deletes}, "returnConsumedCapacity": "TOTAL"}
                self.emit(min(ts + 1.0, end - 0.001), _CLEANER, "BatchWriteItem", params, "Sessions", False)
            ts += 5.0 + rng.uniform(-0.5, 0.5)
        for i in range(2):  # alice, from her laptop
            at = self.t0 + self.span * (0.4 + 0.3 * i) + rng.uniform(0.0, 30.0)
            self.emit(at, _ALICE, "Scan", {"tableName": "Sessions", "limit": 25}, "Sessions", True)

    def jobs(self) -> None:
        rng = self.rng
        for ts in self.times(self.w.jobs_rate):
            status = rng.choices(("PENDING", "RUNNING", "DONE", "FAILED"), (0.40, 0.30, 0.25, 0.05))[0]
            error = THROTTLED if status == "PENDING" and rng.random() < 0.0125 else None
            if rng.random() < 0.05:
                params = {"tableName": "Jobs", "keyConditionExpression": "#s = :s"}
                params["expressionAttributeNames"] = {"#s": "status"}
                self.emit(ts, _JOB_WORKER, "Query", params, "Jobs", True, error)
            else:
                key = {"status": status, "jobId": "JOB#" + self.uuid()}
                self.keyed(ts, _JOB_WORKER, "Jobs", key, (0.3, 0.57, 0.79), error=error)

    def documents(self) -> None:
        rng, t0, span = self.rng, self.t0, self.span
        for ts in self.times(self.w.documents_rate):
            key = {"docId": f"DOC#{rng.randint(1, 300)}"}
            self.keyed(ts, _DOC_SERVICE, "Documents", key, (0.6, 0.7, 1.0))
        doc7 = {
            "tableName": "Documents",
            "key": {"docId": "DOC#7"},
            "updateExpression": "SET #c = list_append(if_not_exists(#c, :empty), :new)",
            "expressionAttributeNames": {"#c": "comments"},
        }
        for ts in self.times(30.0 / 3600.0, t0, span * 0.8) or [t0, t0 + 1.0, t0 + 2.0]:
            self.emit(ts, _DOC_SERVICE, "UpdateItem", dict(doc7), "Documents", False)
        for i in range(5):
            ts = t0 + span * (0.82 + 0.17 * i / 5) + rng.uniform(0.0, 5.0)
            self.emit(ts, _DOC_SERVICE, "UpdateItem", dict(doc7), "Documents", False, UPDATE_TOO_LARGE)
        for i in range(2):
            params = {"tableName": "Documents", "key": {"docId": "DOC#913"}, "item": ["docId", "body", "comments"]}
            ts = t0 + span * 0.5 + i * rng.uniform(0.5, 3.0)
            self.emit(ts, _DOC_SERVICE, "PutItem", params, "Documents", False, ITEM_TOO_LARGE)

    def catalog(self) -> None:
        rng = self.rng

        def product() -> str:
            return f"PRODUCT#{rng.randint(1, 1000)}"

        for ts in self.times(self.w.catalog_rate):
            r = rng.random()
            if r < 0.5:  # efficient PartiQL: key equality
                stmt = f"SELECT * FROM \"Catalog\" WHERE pk = '{product()}' AND sk = 'DETAILS'"
                self.emit(ts, _CATALOG_SERVICE, "ExecuteStatement", {"statement": stmt}, "Catalog", False)
            elif r < 0.58:
                stmt = f"UPDATE \"Catalog\" SET price = {REDACTED} WHERE pk = '{product()}' AND sk = 'DETAILS'"
                self.emit(ts, _CATALOG_SERVICE, "ExecuteStatement", {"statement": stmt}, "Catalog", False)
            elif r < 0.78:
                keys = [{"pk": product(), "sk": "DETAILS"} for _ in range(rng.randint(2, 25))]
                params: dict[str, Any] = {"requestItems": {"Catalog": {"keys": keys}}}
                self.emit(ts, _CATALOG_SERVICE, "BatchGetItem", params, "Catalog", True)
            elif r < 0.88:
                writes = [{"putRequest": {"key": {"pk": product(), "sk": "DETAILS"}, "item": ["pk", "sk", "price"]}}]
                writes += [{"deleteRequest": {"key": {"pk": product(), "sk": "INVENTORY"}}}]
                params = {"requestItems": {"Catalog": writes}}
                self.emit(ts, _CATALOG_SERVICE, "BatchWriteItem", params, "Catalog", False)
            elif r < 0.97:  # the AWS sample's mixed key casing
                pk = product()
                items = [
                    {"operation": "Update", "tableName": "Catalog", "key": {"pk": pk, "sk": "INVENTORY"}},
                    {"operation": "ConditionCheck", "TableName": "Catalog", "Key": {"pk": pk, "sk": "DETAILS"}},
                ]
                error = TRANSACTION_CANCELED if rng.random() < 0.04 else None
                self.emit(ts, _CATALOG_SERVICE, "TransactWriteItems", {"requestItems": items}, "Catalog", False, error)
            else:
                stmts = [{"statement": f"UPDATE \"Catalog\" SET price = {REDACTED} WHERE pk = '{product()}'"}]
                self.emit(ts, _CATALOG_SERVICE, "BatchExecuteStatement", {"requestItems": stmts}, "Catalog", False)
        ts = self.t0 + rng.uniform(0.0, 60.0)
        while ts < self.t0 + self.span:  # reporting: a PartiQL full scan every ~60 s
            stmt = f'SELECT * FROM "Catalog" WHERE price > {REDACTED}'
            self.emit(ts, _REPORTING, "ExecuteStatement", {"statement": stmt}, "Catalog", False)
            ts += 60.0 + rng.uniform(-2.0, 2.0)

    def users(self) -> None:
        rng = self.rng
        for ts in self.times(self.w.users_rate):
            if rng.random() < 0.1:
                params = {"tableName": "Users", "indexName": "ByEmail", "keyConditionExpression": "email = :e"}
                self.emit(ts, _USER_SERVICE, "Query", params, "Users", True)
            else:
                key = {"userId": f"USER#{rng.randint(1, 5000)}"}
                self.keyed(ts, _USER_SERVICE, "Users", key, (0.78, 0.83, 1.0))


def workload_records(workload: Workload, start: datetime) -> list[Record]:
    """Every record of ``workload`` from ``start``, sorted by event time."""
    return _Traffic(workload, start).run()


def planted_workload(start: datetime, hours: float = 1.0, seed: int = 7) -> list[Record]:
    """The :class:`Workload` with its default rates (about 55,000 records an hour), sorted by event time."""
    return workload_records(Workload(hours=hours, seed=seed), start)


def traffic(n: int, seed: int = 1) -> list[Record]:
    """The first ``n`` records of the planted workload (every operation it makes, in event-time order)."""
    records = planted_workload(datetime(2026, 3, 2, 9, tzinfo=UTC), hours=max(0.02, n / 40_000), seed=seed)
    assert len(records) >= n, "the workload made fewer records than asked for"
    return records[:n]


# ---------------------------------------------------------------------------------------------------------------
# Trails: log files and the S3 layout CloudTrail delivers
# ---------------------------------------------------------------------------------------------------------------


def write_log_file(records: Iterable[Any], path: Path, gz: bool = True) -> int:
    """One CloudTrail log file ``{"Records": [...]}`` (gzip when ``gz``, with a fixed mtime); returns the count."""
    records = list(records)
    body = orjson.dumps({"Records": records})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(body, mtime=0) if gz else body)
    return len(records)


def write_trail(
    records: Iterable[Record],
    out_dir: Path,
    account: str = ACCOUNT,
    region: str = REGION,
    *,
    seed: int = 7,
    file_minutes: float = 5,
    duplicates: int = 5,
) -> list[Path]:
    """``records`` as a trail delivers them to S3 under ``out_dir``: the log files in delivery order, then the digests.

    ``<out_dir>/AWSLogs/<account>/CloudTrail/<region>/YYYY/MM/DD/<account>_CloudTrail_<region>_<time>_<id>.json.gz``,
    one file per ``file_minutes`` of event time, records slightly out of order inside a file, ~0.5 % of them in the
    next file, and exactly ``duplicates`` records delivered again (same ``eventID``) in a neighbouring file. One digest
    per hour (``/CloudTrail-Digest/``) lists the log files; it has no ``Records``.
    """
    rng = random.Random(f"trail:{seed}")
    period = max(1.0, file_minutes * 60.0)
    slots: dict[int, list[tuple[float, Record]]] = {}
    for rec in records:
        ts = datetime.fromisoformat(rec["eventTime"]).timestamp()
        slot = int(ts // period) + (1 if rng.random() < 0.005 else 0)
        slots.setdefault(slot, []).append((ts + rng.uniform(0.0, 40.0), rec))
    files = [(slot, sorted(entries, key=lambda e: e[0])) for slot, entries in sorted(slots.items())]
    if duplicates > 0 and len(files) == 1 and len(files[0][1]) > 1:  # split, so that duplicates can cross files
        slot, entries = files[0]
        files = [(slot, entries[: len(entries) // 2]), (slot, entries[len(entries) // 2 :])]
    if duplicates > 0 and len(files) > 1:
        positions = [(i, n) for i, (_, entries) in enumerate(files) for n in range(len(entries))]
        picked = [(i, files[i][1][n]) for i, n in rng.sample(positions, duplicates)]
        for i, entry in picked:
            target = files[i + 1 if i + 1 < len(files) else i - 1][1]
            target.insert(rng.randrange(len(target) + 1), entry)
    prefix = Path(out_dir) / "AWSLogs" / account
    logs: list[Path] = []
    hours: dict[str, list[Path]] = {}  # the log files of each hour of delivery
    for n, (slot, entries) in enumerate(files):
        delivered = time.gmtime((slot + 1) * period + 60.0 + n)
        name = f"{account}_CloudTrail_{region}_{time.strftime('%Y%m%dT%H%MZ', delivered)}_{seed:08d}{n:08d}.json.gz"
        path = prefix / "CloudTrail" / region / time.strftime("%Y/%m/%d", delivered) / name
        write_log_file((rec for _, rec in entries), path)
        logs.append(path)
        hours.setdefault(time.strftime("%Y/%m/%d/%Y%m%dT%H", delivered), []).append(path)
    digests = []
    for hour, members in sorted(hours.items()):
        day, stamp = hour.rsplit("/", 1)
        name = f"{account}_CloudTrail-Digest_{region}_ddb-data-events_{region}_{stamp}0000Z.json.gz"
        path = prefix / "CloudTrail-Digest" / region / day / name
        digest = {
            "awsAccountId": account,
            "digestS3Object": path.relative_to(out_dir).as_posix(),
            "logFiles": [{"s3Object": p.relative_to(out_dir).as_posix(), "hashAlgorithm": "SHA-256"} for p in members],
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(orjson.dumps(digest), mtime=0))
        digests.append(path)
    return logs + digests


# ---------------------------------------------------------------------------------------------------------------
# Lambda events
# ---------------------------------------------------------------------------------------------------------------


def flat_calls(batches: Iterable[list[Any]]) -> list[Any]:
    """The calls of :func:`auditor.kernel.reader.read_calls`' batches, in order."""
    return [call for batch in batches for call in batch]

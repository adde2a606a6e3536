"""A deterministic generator of realistic CloudTrail DynamoDB data events, with planted problems.

Used by the tests, the benchmarks (``python -m benchmarks.ingest``) and ``make demo``. Everything is driven by
``random.Random(seed)`` and a ``start`` time passed in: no wall clock, no global random state. The same
arguments always give the same records, and :func:`write_trail` the same bytes (gzip ``mtime`` is 0).

Records follow only the shapes of the AWS samples (logging-using-cloudtrail.html, data events): the envelope of the AWS
samples (``eventVersion`` 1.08 with ``tlsDetails``), keys as plain JSON values, ``PutItem.item`` as a list of
attribute *names*, no ``expressionAttributeValues`` anywhere, ``responseElements: null``, PartiQL literals of
non-key attributes as ``***(Redacted)``, ``TransactWriteItems.requestItems`` as a list with the sample's
inconsistent key casing, errors as top-level ``errorCode``/``errorMessage``. ``requestID`` has the 52-character
shape of the AWS samples (26 random base32hex characters and the ``VV4KQNSO5AEMVJF66Q9ASUAAJG`` suffix that the
samples and public SDK error reports show). BatchGetItem/BatchWriteItem (no AWS sample exists) use the API shape,
camel-cased: a map keyed by table name, ``{"keys": [...]}`` for reads and
``[{"putRequest": {"key", "item"}}, {"deleteRequest": {"key"}}]`` for writes (``putRequest`` logs the key and the
attribute names, as PutItem does). These two shapes are [INFERRED] in cloudtrail.md; the normaliser accepts both
a map and a list.

Planted problems of :func:`demo_workload` (account 111122223333, us-east-1; counts for ``hours=1, seed=7``,
they scale with ``hours``)
=============================================================================================================

====================  ============================  ===============================================================
table                 expected finding (kind)       what is planted
====================  ============================  ===============================================================
``Orders``            ``hot_key`` (high)            key ``{"pk": "CUSTOMER#42"}`` takes 35 % of the key-identified
                                                    requests (GetItem/PutItem/UpdateItem) of the whole window:
                                                    90 % of them in one burst of ~35 s at ~200 requests/s (~70 %
                                                    writes), starting 30 % into the window; the rest at ~0.2/s.
                                                    Spread over 20 sort keys (``ORDER#...``), the top one takes
                                                    ~28 % of the partition's traffic: aggregate by partition key.
``Orders``            ``throttling`` (cause         ~6 % of the burst requests on ``CUSTOMER#42`` fail with
                      ``key_range``)                ``ProvisionedThroughputExceededException``.
``Sessions``          ``scan`` (high)               principal ``arn:aws:iam::111122223333:role/session-cleaner``
                                                    runs a parallel Scan (segments 0..3 of 4, sometimes a second
                                                    page) every ~5 s: a Scan on a hot path.
``Sessions``          ``scan`` (low or info)        principal ``arn:aws:iam::111122223333:user/alice`` (IAMUser,
                                                    aws-cli) scans twice.
``Jobs``              ``low_cardinality_key``       partition key ``status`` only takes PENDING / RUNNING / DONE /
                                                    FAILED (40/30/25/5 %) under ~2.5 requests/s. Side effects a
                                                    detector may legitimately report too: ``hot_key`` on
                                                    ``status=PENDING`` (better folded into this finding) and a few
                                                    on-demand ``ThrottlingException`` on PENDING (``throttling``).
``Documents``         ``item_size_exceeded``        ``{"docId": "DOC#7"}``: UpdateItem ``list_append`` on
                                                    ``comments`` fails 5 times with ``ValidationException`` "Item
                                                    size to update has exceeded the maximum allowed size" (after
                                                    ~30 successful appends); ``{"docId": "DOC#913"}``: PutItem fails
                                                    twice with "Item size has exceeded the maximum allowed size".
``Catalog``           ``scan`` (operation           principal ``arn:aws:iam::111122223333:role/reporting`` runs
                      ``ExecuteStatement``)         ``SELECT * FROM "Catalog" WHERE price > ***(Redacted)`` every
                                                    ~60 s (a PartiQL full scan).
``Catalog``           none                          efficient PartiQL (key equality, incl. a redacted non-key
                                                    condition as in the AWS sample), BatchGetItem,
                                                    BatchWriteItem, TransactWriteItems with mixed key casing and a
                                                    few ``TransactionCanceledException``, BatchExecuteStatement.
``Users``             none (must stay clean)        uniform traffic over 5,000 keys, no scan, no error.
====================  ============================  ===============================================================

Background noise that must not produce findings: ``Orders`` healthy traffic over 2,000 customers (GSI ``ByStatus``
Queries included), a few ``ConditionalCheckFailedException`` (optimistic locking on ``Orders``),
``Sessions`` item traffic and the cleaner's BatchWriteItem deletes.

Trail layout written by :func:`write_trail` (cloudtrail.md §2.1)::

    <out>/AWSLogs/<acct>/CloudTrail/<region>/YYYY/MM/DD/<acct>_CloudTrail_<region>_<YYYYMMDDTHHmmZ>_<16 alnum>.json.gz
    <out>/AWSLogs/<acct>/CloudTrail-Digest/<region>/YYYY/MM/DD/
        <acct>_CloudTrail-Digest_<region>_<trail>_<region>_<YYYYMMDDTHHmmssZ>.json.gz

One log file per ``file_minutes`` of event time; records inside a file are slightly out of order, ~0.5 % arrive
in the next file, and ``duplicates`` records are copied (same ``eventID``) into a neighbouring file. One digest
file per hour of delivery lists the log files with the SHA-256 of their uncompressed content; readers must skip
it (it has no ``Records``).

Command line::

    python -m auditor.demo.generator --out DIR [--hours H] [--seed S] [--start ISO]
    python -m auditor.demo.generator --benchmark N --distinct-keys K --file PATH [--seed S]
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import io
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from typing import Any, Final

import orjson

__all__ = [
    "DEFAULT_ACCOUNT",
    "DEFAULT_REGION",
    "DEFAULT_START",
    "PLANTED_PROBLEMS",
    "PlantedProblem",
    "Workload",
    "benchmark_records",
    "demo_workload",
    "generate_workload",
    "main",
    "write_large_log_file",
    "write_log_file",
    "write_trail",
]

#: One CloudTrail record, as parsed JSON.
Record = dict[str, Any]

DEFAULT_ACCOUNT: Final = "111122223333"
DEFAULT_REGION: Final = "us-east-1"
#: A fixed default start (a Monday morning, UTC); the generator never reads the clock.
DEFAULT_START: Final = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)

EVENT_SOURCE: Final = "dynamodb.amazonaws.com"
EVENT_VERSION: Final = "1.08"

PTEE: Final = "ProvisionedThroughputExceededException"
PTEE_MESSAGE: Final = (
    "The level of configured provisioned throughput for the table was exceeded. "
    "Consider increasing your provisioning level with the UpdateTable API."
)
THROTTLING: Final = "ThrottlingException"
#: What on-demand tables answer when a partition is over its limit (seen in public SDK error reports).
THROTTLING_MESSAGE: Final = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your "
    "table or index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
VALIDATION: Final = "ValidationException"
ITEM_SIZE_MESSAGE: Final = "Item size has exceeded the maximum allowed size"
ITEM_SIZE_UPDATE_MESSAGE: Final = "Item size to update has exceeded the maximum allowed size"
CONDITIONAL_FAILED: Final = "ConditionalCheckFailedException"
CONDITIONAL_FAILED_MESSAGE: Final = "The conditional request failed"
TXN_CANCELED: Final = "TransactionCanceledException"
TXN_CANCELED_MESSAGE: Final = (
    "Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None]"
)
REDACTED: Final = "***(Redacted)"

_UPPER_ALNUM: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_ALNUM: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_REQUEST_ID_SUFFIX: Final = "VV4KQNSO5AEMVJF66Q9ASUAAJG"

_Error = tuple[str, str]

# ---------------------------------------------------------------------------------------------------------------
# User agents and TLS (realistic strings of current SDKs)
# ---------------------------------------------------------------------------------------------------------------

UA_BOTO3: Final = (
    "Boto3/1.34.0 md/Botocore#1.34.0 ua/2.0 os/linux#5.10 lang/python#3.12.1 cfg/retry-mode#legacy Botocore/1.34.0"
)
UA_BOTO3_LAMBDA: Final = (
    "Boto3/1.34.84 md/Botocore#1.34.84 ua/2.0 os/linux#5.10.216-225.855.amzn2.x86_64 md/arch#x86_64 "
    "lang/python#3.12.3 md/pyimpl#CPython exec-env/AWS_Lambda_python3.12 cfg/retry-mode#legacy Botocore/1.34.84"
)
UA_JAVA: Final = (
    "aws-sdk-java/2.25.10 Linux/5.10.219-208.866.amzn2.x86_64 OpenJDK_64-Bit_Server_VM/17.0.11+9-LTS "
    "Java/17.0.11 vendor/Amazon.com_Inc. io/sync http/Apache cfg/retry-mode/legacy"
)
UA_NODE: Final = (
    "aws-sdk-js/3.540.0 ua/2.0 os/linux#5.10.214-223.810.amzn2.x86_64 lang/js md/nodejs#20.12.2 "
    "api/dynamodb#3.540.0 exec-env/AWS_Lambda_nodejs20.x"
)
UA_GO: Final = "aws-sdk-go-v2/1.26.1 os/linux lang/go#1.22.2 md/GOOS#linux md/GOARCH#amd64 api/dynamodb#1.31.1"
UA_CLI: Final = (
    "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/macos#23.4.0 md/arch#arm64 lang/python#3.11.8 "
    "md/pyimpl#CPython cfg/retry-mode#standard md/installer#source md/prompt#off md/command#dynamodb.scan"
)

_TLS13: Final = ("TLSv1.3", "TLS_AES_128_GCM_SHA256")
_TLS12: Final = ("TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256")


# ---------------------------------------------------------------------------------------------------------------
# Public dataclasses
# ---------------------------------------------------------------------------------------------------------------


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
# Identities and the record factory
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Principal:
    kind: str  # "AssumedRole" or "IAMUser"
    name: str  # role or user name
    unique_id: str  # AROA... or AIDA...
    sessions: tuple[str, ...]  # session names (roles)
    user_agent: str
    source_ips: tuple[str, ...]
    tls: tuple[str, str]


def _rand_str(rng: random.Random, alphabet: str, k: int) -> str:
    return "".join(rng.choices(alphabet, k=k))


def _uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


class _Factory:
    """Builds records. Holds the seeded RNG and the per-session credentials (rotated hourly, like STS)."""

    __slots__ = ("_creds", "_last_iso", "_last_sec", "_rotated", "account", "region", "rng")

    def __init__(self, rng: random.Random, account: str, region: str) -> None:
        self.rng = rng
        self.account = account
        self.region = region
        self._creds: dict[tuple[str, int], tuple[float, str]] = {}  # (principal, session) -> (offset, key id)
        self._rotated: dict[tuple[str, int], tuple[str, str]] = {}  # (key id, hour) -> (key id, creationDate)
        self._last_sec = -1
        self._last_iso = ""

    # -- principals -------------------------------------------------------------------------------------------

    def role(
        self,
        name: str,
        sessions: Sequence[str],
        user_agent: str,
        source_ips: Sequence[str],
        tls: tuple[str, str] = _TLS13,
    ) -> _Principal:
        uid = "AROA" + _rand_str(self.rng, _UPPER_ALNUM, 17)
        return _Principal("AssumedRole", name, uid, tuple(sessions), user_agent, tuple(source_ips), tls)

    def user(self, name: str, user_agent: str, source_ip: str) -> _Principal:
        uid = "AIDA" + _rand_str(self.rng, _UPPER_ALNUM, 17)
        return _Principal("IAMUser", name, uid, ("",), user_agent, (source_ip,), _TLS13)

    def _credentials(self, p: _Principal, session: int, ts: float) -> tuple[str, str]:
        """(accessKeyId, creationDate) of the credentials in use at ``ts``."""
        cached = self._creds.get((p.name, session))
        if cached is None:
            prefix = "AKIA" if p.kind == "IAMUser" else "ASIA"
            cached = (self.rng.uniform(0.0, 3600.0), prefix + _rand_str(self.rng, _UPPER_ALNUM, 16))
            self._creds[(p.name, session)] = cached
        offset, key_id = cached
        if p.kind == "IAMUser":
            return key_id, ""  # a long-term access key
        period = int((ts - offset) // 3600.0)
        rotated = self._rotated.get((key_id, period))
        if rotated is None:
            # A new STS session every hour: a new key id, derived from the period (no RNG draw, no hash()).
            h = hashlib.blake2b(f"{key_id}:{period}".encode(), digest_size=16).digest()
            rotated = (key_id[:4] + "".join(_UPPER_ALNUM[b % 36] for b in h), _iso(period * 3600.0 + offset))
            if len(self._rotated) > 4096:
                self._rotated.clear()
            self._rotated[(key_id, period)] = rotated
        return rotated

    def identity(self, p: _Principal, session: int, ts: float) -> dict[str, Any]:
        account = self.account
        key_id, created = self._credentials(p, session, ts)
        if p.kind == "IAMUser":
            return {
                "type": "IAMUser",
                "principalId": p.unique_id,
                "arn": f"arn:aws:iam::{account}:user/{p.name}",
                "accountId": account,
                "accessKeyId": key_id,
                "userName": p.name,
            }
        session_name = p.sessions[session]
        return {
            "type": "AssumedRole",
            "principalId": f"{p.unique_id}:{session_name}",
            "arn": f"arn:aws:sts::{account}:assumed-role/{p.name}/{session_name}",
            "accountId": account,
            "accessKeyId": key_id,
            "sessionContext": {
                "sessionIssuer": {
                    "type": "Role",
                    "principalId": p.unique_id,
                    "arn": f"arn:aws:iam::{account}:role/{p.name}",
                    "accountId": account,
                    "userName": p.name,
                },
                "attributes": {"creationDate": created, "mfaAuthenticated": "false"},
            },
        }

    # -- ids and times ----------------------------------------------------------------------------------------

    def event_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def request_id(self) -> str:
        # DynamoDB request ids are base32hex (0-9, A-V): 26 random characters and a per-endpoint suffix.
        return base64.b32hexencode(self.rng.getrandbits(136).to_bytes(17, "big"))[:26].decode() + _REQUEST_ID_SUFFIX

    def event_time(self, ts: float) -> str:
        sec = int(ts)
        if sec != self._last_sec:
            self._last_sec = sec
            self._last_iso = _iso(sec)
        return self._last_iso

    def uuid(self) -> str:
        return _uuid4(self.rng)

    # -- the record -------------------------------------------------------------------------------------------

    def record(
        self,
        ts: float,
        p: _Principal,
        event_name: str,
        params: dict[str, Any],
        tables: Sequence[str],
        read_only: bool,
        error: _Error | None = None,
        session: int | None = None,
    ) -> Record:
        rng = self.rng
        if session is None:
            session = rng.randrange(len(p.sessions)) if len(p.sessions) > 1 else 0
        account = self.account
        region = self.region
        rec: Record = {
            "eventVersion": EVENT_VERSION,
            "userIdentity": self.identity(p, session, ts),
            "eventTime": self.event_time(ts),
            "eventSource": EVENT_SOURCE,
            "eventName": event_name,
            "awsRegion": region,
            "sourceIPAddress": p.source_ips[session % len(p.source_ips)],
            "userAgent": p.user_agent,
        }
        if error is not None:
            rec["errorCode"] = error[0]
            rec["errorMessage"] = error[1]
        rec["requestParameters"] = params
        rec["responseElements"] = None
        rec["requestID"] = self.request_id()
        rec["eventID"] = self.event_id()
        rec["readOnly"] = read_only
        rec["resources"] = [
            {
                "accountId": account,
                "type": "AWS::DynamoDB::Table",
                "ARN": f"arn:aws:dynamodb:{region}:{account}:table/{t}",
            }
            for t in tables
        ]
        rec["eventType"] = "AwsApiCall"
        rec["apiVersion"] = "2012-08-10"
        rec["managementEvent"] = False
        rec["recipientAccountId"] = account
        rec["eventCategory"] = "Data"
        rec["tlsDetails"] = {
            "tlsVersion": p.tls[0],
            "cipherSuite": p.tls[1],
            "clientProvidedHostHeader": f"dynamodb.{region}.amazonaws.com",
        }
        return rec


# ---------------------------------------------------------------------------------------------------------------
# requestParameters builders (cloudtrail.md §1.2)
# ---------------------------------------------------------------------------------------------------------------


def _get(table: str, key: dict[str, Any], *, consistent: bool = False, projection: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table, "key": key}
    if consistent:
        params["consistentRead"] = True
    if projection is not None:
        params["projectionExpression"] = projection
    return params


def _put(table: str, key: dict[str, Any], names: Sequence[str], condition: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table, "key": key, "item": list(names)}
    if condition is not None:
        params["conditionExpression"] = condition
    params["returnConsumedCapacity"] = "TOTAL"
    return params


def _update(
    table: str,
    key: dict[str, Any],
    expression: str,
    names: dict[str, str] | None = None,
    condition: str | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table, "key": key, "updateExpression": expression}
    if names:
        params["expressionAttributeNames"] = dict(names)
    if condition is not None:
        params["conditionExpression"] = condition
    params["returnConsumedCapacity"] = "TOTAL"
    return params


def _delete(table: str, key: dict[str, Any], condition: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table, "key": key}
    if condition is not None:
        params["conditionExpression"] = condition
    return params


def _query(
    table: str,
    condition: str,
    *,
    index: str | None = None,
    names: dict[str, str] | None = None,
    limit: int | None = None,
    forward: bool | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table}
    if index is not None:
        params["indexName"] = index
    params["keyConditionExpression"] = condition
    if names:
        params["expressionAttributeNames"] = dict(names)
    if limit is not None:
        params["limit"] = limit
    if forward is not None:
        params["scanIndexForward"] = forward
    return params


# ---------------------------------------------------------------------------------------------------------------
# The demo workload
# ---------------------------------------------------------------------------------------------------------------

_Out = list[tuple[float, Record]]

_ORDER_ATTRS: Final = ("pk", "sk", "status", "createdAt", "total", "currency", "lineItems", "shippingAddress")
_ORDER_STATUSES: Final = ("PLACED", "PAID", "PACKED", "SHIPPED", "DELIVERED", "CANCELLED")
_JOB_STATUSES: Final = ("PENDING", "RUNNING", "DONE", "FAILED")
_JOB_WEIGHTS: Final = (0.40, 0.30, 0.25, 0.05)


def _times(rng: random.Random, n: int, t0: float, span: float) -> list[float]:
    return [t0 + rng.random() * span for _ in range(n)]


def _count(rate: float, seconds: float) -> int:
    return max(0, round(rate * seconds))


def _task_ids(rng: random.Random, n: int) -> list[str]:
    return [format(rng.getrandbits(128), "032x") for _ in range(n)]


def _instance_ids(rng: random.Random, n: int) -> list[str]:
    return ["i-0" + format(rng.getrandbits(64), "016x") for _ in range(n)]


def _private_ips(rng: random.Random, n: int, net: int) -> list[str]:
    return [f"10.{net}.{rng.randrange(0, 16)}.{rng.randrange(2, 254)}" for _ in range(n)]


class _Demo:
    """Builds the demo workload table by table into one list of (time, record)."""

    def __init__(self, w: Workload, start: datetime) -> None:
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        self.w = w
        self.t0 = start.timestamp()
        self.span = w.seconds
        self.rng = random.Random(w.seed)
        self.f = _Factory(self.rng, w.account, w.region)
        self.out: _Out = []
        f, rng = self.f, self.rng
        self.order_service = f.role("order-service", _task_ids(rng, 3), UA_JAVA, _private_ips(rng, 3, 1), _TLS12)
        self.fulfillment = f.role("fulfillment-worker", _task_ids(rng, 2), UA_GO, _private_ips(rng, 2, 1))
        self.session_api = f.role("session-api", ["session-api"], UA_NODE, ["198.51.100.23"])
        self.cleaner = f.role("session-cleaner", ["session-cleaner"], UA_BOTO3_LAMBDA, ["198.51.100.77"])
        self.alice = f.user("alice", UA_CLI, "203.0.113.45")
        self.job_worker = f.role("job-worker", _instance_ids(rng, 4), UA_BOTO3, _private_ips(rng, 4, 2))
        self.doc_service = f.role("document-service", ["document-service"], UA_NODE, ["198.51.100.140"])
        self.catalog_service = f.role("catalog-service", _task_ids(rng, 2), UA_JAVA, _private_ips(rng, 2, 3), _TLS12)
        self.reporting = f.role("reporting", ["catalog-report"], UA_BOTO3_LAMBDA, ["198.51.100.201"])
        self.user_service = f.role("user-service", ["user-service"], UA_BOTO3_LAMBDA, ["198.51.100.9"])

    def emit(
        self,
        ts: float,
        p: _Principal,
        name: str,
        params: dict[str, Any],
        tables: Sequence[str],
        read_only: bool,
        error: _Error | None = None,
    ) -> None:
        self.out.append((ts, self.f.record(ts, p, name, params, tables, read_only, error)))

    def past_iso(self, max_days: float) -> str:
        return _iso(self.t0 - self.rng.uniform(0.0, max_days * 86400.0))

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

    def _orders_keyed(self, ts: float, key: dict[str, Any], error: _Error | None = None) -> None:
        rng, p = self.rng, self.order_service
        r = rng.random()
        if r < 0.5:
            projection = "#s, total, createdAt" if rng.random() < 0.3 else None
            params = _get("Orders", key, consistent=rng.random() < 0.2, projection=projection)
            if projection is not None:
                params["expressionAttributeNames"] = {"#s": "status"}
            self.emit(ts, p, "GetItem", params, ("Orders",), True, error)
        elif r < 0.7:
            params = _put("Orders", key, _ORDER_ATTRS, "attribute_not_exists(pk)")
            self.emit(ts, p, "PutItem", params, ("Orders",), False, error)
        else:
            if rng.random() < 0.5:
                params = _update(
                    "Orders", key, "SET #s = :s, updatedAt = :now", {"#s": "status"}, "attribute_exists(pk)"
                )
            else:
                params = _update(
                    "Orders", key, "SET #s = :s, version = version + :one", {"#s": "status"}, "version = :expected"
                )
                if error is None and rng.random() < 0.03:
                    error = (CONDITIONAL_FAILED, CONDITIONAL_FAILED_MESSAGE)
            self.emit(ts, p, "UpdateItem", params, ("Orders",), False, error)

    def _orders_hot(self, ts: float, sks: Sequence[str], weights: Sequence[float], error: _Error | None) -> None:
        rng, p = self.rng, self.order_service
        key = {"pk": f"CUSTOMER#{self.w.hot_customer}", "sk": rng.choices(sks, weights)[0]}
        r = rng.random()
        if r < 0.3:
            self.emit(ts, p, "GetItem", _get("Orders", key), ("Orders",), True, error)
        elif r < 0.5:
            params = _put("Orders", key, _ORDER_ATTRS)
            self.emit(ts, p, "PutItem", params, ("Orders",), False, error)
        else:
            params = _update(
                "Orders", key, "SET #s = :s, updatedAt = :now ADD loyaltyPoints :p", {"#s": "status"}, None
            )
            self.emit(ts, p, "UpdateItem", params, ("Orders",), False, error)

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
                params = _query(
                    "Orders",
                    "#s = :s AND createdAt > :since",
                    index="ByStatus",
                    names={"#s": "status"},
                    limit=100,
                    forward=False,
                )
                self.emit(ts, self.fulfillment, "Query", params, ("Orders",), True)
            else:
                params = _query("Orders", "pk = :pk AND begins_with(sk, :prefix)", limit=20, forward=False)
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
        throttled = (PTEE, PTEE_MESSAGE)
        for ts in _times(rng, burst, burst_t0, burst_len):
            self._orders_hot(ts, sks, weights, throttled if rng.random() < w.hot_key_throttled else None)

    # -- Sessions: the cleaner's hot-path parallel Scan, alice's two scans ------------------------------------

    def sessions(self) -> None:
        w, rng, t0, span = self.w, self.rng, self.t0, self.span
        pool = [{"sessionId": self.f.uuid()} for _ in range(w.sessions_pool)]
        api = self.session_api
        for ts in _times(rng, _count(w.sessions_rate, span), t0, span):
            key = dict(rng.choice(pool))
            r = rng.random()
            if r < 0.7:
                self.emit(ts, api, "GetItem", _get("Sessions", key, consistent=True), ("Sessions",), True)
            elif r < 0.85:
                names = ("sessionId", "userId", "expiresAt", "createdAt", "device", "roles")
                self.emit(ts, api, "PutItem", _put("Sessions", key, names), ("Sessions",), False)
            elif r < 0.95:
                params = _update("Sessions", key, "SET expiresAt = :exp, lastSeen = :now")
                self.emit(ts, api, "UpdateItem", params, ("Sessions",), False)
            else:
                self.emit(ts, api, "DeleteItem", _delete("Sessions", key), ("Sessions",), False)
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
        throttled = (THROTTLING, THROTTLING_MESSAGE)
        for ts in _times(rng, _count(w.jobs_rate, span), t0, span):
            status = rng.choices(_JOB_STATUSES, _JOB_WEIGHTS)[0]
            key = {"status": status, "jobId": "JOB#" + self.f.uuid()}
            error = throttled if status == "PENDING" and rng.random() < w.jobs_throttled * 2.5 else None
            r = rng.random()
            if r < 0.05:
                params = _query("Jobs", "#s = :s", names={"#s": "status"}, limit=10)
                self.emit(ts, p, "Query", params, ("Jobs",), True, error)
            elif r < 0.35:
                self.emit(ts, p, "GetItem", _get("Jobs", key, consistent=True), ("Jobs",), True, error)
            elif r < 0.6:
                params = _put("Jobs", key, names, "attribute_not_exists(jobId)")
                self.emit(ts, p, "PutItem", params, ("Jobs",), False, error)
            elif r < 0.8:
                params = _update("Jobs", key, "SET attempts = attempts + :one, updatedAt = :now")
                self.emit(ts, p, "UpdateItem", params, ("Jobs",), False, error)
            else:
                params = _delete("Jobs", key, "attribute_exists(jobId)")
                self.emit(ts, p, "DeleteItem", params, ("Jobs",), False, error)

    # -- Documents: DOC#7 grows with list_append until it fails ---------------------------------------------

    def documents(self) -> None:
        w, rng, t0, span = self.w, self.rng, self.t0, self.span
        p = self.doc_service
        names = ("docId", "title", "body", "ownerId", "updatedAt", "tags", "comments")
        for ts in _times(rng, _count(w.documents_rate, span), t0, span):
            key = {"docId": f"DOC#{rng.randint(1, w.documents)}"}
            r = rng.random()
            if r < 0.6:
                self.emit(ts, p, "GetItem", _get("Documents", key), ("Documents",), True)
            elif r < 0.7:
                self.emit(ts, p, "PutItem", _put("Documents", key, names), ("Documents",), False)
            else:
                params = _update("Documents", key, "SET #t = :t, updatedAt = :now", {"#t": "title"})
                self.emit(ts, p, "UpdateItem", params, ("Documents",), False)
        append = "SET #c = list_append(if_not_exists(#c, :empty), :new), updatedAt = :now"
        doc7 = {"docId": "DOC#7"}
        for ts in _times(rng, max(3, _count(w.doc7_appends_per_hour / 3600.0, span)), t0, span * 0.8):
            params = _update("Documents", dict(doc7), append, {"#c": "comments"})
            self.emit(ts, p, "UpdateItem", params, ("Documents",), False)
        too_big = (VALIDATION, ITEM_SIZE_UPDATE_MESSAGE)
        for i in range(w.doc7_failures):
            ts = t0 + span * (0.82 + 0.17 * i / max(1, w.doc7_failures)) + rng.uniform(0.0, 5.0)
            params = _update("Documents", dict(doc7), append, {"#c": "comments"})
            self.emit(ts, p, "UpdateItem", params, ("Documents",), False, too_big)
        for i in range(w.doc913_failures):
            ts = t0 + span * 0.5 + i * rng.uniform(0.5, 3.0)
            params = _put("Documents", {"docId": "DOC#913"}, names)
            self.emit(ts, p, "PutItem", params, ("Documents",), False, (VALIDATION, ITEM_SIZE_MESSAGE))

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
        if rng.random() < 0.5:
            items.append(
                {
                    "operation": "ConditionCheck",
                    "TableName": "Catalog",
                    "Key": {"pk": product, "sk": "DETAILS"},
                    "ConditionExpression": "#st = :active",
                    "ExpressionAttributeNames": {"#st": "state"},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            )
        if rng.random() < 0.3:
            items.append(
                {
                    "operation": "Delete",
                    "TableName": "Catalog",
                    "key": {"pk": product, "sk": "RESERVATION#" + self.f.uuid()},
                    "conditionExpression": "#e < :now",
                    "expressionAttributeNames": {"#e": "expiresAt"},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            )
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
                error = (TXN_CANCELED, TXN_CANCELED_MESSAGE) if rng.random() < 0.04 else None
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
        for ts in _times(rng, _count(w.users_rate, span), t0, span):
            key = {"userId": f"USER#{rng.randint(1, w.users)}"}
            r = rng.random()
            if r < 0.7:
                self.emit(ts, p, "GetItem", _get("Users", key), ("Users",), True)
            elif r < 0.85:
                params = _update("Users", key, "SET #p = :p, updatedAt = :now", {"#p": "preferences"})
                self.emit(ts, p, "UpdateItem", params, ("Users",), False)
            elif r < 0.9:
                params = _put("Users", key, names, "attribute_not_exists(userId)")
                self.emit(ts, p, "PutItem", params, ("Users",), False)
            else:
                params = _query("Users", "email = :e", index="ByEmail", limit=1)
                self.emit(ts, p, "Query", params, ("Users",), True)


def generate_workload(workload: Workload, start: datetime) -> list[Record]:
    """All the records of ``workload`` from ``start``, sorted by event time."""
    return _Demo(workload, start).run()


def demo_workload(start: datetime, hours: float = 1.0, seed: int = 7) -> list[Record]:
    """The demo traffic with the planted problems of the module docstring, sorted by event time."""
    return generate_workload(Workload(hours=hours, seed=seed), start)


# ---------------------------------------------------------------------------------------------------------------
# Writing log files and the trail layout
# ---------------------------------------------------------------------------------------------------------------

_FLUSH_EVERY: Final = 1024


def _open_out(path: Path, gz: bool) -> io.BufferedIOBase:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        # GzipFile rather than gzip.open so that mtime=0 makes the bytes reproducible.
        return gzip.GzipFile(filename=str(path), mode="wb", compresslevel=6, mtime=0)
    return path.open("wb")


def _write_records(records: Iterable[Record], path: Path, gz: bool) -> tuple[int, str]:
    """Stream ``{"Records":[...]}`` to ``path``; returns (records written, SHA-256 of the uncompressed bytes)."""
    digest = hashlib.sha256()
    dumps = orjson.dumps
    count = 0
    with _open_out(path, gz) as out:
        buf: list[bytes] = [b'{"Records":[']
        for rec in records:
            if count:
                buf.append(b",")
            buf.append(dumps(rec))
            count += 1
            if len(buf) >= _FLUSH_EVERY:
                chunk = b"".join(buf)
                digest.update(chunk)
                out.write(chunk)
                buf.clear()
        buf.append(b"]}")
        chunk = b"".join(buf)
        digest.update(chunk)
        out.write(chunk)
    return count, digest.hexdigest()


def write_log_file(records: Iterable[Record], path: Path, gz: bool = True) -> int:
    """Write one CloudTrail log file ``{"Records":[...]}`` (gzip when ``gz``), streaming; returns the count."""
    return _write_records(records, Path(path), gz)[0]


def write_large_log_file(path: Path, n: int, distinct_keys: int, seed: int = 1) -> int:
    """Stream :func:`benchmark_records` into one gzip log file without holding the records; returns ``n``."""
    return write_log_file(benchmark_records(n, distinct_keys, seed=seed), Path(path), gz=True)


def _event_ts(record: Record) -> float:
    value = record.get("eventTime")
    if not isinstance(value, str):
        raise ValueError("record without eventTime")
    return datetime.fromisoformat(value).timestamp()


def _stamp(ts: float, fmt: str) -> str:
    return time.strftime(fmt, time.gmtime(ts))


@dataclass(slots=True)
class _LogFile:
    publish: float
    records: list[tuple[float, Record]]
    path: Path | None = None
    key: str = ""
    sha256: str = ""


def write_trail(
    records: Iterable[Record],
    out_dir: Path,
    account: str = DEFAULT_ACCOUNT,
    region: str = DEFAULT_REGION,
    *,
    seed: int = 7,
    file_minutes: float = 5,
    duplicates: int = 5,
    trail_name: str = "ddb-data-events",
    bucket: str | None = None,
    late_fraction: float = 0.005,
) -> list[Path]:
    """Write ``records`` as a CloudTrail trail would deliver them to S3, under ``out_dir``.

    Returns the log files in delivery order, followed by the digest files (their paths contain
    ``/CloudTrail-Digest/``). See the module docstring for the layout and the imperfections it reproduces.
    """
    out_dir = Path(out_dir)
    rng = random.Random(f"trail:{seed}")
    period = max(1.0, file_minutes * 60.0)
    bucket = bucket or f"aws-cloudtrail-logs-{account}-{rng.getrandbits(32):08x}"

    buckets: dict[int, list[tuple[float, Record]]] = {}
    for rec in records:
        ts = _event_ts(rec)
        slot = int(ts // period)
        if rng.random() < late_fraction:
            slot += 1  # delivered in the next file
        # A jittered sort key: the records of a file end up only roughly in time order.
        buckets.setdefault(slot, []).append((ts + rng.uniform(0.0, 40.0), rec))

    files: list[_LogFile] = []
    for slot in sorted(buckets):
        entries = buckets[slot]
        entries.sort(key=itemgetter(0))
        files.append(_LogFile(publish=(slot + 1) * period + rng.uniform(20.0, 240.0), records=entries))
    if duplicates > 0 and len(files) == 1 and len(files[0].records) > 1:
        # CloudTrail splits busy periods into several files: split so duplicates can cross files.
        only = files[0]
        half = len(only.records) // 2
        files = [
            _LogFile(only.publish, only.records[:half]),
            _LogFile(only.publish + rng.uniform(1.0, 30.0), only.records[half:]),
        ]
    if duplicates > 0 and len(files) > 1:
        chosen: set[int] = set()  # each duplicated record appears exactly twice
        for _ in range(duplicates * 20):
            if len(chosen) == duplicates:
                break
            i = rng.randrange(len(files))
            source = files[i].records
            if not source:
                continue
            entry = source[rng.randrange(len(source))]
            if id(entry[1]) in chosen:
                continue
            chosen.add(id(entry[1]))
            target = files[i + 1 if i + 1 < len(files) else i - 1].records
            target.insert(rng.randrange(len(target) + 1), entry)

    prefix = f"AWSLogs/{account}/CloudTrail/{region}"
    written: list[Path] = []
    for lf in files:
        name = f"{account}_CloudTrail_{region}_{_stamp(lf.publish, '%Y%m%dT%H%MZ')}_{_rand_str(rng, _ALNUM, 16)}"
        lf.key = f"{prefix}/{_stamp(lf.publish, '%Y/%m/%d')}/{name}.json.gz"
        lf.path = out_dir / lf.key
        _, lf.sha256 = _write_records((rec for _, rec in lf.records), lf.path, gz=True)
        written.append(lf.path)
    written.extend(_write_digests(files, out_dir, account, region, trail_name, bucket, rng))
    return written


def _write_digests(
    files: Sequence[_LogFile],
    out_dir: Path,
    account: str,
    region: str,
    trail_name: str,
    bucket: str,
    rng: random.Random,
) -> list[Path]:
    """Hourly digest files (cloudtrail.md §2.1, CT-UG digest file structure) listing the log files."""
    if not files:
        return []
    offset = rng.uniform(0.0, 3600.0)
    by_hour: dict[int, list[_LogFile]] = {}
    for lf in files:
        by_hour.setdefault(int((lf.publish - offset) // 3600.0), []).append(lf)
    fingerprint = format(rng.getrandbits(128), "032x")
    previous: tuple[str, str, str] | None = None  # (object key, sha256, signature)
    paths: list[Path] = []
    for hour in range(min(by_hour), max(by_hour) + 1):
        start = hour * 3600.0 + offset
        end = start + 3600.0
        members = by_hour.get(hour, [])
        key = (
            f"AWSLogs/{account}/CloudTrail-Digest/{region}/{_stamp(end, '%Y/%m/%d')}/"
            f"{account}_CloudTrail-Digest_{region}_{trail_name}_{region}_{_stamp(end, '%Y%m%dT%H%M%SZ')}.json.gz"
        )
        log_entries = []
        for lf in members:
            times = [_event_ts(rec) for _, rec in lf.records]
            log_entries.append(
                {
                    "s3Bucket": bucket,
                    "s3Object": lf.key,
                    "hashValue": lf.sha256,
                    "hashAlgorithm": "SHA-256",
                    "newestEventTime": _iso(max(times)) if times else None,
                    "oldestEventTime": _iso(min(times)) if times else None,
                }
            )
        newest = [e["newestEventTime"] for e in log_entries if e["newestEventTime"]]
        oldest = [e["oldestEventTime"] for e in log_entries if e["oldestEventTime"]]
        digest: dict[str, Any] = {
            "awsAccountId": account,
            "digestStartTime": _iso(start),
            "digestEndTime": _iso(end),
            "digestS3Bucket": bucket,
            "digestS3Object": key,
            "digestPublicKeyFingerprint": fingerprint,
            "digestSignatureAlgorithm": "SHA256withRSA",
            "newestEventTime": max(newest) if newest else None,
            "oldestEventTime": min(oldest) if oldest else None,
            "previousDigestS3Bucket": bucket if previous else None,
            "previousDigestS3Object": previous[0] if previous else None,
            "previousDigestHashValue": previous[1] if previous else None,
            "previousDigestHashAlgorithm": "SHA-256" if previous else None,
            "previousDigestSignature": previous[2] if previous else None,
            "logFiles": log_entries,
        }
        body = orjson.dumps(digest)
        path = out_dir / key
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(filename=str(path), mode="wb", compresslevel=6, mtime=0) as out:
            out.write(body)
        previous = (key, hashlib.sha256(body).hexdigest(), format(rng.getrandbits(2048), "0512x"))
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------------------------
# Benchmark records (streamed)
# ---------------------------------------------------------------------------------------------------------------

_BENCH_TABLES: Final = ("Accounts", "Carts", "DeviceEvents", "Profiles")
_MASK48: Final = (1 << 48) - 1
_ODD48: Final = 0x9E3779B97F4B  # odd: multiplication by it is a bijection modulo 2**48
_PERM10: Final = 2654435761  # coprime with 10: a bijection modulo 10**10

# (cumulative probability, operation) of the benchmark's operation mix.
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
    f = _Factory(rng, account, region)
    salt = rng.getrandbits(32)
    # Lambda functions (session name = function name) with compact user agents: ~1.2 KB per record.
    principals = [
        f.role(name, [f"{name}-fn"], ua, _private_ips(rng, 1, i + 1), tls)
        for i, (name, ua, tls) in enumerate(
            (
                ("account-service", UA_BOTO3, _TLS13),
                ("cart-api", UA_GO, _TLS13),
                ("telemetry-ingest", UA_GO, _TLS13),
                ("profile-service", UA_BOTO3, _TLS13),
                ("checkout", UA_BOTO3, _TLS12),
                ("notifications", UA_GO, _TLS13),
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
    choose: Callable[[Sequence[_Principal]], _Principal] = rng.choice
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
        error: _Error | None = None
        e = rand()
        if e < 0.004:
            error = (PTEE, PTEE_MESSAGE)
        elif e < 0.006:
            error = (THROTTLING, THROTTLING_MESSAGE)
        if op in ("GetItem", "PutItem", "UpdateItem", "DeleteItem"):
            table, key = _bench_key(picker.pick(i), salt, ts_iso)
            if op == "GetItem":
                yield record(ts, p, op, _get(table, key, consistent=rand() < 0.2), (table,), True, error)
            elif op == "PutItem":
                params = _put(table, key, _BENCH_ATTRS[table])
                yield record(ts, p, op, params, (table,), False, error)
            elif op == "UpdateItem":
                condition = "attribute_exists(#v)" if rand() < 0.3 else None
                if error is None and condition is not None and rand() < 0.05:
                    error = (CONDITIONAL_FAILED, CONDITIONAL_FAILED_MESSAGE)
                params = _update(table, key, "SET #v = #v + :one, updatedAt = :now", {"#v": "version"}, condition)
                yield record(ts, p, op, params, (table,), False, error)
            else:
                yield record(ts, p, op, _delete(table, key), (table,), False, error)
        elif op == "Query":
            table = _BENCH_TABLES[int(rand() * 4)]
            attr = _BENCH_ATTRS[table][0]
            params = _query(table, "#k = :k", names={"#k": attr}, limit=50, forward=rand() < 0.5)
            yield record(ts, p, op, params, (table,), True, error)
        elif op == "Scan":
            table = _BENCH_TABLES[int(rand() * 4)]
            params = {"tableName": table, "limit": 1000, "segment": int(rand() * 8), "totalSegments": 8}
            yield record(ts, analyst, op, params, (table,), True, error)
        elif op == "BatchGetItem":
            by_table: dict[str, list[dict[str, Any]]] = {}
            for _ in range(2 + int(rand() * 4)):
                table, key = _bench_key(picker.pick(i), salt, ts_iso)
                by_table.setdefault(table, []).append(key)
            params = {"requestItems": {t: {"keys": ks} for t, ks in by_table.items()}}
            yield record(ts, p, op, params, tuple(by_table), True, error)
        elif op == "BatchWriteItem":
            writes: dict[str, list[dict[str, Any]]] = {}
            for _ in range(2 + int(rand() * 3)):
                table, key = _bench_key(picker.pick(i), salt, ts_iso)
                if rand() < 0.8:
                    request: dict[str, Any] = {"putRequest": {"key": key, "item": list(_BENCH_ATTRS[table])}}
                else:
                    request = {"deleteRequest": {"key": key}}
                writes.setdefault(table, []).append(request)
            params = {"requestItems": writes, "returnConsumedCapacity": "TOTAL"}
            yield record(ts, p, op, params, tuple(writes), False, error)
        elif op == "TransactWriteItems":
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
            params = {"requestItems": items, "returnConsumedCapacity": "TOTAL"}
            yield record(ts, p, op, params, tables, False, error)
        else:  # ExecuteStatement: a key lookup, sometimes with a redacted non-key condition
            table, key = _bench_key(picker.pick(i), salt, ts_iso)
            where = " AND ".join(f"{a} = '{v}'" for a, v in key.items())
            stmt = f'SELECT * FROM "{table}" WHERE {where}'
            if rand() < 0.3:
                stmt += f" AND status = {REDACTED}"
            yield record(ts, p, op, {"statement": stmt}, (table,), False, error)


# ---------------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------------


def _parse_start(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m auditor.demo.generator``: write a demo trail or one large benchmark log file."""
    parser = argparse.ArgumentParser(
        prog="python -m auditor.demo.generator", description="Generate realistic CloudTrail DynamoDB data events."
    )
    parser.add_argument("--out", type=Path, help="write the demo workload as a CloudTrail trail under DIR")
    parser.add_argument("--hours", type=float, default=1.0, help="length of the demo window (default 1)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default 7, or 1 for --benchmark)")
    parser.add_argument("--start", type=_parse_start, default=DEFAULT_START, help="ISO-8601 start (UTC)")
    parser.add_argument("--account", default=DEFAULT_ACCOUNT)
    parser.add_argument("--region", default=DEFAULT_REGION)
    parser.add_argument("--duplicates", type=int, default=5, help="records duplicated across files (default 5)")
    parser.add_argument("--benchmark", type=int, metavar="N", help="write N benchmark records to --file")
    parser.add_argument("--distinct-keys", type=int, metavar="K", help="distinct partition keys (benchmark)")
    parser.add_argument("--file", type=Path, help="output .json.gz file of --benchmark")
    args = parser.parse_args(argv)

    began = time.perf_counter()
    if args.benchmark is not None:
        if args.file is None:
            parser.error("--benchmark needs --file")
        keys = args.distinct_keys if args.distinct_keys is not None else max(1, args.benchmark // 4)
        seed = 1 if args.seed is None else args.seed
        try:
            count = write_large_log_file(args.file, args.benchmark, keys, seed)
        except ValueError as exc:
            parser.error(str(exc))
        size = args.file.stat().st_size
        elapsed = time.perf_counter() - began
        print(f"wrote {count} records ({keys} distinct keys) to {args.file}: {size / 1e6:.1f} MB in {elapsed:.1f} s")
        return 0
    if args.out is None:
        parser.error("give --out DIR (demo trail) or --benchmark N --file PATH")
    seed = 7 if args.seed is None else args.seed
    workload = Workload(account=args.account, region=args.region, hours=args.hours, seed=seed)
    records = generate_workload(workload, args.start)
    paths = write_trail(records, args.out, args.account, args.region, seed=seed, duplicates=args.duplicates)
    digests = sum(1 for p in paths if "CloudTrail-Digest" in p.parts)
    elapsed = time.perf_counter() - began
    print(
        f"wrote {len(records)} records in {len(paths) - digests} log files and {digests} digest file(s) "
        f"under {args.out} in {elapsed:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Detection workloads with ground truth: precision and recall per finding kind.

Run from the repository root::

    python -m benchmarks.workloads [--scale S] [--seed N]

Each scenario is an independent table (or set of tables) whose CloudTrail records are generated here, in the
record shapes of the AWS samples and real captures (Query with ``key``, Scan pages with ``limit`` and
``exclusiveStartKey``, PartiQL with ``***(Redacted)``, ``ThrottlingException``/``ProvisionedThroughputExceeded``
errors), together with the findings an expert expects (the truth) and the ones that must not appear. The records
go through ``analyze_trail`` exactly as the CLI runs it, and every finding is matched against the truth:

- ``hot_key``: (table, partition-key value), every key a finding names (``evidence.key`` and ``evidence.keys``);
- ``throttling``: (table, cause);
- ``scan``: (table, principal, operation), plus the logical scan count;
- ``low_cardinality_key``: (table).

Scenarios: per-key bursts at absolute rates in a long trail, a busy table's second key at 63% of a partition, five
identical bursts, throttles concentrated on a key (provisioned and on-demand), a table-wide on-demand spike, spread
provisioned throttles, a burst hot only in write units (large items, their size given as ``--config`` gives it),
paginated and parallel scans, a Limit-1 probe, PartiQL with redacted non-key equalities, a day-bucket partition key,
a uniform table and a tiny configuration table (negative controls), and one table in two regions. ``--scale``
shrinks the rates and durations' record counts (1.0 is the full size of the issue's cases).
It prints one line per kind and exits 0: it reports, it does not gate.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

ACCOUNT = "111122223333"
START = datetime(2026, 12, 3, 0, 0, tzinfo=UTC)
APP = f"arn:aws:iam::{ACCOUNT}:role/app"
EXPORTER = f"arn:aws:iam::{ACCOUNT}:role/nightly-export"
SWEEPER = f"arn:aws:iam::{ACCOUNT}:role/sweeper"
CONSOLE = f"arn:aws:iam::{ACCOUNT}:role/Admin"
PTE = "ProvisionedThroughputExceededException"
PTE_MESSAGE = "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."  # noqa: E501
TE = "ThrottlingException"
TE_MESSAGE = "Rate of requests exceeds the allowed throughput."

API = f"arn:aws:iam::{ACCOUNT}:role/users-api"
REPORTING = f"arn:aws:iam::{ACCOUNT}:role/reporting"
# The classic throttling messages, word for word from the DynamoDB API Reference (TransactWriteItems, "Errors",
# TransactionCanceledException: the ProvisionedThroughputExceeded and ThrottlingError messages), which are the
# messages of the same name the single-item calls answer; docs/capacity.md lists them.
ON_DEMAND_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or "
    "index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
GSI_PROVISIONED_MESSAGE = (
    "The level of configured provisioned throughput for one or more global secondary indexes of the table was "
    "exceeded. Consider increasing your provisioning level for the under-provisioned global secondary indexes with "
    "the UpdateTable API."
)
GSI_ON_DEMAND_MESSAGE = (
    "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically "
    "scaling your index so please try again shortly."
)
#: A write over 400 KB (DynamoDB developer guide, Programming.Errors: ValidationException).
ITEM_SIZE_MESSAGE = "Item size has exceeded the maximum allowed size"
#: Time to Live deletes: an AWS service's call (CloudTrail userIdentity element: ``type`` ``AWSService`` with the
#: service in ``invokedBy``), the service being DynamoDB itself (its TTL stream records name principal
#: ``dynamodb.amazonaws.com``: DynamoDB developer guide, time-to-live-ttl-streams).
TTL_IDENTITY: dict[str, Any] = {"type": "AWSService", "invokedBy": "dynamodb.amazonaws.com"}
#: Global-table replication: DynamoDB's service-linked role AWSServiceRoleForDynamoDBReplication (DynamoDB developer
#: guide, global tables: "Using IAM with global tables"), as CloudTrail shows an assumed role.
_SERVICE_ROLES = f"arn:aws:iam::{ACCOUNT}:role/aws-service-role"
REPLICATION_ROLE = f"{_SERVICE_ROLES}/replication.dynamodb.amazonaws.com/AWSServiceRoleForDynamoDBReplication"
REPLICATION_IDENTITY: dict[str, Any] = {
    "type": "AssumedRole",
    "principalId": "AROAEXAMPLE:replication",
    "arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/AWSServiceRoleForDynamoDBReplication/replication",
    "accountId": ACCOUNT,
    "sessionContext": {
        "sessionIssuer": {
            "type": "Role",
            "arn": REPLICATION_ROLE,
            "accountId": ACCOUNT,
            "userName": "AWSServiceRoleForDynamoDBReplication",
        }
    },
}

Truth = set[tuple[Any, ...]]


@dataclass
class Workload:
    """Generated records and what a correct analysis reports."""

    records: list[dict[str, Any]] = field(default_factory=list)
    #: kind -> the identities that must be reported
    expected: dict[str, Truth] = field(default_factory=dict)
    #: kind -> identities that must NOT be reported (negative controls); anything else unexpected is a false positive
    forbidden: dict[str, Truth] = field(default_factory=dict)
    #: (table, principal, operation) -> expected logical scan count
    logical_scans: dict[tuple[str, str, str], int] = field(default_factory=dict)
    #: (kind, identity) -> the severities accepted
    severities: dict[tuple[str, tuple[Any, ...]], set[str]] = field(default_factory=dict)
    #: What the analysis is told that CloudTrail does not log (``--config``): typical item size per table.
    item_size_bytes: dict[str, int] = field(default_factory=dict)
    #: (kind, table) -> how many findings of that kind the table must get (one per problem, not one per key)
    finding_counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def expect(self, kind: str, ident: tuple[Any, ...], severities: set[str] | None = None) -> None:
        self.expected.setdefault(kind, set()).add(ident)
        if severities:
            self.severities[(kind, ident)] = severities


class Gen:
    """Record builder (seeded: the same seed gives the same records)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def record(
        self,
        name: str,
        table: str,
        t: float,
        params: dict[str, Any],
        *,
        principal: str = APP,
        region: str = "us-east-1",
        error: tuple[str, str] | None = None,
        identity: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        when = START + timedelta(seconds=t)
        role = principal.rsplit("/", 1)[-1]
        rec: dict[str, Any] = {
            "eventVersion": "1.09",
            "userIdentity": identity
            or {
                "type": "AssumedRole",
                "principalId": f"AROAEXAMPLE:{role}-session",
                "arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{role}-session",
                "accountId": ACCOUNT,
                "sessionContext": {
                    "sessionIssuer": {"type": "Role", "arn": principal, "accountId": ACCOUNT, "userName": role}
                },
            },
            "eventTime": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "eventSource": "dynamodb.amazonaws.com",
            "eventName": name,
            "awsRegion": region,
            "sourceIPAddress": "10.0.0.1",
            "userAgent": "aws-sdk-java/2.25.0",
            "requestParameters": {"tableName": table, **params},
            "responseElements": None,
            "requestID": uuid.UUID(int=self.rng.getrandbits(128)).hex.upper()[:32],
            "eventID": str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
            "readOnly": name in ("GetItem", "Query", "Scan"),
            "resources": [
                {
                    "accountId": ACCOUNT,
                    "type": "AWS::DynamoDB::Table",
                    "ARN": f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{table}",
                }
            ],
            "eventType": "AwsApiCall",
            "apiVersion": "2012-08-10",
            "managementEvent": False,
            "recipientAccountId": ACCOUNT,
            "eventCategory": "Data",
        }
        if error is not None:
            rec["errorCode"], rec["errorMessage"] = error
        return rec

    def spread(self, start: float, seconds: float, n: int) -> Iterator[float]:
        """``n`` event times spread evenly over ``seconds`` from ``start`` (with jitter inside each slot)."""
        step = seconds / n
        for i in range(n):
            yield start + i * step + self.rng.random() * step


def build(scale: float = 1.0, seed: int = 7) -> Workload:
    """All scenarios. ``scale`` multiplies every rate-times-duration record count (rates stay absolute where a
    scenario is about a rate: durations shrink instead)."""
    g = Gen(seed)
    w = Workload()
    r = w.records

    def dur(seconds: float) -> float:
        return max(2.0, seconds * scale)

    def put(table: str, t: float, key: dict[str, Any], **kw: Any) -> None:
        r.append(g.record("PutItem", table, t, {"key": key, "item": [*key, "payload"]}, **kw))

    def get(table: str, t: float, key: dict[str, Any], **kw: Any) -> None:
        r.append(g.record("GetItem", table, t, {"key": key, "consistentRead": False}, **kw))

    hour = 3600.0
    # The trail covers one hour: a quiet background read on a reference table spans it.
    for t in g.spread(0, hour, 3600):
        get("Reference", t, {"id": f"REF#{g.rng.randrange(5000)}"})

    # 1. A key at 1,200 writes/s for 90 s inside the hour: critical whatever the trail's length.
    for t in g.spread(1200, dur(90), int(1200 * dur(90))):
        put("Telemetry", t, {"deviceId": "DEVICE#0042", "ts": f"{t:.3f}"})
    for t in g.spread(0, hour, 3000):
        put("Telemetry", t, {"deviceId": f"DEVICE#{g.rng.randrange(10_000):04d}", "ts": f"{t:.3f}"})
    w.expect("hot_key", ("Telemetry", "DEVICE#0042"), {"critical"})

    # 2. A busy table: the hottest key at 1,500 writes/s, the second at 627 writes/s (63% of a partition).
    busy = dur(30)
    for t in g.spread(600, busy, int(1500 * busy)):
        put("Ledger", t, {"accountId": "ACCT#1", "entry": f"{t:.4f}"})
    for t in g.spread(600, busy, int(627 * busy)):
        put("Ledger", t, {"accountId": "ACCT#2", "entry": f"{t:.4f}"})
    for t in g.spread(600, busy, int(2000 * busy)):
        put("Ledger", t, {"accountId": f"ACCT#{g.rng.randrange(3, 100_000)}", "entry": f"{t:.4f}"})
    w.expect("hot_key", ("Ledger", "ACCT#1"), {"critical"})
    w.expect("hot_key", ("Ledger", "ACCT#2"), {"high"})

    # 3. Five identical bursts of 950 writes/s on five keys: all five reported.
    for k in range(5):
        for t in g.spread(1800 + k * 30, dur(20), int(950 * dur(20))):
            put("Counters", t, {"counter": f"C{k}"})
        w.expect("hot_key", ("Counters", f"C{k}"), {"high", "critical"})
    w.expect("low_cardinality_key", ("Counters",))  # five keys take all of the table's traffic

    # 4a. Provisioned table: one key with 60% of the traffic and all the throttles -> key_range, hot key linked.
    for t in g.spread(2400, dur(60), int(700 * dur(60))):
        put("Carts", t, {"cartId": "CART#hot"})
    for t in g.spread(2400, dur(60), int(460 * dur(60))):
        put("Carts", t, {"cartId": f"CART#{g.rng.randrange(50_000)}"})
    for t in g.spread(2400, dur(60), int(300 * dur(60))):
        put("Carts", t, {"cartId": "CART#hot"}, error=(PTE, PTE_MESSAGE))
    w.expect("throttling", ("Carts", "key_range"))
    w.expect("hot_key", ("Carts", "CART#hot"), {"critical"})

    # 4b. On-demand: ThrottlingException, 95% of the throttles on one key -> key_range.
    for t in g.spread(3000, dur(30), int(500 * dur(30))):
        get("Sessions", t, {"sessionId": f"S#{g.rng.randrange(100_000)}"})
    for t in g.spread(3000, dur(30), int(100 * dur(30))):
        key = "S#celebrity" if g.rng.random() < 0.95 else f"S#{g.rng.randrange(100_000)}"
        put("Sessions", t, {"sessionId": key}, error=(TE, TE_MESSAGE))
    for t in g.spread(3000, dur(30), int(1100 * dur(30))):
        put("Sessions", t, {"sessionId": "S#celebrity"})
    w.expect("throttling", ("Sessions", "key_range"))
    w.expect("hot_key", ("Sessions", "S#celebrity"), {"critical"})

    # 4c. On-demand table-wide spike: ThrottlingException spread over many keys -> on_demand_max.
    for t in g.spread(3300, dur(20), int(3000 * dur(20))):
        put("Clicks", t, {"clickId": f"K#{g.rng.randrange(1_000_000)}"})
    for t in g.spread(3300, dur(20), int(200 * dur(20))):
        put("Clicks", t, {"clickId": f"K#{g.rng.randrange(1_000_000)}"}, error=(TE, TE_MESSAGE))
    w.expect("throttling", ("Clicks", "on_demand_max"))
    w.forbidden.setdefault("hot_key", set()).add(("Clicks", "*"))

    # 4d. Large items: 220 writes/s for 10 s on one key of a table of 5 KB items is 1,100 WCU/s (past a partition's
    #     limit), although 220 requests/s alone would be 22%; its share of the hour is under 10%. Only the item size
    #     given in --config (CloudTrail logs none) makes it hot. A 1 KB table with the same burst stays quiet.
    w.item_size_bytes["Documents"] = 5000
    for table in ("Documents", "Notes"):
        for t in g.spread(1500, dur(10), int(220 * dur(10))):
            put(table, t, {"docId": "DOC#big"})
        for t in g.spread(0, hour, int(14 * 220 * dur(10))):  # the burst is 1/15 of the table's hour
            put(table, t, {"docId": f"DOC#{g.rng.randrange(1_000_000)}"})
    w.expect("hot_key", ("Documents", "DOC#big"), {"critical"})
    w.forbidden.setdefault("hot_key", set()).add(("Notes", "*"))

    # 4d. Provisioned, throttles spread over keys in proportion to traffic -> provisioned.
    for t in g.spread(900, dur(60), int(200 * dur(60))):
        put("Inventory", t, {"sku": f"SKU#{g.rng.randrange(20_000)}"})
    for t in g.spread(900, dur(60), int(40 * dur(60))):
        put("Inventory", t, {"sku": f"SKU#{g.rng.randrange(20_000)}"}, error=(PTE, PTE_MESSAGE))
    w.expect("throttling", ("Inventory", "provisioned"))

    # 5a. A paginated Scan (4 pages) every minute for the hour: 60 logical scans, on a request path.
    for minute in range(60):
        base = minute * 60 + 7 + g.rng.random()
        for page in range(4):
            params: dict[str, Any] = {"filterExpression": "#s = :s", "expressionAttributeNames": {"#s": "expired"}}
            if page:
                params["exclusiveStartKey"] = {"token": f"T#{minute}-{page}"}
            r.append(g.record("Scan", "Tokens", base + page * 0.4, params, principal=SWEEPER))
    w.expect("scan", ("Tokens", SWEEPER, "Scan"), {"high"})
    w.logical_scans[("Tokens", SWEEPER, "Scan")] = 60

    # 5b. A nightly parallel export: 16 segments x 40 pages, once -> one logical scan, low.
    for seg in range(16):
        for page in range(40):
            params = {"segment": seg, "totalSegments": 16}
            if page:
                params["exclusiveStartKey"] = {"orderId": f"O#{seg}-{page}"}
            r.append(g.record("Scan", "Orders", 60 + page * 1.5 + seg * 0.05, params, principal=EXPORTER))
    w.expect("scan", ("Orders", EXPORTER, "Scan"), {"low", "info"})
    w.logical_scans[("Orders", EXPORTER, "Scan")] = 1

    # 5c. A console Scan with limit 1 every minute: a bounded probe, not a full read.
    for minute in range(60):
        r.append(
            g.record("Scan", "Flags", minute * 60 + 30, {"limit": 1, "select": "ALL_ATTRIBUTES"}, principal=CONSOLE)
        )
    w.expect("scan", ("Flags", CONSOLE, "Scan"), {"low", "info"})
    w.logical_scans[("Flags", CONSOLE, "Scan")] = 60

    # 6. PartiQL: SELECT by a redacted non-key equality every 20 s (the "SQL habit"): a full scan. The table's
    #    classic calls log its key (email is not part of it).
    for i in range(180):
        r.append(
            g.record(
                "ExecuteStatement",
                "Customers",
                i * 20 + 3,
                {"statement": 'SELECT * FROM "Customers" WHERE "email" = ***(Redacted)'},
            )
        )
    for t in g.spread(0, hour, 600):
        get("Customers", t, {"customerId": f"CUST#{g.rng.randrange(10_000)}"})
    # ... and a parameterised statement on a non-key attribute, decided by the key names the trail logs.
    for i in range(120):
        r.append(
            g.record(
                "ExecuteStatement",
                "Customers",
                i * 30 + 11,
                {"statement": 'SELECT * FROM "Customers" WHERE "tier" = ?'},
                principal=SWEEPER,
            )
        )
    w.expect("scan", ("Customers", APP, "ExecuteStatement"), {"high"})
    w.expect("scan", ("Customers", SWEEPER, "ExecuteStatement"), {"high", "medium"})
    w.logical_scans[("Customers", APP, "ExecuteStatement")] = 180

    # 7. A day bucket: DAY#2026-12-03 takes every write of the day at 400 writes/s.
    for t in g.spread(0, dur(120), int(400 * dur(120))):
        put("DailyMetrics", t, {"pk": "DAY#2026-12-03", "sk": f"METRIC#{g.rng.randrange(10**9)}"})
    w.expect("hot_key", ("DailyMetrics", "DAY#2026-12-03"), {"medium", "high"})
    w.expect("low_cardinality_key", ("DailyMetrics",))  # one bucket value per day: one partition

    # 8. Negative controls: a uniform busy table, and a tiny configuration table read once a second.
    for t in g.spread(0, dur(60), int(2000 * dur(60))):
        get("Profiles", t, {"userId": f"U#{g.rng.randrange(200_000)}"})
    for t in g.spread(0, hour, 3600):
        get("Config", t, {"name": g.rng.choice(["flags", "limits", "prices", "regions"])})
    w.forbidden.setdefault("hot_key", set()).update({("Profiles", "*"), ("Config", "*")})
    w.expect("low_cardinality_key", ("Config",), {"low", "info"})

    # 9. One table in two regions (a global table): catalogue rows per region, shares add to 1 per region.
    for region in ("us-east-1", "eu-west-1"):
        for t in g.spread(0, hour, 500):
            r.append(
                g.record(
                    "Query",
                    "Catalog",
                    t,
                    {
                        "key": {"value": f"BRAND#{g.rng.randrange(50)}"},
                        "keyConditionExpression": "#n0 = :v0 AND begins_with(#n1, :v1)",
                        "expressionAttributeNames": {"#n0": "pk", "#n1": "sk"},
                    },
                    region=region,
                )
            )
            get("Catalog", t + 0.5, {"pk": f"BRAND#{g.rng.randrange(50)}", "sk": "META"}, region=region)
    _capacity_scenarios(g, w, dur)
    from benchmarks.workloads_index import index_scenarios  # its own module (it imports this one)

    index_scenarios(g, w, dur)
    return w


def _capacity_scenarios(g: Gen, w: Workload, dur: Any) -> None:
    """Issue 29's cases: throttling causes from every classic message, AWS services' own traffic, errors charged
    where they belong, logical scans from what is logged, and transactions metered at twice the units."""
    r = w.records
    hour = 3600.0

    def put(table: str, t: float, key: dict[str, Any], **kw: Any) -> None:
        r.append(g.record("PutItem", table, t, {"key": key, "item": [*key, "payload"]}, **kw))

    # 10a. A provisioned GSI that cannot absorb the writes: the base-table writes are throttled with the GSI message
    #      (spread over keys, as the index's capacity is what ran out) -> gsi_backpressure, advice about the index.
    for t in g.spread(600, dur(60), int(200 * dur(60))):
        put("Shipments", t, {"shipmentId": f"SHIP#{g.rng.randrange(100_000)}"})
    for t in g.spread(600, dur(60), int(40 * dur(60))):
        put("Shipments", t, {"shipmentId": f"SHIP#{g.rng.randrange(100_000)}"}, error=(PTE, GSI_PROVISIONED_MESSAGE))
    w.expect("throttling", ("Shipments", "gsi_backpressure"))
    # 10b. The same on an on-demand GSI (ThrottlingException with the on-demand GSI message).
    for t in g.spread(700, dur(30), int(300 * dur(30))):
        put("Events", t, {"eventId": f"EV#{g.rng.randrange(1_000_000)}"})
    for t in g.spread(700, dur(30), int(50 * dur(30))):
        put("Events", t, {"eventId": f"EV#{g.rng.randrange(1_000_000)}"}, error=(TE, GSI_ON_DEMAND_MESSAGE))
    w.expect("throttling", ("Events", "gsi_backpressure"))

    # 11. ProvisionedThroughputExceededException carrying the on-demand text: decided by the keys' spread.
    #     a) writes concentrated on one key -> key_range (and the key is hot);
    for t in g.spread(1000, dur(30), int(500 * dur(30))):
        put("Likes", t, {"postId": f"POST#{g.rng.randrange(100_000)}"})
    for t in g.spread(1000, dur(30), int(1100 * dur(30))):
        put("Likes", t, {"postId": "POST#viral"})
    for t in g.spread(1000, dur(30), int(100 * dur(30))):
        key = "POST#viral" if g.rng.random() < 0.95 else f"POST#{g.rng.randrange(100_000)}"
        put("Likes", t, {"postId": key}, error=(PTE, ON_DEMAND_MESSAGE))
    w.expect("throttling", ("Likes", "key_range"))
    w.expect("hot_key", ("Likes", "POST#viral"), {"critical"})
    #     b) spread over many keys -> on_demand_max;
    for t in g.spread(1100, dur(20), int(3000 * dur(20))):
        put("Views", t, {"viewId": f"V#{g.rng.randrange(1_000_000)}"})
    for t in g.spread(1100, dur(20), int(200 * dur(20))):
        put("Views", t, {"viewId": f"V#{g.rng.randrange(1_000_000)}"}, error=(PTE, ON_DEMAND_MESSAGE))
    w.expect("throttling", ("Views", "on_demand_max"))
    w.forbidden.setdefault("hot_key", set()).add(("Views", "*"))
    #     c) strongly consistent reads concentrated on one key -> key_range (and the key is hot).
    for t in g.spread(1300, dur(20), int(3500 * dur(20))):
        r.append(g.record("GetItem", "Feeds", t, {"key": {"feedId": "FEED#global"}, "consistentRead": True}))
    for t in g.spread(1300, dur(20), int(100 * dur(20))):
        key = "FEED#global" if g.rng.random() < 0.9 else f"FEED#{g.rng.randrange(100_000)}"
        params = {"key": {"feedId": key}, "consistentRead": True}
        r.append(g.record("GetItem", "Feeds", t, params, error=(PTE, ON_DEMAND_MESSAGE)))
    w.expect("throttling", ("Feeds", "key_range"))
    w.expect("hot_key", ("Feeds", "FEED#global"), {"critical"})

    # 12. AWS services' own traffic is not the users': Time to Live deleting 900 items/s of one partition, and
    #     global-table replication writing 1,200 items/s of one key, are no hot key (the users' reads are spread).
    for t in g.spread(1400, dur(30), int(900 * dur(30))):
        params = {"key": {"cartId": "CART#archive", "line": f"L#{g.rng.randrange(10**9)}"}}
        r.append(g.record("DeleteItem", "ExpiringCarts", t, params, identity=TTL_IDENTITY))
    for t in g.spread(1500, dur(30), int(1200 * dur(30))):
        put("GlobalCarts", t, {"cartId": "CART#team"}, principal=REPLICATION_ROLE, identity=REPLICATION_IDENTITY)
    for table in ("ExpiringCarts", "GlobalCarts"):
        for t in g.spread(0, hour, 1000):
            r.append(g.record("GetItem", table, t, {"key": {"cartId": f"CART#{g.rng.randrange(50_000)}"}}))
    w.forbidden.setdefault("hot_key", set()).update({("ExpiringCarts", "*"), ("GlobalCarts", "*")})

    # 13. Three BatchWriteItem calls of ten items rejected as a whole for one oversized item (BatchWriteItem has no
    #     CloudTrail sample: its API request shape, camel-cased like the logged PutItem) -> one finding, for the calls,
    #     not ten for keys that were not oversized.
    for i in range(3):
        writes = [{"putRequest": {"key": {"uploadId": f"UP#{i}-{n}"}}} for n in range(10)]
        params = {"requestItems": {"Uploads": writes}}
        r.append(
            g.record(
                "BatchWriteItem", "Uploads", 900 + i * 60, params, error=("ValidationException", ITEM_SIZE_MESSAGE)
            )
        )
    for t in g.spread(0, hour, 300):
        put("Uploads", t, {"uploadId": f"UP#{g.rng.randrange(10**6)}"})
    w.expect("item_size_exceeded", ("Uploads",), {"high"})
    w.finding_counts[("item_size_exceeded", "Uploads")] = 1

    # 14. An API role running a filtered full-table Scan twice a second for the hour, never with exclusiveStartKey:
    #     7,200 logical scans on a request path (high); a reporting role starting 400 independent scans at random
    #     times (some within 2 s of another): 400, not fewer.
    filtered = {"filterExpression": "#s = :s", "expressionAttributeNames": {"#s": "status"}}
    for i in range(7200):
        r.append(g.record("Scan", "Users", i * 0.5 + g.rng.random() * 0.1, dict(filtered), principal=API))
    w.expect("scan", ("Users", API, "Scan"), {"high"})
    w.logical_scans[("Users", API, "Scan")] = 7200
    for t in sorted(g.rng.random() * hour for _ in range(400)):
        r.append(g.record("Scan", "Reports", t, {}, principal=REPORTING))
    w.expect("scan", ("Reports", REPORTING, "Scan"), {"high"})
    w.logical_scans[("Reports", REPORTING, "Scan")] = 400

    # 15. A key written by TransactWriteItems 280 times a second: DynamoDB meters each transactional write at 2 WCU,
    #     so the key takes 560 WCU/s, past half a partition's 1,000 WCU (high). The request shape is the
    #     TransactWriteItems sample of the DynamoDB developer guide's CloudTrail page.
    for t in g.spread(2000, dur(30), int(280 * dur(30))):
        item = {
            "operation": "Update",
            "tableName": "Wallets",
            "key": {"walletId": "WALLET#whale"},
            "updateExpression": "SET #b = #b + :d",
            "expressionAttributeNames": {"#b": "balance"},
        }
        r.append(g.record("TransactWriteItems", "Wallets", t, {"requestItems": [item]}))
    for t in g.spread(0, hour, 2000):
        r.append(g.record("GetItem", "Wallets", t, {"key": {"walletId": f"WALLET#{g.rng.randrange(100_000)}"}}))
    w.expect("hot_key", ("Wallets", "WALLET#whale"), {"high"})

    # 16. A low-cardinality key (three status values) read by paginated, strongly consistent Queries: 2.5 Queries a
    #     second of five pages each on STATUS#open. Each of the four pages that log exclusiveStartKey shows that the
    #     page before it read a full 1 MB (256 RCU): about 2,560 RCU/s on one partition (high), not 12.5 units.
    #     The Query shape is the real captures' (the partition-key value in ``key``, next to the expression).
    for q, t in enumerate(g.spread(2200, 60, 150)):  # a full minute whatever the scale (750 records)
        for page in range(5):
            params: dict[str, Any] = {
                "key": {"status": "STATUS#open"},
                "keyConditionExpression": "#s = :s",
                "expressionAttributeNames": {"#s": "status"},
                "consistentRead": True,
            }
            if page:
                params["exclusiveStartKey"] = {"status": "STATUS#open", "ticketId": f"T#{q}-{page}"}
            r.append(g.record("Query", "Tickets", t + page * 0.05, params))
    for t in g.spread(0, hour, 300):
        status = g.rng.choice(["STATUS#closed", "STATUS#pending"])
        params = {
            "key": {"status": status},
            "keyConditionExpression": "#s = :s",
            "expressionAttributeNames": {"#s": "status"},
        }
        r.append(g.record("Query", "Tickets", t, params))
    w.expect("low_cardinality_key", ("Tickets",), {"high"})
    w.expect("hot_key", ("Tickets", "STATUS#open"), {"high", "critical"})


def identities(finding: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The truth identities one reported finding stands for."""
    kind, table, ev = finding["kind"], finding["table"], finding["evidence"]
    if kind == "hot_key":
        keys = [k["key"] for k in ev.get("keys", [])] or [ev["key"]]
        return [(table, next(iter(k.values()))) for k in keys]
    if kind == "throttling":
        return [(table, ev["cause"])]
    if kind == "scan":
        return [(table, ev["principal"], ev["operation"])]
    return [(table,)]


def facts(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each finding, or each fact of a story (one finding per problem and entity), as a finding of the fact's kind
    and severity (:func:`auditor.models.finding.fact_views`)."""
    from auditor.models.finding import fact_views

    return [view for f in findings for view in fact_views(f)]


@dataclass
class Score:
    kind: str
    tp: int = 0
    fp: int = 0
    fn: int = 0
    wrong_severity: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def score(workload: Workload, findings: list[dict[str, Any]]) -> dict[str, Score]:
    """Precision and recall per kind. A reported identity not in the truth is a false positive, except findings on
    tables the workload says nothing about for that kind (background tables) -- those are listed as false positives
    too, so the numbers are strict."""
    kinds = set(workload.expected) | {f["kind"] for f in findings} | set(workload.forbidden)
    scores = {k: Score(k) for k in kinds}
    reported: dict[str, dict[tuple[Any, ...], str]] = {}
    for f in facts(findings):
        for ident in identities(f):
            reported.setdefault(f["kind"], {})[ident] = f["severity"]
    for kind in kinds:
        truth = workload.expected.get(kind, set())
        got = reported.get(kind, {})
        s = scores[kind]
        for ident, severity in got.items():
            if ident in truth:
                s.tp += 1
                accepted = workload.severities.get((kind, ident))
                if accepted and severity not in accepted:
                    s.wrong_severity.append(f"{ident}: {severity} (expected {'/'.join(sorted(accepted))})")
            else:
                s.fp += 1
        s.fn += len(truth - set(got))
    return scores


def logical_errors(workload: Workload, findings: list[dict[str, Any]]) -> list[str]:
    """Scan findings whose logical count differs from the truth."""
    out = []
    for f in findings:
        if f["kind"] != "scan":
            continue
        ident = (f["table"], f["evidence"]["principal"], f["evidence"]["operation"])
        want = workload.logical_scans.get(ident)
        if want is not None and f["evidence"]["count"] != want:
            out.append(f"{ident}: {f['evidence']['count']} logical scans (expected {want})")
    return out


def count_errors(workload: Workload, findings: list[dict[str, Any]]) -> list[str]:
    """Tables whose number of findings of a kind differs from the truth (one per problem, not one per key)."""
    out = []
    for (kind, table), want in sorted(workload.finding_counts.items()):
        got = sum(1 for f in findings if f["kind"] == kind and f["table"] == table)
        if got != want:
            out.append(f"{kind} on {table}: {got} findings (expected {want})")
    return out


def run(scale: float, seed: int) -> tuple[Workload, dict[str, Any], float]:
    """Generate, analyse (as ``analyze-trail`` does) and return (workload, JSON document, seconds)."""
    from auditor.config import AnalysisConfig
    from auditor.engine import analyze_trail

    workload = build(scale, seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trail.json"
        path.write_bytes(orjson.dumps({"Records": workload.records}))
        started = time.perf_counter()
        result = analyze_trail([str(path)], AnalysisConfig(item_size_bytes=workload.item_size_bytes))
        elapsed = time.perf_counter() - started
    return workload, result.to_dict(), elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="record-count scale (default 1.0)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    workload, doc, elapsed = run(args.scale, args.seed)
    findings = doc["findings"]
    print(f"{len(workload.records):,} records analysed in {elapsed:.1f} s; {len(findings)} findings")
    print(f"{'kind':22} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}")
    for kind, s in sorted(score(workload, findings).items()):
        print(f"{kind:22} {s.tp:>4} {s.fp:>4} {s.fn:>4} {s.precision:>10.2f} {s.recall:>8.2f}")
        for line in s.wrong_severity:
            print(f"    severity: {line}")
    for line in logical_errors(workload, findings):
        print(f"    logical scans: {line}")
    for line in count_errors(workload, findings):
        print(f"    findings: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

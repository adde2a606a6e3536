"""Model-review workloads with ground truth (issue 33): one table per proposal kind, and healthy tables that must get
no proposal.

Run from the repository root::

    python -m benchmarks.workloads_review [--scale S] [--seed N]

Records are in the shapes CloudTrail logs DynamoDB data events (the ``Gen`` of :mod:`benchmarks.workloads`): a Scan's
``filterExpression`` with ``expressionAttributeNames`` and ``projectionExpression`` as the Scan API takes them
(DynamoDB API Reference, Scan), a Query's ``keyConditionExpression`` and ``filterExpression`` (API Reference, Query),
GetItem with ``key`` and ``consistentRead`` (API Reference, GetItem), and a PutItem refused with CloudTrail's
``ValidationException`` ``Item size has exceeded the maximum allowed size`` (Service, Account and Table Quotas: items
are limited to 400 KB). ``AUDIT`` is the ``ddb-audit audit`` document the review also reads (a large item, an unused
index, in the shape of their detectors' evidence). ``EXPECTED`` is the truth; :func:`score` gives precision and recall.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from benchmarks.workloads import ACCOUNT, ITEM_SIZE_MESSAGE, PTE, PTE_MESSAGE, Gen

USERS_API = f"arn:aws:iam::{ACCOUNT}:role/users-api"
ORDERS_API = f"arn:aws:iam::{ACCOUNT}:role/orders-api"
TICKETS_API = f"arn:aws:iam::{ACCOUNT}:role/tickets-api"
INGEST = f"arn:aws:iam::{ACCOUNT}:role/events-ingest"
CATALOG = f"arn:aws:iam::{ACCOUNT}:role/catalog-api"
NIGHTLY = f"arn:aws:iam::{ACCOUNT}:role/nightly-report"

#: (kind, table) of every proposal the review must make; any other proposal is a false positive.
EXPECTED: frozenset[tuple[str, str]] = frozenset(
    {
        ("add_gsi", "Users"),
        ("add_gsi", "Accounts"),
        ("query_instead_of_gets", "Orders"),
        ("shard_partition_key", "Events"),
        ("shard_partition_key", "Wallets"),
        ("composite_sort_key", "Tickets"),
        ("split_item", "Carts"),
        ("cache_reads", "Products"),
        ("drop_index", "Orders"),
    }
)
#: Tables with traffic close to each kind's thresholds, healthy: no proposal at all.
HEALTHY: frozenset[str] = frozenset({"Sessions", "Catalog", "Reports", "Profiles", "Feed", "Ledger", "Scores"})

#: The ``ddb-audit audit`` JSON the review reads with ``--audit`` (findings in their detectors' evidence shapes).
AUDIT: dict[str, Any] = {
    "findings": [
        {
            "id": "large-carts",
            "kind": "large_item",
            "table": "Carts",
            "account": ACCOUNT,
            "region": "us-east-1",
            "evidence": {"key": None, "size_bytes": 310_000, "limit_bytes": 409_600, "source": "cloudwatch"},
        },
        {
            "id": "unused-orders-legacy",
            "kind": "unused_index",
            "table": "Orders",
            "index": "ByLegacyStatus",
            "account": ACCOUNT,
            "region": "us-east-1",
            "evidence": {
                "days_analyzed": 30,
                "reads": 0,
                "writes": 2_600_000,
                "monthly_write_cost": 1.63,
                "monthly_storage_cost": 0.4,
                "monthly_read_capacity_cost": 0.0,
                "projection": "ALL",
            },
        },
    ],
    "tables": [{"table": "Users", "size_bytes": 2_000_000_000, "item_count": 1_000_000}],
}


def build(scale: float = 1.0, seed: int = 11) -> list[dict[str, Any]]:
    """Every scenario's records (ten minutes of traffic; ``scale`` shrinks the record counts, not the rates)."""
    g = Gen(seed)
    r: list[dict[str, Any]] = []
    span = max(180.0, 600 * scale)  # at least 75 customers' N+1 reads and 180 filtered Queries: over the thresholds

    def rec(name: str, table: str, t: float, params: dict[str, Any], principal: str, **kw: Any) -> None:
        r.append(g.record(name, table, t, params, principal=principal, **kw))

    # add_gsi: the users API finds a user by email with a filtered Scan twice a second (the measurement).
    for t in g.spread(0, span, int(2 * span)):
        scan = {
            "filterExpression": "#e = :e",
            "expressionAttributeNames": {"#e": "email", "#n": "name"},
            "projectionExpression": "userId, #n",
        }
        rec("Scan", "Users", t, scan, USERS_API)
    for t in g.spread(0, span, int(5 * span)):
        rec("PutItem", "Users", t, {"key": {"userId": f"U#{g.rng.randrange(10**6)}"}}, USERS_API)
    # add_gsi, PartiQL: a SELECT by a redacted non-key equality every 5 s (CloudTrail redacts non-key values in
    # PartiQL statements: "Logging DynamoDB operations by using AWS CloudTrail"); GetItems log the key, accountId.
    for t in g.spread(0, span, int(span / 5)):
        select = {"statement": 'SELECT * FROM "Accounts" WHERE "email" = ***(Redacted)'}
        rec("ExecuteStatement", "Accounts", t, select, USERS_API)
    for t in g.spread(0, span, int(span)):
        rec("GetItem", "Accounts", t, {"key": {"accountId": f"A#{g.rng.randrange(10**5)}"}}, USERS_API)
    # query_instead_of_gets: 15-25 GetItems of one customer's orders within a second (N+1), 1,500 customers an hour.
    for c, t0 in enumerate(g.spread(0, span, int(1500 * span / 3600))):
        customer = f"CUST#{c:05d}"
        for i, t in enumerate(g.spread(t0, 0.9, g.rng.randint(15, 25))):
            rec("GetItem", "Orders", t, {"key": {"customerId": customer, "orderId": f"ORD#{i:03d}"}}, ORDERS_API)
    # shard_partition_key: a date partition key written 2,500 times a second for 20 s.
    for t in g.spread(120, 20 * min(1.0, scale * 2), int(2500 * 20 * min(1.0, scale * 2))):
        rec("PutItem", "Events", t, {"key": {"day": "2026-12-03", "eventId": f"E#{t:.5f}"}}, INGEST)
    for t in g.spread(0, span, int(2 * span)):
        rec("PutItem", "Events", t, {"key": {"day": "2026-12-02", "eventId": f"E#{t:.5f}"}}, INGEST)
    # shard_partition_key, throttled: a provisioned table's key at 300 writes a second (3.3x headroom on paper) whose
    # writes are throttled with the provisioned-table message (DynamoDB API Reference, common errors): its partition
    # served less than the documented 1,000 units.
    burst = 20 * min(1.0, scale * 2)
    for t in g.spread(300, burst, int(300 * burst)):
        rec("PutItem", "Wallets", t, {"key": {"walletId": "WALLET#whale", "at": f"{t:.4f}"}}, INGEST)
    for t in g.spread(300, burst, 40):
        rec("PutItem", "Wallets", t, {"key": {"walletId": "WALLET#whale"}}, INGEST, error=(PTE, PTE_MESSAGE))
    for t in g.spread(0, span, int(span)):
        rec("PutItem", "Wallets", t, {"key": {"walletId": f"WALLET#{g.rng.randrange(10**5)}"}}, INGEST)
    # composite_sort_key: each tenant's tickets queried with a filter on status, every time.
    for t in g.spread(0, span, int(1 * span)):
        query = {
            "key": {"tenantId": f"T#{g.rng.randrange(50)}"},
            "keyConditionExpression": "#t = :t",
            "filterExpression": "#s = :s",
            "expressionAttributeNames": {"#t": "tenantId", "#s": "status"},
        }
        rec("Query", "Tickets", t, query, TICKETS_API)
    # split_item: carts growing past 400 KB: writes refused for size (and the audit's large_item).
    for t in g.spread(0, span, 6):
        rec(
            "PutItem",
            "Carts",
            t,
            {"key": {"cartId": "CART#big"}},
            ORDERS_API,
            error=("ValidationException", ITEM_SIZE_MESSAGE),
        )
    for t in g.spread(0, span, int(span)):
        rec("UpdateItem", "Carts", t, {"key": {"cartId": f"CART#{g.rng.randrange(10**5)}"}}, ORDERS_API)
    # cache_reads: one product read 2,500 times a second (strongly consistent) for 20 s, rarely written.
    for t in g.spread(200, 20 * min(1.0, scale * 2), int(2500 * 20 * min(1.0, scale * 2))):
        rec("GetItem", "Products", t, {"key": {"sku": "SKU#42"}, "consistentRead": True}, CATALOG)
    _healthy(g, rec, span)
    return r


def _healthy(g: Gen, rec: Any, span: float) -> None:
    """Tables near each kind's thresholds that must get nothing."""
    for t in g.spread(0, span, int(20 * span)):  # uniform keys, reads and writes
        key = {"sessionId": f"S#{g.rng.randrange(10**6)}"}
        rec("GetItem" if g.rng.random() < 0.7 else "PutItem", "Sessions", t, {"key": key}, USERS_API)
    for t in g.spread(0, span, int(span)):  # a Query filtered on a third of the calls only
        query: dict[str, Any] = {
            "key": {"category": f"CAT#{g.rng.randrange(20)}"},
            "keyConditionExpression": "category = :c",
        }
        if g.rng.random() < 0.33:
            query |= {"filterExpression": "#p < :p", "expressionAttributeNames": {"#p": "price"}}
        rec("Query", "Catalog", t, query, CATALOG)
    for t in (30.0, 330.0):  # two reporting scans: not a recurring access pattern
        rec("Scan", "Reports", t, {"filterExpression": "region = :r"}, NIGHTLY)
    for t in g.spread(0, span, int(10 * span)):  # one order of each customer: no burst on a partition
        key = {"customerId": f"CUST#{g.rng.randrange(10**6)}", "orderId": "ORD#000"}
        rec("GetItem", "Profiles", t, {"key": key}, ORDERS_API)
    for t0 in g.spread(0, span, int(span / 2)):  # the same item re-read in bursts: a retry loop, not an N+1 read
        for t in g.spread(t0, 0.9, 8):
            rec("GetItem", "Feed", t, {"key": {"feedId": "F#1", "postId": "P#1"}}, CATALOG)
    for t in g.spread(400, 20 * min(1.0, span / 300), int(300 * 20 * min(1.0, span / 300))):  # hot on paper only
        rec("PutItem", "Scores", t, {"key": {"game": "G#1", "at": f"{t:.4f}"}}, INGEST)
    for t in g.spread(0, span, int(span)):
        rec("PutItem", "Scores", t, {"key": {"game": f"G#{g.rng.randrange(10**4)}", "at": f"{t:.4f}"}}, INGEST)
    for t in g.spread(0, span, int(300 * span / 10)):  # busy but spread: 300 writes/s over many accounts
        rec("PutItem", "Ledger", t, {"key": {"accountId": f"A#{g.rng.randrange(10**4)}", "at": f"{t:.4f}"}}, INGEST)


def score(proposals: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Per kind: (precision, recall) of the proposals against :data:`EXPECTED`."""
    got = {(p["kind"], p["table"]) for p in proposals}
    out: dict[str, tuple[float, float]] = {}
    for kind in sorted({k for k, _ in EXPECTED} | {k for k, _ in got}):
        want = {e for e in EXPECTED if e[0] == kind}
        have = {e for e in got if e[0] == kind}
        hit = len(want & have)
        out[kind] = (hit / len(have) if have else 1.0, hit / len(want) if want else 1.0)
    return out


def run(scale: float = 1.0, seed: int = 11, replay: bool = False) -> dict[str, Any]:
    """Write the records and the audit to a temporary directory and run ``model-review`` on them (JSON)."""
    from contextlib import redirect_stdout
    from io import StringIO

    from auditor.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        trail = Path(tmp) / "trail.json"
        trail.write_bytes(orjson.dumps({"Records": build(scale, seed)}))
        audit = Path(tmp) / "audit.json"
        audit.write_bytes(orjson.dumps(AUDIT))
        out = StringIO()
        argv = [
            "model-review",
            str(trail),
            "--audit",
            str(audit),
            "--format",
            "json",
            *(["--replay"] if replay else []),
        ]
        with redirect_stdout(out):
            code = main(argv)
        if code != 0:
            raise RuntimeError(f"model-review exited {code}")
        result: dict[str, Any] = orjson.loads(out.getvalue())
        return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    doc = run(args.scale, args.seed)
    for kind, (precision, recall) in score(doc["proposals"]).items():
        print(f"{kind:24} precision {precision:.2f} recall {recall:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

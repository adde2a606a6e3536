"""Detection workloads of indexes (issue 29): each index is its own partition space, PartiQL on an index.

Run from the repository root::

    python -m benchmarks.workloads_index [--scale S] [--seed N]

The scenarios join :func:`benchmarks.workloads.build` (one independent table each) and can run alone here: a hot
index partition found by its share of the index's own traffic (8% of the table's), one found by its rate, a healthy
index with uniform keys, a low-cardinality index under a high-cardinality table, PartiQL statements on an index
that do and do not constrain the index's partition key (its value always redacted), and base-table writes that
amplify into an index until it throttles them. :data:`INDEXES` says which index each expected finding must name;
:func:`index_errors` checks it, and the share of each hot index key; :func:`what_if_errors` the index what-if names
first.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.workloads import (
    APP,
    GSI_PROVISIONED_MESSAGE,
    PTE,
    REPORTING,
    Gen,
    Workload,
    count_errors,
    logical_errors,
    score,
)

#: (kind, table) -> the index the finding must name
INDEXES: dict[tuple[str, str], str] = {
    ("hot_key", "TenantSessions"): "ByTenant",
    ("hot_key", "Devices"): "ByFleet",
    ("low_cardinality_key", "Tasks"): "ByStatus",
    ("throttling", "Parcels"): "ByCarrier",
}
#: table -> the index ``what-if`` must name first for it (it throttles now, at its metered writes)
WHAT_IF_FIRST: dict[str, str] = {"Parcels": "ByCarrier", "TenantSessions": "ByTenant"}
#: The GSI back-pressure throttles of scenario 22, whatever the scale (100 or more: a high throttling finding).
PARCEL_THROTTLES = 150
#: (table, key value) -> the key's share of its index's key-identified requests
SHARES: dict[tuple[str, str], float] = {("TenantSessions", "TENANT#acme"): 0.6}


def _index_query(g: Gen, table: str, index: str, attr: str, value: str, t: float) -> dict[str, Any]:
    """A Query of an index. The request shape is the Query API's (IndexName, KeyConditionExpression,
    ExpressionAttributeNames: DynamoDB API Reference, Query) as CloudTrail logs it, camel-cased, with the
    partition-key value in ``key`` as the real captures show (benchmarks.workloads, scenario 16). A Query of a
    global secondary index cannot ask for strongly consistent reads; the SDK sends no ``consistentRead`` by default,
    so none is logged (and the reads are metered as strongly consistent, the conservative reading)."""
    params = {
        "indexName": index,
        "key": {attr: value},
        "keyConditionExpression": "#k = :k",
        "expressionAttributeNames": {"#k": attr},
    }
    return g.record("Query", table, t, params)


def index_scenarios(g: Gen, w: Workload, dur: Any) -> None:
    """Issue 29's index cases (points 3 and 10), added to ``w``."""
    r = w.records
    hour = 3600.0

    def get(table: str, t: float, key: dict[str, Any]) -> None:
        r.append(g.record("GetItem", table, t, {"key": key}))

    # 17. A hot index partition seen by its share (the case). TenantSessions takes 1,000 reads/s and 100
    #     writes/s spread over its sessions; its GSI ByTenant (partition key tenantId) takes 150 Queries/s, 60% of
    #     them on TENANT#acme, and the writes that concentrate on acme's index partition are throttled with the GSI
    #     back-pressure message. acme has 8% of the table's key-identified requests but 60% of the index's: a hot
    #     key of the index, named on the index, with the index's own share (at 90 reads/s it is far below a
    #     partition's limits: low).
    start = 3000.0
    for t in g.spread(start, dur(60), int(1000 * dur(60))):
        get("TenantSessions", t, {"sessionId": f"S#{g.rng.randrange(1_000_000)}"})
    for t in g.spread(start, dur(60), int(100 * dur(60))):
        key = {"sessionId": f"S#{g.rng.randrange(1_000_000)}"}
        r.append(g.record("PutItem", "TenantSessions", t, {"key": key, "item": [*key, "tenantId"]}))
    for t in g.spread(start, dur(60), int(20 * dur(60))):
        key = {"sessionId": f"S#{g.rng.randrange(1_000_000)}"}
        error = (PTE, GSI_PROVISIONED_MESSAGE)
        r.append(g.record("PutItem", "TenantSessions", t, {"key": key, "item": [*key, "tenantId"]}, error=error))
    for t in g.spread(start, dur(60), int(150 * dur(60))):
        tenant = "TENANT#acme" if g.rng.random() < 0.6 else f"TENANT#{g.rng.randrange(50_000)}"
        r.append(_index_query(g, "TenantSessions", "ByTenant", "tenantId", tenant, t))
    w.expect("hot_key", ("TenantSessions", "TENANT#acme"), {"low"})
    w.expect("throttling", ("TenantSessions", "gsi_backpressure"))

    # 18. A hot index partition seen by its rate: 2,000 Queries/s of GSI ByFleet on FLEET#north (2,000 RCU/s of a
    #     partition's 3,000: high), next to 500 reads/s of the table and 200 Queries/s over other fleets.
    start = 3200.0
    for t in g.spread(start, dur(30), int(500 * dur(30))):
        get("Devices", t, {"deviceId": f"D#{g.rng.randrange(1_000_000)}"})
    for t in g.spread(start, dur(30), int(2000 * dur(30))):
        r.append(_index_query(g, "Devices", "ByFleet", "fleetId", "FLEET#north", t))
    for t in g.spread(start, dur(30), int(200 * dur(30))):
        r.append(_index_query(g, "Devices", "ByFleet", "fleetId", f"FLEET#{g.rng.randrange(1000)}", t))
    w.expect("hot_key", ("Devices", "FLEET#north"), {"high"})

    # 19. A healthy index: GSI ByEmail of Members queried 300 times a second over a million addresses, beside 300
    #     reads/s of the table: nothing to report.
    for t in g.spread(3300, dur(60), int(300 * dur(60))):
        r.append(_index_query(g, "Members", "ByEmail", "email", f"user{g.rng.randrange(1_000_000)}@example.com", t))
        get("Members", t, {"memberId": f"M#{g.rng.randrange(1_000_000)}"})
    w.forbidden.setdefault("hot_key", set()).add(("Members", "*"))
    w.forbidden.setdefault("low_cardinality_key", set()).add(("Members",))

    # 20. A low-cardinality index under a high-cardinality table: GSI ByStatus of Tasks (three status values) takes
    #     40 Queries/s, the table 50 reads/s over a million tasks. The table's keys do not hide the index's three
    #     values: low cardinality on the index (far below a partition's limits: low).
    for t in g.spread(0, dur(900), int(40 * dur(900))):
        status = g.rng.choice(["STATUS#open", "STATUS#done", "STATUS#failed"])
        r.append(_index_query(g, "Tasks", "ByStatus", "taskStatus", status, t))
    for t in g.spread(0, dur(900), int(50 * dur(900))):
        get("Tasks", t, {"taskId": f"T#{g.rng.randrange(1_000_000)}"})
    w.expect("low_cardinality_key", ("Tasks",), {"low"})

    # 21. PartiQL on an index (SELECT ... FROM "Table"."Index": DynamoDB developer guide, PartiQL select statements,
    #     ql-reference.select). CloudTrail redacts the values of the table's non-key attributes in PartiQL
    #     statements (DynamoDB developer guide, logging-using-cloudtrail: "Non key attribute values will be redacted
    #     in the CloudTrail logs of actions using the PartiQL API"), and an index's key attributes are such
    #     attributes, so the value of customerId below is always redacted. The index's key schema is learned from
    #     its Query records (customerId). The app selects by customerId every 2 s (index lookups: no scan); a
    #     reporting role selects by invoiceStatus every 30 s (a full scan of the index: 120 an hour, high).
    for t in g.spread(0, hour, 600):
        r.append(_index_query(g, "Invoices", "ByCustomer", "customerId", f"CUST#{g.rng.randrange(100_000)}", t))
        get("Invoices", t + 0.5, {"invoiceId": f"INV#{g.rng.randrange(1_000_000)}"})
    by_customer = 'SELECT * FROM "Invoices"."ByCustomer" WHERE "customerId" = ***(Redacted)'
    for i in range(1800):
        r.append(g.record("ExecuteStatement", "Invoices", i * 2 + 1, {"statement": by_customer}))
    by_status = 'SELECT * FROM "Invoices"."ByCustomer" WHERE "invoiceStatus" = ***(Redacted)'
    for i in range(120):
        params = {"statement": by_status}
        r.append(g.record("ExecuteStatement", "Invoices", i * 30 + 7, params, principal=REPORTING))
    w.expect("scan", ("Invoices", REPORTING, "ExecuteStatement"), {"high"})
    w.logical_scans[("Invoices", REPORTING, "ExecuteStatement")] = 120
    w.forbidden.setdefault("scan", set()).add(("Invoices", APP, "ExecuteStatement"))
    _amplification_scenarios(g, w, dur)


def _update(g: Gen, table: str, t: float, key: dict[str, Any], names: dict[str, str], **kw: Any) -> dict[str, Any]:
    """An UpdateItem as CloudTrail logs it: ``updateExpression`` and ``expressionAttributeNames``, no values (the
    UpdateItem sample of the DynamoDB developer guide's CloudTrail page, logging-using-cloudtrail)."""
    expression = "SET " + ", ".join(f"{p} = :v{i}" for i, p in enumerate(names))
    params = {"key": key, "updateExpression": expression, "expressionAttributeNames": names}
    return g.record("UpdateItem", table, t, params, **kw)


def _amplification_scenarios(g: Gen, w: Workload, dur: Any) -> None:
    """Write amplification (issue 29, point 1): a base-table write costs each GSI whose key attributes it touches,
    an update that changes an index key two index writes (a delete and a put: DynamoDB developer guide, GSI.html,
    "Provisioned throughput considerations for Global Secondary Indexes")."""
    r = w.records
    # 22. A provisioned table whose updates reassign parcels to carriers: 200 UpdateItems/s SET carrierId, the
    #     partition key of GSI ByCarrier (learned from its Queries), so each costs the index 2 writes (400 WCU/s at
    #     1 KB), and 20 PutItems/s carry carrierId (1 index write each). The index's provisioned capacity cannot
    #     absorb them: 150 base-table writes are throttled with the GSI back-pressure message (quoted from the
    #     DynamoDB API Reference, see benchmarks.workloads), which names no index. Expected: throttling, cause
    #     gsi_backpressure, on index ByCarrier (the index the writes amplify into), high (150 calls); what-if names
    #     ByCarrier first, throttling now at its metered writes. The table's own keys are spread: no hot key.
    start = 3400.0
    carrier = {"#c": "carrierId", "#u": "updatedAt"}
    for t in g.spread(start, dur(60), int(200 * dur(60))):
        r.append(_update(g, "Parcels", t, {"parcelId": f"PCL#{g.rng.randrange(1_000_000)}"}, carrier))
    for t in g.spread(start, dur(60), int(20 * dur(60))):
        key = {"parcelId": f"PCL#{g.rng.randrange(1_000_000)}"}
        r.append(g.record("PutItem", "Parcels", t, {"key": key, "item": [*key, "carrierId", "status"]}))
    for t in g.spread(start, dur(60), PARCEL_THROTTLES):
        key = {"parcelId": f"PCL#{g.rng.randrange(1_000_000)}"}
        r.append(_update(g, "Parcels", t, key, carrier, error=(PTE, GSI_PROVISIONED_MESSAGE)))
    for t in g.spread(start, dur(60), int(10 * dur(60))):
        r.append(_index_query(g, "Parcels", "ByCarrier", "carrierId", f"CARRIER#{g.rng.randrange(1_000_000)}", t))
    w.expect("throttling", ("Parcels", "gsi_backpressure"), {"high"})
    w.forbidden.setdefault("hot_key", set()).add(("Parcels", "*"))

    # 23. A healthy table with a GSI its updates never touch: Subscriptions takes 300 UpdateItems/s that SET
    #     lastSeen and renewals, never accountId (the partition key of GSI ByAccount, queried 50 times a second over a
    #     million accounts): the index takes no writes from them, nothing to report.
    seen = {"#l": "lastSeen", "#r": "renewals"}
    for t in g.spread(3500, dur(60), int(300 * dur(60))):
        r.append(_update(g, "Subscriptions", t, {"subscriptionId": f"SUB#{g.rng.randrange(1_000_000)}"}, seen))
    for t in g.spread(3500, dur(60), int(50 * dur(60))):
        account = f"ACCT#{g.rng.randrange(1_000_000)}"
        r.append(_index_query(g, "Subscriptions", "ByAccount", "accountId", account, t))
    for kind in ("hot_key", "throttling"):
        w.forbidden.setdefault(kind, set()).add(("Subscriptions", "*"))
    w.forbidden.setdefault("low_cardinality_key", set()).add(("Subscriptions",))


def index_errors(findings: list[dict[str, Any]]) -> list[str]:
    """Expected index findings that do not name their index, and hot index keys whose share is not the index's."""
    out = []
    for (kind, table), index in sorted(INDEXES.items()):
        for f in findings:
            if f["kind"] == kind and f["table"] == table and f.get("index") != index:
                out.append(f"{kind} on {table}: index {f.get('index')!r} (expected {index!r})")
    for (table, value), share in sorted(SHARES.items()):
        for f in findings:
            ev = f["evidence"]
            mine = f["kind"] == "hot_key" and f["table"] == table and value in ev["key"].values()
            if mine and abs(ev["share"] - share) > 0.05:
                out.append(f"{table} {value}: share {ev['share']} (expected about {share})")
    return out


def what_if_result(workload: Workload, growth: float = 2.0) -> dict[str, Any]:
    """``ddb-audit what-if`` of the workload's records (as the command reads a trail), as its JSON document."""
    from auditor.config import AnalysisConfig
    from auditor.engine import apply_table_facts
    from auditor.kernel.aggregates.window import AggregateSet
    from auditor.kernel.normalize import normalize_record
    from auditor.whatif.limits import what_if

    aggs = AggregateSet()
    for record in workload.records:
        call = normalize_record(record)
        if call is not None:
            aggs.add(call)
    spans = aggs.spans()
    for span in spans:
        apply_table_facts(span, AnalysisConfig(item_size_bytes=workload.item_size_bytes))
    return what_if(spans, growth).to_dict()


def what_if_errors(result: dict[str, Any]) -> list[str]:
    """Tables of :data:`WHAT_IF_FIRST` whose first what-if item is not their index throttling now, at metered writes;
    indexes their table's writes never touch that what-if lists."""
    out = []
    for table, index in sorted(WHAT_IF_FIRST.items()):
        first = next((i for i in result["items"] if i["table"] == table), None)
        if first is None or (first["index"], first["access"], first["throttles_now"]) != (index, "write", True):
            out.append(f"what-if on {table}: first {first} (expected index {index} throttling now)")
        elif not first["peak_per_second"] > 0:
            out.append(f"what-if on {table}: index {index} without its metered writes")
    untouched = [i for i in result["items"] if i["table"] == "Subscriptions" and i["index"] is not None]
    out += [f"what-if lists untouched index {i['index']} of Subscriptions" for i in untouched]
    return out


def build(scale: float = 1.0, seed: int = 7) -> Workload:
    """The index scenarios alone."""
    g = Gen(seed)
    w = Workload()

    def dur(seconds: float) -> float:
        return max(2.0, seconds * scale)

    index_scenarios(g, w, dur)
    return w


def run(scale: float, seed: int) -> tuple[Workload, dict[str, Any], float]:
    """Generate the index scenarios, analyse them as ``analyze-trail`` does, and return (workload, document, s)."""
    from auditor.config import AnalysisConfig
    from auditor.engine import analyze_trail

    workload = build(scale, seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trail.json"
        path.write_bytes(orjson.dumps({"Records": workload.records}))
        started = time.perf_counter()
        result = analyze_trail([str(path)], AnalysisConfig())
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
    errors = logical_errors(workload, findings) + count_errors(workload, findings) + index_errors(findings)
    for line in errors + what_if_errors(what_if_result(workload)):
        print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

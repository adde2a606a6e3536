"""The review signals: filter attributes of Queries and Scans, GetItem bursts on one partition."""

from __future__ import annotations

from typing import Any

from auditor.kernel.normalize import normalize_record
from auditor.review.model import BurstRule, ReviewConfig
from auditor.review.signals import ReviewSignals, expression_attributes
from benchmarks.workloads import Gen

API = "arn:aws:iam::111122223333:role/api"


def _observe(signals: ReviewSignals, records: list[dict[str, Any]]) -> None:
    for record in records:
        signals.observe(record, normalize_record(record))
    signals.fold()


def test_expression_attributes_tell_equality_from_range_and_resolve_names() -> None:
    assert expression_attributes("#e = :e AND begins_with(#n, :p)", {"#e": "email", "#n": "name"}) == (
        {"email"},
        {"name"},
    )
    assert expression_attributes("age BETWEEN :a AND :b OR #s IN (:x, :y)", {"#s": "state"}) == ({"state"}, {"age"})
    assert expression_attributes("attribute_exists(deleted) AND #t > :t", {"#t": "ttl"}) == (set(), {"deleted", "ttl"})


def test_a_query_filter_is_counted_per_key_template() -> None:
    g = Gen(1)
    records = []
    for i in range(10):
        params: dict[str, Any] = {"key": {"tenantId": f"T#{i}"}, "keyConditionExpression": "tenantId = :t"}
        if i < 7:
            params |= {"filterExpression": "#s = :s", "expressionAttributeNames": {"#s": "status"}}
        records.append(g.record("Query", "Tickets", float(i), params, principal=API))
    signals = ReviewSignals()
    _observe(signals, records)
    ((_, _, template), row), *_ = signals.queries.items()
    assert template == "tenantId=T#{n}"
    assert (row.queries, row.filtered, row.attrs) == (10, 7, {"status": 7})


def test_gets_of_distinct_items_of_one_partition_are_a_burst_and_one_item_reread_is_not() -> None:
    g = Gen(2)
    records = []
    for c in range(3):
        for i in range(6):
            key = {"customerId": f"C#{c}", "orderId": f"O#{i}"}
            records.append(g.record("GetItem", "Orders", c * 10 + i * 0.1, {"key": key}, principal=API))
        for _ in range(6):
            key = {"feedId": f"F#{c}", "postId": "P#1"}
            records.append(g.record("GetItem", "Feed", c * 10 + 0.5, {"key": key}, principal=API))
    signals = ReviewSignals(burst_min=5)
    _observe(signals, records)
    rows = {tk[2]: row for (tk, _, _), row in signals.gets.items()}
    assert (rows["Orders"].bursts, rows["Orders"].burst_gets, len(rows["Orders"].partitions)) == (3, 18, 3)
    assert rows["Feed"].bursts == 0


def test_failed_calls_and_records_that_are_no_data_event_are_skipped() -> None:
    g = Gen(3)
    record = g.record("Scan", "Users", 0.0, {"filterExpression": "email = :e"}, principal=API, error=("X", "y"))
    signals = ReviewSignals()
    _observe(signals, [record])
    signals.observe({"eventSource": "s3.amazonaws.com"}, None)
    assert not signals.scans


def test_a_full_scan_select_counts_its_redacted_equalities_as_its_filter() -> None:
    g = Gen(4)
    statement = 'SELECT * FROM "Users" WHERE "email" = ***(Redacted)'
    record = g.record("ExecuteStatement", "Users", 0.0, {"statement": statement}, principal=API)
    signals = ReviewSignals()
    _observe(signals, [record])
    ((_, principal, op), row), *_ = signals.scans.items()
    assert (principal, op, row.pages, row.equal) == (API, "ExecuteStatement", 1, {"email": 1})


def test_the_callers_of_a_busy_key_are_kept_busiest_first() -> None:
    g = Gen(6)
    other = "arn:aws:iam::111122223333:role/other"
    records = [
        g.record("PutItem", "Events", i / 10, {"key": {"day": "D1", "id": str(i)}}, principal=API) for i in range(30)
    ]
    records += [
        g.record("GetItem", "Events", i / 10, {"key": {"day": "D1", "id": "1"}}, principal=other) for i in range(5)
    ]
    records += [g.record("GetItem", "Events", 1.0, {"key": {"day": "D2", "id": "1"}}, principal=other)]
    signals = ReviewSignals()
    _observe(signals, records)
    tk = ("111122223333", "us-east-1", "Events")
    assert signals.key_principals(tk, {"day": "D1"}) == [API, other]
    assert signals.key_principals(tk, {"day": "D3"}) == []


def test_single_key_batch_gets_of_one_partition_make_a_burst_too() -> None:
    g = Gen(7)
    records = []
    for i in range(6):
        params = {"requestItems": {"Orders": {"keys": [{"customerId": "C#1", "orderId": f"O#{i}"}]}}}
        records.append(g.record("BatchGetItem", "Orders", i * 0.1, params, principal=API))
    signals = ReviewSignals()
    _observe(signals, records)
    ((_, _, template), row), *_ = signals.gets.items()
    assert (template, row.gets, row.bursts) == ("customerId=C#{n}, orderId=O#{n}", 6, 1)


def test_the_burst_window_and_size_come_from_the_review_config() -> None:
    g = Gen(3)
    records = []
    for c in range(3):  # six distinct orders of one customer within 1.5 s
        for i in range(6):
            key = {"customerId": f"C#{c}", "orderId": f"O#{i}"}
            records.append(g.record("GetItem", "Orders", c * 10 + i * 0.3, {"key": key}, principal=API))

    def bursts(rule: BurstRule) -> int:
        signals = ReviewSignals.of(ReviewConfig(burst=rule))
        _observe(signals, records)
        return sum(row.bursts for row in signals.gets.values())

    assert bursts(BurstRule()) == 3  # 2-second buckets: each customer's six reads are one burst
    assert bursts(BurstRule(window_seconds=1)) == 0  # 1-second buckets: four and two, under five
    assert bursts(BurstRule(window_seconds=1, min_items=4)) == 3


def test_a_batch_gets_reads_are_eventually_consistent_by_its_tables_own_flag() -> None:
    # BatchGetItem logs consistentRead per table in requestItems (the API's RequestItems request syntax, in
    # CloudTrail's camelCase): Orders' entry false, Customers' true
    g = Gen(4)
    records = []
    for i in range(4):
        items = {
            "Orders": {"keys": [{"customerId": "C#1", "orderId": f"O#{i}-{n}"} for n in range(3)],
                       "consistentRead": False},
            "Customers": {"keys": [{"tenantId": "T#1", "customerId": f"C#{i}-{n}"} for n in range(2)],
                          "consistentRead": True},
        }  # fmt: skip
        record = g.record("BatchGetItem", "Orders", float(i), {"requestItems": items}, principal=API)
        del record["requestParameters"]["tableName"]
        records.append(record)
    signals = ReviewSignals()
    _observe(signals, records)
    rows = {tk[2]: row for (tk, _, _), row in signals.gets.items()}
    assert (rows["Orders"].gets, rows["Orders"].eventual) == (12, 12)
    assert (rows["Customers"].gets, rows["Customers"].eventual) == (8, 0)

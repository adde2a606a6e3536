"""Aggregates and detectors of issue 14: absolute key rates, grouped hot keys, catalogue rows, bounded state."""

from __future__ import annotations

import random
from dataclasses import replace

import orjson

from auditor.detectors.trail import hot_key, throttling
from auditor.engine import access_patterns
from auditor.kernel.aggregates.window import MAX_SERIALIZED_BYTES, AggregateSet, TableWindow
from auditor.kernel.calls import Access, ApiCall, ItemAccess
from auditor.models.finding import Severity
from tests.factories import call, span

PTE = "ProvisionedThroughputExceededException"
GENERIC_PTE = "The level of configured provisioned throughput for the table was exceeded."


def _burst(key: str, rate: int, seconds: int, start: float = 0.0, op: str = "PutItem") -> list[ApiCall]:
    return [call(op, key={"pk": key}, at=start + s + i / rate) for s in range(seconds) for i in range(rate)]


def test_burst_in_a_long_window_is_reported_at_its_own_rate() -> None:
    calls = _burst("HOT", 1200, 3, start=1800)
    rng = random.Random(1)
    calls += [call("PutItem", key={"pk": f"K{rng.randrange(10**6)}"}, at=rng.uniform(0, 3600)) for _ in range(40_000)]
    agg = span(calls, window_seconds=3600)
    [f] = hot_key.detect(agg, hot_key.HotKeyConfig())
    assert f.evidence["key"] == {"pk": "HOT"}
    assert f.evidence["share"] < 0.1  # 3,600 of ~43,600 requests
    assert f.evidence["peak_second_writes"] == 1200
    assert f.severity is Severity.CRITICAL


def test_per_second_peaks_survive_any_split_and_merge() -> None:
    calls = _burst("HOT", 700, 4, start=100) + _burst("COOL", 10, 60)
    one = span(calls)
    parts = [AggregateSet(900) for _ in range(3)]
    for i, c in enumerate(calls):
        parts[hash(c.event_id + str(i)) % 3].add(c)  # like the parallel reader's shards
    merged = parts[2]
    merged.merge(parts[0])
    merged.merge(parts[1])
    [tw] = merged.spans()
    assert tw.second_peaks()[next(k for k in tw.second_peaks() if "HOT" in k)][2] == 700
    assert one.second_peaks() == tw.second_peaks()


def test_many_hot_keys_are_grouped_and_none_dropped() -> None:
    calls = [c for k in range(8) for c in _burst(f"C{k}", 400, 2, start=k * 10)]
    agg = span(calls)
    [f] = hot_key.detect(agg, hot_key.HotKeyConfig())
    listed = {k["key"]["pk"] for k in f.evidence["keys"]}
    assert listed == {f"C{k}" for k in range(8)}
    assert f.evidence["hot_keys"] == 8
    assert f.severity is Severity.MEDIUM  # 400 writes/s: 40% of a partition
    five = span([c for k in range(5) for c in _burst(f"C{k}", 950, 2, start=k * 10)])
    found = hot_key.detect(five, hot_key.HotKeyConfig())
    assert sorted(f.evidence["key"]["pk"] for f in found) == [f"C{k}" for k in range(5)]
    assert {f.severity for f in found} == {Severity.HIGH}


def test_throttles_on_the_key_raise_its_severity() -> None:
    calls = _burst("HOT", 300, 2)  # 30% of a partition: medium alone
    alone = hot_key.detect(span(calls), hot_key.HotKeyConfig())
    assert [f.severity for f in alone] == [Severity.MEDIUM]
    throttled = calls + [
        call("PutItem", key={"pk": "HOT"}, at=i * 0.01, error=PTE, message=GENERIC_PTE) for i in range(150)
    ]
    [f] = hot_key.detect(span(throttled), hot_key.HotKeyConfig())
    assert f.evidence["throttled_calls"] == 150
    assert f.severity is Severity.CRITICAL


def test_share_only_hot_key_with_huge_headroom_is_low() -> None:
    calls = [call("GetItem", key={"pk": "CONFIG"}, at=i * 2.0) for i in range(400)]
    calls += [call("GetItem", key={"pk": f"K{i}"}, at=i * 2.0 + 1) for i in range(400)]
    [f] = hot_key.detect(span(calls), hot_key.HotKeyConfig())
    assert f.evidence["headroom_factor"] > 100
    assert f.severity is Severity.LOW
    assert "at most low" in f.summary


def test_throttling_on_demand_concentrated_on_a_key_is_key_range() -> None:
    calls = [
        call("PutItem", key={"pk": "HOT" if i % 20 else f"K{i}"}, at=i * 0.1, error="ThrottlingException")
        for i in range(200)
    ]
    calls += [call("GetItem", key={"pk": f"K{i}"}, at=i * 0.05) for i in range(2000)]
    [f] = throttling.detect(span(calls), throttling.ThrottlingConfig())
    assert (f.evidence["cause"], f.evidence["cause_source"]) == ("key_range", "concentrated_on_keys")
    spread = [call("PutItem", key={"pk": f"K{i}"}, at=i * 0.1, error="ThrottlingException") for i in range(200)]
    [g] = throttling.detect(span(spread), throttling.ThrottlingConfig())
    assert g.evidence["cause"] == "on_demand_max"
    assert g.recommendation != f.recommendation


def test_throttling_without_keys_is_unknown_and_says_what_is_missing() -> None:
    calls = [call("Scan", at=i, error="ThrottlingException") for i in range(5)]
    [f] = throttling.detect(span(calls), throttling.ThrottlingConfig())
    assert f.evidence["cause"] == "unknown"
    assert "name a key" in f.evidence["missing_to_decide"]


def test_key_with_most_traffic_and_all_throttles_is_key_range() -> None:
    calls = [call("PutItem", key={"pk": "HOT"}, at=i * 0.01) for i in range(600)]
    calls += [call("PutItem", key={"pk": f"K{i}"}, at=i * 0.01) for i in range(400)]
    calls += [call("PutItem", key={"pk": "HOT"}, at=i * 0.05, error=PTE, message=GENERIC_PTE) for i in range(100)]
    [f] = throttling.detect(span(calls), throttling.ThrottlingConfig())
    assert f.evidence["cause"] == "key_range"


def test_a_burst_key_throttled_alone_is_key_range_even_with_most_of_the_traffic() -> None:
    # A window of a burst: HOT carries 90 % of the traffic, so its share of the throttles cannot exceed its share of
    # the traffic by the margin. The other keys' 10 % would have brought them ~10 of 100 throttles had the table run
    # out of capacity: they got none, so the partition of HOT is what throttled.
    def window(throttled_others: int, throttles: int = 100) -> list[ApiCall]:
        calls = [call("PutItem", key={"pk": "HOT"}, at=i * 0.01) for i in range(900)]
        calls += [call("PutItem", key={"pk": f"K{i}"}, at=i * 0.01 + 0.005) for i in range(100)]
        calls += [
            call(
                "PutItem",
                key={"pk": f"K{i}" if i < throttled_others else "HOT"},
                at=i * 0.05,
                error=PTE,
                message=GENERIC_PTE,
            )
            for i in range(throttles)
        ]
        return calls

    [alone] = throttling.detect(span(window(0)), throttling.ThrottlingConfig())
    assert (alone.evidence["cause"], alone.evidence["cause_source"]) == ("key_range", "concentrated_on_keys")
    # the others got their share of the throttles: they follow the traffic (the table's capacity)
    [shared] = throttling.detect(span(window(10)), throttling.ThrottlingConfig())
    assert (shared.evidence["cause"], shared.evidence["cause_source"]) == ("provisioned", "throttles_follow_traffic")
    # too few throttles for the others' absence to mean anything (their share would have been under 3)
    [few] = throttling.detect(span(window(0, throttles=20)), throttling.ThrottlingConfig())
    assert few.evidence["cause"] == "provisioned"


def _batch_get(keys: list[str], at: float) -> ApiCall:
    items = tuple(ItemAccess(table="Orders", operation="BatchGetItem", access=Access.READ, key={"pk": k}) for k in keys)
    base = call("GetItem", at=at)
    return replace(base, event_id=f"b-{at}", operation="BatchGetItem", items=items)


def test_catalogue_counts_calls_and_items_apart_and_errors_by_code() -> None:
    calls = [call("GetItem", key={"pk": f"USER#{i}"}, at=i * 0.1) for i in range(98)]
    calls += [_batch_get([f"USER#{i}" for i in range(100)], at=20.0 + j) for j in range(2)]
    calls += [
        call("UpdateItem", key={"pk": "USER#1"}, at=30 + i, error="ConditionalCheckFailedException") for i in range(3)
    ]
    calls += [call("UpdateItem", key={"pk": "USER#2"}, at=40, error="AccessDeniedException")]
    rows = {(p.operation, p.key_template): p for p in access_patterns([span(calls)])}
    batch = rows[("BatchGetItem", "pk=USER#{n}")]
    assert (batch.requests, batch.items) == (2, 200)
    assert batch.share == round(2 / 104, 4)
    update = rows[("UpdateItem", "pk=USER#{n}")]
    assert update.errors == {"AccessDeniedException": 1, "ConditionalCheckFailedException": 3}
    assert rows[("GetItem", "pk=USER#{n}")].errors == {}
    assert sum(p.share for p in rows.values()) == 1.0


def test_composite_sort_key_is_one_template() -> None:
    rng = random.Random(3)
    calls = []
    for i in range(300):
        suffix = "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice((2, 8))))
        calls.append(call("PutItem", key={"pk": "SENSOR#1", "sk": f"TS#2026-12-03T10:{i % 60:02d}:00Z#{suffix}"}, at=i))
    rows = access_patterns([span(calls)])
    assert [p.key_template for p in rows] == ["pk=SENSOR#{n}, sk=TS#{datetime}#{hex}"]


def test_serialised_aggregate_stays_bounded_with_many_hot_keys_and_scans() -> None:
    rng = random.Random(5)
    calls = [c for k in range(300) for c in _burst(f"HOT#{k}", 30, 3, start=k * 3)]
    calls += [call("GetItem", key={"pk": f"K{rng.randrange(10**7)}"}, at=rng.uniform(0, 900)) for _ in range(30_000)]
    calls += [call("Scan", at=i * 3.0, principal=f"arn:aws:iam::1:role/r{i % 150}") for i in range(300)]
    agg = span(calls)
    size = len(agg.to_json())
    assert size < MAX_SERIALIZED_BYTES
    back = TableWindow.from_dict(orjson.loads(agg.to_json()))
    assert back.second_peaks() == TableWindow.from_dict(orjson.loads(back.to_json())).second_peaks()


def test_partiql_key_schema_precedence_config_then_description_then_trail() -> None:
    from auditor.config import AnalysisConfig
    from auditor.engine import apply_table_facts
    from auditor.models.inventory import IndexProfile, TableProfile

    agg = span([call("GetItem", "Orders", {"pk": "A"})])
    profile = TableProfile(
        name="Orders",
        account="111122223333",
        region="us-east-1",
        partition_key="orderId",
        indexes=(IndexProfile(name="byCustomer", type="GSI", partition_key="customerId"),),
    )
    schemas = {("111122223333", "us-east-1", "Orders"): profile}
    apply_table_facts(agg, AnalysisConfig(key_schema={"Orders": "pk"}), schemas)
    assert (agg.schema_hint, agg.schema_source) == ("pk", "config")  # the user's word wins
    apply_table_facts(agg, AnalysisConfig(), schemas)
    assert (agg.schema_hint, agg.schema_source, agg.index_schema) == (
        "orderId",
        "inventory",
        {"byCustomer": "customerId"},
    )
    apply_table_facts(agg, AnalysisConfig(), {("444455556666", "us-east-1", "Orders"): profile})  # another account's
    assert (agg.schema_hint, agg.schema_source, agg.index_schema) == (None, None, {})


def _reads(key: str, rate: int, seconds: int, consistent: bool | None) -> list[ApiCall]:
    calls = _burst(key, rate, seconds, op="GetItem")
    for c in calls:
        c.consistent_read = consistent
    return calls


def test_item_size_turns_requests_into_write_units() -> None:
    # 300 writes/s on one key: 30 % of a partition's 1,000 WCU for items up to 1 KB, 90 % for 3 KB items.
    calls = _burst("HOT", 300, 5)
    [small] = hot_key.detect(span(calls), hot_key.HotKeyConfig())
    assert small.evidence["peak_write_units_per_second"] == 300
    assert small.evidence["headroom_factor"] == 3.33
    assert small.severity is Severity.MEDIUM
    agg = span(calls)
    agg.item_size_bytes, agg.item_size_source = 3000, "config"
    [large] = hot_key.detect(agg, hot_key.HotKeyConfig())
    assert (large.evidence["write_units_per_write"], large.evidence["peak_write_units_per_second"]) == (3.0, 900.0)
    assert large.evidence["headroom_factor"] == 1.11
    assert large.severity is Severity.HIGH
    assert large.evidence["item_size_source"] == "config"
    assert "3,000 bytes (from the config)" in large.evidence["assumption"]
    assert "900 WCU/s" in large.summary
    assert large.evidence["suggested_shards"] == 2  # 900 WCU/s, each shard at most half a partition


def test_read_consistency_halves_the_units_of_eventually_consistent_reads() -> None:
    # 1,000 reads/s of 8 KB items: 2 RCU each strongly consistent (2,000 RCU/s, headroom 1.5), 1 eventually (3x).
    strong = span(_reads("HOT", 1000, 3, True))
    strong.item_size_bytes, strong.item_size_source = 8192, "inventory"
    [s] = hot_key.detect(strong, hot_key.HotKeyConfig())
    assert (s.evidence["read_units_per_read"], s.evidence["headroom_factor"]) == (2.0, 1.5)
    assert s.severity is Severity.HIGH
    eventual = span(_reads("HOT", 1000, 3, False))
    eventual.item_size_bytes, eventual.item_size_source = 8192, "inventory"
    [e] = hot_key.detect(eventual, hot_key.HotKeyConfig())
    assert (e.evidence["read_units_per_read"], e.evidence["headroom_factor"]) == (1.0, 3.0)
    assert e.severity is Severity.MEDIUM
    assert "100% of reads logged eventually consistent" in e.evidence["assumption"]
    # a read whose record does not log consistentRead counts as strongly consistent (the conservative reading)
    unknown = span(_reads("HOT", 1000, 3, None))
    unknown.item_size_bytes, unknown.item_size_source = 8192, "inventory"
    [u] = hot_key.detect(unknown, hot_key.HotKeyConfig())
    assert u.evidence["read_units_per_read"] == 2.0


def test_eventual_read_count_survives_merge_and_serialisation() -> None:
    calls = _reads("A", 10, 2, False) + _reads("B", 10, 1, True) + _reads("C", 10, 1, None)
    parts = [AggregateSet(900) for _ in range(2)]
    for i, c in enumerate(calls):
        parts[i % 2].add(c)
    parts[0].merge(parts[1])
    [tw] = parts[0].spans()
    assert (tw.key_reads, tw.key_reads_eventual) == (40, 20)
    back = type(tw).from_dict(tw.to_dict())
    assert back.key_reads_eventual == 20
    old = tw.to_dict()
    del old["key_reads_eventual"]  # a contribution stored before the field existed
    assert type(tw).from_dict(old).key_reads_eventual == 0


def test_item_size_from_config_or_the_tables_description() -> None:
    from auditor.config import AnalysisConfig
    from auditor.engine import apply_table_facts
    from auditor.models.inventory import TableProfile

    agg = span([call("GetItem", "Orders", {"pk": "A"})])
    profile = TableProfile(
        name="Orders", account="111122223333", region="us-east-1", size_bytes=3_000_000, item_count=1_000
    )
    schemas = {("111122223333", "us-east-1", "Orders"): profile}
    apply_table_facts(agg, AnalysisConfig(), schemas)
    assert (agg.item_size_bytes, agg.item_size_source) == (3000, "inventory")
    apply_table_facts(agg, AnalysisConfig(item_size_bytes={"Orders": 500}), schemas)
    assert (agg.item_size_bytes, agg.item_size_source) == (500, "config")
    empty = profile.model_copy(update={"item_count": 0})
    apply_table_facts(agg, AnalysisConfig(), {("111122223333", "us-east-1", "Orders"): empty})
    assert (agg.item_size_bytes, agg.item_size_source) == (None, None)

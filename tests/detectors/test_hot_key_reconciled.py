"""``hot_key`` reads the one headroom model: a throttled key has no headroom, whatever the assumptions say."""

from __future__ import annotations

from auditor.detectors.trail import hot_key, low_cardinality_key
from tests.detectors.test_index_spaces import _span
from tests.kernel.test_index_spaces import _get, _record

THROTTLED = (
    "ProvisionedThroughputExceededException",
    "The level of configured provisioned throughput for the table "
    "was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
)


def _records(throttled: int) -> list[dict]:
    records = [_get(i * 0.5, "S#hot" if i % 2 else f"S#{i}", i) for i in range(1000)]
    records += [
        _record("GetItem", 600 + i * 0.5, {"key": {"sessionId": "S#hot"}}, 2000 + i, THROTTLED)
        for i in range(throttled)
    ]
    return records


def test_a_throttled_key_reads_no_headroom_above_1x_and_names_the_contradicted_assumption() -> None:
    [f] = hot_key.detect(_span(_records(40)), hot_key.HotKeyConfig())
    ev = f.evidence
    assert ev["throttled_calls"] == 40 and ev["assumed_utilisation"] < 1
    assert ev["headroom_factor"] == 1.0 and ev["throttles_now"] is True
    assert "items larger than assumed" in ev["contradicted_assumption"]
    assert "several hot keys sharing one partition" in ev["contradicted_assumption"]
    assert "throttled-keys mode" in ev["to_confirm"] and "item_size_bytes" in ev["to_confirm"]
    assert "no headroom at today's peak" in f.summary and "headroom" not in f.summary.split("no headroom")[0]


def test_an_unthrottled_key_keeps_its_headroom() -> None:
    [f] = hot_key.detect(_span(_records(0)), hot_key.HotKeyConfig())
    assert f.evidence["headroom_factor"] > 1 and f.evidence["assumed_utilisation"] < 1
    assert f.evidence["throttles_now"] is False and f.evidence["contradicted_assumption"] is None


def test_a_throttled_low_cardinality_table_reads_no_headroom_above_1x() -> None:
    statuses = ("PENDING", "RUNNING", "DONE")
    records = [_record("GetItem", i * 0.5, {"key": {"status": statuses[i % 3]}}, i) for i in range(1200)]
    records += [_record("GetItem", 700 + i, {"key": {"status": "PENDING"}}, 2000 + i, THROTTLED) for i in range(12)]
    [f] = low_cardinality_key.detect(_span(records), low_cardinality_key.LowCardinalityConfig())
    assert f.evidence["throttled_calls"] == 12 and f.evidence["headroom_factor"] == 1.0
    assert f.evidence["busiest_value_headroom_factor"] == 1.0 and f.evidence["throttles_now"] is True
    assert "no headroom at today's peak" in f.summary and "far below" not in f.summary


def _writes(key: dict, throttled: int, first: int = 0) -> list[dict]:
    """A burst of 100 PutItems on ``key`` in one second (a tenth of a partition's writes) and steady writes, with
    ``throttled`` of them throttled at the burst (the provisioned table's message, THROTTLED)."""
    records = [_record("PutItem", 300 + i / 200, {"key": key}, first + i) for i in range(100)]
    records += [_record("PutItem", i * 2.0, {"key": key}, first + 100 + i) for i in range(300)]
    records += [_record("PutItem", 300.5, {"key": key}, first + 400 + i, THROTTLED) for i in range(throttled)]
    return records


def _others() -> list[dict]:
    return [_record("PutItem", i * 0.5, {"key": {"sessionId": f"S#{i}"}}, 9000 + i) for i in range(1200)]


def test_a_throttled_keys_shards_are_sized_against_what_its_partition_delivered_and_the_fix_says_so() -> None:
    [f] = hot_key.detect(_span(_writes({"sessionId": "S#hot"}, 40) + _others()), hot_key.HotKeyConfig())
    peak = f.evidence["peak_write_units_per_second"]
    assert f.evidence["suggested_shards"] == 2 and f.evidence["throttles_now"] is True
    assert (
        f"2 shards keep each under half of the {peak:,.0f} WCU/s its partition delivered at the peak of {peak:.0f} "
        "writes/s, where 40 calls were throttled (at the assumed unit costs: a partition serves up to 1,000 WCU/s, "
        "so its items are larger than assumed, other hot keys share the partition, or the table's capacity was "
        "below the peak)"
    ) in f.recommendation
    [healthy] = hot_key.detect(_span(_writes({"sessionId": "S#hot"}, 0) + _others()), hot_key.HotKeyConfig())
    assert "2 shards keep each under half a partition at the peak of" in healthy.recommendation
    assert "delivered" not in healthy.recommendation


def test_a_throttled_time_bucket_and_a_group_of_throttled_keys_say_their_shards_rest_on_the_evidence() -> None:
    [bucket] = hot_key.detect(_span(_writes({"sessionId": "2025-12-03"}, 40) + _others()), hot_key.HotKeyConfig())
    assert bucket.evidence["time_bucket"] is not None and bucket.evidence["suggested_shards"] == 2
    assert "The shards are sized against the" in bucket.recommendation and "40 calls were throttled" in (
        bucket.recommendation
    )
    records = _writes({"sessionId": "S#a"}, 40) + _writes({"sessionId": "S#b"}, 30, 1000) + _others()
    [grouped] = hot_key.detect(_span(records), hot_key.HotKeyConfig(max_findings_per_table=1))
    assert grouped.evidence["hot_keys"] == 2 and grouped.evidence["suggested_shards"] == 2
    assert "2 of them throttled below the documented partition limit" in grouped.recommendation

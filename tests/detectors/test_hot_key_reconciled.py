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

"""The review reads the one capacity model: a key throttled at its peak has no headroom above 1x at any load of the
replay, its shards are sized against what its partition delivered, and the what-if over the rewritten traffic gives
the proposal's headroom before and after (the same computation)."""

from __future__ import annotations

from typing import Any

import pytest

from auditor.detectors.trail import hot_key
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.normalize import normalize_record
from auditor.review.context import ReviewInput
from auditor.review.keys import shard_partition_key
from auditor.review.review import replay, review
from auditor.review.rewrite import whatif_replay
from auditor.review.signals import ReviewSignals
from benchmarks.workloads import Gen
from tests.review.test_review import _hot_key, _input

# The message DynamoDB answers a call throttled on a provisioned table with (docs/capacity.md lists it with its
# source: the DynamoDB API Reference, "Common Errors", ProvisionedThroughputExceededException).
PROVISIONED = (
    "ProvisionedThroughputExceededException",
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your "
    "provisioning level with the UpdateTable API.",
)


def test_a_throttled_key_has_no_headroom_above_1x_at_any_load_of_the_replay() -> None:
    throttled = _hot_key(0.0, 300.0)  # 30% of a partition on paper, its average a tenth of its peak
    throttled["evidence"]["throttled_calls"] = 40
    (p,) = review(_input(throttled))
    rows = {r.level: r for r in replay([p])}
    assert {level: (r.headroom_before, r.headroom_after) for level, r in rows.items()} == {
        "1x": (1.0, 2.0),
        "2x": (0.5, 1.0),
        "peak": (1.0, 2.0),
    }
    assert rows["2x"].to_dict()["throttles_before"] is True
    # at its observed peak (headroom 1.0) it throttles, as the trail saw it do; after the change it does not
    assert rows["peak"].to_dict()["throttles_before"] is True and rows["1x"].to_dict()["throttles_before"] is True
    assert not any(r.to_dict()["throttles_after"] for r in rows.values() if r.level != "2x")
    # a key that did not throttle keeps the replay of a flat load: 1x the average is far below its peak
    (healthy,) = review(_input(_hot_key(0.0, 2500.0)))
    flat = {r.level: r for r in replay([healthy])}
    assert flat["1x"].headroom_before is not None and flat["1x"].headroom_before > 1 > flat["peak"].headroom_before


def test_the_shards_of_a_throttled_key_are_sized_against_what_its_partition_delivered() -> None:
    throttled = _hot_key(0.0, 300.0)
    throttled["evidence"]["throttled_calls"] = 40
    (p,) = review(_input(throttled))
    assert p.capacity is not None and p.capacity.observed and round(p.capacity.write) == 300
    assert p.change["peak_units_per_shard"] == {"read": 0.0, "write": 150.0}
    assert (
        "against the capacity its throttling showed one partition delivered (900 RCU/s, 300 WCU/s)"
        in (p.assumptions[0])
    )


def test_a_mixed_key_is_measured_against_the_nearer_partition_limit_as_the_what_if_measures_it() -> None:
    # 600 RCU/s is a fifth of a partition's reads, 900 WCU/s nine tenths of its writes: the writes are nearer
    (p,) = shard_partition_key(_input(_hot_key(600.0, 900.0)))
    assert p.before.headroom is not None and abs(p.before.headroom - 1000 / 900) < 1e-9
    assert p.change["shards"] == 2 and p.after.headroom is not None and abs(p.after.headroom - 2000 / 900) < 1e-9


def _span(records: list[dict[str, Any]]) -> TableWindow:
    aggs = AggregateSet(900)
    for record in records:
        call = normalize_record(record)
        assert call is not None
        aggs.add(call)
    (span,) = aggs.spans()
    return span


def _orders(throttles: int) -> list[dict[str, Any]]:
    """A provisioned Orders table: pk=CUSTOMER#42 read and written in a burst (120 writes and 90 reads in its busiest
    second, far below one partition's limits) and steadily, with ``throttles`` of its writes throttled at the burst;
    other customers spread over the minutes."""
    g = Gen(29)
    hot = {"key": {"pk": "CUSTOMER#42"}}
    records = [g.record("PutItem", "Orders", 60 + i / 200, hot) for i in range(120)]
    records += [g.record("GetItem", "Orders", 60 + i / 200, hot) for i in range(90)]
    records += [g.record("PutItem", "Orders", i * 2.0, hot) for i in range(300)]
    records += [g.record("GetItem", "Orders", i * 3.0, hot) for i in range(200)]
    records += [g.record("PutItem", "Orders", i * 0.5, {"key": {"pk": f"CUSTOMER#{i}"}}) for i in range(1200)]
    records += [g.record("PutItem", "Orders", 60.5, hot, error=PROVISIONED) for _ in range(throttles)]
    return records


def _replayed(throttles: int) -> tuple[Any, Any]:
    span = _span(_orders(throttles))
    findings = [f.model_dump(mode="json") for f in hot_key.detect(span, hot_key.HotKeyConfig())]
    data = ReviewInput([span], findings, [], ReviewSignals())
    (p,) = shard_partition_key(data)
    (w,) = whatif_replay([p], [span])
    return p, w


def test_the_what_if_over_the_rewritten_traffic_gives_the_proposals_headroom() -> None:
    p, w = _replayed(40)
    assert p.before.headroom == 1.0 and p.after.headroom is not None and round(p.after.headroom, 2) == 2.0
    assert w.headroom_before == p.before.headroom
    # the same computation; the rewritten seconds hold whole requests (161 writes: shards of 81 and 80)
    assert w.headroom_after == pytest.approx(p.after.headroom, rel=0.01)
    assert w.to_dict()["source"].startswith("what-if over the rewritten traffic")

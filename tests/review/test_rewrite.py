"""The what-if replay: a sharded or cached key's traffic rewritten and run through the what-if."""

from __future__ import annotations

from typing import Any

from auditor.kernel.aggregates.window import AggregateSet
from auditor.kernel.normalize import normalize_record
from auditor.review.keys import cache_reads, shard_partition_key
from auditor.review.rewrite import rewritten, whatif_replay
from benchmarks.workloads import Gen
from tests.review.test_review import _hot_key, _input


def _span(records: list[dict[str, Any]]) -> Any:
    aggs = AggregateSet(900)
    for record in records:
        call = normalize_record(record)
        assert call is not None
        aggs.add(call)
    (span,) = aggs.spans()
    return span


def test_sharding_spreads_each_minute_over_the_shards_and_raises_the_what_if_headroom() -> None:
    g = Gen(9)
    span = _span([g.record("PutItem", "Events", i / 100, {"key": {"day": "2026-12-03"}}) for i in range(6000)])
    (p,) = shard_partition_key(_input(_hot_key(0.0, 2500.0)))
    p.where = (span.account, span.region, "Events")
    after = rewritten(span, p)
    ((m_all, m_writes),) = after.minutes.values()
    assert sum(m_all.counts.values()) == 6000 and len(m_all.counts) == 5 and sum(m_writes.counts.values()) == 6000
    (w,) = whatif_replay([p], [span])
    assert w.headroom_before is not None and w.headroom_after is not None
    assert round(w.headroom_after / w.headroom_before) == 5


def test_a_cache_keeps_the_writes_and_the_misses() -> None:
    g = Gen(10)
    records = [g.record("GetItem", "Events", i / 100, {"key": {"day": "2026-12-03"}}) for i in range(5000)]
    records += [g.record("PutItem", "Events", i, {"key": {"day": "2026-12-03"}}) for i in range(10)]
    span = _span(records)
    (p,) = cache_reads(_input(_hot_key(2800.0, 10.0)))
    p.where = (span.account, span.region, "Events")
    ((m_all, _),) = rewritten(span, p).minutes.values()
    assert sum(m_all.counts.values()) == 10 + 500

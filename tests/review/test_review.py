"""The proposal rules, their thresholds, prices, ids and the replay (auditor.review)."""

from __future__ import annotations

from typing import Any

from auditor.kernel.normalize import normalize_record
from auditor.review.context import ReviewInput
from auditor.review.model import Pricing, ReviewConfig
from auditor.review.review import replay, review
from auditor.review.review_text import render_review, review_document
from auditor.review.signals import ReviewSignals


def _hot_key(reads: float, writes: float, table: str = "Events") -> dict[str, Any]:
    return {
        "id": f"hot-{table}",
        "kind": "hot_key",
        "table": table,
        "account": "1",
        "region": "us-east-1",
        "evidence": {
            "key": {"day": "2026-12-03"},
            "peak_read_units_per_second": reads,
            "peak_write_units_per_second": writes,
            "peak_reads_per_second": reads,
            "reads_per_second": reads / 10,
            "writes_per_second": writes / 10,
        },
    }


def _input(*findings: dict[str, Any], config: ReviewConfig | None = None) -> ReviewInput:
    return ReviewInput([], list(findings), [], ReviewSignals(), config=config or ReviewConfig())


def test_a_write_hot_key_over_a_partition_is_sharded_for_2x_headroom() -> None:
    (p,) = review(_input(_hot_key(0.0, 2500.0)))
    assert p.kind == "shard_partition_key"
    assert p.change["shards"] == 5
    assert p.before.headroom == 0.4
    assert p.after.headroom == 2.0
    assert p.findings == ["hot-Events"]


def test_the_shards_are_the_findings_own_count_when_it_states_one() -> None:
    # the hot_key finding sized its shards (suggested_shards) from its own window's peak: the proposal states that
    # count, not a second one worked out from the period's peaks
    finding = _hot_key(0.0, 2500.0)
    finding["evidence"]["suggested_shards"] = 6
    (p,) = review(_input(finding))
    assert p.change["shards"] == 6
    assert p.after.headroom == round(1000.0 / (2500.0 / 6), 2)
    assert p.title.endswith("across 6 shards (day#0..5)")


def test_a_hot_key_with_2x_headroom_left_gets_no_proposal() -> None:
    assert review(_input(_hot_key(0.0, 450.0))) == []


def test_a_read_heavy_hot_key_gets_a_cache_not_shards() -> None:
    (p,) = review(_input(_hot_key(2800.0, 10.0)))
    assert p.kind == "cache_reads"
    assert p.after.headroom is not None and p.before.headroom is not None
    assert p.after.headroom > 5 * p.before.headroom
    assert p.after.extra > 0  # the DAX nodes are priced


def test_ids_are_stable_and_differ_by_subject() -> None:
    first = review(_input(_hot_key(0.0, 2500.0)))[0]
    again = review(_input(_hot_key(0.0, 2500.0)))[0]
    other = review(_input(_hot_key(0.0, 2500.0, table="Other")))[0]
    assert first.id == again.id != other.id
    assert first.id.startswith("rv-") and len(first.id) == 15


def test_an_unused_index_is_dropped_unless_a_pattern_reads_it() -> None:
    unused = {
        "id": "u1",
        "kind": "unused_index",
        "table": "Orders",
        "index": "ByStatus",
        "evidence": {"days_analyzed": 30, "monthly_write_cost": 3.0, "monthly_storage_cost": 1.0},
    }
    (p,) = review(_input(unused))
    assert (p.kind, p.index, p.before.monthly, p.after.monthly) == ("drop_index", "ByStatus", 4.0, 0.0)


def test_a_small_item_is_not_split_and_a_large_one_is() -> None:
    small = {"id": "s", "kind": "large_item", "table": "Carts", "evidence": {"size_bytes": 50_000}}
    large = {"id": "l", "kind": "large_item", "table": "Carts", "evidence": {"size_bytes": 350_000}}
    assert review(_input(small)) == []
    assert [p.kind for p in review(_input(large))] == ["split_item"]


def test_pricing_uses_the_bundled_on_demand_prices() -> None:
    price = Pricing.for_region("us-east-1")
    # one write unit a second for a 730-hour month at $0.625 per million
    assert price.monthly(0.0, 1.0) == round(730 * 3600 * 0.625e-6, 2)


def test_the_replay_shows_the_shards_headroom_rising_above_1_at_the_peak() -> None:
    proposals = review(_input(_hot_key(0.0, 2500.0)))
    rows = {r.level: r for r in replay(proposals)}
    assert set(rows) == {"1x", "2x", "peak"}
    peak = rows["peak"]
    assert peak.headroom_before is not None and peak.headroom_before < 1
    assert peak.headroom_after is not None and peak.headroom_after > 1
    assert rows["2x"].monthly_before == 2 * rows["1x"].monthly_before


def test_text_and_json_renderings() -> None:
    proposals = review(_input(_hot_key(0.0, 2500.0)))
    doc = review_document(proposals, replay(proposals))
    assert doc["proposals"][0]["kind"] == "shard_partition_key" and len(doc["replay"]) == 3
    text = render_review(proposals, replay(proposals), "table")
    assert "shard_partition_key" in text and "Replay" in text
    assert "| id | kind |" in render_review(proposals, None, "markdown")
    assert render_review([], None, "table").startswith("No proposals")


def test_one_scan_or_one_query_is_never_a_proposal() -> None:
    from benchmarks.workloads import Gen

    g = Gen(5)
    signals = ReviewSignals()
    for record in (
        g.record("Scan", "Users", 0.0, {"filterExpression": "email = :e"}),
        g.record(
            "Query", "T", 1.0, {"key": {"t": "1"}, "keyConditionExpression": "t = :t", "filterExpression": "s = :s"}
        ),
    ):
        signals.observe(record, normalize_record(record))
    assert review(ReviewInput([], [], [], signals)) == []


def test_a_status_or_flag_attribute_is_flagged_as_few_valued_for_an_index() -> None:
    from auditor.review.access import _FEW_VALUES

    assert [
        a
        for a in ("status", "invoiceStatus", "expired", "isActive", "email", "tier", "hashKey")
        if _FEW_VALUES.search(a)
    ] == [
        "status",
        "invoiceStatus",
        "expired",
        "isActive",
    ]


def test_the_weekly_report_rows_come_from_findings_alone() -> None:
    from datetime import UTC, datetime

    from auditor.models.finding import Finding
    from auditor.review.weekly import proposal_rows

    at = datetime(2026, 12, 3, tzinfo=UTC)
    base = {
        "severity": "critical",
        "title": "t",
        "summary": "s",
        "recommendation": "r",
        "first_seen": at,
        "last_seen": at,
    }
    hot = Finding.model_validate({**_hot_key(0.0, 2500.0), **base})
    (row,) = proposal_rows([hot])
    assert (row.kind, row.table, row.headroom_before, row.headroom_after) == ("shard_partition_key", "Events", 0.4, 2.0)


def test_a_hot_key_that_throttled_is_sharded_even_with_headroom_on_paper() -> None:
    throttled = _hot_key(0.0, 300.0)
    throttled["evidence"]["throttled_calls"] = 40
    (p,) = review(_input(throttled))
    assert (p.kind, p.change["shards"], p.before.headroom, p.after.headroom) == ("shard_partition_key", 2, 1.0, 2.0)
    assert "throttled (40 calls)" in p.assumptions[-1]
    peak = next(r for r in replay([p]) if r.level == "peak")
    assert peak.headroom_before == 1.0 and peak.headroom_after == 2.0
    throttled["evidence"]["throttled_calls"] = 3  # a few throttles: not a repeating pattern
    assert review(_input(throttled)) == []

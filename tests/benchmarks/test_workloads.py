"""The detection workloads (benchmarks/workloads.py) at a small scale: every planted problem found, nothing else.

Each scenario is generated with its ground truth; these tests run them through ``analyze_trail`` and check the
precision and recall per finding kind, the severities, the logical scan counts, and the details an expert reads.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from benchmarks.workloads import count_errors, facts, logical_errors, run, score


@pytest.fixture(scope="module")
def analysed() -> tuple[Any, dict[str, Any]]:
    workload, doc, _ = run(scale=0.05, seed=11)
    return workload, doc


def _one(doc: dict[str, Any], kind: str, table: str) -> dict[str, Any]:
    """The one finding (or story's fact, with the fact's severity) of ``kind`` on ``table``."""
    found = [f for f in facts(doc["findings"]) if f["kind"] == kind and f["table"] == table]
    assert len(found) == 1, [f["title"] for f in found]
    return found[0]


def test_precision_and_recall_are_perfect(analysed: tuple[Any, dict[str, Any]]) -> None:
    workload, doc = analysed
    for kind, s in score(workload, doc["findings"]).items():
        assert (s.precision, s.recall) == (1.0, 1.0), (kind, s)
        assert not s.wrong_severity, (kind, s.wrong_severity)
    assert not logical_errors(workload, doc["findings"])
    assert not count_errors(workload, doc["findings"])


def test_a_short_burst_is_judged_at_its_own_rate(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    f = next(f for f in doc["findings"] if f["kind"] == "hot_key" and f["table"] == "Telemetry")
    # 1,200 writes/s for a few seconds of an hour-long trail: a tiny share, but past a partition's limit
    assert f["evidence"]["share"] < 0.9
    assert f["evidence"]["peak_second_writes"] >= 1000
    assert f["severity"] == "critical"


def test_hot_key_and_its_throttling_are_linked(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    hot = next(f for f in doc["findings"] if f["kind"] == "hot_key" and f["table"] == "Carts")
    throttled = _one(doc, "throttling", "Carts")
    assert throttled["evidence"]["cause"] == "key_range"
    assert hot["evidence"]["throttled_calls"] > 0
    assert throttled["id"] in hot["evidence"]["related_finding_ids"]
    assert hot["id"] in throttled["evidence"]["related_finding_ids"]
    # the hot partition's fix (spread the key), not the provisioned table's (raise its capacity)
    assert "spread the hot key" in throttled["recommendation"]
    assert "auto-scaling maximum" not in throttled["recommendation"]


def test_throttling_causes_have_their_own_fix(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    fixes = {f["evidence"]["cause"]: f["recommendation"] for f in doc["findings"] if f["kind"] == "throttling"}
    assert set(fixes) == {"key_range", "on_demand_max", "provisioned", "gsi_backpressure"}
    assert len(set(fixes.values())) == 4


def test_scans_are_logical_and_described_as_what_they_are(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    export = _one(doc, "scan", "Orders")
    assert (export["evidence"]["count"], export["evidence"]["pages"]) == (1, 640)
    assert export["evidence"]["total_segments"] == 16
    assert "request path" not in export["recommendation"]
    sweeper = _one(doc, "scan", "Tokens")
    assert (sweeper["evidence"]["count"], sweeper["evidence"]["pages"]) == (60, 240)
    assert "request path" in sweeper["recommendation"]
    probe = _one(doc, "scan", "Flags")
    assert probe["evidence"]["limit_bounded"] is True
    assert "reads the whole table" not in probe["recommendation"]
    assert "at most 1 items" in probe["summary"]


def test_partiql_full_scans_say_what_decided(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    decided = {
        f["evidence"]["principal"].rsplit("/", 1)[-1]: f["evidence"]["decided_by"]
        for f in doc["findings"]
        if f["kind"] == "scan" and f["table"] == "Customers"
    }
    assert decided == {"app": "no_key_condition", "sweeper": "key_schema_trail"}
    rows = {p["key_template"]: p for p in doc["access_patterns"] if p["table"] == "Customers"}
    assert rows["email=(redacted)"]["efficient"] is False
    assert rows["tier=?"]["efficient"] is False
    assert rows["customerId=CUST#{n}"]["efficient"] is True


def test_time_bucket_gets_the_bucket_fix(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    # the day's bucket is a hot value of a low-cardinality key: a fact of that story (issue 30)
    f = next(f for f in facts(doc["findings"]) if f["kind"] == "hot_key" and f["table"] == "DailyMetrics")
    assert f["evidence"]["time_bucket"] == "day"
    shards = f["evidence"]["suggested_shards"]
    assert shards == 2  # 400 writes/s, each shard at most half of 1,000 WCU
    assert "DAY#2026-12-03#0" in f["recommendation"] and "pk#0" not in f["recommendation"]


def test_catalogue_rows_per_region_with_shares_per_region(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    shares: dict[tuple[str, str], float] = defaultdict(float)
    for p in doc["access_patterns"]:
        shares[(p["table"], p["region"])] += p["share"]
        assert p["account"] == "111122223333"
    assert shares[("Catalog", "us-east-1")] == pytest.approx(1.0, abs=1e-3)
    assert shares[("Catalog", "eu-west-1")] == pytest.approx(1.0, abs=1e-3)
    query = [p for p in doc["access_patterns"] if p["table"] == "Catalog" and p["operation"] == "Query"]
    assert {p["key_template"] for p in query} == {"pk=BRAND#{n}, sk begins_with ?"}
    assert {p["region"] for p in query} == {"us-east-1", "eu-west-1"}


def test_gsi_back_pressure_is_reported_as_such_with_advice_about_the_index(
    analysed: tuple[Any, dict[str, Any]],
) -> None:
    _, doc = analysed
    for table in ("Shipments", "Events"):
        f = _one(doc, "throttling", table)
        assert f["evidence"]["cause"] == "gsi_backpressure"
        assert f["evidence"]["cause_source"] == "error_message"
        assert "index" in f["recommendation"] and "table's capacity will not help" in f["recommendation"]


def test_the_on_demand_text_is_decided_by_the_keys_whatever_the_exception(analysed: tuple[Any, dict[str, Any]]) -> None:
    # every one of these throttles is a ProvisionedThroughputExceededException carrying the on-demand text
    _, doc = analysed
    causes = {t: _one(doc, "throttling", t)["evidence"]["cause"] for t in ("Likes", "Views", "Feeds")}
    assert causes == {"Likes": "key_range", "Views": "on_demand_max", "Feeds": "key_range"}


def test_aws_services_traffic_is_no_users_hot_key(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    assert not [f for f in doc["findings"] if f["table"] in ("ExpiringCarts", "GlobalCarts")]


def test_a_batch_rejected_for_size_is_one_finding_for_the_calls(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    f = _one(doc, "item_size_exceeded", "Uploads")
    assert (f["evidence"]["key"], f["evidence"]["count"], f["evidence"]["whole_calls"]) == (None, 3, 3)


def test_a_frequent_scan_on_a_request_path_counts_every_start(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    users = _one(doc, "scan", "Users")
    assert (users["evidence"]["count"], users["evidence"]["pages"], users["severity"]) == (7200, 7200, "high")
    assert users["evidence"]["grouping"] == "logged"
    assert "request path" in users["recommendation"]
    assert _one(doc, "scan", "Reports")["evidence"]["count"] == 400


def test_a_transactional_write_is_metered_at_two_units(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    f = next(f for f in doc["findings"] if f["kind"] == "hot_key" and f["table"] == "Wallets")
    assert f["evidence"]["peak_write_units_per_second"] >= 500
    assert f["severity"] == "high"


def test_a_query_page_after_a_full_one_meters_that_page_at_1_mb(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    f = _one(doc, "low_cardinality_key", "Tickets")
    assert f["severity"] == "high"
    assert f["evidence"]["busiest_value_headroom_factor"] < 2.0

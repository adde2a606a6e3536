"""The model-review workloads: every planted kind found, nothing on the healthy tables (benchmarks.workloads_review)."""

from __future__ import annotations

from benchmarks.workloads_review import EXPECTED, HEALTHY, build, run, score


def test_precision_and_recall_are_1_for_every_kind() -> None:
    doc = run(scale=0.2)
    scores = score(doc["proposals"])
    assert {kind for kind, _ in EXPECTED} <= set(scores)
    assert all(s == (1.0, 1.0) for s in scores.values()), scores
    assert not {p["table"] for p in doc["proposals"]} & HEALTHY


def test_the_records_are_cloudtrail_data_events() -> None:
    records = build(0.05)
    assert {r["eventSource"] for r in records} == {"dynamodb.amazonaws.com"}
    assert {r["eventCategory"] for r in records} == {"Data"}
    assert {r["requestParameters"]["tableName"] for r in records} >= {t for _, t in EXPECTED} | set(HEALTHY) - {
        "Orders"
    }

"""The index workloads (benchmarks/workloads_index.py) at a small scale: every planted problem found on its index,
nothing else (issue 29, points 3 and 10)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.workloads import count_errors, logical_errors, score
from benchmarks.workloads_index import index_errors, run


@pytest.fixture(scope="module", params=[11, 3])
def analysed(request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    workload, doc, _ = run(scale=0.05, seed=request.param)
    return workload, doc


def test_precision_and_recall_are_perfect_with_the_right_severity_and_index(
    analysed: tuple[Any, dict[str, Any]],
) -> None:
    workload, doc = analysed
    scores = score(workload, doc["findings"])
    assert set(scores) == {"hot_key", "low_cardinality_key", "scan", "throttling"}
    for kind, s in scores.items():
        assert (s.precision, s.recall) == (1.0, 1.0), (kind, s)
        assert not s.wrong_severity, (kind, s.wrong_severity)
    assert not logical_errors(workload, doc["findings"])
    assert not count_errors(workload, doc["findings"])
    assert not index_errors(doc["findings"])


def test_a_hot_index_partition_has_the_indexs_own_share(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    [f] = [f for f in doc["findings"] if f["kind"] == "hot_key" and f["table"] == "TenantSessions"]
    assert f["index"] == "ByTenant" and f["severity"] == "low"
    assert f["evidence"]["share"] == pytest.approx(0.6, abs=0.05)  # not about 0.08 of the table and index together
    throttled = next(f for f in doc["findings"] if f["kind"] == "throttling" and f["table"] == "TenantSessions")
    assert throttled["evidence"]["cause"] == "gsi_backpressure"


def test_partiql_on_an_index_is_decided_by_the_indexs_key(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    [f] = [f for f in doc["findings"] if f["kind"] == "scan" and f["table"] == "Invoices"]
    assert (f["index"], f["evidence"]["partition_key"], f["evidence"]["decided_by"]) == (
        "ByCustomer",
        "customerId",
        "key_schema_trail",
    )
    assert f["evidence"]["principal"].endswith("role/reporting")

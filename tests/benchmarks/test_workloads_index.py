"""The index workloads (benchmarks/workloads_index.py) at a small scale: every planted problem found on its index,
nothing else (issue 29, points 1, 3 and 10)."""

from __future__ import annotations

from typing import Any

import pytest

from auditor.models.finding import Finding
from auditor.report.contents import ReportFinding
from auditor.report.sections import what_if as report_what_if
from benchmarks.workloads import count_errors, logical_errors, score
from benchmarks.workloads_index import PARCEL_THROTTLES, index_errors, run, what_if_errors, what_if_result


@pytest.fixture(scope="module", params=[11, 3])
def analysed(request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    workload, doc, _ = run(scale=0.05, seed=request.param)
    return workload, doc


@pytest.fixture(scope="module")
def what_if_doc(analysed: tuple[Any, dict[str, Any]]) -> dict[str, Any]:
    return what_if_result(analysed[0])


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


def test_writes_that_amplify_into_an_index_throttle_it_and_name_it(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    [f] = [f for f in doc["findings"] if f["table"] == "Parcels"]
    ev = f["evidence"]
    assert (f["kind"], ev["cause"], f["index"], f["severity"]) == (
        "throttling",
        "gsi_backpressure",
        "ByCarrier",
        "high",
    )
    assert ev["write_throttle_events"] == PARCEL_THROTTLES
    assert ev["index_key_attributes"] == ["carrierId"]  # learned from the index's Queries
    # each update that sets carrierId costs the index a delete and a put; each put naming it one write
    updates = ev["index_writes"] - ev["index_base_writes"]  # 2 per update, 1 per put: the excess is the updates
    puts = ev["index_base_writes"] - updates
    assert updates == 10 * puts > 0  # 200 updates and 20 puts a second
    assert (ev["headroom_factor"], ev["throttles_now"]) == (1.0, True)
    assert "write amplification" in f["summary"] and "ByCarrier" in f["summary"]
    assert ev["top_keys"] == []  # a back-pressure throttle is charged to the call, not to the key it wrote
    assert not [f for f in doc["findings"] if f["table"] == "Subscriptions"]  # its updates never touch ByAccount


def test_what_if_names_the_index_that_throttles_first_with_its_metered_writes(what_if_doc: dict[str, Any]) -> None:
    assert not what_if_errors(what_if_doc)
    first = next(i for i in what_if_doc["items"] if i["table"] == "Parcels")
    assert (first["index"], first["limit"], first["headroom"], first["throttled_calls"]) == (
        "ByCarrier",
        "provisioned",
        1.0,
        PARCEL_THROTTLES,
    )
    assert first["peak_per_second"] > 0
    # the throttled writes' own keys were not what ran out: no base-table key throttles now
    assert not [i for i in what_if_doc["items"] if i["table"] == "Parcels" and i["key"] and i["throttled_calls"]]


def test_the_reports_what_throttles_first_lists_the_index(analysed: tuple[Any, dict[str, Any]]) -> None:
    _, doc = analysed
    [finding] = [Finding.model_validate(f) for f in doc["findings"] if f["table"] == "Parcels"]
    [row] = report_what_if([ReportFinding(finding=finding, status="ongoing", docs_url="https://example.com")])
    assert (row.table, row.index, row.key, row.limit, row.headroom) == (
        "Parcels",
        "ByCarrier",
        None,
        "index write capacity",
        1.0,
    )
    assert row.throttles_at(2.0)

"""Hot and low-cardinality keys per partition space, and PartiQL statements on an index (issue 29, points 3 and 10).

The records are those of tests/kernel/test_index_spaces.py (their sources are given there).
"""

from __future__ import annotations

import pytest

from auditor.detectors.trail import hot_key, low_cardinality_key, scan
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.normalize import normalize_record
from auditor.models.finding import Severity
from tests.kernel.test_index_spaces import _get, _index_query, _record

REPORTING_SESSION = "arn:aws:sts::111122223333:assumed-role/reporting/s"
#: the role of that session: the principal the record names without sessionContext.sessionIssuer
REPORTING = "arn:aws:iam::111122223333:role/reporting"


def _span(records: list[dict]) -> TableWindow:
    aggs = AggregateSet(3600)
    for rec in records:
        found = normalize_record(rec)
        assert found is not None
        aggs.add(found)
    (span,) = aggs.spans()
    return span


def _statement(t: float, text: str, n: int) -> dict:
    rec = _record("ExecuteStatement", t, {"statement": text}, n)
    rec["userIdentity"] = {"type": "AssumedRole", "arn": REPORTING_SESSION}
    return rec


def test_a_hot_index_key_is_measured_against_the_index_and_reported_on_it() -> None:
    records = [_get(i * 0.5, f"S#{i}", i) for i in range(3000)]
    records += [_index_query(i * 5, "TENANT#acme" if i % 5 < 3 else f"TENANT#{i}", 5000 + i) for i in range(300)]
    agg = _span(records)
    [f] = hot_key.detect(agg, hot_key.HotKeyConfig())
    assert f.index == "ByTenant" and f.evidence["index"] == "ByTenant"
    assert f.evidence["key"] == {"tenantId": "TENANT#acme"}
    # the index's own share (60%, a lower bound from the sketch), not 180 / 3,300 of the table's and index's
    assert f.evidence["share"] == pytest.approx(0.6, abs=0.02) and f.evidence["key_requests"] == 300
    assert "(index ByTenant)" in f.title and "requests to the index" in f.summary
    assert f.severity is Severity.LOW  # far below a partition's limits


def test_the_tables_own_hot_key_keeps_its_share_of_the_tables_traffic() -> None:
    records = [_get(i * 0.5, "S#hot" if i % 2 else f"S#{i}", i) for i in range(1000)]
    records += [_index_query(i * 0.5, f"TENANT#{i}", 5000 + i) for i in range(3000)]
    [f] = hot_key.detect(_span(records), hot_key.HotKeyConfig())
    assert f.index is None and "index" not in f.evidence
    assert (f.evidence["key"], f.evidence["key_requests"]) == ({"sessionId": "S#hot"}, 1000)
    assert f.evidence["share"] == pytest.approx(0.5, abs=0.02)


def test_a_low_cardinality_index_under_a_high_cardinality_table() -> None:
    statuses = ("STATUS#open", "STATUS#done", "STATUS#failed")
    records = [_get(i * 0.5, f"S#{i}", i) for i in range(3000)]
    for i in range(1200):
        rec = _index_query(i * 2, statuses[i % 3], 5000 + i)
        params = rec["requestParameters"]
        params["indexName"], params["key"] = "ByStatus", {"taskStatus": statuses[i % 3]}
        params["expressionAttributeNames"] = {"#t": "taskStatus"}
        records.append(rec)
    [f] = low_cardinality_key.detect(_span(records), low_cardinality_key.LowCardinalityConfig())
    assert (f.index, f.evidence["key_attribute"], f.evidence["distinct_partition_keys"]) == (
        "ByStatus",
        "taskStatus",
        3,
    )
    assert f.evidence["requests"] == 1200
    assert f.title == "Sessions (index ByStatus) is keyed on low-cardinality taskStatus"


BY_TENANT = 'SELECT * FROM "Sessions"."ByTenant" WHERE "tenantId" = ***(Redacted)'
BY_STATE = 'SELECT * FROM "Sessions"."ByTenant" WHERE "state" = ***(Redacted)'
#: sessionId is the table's partition key (its value visible), not the index's
BY_SESSION = 'SELECT * FROM "Sessions"."ByTenant" WHERE "sessionId" = \'S#1\''


def _statements(text: str, queries: int) -> TableWindow:
    records = [_get(i, f"S#{i}", i) for i in range(100)]
    records += [_index_query(i * 10, f"TENANT#{i}", 1000 + i) for i in range(queries)]
    records += [_statement(i * 30, text, 2000 + i) for i in range(120)]
    return _span(records)


def test_a_statement_constraining_the_index_key_is_no_scan() -> None:
    assert scan.detect(_statements(BY_TENANT, 50), scan.ScanConfig()) == []


def test_statements_not_constraining_the_index_key_are_scans_of_the_index() -> None:
    for text in (BY_STATE, BY_SESSION):
        [f] = scan.detect(_statements(text, 50), scan.ScanConfig())
        assert (f.severity, f.index, f.evidence["count"]) == (Severity.HIGH, "ByTenant", 120)
        assert f.evidence["principal"] == REPORTING and f.evidence["operation"] == "ExecuteStatement"
        assert (f.evidence["decided_by"], f.evidence["partition_key"]) == ("key_schema_trail", "tenantId")
        assert "'tenantId'" in f.recommendation


def test_the_index_key_comes_from_the_description_else_stays_undecided() -> None:
    agg = _statements(BY_STATE, 0)
    assert scan.detect(agg, scan.ScanConfig()) == []  # the index's key is unknown: the table's is never used
    agg.index_schema = {"ByTenant": "tenantId"}
    [f] = scan.detect(agg, scan.ScanConfig())
    assert (f.evidence["decided_by"], f.evidence["partition_key"]) == ("key_schema_inventory", "tenantId")
    agg.index_schema = {"ByTenant": "state"}
    assert scan.detect(agg, scan.ScanConfig()) == []


#: a range condition only: no equality on any attribute, so a full read of the index whatever its key
BY_RANGE = 'SELECT * FROM "Sessions"."ByTenant" WHERE "createdAt" >= ***(Redacted)'


def test_a_full_scan_of_an_index_names_the_index_and_its_key_not_the_tables() -> None:
    [f] = scan.detect(_statements(BY_RANGE, 50), scan.ScanConfig())
    assert (f.index, f.evidence["decided_by"], f.evidence["partition_key"]) == (
        "ByTenant",
        "no_key_condition",
        "tenantId",
    )
    assert f.title == "Full-index PartiQL statements on Sessions (index ByTenant) by reporting"
    assert "ran 120 full-index PartiQL statements on Sessions (index ByTenant)" in f.summary
    # the index's key unknown (no index Query, no description): none named, never the table's
    [g] = scan.detect(_statements(BY_RANGE, 0), scan.ScanConfig())
    assert (g.index, g.evidence["partition_key"]) == ("ByTenant", None)

"""The access-pattern catalogue's ``efficient`` for PartiQL statements on an index: decided with the index's own
partition key, learned as the scan detector learns it (the index's Query records, else the table's description), so a
statement the scan detector calls a key lookup is efficient and one it calls a scan of the index is not.

ExecuteStatement records: the shape of the CloudTrail sample of the DynamoDB developer guide
(logging-using-cloudtrail, ExecuteStatement): ``requestParameters`` holds the ``statement`` alone, non-key values
logged as ``***(Redacted)``; ``SELECT ... FROM "Table"."Index"`` from the developer guide (ql-reference.select).
The GetItem and index Query records are those of tests/kernel/test_index_spaces.py (their sources are given there).
"""

from __future__ import annotations

import pytest

from auditor.detectors.trail import scan
from auditor.engine import access_patterns
from auditor.kernel.aggregates.window import TableWindow
from tests.detectors.test_index_spaces import _span
from tests.kernel.test_index_spaces import _get, _index_query, _record

ON_INDEX = 'SELECT * FROM "Sessions"."ByTenant" WHERE '
#: The index's partition key, its value redacted (a non-key attribute of the table) or a parameter.
INDEX_KEY = (ON_INDEX + '"tenantId" = ***(Redacted)', ON_INDEX + '"tenantId" = ?')
#: A non-key filter, and the table's partition key (not the index's) with its value visible.
NOT_INDEX_KEY = (ON_INDEX + '"state" = ***(Redacted)', ON_INDEX + "\"sessionId\" = 'S#1'")


def _statement(t: float, text: str, n: int) -> dict:
    rec = _record("ExecuteStatement", t, {}, n)
    rec["requestParameters"] = {"statement": text}
    rec["readOnly"] = False  # as in the sample, though a SELECT
    return rec


def _window(text: str, index_queries: int) -> TableWindow:
    records = [_get(i, f"S#{i}", i) for i in range(100)]
    records += [_index_query(i * 10, f"TENANT#{i}", 1000 + i) for i in range(index_queries)]
    records += [_statement(i * 30, text, 2000 + i) for i in range(60)]
    return _span(records)


def _statement_row_efficient(agg: TableWindow) -> bool:
    [row] = [p for p in access_patterns([agg]) if p.operation == "ExecuteStatement:SELECT"]
    assert (row.table, row.index, row.requests) == ("Sessions", "ByTenant", 60)
    return row.efficient


@pytest.mark.parametrize("text", INDEX_KEY)
def test_a_statement_on_the_index_key_learned_from_its_queries_is_efficient(text: str) -> None:
    agg = _window(text, 50)
    assert _statement_row_efficient(agg) is True
    assert scan.detect(agg, scan.ScanConfig()) == []


@pytest.mark.parametrize("text", NOT_INDEX_KEY)
def test_a_statement_on_the_index_without_its_key_is_not_efficient(text: str) -> None:
    agg = _window(text, 50)
    assert _statement_row_efficient(agg) is False
    assert [f.index for f in scan.detect(agg, scan.ScanConfig())] == ["ByTenant"]


def test_the_index_key_from_the_tables_description() -> None:
    on_key, off_key = _window(INDEX_KEY[0], 0), _window(NOT_INDEX_KEY[0], 0)
    for agg in (on_key, off_key):
        agg.index_schema = {"ByTenant": "tenantId"}
    assert (_statement_row_efficient(on_key), _statement_row_efficient(off_key)) == (True, False)

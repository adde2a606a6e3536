"""Dates at the edge of the range (issue 15's fuzz run) are input errors or skipped records, never crashes."""

from __future__ import annotations

from typing import Any

import pytest

from auditor.exceptions import MalformedRecordError
from auditor.kernel.normalize import normalize_record
from auditor.models.finding import Finding
from tests.fuzz.repros import valid_record

EDGES = ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59Z", "1900-01-01T00:00:00Z"]


@pytest.mark.parametrize("when", EDGES)
def test_normaliser_skips_records_at_the_edge_of_the_range(when: str) -> None:
    record = valid_record(1)
    record["eventTime"] = when
    with pytest.raises(MalformedRecordError, match="out of range"):
        normalize_record(record)


@pytest.mark.parametrize("when", EDGES)
def test_findings_at_the_edge_of_the_range_are_invalid_input(when: str) -> None:
    doc: dict[str, Any] = {
        "id": "scan-1",
        "kind": "scan",
        "severity": "high",
        "table": "Orders",
        "title": "t",
        "summary": "s",
        "recommendation": "r",
        "evidence": {},
        "first_seen": when,
        "last_seen": when,
    }
    with pytest.raises(ValueError, match=r"range|plausible"):
        Finding.model_validate(doc)

"""What-if measures a key as the findings do (``auditor.whatif.key_rates.finding_peaks``): the busiest value of a
low-cardinality key gets the ``low_cardinality_key`` finding's headroom, whatever minute each access peaked in."""

from __future__ import annotations

import pytest

from auditor.detectors.trail.hot_key import HotKeyConfig
from auditor.detectors.trail.hot_key import detect as hot_key
from auditor.detectors.trail.low_cardinality_key import LowCardinalityConfig, detect
from auditor.whatif.key_rates import finding_peaks
from auditor.whatif.limits import what_if
from tests.factories import call, span


def _shipments() -> list:
    """PENDING: 30 reads and 5 writes in minute 0, 20 writes in minute 1, then 10 reads a minute; three other
    statuses read evenly."""
    calls = [call("GetItem", "Shipments", {"status": "PENDING"}, at=i) for i in range(30)]
    calls += [call("PutItem", "Shipments", {"status": "PENDING"}, at=40 + i) for i in range(5)]
    calls += [call("PutItem", "Shipments", {"status": "PENDING"}, at=60 + i) for i in range(20)]
    calls += [call("GetItem", "Shipments", {"status": "PENDING"}, at=120 + 6 * i) for i in range(600)]
    for n, status in enumerate(("SHIPPED", "DELIVERED", "CANCELLED")):
        calls += [call("GetItem", "Shipments", {"status": status}, at=120 + 8 * i + n) for i in range(150)]
    return calls


def test_the_busiest_values_what_if_headroom_is_the_findings() -> None:
    agg = span(_shipments(), window_seconds=3600)
    [finding] = detect(agg, LowCardinalityConfig())
    expected = finding.evidence["busiest_value_headroom_factor"]
    result = what_if([agg], 2.0, peak_of=finding_peaks())
    [item] = [i for i in result.items if i.key == {"status": "PENDING"}]
    assert item.headroom == pytest.approx(expected, abs=0.01)


def test_an_index_keys_what_if_is_in_the_indexs_space_and_names_the_index() -> None:
    # the base table read eventually consistent (half a unit a read), the index's Queries logging no consistentRead:
    # the index key is weighed by the index's own reads, never the table's, and listed on the index
    calls = []
    for i in range(600):
        get = call("GetItem", "Catalog", {"sku": f"SKU#{i}"}, at=i * 0.5)
        get.consistent_read = False
        calls.append(get)
    calls += [
        call("Query", "Catalog", {"category": "electronics"}, at=i * 0.25, index="ByCategory") for i in range(900)
    ]
    calls += [call("Query", "Catalog", {"category": f"c{i % 50}"}, at=i * 0.5, index="ByCategory") for i in range(600)]
    agg = span(calls, window_seconds=3600)
    [finding] = [f for f in hot_key(agg, HotKeyConfig()) if f.index == "ByCategory"]
    result = what_if([agg], 1.0, peak_of=finding_peaks())
    [item] = [i for i in result.items if i.key == {"category": "electronics"}]
    assert item.index == "ByCategory"
    assert item.peak_per_second == pytest.approx(finding.evidence["peak_read_units_per_second"], rel=1e-3)
    assert item.headroom == pytest.approx(finding.evidence["headroom_factor"], rel=1e-3)

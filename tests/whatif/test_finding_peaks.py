"""What-if measures a key as the findings do (``auditor.whatif.key_rates.finding_peaks``): the busiest value of a
low-cardinality key gets the ``low_cardinality_key`` finding's headroom, whatever minute each access peaked in."""

from __future__ import annotations

import pytest

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

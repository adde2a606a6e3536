"""``low_cardinality_key`` rates its busiest value by the one capacity model its hot-key fact uses (docs/capacity.md):
read units per read from the item size and the share of reads logged ``consistentRead: false`` (half a unit each).

Record shape: GetItem's request parameters as CloudTrail logs them (``tableName``, ``key``, ``consistentRead``; the
DynamoDB API Reference, GetItem, and the repository's GetItem shape fixture).
"""

from __future__ import annotations

from typing import Any

from auditor.detectors.trail import hot_key, low_cardinality_key
from auditor.models.finding import Finding, Severity
from tests.detectors.test_index_spaces import _span
from tests.kernel.test_index_spaces import _record

#: Reads of status=OPEN in one second: 1,600 RCU/s strongly consistent (headroom 3,000 / 1,600 = 1.9x), 800 RCU/s
#: eventually consistent (3.75x).
BURST = 1600
#: Reads of status=OPEN per second for a whole minute.
SUSTAINED = 360


def _trail(consistent: bool, per_second: int, seconds: int) -> list[dict[str, Any]]:
    """A table keyed on ``status`` (3 values): ``per_second`` reads of OPEN for ``seconds`` seconds, and a slow
    trickle of the others after them."""
    hot = {"key": {"status": "OPEN"}, "consistentRead": consistent}
    records = [_record("GetItem", i // per_second, hot, i) for i in range(per_second * seconds)]
    for i in range(200):
        other = {"key": {"status": ("PENDING", "CLOSED")[i % 2]}, "consistentRead": consistent}
        records.append(_record("GetItem", seconds + i, other, len(records)))
    return records


def _findings(consistent: bool) -> tuple[Finding, Finding]:
    """(the low-cardinality finding, the hot-key finding on its busiest value) of a one-second burst's trail."""
    agg = _span(_trail(consistent, BURST, 1))
    [low] = low_cardinality_key.detect(agg, low_cardinality_key.LowCardinalityConfig())
    [key] = hot_key.detect(agg, hot_key.HotKeyConfig())
    assert key.evidence["key"] == {"status": "OPEN"} and low.evidence["values"][0]["value"] == "OPEN"
    return low, key


def test_eventually_consistent_reads_halve_the_busiest_values_utilisation() -> None:
    strong, _ = _findings(consistent=True)
    eventual, _ = _findings(consistent=False)
    assert strong.evidence["assumed_utilisation"] == round(BURST / 3000, 4)
    assert eventual.evidence["assumed_utilisation"] == round(BURST / 2 / 3000, 4)
    assert strong.evidence["headroom_factor"] == round(3000 / BURST, 2) == 1.88
    assert eventual.evidence["headroom_factor"] == round(3000 / (BURST / 2), 2) == 3.75
    assert strong.evidence["busiest_value_headroom_factor"] == strong.evidence["headroom_factor"]
    assert eventual.evidence["busiest_value_headroom_factor"] == eventual.evidence["headroom_factor"]
    assert (strong.severity, eventual.severity) == (Severity.HIGH, Severity.MEDIUM)
    assert "Headroom 1.9x" in strong.summary and "Headroom 3.8x" in eventual.summary


def test_a_sustained_minute_of_eventually_consistent_reads_counts_half() -> None:
    """The busiest minute (not a burst second) is the peak: 360 reads/s for a minute is 8.3x headroom strongly
    consistent (medium), 16.7x eventually consistent (far below the limits: low; too far for a hot-key fact)."""
    for consistent, headroom, severity in ((True, 8.33, Severity.MEDIUM), (False, 16.67, Severity.LOW)):
        agg = _span(_trail(consistent, SUSTAINED, 60))
        [low] = low_cardinality_key.detect(agg, low_cardinality_key.LowCardinalityConfig())
        assert low.evidence["headroom_factor"] == headroom and low.severity is severity


def test_the_finding_states_its_busiest_values_key_fact() -> None:
    for consistent in (True, False):
        low, key = _findings(consistent)
        for field in ("headroom_factor", "assumed_utilisation", "throttles_now"):
            assert low.evidence[field] == key.evidence[field], (consistent, field)
        assert low.severity is key.severity

"""One peak for a key: the ``hot_key`` finding and ``what-if`` read it from :func:`auditor.whatif.limits.key_peak`
over the same periods, so both show the same number with the same label."""

from __future__ import annotations

import pytest

from auditor.detectors.trail import hot_key
from auditor.whatif.limits import BUSIEST_MINUTE, BUSIEST_SECOND, key_limits, key_peak
from tests.factories import call, span


def _workload(burst: int) -> list:
    """``pk=HOT`` written 45 times a second for two minutes (under the 50 requests a busiest second needs), plus
    ``burst`` writes in one second of the third; background keys around it."""
    calls = [call("PutItem", key={"pk": "HOT"}, at=i / 45) for i in range(5400)]
    calls += [call("PutItem", key={"pk": "HOT"}, at=150 + i / (burst + 1)) for i in range(burst)]
    calls += [call("GetItem", key={"pk": f"K{i}"}, at=i * 0.3) for i in range(600)]
    return calls


@pytest.mark.parametrize(("burst", "rate", "window"), [(160, 160.0, BUSIEST_SECOND), (0, 45.0, BUSIEST_MINUTE)])
def test_hot_key_and_what_if_show_the_same_peak_of_a_key(burst: int, rate: float, window: str) -> None:
    agg = span(_workload(burst))
    [finding] = [f for f in hot_key.detect(agg, hot_key.HotKeyConfig()) if f.evidence["key"] == {"pk": "HOT"}]
    [item] = [i for i in key_limits(agg) if i.key == {"pk": "HOT"}]
    assert finding.evidence["peak_writes_per_second"] == pytest.approx(rate, abs=0.1)
    assert finding.evidence["peak_writes_per_second"] == round(item.peak_per_second, 3)
    assert item.limit == "partition_write"
    assert finding.evidence["peak_window"] == item.peak_window == window
    assert item.to_dict(2.0)["peak_window"] == window
    assert f"{rate:.0f} writes/s (peak: {window};" in finding.summary
    assert finding.evidence["headroom_factor"] == pytest.approx(round(item.headroom, 2))


def test_key_peak_takes_a_second_only_with_enough_requests_and_labels_each_access() -> None:
    # (reads, at, writes, at) of the busiest minute and the busiest second
    peak = key_peak((600, 60, 6000, 120), (40, 61, 150, 130))
    assert (peak.reads, peak.writes) == (10.0, 150.0)
    assert peak.label == "reads: busiest minute, writes: busiest second"
    assert (peak.reads_at, peak.writes_at) == (60, 130)
    assert key_peak((0, 0, 600, 60), (0, 0, 9, 61)).label == BUSIEST_MINUTE

"""The one headroom model: throttling observed bounds the headroom, and names the assumption it contradicts."""

from __future__ import annotations

import pytest

from auditor.models.capacity import item_size, reconcile


def test_no_throttling_keeps_the_headroom_on_paper() -> None:
    h = reconcile(1000.0, 172.0)
    assert h.value == h.assumed == pytest.approx(1000 / 172)
    assert not h.throttles_now and h.contradicted is None and h.sentence() == ""


def test_a_throttled_key_has_no_headroom_and_the_contradicted_assumption_is_named() -> None:
    h = reconcile(1000.0, 172.0, 835)
    assert h.value == 1.0 and h.assumed == pytest.approx(5.81, abs=0.01) and h.throttles_now
    assert h.contradicted is not None and "items larger than assumed" in h.contradicted
    assert "several hot keys sharing one partition" in h.contradicted
    assert h.confirm is not None and "throttled-keys mode" in h.confirm and "item_size_bytes" in h.confirm
    assert h.evidence()["headroom_factor"] == 1.0 and h.evidence()["assumed_utilisation"] == 0.172
    assert "835 calls on it were throttled" in h.sentence() and "17% of the limit" in h.sentence()


def test_a_known_item_size_is_not_suspected_and_a_table_has_no_key_suspects() -> None:
    h = reconcile(40_000.0, 1_000.0, 5, resource="table", item_size_source="config", provisioned=True)
    assert h.value == 1.0 and h.contradicted == "capacity below the peak (provisioned or scaling up)"


def test_a_throttled_resource_already_at_its_limit_contradicts_nothing() -> None:
    h = reconcile(1000.0, 1500.0, 3)
    assert h.value == pytest.approx(2 / 3) and h.throttles_now and h.contradicted is None


def test_item_size_sources_in_their_order() -> None:
    assert item_size(config=2048, streams=900, inventory=800, cloudwatch=700) == (2048, "config")
    assert item_size(streams=900, inventory=800, cloudwatch=700) == (900, "streams")
    assert item_size(inventory=800, cloudwatch=700) == (800, "inventory")
    assert item_size(cloudwatch=700) == (700, "cloudwatch")
    assert item_size() == (None, "default")

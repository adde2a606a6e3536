"""The size history's pure parts: bounding, downsampling, per-attribute growth, the state-table key."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from auditor.detectors.stream import item_growth
from auditor.models.stream import AttributeGrowth, ItemSizeObservation, TableRef
from auditor.state.item_history import SizeHistory, add_sample, downsample, history_pk

T0 = 1_795_996_800  # 2026-11-29T00:00:00Z: hour and day buckets start at T0
HOUR = 3_600
DAY = 86_400


def observation(at: float, size: int, seq: int, growth: tuple[AttributeGrowth, ...] = ()) -> ItemSizeObservation:
    return ItemSizeObservation(
        ref=TableRef("111122223333", "us-east-1", "Timelines"),
        key={"pk": {"S": "DEVICE#7f3a"}},
        event_id=f"e{seq}",
        event_name="MODIFY",
        sequence_number=str(seq),
        time=at,
        view_type="NEW_AND_OLD_IMAGES",
        size_bytes=size,
        growth=growth,
    )


def test_add_sample_keeps_time_order_and_replaces_the_same_second() -> None:
    samples = add_sample((), (T0 + 60, 100), 48)
    samples = add_sample(samples, (T0, 90), 48)  # late record: inserted before
    samples = add_sample(samples, (T0 + 60, 120), 48)  # same second: the newer record wins
    assert samples == ((T0, 90), (T0 + 60, 120))


def test_history_is_bounded_and_keeps_first_and_newest() -> None:
    # Given a write every 10 minutes for 20 days
    samples: tuple[tuple[int, int], ...] = ()
    for i in range(20 * 144):
        samples = add_sample(samples, (T0 + i * 600, 70_000 + i * 10), 48)
        # Then it never holds more than 48 samples, first and newest kept
        assert len(samples) <= 48
        assert samples[0] == (T0, 70_000)
        assert samples[-1] == (T0 + i * 600, 70_000 + i * 10)
        assert list(samples) == sorted(samples)
    # and it still covers the whole 20 days, evenly enough to fit a slope
    middle_gaps = [b[0] - a[0] for a, b in pairwise(samples[1:-1])]
    assert min(middle_gaps) >= HOUR
    assert len(samples) >= 20


def test_downsample_is_hourly_when_first_full() -> None:
    # 49 samples, one every 15 minutes (12 hours): thinned to one per hour, plus first and newest
    samples = [(T0 + i * 900, i) for i in range(49)]
    thinned = downsample(samples, 48)
    assert thinned[0] == samples[0] and thinned[-1] == samples[-1]
    buckets = [t // HOUR for t, _ in thinned[1:-1]]
    assert len(buckets) == len(set(buckets))  # one per hour
    assert {t % HOUR for t, _ in thinned[1:-1]} == {2700}  # the latest sample of each hour
    assert len(thinned) == 2 + 12  # hours 0..11 in the middle
    assert downsample(samples[:48], 48) == tuple(samples[:48])  # not full: unchanged


def test_downsample_escalates_to_coarser_buckets() -> None:
    samples = [(T0 + i * HOUR, i) for i in range(24 * 60)]  # hourly for 60 days
    thinned = downsample(samples, 48)
    assert len(thinned) <= 48
    assert thinned[0] == samples[0] and thinned[-1] == samples[-1]
    gaps = [b[0] - a[0] for a, b in pairwise(thinned[1:-1])]
    # one per 2-day bucket (1-day buckets would leave 59 > 46). Buckets are aligned to the epoch, where T0 is an
    # odd day: days 0 and 59 sit alone in theirs, so 31 buckets; the last one's latest sample is 22:00 of day 59
    assert len(thinned) == 2 + 31
    assert set(gaps[:-1]) == {2 * DAY} and gaps[-1] == DAY - HOUR


def test_growth_survives_downsampling() -> None:
    # Given an item written every 10 minutes for 10 days, growing 5,000 bytes a day with +-1 KB noise
    rng = random.Random(7)
    samples: tuple[tuple[int, int], ...] = ()
    for i in range(10 * 144):
        t = T0 + i * 600
        samples = add_sample(samples, (t, 100_000 + round(5_000 * (t - T0) / DAY) + rng.randint(-1000, 1000)), 48)
    # When the bounded history is fitted
    fit = item_growth.fit_growth(samples)
    # Then the robust slope still finds the rate
    assert fit is not None
    assert fit.bytes_per_day == pytest.approx(5_000, rel=0.05)
    assert item_growth.is_steady(fit, item_growth.Config())


def test_with_observation_accumulates_growth_by_attribute() -> None:
    history = SizeHistory()
    history = history.with_observation(observation(T0, 70_000, 1, (AttributeGrowth("events", 0, 900),)), 48)
    history = history.with_observation(
        observation(T0 + 60, 71_000, 2, (AttributeGrowth("events", 900, 1_700), AttributeGrowth("tags", 10, 30))), 48
    )
    history = history.with_observation(observation(T0 + 120, 70_500, 3, (AttributeGrowth("photo", 0, 1_200),)), 48)
    assert history.growth == {"events": 1_700, "photo": 1_200, "tags": 20}
    assert history.driver == "events"
    assert history.version == 3
    assert history.last_sequence == "3"
    assert history.first_seen == T0
    assert history.max_size_bytes == 71_000
    assert history.samples == ((T0, 70_000), (T0 + 60, 71_000), (T0 + 120, 70_500))


def test_history_pk_is_stable_and_bounded() -> None:
    a = history_pk("111122223333", "us-east-1", "Timelines", {"pk": {"S": "A"}, "sk": {"S": "B"}})
    b = history_pk("111122223333", "us-east-1", "Timelines", {"sk": {"S": "B"}, "pk": {"S": "A"}})
    c = history_pk("111122223333", "us-east-1", "Timelines", {"pk": {"S": "A"}, "sk": {"S": "C"}})
    assert a == b != c
    prefix, digest = a.rsplit("#", 1)
    assert prefix == "ITEMSIZE#111122223333#us-east-1#Timelines" and len(digest) == 32
    long_key = history_pk(None, None, "T", {"pk": {"S": "x" * 2048}})
    assert long_key.startswith("ITEMSIZE###T#") and len(long_key) == len("ITEMSIZE###T#") + 32

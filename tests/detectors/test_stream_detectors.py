"""large_item, item_growth, the WCU estimate and the link with CloudTrail's item_size_exceeded (all pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from auditor.detectors.base import DetectorInput, HistoryInput, ObservationInput
from auditor.detectors.registry import all_detectors, get
from auditor.detectors.stream import item_growth, large_item
from auditor.models.finding import FindingKind, Severity, fingerprint
from auditor.models.stream import AttributeGrowth, ItemSizeObservation, TableRef

LIMIT = 409_600
DAY = 86_400
T0 = 1_796_000_000.0  # 2026-11-30
KEY = {"pk": {"S": "DEVICE#7f3a"}, "sk": {"S": "TIMELINE"}}
REF = TableRef("111122223333", "us-east-1", "Timelines")


def obs(
    size: int,
    *,
    key: dict[str, Any] | None = None,
    at: float = T0,
    growth: tuple[AttributeGrowth, ...] = (),
    largest: str | None = "events",
    ref: TableRef = REF,
) -> ItemSizeObservation:
    return ItemSizeObservation(
        ref=ref,
        key=key or KEY,
        event_id="e1",
        event_name="MODIFY",
        sequence_number="300000000000000000001",
        time=at,
        view_type="NEW_AND_OLD_IMAGES",
        size_bytes=size,
        old_size_bytes=size - sum(g.delta for g in growth) if growth else None,
        growth=growth,
        largest_attribute=largest,
        largest_attribute_bytes=size - 60 if largest else 0,
    )


# ----------------------------------------------------------------------------- declarations


def test_stream_detectors_are_declared_but_not_in_the_traffic_registry() -> None:
    ITEM_SIZE_DETECTORS = [get("large_item"), get("item_growth")]  # noqa: N806
    ids = [d.metadata.id for d in ITEM_SIZE_DETECTORS]
    assert ids == ["large_item", "item_growth"]
    assert [d.metadata.kind for d in ITEM_SIZE_DETECTORS] == [FindingKind.LARGE_ITEM, FindingKind.ITEM_GROWTH]
    assert not {"large_item", "item_growth"} & {d.metadata.id for d in all_detectors(DetectorInput.TRAIL_WINDOW)}
    for det in ITEM_SIZE_DETECTORS:
        assert det.config_model().model_dump()["enabled"] is True
        assert str(det.metadata.docs_url).startswith("https://docs.aws.amazon.com/")


# ----------------------------------------------------------------------------- large_item


@pytest.mark.parametrize(
    ("size", "severity"),
    [
        (307_199, None),  # one byte under 75% of 409,600
        (307_200, Severity.MEDIUM),  # exactly 75%
        (348_159, Severity.MEDIUM),
        (348_160, Severity.HIGH),  # 85%
        (389_119, Severity.HIGH),
        (389_120, Severity.CRITICAL),  # 95%
        (409_600, Severity.CRITICAL),
    ],
)
def test_large_item_thresholds(size: int, severity: Severity | None) -> None:
    found = large_item.detect(ObservationInput(obs(size)))
    assert [f.severity for f in found] == ([severity] if severity else [])


def test_large_item_finding_shape_and_stable_id() -> None:
    grown = (AttributeGrowth("events", 300_000, 301_079),)
    (finding,) = large_item.detect(ObservationInput(obs(320_530, growth=grown)))
    assert finding.missing_evidence() == []
    assert finding.evidence["key"] == {"pk": "DEVICE#7f3a", "sk": "TIMELINE"}
    assert finding.evidence["size_bytes"] == 320_530
    assert finding.evidence["limit_bytes"] == LIMIT
    assert finding.evidence["percent_of_limit"] == 78.25
    assert finding.evidence["growth_attributes"] == [{"name": "events", "bytes_added": 1079}]
    assert finding.id == fingerprint(
        FindingKind.LARGE_ITEM, "111122223333", "us-east-1", "Timelines", None, discriminator=finding.evidence["key"]
    )
    assert (finding.account, finding.region, finding.table, finding.index) == (
        "111122223333",
        "us-east-1",
        "Timelines",
        None,
    )
    assert finding.last_seen == datetime.fromtimestamp(T0, UTC)
    # the same key keeps its id as the item grows; another key gets another id
    (bigger,) = large_item.detect(ObservationInput(obs(400_000, at=T0 + 60)))
    (other,) = large_item.detect(
        ObservationInput(obs(320_530, key={"pk": {"S": "DEVICE#0001"}, "sk": {"S": "TIMELINE"}}))
    )
    assert bigger.id == finding.id != other.id
    # the recommendation names the growing attribute and the two fixes
    assert '"events" keeps growing' in finding.recommendation
    assert "Don't append forever to one item" in finding.recommendation
    assert "same partition key" in finding.recommendation and "S3" in finding.recommendation
    assert 'The last write grew "events" by 1,079 bytes' in finding.summary


def test_large_item_config_threshold_and_disable() -> None:
    # 325,000 bytes is 79.3% of the limit, 330,000 is 80.6%
    assert large_item.detect(ObservationInput(obs(325_000)), large_item.Config(threshold_pct=80)) == []
    assert [
        f.severity for f in large_item.detect(ObservationInput(obs(330_000)), large_item.Config(threshold_pct=80))
    ] == [Severity.MEDIUM]
    assert [
        f.severity
        for f in large_item.detect(ObservationInput(obs(330_000)), large_item.Config(threshold_pct=70, high_pct=80))
    ] == [Severity.HIGH]
    assert large_item.detect(ObservationInput(obs(400_000)), large_item.Config(enabled=False)) == []


def test_insufficient_view_type_is_an_info_finding() -> None:
    finding = large_item.insufficient_view_type("111122223333", "us-east-1", "Sessions", "KEYS_ONLY", T0)
    assert finding.severity == Severity.INFO and finding.kind == FindingKind.LARGE_ITEM
    assert finding.evidence["key"] is None and finding.evidence["stream_view_type"] == "KEYS_ONLY"
    assert finding.missing_evidence() == []
    assert "KEYS_ONLY" in finding.title and "NEW_IMAGE" in finding.recommendation


# ----------------------------------------------------------------------------- estimate without Streams


WINDOW = (datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))


def test_estimate_flags_writes_averaging_100_wcu() -> None:
    finding = large_item.estimate_large_writes("Blobs", 150_000.0, 1_000, WINDOW, account="111122223333")
    assert finding is not None
    assert finding.kind == FindingKind.LARGE_ITEM and finding.severity == Severity.MEDIUM
    assert finding.missing_evidence() == []
    ev = finding.evidence
    assert ev["key"] is None
    assert ev["method"] == "consumed_wcu_per_write"
    assert ev["wcu_per_write"] == 150.0
    assert ev["average_bytes_estimate"] == ev["size_bytes"] == 150 * 1024
    assert ev["writes"] == 1_000 and ev["limit_bytes"] == LIMIT
    assert (finding.first_seen, finding.last_seen) == WINDOW
    assert finding.id == fingerprint(FindingKind.LARGE_ITEM, "111122223333", None, "Blobs", None, None)


@pytest.mark.parametrize(
    ("wcu", "writes", "severity"),
    [
        (99_999.0, 1_000, None),  # 99.999 WCU per write
        (100_000.0, 1_000, Severity.MEDIUM),  # exactly 100 WCU = 100 KB
        (300_000.0, 1_000, Severity.HIGH),  # 300 KB: past 75% of the limit on average
        (500.0, 0, None),  # no writes: nothing to divide
        (0.0, 10, None),
    ],
)
def test_estimate_threshold(wcu: float, writes: int, severity: Severity | None) -> None:
    finding = large_item.estimate_large_writes("Blobs", wcu, writes, WINDOW)
    assert (finding.severity if finding else None) == severity


# ----------------------------------------------------------------------------- Theil-Sen and growth


def days(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(day, KB) -> (epoch seconds, bytes), with 1 KB = 1000 bytes to keep the hand arithmetic simple."""
    return [(T0 + d * DAY, kb * 1000) for d, kb in points]


# Noisy but steady growth. Pairwise slopes (KB/day), by hand:
#   (0,1) 12   (0,2) 9    (0,3) 10.333  (0,4) 10     (0,5) 9.8
#   (1,2) 6    (1,3) 9.5  (1,4) 9.333   (1,5) 9.25
#   (2,3) 13   (2,4) 11   (2,5) 10.333
#   (3,4) 9    (3,5) 9
#   (4,5) 9
# sorted: 6 9 9 9 9 9.25 9.333 [9.5] 9.8 10 10.333 10.333 11 12 13 -> median 9.5 KB/day.
# The last two points alone give 9; the first and last 9.8.
STEADY = days([(0, 100), (1, 112), (2, 118), (3, 131), (4, 140), (5, 149)])


def test_theil_sen_matches_the_hand_computed_median() -> None:
    slope = item_growth.theil_sen_slope(STEADY)
    assert slope is not None
    assert slope * DAY == pytest.approx(9_500.0)
    assert item_growth.theil_sen_slope([(T0, 1.0)]) is None
    assert item_growth.theil_sen_slope([(T0, 1.0), (T0, 5.0)]) is None  # no time difference


def test_theil_sen_ignores_an_outlier() -> None:
    # 1 KB/day exactly, with one wild sample: the median slope stays 1 KB/day
    points = days([(d, 100 + d) for d in range(7)])
    points[3] = (points[3][0], 250_000.0)
    assert item_growth.theil_sen_slope(points) == pytest.approx(1000 / DAY)


def test_steady_growth_is_reported_with_days_to_limit() -> None:
    fit = item_growth.fit_growth(STEADY)
    assert fit is not None
    assert fit.bytes_per_day == pytest.approx(9_500.0)
    assert fit.rising_pair_share == 1.0
    assert fit.largest_step_share == pytest.approx(13 / 49)  # steps 12, 6, 13, 9, 9
    assert fit.span_seconds == 5 * DAY and fit.samples == 6
    latest = obs(149_000, at=T0 + 5 * DAY)
    (finding,) = item_growth.detect(HistoryInput(latest, STEADY, driver="events"))
    # (409,600 - 149,000) / 9,500 = 27.4316 days -> high (<= 30 days)
    assert finding.evidence["days_to_limit"] == pytest.approx(27.43, abs=0.005)
    assert finding.evidence["bytes_per_day"] == 9_500.0
    assert finding.evidence["size_bytes"] == 149_000
    assert finding.evidence["key"] == {"pk": "DEVICE#7f3a", "sk": "TIMELINE"}
    assert finding.evidence["growth_attribute"] == "events"
    assert finding.missing_evidence() == []
    assert finding.severity == Severity.HIGH
    assert finding.first_seen == datetime.fromtimestamp(T0, UTC)
    assert finding.last_seen == datetime.fromtimestamp(T0 + 5 * DAY, UTC)
    assert finding.evidence["projected_limit_at"] == (
        datetime.fromtimestamp(T0 + 5 * DAY, UTC) + timedelta(days=260_600 / 9_500)
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert '"events" keeps growing' in finding.recommendation
    assert "same partition key" in finding.recommendation and "S3" in finding.recommendation
    assert finding.id == fingerprint(
        FindingKind.ITEM_GROWTH, "111122223333", "us-east-1", "Timelines", None, discriminator=finding.evidence["key"]
    )


def test_a_one_off_jump_is_not_steady_growth() -> None:
    # Flat at ~200 KB with small noise, one 60 KB write in the middle, flat again
    jump = days([(0, 200.0), (1, 200.1), (2, 199.9), (3, 200.0), (4, 260.0), (5, 260.1), (6, 259.9), (7, 260.0)])
    fit = item_growth.fit_growth(jump)
    assert fit is not None
    assert fit.bytes_per_day > 0  # the median slope alone would call it growth...
    assert fit.largest_step_share > 0.99  # ...but one step carries it all
    assert item_growth.detect(HistoryInput(obs(260_000, at=T0 + 7 * DAY), jump)) == []


def test_shrinking_or_oscillating_items_are_not_growth() -> None:
    shrinking = days([(d, 300 - 5 * d) for d in range(8)])
    assert item_growth.detect(HistoryInput(obs(265_000, at=T0 + 7 * DAY), shrinking)) == []
    # a ~50 KB value attached and removed day after day: the median slope is positive (2.5 KB/day) and no single
    # step dominates, but a third of the pairs fall
    swings = days(list(enumerate([200, 260, 205, 255, 210, 250, 215, 262, 220, 258])))
    fit = item_growth.fit_growth(swings)
    assert fit is not None
    assert fit.bytes_per_day == pytest.approx(2_500.0)
    assert fit.largest_step_share < 0.5
    assert fit.rising_pair_share == pytest.approx(2 / 3)
    assert item_growth.detect(HistoryInput(obs(258_000, at=T0 + 9 * DAY), swings)) == []


def test_too_few_samples_or_too_short_a_span_is_not_reported() -> None:
    assert item_growth.detect(HistoryInput(obs(149_000, at=T0 + 5 * DAY), STEADY[:5])) == []
    hours = [(T0 + h * 1200, 100_000 + h * 2_000) for h in range(8)]  # 8 samples over 2h20m
    assert item_growth.detect(HistoryInput(obs(114_000, at=hours[-1][0]), hours)) == []
    assert (
        item_growth.detect(HistoryInput(obs(114_000, at=hours[-1][0]), hours), item_growth.Config(min_span_hours=2))
        != []
    )


def test_days_to_limit_math() -> None:
    assert item_growth.days_to_limit(300_000, 9_750) == pytest.approx(109_600 / 9_750)  # 11.241 days
    assert item_growth.days_to_limit(409_600, 100) == 0.0
    assert item_growth.days_to_limit(100_000, 0) is None
    assert item_growth.days_to_limit(100_000, -5) is None


@pytest.mark.parametrize(
    ("size", "per_day", "severity"),
    [
        (400_000, 2_000, Severity.CRITICAL),  # 4.8 days
        (350_000, 2_000, Severity.HIGH),  # 29.8 days
        (300_000, 2_000, Severity.MEDIUM),  # 54.8 days
        (150_000, 2_000, Severity.LOW),  # 129.8 days
        (100_000, 1_200, Severity.LOW),  # 258 days
        (100_000, 800, None),  # under min_bytes_per_day (1 KB/day)
    ],
)
def test_severity_by_days_to_limit(size: int, per_day: float, severity: Severity | None) -> None:
    samples = [(T0 + d * DAY, size - (7 - d) * per_day) for d in range(8)]
    found = item_growth.detect(HistoryInput(obs(size, at=samples[-1][0]), samples))
    assert [f.severity for f in found] == ([severity] if severity else [])


def test_growth_beyond_max_days_is_not_reported() -> None:
    samples = [(T0 + d * DAY, 10_000 + d * 1_100) for d in range(8)]  # 1.1 KB/day from 17.7 KB: 356 days
    assert item_growth.detect(HistoryInput(obs(17_700, at=samples[-1][0]), samples)) != []
    assert (
        item_growth.detect(
            HistoryInput(obs(17_700, at=samples[-1][0]), samples), item_growth.Config(max_days_to_limit=300)
        )
        == []
    )

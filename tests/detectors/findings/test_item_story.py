"""The item story (pure): an item's size, growth and rejected writes are one finding with one stable id, whatever the
order in which its facts arrive; its kind and severity are the worst fact's, rejected writes the worst."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

from auditor.detectors.base import HistoryInput, ObservationInput
from auditor.detectors.findings import item_story
from auditor.detectors.findings.item_story import merge_items, story_id, with_stored
from auditor.detectors.stream import item_growth, large_item
from auditor.detectors.trail import item_size_exceeded
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.stream import TableRef
from tests.detectors.test_stream_detectors import DAY, T0, WINDOW, obs
from tests.factories import call, span

TIMELINE = {"pk": "DEVICE#7f3a", "sk": "TIMELINE"}
HOUR = 3600.0


def exceeded(key: dict[str, Any], table: str = "Timelines") -> Finding:
    msg = "Item size to update has exceeded the maximum allowed size"
    agg = span([call("UpdateItem", table, key, at=i, error="ValidationException", message=msg) for i in range(3)])
    (finding,) = item_size_exceeded.detect(agg, item_size_exceeded.ItemSizeExceededConfig())
    return finding


def large(size: int = 400_000, **kw: Any) -> Finding:
    (finding,) = large_item.detect(ObservationInput(obs(size, **kw)))
    return finding


def growth(days: int = 8, start: int = 380_000, per_day: int = 2_000) -> Finding:
    samples = [(T0 + d * DAY, start + d * per_day) for d in range(days)]
    (finding,) = item_growth.detect(HistoryInput(obs(samples[-1][1], at=samples[-1][0]), samples))
    return finding


def test_size_growth_and_rejected_writes_on_one_item_are_one_story() -> None:
    # Given a CloudTrail rejection and stream findings on the same key, plus unrelated findings
    rejected, size, grows = exceeded(TIMELINE), large(), growth()
    other_key = large(key={"pk": {"S": "DEVICE#0001"}, "sk": {"S": "TIMELINE"}})
    other_table = large(ref=TableRef("111122223333", "us-east-1", "Archive"))
    no_key = large_item.estimate_large_writes("Timelines", 150_000.0, 1_000, WINDOW)
    assert no_key is not None
    # When
    out = merge_items([rejected, size, grows, other_key, other_table, no_key])
    # Then one story in the first member's place; the others are stories of their own, the estimate untouched
    assert len(out) == 4 and out[3] is no_key
    story = out[0]
    assert story.id == story_id(rejected.account, rejected.region, "Timelines", TIMELINE)
    assert story.kind is FindingKind.ITEM_SIZE_EXCEEDED and story.severity is Severity.CRITICAL
    assert [(f["kind"], f["source"]) for f in story.evidence["facts"]] == [
        ("item_size_exceeded", "cloudtrail"),
        ("item_growth", "dynamodb_streams"),
        ("large_item", "dynamodb_streams"),
    ]
    assert story.evidence["sources"] == ["cloudtrail", "dynamodb_streams"] and story.evidence["source"] == "cloudtrail"
    # every required field of every fact's kind, and each fact's period
    for kind in (FindingKind.ITEM_SIZE_EXCEEDED, FindingKind.LARGE_ITEM, FindingKind.ITEM_GROWTH):
        assert story.model_copy(update={"kind": kind}).missing_evidence() == []
    for fact in story.evidence["facts"]:
        assert {"first_seen", "last_seen", "severity"} <= set(fact)
    # one title and summary telling the story, with the evidence's numbers
    assert story.title.startswith("Item pk=DEVICE#7f3a, sk=TIMELINE of Timelines: 3 writes rejected for item size")
    assert (
        f"at {story.evidence['percent_of_limit']:.0f}% of 400 KB" in story.title and "growing 2.0 KB/day" in story.title
    )
    days = story.evidence["days_to_limit"]
    assert f"in {days:.1f} days" in story.title and f"in {days:.1f} days" in story.summary
    assert {o.id for o in out[1:3]} == {
        story_id(other_key.account, other_key.region, "Timelines", {"pk": "DEVICE#0001", "sk": "TIMELINE"}),
        story_id(other_table.account, other_table.region, "Archive", TIMELINE),
    }
    # Merging the result again changes nothing
    assert merge_items(out) == out


def test_any_order_of_arrival_gives_the_same_story() -> None:
    facts = [exceeded(TIMELINE), large(), growth()]
    stories = [merge_items(list(order)) for order in itertools.permutations(facts)]
    assert all(len(s) == 1 for s in stories)
    first = stories[0][0]
    for (s,) in stories[1:]:
        assert (s.id, s.kind, s.severity, s.title, s.summary, s.evidence) == (
            first.id,
            first.kind,
            first.severity,
            first.title,
            first.summary,
            first.evidence,
        )


def test_a_fact_joining_later_keeps_the_id_and_worsens_the_story() -> None:
    # Given the stored story of a medium large item (78% of the limit)
    (stored,) = merge_items([large(320_000)])
    assert (stored.kind, stored.severity) == (FindingKind.LARGE_ITEM, Severity.MEDIUM)
    # When rejected writes on the same key are seen in a later run (matched as a number or as text alike)
    (seen,) = merge_items([exceeded(TIMELINE)])
    merged = with_stored(stored, seen, max_age_seconds=1e12)
    # Then the same id, the rejected writes' kind, critical; the sighting's totals stay its own
    assert merged.id == stored.id == seen.id
    assert (merged.kind, merged.severity) == (FindingKind.ITEM_SIZE_EXCEEDED, Severity.CRITICAL)
    assert [f["kind"] for f in merged.evidence["facts"]] == ["item_size_exceeded", "large_item"]
    assert merged.totals == seen.totals
    # and the reverse order tells the same story
    reverse = with_stored(seen, stored, max_age_seconds=1e12)
    assert (reverse.id, reverse.kind, reverse.severity, reverse.title) == (
        merged.id,
        merged.kind,
        merged.severity,
        merged.title,
    )


def test_a_stored_fact_older_than_the_horizon_does_not_join() -> None:
    (stored,) = merge_items([large(320_000)])
    (seen,) = merge_items([exceeded(TIMELINE)])
    age = (seen.last_seen - stored.last_seen).total_seconds()
    assert with_stored(stored, seen, max_age_seconds=age - HOUR) == seen
    assert len(with_stored(stored, seen, max_age_seconds=age + HOUR).evidence["facts"]) == 2


def test_severity_is_the_worst_facts_and_rejected_writes_are_the_worst() -> None:
    # size and growth alone: the worst fact's severity and kind (growth first on a tie)
    (both,) = merge_items([large(320_000), growth()])  # medium size, growth 7.8 days to the limit: high
    assert (both.kind, both.severity) == (FindingKind.ITEM_GROWTH, Severity.HIGH)
    (critical,) = merge_items([large(400_000), growth(days=8, start=100_000, per_day=2_000)])
    assert critical.kind is FindingKind.LARGE_ITEM and critical.severity is Severity.CRITICAL
    # rejected writes alone keep their own severity; with a size or a growth, critical
    (alone,) = merge_items([exceeded(TIMELINE)])
    assert (alone.kind, alone.severity) == (FindingKind.ITEM_SIZE_EXCEEDED, Severity.HIGH)
    (lost,) = merge_items([large(310_000), exceeded(TIMELINE)])
    assert (lost.kind, lost.severity) == (FindingKind.ITEM_SIZE_EXCEEDED, Severity.CRITICAL)


def test_numeric_keys_match_as_logged_and_as_streamed() -> None:
    rejected = exceeded({"id": 1000})
    size = large(310_000, key={"id": {"N": "1000"}})
    (story,) = merge_items([size, rejected])
    assert story.kind is FindingKind.ITEM_SIZE_EXCEEDED and len(story.evidence["facts"]) == 2


def test_other_accounts_are_other_stories() -> None:
    rejected = exceeded(TIMELINE)  # account 111122223333
    elsewhere = large(310_000, ref=TableRef("999988887777", "us-east-1", "Timelines"))
    assert len(merge_items([rejected, elsewhere])) == 2


def test_a_sighting_of_one_fact_keeps_the_latest() -> None:
    early, late = large(320_000), large(330_000, at=T0 + HOUR)
    (story,) = merge_items([late, early])
    assert story.evidence["size_bytes"] == 330_000 and story.first_seen == early.first_seen
    assert story.last_seen == early.last_seen + timedelta(hours=1)


def test_days_to_the_limit_read_the_same_in_title_summary_and_evidence() -> None:
    (story,) = merge_items([growth(days=8, start=258_000, per_day=20_000)])
    days = story.evidence["days_to_limit"]
    assert 0 < days < 1
    assert f"{days:.1f} days" in story.title and f"{days:.1f} days" in story.summary and "0 days" not in story.title
    assert item_story.is_story(story)


def test_a_story_restated_for_its_period_states_the_periods_count() -> None:
    (story,) = merge_items([exceeded(TIMELINE), large(310_000)])
    period = story.model_copy(update={"evidence": {**story.evidence, "count": 12}})
    out = item_story.restated(period)
    assert out.evidence["facts"][0]["count"] == 12 and "12 writes rejected" in out.title
    assert "CloudTrail logged 12 writes" in out.summary and out.id == story.id
    assert item_story.restated(out) == out


def test_two_outputs_stories_of_one_item_combine_with_each_sources_totals() -> None:
    (trail,) = merge_items([exceeded(TIMELINE)])
    (stream,) = merge_items([large(310_000)])
    both = item_story.combine(stream, trail)
    assert both.id == trail.id and len(both.evidence["facts"]) == 2
    assert both.totals is not None and set(both.totals.by_source or {}) == {"cloudtrail", "dynamodb_streams"}
    assert both.totals.count == 3  # the rejected writes (CloudTrail's), not added to the stream's sightings


def test_a_story_stated_for_a_period_keeps_the_severity_its_facts_give_it() -> None:
    # the period's severity is the highest sighting's (here the rejected writes' high), but the story with a size fact
    # that joined from another run is critical
    (story,) = merge_items([exceeded(TIMELINE), large(310_000)])
    period = story.over_period(
        story.totals.model_copy(update={"peak_severity": Severity.HIGH}) if story.totals else None
    )
    assert period.severity is Severity.HIGH
    assert item_story.restated(period).severity is Severity.CRITICAL

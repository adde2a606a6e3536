"""A finding stated for a period (auditor.detectors.findings.period): a throttling story's sources' counts, their
per-cause details and its text are the period's, summed over the windows that saw it, with each source's own severity
and what raised the story above it; a key's headroom sentences are its period's evidence's.

Record shapes: GetItem as CloudTrail logs it (tests.kernel.test_index_spaces) and the provisioned table's throttling
error (tests.factories.PTEE, with its source there)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from auditor.detectors.findings.correlate import CorrelateConfig, correlate, raised_sources
from auditor.detectors.findings.period import for_period
from auditor.detectors.findings.throttling_story import merge_throttling
from auditor.detectors.trail import hot_key, low_cardinality_key
from auditor.detectors.trail.low_cardinality_key import LowCardinalityConfig
from auditor.models.finding import Finding, FindingKind, Severity
from tests.detectors.test_index_spaces import _span
from tests.detectors.trail.test_low_cardinality_key import BURST, SUSTAINED, _trail
from tests.factories import PTEE
from tests.kernel.test_index_spaces import _record

T0 = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


def _window(start: datetime, reads: int, writes: int, calls: int, key: str) -> Finding:
    """The CloudTrail throttling detector's finding of one 15-minute window (its evidence's shape)."""
    total = reads + writes
    return Finding.create(
        FindingKind.THROTTLING,
        account="111122223333",
        region="us-east-1",
        table="Orders",
        discriminator="key_range",
        severity=Severity.HIGH if total >= 100 else Severity.MEDIUM,
        title="Throttling on Orders (key range)",
        summary=(
            f"{total} calls to Orders were throttled in 15 minutes ({reads} reads, {writes} writes; "
            f"{total / calls:.1%} of calls); cause: key_range."
        ),
        recommendation="Shard the hot key.",
        evidence={
            "cause": "key_range",
            "cause_source": "concentrated_on_keys",
            "read_throttle_events": reads,
            "write_throttle_events": writes,
            "source": "cloudtrail",
            "throttled_share": round(total / calls, 4),
            "calls": calls,
            "top_keys": [{"key": {"pk": key}, "throttled_calls": total}],
            "window_seconds": 900,
        },
        first_seen=start,
        last_seen=start + timedelta(minutes=14),
    )


def test_a_story_states_the_periods_counts_details_and_text() -> None:
    (first,) = merge_throttling([_window(T0, 30, 90, 1000, "A")])
    (late,) = merge_throttling([_window(T0 + timedelta(hours=2), 5, 10, 3000, "B")])
    totals = first.sighting_totals().merged(late.sighting_totals()).over(T0, T0 + timedelta(hours=3))
    stated = for_period(late, totals)
    ev = stated.evidence
    assert (ev["read_throttle_events"], ev["write_throttle_events"]) == (35, 100) == (35, totals.count - 35)
    block = ev["sources"]["cloudtrail"]
    assert (block["events"], block["read"], block["write"]) == (135, 35, 100)
    assert (block["first_seen"], block["severity"]) == ("2026-11-24T09:00:00Z", "high")  # the period's highest
    detail = block["details"]["key_range"]
    assert (detail["calls"], detail["throttled_share"], detail["window_seconds"]) == (4000, round(135 / 4000, 4), 10800)
    assert detail["summary"].startswith(
        "135 calls to Orders were throttled in 3 hours (35 reads, 100 writes; 3.4% of calls); cause: key_range."
    )
    assert ev["top_keys"] == [
        {"key": {"pk": "A"}, "throttled_calls": 120},
        {"key": {"pk": "B"}, "throttled_calls": 15},
    ]
    assert "135 throttled calls (35 reads, 100 writes)" in stated.summary
    # stating it again changes nothing, and so does starting from the other window's sighting
    assert for_period(stated, totals).evidence == ev == for_period(first, totals).evidence


# ---------------------------------------------------------------------------------------------------------------------
# A key's headroom sentences state the headroom of the period's evidence (its tightest window's), not the headroom of
# whatever the text was written from (a window, or analyze-trail's whole input, which counts windows the key was not
# found in).
# ---------------------------------------------------------------------------------------------------------------------


def _low(consistent: bool) -> Finding:
    """The low_cardinality_key finding of a minute of reads of status=OPEN at 360 reads/s: 8.33x headroom strongly
    consistent (medium), 16.67x eventually consistent (low: "far below a partition's limits")."""
    [low] = low_cardinality_key.detect(_span(_trail(consistent, SUSTAINED, 60)), LowCardinalityConfig())
    return low


def _hot(consistent: bool, throttled: int = 0) -> Finding:
    """The hot_key finding of a second of 1,600 reads of status=OPEN (1.88x headroom strongly consistent, 3.75x
    eventually), ``throttled`` more reads of it refused with the provisioned table's error."""
    records = _trail(consistent, BURST, 1)
    hot = {"key": {"status": "OPEN"}, "consistentRead": consistent}
    records += [_record("GetItem", 2, hot, 10_000 + i, PTEE) for i in range(throttled)]
    [key] = hot_key.detect(_span(records), hot_key.HotKeyConfig())
    return key


def _stated(text: Finding, window: Finding) -> Finding:
    """``text`` (a finding as its summary was written) stated for a period in which only ``window`` found it."""
    start = window.first_seen.replace(minute=0, second=0)
    return for_period(text, window.sighting_totals().over(start, start + timedelta(hours=1)))


def test_a_low_cardinality_keys_text_states_its_periods_headroom() -> None:
    strong, eventual = _low(consistent=True), _low(consistent=False)
    assert "(headroom 17x), so this is at most low. Headroom 16.7x: throttles at 16.7 times" in eventual.summary
    # written at 16.7x, stated for a period whose window had 8.3x: the text says 8.3x, and the period (medium) is no
    # longer "at most low"
    stated = _stated(eventual, strong)
    assert (stated.evidence["headroom_factor"], stated.severity) == (8.33, Severity.MEDIUM)
    assert "Headroom 8.3x: throttles at 8.3 times today's peak." in stated.summary
    assert "16.7" not in stated.summary and "17x" not in stated.summary and "at most low" not in stated.summary
    # the other way round
    stated = _stated(strong, eventual)
    assert stated.evidence["busiest_value_headroom_factor"] == stated.evidence["headroom_factor"] == 16.67
    assert "Headroom 16.7x: throttles at 16.7 times today's peak." in stated.summary and "8.3" not in stated.summary
    # written over analyze-trail's whole input (its busiest value's busier minute in a window the key was not found
    # in) at 2,857x, stated for the windows that found it: the period's 16.7x in both sentences
    far = eventual.model_copy(
        update={
            "summary": eventual.summary.replace("17x", "2,857x").replace("16.7", "2857.1"),
            "evidence": {
                **eventual.evidence,
                **dict.fromkeys(("busiest_value_headroom_factor", "headroom_factor"), 2857.14),
                "assumed_utilisation": 0.0004,
            },
        }
    )
    assert "(headroom 17x), so this is at most low. Headroom 16.7x" in _stated(far, eventual).summary
    # a finding stated for its own window keeps the detector's headroom sentences
    tail = eventual.summary.partition(" partitions.")[2]
    assert tail.startswith(" Its busiest value") and _stated(eventual, eventual).summary.endswith(tail)


def test_a_hot_keys_text_states_its_periods_headroom_and_throttles() -> None:
    strong, eventual, throttled = _hot(consistent=True), _hot(consistent=False), _hot(consistent=True, throttled=5)
    assert ": 27% of the limit (headroom 3.8x)." in eventual.summary and "Headroom 3.8x" in eventual.summary
    assert ": 53% of the limit on the assumptions." in throttled.summary
    assert " 5 calls on it were throttled: no headroom at today's peak" in throttled.summary
    stated = _stated(eventual, strong)
    assert ": 53% of the limit (headroom 1.9x)." in stated.summary
    assert "Headroom 1.9x: throttles at 1.9 times today's peak." in stated.summary and "3.8" not in stated.summary
    # text written where the key throttled, a period whose window did not: no throttles in the text
    stated = _stated(throttled, strong)
    assert stated.evidence["throttled_calls"] == 0 and "throttled" not in stated.summary
    assert ": 53% of the limit (headroom 1.9x)." in stated.summary and "Headroom 1.9x" in stated.summary
    # and the other way: the period's throttles, its utilisation on the assumptions, no headroom above 1x
    stated = _stated(eventual, throttled)
    assert (stated.evidence["headroom_factor"], stated.evidence["throttled_calls"]) == (1.0, 5)
    assert ": 53% of the limit on the assumptions." in stated.summary and "Headroom" not in stated.summary
    assert " 5 calls on it were throttled: no headroom at today's peak, it throttles now." in stated.summary
    assert "which put the peak at 53% of the limit" in stated.summary
    assert _stated(throttled, throttled).summary == throttled.summary
    # written in a window whose utilisation was 54%: the period's (its tightest window's, 0.5333) in both sentences
    text = throttled.model_copy(update={"summary": throttled.summary.replace("53%", "54%")})
    assert _stated(text, throttled).summary == throttled.summary


# ---------------------------------------------------------------------------------------------------------------------
# A throttling story raised by its link to a key finding: each source's own severity, and what raised the story.
# ---------------------------------------------------------------------------------------------------------------------


def _linked() -> tuple[Finding, Finding]:
    """(a high throttling story on Orders, a hot key on its throttled key), correlated: both raised to critical."""
    (story,) = merge_throttling([_window(T0, 30, 90, 1000, "A")])
    key = Finding.create(
        FindingKind.HOT_KEY,
        account="111122223333",
        region="us-east-1",
        table="Orders",
        discriminator={"pk": "A"},
        severity=Severity.HIGH,
        title="Hot partition key pk=A on Orders",
        summary="pk=A on Orders took 40% of the requests.",
        recommendation="Spread pk=A.",
        evidence={"key": {"pk": "A"}, "share": 0.4, "requests": 400, "window_seconds": 900, "source": "cloudtrail"},
        first_seen=T0,
        last_seen=T0 + timedelta(minutes=14),
    )
    story, key = correlate([story, key], CorrelateConfig())
    return story, key


def test_a_story_raised_by_its_link_says_so_beside_each_sources_own_severity() -> None:
    story, key = _linked()
    assert story.severity is Severity.CRITICAL
    block = story.evidence["sources"]["cloudtrail"]
    assert (block["severity"], block["severity_raised_to"], block["severity_raised_by"]) == (
        "high",
        "critical",
        [key.id],
    )
    assert list(block)[list(block).index("severity") + 1] == "severity_raised_to"  # read together
    # stated for a period: the source's own severity (as its totals say), and the same label
    stated = for_period(story, story.sighting_totals().over(T0, T0 + timedelta(hours=1)))
    assert stated.totals is not None and stated.totals.by_source is not None
    assert (stated.severity, stated.totals.by_source["cloudtrail"].peak_severity) == (Severity.CRITICAL, Severity.HIGH)
    block = stated.evidence["sources"]["cloudtrail"]
    assert (block["severity"], block["severity_raised_to"], block["severity_raised_by"]) == (
        "high",
        "critical",
        [key.id],
    )
    assert for_period(stated, stated.totals).evidence == stated.evidence
    # a story no link raised has no label, and a label its severity no longer bears out goes
    (alone,) = merge_throttling([_window(T0, 30, 90, 1000, "A")])
    assert "severity_raised_to" not in alone.evidence["sources"]["cloudtrail"]
    lowered = for_period(story.model_copy(update={"severity": Severity.HIGH}), None)
    assert lowered.evidence == story.evidence  # no period: as stored
    unlinked = {k: v for k, v in story.evidence.items() if k != "correlation"}
    assert "severity_raised_to" not in raised_sources(unlinked, Severity.CRITICAL)["sources"]["cloudtrail"]

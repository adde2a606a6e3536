"""A throttling story stated for a period: its sources' counts, their per-cause details and its text are the
period's, summed over the windows that saw it (auditor.detectors.findings.period)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from auditor.detectors.findings.period import for_period
from auditor.detectors.findings.throttling_story import merge_throttling
from auditor.models.finding import Finding, FindingKind, Severity

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

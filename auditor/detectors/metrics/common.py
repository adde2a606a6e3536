"""Helpers shared by the CloudWatch-side detectors (``cw_throttling``, ``cw_scan``, ``unused_index``) and the
audit: epoch formatting and runs of consecutive periods."""

from __future__ import annotations

from datetime import UTC, datetime

from auditor.models.inventory import TableProfile


def to_dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def created_epoch(profile: TableProfile) -> float | None:
    """The table's creation time (epoch seconds) from DescribeTable, or None when unknown."""
    if not profile.created:
        return None
    try:
        return datetime.fromisoformat(profile.created).timestamp()
    except ValueError:
        return None


def iso(epoch: float) -> str:
    return to_dt(epoch).strftime("%Y-%m-%dT%H:%M:%SZ")


def longest_run(times: list[int], period: int) -> int:
    """The longest run of consecutive periods in sorted ``times`` (in periods)."""
    best = run = 0
    prev: int | None = None
    for t in times:
        run = run + 1 if prev is not None and t - prev == period else 1
        best = max(best, run)
        prev = t
    return best

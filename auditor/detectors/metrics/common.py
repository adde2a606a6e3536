"""Shared pieces of the CloudWatch/inventory detectors (``cw_throttling``, ``cw_scan``, ``unused_index``,
``ci_hot_key``, ``correlate``).

These detectors are pure functions of a :class:`~auditor.models.inventory.TableProfile`, the table's
:class:`~auditor.models.metrics.TableMetrics` (or Contributor Insights reports) and a config. They are not in the
CloudTrail detector registry (which runs over ``TableWindow`` aggregates); :data:`CW_DETECTORS` lists their
metadata instead.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from auditor.detectors.base import DetectorMetadata
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.inventory import TableProfile

#: Metadata of every CloudWatch-side detector, by id (filled by the detector modules on import).
CW_DETECTORS: dict[str, DetectorMetadata] = {}


def declare(meta: DetectorMetadata) -> DetectorMetadata:
    """Record a CloudWatch-side detector's metadata (ids are unique)."""
    if meta.id in CW_DETECTORS:
        raise ValueError(f"duplicate detector id {meta.id!r}")
    CW_DETECTORS[meta.id] = meta
    return meta


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


def cw_finding(
    kind: FindingKind,
    profile: TableProfile,
    *,
    severity: Severity,
    discriminator: Any,
    title: str,
    summary: str,
    recommendation: str,
    evidence: dict[str, Any],
    first: float,
    last: float,
    index: str | None = None,
) -> Finding:
    """A finding on ``profile``'s table (or one of its indexes) with a stable id.

    The discriminator always carries the source, so a CloudWatch finding never shares an id with the CloudTrail
    finding of the same kind on the same resource: each keeps its own lifecycle, and correlation links them.
    """
    return Finding.create(
        kind,
        account=profile.account,
        region=profile.region,
        table=profile.name,
        index=index,
        discriminator=discriminator,
        severity=severity,
        title=title,
        summary=summary,
        recommendation=recommendation,
        evidence=evidence,
        first_seen=to_dt(first),
        last_seen=to_dt(last),
    )


def longest_run(times: list[int], period: int) -> int:
    """The longest run of consecutive periods in sorted ``times`` (in periods)."""
    best = run = 0
    prev: int | None = None
    for t in times:
        run = run + 1 if prev is not None and t - prev == period else 1
        best = max(best, run)
        prev = t
    return best

"""``item_growth``: an item whose size rises steadily, projected to the 400 KB limit (pure).

Input: one item's size history and the observation just added to it. The rate is the Theil-Sen slope; growth counts
only when it is steady (enough samples and span, most pairs rising, no single step carrying it), and the severity
follows the days to the limit. The rules and thresholds are in docs/detectors.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import median
from typing import Any

from pydantic import Field

from auditor.detectors.base import (
    DetectorConfig,
    DetectorInput,
    DetectorMetadata,
    HistoryInput,
    epoch_to_dt,
)
from auditor.detectors.registry import register
from auditor.detectors.stream.large_item import item_finding
from auditor.models.dynamodb_size import ITEM_SIZE_LIMIT
from auditor.models.finding import Finding, FindingKind, Severity

__all__ = ["METADATA", "Config", "GrowthFit", "days_text", "days_to_limit", "detect", "fit_growth", "theil_sen_slope"]

METADATA = DetectorMetadata(
    id="item_growth",
    kind=FindingKind.ITEM_GROWTH,
    default_severity=Severity.MEDIUM,
    title="Item growing towards the 400 KB limit",
    risk=(
        "An item that grows with every write (a list appended to, a counter map, an embedded history) will reach "
        "400 KB, and from then on every write to it fails with a ValidationException. Until then each write costs "
        "more WCU as the whole item is rewritten."
    ),
    remediation=(
        "Don't append forever to one item. Move the growing attribute into separate items under the same "
        "partition key (an item collection with sort-key suffixes, read back with one Query), or store it in S3 "
        "with a pointer in the item."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-sort-keys.html",
)

_DAY = 86_400.0
Sample = tuple[float, float]


class Config(DetectorConfig):
    """When growth is steady enough to report, and how urgent it is."""

    min_samples: int = Field(default=6, ge=3)
    min_span_hours: float = Field(default=24.0, ge=0)
    min_bytes_per_day: float = Field(default=1024.0, gt=0)
    min_rising_pair_share: float = Field(default=0.75, ge=0.5, le=1)
    max_single_step_share: float = Field(default=0.5, gt=0, le=1)
    critical_days: float = Field(default=7.0, ge=0)
    high_days: float = Field(default=30.0, ge=0)
    medium_days: float = Field(default=90.0, ge=0)
    max_days_to_limit: float = Field(default=365.0, gt=0)


def theil_sen_slope(samples: Sequence[Sample]) -> float | None:
    """The median of the pairwise slopes ``(y_j - y_i) / (t_j - t_i)`` (per second), None without two times."""
    slopes = [(y2 - y1) / (t2 - t1) for i, (t1, y1) in enumerate(samples) for (t2, y2) in samples[i + 1 :] if t2 != t1]
    return median(slopes) if slopes else None


@dataclass(frozen=True, slots=True)
class GrowthFit:
    """A robust fit of a size history."""

    bytes_per_day: float
    #: Of the sample pairs whose sizes differ, the share that rises with time.
    rising_pair_share: float
    #: The largest rise between consecutive samples over the sum of all such rises (1.0: one jump did it all).
    largest_step_share: float
    span_seconds: float
    samples: int


def fit_growth(samples: Sequence[Sample]) -> GrowthFit | None:
    """Fit ``samples`` (any order); None with fewer than two distinct times."""
    ordered = sorted(samples)
    slope = theil_sen_slope(ordered)
    if slope is None:
        return None
    rising = falling = 0
    for i, (t1, y1) in enumerate(ordered):
        for t2, y2 in ordered[i + 1 :]:
            if t2 == t1 or y2 == y1:
                continue
            if y2 > y1:
                rising += 1
            else:
                falling += 1
    steps = [b[1] - a[1] for a, b in pairwise(ordered) if b[1] > a[1]]
    return GrowthFit(
        bytes_per_day=slope * _DAY,
        rising_pair_share=rising / (rising + falling) if rising + falling else 0.0,
        largest_step_share=max(steps) / sum(steps) if steps else 1.0,
        span_seconds=ordered[-1][0] - ordered[0][0],
        samples=len(ordered),
    )


def days_to_limit(size_bytes: float, bytes_per_day: float, limit_bytes: int = ITEM_SIZE_LIMIT) -> float | None:
    """Days until ``size_bytes`` reaches the limit at ``bytes_per_day``; None when not growing."""
    if bytes_per_day <= 0:
        return None
    return max(0.0, (limit_bytes - size_bytes) / bytes_per_day)


def days_text(days: float) -> str:
    """Days to the limit as every output states them: one decimal, as ``evidence.days_to_limit`` rounds to it."""
    return "now" if days <= 0 else f"{days:.1f} day{'s' if round(days, 1) != 1 else ''}"


def _severity(days: float, cfg: Config) -> Severity | None:
    if days > cfg.max_days_to_limit:
        return None
    if days <= cfg.critical_days:
        return Severity.CRITICAL
    if days <= cfg.high_days:
        return Severity.HIGH
    if days <= cfg.medium_days:
        return Severity.MEDIUM
    return Severity.LOW


def is_steady(fit: GrowthFit, cfg: Config) -> bool:
    """Whether ``fit`` passes every steadiness rule of the module docstring."""
    return (
        fit.samples >= cfg.min_samples
        and fit.span_seconds >= cfg.min_span_hours * 3600
        and fit.bytes_per_day >= cfg.min_bytes_per_day
        and fit.rising_pair_share >= cfg.min_rising_pair_share
        and fit.largest_step_share <= cfg.max_single_step_share
    )


@register(METADATA, Config, DetectorInput.ITEM_HISTORY)
def detect(data: HistoryInput, cfg: Config) -> list[Finding]:
    """An ``item_growth`` finding when ``samples`` (the item's history, ``obs`` included) rise steadily."""
    obs, samples, driver = data.observation, data.samples, data.driver
    if len(samples) < cfg.min_samples:
        return []
    fit = fit_growth(samples)
    if fit is None or not is_steady(fit, cfg):
        return []
    days = days_to_limit(obs.size_bytes, fit.bytes_per_day)
    if days is None:
        return []
    severity = _severity(days, cfg)
    if severity is None:
        return []
    attribute = driver or (obs.growth[0].name if obs.growth else None) or obs.largest_attribute
    reached = epoch_to_dt(obs.time + days * _DAY) if days < 36_500 else None
    summary = (
        f"grows by about {fit.bytes_per_day:,.0f} bytes a day (robust slope over "
        f"{fit.samples} samples spanning {fit.span_seconds / _DAY:.1f} days) and is now {obs.size_bytes:,} bytes: "
        f"at this rate it reaches the 400 KB limit in {days_text(days)}"
        + (f" (around {reached:%Y-%m-%d})" if reached else "")
        + ", after which every write to it fails."
    )
    if attribute:
        summary += f' The growth is in "{attribute}".'
    evidence: dict[str, Any] = {
        "key": obs.plain_key,
        "size_bytes": obs.size_bytes,
        "bytes_per_day": round(fit.bytes_per_day, 1),
        "days_to_limit": round(days, 2),
        "limit_bytes": ITEM_SIZE_LIMIT,
        "projected_limit_at": reached.strftime("%Y-%m-%dT%H:%M:%SZ") if reached else None,
        "growth_attribute": attribute,
        "samples": fit.samples,
        "span_days": round(fit.span_seconds / _DAY, 2),
        "rising_pair_share": round(fit.rising_pair_share, 3),
        "largest_step_share": round(fit.largest_step_share, 3),
        "method": "theil_sen",
        "source": "dynamodb_streams",
    }
    return item_finding(
        METADATA,
        obs,
        severity=severity,
        title=f"reaches 400 KB in {days_text(days)}",
        summary=summary,
        attribute=attribute,
        growing=True,
        evidence=evidence,
        first=min(t for t, _ in samples),
    )

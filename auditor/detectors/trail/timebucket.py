"""Time-series buckets in partition keys (``DAY#2026-12-03``, ``2026-12-03``, ``HOUR#2026-12-03T10``).

A partition key that names a period takes every write of that period: the current bucket is always the hot one.
The fix is write sharding with a suffix, and the number of shards follows from the measured write rate.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["bucket_of", "shard_advice", "shards_needed"]

_BUCKETS = (
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"), "minute"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}"), "hour"),
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "day"),
    (re.compile(r"(?<!\d)\d{4}-W\d{2}(?!\d)"), "week"),
    (re.compile(r"(?<!\d)(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?:[01]\d|2[0-3])?(?!\d)"), "day"),
    (re.compile(r"(?<![\d-])(?:19|20)\d{2}-(?:0[1-9]|1[0-2])(?![\d-])"), "month"),
)
_PREFIX = re.compile(r"^(MINUTE|HOUR|DAY|DATE|WEEK|MONTH|YEAR|TS|TIME|BUCKET|PERIOD)#", re.IGNORECASE)

#: Plan each shard at this share of a partition's limit, leaving room for growth and uneven suffixes.
SHARD_TARGET_UTILISATION = 0.5


def bucket_of(value: Any) -> str | None:
    """The period a partition-key value names (``minute``, ``hour``, ``day``, ``week``, ``month``), or None."""
    if not isinstance(value, str) or len(value) > 128:
        return None
    m = _PREFIX.match(value)
    for pattern, period in _BUCKETS:
        found = pattern.search(value)
        if found is None:
            continue
        if period == "day" and m is not None and m.group(1).upper() == "HOUR":
            return "hour"  # HOUR#2026120310 (compact, with the hour)
        return period
    return None


def shards_needed(peak_units_per_second: float, partition_limit: float) -> int:
    """Write shards so that each takes at most :data:`SHARD_TARGET_UTILISATION` of a partition's limit."""
    if peak_units_per_second <= 0:
        return 2
    return max(2, math.ceil(peak_units_per_second / (partition_limit * SHARD_TARGET_UTILISATION)))


def shard_advice(
    attr: str,
    value: str,
    period: str,
    writes_per_s: float,
    reads_per_s: float,
    capacity: tuple[float, float] = (3000.0, 1000.0),
) -> tuple[str, int]:
    """(the fix for a time-bucket partition key, the number of shards it names), against one partition's
    ``capacity`` (read, write units per second: the documented limits unless the evidence showed less)."""
    read_limit, write_limit = capacity
    n = max(shards_needed(writes_per_s, write_limit), shards_needed(reads_per_s, read_limit) if reads_per_s else 2)
    text = (
        f"{attr}={value!s:.60} is a {period} bucket: every write of that {period} goes to one partition, so the "
        f"current bucket is always the hot one. Write-shard the bucket with a suffix: "
        f"{attr}={value!s:.40}#0 .. #{n - 1} "
        f"({n} shards for the peak of {writes_per_s:.0f} writes/s, each at most "
        f"{SHARD_TARGET_UTILISATION:.0%} of a partition's {write_limit:,.0f} WCU), choosing the suffix at random or "
        f"from an item attribute (hash of the entity id) so readers can find an item; a reader of the whole {period} "
        f"queries the {n} shards in parallel and merges. Keep buckets no coarser than the write rate needs."
    )
    return text, n

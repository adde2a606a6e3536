"""``ttl_not_expiring``: Time to Live is enabled, the table keeps taking writes and holds items, but TTL deleted
nothing for days.

The input is the metrics audit's daily activity read (:func:`auditor.sources.cloudwatch.read_activity`):
``TimeToLiveDeletedItemCount`` stays at 0 for the whole activity window while writes go on. The usual causes, and
why a recent TTL can be reported, are in docs/detectors.md.
"""

from __future__ import annotations

from auditor.detectors.base import Amount, DetectorInput, DetectorMetadata, MetricsInput, make_finding
from auditor.detectors.metrics.common import GIB, StoragePrices, created_epoch, iso
from auditor.detectors.registry import register
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.metrics import CONSUMED, TTL_DELETED

METADATA = DetectorMetadata(
    id="ttl_not_expiring",
    kind=FindingKind.TTL_NOT_EXPIRING,
    default_severity=Severity.LOW,
    title="Time to Live is enabled but deletes nothing",
    risk=(
        "Items that were meant to expire stay: the table grows without bound, pays for storage it was meant to "
        "free, and reads and scans return stale items. TTL silently ignores items whose TTL attribute is "
        "missing, not a Number, or not in epoch seconds."
    ),
    remediation=(
        "Write the TTL attribute on every item as a Number in epoch seconds (10 digits today, not milliseconds), "
        "set to the time the item should expire; fix existing items with a one-off backfill."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html",
)


class TtlConfig(StoragePrices):
    """How many days without TTL deletions make a finding, and the storage price for its cost."""

    min_days: Amount = 7.0
    #: Medium severity from this monthly storage cost (USD).
    medium_monthly_storage_cost: Amount = 25.0


@register(METADATA, TtlConfig, DetectorInput.TABLE_ACTIVITY)
def detect(data: MetricsInput, cfg: TtlConfig) -> list[Finding]:
    """One finding when TTL is enabled and deleted nothing over the window while the table took writes."""
    profile, activity = data.profile, data.metrics
    if profile.ttl_status != "ENABLED" or activity.days < cfg.min_days:
        return []
    created = created_epoch(profile)
    if created is None or created > activity.start:
        return []  # younger than the window: its first items may not be due yet
    res = activity.resources.get(None)
    if res is None or not res.known(TTL_DELETED) or not res.known(CONSUMED["write"]) or TTL_DELETED not in res.series:
        return []
    deleted = res.total(TTL_DELETED)
    writes = res.total(CONSUMED["write"])
    items = profile.item_count or 0
    if deleted > 0 or writes <= 0 or items <= 0:
        return []
    ia = profile.table_class == "STANDARD_INFREQUENT_ACCESS"
    size = profile.size_bytes or 0
    storage_cost = cfg.storage_month(size, ia)
    attr = profile.ttl_attribute or "(unknown)"
    days = activity.days
    name = profile.name
    write_series = res.get(CONSUMED["write"])
    write_days = len(write_series.nonzero()) if write_series is not None else 0
    check = (
        f"aws dynamodb scan --table-name {name} --max-items 20 --projection-expression '#t' "
        f'--expression-attribute-names \'{{"#t": "{attr}"}}\''
    )
    return [
        make_finding(
            METADATA,
            profile,
            severity=(
                Severity.MEDIUM if storage_cost >= cfg.medium_monthly_storage_cost else METADATA.default_severity
            ),
            discriminator={"source": "cloudwatch_activity", "ttl_attribute": attr},
            title=f"TTL on {name} ({attr}) deleted nothing in {days:.0f} days",
            summary=(
                f"Time to Live is enabled on {name} with attribute {attr}, but TimeToLiveDeletedItemCount stayed at 0 "
                f"from {iso(activity.start)[:10]} to {iso(activity.end)[:10]} ({days:.0f} days) while the table took "
                f"{writes:,.0f} write units on {write_days} of those days and holds {items:,} items "
                f"({size / GIB:,.2f} GiB, about ${storage_cost:,.2f} a month of storage)."
            ),
            recommendation=(
                f"Look at the {attr} values of a few items ({check}; a small, bounded read). TTL deletes an item only "
                f"when {attr} is a Number holding epoch seconds in the past: a missing attribute, a String or ISO "
                "date, a 13-digit value in milliseconds, or a time years ahead is never deleted. Fix the writer to "
                "store epoch seconds (for example int(time.time()) + 86400 * days), then backfill existing items. "
                f"If the items are meant to live longer than {days:.0f} days, or TTL was enabled recently, snooze "
                "this finding."
            ),
            evidence={
                "ttl_attribute": profile.ttl_attribute,
                "deleted_items": 0,
                "days_analyzed": round(days, 2),
                "writes": round(writes),
                "write_days": write_days,
                "item_count": items,
                "size_bytes": size,
                "monthly_storage_cost": round(storage_cost, 2),
                "likely_causes": ["attribute_missing", "not_a_number", "milliseconds", "far_future"],
                "source": "cloudwatch_activity",
                "window_start": iso(activity.start),
                "window_end": iso(activity.end),
            },
            first=activity.start,
            last=activity.end,
        )
    ]

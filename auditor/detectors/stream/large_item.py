"""``large_item``: an item at or above a share of the 400 KB limit (pure).

:func:`detect` judges one exact observation from a DynamoDB Stream; :func:`estimate_large_writes` flags tables
without a stream from CloudWatch's write units per write (an upper bound, ``key: null``);
:func:`insufficient_view_type` says (``info``) that a stream carries no ``NewImage``. Thresholds and severities are
in docs/detectors.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from auditor.detectors.base import (
    DetectorConfig,
    DetectorInput,
    DetectorMetadata,
    ObservationInput,
    Table,
    make_finding,
)
from auditor.detectors.registry import register
from auditor.models.dynamodb_size import ITEM_SIZE_LIMIT
from auditor.models.finding import Finding, FindingKind, Severity, utc
from auditor.models.stream import ItemSizeObservation

__all__ = ["METADATA", "Config", "detect", "estimate_large_writes", "insufficient_view_type", "severity_for"]

METADATA = DetectorMetadata(
    id="large_item",
    kind=FindingKind.LARGE_ITEM,
    default_severity=Severity.MEDIUM,
    title="Item approaching the 400 KB limit",
    risk=(
        "DynamoDB rejects any write that would make an item larger than 400 KB, so an item close to the limit is "
        "one append away from failing writes. Large items are also expensive: every write costs 1 WCU per KB of "
        "the whole item and every read 1 RCU per 4 KB, however little of it changed or is used."
    ),
    remediation=(
        "Don't append forever to one item. Split the growing attribute into separate items under the same "
        "partition key (an item collection: sort keys such as EVENT#0001, EVENT#0002, read back with one Query), "
        "or store the large value in S3 and keep only a pointer (bucket and key) in the item."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-use-s3-too.html",
)

_KB = 1024
_WCU_BYTES = 1024


class Config(DetectorConfig):
    """Thresholds, in percent of the 409,600-byte limit."""

    threshold_pct: float = Field(default=75.0, gt=0, le=100)
    high_pct: float = Field(default=85.0, gt=0, le=100)
    critical_pct: float = Field(default=95.0, gt=0, le=100)
    #: ``estimate_large_writes``: average WCU per write from which a table is flagged (100 WCU = about 100 KB).
    estimate_min_wcu_per_write: float = Field(default=100.0, gt=0)


def severity_for(size_bytes: int, cfg: Config) -> Severity | None:
    """The severity of an item of ``size_bytes``, or None below the threshold."""
    pct = 100.0 * size_bytes / ITEM_SIZE_LIMIT
    if pct < cfg.threshold_pct:
        return None
    if pct >= cfg.critical_pct:
        return Severity.CRITICAL
    if pct >= cfg.high_pct:
        return Severity.HIGH
    return Severity.MEDIUM


def _kb(size: float) -> str:
    return f"{size / _KB:,.1f} KB"


def key_label(key: dict[str, Any]) -> str:
    """An item's key for people: ``pk=USER#1, sk=PROFILE`` (shared with ``item_growth``)."""
    return ", ".join(f"{name}={value}" for name, value in key.items())


def recommendation(table: str, attribute: str | None, *, growing: bool) -> str:
    """The fix, naming the attribute to move out when it is known (shared with ``item_growth``)."""
    what = f'the attribute "{attribute}"' if attribute else "the largest attribute"
    verb = "keeps growing" if growing else "takes most of the item"
    return (
        f"Don't append forever to one item: {what} {verb}. Move it out of the item. Either split it into "
        f"separate items under the same partition key of {table} (an item collection: one item per element or per "
        "period, with sort-key suffixes such as #0001, #0002, read back with one Query, and optionally a small "
        "summary item), or store the value in S3 and keep only a pointer (bucket and object key) in the item. "
        "Both keep every item far below 400 KB and make each write cost only what changed."
    )


def item_finding(
    meta: DetectorMetadata,
    obs: ItemSizeObservation,
    *,
    severity: Severity,
    title: str,
    summary: str,
    attribute: str | None,
    growing: bool,
    evidence: dict[str, Any],
    first: float,
) -> list[Finding]:
    """The finding on one observed item (shared with ``item_growth``): keyed by the item's key, named by its label
    (``title`` and ``summary`` go on from "Item of <table>" and "Item <label> of <table>"), with the fix for
    ``attribute``, seen from ``first`` to the observation."""
    label = key_label(obs.plain_key)
    return [
        make_finding(
            meta,
            obs,
            discriminator=obs.plain_key,
            severity=severity,
            title=f"Item of {obs.table} {title} ({label:.60})",
            summary=f"Item {label:.120} of {obs.table} {summary}",
            recommendation=recommendation(obs.table, attribute, growing=growing),
            evidence=evidence,
            first=first,
            last=obs.time,
        )
    ]


@register(METADATA, Config, DetectorInput.STREAM_OBSERVATION)
def detect(data: ObservationInput, cfg: Config) -> list[Finding]:
    """A ``large_item`` finding for an observed item at or above the threshold, else nothing."""
    obs, first_seen = data.observation, data.first_seen
    severity = severity_for(obs.size_bytes, cfg)
    if severity is None:
        return []
    grown = obs.growth[0] if obs.growth else None
    driver = grown.name if grown else obs.largest_attribute
    pct = obs.percent_of_limit
    summary = f"is {obs.size_bytes:,} bytes ({pct:.1f}% of the 400 KB limit), measured from its stream image."
    if obs.largest_attribute:
        summary += f' Its largest attribute, "{obs.largest_attribute}", is {_kb(obs.largest_attribute_bytes)}.'
    if grown:
        summary += f' The last write grew "{grown.name}" by {grown.delta:,} bytes.'
    evidence: dict[str, Any] = {
        "key": obs.plain_key,
        "size_bytes": obs.size_bytes,
        "limit_bytes": ITEM_SIZE_LIMIT,
        "percent_of_limit": round(pct, 2),
        "largest_attribute": obs.largest_attribute,
        "largest_attribute_bytes": obs.largest_attribute_bytes,
        "growth_attributes": [{"name": g.name, "bytes_added": g.delta} for g in obs.growth],
        "stream_view_type": obs.view_type,
        "source": "dynamodb_streams",
        "method": "stream_new_image",
    }
    return item_finding(
        METADATA,
        obs,
        severity=severity,
        title=f"at {pct:.0f}% of the 400 KB limit",
        summary=summary,
        attribute=driver,
        growing=grown is not None,
        evidence=evidence,
        first=min(first_seen, obs.time) if first_seen is not None else obs.time,
    )


def estimate_large_writes(
    table: str,
    consumed_wcu_sum: float,
    writes: int,
    window: tuple[datetime, datetime],
    *,
    account: str | None = None,
    region: str | None = None,
    writes_source: str = "cloudtrail",
    cfg: Config | None = None,
) -> Finding | None:
    """Flag a table whose average write costs at least ``estimate_min_wcu_per_write`` WCU (no stream needed).

    ``consumed_wcu_sum`` is CloudWatch ``ConsumedWriteCapacityUnits`` summed over ``window`` (start, end);
    ``writes`` the number of item writes in the same window (CloudTrail data events, or the ``SampleCount`` of
    ``SuccessfulRequestLatency`` for the write operations: name it in ``writes_source``).
    """
    cfg = cfg or Config()
    if not cfg.enabled or writes <= 0 or consumed_wcu_sum <= 0:
        return None
    wcu_per_write = consumed_wcu_sum / writes
    if wcu_per_write < cfg.estimate_min_wcu_per_write:
        return None
    avg_bytes = round(min(wcu_per_write * _WCU_BYTES, ITEM_SIZE_LIMIT))
    pct = 100.0 * avg_bytes / ITEM_SIZE_LIMIT
    start, end = utc(window[0]), utc(window[1])
    return make_finding(
        METADATA,
        Table(account, region, table),
        discriminator=None,
        severity=Severity.HIGH if pct >= cfg.threshold_pct else Severity.MEDIUM,
        title=f"Writes to {table} average {wcu_per_write:,.0f} WCU (items of about {_kb(avg_bytes)})",
        summary=(
            f"{writes:,} writes to {table} consumed {consumed_wcu_sum:,.0f} WCU between {start:%Y-%m-%d %H:%M} and "
            f"{end:%Y-%m-%d %H:%M} UTC: {wcu_per_write:,.1f} WCU per write, so the items written average up to "
            f"{_kb(avg_bytes)} ({pct:.0f}% of the 400 KB limit). The table has no stream watched, so the items "
            "themselves are not known; opt it in to the stream item-size watcher to find them."
        ),
        recommendation=recommendation(table, None, growing=False),
        evidence={
            "key": None,
            "size_bytes": avg_bytes,
            "limit_bytes": ITEM_SIZE_LIMIT,
            "method": "consumed_wcu_per_write",
            "average_bytes_estimate": avg_bytes,
            "wcu_per_write": round(wcu_per_write, 2),
            "consumed_wcu": consumed_wcu_sum,
            "writes": writes,
            "writes_source": writes_source,
            "upper_bound": True,
            "source": "cloudwatch",
        },
        first=start,
        last=end,
    )


def insufficient_view_type(account: str | None, region: str | None, table: str, view_type: str, at: float) -> Finding:
    """``info``: the table's stream cannot show item sizes (no ``NewImage``)."""
    return make_finding(
        METADATA,
        Table(account, region, table),
        discriminator={"stream_view_type": True},
        severity=Severity.INFO,
        title=f"Item sizes of {table} cannot be watched: stream view type {view_type}",
        summary=(
            f"{table} is opted in to the stream item-size watcher, but its stream's view type is {view_type}, "
            "whose records carry no NewImage, so the size of the items written is unknown."
        ),
        recommendation=(
            f"Set the stream view type of {table} to NEW_IMAGE (sizes only) or NEW_AND_OLD_IMAGES (sizes and which "
            "attribute grows): a stream's view type cannot be changed, so disable the stream and enable it again "
            "with the new type (aws dynamodb update-table --stream-specification ...), then update the event source "
            "mapping to the new stream ARN."
        ),
        evidence={
            "key": None,
            "size_bytes": None,
            "limit_bytes": ITEM_SIZE_LIMIT,
            "stream_view_type": view_type,
            "method": "stream_view_type_insufficient",
            "source": "dynamodb_streams",
        },
        first=at,
        last=at,
    )

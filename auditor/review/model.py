"""A review proposal (docs/model-review.md): the change, the access patterns and principals that motivate it, what
it assumed, and its effect priced by the capacity model (monthly cost and partition headroom, before and after).

:class:`ReviewConfig` holds every threshold a proposal needs (a proposal comes only from traffic that repeats);
:class:`Pricing` prices request units and storage from the bundled on-demand price table of the table's region.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import Field

from auditor.billing.pricing import bundled_prices
from auditor.models.base import FrozenModel
from auditor.whatif.limits import PartitionCapacity, WhatIfConfig

#: Seconds in a month of 730 hours (the month AWS prices are quoted in).
SECONDS_PER_MONTH: Final = 730 * 3600
KINDS: Final = (
    "add_gsi",
    "query_instead_of_gets",
    "shard_partition_key",
    "composite_sort_key",
    "split_item",
    "cache_reads",
    "drop_index",
)


class ScanRule(FrozenModel):
    """add_gsi: logical scans of one principal in the input, and the share of its pages that filter on the
    attribute."""

    min_scans: int = Field(default=30, ge=1)
    min_filter_share: float = Field(default=0.8, gt=0, le=1)


class BurstRule(FrozenModel):
    """query_instead_of_gets: GetItems of distinct items of one partition within ``window_seconds`` that make a burst,
    bursts in the input, distinct partitions among them, and the share of the template's GetItems inside bursts."""

    min_items: int = Field(default=5, ge=2)
    window_seconds: int = Field(default=2, ge=1, le=60)
    min_bursts: int = Field(default=50, ge=1)
    min_partitions: int = Field(default=10, ge=1)
    min_share: float = Field(default=0.5, gt=0, le=1)


class FilterRule(FrozenModel):
    """composite_sort_key: Queries of one template, the share of them that filter on the same attribute, and what a
    filtered Query is assumed to read and keep (CloudTrail logs neither ScannedCount nor Count)."""

    min_queries: int = Field(default=100, ge=1)
    min_share: float = Field(default=0.9, gt=0, le=1)
    items_per_query: int = Field(default=10, ge=1)
    keeps: float = Field(default=0.2, gt=0, le=1)


class HotKeyRule(FrozenModel):
    """shard_partition_key: the share of one partition the shards may use at the observed peak (0.5: 2x headroom);
    cache_reads: the share of a hot key's units that are reads, its peak reads per second, the hit ratio assumed."""

    shard_utilisation: float = Field(default=0.5, gt=0, le=1)
    cache_read_share: float = Field(default=0.8, gt=0, le=1)
    cache_peak_reads: float = Field(default=100.0, gt=0)
    cache_hit_ratio: float = Field(default=0.9, gt=0, lt=1)
    #: Throttled calls that make a hot key with headroom left on paper a sharding case (it throttled at its peak).
    min_throttled: int = Field(default=10, ge=1)


class ItemRule(FrozenModel):
    """split_item: the item size (bytes) from which an item is proposed for splitting, and the writes refused for size
    that do; the typical item size assumed when neither the config nor the audit tells it."""

    split_min_bytes: int = Field(default=100 * 1024, ge=1)
    split_min_oversize_writes: int = Field(default=3, ge=1)
    default_bytes: int = Field(default=1024, ge=1)


class ReviewConfig(FrozenModel):
    """The review's thresholds, one group per rule (docs/model-review.md says why each is what it is). DAX: two
    dax.t3.small nodes at the us-east-1 on-demand node price, USD per node-hour (aws.amazon.com/dynamodb/pricing)."""

    scan: ScanRule = ScanRule()
    burst: BurstRule = BurstRule()
    filter: FilterRule = FilterRule()
    hot_key: HotKeyRule = HotKeyRule()
    item: ItemRule = ItemRule()
    dax_node_hour: float = Field(default=0.04, ge=0)
    dax_nodes: int = Field(default=2, ge=1)


@dataclass(frozen=True, slots=True)
class Pricing:
    """On-demand request and storage prices of one region (bundled price table, labelled fallback)."""

    read_unit: float
    write_unit: float
    storage_gb_month: float
    source: str

    @classmethod
    def for_region(cls, region: str | None) -> Pricing:
        prices = bundled_prices(region or "us-east-1")
        std = prices.standard
        return cls(std.read_request_unit, std.write_request_unit, std.storage_gb_month, prices.source)

    def monthly(self, read_units_per_second: float, write_units_per_second: float, storage_bytes: float = 0.0) -> float:
        """Monthly on-demand cost of these average rates and this storage (USD)."""
        requests = (
            read_units_per_second * self.read_unit + write_units_per_second * self.write_unit
        ) * SECONDS_PER_MONTH
        return round(requests + storage_bytes / 2**30 * self.storage_gb_month, 2)


def read_units(size_bytes: float, eventual: bool = False) -> float:
    """Read units of one item read (4 KB units, half when eventually consistent)."""
    units = float(max(1, math.ceil(size_bytes / 4096)))
    return units / 2 if eventual else units


def write_units(size_bytes: float) -> float:
    """Write units of one item written (1 KB units)."""
    return float(max(1, math.ceil(size_bytes / 1024)))


@dataclass(slots=True)
class Effect:
    """One side (before or after) of a proposal: monthly cost and its parts, and partition headroom at the peak."""

    #: USD a month: reads, writes of the table, writes of its indexes, storage, and other (DAX nodes); the partition
    #: headroom at the observed peak (None: the change moves no load between partitions)
    reads: float = 0.0
    writes: float = 0.0
    headroom: float | None = field(default=None)
    index_writes: float = 0.0
    storage: float = 0.0
    extra: float = 0.0

    @property
    def monthly(self) -> float:
        return round(self.reads + self.writes + self.index_writes + self.storage + self.extra, 2)

    def to_dict(self) -> dict[str, Any]:
        return {
            "monthly_cost": self.monthly,
            "reads": round(self.reads, 2),
            "writes": round(self.writes, 2),
            "index_writes": round(self.index_writes, 2),
            "storage": round(self.storage, 2),
            "other": round(self.extra, 2),
            "headroom": round(self.headroom, 2) if self.headroom is not None else None,
        }


@dataclass(slots=True)
class Proposal:
    """One proposed change of the data model."""

    kind: str
    #: (account, region, table)
    where: tuple[str | None, str | None, str]
    subject: str
    title: str
    change: dict[str, Any]
    patterns: list[str]
    principals: list[str]
    confidence: str
    assumptions: list[str]
    before: Effect
    after: Effect
    index: str | None = None
    findings: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    #: What the replay needs: peak read and write units per second of the resource, and the divisor the change
    #: applies to each (shards, cache misses).
    peak: tuple[float, float] | None = None
    peak_after: tuple[float, float] | None = None
    #: The average read and write units per second of the same resource (the replay's 1x).
    average: tuple[float, float] | None = None
    #: The table's partition key the change spreads (shards) or relieves (cache), for the what-if replay.
    key: dict[str, Any] | None = None
    #: What one partition delivers to the key (the documented limits, or less where it throttled below them).
    capacity: PartitionCapacity | None = None
    #: The key throttled at today's traffic: every load of the replay is measured from today's traffic.
    throttles_now: bool = False

    @property
    def account(self) -> str | None:
        return self.where[0]

    @property
    def region(self) -> str | None:
        return self.where[1]

    @property
    def table(self) -> str:
        return self.where[2]

    @property
    def id(self) -> str:
        """Stable: the same kind, table, index and subject give the same id in every run."""
        raw = "|".join([self.kind, self.account or "", self.region or "", self.table, self.index or "", self.subject])
        return "rv-" + hashlib.sha256(raw.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        """The contract's proposal (docs/contract.md ``model-review``)."""
        named = ("kind", "account", "region", "table", "index", "title", "change")
        return {
            "id": self.id,
            **{name: getattr(self, name) for name in named},
            "access_patterns": self.patterns,
            "principals": self.principals,
            "confidence": self.confidence,
            "assumptions": self.assumptions,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "monthly_saving": round(self.before.monthly - self.after.monthly, 2),
            "findings": self.findings,
            "evidence": self.evidence,
        }


def partition_capacity(limits: WhatIfConfig | None = None) -> PartitionCapacity:
    """One partition's documented (or configured) capacity."""
    limits = limits or WhatIfConfig()
    return PartitionCapacity(limits.partition_read_units, limits.partition_write_units)


def partition_headroom(reads: float, writes: float, limits: WhatIfConfig | None = None) -> float | None:
    """The what-if's partition headroom of this read and write peak (units per second): the nearer of one partition's
    read and write limits, as ``hot_key`` and ``what-if`` measure a key."""
    return partition_capacity(limits).headroom(reads, writes)

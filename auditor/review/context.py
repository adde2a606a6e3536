"""What the review reads of one input, gathered once: the engine's table spans, findings (the trail's and an audit's,
as JSON dicts), the access-pattern catalogue, the review signals, and each table's item size and storage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditor.kernel.aggregates.window import TableWindow
from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import fact_views
from auditor.review.model import Pricing, ReviewConfig
from auditor.review.signals import ReviewSignals, TableKey


@dataclass(slots=True)
class ReviewInput:
    """Everything a proposal rule reads (pure data)."""

    spans: Sequence[TableWindow]
    findings: Sequence[Mapping[str, Any]]
    patterns: Sequence[AccessPattern]
    signals: ReviewSignals
    #: The audit's table blocks (``ddb-audit audit`` JSON ``tables``), by table name.
    tables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: ``item_size_bytes`` of the analysis config, by table.
    item_sizes: Mapping[str, int] = field(default_factory=dict)
    config: ReviewConfig = field(default_factory=ReviewConfig)

    def span(self, tk: TableKey) -> TableWindow | None:
        return next((s for s in self.spans if (s.account, s.region, s.table) == tk), None)

    def item_size(self, table: str) -> tuple[int, str]:
        """(typical item size in bytes, where it comes from: config, audit, or the default assumption)."""
        if (size := self.item_sizes.get(table)) is not None:
            return size, "config"
        block = self.tables.get(table) or {}
        size_bytes, count = block.get("size_bytes"), block.get("item_count")
        if isinstance(size_bytes, int) and isinstance(count, int) and size_bytes > 0 and count > 0:
            return max(1, round(size_bytes / count)), "audit"
        return self.config.item.default_bytes, "default"

    def storage_bytes(self, table: str) -> int | None:
        size = (self.tables.get(table) or {}).get("size_bytes")
        return size if isinstance(size, int) else None

    def pricing(self, region: str | None) -> Pricing:
        return Pricing.for_region(region)

    def table_patterns(self, table: str, operation: str | None = None) -> list[AccessPattern]:
        return [p for p in self.patterns if p.table == table and (operation is None or p.operation == operation)]

    def of_kind(self, *kinds: str) -> list[Mapping[str, Any]]:
        """The findings of ``kinds``, a story's facts among them (a hot key told by a low-cardinality key's story,
        an item's size told by its rejected writes' story: :func:`auditor.models.finding.fact_views`)."""
        return [v for f in self.findings for v in fact_views(f) if v.get("kind") in kinds]


def size_assumption(size: int, source: str) -> list[str]:
    """The assumption a proposal states when the item size is the default."""
    if source != "default":
        return []
    return [f"item size {size} bytes (the default: set item_size_bytes in --config or pass --audit)"]


def rate(n: float, seconds: float) -> float:
    """Per second over the observed seconds."""
    return n / seconds if seconds > 0 else 0.0

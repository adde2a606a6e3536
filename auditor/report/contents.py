"""What a weekly report is made of: each finding with its status for the week, the summary and top actions, and the
rows of its sections (tables, scanners, hot keys, items, billing, capacity, what-if, week-over-week deltas).

Plain frozen models, no computation beyond a row's own derived values: :mod:`auditor.report.sections` fills them,
:class:`auditor.report.model.WeeklyReport` holds them, the renderers (:mod:`auditor.report.report_pages`,
:mod:`auditor.report.charts`) show them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from auditor.models.base import FrozenModel
from auditor.models.finding import Finding, FindingKind, Severity

Status = Literal["new", "worsened", "ongoing", "resolved"]
STATUSES: tuple[Status, ...] = ("new", "worsened", "ongoing", "resolved")
OPEN_STATUSES: frozenset[str] = frozenset({"new", "worsened", "ongoing"})
ITEM_LIMIT_BYTES = 409_600


class ReportFinding(FrozenModel):
    """A finding as the report shows it: its lifecycle this week and the money at stake."""

    finding: Finding
    status: Status
    monthly_savings: float = 0.0
    previous_severity: Severity | None = None
    resolved_at: datetime | None = None
    docs_url: str
    #: Why the finding's advice is held back (no saving counted), e.g. a throttled table's capacity advice.
    held: str | None = None

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    def sort_key(self) -> tuple[bool, int, float, str, str, str]:
        """Open before resolved; most severe first, then the most money, then table, kind and id."""
        f = self.finding
        return (not self.is_open, -f.severity.rank, -self.monthly_savings, f.table, f.kind.value, f.id)


class Action(FrozenModel):
    """One of the summary's most important actions: the findings of one kind on one table."""

    rank: int
    severity: Severity
    table: str
    kind: FindingKind
    headline: str
    recommendation: str
    monthly_savings: float
    finding_ids: list[str]
    status: Status


class TableSummary(FrozenModel):
    """One audited table: its open findings, money at stake and traffic shape."""

    table: str
    account: str | None
    region: str | None
    open_findings: int
    by_severity: dict[Severity, int]
    worst: Severity | None
    kinds: list[FindingKind]
    monthly_savings: float
    requests: int
    inefficient_requests: int

    @property
    def inefficient_share(self) -> float:
        return self.inefficient_requests / self.requests if self.requests else 0.0


#: The unit of a scanner row's count: CloudTrail's logical scans (its pages grouped into scans, or statements).
LOGICAL_SCANS = "logical scans"
#: The unit of a CloudWatch scan count: Scan requests, each one page (CloudWatch does not group them into scans).
SCAN_PAGES = "Scan pages (CloudWatch)"


class ScannerRow(FrozenModel):
    principal: str | None
    principal_name: str
    table: str
    operation: str
    count: int
    per_hour: float | None
    severity: Severity
    status: Status
    #: What ``count`` counts (:data:`LOGICAL_SCANS` or :data:`SCAN_PAGES`): rows of different units are never added
    #: or ranked together.
    unit: str = LOGICAL_SCANS


class HotKeyRow(FrozenModel):
    table: str
    index: str | None
    key: str
    #: The key's share of the table's key-identified requests over the report's period (``totals``), else the
    #: share in the window it was found in (a finding stored before totals carried the denominator).
    share: float
    requests: int
    #: The table's key-identified requests over the same period as ``share`` (None: only the window's share known).
    share_base: int | None = None
    #: Half-width of the 95 % interval of ``requests`` when it is estimated from sampled capture (None: exact).
    margin: int | None = None
    headroom_factor: float | None
    severity: Severity
    status: Status


class WhatIfRow(FrozenModel):
    """A key or table whose open finding measured its headroom (the traffic multiple at which it throttles)."""

    table: str
    index: str | None
    key: str | None
    kind: FindingKind
    #: ``partition`` for a key's partition limit (the only limit findings measure so far).
    limit: str
    headroom: float
    source: str | None
    severity: Severity

    def throttles_at(self, growth: float) -> bool:
        return self.headroom <= growth


#: Traffic multiples the report's what-if section answers for.
WHAT_IF_GROWTHS = (2.0, 3.0)


class ItemRow(FrozenModel):
    table: str
    kind: FindingKind
    key: str | None
    size_bytes: int | None
    bytes_per_day: float | None
    days_to_limit: float | None
    rejected_writes: int | None
    severity: Severity
    status: Status

    @property
    def percent_of_limit(self) -> float | None:
        return None if self.size_bytes is None else 100.0 * self.size_bytes / ITEM_LIMIT_BYTES


class BillingRow(FrozenModel):
    table: str
    index: str | None
    kind: FindingKind
    current: str
    recommended: str
    monthly_cost_current: float | None
    monthly_cost_recommended: float | None
    monthly_savings: float
    severity: Severity
    status: Status
    #: Days of data and confidence (0..1) the recommendation rests on (None: not stated by the finding).
    days_analyzed: float | None = None
    confidence: float | None = None
    #: Too little data (under 7 days or no weekend): shown, never alerted, not counted in savings.
    preliminary: bool = False
    #: The recommendation's own savings estimate (``monthly_savings`` is 0 for a preliminary one).
    estimated_savings: float | None = None
    #: What the row says instead of a change, with no saving: ``collecting data: N of 7 days`` (too little history)
    #: or that lower capacity is not advised to a table that throttled this week.
    instead: str | None = None

    @property
    def change(self) -> str:
        """``PAY_PER_REQUEST → PROVISIONED``; a recommendation that keeps the mode or class says what it changes; a
        table still collecting history says so."""
        if self.instead:
            return self.instead
        if self.current != self.recommended:
            return f"{self.current} → {self.recommended}"
        if self.kind == FindingKind.BILLING_MODE:
            return f"keep {self.current}, re-size its auto scaling"
        return f"keep {self.current}"


class PatternTable(FrozenModel):
    """Efficient vs inefficient requests of one table (from the access-pattern catalogue)."""

    table: str
    efficient_requests: int
    inefficient_requests: int

    @property
    def requests(self) -> int:
        return self.efficient_requests + self.inefficient_requests


class CapacityPanel(FrozenModel):
    """Consumed vs provisioned capacity of one table and dimension, resampled for a chart (units per second)."""

    table: str
    index: str | None
    dimension: Literal["read", "write"]
    bucket_seconds: int
    times: list[datetime]
    #: None: no datapoint in the bucket (a gap in the chart, never a zero).
    consumed: list[float | None]
    provisioned: list[float | None]

    @property
    def peak_consumed(self) -> float:
        return max((c for c in self.consumed if c is not None), default=0.0)

    @property
    def peak_utilisation(self) -> float | None:
        """The highest consumed/provisioned ratio over the buckets (None for on-demand)."""
        ratios = [c / p for c, p in zip(self.consumed, self.provisioned, strict=True) if p and c is not None]
        return max(ratios) if ratios else None


class Delta(FrozenModel):
    """One week-over-week number. ``lower_is_better`` tells the renderer which direction is good news."""

    metric: str
    current: float
    previous: float | None
    unit: Literal["count", "usd"] = "count"
    lower_is_better: bool = True

    @property
    def change(self) -> float | None:
        return None if self.previous is None else self.current - self.previous

    @property
    def trend(self) -> Literal["better", "worse", "same", "unknown"]:
        c = self.change
        if c is None:
            return "unknown"
        if abs(c) < 1e-9:
            return "same"
        return "better" if (c < 0) == self.lower_is_better else "worse"


class Summary(FrozenModel):
    """The numbers at the top of the report."""

    open_findings: int
    by_severity: dict[Severity, int]
    new: int
    worsened: int
    ongoing: int
    resolved: int
    tables_with_findings: int
    tables_seen: int
    monthly_savings: float
    auditor_cost_usd: float | None
    #: The savings headline by source (billing mode, table class, idle tables, unused indexes), largest first.
    savings_breakdown: dict[str, float] = {}

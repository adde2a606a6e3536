"""The weekly report model: pure functions from findings (and optional series) to a ``WeeklyReport``.

No I/O, no clock, no environment: the report week and the generation time come in as arguments.

Week boundaries are ISO weeks in UTC: a week starts on Monday 00:00:00 UTC and ends (exclusive) on the next
Monday 00:00:00 UTC. ``2026-W49`` is 2026-11-30T00:00Z .. 2026-12-07T00:00Z.

Which findings belong to a week
    A finding is in the week when it was active during it (``first_seen < week.end`` and
    ``last_seen >= week.start``), or when its lifecycle status is ``resolved`` with ``resolved_at`` inside the
    week. Findings of other weeks are left out and counted in ``WeeklyReport.findings_outside_week``.

Lifecycle in the report (one status per finding, for the week)
    - ``resolved``: the stored lifecycle status is ``resolved``; or, when last week's findings are given, a
      finding active last week that was not seen this week.
    - ``new``: first seen this week (``first_seen >= week.start``).
    - ``worsened``: seen before this week and more severe than last week (when last week's findings are
      given), or, without last week's data, the stored status says ``worsened`` or the severity is above the
      last published one.
    - ``ongoing``: everything else (seen before and still seen this week).
    The store's own status (``new`` until the next evaluation, then ``ongoing``) describes one evaluation, not a
    week, which is why only ``resolved`` (and ``worsened`` as a fallback) is taken from it as is.

Money
    A finding's ``monthly_savings`` is its evidence's ``monthly_savings`` (billing_mode, table_class), else 0.
    Findings sort by severity (most severe first), then by savings (largest first).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from auditor.cost.cost_model import LedgerSummary
from auditor.detectors.findings import scan_volume, throttling_story
from auditor.detectors.registry import primary
from auditor.exceptions import InputError
from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import KIND_LABELS, Finding, FindingKind, Severity, measure, utc

Status = Literal["new", "worsened", "ongoing", "resolved"]
STATUSES: tuple[Status, ...] = ("new", "worsened", "ongoing", "resolved")
OPEN_STATUSES: frozenset[str] = frozenset({"new", "worsened", "ongoing"})
ITEM_LIMIT_BYTES = 409_600

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def docs_url(kind: FindingKind) -> str:
    """The AWS documentation page for a finding kind: its detector's, from the catalogue."""
    return str(primary(kind).metadata.docs_url)


# --------------------------------------------------------------------------------------------------------------
# Weeks
# --------------------------------------------------------------------------------------------------------------


class IsoWeek(BaseModel):
    """An ISO-8601 week in UTC (Monday 00:00 UTC to the next Monday 00:00 UTC, end exclusive)."""

    model_config = _FROZEN

    year: int = Field(ge=1, le=9999)
    week: int = Field(ge=1, le=53)

    @model_validator(mode="after")
    def _exists(self) -> IsoWeek:
        try:
            date.fromisocalendar(self.year, self.week, 1)
        except ValueError as exc:
            raise ValueError(f"{self.year} has no ISO week {self.week}") from exc
        return self

    @classmethod
    def of(cls, moment: datetime) -> IsoWeek:
        """The ISO week that contains ``moment`` (naive times are taken as UTC)."""
        iso = utc(moment).isocalendar()
        return cls(year=iso.year, week=iso.week)

    @classmethod
    def parse(cls, text: str) -> IsoWeek:
        """Parse ``YYYY-Www`` (``2026-W49``); raises ``InputError`` on anything else."""
        head, sep, tail = text.strip().upper().partition("-W")
        if not sep or not head.isdigit() or not tail.isdigit():
            raise InputError(f"week {text!r} is not an ISO week like 2026-W49")
        try:
            return cls(year=int(head), week=int(tail))
        except ValidationError as exc:
            raise InputError(f"week {text!r}: {exc.errors()[0]['msg']}") from exc

    @property
    def start(self) -> datetime:
        """Monday 00:00:00 UTC."""
        d = date.fromisocalendar(self.year, self.week, 1)
        return datetime(d.year, d.month, d.day, tzinfo=UTC)

    @property
    def end(self) -> datetime:
        """The next Monday 00:00:00 UTC (exclusive)."""
        return self.start + timedelta(days=7)

    @property
    def label(self) -> str:
        return f"{self.year}-W{self.week:02d}"

    def previous(self) -> IsoWeek:
        return IsoWeek.of(self.start - timedelta(days=1))

    def contains(self, moment: datetime) -> bool:
        return self.start <= utc(moment) < self.end

    def __str__(self) -> str:
        return self.label


# --------------------------------------------------------------------------------------------------------------
# Optional inputs
# --------------------------------------------------------------------------------------------------------------


class CapacitySeries(BaseModel):
    """One table's (or index's) CloudWatch capacity history: consumed ``Sum`` per period, provisioned units.

    The same shape as one entry of the ``ddb-audit billing`` input (docs/contract.md), with the table and time added.
    """

    model_config = _FROZEN

    table: str
    index: str | None = None
    start: datetime
    period_seconds: int = Field(default=60, ge=1)
    #: ``null`` is a missing datapoint (CloudWatch returned nothing for that period), as in the billing input.
    consumed_read: list[float | None] = Field(default_factory=list)
    consumed_write: list[float | None] = Field(default_factory=list)
    provisioned_read: list[float | None] | None = None
    provisioned_write: list[float | None] | None = None

    @field_validator("start")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return utc(value)

    @model_validator(mode="after")
    def _lengths(self) -> CapacitySeries:
        for name in ("provisioned_read", "provisioned_write"):
            values = getattr(self, name)
            consumed = getattr(self, name.replace("provisioned", "consumed"))
            if values is not None and len(values) != len(consumed):
                raise ValueError(f"{name} has {len(values)} values but consumed has {len(consumed)}")
        return self


#: Who counted a throttle row, as the report says it.
THROTTLE_SOURCES: dict[str | None, str] = {
    "cloudwatch": "CloudWatch (throttle events)",
    "cloudtrail": "CloudTrail (throttled calls)",
}


class ThrottleCount(BaseModel):
    """Throttle events of one table (or index) and cause, e.g. from the per-cause CloudWatch metrics."""

    model_config = _FROZEN

    table: str
    index: str | None = None
    cause: str
    read_events: int = Field(default=0, ge=0)
    write_events: int = Field(default=0, ge=0)
    #: Whose count this is (``cloudwatch``: throttle events; ``cloudtrail``: throttled calls); None when not known.
    source: str | None = None

    @property
    def total(self) -> int:
        return self.read_events + self.write_events


class AuditorUsage(BaseModel):
    """What the auditor itself consumed in the week (counts come from its own metrics or the input stats)."""

    model_config = _FROZEN

    cloudtrail_data_events: int = Field(default=0, ge=0)
    cloudwatch_metrics_requested: int = Field(default=0, ge=0)
    lambda_gb_seconds: float = Field(default=0.0, ge=0)
    lambda_requests: int = Field(default=0, ge=0)


class CostRates(BaseModel):
    """Public us-east-1 prices (USD) used for the auditor's own cost estimate."""

    model_config = _FROZEN

    cloudtrail_per_100k_data_events: float = 0.10
    cloudwatch_per_1k_metrics: float = 0.01
    #: Lambda on arm64 (Graviton), the template's architecture; x86_64 is 0.0000166667.
    lambda_per_gb_second: float = 0.0000133334
    lambda_per_million_requests: float = 0.20


class CostLine(BaseModel):
    model_config = _FROZEN

    item: str
    quantity: float
    unit: str
    rate: str
    usd: float


class AuditorCost(BaseModel):
    """The auditor's estimated cost, line by line (USD)."""

    model_config = _FROZEN

    lines: list[CostLine]
    total_usd: float


def _usd(value: float) -> str:
    """A unit price for people: ``$0.10``, ``$13.33`` (never ``$1.33334e-05``: tiny prices are stated per a larger
    quantity by the caller)."""
    return f"${value:,.2f}" if value >= 0.01 else f"${value:,.4f}"


def estimate_auditor_cost(usage: AuditorUsage, rates: CostRates | None = None) -> AuditorCost:
    """Price the auditor's own usage: CloudTrail data events, CloudWatch GetMetricData metrics, Lambda."""
    r = rates or CostRates()
    lines = [
        CostLine(
            item="CloudTrail data events delivered",
            quantity=usage.cloudtrail_data_events,
            unit="events",
            rate=f"{_usd(r.cloudtrail_per_100k_data_events)} per 100,000 events",
            usd=usage.cloudtrail_data_events / 100_000 * r.cloudtrail_per_100k_data_events,
        ),
        CostLine(
            item="CloudWatch GetMetricData",
            quantity=usage.cloudwatch_metrics_requested,
            unit="metrics requested",
            rate=f"{_usd(r.cloudwatch_per_1k_metrics)} per 1,000 metrics",
            usd=usage.cloudwatch_metrics_requested / 1_000 * r.cloudwatch_per_1k_metrics,
        ),
        CostLine(
            item="Lambda compute",
            quantity=usage.lambda_gb_seconds,
            unit="GB-seconds",
            rate=f"{_usd(r.lambda_per_gb_second * 1_000_000)} per million GB-seconds",
            usd=usage.lambda_gb_seconds * r.lambda_per_gb_second,
        ),
        CostLine(
            item="Lambda requests",
            quantity=usage.lambda_requests,
            unit="invocations",
            rate=f"{_usd(r.lambda_per_million_requests)} per million invocations",
            usd=usage.lambda_requests / 1_000_000 * r.lambda_per_million_requests,
        ),
    ]
    return AuditorCost(lines=lines, total_usd=sum(line.usd for line in lines))


# --------------------------------------------------------------------------------------------------------------
# Report contents
# --------------------------------------------------------------------------------------------------------------


class ReportFinding(BaseModel):
    """A finding as the report shows it: its lifecycle this week and the money at stake."""

    model_config = _FROZEN

    finding: Finding
    status: Status
    monthly_savings: float = 0.0
    previous_severity: Severity | None = None
    resolved_at: datetime | None = None
    docs_url: str

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    def sort_key(self) -> tuple[bool, int, float, str, str, str]:
        """Open before resolved; most severe first, then the most money, then table, kind and id."""
        f = self.finding
        return (not self.is_open, -f.severity.rank, -self.monthly_savings, f.table, f.kind.value, f.id)


class Action(BaseModel):
    """One of the summary's most important actions: the findings of one kind on one table."""

    model_config = _FROZEN

    rank: int
    severity: Severity
    table: str
    kind: FindingKind
    headline: str
    recommendation: str
    monthly_savings: float
    finding_ids: list[str]
    status: Status


class TableSummary(BaseModel):
    """One audited table: its open findings, money at stake and traffic shape."""

    model_config = _FROZEN

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


class ScannerRow(BaseModel):
    model_config = _FROZEN

    principal: str | None
    principal_name: str
    table: str
    operation: str
    count: int
    per_hour: float | None
    severity: Severity
    status: Status


class HotKeyRow(BaseModel):
    model_config = _FROZEN

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


class WhatIfRow(BaseModel):
    """A key or table whose open finding measured its headroom (the traffic multiple at which it throttles)."""

    model_config = _FROZEN

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


class ItemRow(BaseModel):
    model_config = _FROZEN

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


class BillingRow(BaseModel):
    model_config = _FROZEN

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

    @property
    def change(self) -> str:
        """``PAY_PER_REQUEST → PROVISIONED``; a recommendation that keeps the mode or class says what it changes."""
        if self.current != self.recommended:
            return f"{self.current} → {self.recommended}"
        if self.kind == FindingKind.BILLING_MODE:
            return f"keep {self.current}, re-size its auto scaling"
        return f"keep {self.current}"


class PatternTable(BaseModel):
    """Efficient vs inefficient requests of one table (from the access-pattern catalogue)."""

    model_config = _FROZEN

    table: str
    efficient_requests: int
    inefficient_requests: int

    @property
    def requests(self) -> int:
        return self.efficient_requests + self.inefficient_requests


class CapacityPanel(BaseModel):
    """Consumed vs provisioned capacity of one table and dimension, resampled for a chart (units per second)."""

    model_config = _FROZEN

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


class Delta(BaseModel):
    """One week-over-week number. ``lower_is_better`` tells the renderer which direction is good news."""

    model_config = _FROZEN

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


class Summary(BaseModel):
    """The numbers at the top of the report."""

    model_config = _FROZEN

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


class WeeklyReport(BaseModel):
    """Everything the HTML and Markdown renderers show, computed once."""

    model_config = _FROZEN

    title: str
    week: IsoWeek
    generated_at: datetime
    summary: Summary
    actions: list[Action]
    findings: list[ReportFinding]
    tables: list[TableSummary]
    scanners: list[ScannerRow]
    hot_keys: list[HotKeyRow]
    items: list[ItemRow]
    billing: list[BillingRow]
    throttles: list[ThrottleCount]
    capacity: list[CapacityPanel]
    access_patterns: list[AccessPattern]
    pattern_tables: list[PatternTable]
    deltas: list[Delta]
    previous_week_available: bool
    auditor_cost: AuditorCost | None
    input_stats: dict[str, int]
    #: Accounts/Regions the input could not audit (``coverage_gaps`` of ``ddb-audit audit``), one line each.
    coverage_gaps: list[str] = Field(default_factory=list)
    findings_outside_week: int
    #: Findings of the week stored by a version without period totals: their numbers are their latest window's
    #: (from the evidence); their totals start from their next sighting.
    stored_without_totals: int = 0
    #: Nearest limits first (from the open findings that measured a headroom); see :func:`_what_if`.
    what_if: list[WhatIfRow] = Field(default_factory=list)
    #: The service's cost ledger for the week: the auditor's cost next to the audited DynamoDB cost, per table and in
    #: total (:func:`auditor.cost.ledger.week_ledger`); None when no ledger was kept.
    ledger: LedgerSummary | None = None
    #: Findings whose counts are estimates from sampled capture (``totals.margin`` set): their numbers in the tables
    #: above are estimates too, stated with their margin in each finding's text.
    sampled_findings: int = 0

    def by_status(self, status: Status) -> list[ReportFinding]:
        return [f for f in self.findings if f.status == status]

    @property
    def open_findings(self) -> list[ReportFinding]:
        return [f for f in self.findings if f.is_open]


# --------------------------------------------------------------------------------------------------------------
# Parsing findings (objects, SPEC JSON dicts, or lifecycle states)
# --------------------------------------------------------------------------------------------------------------

_LIFECYCLE_KEYS = ("status", "resolved_at", "published_severity", "previous_severity")
_STATUS_ALIASES: dict[str, Status | None] = {"open": None, "active": None, "reopened": "new", "re-opened": "new"}


class FindingInput(BaseModel):
    """One parsed input finding with whatever lifecycle information came with it."""

    model_config = _FROZEN

    finding: Finding
    status: Status | None = None
    resolved_at: datetime | None = None
    published_severity: Severity | None = None


def _status(value: Any, where: str) -> Status | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in _STATUS_ALIASES:
        return _STATUS_ALIASES[text]
    for s in STATUSES:
        if s == text:
            return s
    raise InputError(f"{where}: unknown lifecycle status {value!r} (expected one of {', '.join(STATUSES)})")


def _validation_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def parse_finding(item: Any, where: str = "finding") -> FindingInput:
    """Accept a ``Finding``, a SPEC finding dict (lifecycle keys allowed), or a lifecycle state.

    A lifecycle state is a dict (or pydantic model) with a ``finding`` member plus ``status``,
    ``resolved_at`` and ``published_severity``. Unknown extra keys are ignored; a missing or invalid field
    raises ``InputError`` naming ``where`` and the field.
    """
    if isinstance(item, BaseModel):
        # Findings are re-validated too: ``model_copy(update=...)`` skips validation.
        item = item.model_dump(mode="json")
    if not isinstance(item, Mapping):
        raise InputError(f"{where}: expected a finding object, got {type(item).__name__}")
    meta: Mapping[str, Any] = item
    body: Any = item
    if "finding" in item and "kind" not in item:
        body = item["finding"]
        if isinstance(body, Finding):
            body = body.model_dump(mode="json")
        if not isinstance(body, Mapping):
            raise InputError(f"{where}.finding: expected a finding object, got {type(body).__name__}")
    fields = {k: v for k, v in body.items() if k in Finding.model_fields}
    try:
        finding = Finding.model_validate(fields)
    except ValidationError as exc:
        raise InputError(f"{where}: {_validation_message(exc)}") from exc
    extra = {k: meta.get(k, body.get(k)) for k in _LIFECYCLE_KEYS}
    try:
        resolved_at = None if extra["resolved_at"] is None else utc(_as_datetime(extra["resolved_at"]))
        published = extra["published_severity"] or extra["previous_severity"]
        return FindingInput(
            finding=finding,
            status=_status(extra["status"], where),
            resolved_at=resolved_at,
            published_severity=None if published is None else Severity(str(published).lower()),
        )
    except (ValueError, TypeError) as exc:
        raise InputError(f"{where}: invalid lifecycle field: {exc}") from exc


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, tz=UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


class FindingsDocument(BaseModel):
    """The JSON output of ``analyze-trail`` / ``billing`` / ``audit`` (or a bare list of findings), parsed."""

    model_config = _FROZEN

    findings: list[FindingInput]
    access_patterns: list[AccessPattern] = Field(default_factory=list)
    stats: dict[str, int] = Field(default_factory=dict)
    coverage_gaps: list[str] = Field(default_factory=list)
    #: The tables an ``audit`` read (its ``tables`` block), findings or not.
    audited_tables: list[str] = Field(default_factory=list)
    #: The capacity series an ``audit`` read (``tables[].capacity_history``), for the capacity charts.
    capacity: list[CapacitySeries] = Field(default_factory=list)


def _audit_tables(document: Mapping[str, Any], source: str) -> tuple[list[str], list[CapacitySeries]]:
    """The audited tables' names and capacity series of an ``audit`` output (nothing for other documents)."""
    tables = document.get("tables")
    if not isinstance(tables, list):
        return [], []
    names: list[str] = []
    capacity: list[CapacitySeries] = []
    for i, t in enumerate(tables):
        if not isinstance(t, Mapping) or not isinstance(t.get("table"), str):
            continue
        names.append(t["table"])
        history = t.get("capacity_history")
        if history is not None:
            capacity += capacity_from_billing_input(history, f"{source}: tables[{i}].capacity_history")
    return names, capacity


def parse_findings_document(document: Any, source: str = "findings") -> FindingsDocument:
    """Parse a findings document; errors name the source and the index (``file.json: findings[3]: ...``)."""
    if isinstance(document, list):
        raw_findings: Any = document
        raw_patterns: Any = []
        raw_stats: Any = {}
    elif isinstance(document, Mapping):
        if "findings" not in document:
            raise InputError(f"{source}: no 'findings' member (expected the JSON output of a ddb-audit command)")
        raw_findings = document["findings"]
        raw_patterns = document.get("access_patterns") or []
        raw_stats = document.get("stats") or {}
    else:
        raise InputError(f"{source}: expected a JSON object with 'findings' or a JSON array of findings")
    if not isinstance(raw_findings, list):
        raise InputError(f"{source}: 'findings' must be a JSON array")
    if not isinstance(raw_patterns, list):
        raise InputError(f"{source}: 'access_patterns' must be a JSON array")
    findings = [parse_finding(item, f"{source}: findings[{i}]") for i, item in enumerate(raw_findings)]
    patterns = []
    for i, p in enumerate(raw_patterns):
        try:
            patterns.append(AccessPattern.model_validate(p))
        except ValidationError as exc:
            raise InputError(f"{source}: access_patterns[{i}]: {_validation_message(exc)}") from exc
    stats = (
        {str(k): int(v) for k, v in raw_stats.items() if isinstance(v, int) and not isinstance(v, bool)}
        if isinstance(raw_stats, Mapping)
        else {}
    )
    gaps = document.get("coverage_gaps") if isinstance(document, Mapping) else None
    coverage = [_coverage_line(g) for g in gaps if isinstance(g, Mapping)] if isinstance(gaps, list) else []
    audited, capacity = _audit_tables(document, source) if isinstance(document, Mapping) else ([], [])
    return FindingsDocument(
        findings=findings,
        access_patterns=patterns,
        stats=stats,
        coverage_gaps=coverage,
        audited_tables=audited,
        capacity=capacity,
    )


def _coverage_line(gap: Mapping[str, Any]) -> str:
    """``444455556666/eu-west-1: role missing (sts:AssumeRole: AccessDenied)`` from a ``coverage_gaps`` entry."""
    where = f"{gap.get('account') or 'own account'}/{gap.get('region') or '-'}"
    reason = str(gap.get("reason") or "error").replace("_", " ")
    return f"{where}: {reason} ({gap.get('call') or '-'}: {gap.get('error_code') or '-'})"


def merge_findings_documents(docs: Sequence[FindingsDocument]) -> FindingsDocument:
    """Several findings documents as one (``report --findings A --findings B``).

    Findings are deduplicated by id: the sighting seen last wins (its totals are that input's; two inputs of the
    same period should not be merged). A throttling story in two inputs (``audit``'s CloudWatch part and
    ``analyze-trail``'s CloudTrail part) becomes one with both parts, each source's totals its own. Access patterns
    are kept from every input and input counters are added.
    """
    if len(docs) == 1:
        return docs[0]
    by_id: dict[str, FindingInput] = {}
    for doc in docs:
        for fi in doc.findings:
            seen = by_id.get(fi.finding.id)
            if seen is not None and throttling_story.is_story(seen.finding) and throttling_story.is_story(fi.finding):
                # one throttling problem told by two outputs (audit: CloudWatch; analyze-trail: CloudTrail)
                older, newer = sorted((seen, fi), key=lambda x: x.finding.last_seen)
                fi = newer.model_copy(update={"finding": throttling_story.combine(older.finding, newer.finding)})
                by_id[fi.finding.id] = fi
            elif seen is None or fi.finding.last_seen >= seen.finding.last_seen:
                by_id[fi.finding.id] = fi
    stats: dict[str, int] = {}
    for doc in docs:
        for k, v in doc.stats.items():
            stats[k] = stats.get(k, 0) + v
    return FindingsDocument(
        findings=list(by_id.values()),
        access_patterns=[p for doc in docs for p in doc.access_patterns],
        stats=stats,
        coverage_gaps=[g for doc in docs for g in doc.coverage_gaps],
        audited_tables=sorted({t for doc in docs for t in doc.audited_tables}),
        capacity=[c for doc in docs for c in doc.capacity],
    )


def capacity_from_billing_input(document: Any, source: str = "capacity") -> list[CapacitySeries]:
    """The capacity series of a ``ddb-audit billing`` input document (docs/contract.md), one per table/index."""
    if not isinstance(document, Mapping) or not isinstance(document.get("series"), list):
        raise InputError(f"{source}: expected a billing input document with 'table', 'start' and 'series'")
    out = []
    for i, s in enumerate(document["series"]):
        if not isinstance(s, Mapping):
            raise InputError(f"{source}: series[{i}]: expected an object")
        try:
            out.append(
                CapacitySeries.model_validate(
                    {
                        "table": document.get("table"),
                        "start": document.get("start"),
                        "period_seconds": document.get("period_seconds", 60),
                        **{k: s.get(k) for k in ("index",)},
                        "consumed_read": s.get("consumed_read") or [],
                        "consumed_write": s.get("consumed_write") or [],
                        "provisioned_read": s.get("provisioned_read"),
                        "provisioned_write": s.get("provisioned_write"),
                    }
                )
            )
        except ValidationError as exc:
            raise InputError(f"{source}: series[{i}]: {_validation_message(exc)}") from exc
    return out


# --------------------------------------------------------------------------------------------------------------
# Helpers shared with the renderers
# --------------------------------------------------------------------------------------------------------------


def format_key(key: Any) -> str:
    """A logged key as ``attr=value, attr=value`` (non-string values as compact JSON)."""
    if key is None:
        return "(unknown key)"
    if isinstance(key, Mapping):
        return ", ".join(f"{k}={v if isinstance(v, str) else _compact(v)}" for k, v in key.items())
    return key if isinstance(key, str) else _compact(key)


def _compact(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


#: The scanner row of a CloudWatch scan count (CloudWatch does not log who scanned).
CLOUDWATCH_SCANNER = "(not logged: CloudWatch's count)"


def principal_name(principal: str | None) -> str:
    """``arn:aws:iam::1:role/x`` -> ``role/x``; anything else unchanged; None -> ``(unknown principal)``."""
    if not principal:
        return "(unknown principal)"
    if principal.startswith("arn:") and principal.count(":") >= 5:
        return principal.split(":", 5)[5] or principal
    return principal


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def _int(value: Any) -> int | None:
    n = _number(value)
    return None if n is None else int(n)


def period_count(finding: Finding) -> int:
    """The finding's measure over the report's period: its totals, else (stored without totals) its evidence."""
    if finding.totals is not None:
        return finding.totals.count
    return measure(finding.kind, finding.evidence)


def period_share(finding: Finding) -> float:
    """A share-stated finding's share over the report's period (totals' count over their denominator), else (stored
    without the denominator) its window's share from the evidence."""
    if finding.totals is not None and (share := finding.totals.share) is not None:
        return share
    return min(1.0, max(0.0, _number(finding.evidence.get("share")) or 0.0))


def period_per_hour(finding: Finding) -> float | None:
    """The busiest window's rate per hour in the period (None: under an hour observed, or no totals)."""
    return finding.totals.peak_per_hour if finding.totals is not None else None


def monthly_savings(finding: Finding) -> float:
    """Dollars per month the fix saves (0 when the finding carries no cost estimate)."""
    if finding.evidence.get("preliminary") is True:  # too little data: never part of a savings figure
        return 0.0
    value = _number(finding.evidence.get("monthly_savings"))
    return max(0.0, value) if value is not None else 0.0


# --------------------------------------------------------------------------------------------------------------
# Building the report
# --------------------------------------------------------------------------------------------------------------


def _active_in(fi: FindingInput, week: IsoWeek) -> bool:
    f = fi.finding
    if fi.status == "resolved" and fi.resolved_at is not None:
        return week.contains(fi.resolved_at) or (f.first_seen < week.end and f.last_seen >= week.start)
    return f.first_seen < week.end and f.last_seen >= week.start


def _merge_duplicates(items: Iterable[FindingInput]) -> dict[str, FindingInput]:
    """One entry per finding id: the latest evidence, the earliest first_seen, the highest severity."""
    out: dict[str, FindingInput] = {}
    for fi in items:
        old = out.get(fi.finding.id)
        if old is None:
            out[fi.finding.id] = fi
            continue
        newer, older = (fi, old) if fi.finding.last_seen >= old.finding.last_seen else (old, fi)
        severity = max(fi.finding.severity, old.finding.severity, key=lambda s: s.rank)
        merged = newer.finding.model_copy(
            update={
                "first_seen": min(fi.finding.first_seen, old.finding.first_seen),
                "severity": severity,
            }
        )
        out[fi.finding.id] = newer.model_copy(
            update={
                "finding": merged,
                "status": newer.status or older.status,
                "resolved_at": newer.resolved_at or older.resolved_at,
                "published_severity": newer.published_severity or older.published_severity,
            }
        )
    return out


def _attach_scan_volume(current: dict[str, FindingInput]) -> dict[str, FindingInput]:
    """CloudWatch's scan volume of a table whose scans CloudTrail findings attribute to principals goes onto those
    findings, not into a scanner row without a principal (:func:`scan_volume.attach_scan_volume`)."""
    attached = {f.id: f for f in scan_volume.attach_scan_volume([fi.finding for fi in current.values()])}
    return {
        fid: fi if attached[fid] is fi.finding else fi.model_copy(update={"finding": attached[fid]})
        for fid, fi in current.items()
        if fid in attached
    }


def _classify(
    fi: FindingInput, week: IsoWeek, previous: Mapping[str, FindingInput] | None
) -> tuple[Status, Severity | None]:
    f = fi.finding
    prev = previous.get(f.id) if previous is not None else None
    prev_sev = prev.finding.severity if prev is not None else fi.published_severity
    if fi.status == "resolved" and (fi.resolved_at is None or fi.resolved_at < week.end):
        return "resolved", prev_sev
    if f.first_seen >= week.start:
        return "new", None
    if previous is not None:
        if prev is not None and f.severity.rank > prev.finding.severity.rank:
            return "worsened", prev.finding.severity
        return "ongoing", prev_sev
    if fi.status == "worsened" or (fi.published_severity is not None and f.severity.rank > fi.published_severity.rank):
        return "worsened", fi.published_severity
    return "ongoing", prev_sev


def _report_findings(
    current: Mapping[str, FindingInput], previous: Mapping[str, FindingInput] | None, week: IsoWeek
) -> list[ReportFinding]:
    out: list[ReportFinding] = []
    docs: dict[FindingKind, str] = {}
    for fi in current.values():
        status, prev_sev = _classify(fi, week, previous)
        kind = fi.finding.kind
        docs.setdefault(kind, docs_url(kind))
        out.append(
            ReportFinding(
                finding=fi.finding,
                status=status,
                monthly_savings=monthly_savings(fi.finding),
                previous_severity=prev_sev,
                resolved_at=fi.resolved_at,
                docs_url=docs[kind],
            )
        )
    if previous is not None:
        for fid, fi in previous.items():
            if fid in current or fi.status == "resolved":
                continue
            kind = fi.finding.kind
            docs.setdefault(kind, docs_url(kind))
            out.append(
                ReportFinding(
                    finding=fi.finding,
                    status="resolved",
                    monthly_savings=monthly_savings(fi.finding),
                    previous_severity=fi.finding.severity,
                    resolved_at=None,
                    docs_url=docs[kind],
                )
            )
    out.sort(key=ReportFinding.sort_key)
    return out


_STATUS_ORDER = {"worsened": 0, "new": 1, "ongoing": 2, "resolved": 3}


def _actions(findings: Sequence[ReportFinding], limit: int = 3) -> list[Action]:
    groups: dict[tuple[str, FindingKind], list[ReportFinding]] = defaultdict(list)
    for rf in findings:
        if rf.is_open:
            groups[(rf.finding.table, rf.finding.kind)].append(rf)

    def group_key(item: tuple[tuple[str, FindingKind], list[ReportFinding]]) -> tuple[int, float, int, str, str]:
        (table, kind), members = item
        worst = max(m.finding.severity.rank for m in members)
        money = sum(m.monthly_savings for m in members)
        fresh = min(_STATUS_ORDER[m.status] for m in members)
        return (-worst, -money, fresh, table, kind.value)

    actions = []
    for rank, ((table, kind), members) in enumerate(sorted(groups.items(), key=group_key)[:limit], 1):
        members = sorted(members, key=ReportFinding.sort_key)
        top = members[0]
        headline = (
            top.finding.title if len(members) == 1 else f"{KIND_LABELS[kind]} on {table}: {len(members)} findings"
        )
        actions.append(
            Action(
                rank=rank,
                severity=top.finding.severity,
                table=table,
                kind=kind,
                headline=headline,
                recommendation=top.finding.recommendation,
                monthly_savings=sum(m.monthly_savings for m in members),
                finding_ids=[m.finding.id for m in members],
                status=min((m.status for m in members), key=lambda s: _STATUS_ORDER[s]),
            )
        )
    return actions


def _pattern_tables(patterns: Sequence[AccessPattern]) -> list[PatternTable]:
    eff: dict[str, int] = defaultdict(int)
    ineff: dict[str, int] = defaultdict(int)
    for p in patterns:
        (eff if p.efficient else ineff)[p.table] += p.requests
    tables = sorted(set(eff) | set(ineff), key=lambda t: (-(eff[t] + ineff[t]), t))
    return [PatternTable(table=t, efficient_requests=eff[t], inefficient_requests=ineff[t]) for t in tables]


def _table_summaries(findings: Sequence[ReportFinding], patterns: Sequence[PatternTable]) -> list[TableSummary]:
    traffic = {p.table: p for p in patterns}
    by_table: dict[str, list[ReportFinding]] = defaultdict(list)
    for rf in findings:
        if rf.is_open:
            by_table[rf.finding.table].append(rf)
    out = []
    for table in set(by_table) | set(traffic):
        members = by_table.get(table, [])
        counts = {s: sum(1 for m in members if m.finding.severity == s) for s in Severity}
        worst = max((m.finding.severity for m in members), key=lambda s: s.rank, default=None)
        kinds = sorted({m.finding.kind for m in members}, key=lambda k: k.value)
        pt = traffic.get(table)
        out.append(
            TableSummary(
                table=table,
                account=members[0].finding.account if members else None,
                region=members[0].finding.region if members else None,
                open_findings=len(members),
                by_severity=counts,
                worst=worst,
                kinds=kinds,
                monthly_savings=sum(m.monthly_savings for m in members),
                requests=pt.requests if pt else 0,
                inefficient_requests=pt.inefficient_requests if pt else 0,
            )
        )
    out.sort(key=lambda t: (-(t.worst.rank + 1 if t.worst else 0), -t.open_findings, -t.monthly_savings, t.table))
    return out


def _scanners(findings: Sequence[ReportFinding]) -> list[ScannerRow]:
    rows = []
    for rf in findings:
        f = rf.finding
        if f.kind != FindingKind.SCAN:
            continue
        principal = f.evidence.get("principal")
        principal = principal if isinstance(principal, str) else None
        # CloudWatch counts a table's Scan requests without saying who sent them (a table whose scans CloudTrail
        # attributes has that count on the attributed findings instead, see _attach_scan_volume).
        name = CLOUDWATCH_SCANNER if principal is None and f.evidence.get("source") == "cloudwatch" else None
        rows.append(
            ScannerRow(
                principal=principal,
                principal_name=name or principal_name(principal),
                table=f.table,
                operation=str(f.evidence.get("operation") or "Scan"),
                count=period_count(f),
                per_hour=period_per_hour(f),
                severity=f.severity,
                status=rf.status,
            )
        )
    rows.sort(key=lambda r: (r.status == "resolved", -r.count, r.table, r.principal_name))
    return rows


def _hot_keys(findings: Sequence[ReportFinding]) -> list[HotKeyRow]:
    rows = []
    for rf in findings:
        f = rf.finding
        if f.kind != FindingKind.HOT_KEY:
            continue
        rows.append(
            HotKeyRow(
                table=f.table,
                index=f.index,
                key=format_key(f.evidence.get("key")),
                share=period_share(f),
                requests=period_count(f),
                share_base=f.totals.share_base if f.totals is not None else None,
                margin=f.totals.margin if f.totals is not None else None,
                headroom_factor=_number(f.evidence.get("headroom_factor")),
                severity=f.severity,
                status=rf.status,
            )
        )
    rows.sort(key=lambda r: (r.status == "resolved", -r.share, r.table, r.key))
    return rows


def _what_if(findings: Sequence[ReportFinding], limit: int = 10) -> list[WhatIfRow]:
    """The open findings' headrooms (``headroom_factor`` in ``hot_key`` and ``low_cardinality_key`` evidence), nearest
    first: what throttles first if traffic grows. The full what-if (tables, indexes, quotas) is ``ddb-audit what-if``.
    """
    rows = []
    for rf in findings:
        f = rf.finding
        headroom = _number(f.evidence.get("headroom_factor"))
        if not rf.is_open or headroom is None or headroom <= 0:
            continue
        key = f.evidence.get("key")
        attr = f.evidence.get("key_attribute")
        rows.append(
            WhatIfRow(
                table=f.table,
                index=f.index,
                key=format_key(key) if key else (f"{attr} (busiest value)" if isinstance(attr, str) else None),
                kind=f.kind,
                limit="partition",
                headroom=headroom,
                source=f.evidence.get("source") if isinstance(f.evidence.get("source"), str) else None,
                severity=f.severity,
            )
        )
    rows.sort(key=lambda r: (r.headroom, r.table, r.key or "", r.kind.value))
    return rows[:limit]


_ITEM_KINDS = (FindingKind.LARGE_ITEM, FindingKind.ITEM_GROWTH, FindingKind.ITEM_SIZE_EXCEEDED)


def _items(findings: Sequence[ReportFinding]) -> list[ItemRow]:
    rows = []
    for rf in findings:
        f = rf.finding
        if f.kind not in _ITEM_KINDS:
            continue
        ev = f.evidence
        exceeded = f.kind == FindingKind.ITEM_SIZE_EXCEEDED
        size = _int(ev.get("size_bytes"))
        rows.append(
            ItemRow(
                table=f.table,
                kind=f.kind,
                key=None if ev.get("key") is None else format_key(ev.get("key")),
                size_bytes=size,
                bytes_per_day=_number(ev.get("bytes_per_day")),
                days_to_limit=_number(ev.get("days_to_limit")),
                rejected_writes=period_count(f) if exceeded else None,
                severity=f.severity,
                status=rf.status,
            )
        )
    rows.sort(
        key=lambda r: (
            r.status == "resolved",
            r.rejected_writes is None,
            -(r.size_bytes or 0),
            r.days_to_limit if r.days_to_limit is not None else math.inf,
            r.table,
            r.key or "",
        )
    )
    return rows


def _billing(findings: Sequence[ReportFinding]) -> list[BillingRow]:
    rows = []
    for rf in findings:
        f = rf.finding
        ev = f.evidence
        if f.kind == FindingKind.BILLING_MODE:
            current, recommended = ev.get("current_mode"), ev.get("recommended_mode")
        elif f.kind == FindingKind.TABLE_CLASS:
            current, recommended = ev.get("current_class"), ev.get("recommended_class")
        else:
            continue
        rows.append(
            BillingRow(
                table=f.table,
                index=f.index,
                kind=f.kind,
                current=str(current or "?"),
                recommended=str(recommended or "?"),
                monthly_cost_current=_number(ev.get("monthly_cost_current")),
                monthly_cost_recommended=_number(ev.get("monthly_cost_recommended")),
                monthly_savings=rf.monthly_savings,
                severity=f.severity,
                status=rf.status,
                days_analyzed=_number(ev.get("days_analyzed")),
                confidence=_number(ev.get("confidence")),
                preliminary=ev.get("preliminary") is True,
                estimated_savings=_number(ev.get("monthly_savings")),
            )
        )
    rows.sort(key=lambda r: (r.status == "resolved", -r.monthly_savings, r.table))
    return rows


def _throttles_from_findings(findings: Sequence[ReportFinding]) -> list[ThrottleCount]:
    """Throttle counts by table, index, cause and source, from the period's totals.

    A throttling story (several sources, :mod:`auditor.detectors.findings.throttling_story`) gives the counts of one
    source only, the one its totals state (CloudWatch when it saw the problem): the sources count the same throttled
    requests, so they are never added. The period's count is split over the causes as that source's latest
    sighting split it.
    """
    totals: dict[tuple[str, str | None, str, str | None], list[int]] = defaultdict(lambda: [0, 0])
    for rf in findings:
        f = rf.finding
        if f.kind != FindingKind.THROTTLING or not rf.is_open:
            continue
        source = f.evidence.get("source") if isinstance(f.evidence.get("source"), str) else None
        block = (f.evidence.get("sources") or {}).get(source) if isinstance(f.evidence.get("sources"), dict) else None
        causes = block.get("causes") if isinstance(block, dict) else None
        if not isinstance(causes, dict) or not causes:
            causes = {str(f.evidence.get("cause") or "unknown"): 1}
        reads = _int(f.evidence.get("read_throttle_events")) or 0
        writes = _int(f.evidence.get("write_throttle_events")) or 0
        total = period_count(f)
        weights = {str(c): max(0, _int(n) or 0) for c, n in causes.items()}
        weight_sum = sum(weights.values()) or 1
        left = total
        for i, (cause, weight) in enumerate(sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))):
            part = left if i == len(weights) - 1 else round(total * weight / weight_sum)
            left -= part
            # each cause's share split into reads and writes as the finding's latest sighting split them
            r = round(part * reads / (reads + writes)) if reads + writes else part
            t = totals[(f.table, f.index, cause, source)]
            t[0] += r
            t[1] += part - r
    return _sorted_throttles(
        ThrottleCount(table=t, index=i, cause=c, source=src, read_events=r, write_events=w)
        for (t, i, c, src), (r, w) in totals.items()
    )


def _sorted_throttles(rows: Iterable[ThrottleCount]) -> list[ThrottleCount]:
    return sorted(rows, key=lambda r: (-r.total, r.table, r.index or "", r.cause))


def resample_capacity(series: CapacitySeries, max_points: int = 168) -> list[CapacityPanel]:
    """Consumed vs provisioned per second, averaged into at most ``max_points`` buckets (hourly for a week)."""
    n = max(len(series.consumed_read), len(series.consumed_write))
    if n == 0:
        return []
    per_bucket = max(1, math.ceil(n / max_points))
    # Round buckets up to whole hours when the data allows it, so the chart reads naturally.
    if series.period_seconds * per_bucket > 3600 and 3600 % series.period_seconds == 0:
        hour = 3600 // series.period_seconds
        per_bucket = math.ceil(per_bucket / hour) * hour
    bucket_seconds = per_bucket * series.period_seconds
    panels = []
    dims: tuple[tuple[Literal["read", "write"], list[float | None], list[float | None] | None], ...] = (
        ("read", series.consumed_read, series.provisioned_read),
        ("write", series.consumed_write, series.provisioned_write),
    )
    for dim, consumed, provisioned in dims:
        if all(v is None for v in consumed):  # nothing read for this dimension: no chart
            continue
        times: list[datetime] = []
        cons: list[float | None] = []
        prov: list[float | None] = []
        for b in range(0, len(consumed), per_bucket):
            chunk = [v for v in consumed[b : b + per_bucket] if v is not None]  # the periods with a datapoint
            times.append(series.start + timedelta(seconds=b * series.period_seconds))
            cons.append(sum(chunk) / (len(chunk) * series.period_seconds) if chunk else None)
            pchunk = [] if provisioned is None else [v for v in provisioned[b : b + per_bucket] if v is not None]
            prov.append(sum(pchunk) / len(pchunk) if pchunk else None)
        panels.append(
            CapacityPanel(
                table=series.table,
                index=series.index,
                dimension=dim,
                bucket_seconds=bucket_seconds,
                times=times,
                consumed=cons,
                provisioned=prov,
            )
        )
    return panels


def source_count(finding: Finding, source: str) -> int:
    """The finding's period count as ``source`` counted it (0 when that source did not see it)."""
    totals = finding.totals
    if totals is not None and totals.by_source is not None:
        part = totals.by_source.get(source)
        return part.count if part is not None else 0
    return period_count(finding) if finding.evidence.get("source") == source else 0


def _week_metrics(findings: Sequence[ReportFinding]) -> dict[str, float]:
    open_ = [rf for rf in findings if rf.is_open]
    ev = [rf.finding for rf in open_]
    scans = [f for f in ev if f.kind == FindingKind.SCAN]
    throttled = [f for f in ev if f.kind == FindingKind.THROTTLING]
    # Each total states its source: CloudTrail logs calls, CloudWatch counts requests and throttle events; counts
    # of one problem by two sources are never added.
    return {
        "Open findings": len(open_),
        "Critical and high findings": sum(1 for f in ev if f.severity.rank >= Severity.HIGH.rank),
        "Tables with findings": len({(f.account, f.region, f.table) for f in ev}),
        "Scan calls (CloudTrail)": sum(source_count(f, "cloudtrail") for f in scans),
        "Scan requests (CloudWatch)": sum(source_count(f, "cloudwatch") for f in scans),
        "Throttled calls (CloudTrail)": sum(source_count(f, "cloudtrail") for f in throttled),
        "Throttle events (CloudWatch)": sum(source_count(f, "cloudwatch") for f in throttled),
        "Hot keys": sum(1 for f in ev if f.kind == FindingKind.HOT_KEY),
        "Writes rejected for item size": sum(period_count(f) for f in ev if f.kind == FindingKind.ITEM_SIZE_EXCEEDED),
        "Potential savings ($/month)": sum(rf.monthly_savings for rf in open_),
    }


def _deltas(current: Sequence[ReportFinding], previous: Sequence[ReportFinding] | None) -> list[Delta]:
    now = _week_metrics(current)
    before = _week_metrics(previous) if previous is not None else None
    return [
        Delta(
            metric=name,
            current=value,
            previous=None if before is None else before[name],
            unit="usd" if name.startswith("Potential savings") else "count",
        )
        for name, value in now.items()
    ]


def build_report_from_findings(
    findings: Iterable[Finding | Mapping[str, Any] | BaseModel],
    now: datetime,
    *,
    week: IsoWeek | None = None,
    previous_findings: Iterable[Finding | Mapping[str, Any] | BaseModel] | None = None,
    access_patterns: Sequence[AccessPattern] = (),
    capacity: Sequence[CapacitySeries] = (),
    throttles: Sequence[ThrottleCount] | None = None,
    usage: AuditorUsage | None = None,
    rates: CostRates | None = None,
    input_stats: Mapping[str, int] | None = None,
    title: str = "DynamoDB weekly audit",
    coverage_gaps: Sequence[str] = (),
    ledger: LedgerSummary | None = None,
    stored_without_totals: Collection[str] = (),
    audited_tables: Collection[str] = (),
) -> WeeklyReport:
    """Build the weekly report.

    ``findings`` are this week's findings (``Finding`` objects, SPEC JSON dicts, or lifecycle states with a
    ``status``); ``now`` is the generation time, and the report covers ``week`` (default: the ISO week that
    contains ``now``). ``previous_findings`` (last week's) enable the week-over-week deltas and resolution by
    absence. ``throttles`` (e.g. CloudWatch per-cause counts) replace the throttle counts taken from the
    throttling findings. ``usage`` prices the auditor's own consumption with ``rates``. ``stored_without_totals``
    are the ids of findings stored by a version without totals (the report says how their numbers are counted).
    """
    now = utc(now)
    week = week or IsoWeek.of(now)
    parsed = [parse_finding(f, f"findings[{i}]") for i, f in enumerate(findings)]
    in_week = [fi for fi in parsed if _active_in(fi, week)]
    current = _attach_scan_volume(_merge_duplicates(in_week))
    previous: dict[str, FindingInput] | None = None
    if previous_findings is not None:
        prev_week = week.previous()
        prev_parsed = [parse_finding(f, f"previous_findings[{i}]") for i, f in enumerate(previous_findings)]
        previous = _attach_scan_volume(_merge_duplicates(fi for fi in prev_parsed if _active_in(fi, prev_week)))
    report_findings = _report_findings(current, previous, week)
    previous_report = (
        None
        if previous is None
        else [
            ReportFinding(
                finding=fi.finding,
                status="resolved" if fi.status == "resolved" else "ongoing",
                monthly_savings=monthly_savings(fi.finding),
                docs_url="",
            )
            for fi in previous.values()
        ]
    )
    patterns = sorted(access_patterns, key=lambda p: (-p.requests, p.table, p.operation))
    pattern_tables = _pattern_tables(patterns)
    tables = _table_summaries(report_findings, pattern_tables)
    cost = estimate_auditor_cost(usage, rates) if usage is not None else None
    open_ = [rf for rf in report_findings if rf.is_open]
    summary = Summary(
        open_findings=len(open_),
        by_severity={s: sum(1 for rf in open_ if rf.finding.severity == s) for s in Severity},
        new=sum(1 for rf in report_findings if rf.status == "new"),
        worsened=sum(1 for rf in report_findings if rf.status == "worsened"),
        ongoing=sum(1 for rf in report_findings if rf.status == "ongoing"),
        resolved=sum(1 for rf in report_findings if rf.status == "resolved"),
        tables_with_findings=sum(1 for t in tables if t.open_findings),
        tables_seen=len({t.table for t in tables} | set(audited_tables)),
        monthly_savings=sum(rf.monthly_savings for rf in open_),
        auditor_cost_usd=None if cost is None else cost.total_usd,
    )
    capacity_panels = [panel for s in capacity for panel in resample_capacity(s)]
    return WeeklyReport(
        title=title,
        week=week,
        generated_at=now,
        summary=summary,
        actions=_actions(report_findings),
        findings=report_findings,
        tables=tables,
        scanners=_scanners(report_findings),
        hot_keys=_hot_keys(report_findings),
        items=_items(report_findings),
        billing=_billing(report_findings),
        throttles=_sorted_throttles(throttles) if throttles is not None else _throttles_from_findings(report_findings),
        capacity=capacity_panels,
        access_patterns=patterns,
        pattern_tables=pattern_tables,
        deltas=_deltas(report_findings, previous_report),
        previous_week_available=previous is not None,
        auditor_cost=cost,
        input_stats=dict(input_stats or {}),
        coverage_gaps=list(coverage_gaps),
        findings_outside_week=len(parsed) - len(in_week),
        stored_without_totals=sum(1 for rf in report_findings if rf.finding.id in stored_without_totals),
        what_if=_what_if(report_findings),
        ledger=ledger,
        sampled_findings=sum(
            1 for rf in report_findings if rf.finding.totals is not None and rf.finding.totals.margin is not None
        ),
    )


def default_week(findings: Iterable[FindingInput], now: datetime) -> IsoWeek:
    """The week ``report`` shows without ``--week``: the last complete ISO week before ``now`` when the input has
    findings in it, else the latest finding's week (a trail of this week still gives a report, marked in progress),
    else the last complete week."""
    items = list(findings)
    last_complete = IsoWeek.of(utc(now)).previous()
    if any(_active_in(fi, last_complete) for fi in items):
        return last_complete
    return latest_week(items) or last_complete


def latest_week(findings: Iterable[FindingInput]) -> IsoWeek | None:
    """The ISO week of the most recent ``last_seen`` (the natural week of a findings file), or None."""
    latest = max((fi.finding.last_seen for fi in findings), default=None)
    return None if latest is None else IsoWeek.of(latest)

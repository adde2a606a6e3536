"""The weekly report model: what a ``WeeklyReport`` is (its ISO week and its contents) and the pure function that
builds one from findings (and optional series).

No I/O, no clock, no environment: the report week and the generation time come in as arguments. Which findings
belong to a week, the status each has in the report, the money and the report's other modules are in docs/report.md.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from auditor.cost.cost_model import LedgerSummary
from auditor.detectors.findings import scan_volume
from auditor.detectors.registry import primary
from auditor.exceptions import InputError
from auditor.models.access_pattern import AccessPattern
from auditor.models.base import FrozenModel
from auditor.models.finding import Finding, FindingKind, Severity, utc
from auditor.report import sections
from auditor.report.auditor_cost import AuditorCost, AuditorUsage, CostRates, estimate_auditor_cost, ledger_cost
from auditor.report.contents import (
    Action,
    BillingRow,
    CapacityPanel,
    Delta,
    HotKeyRow,
    ItemRow,
    PatternTable,
    ReportFinding,
    ScannerRow,
    Status,
    Summary,
    TableSummary,
    WhatIfRow,
)
from auditor.report.figures import monthly_savings
from auditor.report.inputs import CapacitySeries, FindingInput, ThrottleCount, parse_finding
from auditor.review.weekly import ProposalRow, proposal_rows


def docs_url(kind: FindingKind) -> str:
    """The AWS documentation page for a finding kind: its detector's, from the catalogue."""
    return str(primary(kind).metadata.docs_url)


# --------------------------------------------------------------------------------------------------------------
# Weeks
# --------------------------------------------------------------------------------------------------------------


class IsoWeek(FrozenModel):
    """An ISO-8601 week in UTC (Monday 00:00 UTC to the next Monday 00:00 UTC, end exclusive)."""

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
# The report
# --------------------------------------------------------------------------------------------------------------


class WeeklyReport(FrozenModel):
    """Everything the HTML and Markdown renderers show, computed once."""

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
    #: Trail objects of the week that could not be read (their events are missing from the windows), one line each.
    unreadable_objects: list[str] = Field(default_factory=list)
    findings_outside_week: int
    #: Findings of the week stored by a version without period totals: their numbers are their latest window's
    #: (from the evidence); their totals start from their next sighting.
    stored_without_totals: int = 0
    #: Nearest limits first (from the open findings that measured a headroom); see
    #: :func:`auditor.report.sections.what_if`.
    what_if: list[WhatIfRow] = Field(default_factory=list)
    #: How the data model should change, from the open findings (:func:`auditor.review.weekly.proposal_rows`).
    model_review: list[ProposalRow] = Field(default_factory=list)
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
    if fi.status in ("new", "ongoing", "worsened"):  # the lifecycle's own word: the same as the state table's
        raised = fi.published_severity is not None and f.severity.rank > fi.published_severity.rank
        if fi.status == "worsened" or (fi.status == "ongoing" and raised):
            return "worsened", fi.published_severity
        return fi.status, prev_sev
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
    unreadable_objects: Sequence[str] = (),
    ledger: LedgerSummary | None = None,
    stored_without_totals: Collection[str] = (),
    audited_tables: Collection[str] = (),
) -> WeeklyReport:
    """Build the weekly report.

    ``findings`` are this week's findings (``Finding`` objects, SPEC JSON dicts, or lifecycle states with a
    ``status``); ``now`` is the generation time, and the report covers ``week`` (default: the ISO week that
    contains ``now``). ``previous_findings`` (last week's) enable the week-over-week deltas and resolution by
    absence. ``throttles`` (e.g. CloudWatch per-cause counts) replace the throttle counts taken from the
    throttling findings. ``usage`` prices the auditor's own consumption with ``rates``; ``ledger`` (the service's
    cost ledger), when given, is the auditor's cost instead, so the report states one figure. ``stored_without_totals``
    are the ids of findings stored by a version without totals (the report says how their numbers are counted).
    ``unreadable_objects`` are the week's trail objects that could not be read, one line each.
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
    report_findings = sections.hold_capacity_advice(_report_findings(current, previous, week))
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
    pattern_tables = sections.pattern_tables(patterns)
    tables = sections.table_summaries(report_findings, pattern_tables)
    # one figure for the auditor's cost: the service's ledger when it kept one (its usage is in it), else the usage
    cost = ledger_cost(ledger) if ledger is not None else None
    if cost is None and usage is not None:
        cost = estimate_auditor_cost(usage, rates)
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
        savings_breakdown=sections.savings_breakdown(open_),
    )
    capacity_panels = [panel for s in capacity for panel in sections.resample_capacity(s)]
    return WeeklyReport(
        title=title,
        week=week,
        generated_at=now,
        summary=summary,
        actions=sections.actions(report_findings),
        findings=report_findings,
        tables=tables,
        scanners=sections.scanners(report_findings),
        hot_keys=sections.hot_keys(report_findings),
        items=sections.items(report_findings),
        billing=sections.billing(report_findings),
        throttles=sections.sorted_throttles(throttles)
        if throttles is not None
        else sections.throttles_from_findings(report_findings),
        capacity=capacity_panels,
        access_patterns=patterns,
        pattern_tables=pattern_tables,
        deltas=sections.deltas(report_findings, previous_report),
        previous_week_available=previous is not None,
        auditor_cost=cost,
        input_stats=dict(input_stats or {}),
        coverage_gaps=list(coverage_gaps),
        unreadable_objects=list(unreadable_objects),
        findings_outside_week=len(parsed) - len(in_week),
        stored_without_totals=sum(1 for rf in report_findings if rf.finding.id in stored_without_totals),
        what_if=sections.what_if(report_findings),
        model_review=proposal_rows([rf.finding for rf in report_findings if rf.is_open], patterns),
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

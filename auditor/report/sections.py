"""The sections of the weekly report, each computed from the week's findings (with their status): the top actions, the
tables, the scanners, hot keys, items, billing recommendations, throttles, capacity charts, what-if headrooms and the
week-over-week deltas. Pure functions; :func:`auditor.report.model.build_report_from_findings` calls them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import KIND_LABELS, Finding, FindingKind, Severity
from auditor.report.contents import (
    LOGICAL_SCANS,
    SCAN_PAGES,
    Action,
    BillingRow,
    CapacityPanel,
    Delta,
    HotKeyRow,
    ItemRow,
    PatternTable,
    ReportFinding,
    ScannerRow,
    TableSummary,
    WhatIfRow,
)
from auditor.report.figures import (
    format_key,
    int_or_none,
    number_or_none,
    period_count,
    period_per_hour,
    period_share,
    principal_name,
    savings_source,
    source_count,
)
from auditor.report.inputs import CapacitySeries, ThrottleCount

#: The scanner row of a CloudWatch scan count (CloudWatch does not log who scanned).
CLOUDWATCH_SCANNER = "(not logged: CloudWatch's count)"


_STATUS_ORDER = {"worsened": 0, "new": 1, "ongoing": 2, "resolved": 3}


def actions(findings: Sequence[ReportFinding], limit: int = 3) -> list[Action]:
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


def pattern_tables(patterns: Sequence[AccessPattern]) -> list[PatternTable]:
    eff: dict[str, int] = defaultdict(int)
    ineff: dict[str, int] = defaultdict(int)
    for p in patterns:
        (eff if p.efficient else ineff)[p.table] += p.requests
    tables = sorted(set(eff) | set(ineff), key=lambda t: (-(eff[t] + ineff[t]), t))
    return [PatternTable(table=t, efficient_requests=eff[t], inefficient_requests=ineff[t]) for t in tables]


def table_summaries(findings: Sequence[ReportFinding], patterns: Sequence[PatternTable]) -> list[TableSummary]:
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


def _of_kind(findings: Iterable[ReportFinding], kind: FindingKind) -> Iterator[tuple[ReportFinding, Finding]]:
    """The report findings of one kind, each with its finding."""
    return ((rf, rf.finding) for rf in findings if rf.finding.kind == kind)


def scanners(findings: Sequence[ReportFinding]) -> list[ScannerRow]:
    rows = []
    for rf, f in _of_kind(findings, FindingKind.SCAN):
        principal = f.evidence.get("principal")
        principal = principal if isinstance(principal, str) else None
        # CloudWatch counts a table's Scan requests without saying who sent them (a table whose scans CloudTrail
        # attributes has that count on the attributed findings instead: _attach_scan_volume in auditor.report.model).
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
                unit=SCAN_PAGES if f.evidence.get("source") == "cloudwatch" else LOGICAL_SCANS,
            )
        )
    # logical scans and CloudWatch's Scan pages are ranked each among their own, logical scans first
    rows.sort(
        key=lambda r: (r.unit != LOGICAL_SCANS, r.unit, r.status == "resolved", -r.count, r.table, r.principal_name)
    )
    return rows


def hot_keys(findings: Sequence[ReportFinding]) -> list[HotKeyRow]:
    rows = []
    for rf, f in _of_kind(findings, FindingKind.HOT_KEY):
        rows.append(
            HotKeyRow(
                table=f.table,
                index=f.index,
                key=format_key(f.evidence.get("key")),
                share=period_share(f),
                requests=period_count(f),
                share_base=f.totals.share_base if f.totals is not None else None,
                margin=f.totals.margin if f.totals is not None else None,
                headroom_factor=number_or_none(f.evidence.get("headroom_factor")),
                severity=f.severity,
                status=rf.status,
            )
        )
    rows.sort(key=lambda r: (r.status == "resolved", -r.share, r.table, r.key))
    return rows


def what_if(findings: Sequence[ReportFinding], limit: int = 10) -> list[WhatIfRow]:
    """The open findings' headrooms (``headroom_factor`` in ``hot_key`` and ``low_cardinality_key`` evidence), nearest
    first: what throttles first if traffic grows. The full what-if (tables, indexes, quotas) is ``ddb-audit what-if``.
    """
    rows = []
    for rf in findings:
        f = rf.finding
        headroom = number_or_none(f.evidence.get("headroom_factor"))
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
                # a GSI back-pressure throttling finding measures the index's write capacity (docs/capacity.md)
                limit="index write capacity" if f.kind is FindingKind.THROTTLING else "partition",
                headroom=headroom,
                source=f.evidence.get("source") if isinstance(f.evidence.get("source"), str) else None,
                severity=f.severity,
            )
        )
    rows.sort(key=lambda r: (r.headroom, r.table, r.key or "", r.kind.value))
    return rows[:limit]


_ITEM_KINDS = (FindingKind.LARGE_ITEM, FindingKind.ITEM_GROWTH, FindingKind.ITEM_SIZE_EXCEEDED)


def items(findings: Sequence[ReportFinding]) -> list[ItemRow]:
    rows = []
    for rf in findings:
        f = rf.finding
        if f.kind not in _ITEM_KINDS:
            continue
        ev = f.evidence
        exceeded = f.kind == FindingKind.ITEM_SIZE_EXCEEDED
        size = int_or_none(ev.get("size_bytes"))
        rows.append(
            ItemRow(
                table=f.table,
                kind=f.kind,
                key=None if ev.get("key") is None else format_key(ev.get("key")),
                size_bytes=size,
                bytes_per_day=number_or_none(ev.get("bytes_per_day")),
                days_to_limit=number_or_none(ev.get("days_to_limit")),
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


#: The billing row of a throttled table whose advice would add provisioned (lower or reserved) capacity.
HELD_THROTTLED = "not advised: the table throttled this week (no lower or reserved capacity)"


def hold_capacity_advice(findings: Sequence[ReportFinding]) -> list[ReportFinding]:
    """A billing finding towards provisioned capacity (right-sizing, a switch, reserved capacity) on a table with an
    open throttling finding is held: shown as not advised, no saving counted."""
    throttled = {
        (rf.finding.account, rf.finding.region, rf.finding.table)
        for rf in findings
        if rf.is_open and rf.finding.kind == FindingKind.THROTTLING
    }
    out = []
    for rf in findings:
        f = rf.finding
        if (
            f.kind == FindingKind.BILLING_MODE
            and f.evidence.get("recommended_mode") == "PROVISIONED"
            and f.evidence.get("collecting_data") is not True
            and (f.account, f.region, f.table) in throttled
        ):
            rf = rf.model_copy(update={"monthly_savings": 0.0, "held": HELD_THROTTLED})
        out.append(rf)
    return out


def savings_breakdown(findings: Iterable[ReportFinding]) -> dict[str, float]:
    """The savings headline by source (:func:`figures.savings_source`), largest first; none without money."""
    parts: dict[str, float] = defaultdict(float)
    for rf in findings:
        source = savings_source(rf.finding)
        if source is not None and rf.monthly_savings > 0:
            parts[source] += rf.monthly_savings
    return dict(sorted(parts.items(), key=lambda kv: (-kv[1], kv[0])))


def _collecting(evidence: dict[str, Any]) -> str | None:
    """``collecting data: N of 7 days`` for a table with too little capacity history (None otherwise)."""
    if evidence.get("collecting_data") is not True:
        return None
    days, needed = number_or_none(evidence.get("days_analyzed")) or 0.0, number_or_none(evidence.get("days_needed"))
    return f"collecting data: {days:.1f} of {needed or 7:g} days"


def billing(findings: Sequence[ReportFinding]) -> list[BillingRow]:
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
                monthly_cost_current=number_or_none(ev.get("monthly_cost_current")),
                monthly_cost_recommended=number_or_none(ev.get("monthly_cost_recommended")),
                monthly_savings=rf.monthly_savings,
                severity=f.severity,
                status=rf.status,
                days_analyzed=number_or_none(ev.get("days_analyzed")),
                confidence=number_or_none(ev.get("confidence")),
                preliminary=ev.get("preliminary") is True,
                estimated_savings=number_or_none(ev.get("monthly_savings")),
                instead=_collecting(ev) or rf.held,
            )
        )
    rows.sort(key=lambda r: (r.status == "resolved", -r.monthly_savings, r.table))
    return rows


def throttles_from_findings(findings: Sequence[ReportFinding]) -> list[ThrottleCount]:
    """Throttle counts by table, index, cause and source, from the period's totals.

    A throttling story (several sources, :mod:`auditor.detectors.findings.throttling_story`) gives the counts of one
    source only, the one its totals state (CloudWatch when it saw the problem): the sources count the same throttled
    requests, so they are never added. The period's count is split over the causes as that source's latest
    sighting split it.
    """
    totals: dict[tuple[str, str | None, str, str | None], list[int]] = defaultdict(lambda: [0, 0])
    for rf, f in _of_kind(findings, FindingKind.THROTTLING):
        if not rf.is_open:
            continue
        source = f.evidence.get("source") if isinstance(f.evidence.get("source"), str) else None
        block = (f.evidence.get("sources") or {}).get(source) if isinstance(f.evidence.get("sources"), dict) else None
        causes = block.get("causes") if isinstance(block, dict) else None
        if not isinstance(causes, dict) or not causes:
            causes = {str(f.evidence.get("cause") or "unknown"): 1}
        reads = int_or_none(f.evidence.get("read_throttle_events")) or 0
        writes = int_or_none(f.evidence.get("write_throttle_events")) or 0
        total = period_count(f)
        weights = {str(c): max(0, int_or_none(n) or 0) for c, n in causes.items()}
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
    return sorted_throttles(
        ThrottleCount(table=t, index=i, cause=c, source=src, read_events=r, write_events=w)
        for (t, i, c, src), (r, w) in totals.items()
    )


def sorted_throttles(rows: Iterable[ThrottleCount]) -> list[ThrottleCount]:
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


def deltas(current: Sequence[ReportFinding], previous: Sequence[ReportFinding] | None) -> list[Delta]:
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

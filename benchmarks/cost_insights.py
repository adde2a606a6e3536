"""Cost benchmark, Contributor Insights on demand: what the governor's short Contributor Insights windows cost and
which hot keys they name.

Run by ``python -m benchmarks.cost`` when the planner turns them on (``--insights-slices``). The planner
(:func:`auditor.cost.plan.plan_slice`) opens a window of accessed-keys Contributor Insights on a table read at the
detector's floor (25 % of a partition); here each window is billed (an event per item access, two rules by the hour,
the report read before it is disabled) and its report, built from the traffic model, goes through the real
``ci_hot_key`` detector. Enabling is assumed to take a minute (no documented delay): a window's first minute sees
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from auditor.cost.bill import AuditorUsage
from auditor.cost.cost_model import DAYS_PER_MONTH
from auditor.detectors.base import InsightsInput
from auditor.detectors.insights import hot_key as ci_hot_key
from auditor.models.metrics import InsightContributor, InsightReport
from benchmarks.cost import EPOCH0, Account, Burst

#: Rules of a table without a sort key in accessed-keys mode (most accessed and most throttled keys).
RULES = 2
#: Minutes between enabling Contributor Insights and its first counted minute (assumed).
ENABLE_DELAY_MINUTES = 1


def windows(slices: Iterable[int], slice_minutes: int) -> list[tuple[int, int]]:
    """Contiguous windows [first minute, end minute) of the slices a table had Contributor Insights."""
    out: list[tuple[int, int]] = []
    for s in sorted(slices):
        start, end = s * slice_minutes, (s + 1) * slice_minutes
        if out and out[-1][1] == start:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def usage(acct: Account, on: dict[int, list[tuple[int, int]]]) -> tuple[AuditorUsage, int]:
    """(the month's Contributor Insights usage, the report reads' metrics) of the windows per table index."""
    events = 0.0
    rule_hours = 0.0
    reads = 0
    for i, spans in on.items():
        for start, end in spans:
            for m in range(start + ENABLE_DELAY_MINUTES, end):
                r, w = acct.requests(i, m)
                events += (r + w) * 60
            rule_hours += RULES * max(1.0, (end - start) / 60)
            reads += RULES
    return AuditorUsage(days=DAYS_PER_MONTH, ci_rules=rule_hours / 730, ci_events=int(events)), reads


def found(acct: Account, b: Burst, spans: list[tuple[int, int]]) -> bool:
    """Whether the report of a window that overlaps ``b`` (read before the window closes) names its key."""
    t = acct.tables[b.table]
    for start, end in spans:
        first = start + ENABLE_DELAY_MINUTES
        if end <= b.start or first >= b.start + b.minutes or end <= first:
            continue
        total = 0.0
        points: list[tuple[int, float]] = []
        for m in range(first, end):
            r, w = acct.requests(b.table, m)
            hot = b.rate if b.active(m) else 0.0
            hot_r, hot_w = (0.0, hot) if b.write else (hot, 0.0)
            # ConsumedThroughputUnits: read units plus 3 x write units (CIHW)
            total += ((r - hot_r) * t.read_units + 3 * (w - hot_w) * t.write_units) * 60
            if hot:
                points.append((EPOCH0 + m * 60, (hot_r + 3 * hot_w) * 60))
        total += sum(v for _, v in points)
        contributor = InsightContributor((b.key,), sum(v for _, v in points), tuple(points))
        report = InsightReport(
            table=t.name,
            index=None,
            rule_name=f"DynamoDBContributorInsights-PKC-{t.name}-0",
            rule_kind="PKC",
            start=EPOCH0 + first * 60,
            end=EPOCH0 + end * 60,
            period=60,
            key_labels=("pk",),
            aggregate_value=total,
            contributors=(contributor,) if points else (),
        )
        findings = ci_hot_key.detect(InsightsInput([report], {}))
        if any(f.evidence.get("key") == {"pk": b.key} for f in findings):
            return True
    return False

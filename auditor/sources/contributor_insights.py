"""Contributor Insights for DynamoDB: read the per-key reports of the rules DynamoDB created.

Each rule the inventory listed (most accessed or most throttled partition keys and items) is read with one
``GetInsightRuleReport`` over the audited window; the statistics requested are counted for the cost. The rule
names, statistics and limits are in docs/sources.md.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import ClientError

from auditor.models.inventory import Gap, Inventory
from auditor.models.metrics import ApiStats, InsightContributor, InsightReport
from auditor.sources.aws_calls import counted_call, gap_from

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

log = structlog.get_logger(__name__)

__all__ = ["MAX_CONTRIBUTORS", "REPORT_METRICS", "read_insight_reports", "report_period", "rule_kind"]

#: DynamoDB Contributor Insights rules return an error above 25 contributors.
MAX_CONTRIBUTORS = 25
REPORT_METRICS = ("MaxContributorValue", "Maximum")
_RULE = re.compile(r"^DynamoDBContributorInsights-(PKC|SKC|PKT|SKT)-")
_PERIODS = (60, 300, 900, 3600, 21_600, 86_400)
#: Keep a report to at most this many periods.
_MAX_PERIODS = 1440


def rule_kind(rule_name: str) -> str | None:
    """``PKC``, ``SKC``, ``PKT`` or ``SKT`` for a DynamoDB Contributor Insights rule name (else None)."""
    m = _RULE.match(rule_name)
    return m.group(1) if m else None


def report_period(start: int, end: int) -> int:
    """The finest period that keeps the report to 1,440 periods (60 s for a day, 300 s for five days)."""
    span = max(1, end - start)
    return next((p for p in _PERIODS if span / p <= _MAX_PERIODS), _PERIODS[-1])


def _epoch(ts: datetime | float) -> int:
    if isinstance(ts, datetime):
        return int((ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp())
    return int(ts)


def parse_report(
    response: dict[str, Any], *, table: str, index: str | None, rule_name: str, start: int, end: int, period: int
) -> InsightReport:
    """An :class:`InsightReport` from a GetInsightRuleReport response."""
    contributors = tuple(
        InsightContributor(
            keys=tuple(str(k) for k in c.get("Keys", [])),
            aggregate=float(c.get("ApproximateAggregateValue", 0.0)),
            datapoints=tuple(
                sorted((_epoch(d["Timestamp"]), float(d.get("ApproximateValue", 0.0))) for d in c.get("Datapoints", []))
            ),
        )
        for c in response.get("Contributors", [])
    )
    maxima = tuple(
        sorted(
            (_epoch(d["Timestamp"]), float(d.get("MaxContributorValue", d.get("Maximum", 0.0))))
            for d in response.get("MetricDatapoints", [])
        )
    )
    unique = response.get("ApproximateUniqueCount")
    return InsightReport(
        table=table,
        index=index,
        rule_name=rule_name,
        rule_kind=rule_kind(rule_name) or "",
        start=start,
        end=end,
        period=period,
        key_labels=tuple(str(k) for k in response.get("KeyLabels", [])),
        aggregate_value=float(response.get("AggregateValue", 0.0)),
        unique_contributors=int(unique) if unique is not None else None,
        contributors=contributors,
        max_contributor_values=maxima,
    )


def read_insight_reports(
    cloudwatch: CloudWatchClient,
    inventory: Inventory,
    start: int,
    end: int,
    stats: ApiStats,
    *,
    max_contributors: int = 10,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[InsightReport], list[Gap]]:
    """One report per DynamoDB rule of every table and GSI where Contributor Insights is enabled."""
    count = max(1, min(MAX_CONTRIBUTORS, max_contributors))
    period = report_period(start, end)
    t0, t1 = datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)
    reports: list[InsightReport] = []
    gaps: list[Gap] = []
    for profile in inventory.tables:
        for index in (None, *(g.name for g in profile.gsis)):
            ci = profile.insights_of(index)
            if not ci.enabled:
                continue
            for rule in ci.rule_names:
                if rule_kind(rule) is None:
                    continue
                stats.insight_metrics_requested += len(REPORT_METRICS)
                try:
                    response = counted_call(
                        stats,
                        "cloudwatch:GetInsightRuleReport",
                        cloudwatch.get_insight_rule_report,
                        sleep=sleep,
                        RuleName=rule,
                        StartTime=t0,
                        EndTime=t1,
                        Period=period,
                        MaxContributorCount=count,
                        Metrics=list(REPORT_METRICS),
                        OrderBy="Maximum",
                    )
                except ClientError as exc:
                    gap = gap_from(exc, "cloudwatch:GetInsightRuleReport", "contributor_insights", profile.name, index)
                    log.info("insight_report_failed", rule=rule, gap=gap.describe())
                    gaps.append(gap)
                    continue
                reports.append(
                    parse_report(
                        dict(response),
                        table=profile.name,
                        index=index,
                        rule_name=rule,
                        start=start,
                        end=end,
                        period=period,
                    )
                )
    log.info("insight_reports_read", reports=len(reports), failed=len(gaps))
    return reports, gaps

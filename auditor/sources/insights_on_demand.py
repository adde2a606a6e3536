"""Contributor Insights on demand, the reading side: one table's status and its report before it is turned off.

The capture controller enables accessed-keys Contributor Insights on a table for a few slices
(:mod:`auditor.sinks.contributor_insights`). Before disabling it (which deletes the rules) it reads the table's
status and rule names (``DescribeContributorInsights``) and each rule's report over the window
(:func:`auditor.sources.contributor_insights.read_insight_reports`, the live audit's reader).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from auditor.models.inventory import ContributorInsights, Gap, Inventory, TableProfile
from auditor.models.metrics import ApiStats, InsightReport
from auditor.sources.contributor_insights import read_insight_reports
from auditor.sources.inventory import profile_from_description

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["describe_insights", "read_table_reports"]


def describe_insights(ddb: DynamoDBClient, table: str) -> ContributorInsights:
    """The table's Contributor Insights (DescribeContributorInsights: status, mode, rule names); on an error, the
    error code as the status (``ResourceNotFoundException``: the table is gone)."""
    try:
        d = ddb.describe_contributor_insights(TableName=table)
    except ClientError as exc:
        return ContributorInsights(status=str(exc.response.get("Error", {}).get("Code") or "unknown"))
    return ContributorInsights(
        status=str(d.get("ContributorInsightsStatus") or "unknown"),
        mode=d.get("ContributorInsightsMode"),
        rule_names=tuple(d.get("ContributorInsightsRuleList") or ()),
    )


def read_table_reports(
    cw: CloudWatchClient, description: dict[str, Any], insights: ContributorInsights, start: int, end: int
) -> tuple[TableProfile, list[InsightReport], list[Gap]]:
    """The table's profile (from its DescribeTable ``Table``) and its rules' reports over ``[start, end)``."""
    profile = profile_from_description(description).model_copy(update={"contributor_insights": insights})
    reports, gaps = read_insight_reports(cw, Inventory(tables=(profile,)), start, end, ApiStats())
    return profile, reports, gaps

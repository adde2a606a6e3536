"""Contributor Insights on demand, the writing side: the capture controller turns a table's Contributor Insights on
and off.

``UpdateContributorInsights`` (DynamoDB API reference: ``ContributorInsightsAction`` ENABLE | DISABLE,
``ContributorInsightsMode`` ACCESSED_AND_THROTTLED_KEYS | THROTTLED_KEYS) on a table, never on an index. Enabling
always names the accessed-keys mode (a re-enable without a mode is reported to revert it). Disabling deletes the
table's rules: the controller reads their report first (:mod:`auditor.sources.insights_on_demand`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["ACCESSED_KEYS", "InsightsUpdate", "set_insights"]

#: The mode that ranks the most accessed keys (and the throttled ones): what names a hot key before it throttles.
ACCESSED_KEYS = "ACCESSED_AND_THROTTLED_KEYS"


@dataclass(frozen=True, slots=True)
class InsightsUpdate:
    """What UpdateContributorInsights answered: the new status (``ENABLING``, ``DISABLING``...) or the error."""

    ok: bool
    status: str
    detail: str = ""


def set_insights(ddb: DynamoDBClient, table: str, *, enable: bool) -> InsightsUpdate:
    """Enable accessed-keys Contributor Insights on ``table``, or disable it (which deletes its rules)."""
    kwargs: dict[str, Any] = {"TableName": table, "ContributorInsightsAction": "ENABLE" if enable else "DISABLE"}
    if enable:
        kwargs["ContributorInsightsMode"] = ACCESSED_KEYS
    try:
        response = ddb.update_contributor_insights(**kwargs)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or "unknown")
        return InsightsUpdate(False, code, f"{code}: {error.get('Message', '')}")
    return InsightsUpdate(True, str(response.get("ContributorInsightsStatus") or ""))

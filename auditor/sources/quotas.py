"""DynamoDB's throughput quotas of the account, from Service Quotas (``GetServiceQuota``), where readable.

Four calls per account and Region, one per quota code of the DynamoDB page of the AWS General Reference ("Amazon
DynamoDB endpoints and quotas", docs.aws.amazon.com/general/latest/gr/ddb.html): the table-level read and write
throughput limits and the account-level read and write limits of provisioned mode. A quota the call cannot read
(AccessDenied, NoSuchResourceException for a quota without an applied value, an endpoint without the API) keeps
DynamoDB's documented default (:class:`~auditor.models.inventory.ThroughputQuotas`), stated as ``default``; a denied
or failed call is also a :class:`~auditor.models.inventory.Gap`. Read-only; never raises for an AWS error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import structlog
from botocore.exceptions import BotoCoreError, ClientError

from auditor.models.inventory import Gap, ThroughputQuotas
from auditor.models.metrics import ApiStats
from auditor.sources.aws_calls import counted_call, error_code, gap_from

__all__ = ["QUOTA_CODES", "QuotaClient", "read_throughput_quotas"]

log = structlog.get_logger(__name__)

#: ``ThroughputQuotas`` field -> DynamoDB quota code (Service Quotas, service code ``dynamodb``).
QUOTA_CODES = {
    "table_read": "L-CF0CBE56",  # Table-level read throughput limit
    "table_write": "L-AB614373",  # Table-level write throughput limit
    "account_read": "L-34F6A552",  # Account-level read throughput limit (Provisioned mode)
    "account_write": "L-34F8CCC8",  # Account-level write throughput limit (Provisioned mode)
}
#: A quota that has no applied value in the account: its default holds, nothing is missing.
_NO_VALUE = frozenset({"NoSuchResourceException"})


class QuotaClient(Protocol):
    """The one call of a boto3 ``service-quotas`` client this reader makes."""

    def get_service_quota(self, *, ServiceCode: str, QuotaCode: str) -> Mapping[str, Any]: ...  # noqa: N803


def read_throughput_quotas(client: QuotaClient, stats: ApiStats, gaps: list[Gap]) -> ThroughputQuotas:
    """The account's DynamoDB throughput quotas: each one Service Quotas gives (``Quota.Value``, API reference
    ``GetServiceQuota``), the documented default for the others. Failed calls other than a quota with no applied
    value are appended to ``gaps`` (facet ``quotas``): the first such failure ends the reading (the other quotas keep
    their defaults)."""
    values: dict[str, Any] = {}
    for field, code in QUOTA_CODES.items():
        call = "servicequotas:GetServiceQuota"
        try:
            answer = counted_call(stats, call, client.get_service_quota, ServiceCode="dynamodb", QuotaCode=code)
        except ClientError as exc:
            if error_code(exc) in _NO_VALUE:
                continue
            gaps.append(gap_from(exc, call, "quotas"))
            log.info("quota_unreadable", quota=code, error=error_code(exc))
            break  # denied or failing: the other quotas would be too, keep their defaults
        except BotoCoreError as exc:  # an endpoint that does not serve the API
            gaps.append(gap_from(exc, call, "quotas"))
            break
        value = (answer.get("Quota") or {}).get("Value")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            values[field] = float(value)
            values[f"{field}_source"] = "service_quotas"
    return ThroughputQuotas(**values)

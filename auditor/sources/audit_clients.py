"""The boto3 clients the live audit reads with: from the standard credential chain, or from an account's session.

boto3 honours ``AWS_ENDPOINT_URL`` (a local endpoint) itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import NoRegionError

from auditor.exceptions import AuditError
from auditor.sources.aws_calls import CLIENT_CONFIG
from auditor.sources.quotas import QuotaClient

if TYPE_CHECKING:
    import boto3
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["AuditClients", "build_clients", "clients_for"]


@dataclass(frozen=True, slots=True)
class AuditClients:
    """The boto3 clients the audit reads with (built by the caller: handler or CLI)."""

    dynamodb: DynamoDBClient
    cloudwatch: CloudWatchClient
    autoscaling: ApplicationAutoScalingClient | None = None
    #: Service Quotas (the account's DynamoDB throughput quotas); None: the documented defaults.
    quotas: QuotaClient | None = None


def build_clients(region: str | None = None) -> AuditClients:
    """Clients from the standard credential chain; boto3 honours ``AWS_ENDPOINT_URL`` (a local endpoint) itself."""
    import boto3

    try:
        return AuditClients(
            dynamodb=boto3.client("dynamodb", region_name=region, config=CLIENT_CONFIG),
            cloudwatch=boto3.client("cloudwatch", region_name=region, config=CLIENT_CONFIG),
            autoscaling=boto3.client("application-autoscaling", region_name=region, config=CLIENT_CONFIG),
            quotas=boto3.client("service-quotas", region_name=region, config=CLIENT_CONFIG),
        )
    except NoRegionError as exc:
        raise AuditError("no AWS region: pass --region or set AWS_REGION / AWS_DEFAULT_REGION") from exc


def clients_for(session: boto3.Session, region: str) -> AuditClients:
    """The audit's clients in ``region`` from an account's session (honours ``AWS_ENDPOINT_URL`` like boto3)."""
    return AuditClients(
        dynamodb=session.client("dynamodb", region_name=region, config=CLIENT_CONFIG),
        cloudwatch=session.client("cloudwatch", region_name=region, config=CLIENT_CONFIG),
        autoscaling=session.client("application-autoscaling", region_name=region, config=CLIENT_CONFIG),
        quotas=session.client("service-quotas", region_name=region, config=CLIENT_CONFIG),
    )

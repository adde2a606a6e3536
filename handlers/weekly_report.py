"""Weekly report: an EventBridge schedule (Monday 07:00 UTC by default) -> last week's report in S3, announced once
on SNS with a presigned link (``auditor.service.weekly_report.run_weekly_report``).

The scheduled event's ``time`` picks the week (the last complete ISO week before it), so a retried event renders the
same week; the announcement marker in the state table keeps a retry from announcing it twice. Errors propagate: the
invocation fails and Lambda's asynchronous retry runs it again.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
import structlog
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.config import Config

from auditor.config import get_settings
from auditor.observability import configure_logging
from auditor.service.weekly_report import WeeklyReportParams, run_weekly_report
from auditor.sinks.audit_cycle import AuditCycleStore
from auditor.sinks.findings_store import FindingsStore
from auditor.sinks.report_store import ReportAnnouncements
from auditor.sinks.window_store import RETRY_CONFIG

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sns import SNSClient

#: Presigned URLs are signed with SigV4 (its 7-day limit is the one REPORT_LINK_EXPIRY_SECONDS is bounded by).
S3_CONFIG = Config(signature_version="s3v4", retries={"mode": "standard"})


@cache
def _clients() -> tuple[DynamoDBClient, S3Client, SNSClient]:
    """Built on first use (after the environment is set), reused while the container is warm."""
    configure_logging(get_settings().log_level)
    return boto3.client("dynamodb", config=RETRY_CONFIG), boto3.client("s3", config=S3_CONFIG), boto3.client("sns")


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, object]:
    settings = get_settings()
    ddb, s3, sns = _clients()
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(
        function_name=context.function_name, function_request_id=context.aws_request_id
    )
    schedule = parse(event=event, model=EventBridgeModel)
    structlog.contextvars.bind_contextvars(schedule_event_id=schedule.id)
    table = settings.require("state_table_name")
    result = run_weekly_report(
        FindingsStore(ddb, table, retention_days=settings.finding_retention_days),
        s3,
        sns,
        ReportAnnouncements(ddb, table),
        WeeklyReportParams.from_settings(settings),
        now=schedule.time,
        coverage=AuditCycleStore(ddb, table),
    )
    return result.as_dict()

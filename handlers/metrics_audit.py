"""Metrics audit: an hourly EventBridge schedule -> live audit (inventory, CloudWatch, Contributor Insights) ->
findings lifecycle -> SNS (``auditor.service.metrics_audit.run_metrics_audit``).

Read-only towards the audited tables. The scheduled event's ``time`` is the audit's ``now``: a retried event audits
the same window, and decides billing when that time is in the UTC hour ``BILLING_AUDIT_HOUR_UTC``, like the first
attempt. Errors propagate: the invocation fails and the next schedule (or the asynchronous retry) runs again; failed
publishes stay in the outbox for the next run.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
import structlog
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from auditor.config import get_settings
from auditor.observability import configure_logging
from auditor.service.metrics_audit import MetricsAuditParams, OrgScope, run_metrics_audit
from auditor.sinks.audit_cycle import AuditCycleStore
from auditor.sinks.findings_store import FindingsStore
from auditor.sinks.window_store import RETRY_CONFIG
from auditor.sources.audit_clients import AuditClients, build_clients

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sns import SNSClient


@cache
def _clients() -> tuple[AuditClients, DynamoDBClient, SNSClient]:
    """Built on first use (after the environment is set), reused while the container is warm."""
    configure_logging(get_settings().log_level)
    return build_clients(), boto3.client("dynamodb", config=RETRY_CONFIG), boto3.client("sns")


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, object]:
    settings = get_settings()
    audit_clients, state_ddb, sns = _clients()
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(
        function_name=context.function_name, function_request_id=context.aws_request_id
    )
    schedule = parse(event=event, model=EventBridgeModel)
    structlog.contextvars.bind_contextvars(schedule_event_id=schedule.id)
    store = FindingsStore(
        state_ddb, settings.require("state_table_name"), retention_days=settings.finding_retention_days
    )
    params = MetricsAuditParams.from_settings(settings)
    org = OrgScope.from_settings(settings)
    time_left = lambda: context.get_remaining_time_in_millis() / 1000  # noqa: E731
    if org.enabled:  # several accounts and/or Regions, each through the member role; a cycle may span invocations
        cycles = AuditCycleStore(state_ddb, store.table_name, retention_days=settings.finding_retention_days)
        return org.run(boto3.Session(), store, cycles, sns, params, schedule.time, time_left=time_left).as_dict()
    result = run_metrics_audit(
        audit_clients,
        store,
        sns,
        params,
        now=schedule.time,
        time_left=time_left,
    )
    return result.as_dict()

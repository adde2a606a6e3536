"""Capture controller: a 5-minute EventBridge schedule -> the stack's own trail's DynamoDB data-event selectors
within the audit budget (``auditor.service.capture.run_controller``).

Deployed only when the stack creates its trail (``CreateTrail=true``). The scheduled event's ``time`` decides the
slice, so a retried event plans the same slice (and loses the conditional write to the first attempt).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
import structlog
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from auditor.config import get_settings
from auditor.cost.plan import PlannerConfig
from auditor.observability import configure_logging
from auditor.service.capture import CaptureClients, run_controller
from auditor.sinks.window_store import RETRY_CONFIG


@cache
def _clients() -> CaptureClients:
    """Built on first use (after the environment is set), reused while the container is warm."""
    configure_logging(get_settings().log_level)
    return CaptureClients(
        boto3.client("cloudtrail"), boto3.client("cloudwatch"), boto3.client("dynamodb", config=RETRY_CONFIG)
    )


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, object]:
    settings = get_settings()
    clients = _clients()
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(
        function_name=context.function_name, function_request_id=context.aws_request_id
    )
    schedule = parse(event=event, model=EventBridgeModel)
    arns = frozenset(a.strip() for a in (settings.capture_table_arns or "").split(",") if a.strip())
    result = run_controller(
        clients,
        trail=settings.require("capture_trail_name"),
        state_table=settings.require("state_table_name"),
        now=schedule.time,
        config=PlannerConfig(budget_percent=settings.audit_budget_percent),
        table_arns=arns or None,
    )
    return result.as_dict()

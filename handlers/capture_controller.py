"""Capture controller: a 5-minute EventBridge schedule -> the stack's own trail's DynamoDB data-event selectors
within the audit budget (``auditor.service.capture.run_controller``).

Deployed only when the stack creates its trail (``CreateTrail=true``). The scheduled event's ``time`` decides the
slice, so a retried event plans the same slice (and loses the conditional write to the first attempt).
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel

from auditor.cost.plan import PlannerConfig
from auditor.service.capture import CaptureClients, run_controller
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime


@lambda_runtime(EventBridgeModel)
def lambda_handler(schedule: EventBridgeModel, run: Invocation) -> dict[str, object]:
    clients = runtime.CLIENTS
    settings = run.settings
    arns = frozenset(a.strip() for a in (settings.capture_table_arns or "").split(",") if a.strip())
    result = run_controller(
        CaptureClients(clients.cloudtrail, clients.cloudwatch, clients.dynamodb),
        trail=settings.require("capture_trail_name"),
        state_table=run.state_table(),
        now=schedule.time,
        config=PlannerConfig(budget_percent=settings.audit_budget_percent),
        table_arns=arns or None,
    )
    return result.as_dict()

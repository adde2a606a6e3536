"""Capture controller: a 5-minute EventBridge schedule -> the trail's DynamoDB data-event selectors within the audit
budget.

With the stack's own trail (``CreateTrail=true``: ``CAPTURE_TRAIL_NAME`` names it) it sets the selectors
(``auditor.service.capture.run_controller``); without one (an existing trail: the name empty) it advises once a
day, the selectors it would set and one command to apply them, in its log
(``auditor.service.capture.advise_controller``). The scheduled event's ``time`` decides the slice, so a retried event
plans the same slice (and loses the conditional write to the first attempt). Its findings (``capture_cap``, and the
hot keys of Contributor Insights on demand, ``service.capture_insights_slices``) go through the findings lifecycle
to the findings topic.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel

from auditor.cost.plan import PlannerConfig
from auditor.service.capture import CaptureClients, advise_controller, run_controller
from auditor.service.record import LifecycleParams
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime


@lambda_runtime(EventBridgeModel)
def lambda_handler(schedule: EventBridgeModel, run: Invocation) -> dict[str, object]:
    clients = runtime.CLIENTS
    settings = run.settings
    arns = settings.capture_table_arn_set()
    capture = CaptureClients(
        clients.cloudtrail,
        clients.cloudwatch,
        clients.dynamodb,
        findings=run.findings_store(),
        sns=clients.sns,
        lifecycle=LifecycleParams.from_settings(settings),
    )
    config = PlannerConfig(
        budget_percent=settings.audit_budget_percent, insights_slices=settings.capture_insights_slices
    )
    if not settings.capture_trail_name:
        advice = advise_controller(
            capture,
            trail=None,  # not the stack's: the command names a placeholder
            state_table=run.state_table(),
            now=schedule.time,
            config=config,
            table_arns=arns,
        )
        return advice.as_dict()
    result = run_controller(
        capture,
        trail=settings.require("capture_trail_name"),
        state_table=run.state_table(),
        now=schedule.time,
        config=config,
        table_arns=arns,
        detectors=settings.analysis_config(),
    )
    return result.as_dict()

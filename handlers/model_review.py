"""Scheduled model review (optional: template parameter ``ExtraOutputs`` naming ``model-review``): an EventBridge
schedule (daily) -> the data-model proposals of the state table's open findings, stored under their stable ids, each new
or changed one announced once on the findings topic (``auditor.service.model_review.run_model_review``).

Errors propagate: the invocation fails and Lambda's asynchronous retry runs it again (an announcement that failed was
released, so the retry makes it).
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel

from auditor.service.model_review import run_model_review
from auditor.state.proposal_store import ProposalStore
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime


@lambda_runtime(EventBridgeModel)
def lambda_handler(schedule: EventBridgeModel, run: Invocation) -> dict[str, object]:
    clients = runtime.CLIENTS
    result = run_model_review(
        run.findings_store(),
        ProposalStore(clients.dynamodb, run.state_table()),
        clients.sns,
        run.settings.require("findings_topic_arn"),
        now=schedule.time,
    )
    return result.as_dict()

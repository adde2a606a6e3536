"""Window evaluator: an EventBridge schedule -> evaluate the closed windows, store and publish the findings.

The scheduled event's ``time`` is the evaluation time (deterministic on a retry of the same event). Errors
propagate: the invocation fails and the next schedule (or the asynchronous retry) runs again from the cursor.
"""

from __future__ import annotations

from functools import cache, partial
from typing import TYPE_CHECKING, Any

import boto3
import structlog
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from auditor.config import get_settings
from auditor.observability import configure_logging
from auditor.service.evaluate import EvaluationParams, run_evaluation
from auditor.sinks.capture_store import CaptureStore
from auditor.sinks.findings_store import FindingsStore
from auditor.sinks.window_store import RETRY_CONFIG, WindowStore
from auditor.sources.inventory import describe_tables

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sns import SNSClient


@cache
def _clients() -> tuple[DynamoDBClient, SNSClient]:
    """Built on first use (after the environment is set), reused while the container is warm."""
    configure_logging(get_settings().log_level)
    return boto3.client("dynamodb", config=RETRY_CONFIG), boto3.client("sns")


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, object]:
    settings = get_settings()
    ddb, sns = _clients()
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(
        function_name=context.function_name, function_request_id=context.aws_request_id
    )
    schedule = parse(event=event, model=EventBridgeModel)
    structlog.contextvars.bind_contextvars(schedule_event_id=schedule.id)
    table = settings.require("state_table_name")
    trail = settings.capture_trail_name  # the capture controller's plans, when the stack owns its trail
    own_account = context.invoked_function_arn.split(":")[4]
    describe = partial(describe_tables, ddb, account=own_account, region=ddb.meta.region_name)
    result = run_evaluation(
        WindowStore(ddb, table, retention_days=settings.state_retention_days),
        FindingsStore(ddb, table, retention_days=settings.finding_retention_days),
        sns,
        EvaluationParams.from_settings(settings),
        now=schedule.time,
        capture=CaptureStore(ddb, table, trail) if trail else None,
        describe=describe,
    )
    return result.as_dict()

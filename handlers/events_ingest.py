"""Events ingest: SQS messages carrying EventBridge "AWS API Call via CloudTrail" events -> window contributions.

The batch is committed as a whole (per-event markers make redeliveries count once); messages whose events could
not be committed are reported in ``batchItemFailures``. Malformed and non-DynamoDB events are counted and dropped.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
import structlog
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.parser.models import SqsModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from auditor.config import get_settings
from auditor.observability import configure_logging
from auditor.service.ingest import process_events
from auditor.sinks.window_store import RETRY_CONFIG, WindowStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@cache
def _client() -> DynamoDBClient:
    """Built on first use (after the environment is set), reused while the container is warm."""
    configure_logging(get_settings().log_level)
    return boto3.client("dynamodb", config=RETRY_CONFIG)


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    settings = get_settings()
    store = WindowStore(_client(), settings.require("state_table_name"), retention_days=settings.state_retention_days)
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(function_request_id=context.aws_request_id, function=context.function_name)
    try:
        batch = SqsModel.model_validate(event)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ValueError(f"events_ingest expects an SQS batch event: {where}: {err['msg']}") from None
    bodies = [(record.messageId, record.body) for record in batch.Records]
    result = process_events(store, bodies, settings.analysis_config(), datetime.now(UTC))
    # The batch was committed as a whole: the messages whose events were not committed are the failures (SQS
    # redelivers them; the per-event markers make the redelivery count once).
    failed = set(result.failed_message_ids)
    return {"batchItemFailures": [{"itemIdentifier": r.messageId} for r in batch.Records if r.messageId in failed]}

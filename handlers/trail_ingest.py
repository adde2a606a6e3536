"""Trail ingest: SQS messages carrying S3 notifications of new CloudTrail objects -> window contributions.

One SQS message per object; a failing message (unreadable object, malformed body) is reported in
``batchItemFailures`` and retried by SQS (then parked in the DLQ), the others of the batch succeed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
import structlog
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from auditor.config import get_settings
from auditor.observability import configure_logging
from auditor.service.ingest import process_trail_message
from auditor.sinks.window_store import RETRY_CONFIG, WindowStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client


@cache
def _clients() -> tuple[S3Client, DynamoDBClient]:
    """Built on first use (after the environment is set), reused while the container is warm."""
    configure_logging(get_settings().log_level)
    return boto3.client("s3", config=RETRY_CONFIG), boto3.client("dynamodb", config=RETRY_CONFIG)


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    settings = get_settings()
    s3, ddb = _clients()
    store = WindowStore(ddb, settings.require("state_table_name"), retention_days=settings.state_retention_days)
    config = settings.analysis_config()
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(function_request_id=context.aws_request_id, function=context.function_name)

    def record_handler(record: SqsRecordModel) -> None:
        structlog.contextvars.bind_contextvars(message_id=record.messageId)
        process_trail_message(s3, store, str(record.body), config, datetime.now(UTC))

    processor = BatchProcessor(event_type=EventType.SQS, model=SqsRecordModel, raise_on_entire_batch_failure=False)
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)

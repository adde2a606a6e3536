"""Stream item size: DynamoDB Streams records of opted-in tables -> exact item sizes, size histories, findings.

Bad records are counted and skipped; only a record whose size history cannot be written is reported in
``batchItemFailures`` (by ``SequenceNumber``), so Lambda retries from it (bisecting the batch) while the others
succeed. The records are read as raw DynamoDB JSON (``record.raw_event``): the exact size rules need the type tags.

The batch's findings are then stored and published through the findings lifecycle, linked with the CloudTrail path's
``item_size_exceeded`` findings of the same keys (``auditor.service.stream_item_size.record_stream_findings``). If that
fails the invocation raises and Lambda retries the whole batch, which counts once (histories keep one sample per
sequence number; the lifecycle turns repeated sightings into no new event).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
import structlog
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from auditor.config import get_settings
from auditor.observability import configure_logging
from auditor.service.record import LifecycleParams
from auditor.service.stream_item_size import StreamFindingsRecorder, StreamItemSizeBatch, item_size_config
from auditor.sinks.findings_store import FindingsStore
from auditor.sinks.item_history import RETRY_CONFIG, ItemHistoryStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sns import SNSClient


@cache
def _client() -> DynamoDBClient:
    """Built on first use (after the environment is set), reused while the container is warm."""
    configure_logging(get_settings().log_level)
    return boto3.client("dynamodb", config=RETRY_CONFIG)


@cache
def _sns_client() -> SNSClient:
    return boto3.client("sns")


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    settings = get_settings()
    config = item_size_config(settings)
    store = ItemHistoryStore(
        _client(),
        settings.require("state_table_name"),
        max_samples=config.max_samples,
        retention_days=config.history_retention_days,
    )
    recorder = StreamFindingsRecorder(
        FindingsStore(_client(), store.table_name, retention_days=settings.finding_retention_days),
        _sns_client(),
        LifecycleParams.from_settings(settings),
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(function_request_id=context.aws_request_id, function=context.function_name)
    batch = StreamItemSizeBatch(store, config, recorder=recorder)

    def record_handler(record: DynamoDBRecord) -> None:
        batch.process_record(record.raw_event)

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    batch.finish()
    return response

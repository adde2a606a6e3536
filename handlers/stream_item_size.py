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

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from auditor.service import health
from auditor.service.record import LifecycleParams
from auditor.service.stream_item_size import StreamFindingsRecorder, StreamItemSizeBatch, item_size_config
from auditor.state.item_history import ItemHistoryStore
from auditor.state.table_item_sizes import PendingSizes, TableItemSizes
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime

#: The item sizes measured in this environment and not stored yet (stored a thousand or fifteen minutes at a time).
PENDING_SIZES = PendingSizes()


@lambda_runtime(None)
def lambda_handler(event: dict[str, Any], run: Invocation) -> PartialItemFailureResponse:
    settings = run.settings
    config = item_size_config(settings)
    store = ItemHistoryStore(
        runtime.CLIENTS.dynamodb,
        run.state_table(),
        max_samples=config.max_samples,
        retention_days=config.history_retention_days,
    )
    recorder = StreamFindingsRecorder(
        run.findings_store(), runtime.CLIENTS.sns, LifecycleParams.from_settings(settings)
    )
    sizes = TableItemSizes(runtime.CLIENTS.dynamodb, run.state_table())  # the evaluator's "streams" item sizes
    batch = StreamItemSizeBatch(store, config, recorder=recorder, sizes=sizes, pending=PENDING_SIZES)

    def record_handler(record: DynamoDBRecord) -> None:
        batch.process_record(record.raw_event)

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=run.context
    )
    run.emit(health.stream_batch(batch.finish()))
    return response

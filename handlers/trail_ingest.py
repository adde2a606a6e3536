"""Trail ingest: SQS messages carrying S3 notifications of new CloudTrail objects -> window contributions.

One SQS message per object; a failing message (unreadable object, malformed body) is reported in
``batchItemFailures`` and retried by SQS (then parked in the DLQ), the others of the batch succeed. An object whose
content cannot be read is also recorded in the state table and counted (``UnreadableObjects``) on every attempt.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel

from auditor.service import health
from auditor.service.ingest import ObjectContentError, process_trail_message
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime


@lambda_runtime(None)
def lambda_handler(event: dict[str, Any], run: Invocation) -> PartialItemFailureResponse:
    store, config, prints = run.window_store(), run.settings.analysis_config(), run.fingerprint_store()
    unreadable = run.unreadable_store()

    def record_handler(record: SqsRecordModel) -> None:
        run.bind(message_id=record.messageId)
        body, now = str(record.body), datetime.now(UTC)
        try:
            objects = process_trail_message(runtime.CLIENTS.s3, store, body, config, now, prints, unreadable)
        except ObjectContentError:
            run.emit(health.unreadable_objects(1))  # recorded in the state table; the message still fails
            raise
        run.emit(health.trail_objects(objects))

    processor = BatchProcessor(event_type=EventType.SQS, model=SqsRecordModel, raise_on_entire_batch_failure=False)
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=run.context
    )
    run.emit(health.files_failed(len(response["batchItemFailures"])))
    return response

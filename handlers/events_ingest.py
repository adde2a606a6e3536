"""Events ingest: SQS messages carrying EventBridge "AWS API Call via CloudTrail" events -> window contributions.

The batch is committed as a whole (per-event markers make redeliveries count once); messages whose events could
not be committed are reported in ``batchItemFailures``. Malformed and non-DynamoDB events are counted and dropped.
"""

from __future__ import annotations

from datetime import UTC, datetime

from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.parser.models import SqsModel

from auditor.service import health
from auditor.service.ingest import process_events
from handlers.runtime import Invocation, lambda_runtime


@lambda_runtime(SqsModel)
def lambda_handler(batch: SqsModel, run: Invocation) -> PartialItemFailureResponse:
    bodies = [(record.messageId, record.body) for record in batch.Records]
    result = process_events(run.window_store(), bodies, run.settings.analysis_config(), datetime.now(UTC))
    run.emit(health.events(result))
    # The batch was committed as a whole: the messages whose events were not committed are the failures (SQS
    # redelivers them; the per-event markers make the redelivery count once).
    failed = set(result.failed_message_ids)
    return {"batchItemFailures": [{"itemIdentifier": r.messageId} for r in batch.Records if r.messageId in failed]}

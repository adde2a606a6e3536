"""Window evaluator: an EventBridge schedule -> evaluate the closed windows, store and publish the findings.

The scheduled event's ``time`` is the evaluation time (deterministic on a retry of the same event). Errors
propagate: the invocation fails and the next schedule (or the asynchronous retry) runs again from the cursor. Each
run also evaluates again the windows flagged late (a contribution stored after they were evaluated).
"""

from __future__ import annotations

from functools import partial

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel

from auditor.service import health
from auditor.service.dedupe import Deduplication
from auditor.service.evaluate import EvaluationParams, run_evaluation
from auditor.service.ingest import reread_objects
from auditor.service.late import Reevaluation
from auditor.sources.inventory import describe_tables
from auditor.state.capture_store import CaptureStore
from auditor.state.ledger_store import LedgerStore
from auditor.state.table_item_sizes import TableItemSizes, with_stream_sizes
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime


@lambda_runtime(EventBridgeModel)
def lambda_handler(schedule: EventBridgeModel, run: Invocation) -> dict[str, object]:
    ddb, table = runtime.CLIENTS.dynamodb, run.state_table()
    params = EvaluationParams.from_settings(run.settings)
    trail = run.settings.capture_trail_name  # the capture controller's plans, when the stack owns its trail
    prints = run.fingerprint_store()  # events delivered in two trail objects count once
    dedupe = Deduplication(prints.get, reread_objects(runtime.CLIENTS.s3, params.analysis)) if prints else None
    windows = run.window_store()
    result = run_evaluation(
        windows,
        run.findings_store(),
        runtime.CLIENTS.sns,
        params,
        now=schedule.time,
        capture=CaptureStore(ddb, table, trail) if trail else None,
        # the tables' descriptions, with the item sizes the stream watcher measured (the "streams" item size)
        describe=with_stream_sizes(
            partial(describe_tables, ddb, account=run.account, region=ddb.meta.region_name),
            TableItemSizes(ddb, table),
            schedule.time,
        ),
        ledger=LedgerStore(ddb, table),
        dedupe=dedupe,
        late=Reevaluation(windows, run.sighting_store()),  # windows that got a contribution after they were evaluated
    )
    run.emit(health.evaluation(result, schedule.time, params.analysis.window_seconds))
    return result.as_dict()

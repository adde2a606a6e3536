"""Weekly report: an EventBridge schedule (Monday 07:00 UTC by default) -> last week's report in S3, announced once
on SNS with a presigned link (``auditor.service.weekly_report.run_weekly_report``).

The scheduled event's ``time`` picks the week (the last complete ISO week before it), so a retried event renders the
same week; the announcement marker in the state table keeps a retry from announcing it twice. Errors propagate: the
invocation fails and Lambda's asynchronous retry runs it again.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel

from auditor.service.weekly_report import WeeklyReportParams, run_weekly_report
from auditor.state.audit_cycle import AuditCycleStore
from auditor.state.capture_store import CaptureStore
from auditor.state.ledger_store import LedgerStore
from auditor.state.report_store import ReportAnnouncements
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime


@lambda_runtime(EventBridgeModel)
def lambda_handler(schedule: EventBridgeModel, run: Invocation) -> dict[str, object]:
    clients, table, trail = runtime.CLIENTS, run.state_table(), run.settings.capture_trail_name
    ddb = clients.dynamodb
    result = run_weekly_report(
        run.findings_store(),
        clients.s3,
        clients.sns,
        ReportAnnouncements(ddb, table),
        WeeklyReportParams.from_settings(run.settings),
        now=schedule.time,
        ledger=LedgerStore(ddb, table),
        capture=CaptureStore(ddb, table, trail) if trail else None,
        coverage=AuditCycleStore(ddb, table),
        unreadable=run.unreadable_store(),
        sightings=run.sighting_store(),
    )
    return result.as_dict()

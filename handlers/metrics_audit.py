"""Metrics audit: an hourly EventBridge schedule -> live audit (inventory, CloudWatch, Contributor Insights) ->
findings lifecycle -> SNS (``auditor.service.metrics_audit.run_metrics_audit``).

Read-only towards the audited tables. The scheduled event's ``time`` is the audit's ``now``: a retried event audits
the same window, and decides billing when that time is in the UTC hour ``BILLING_AUDIT_HOUR_UTC``, like the first
attempt. Errors propagate: the invocation fails and the next schedule (or the asynchronous retry) runs again; failed
publishes stay in the outbox for the next run.
"""

from __future__ import annotations

import boto3
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel

from auditor.service import health
from auditor.service.metrics_audit import MetricsAuditParams, OrgScope, run_metrics_audit
from auditor.state.audit_cycle import AuditCycleStore
from auditor.state.ledger_store import LedgerStore
from auditor.state.table_item_sizes import TableItemSizes
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime


@lambda_runtime(EventBridgeModel)
def lambda_handler(schedule: EventBridgeModel, run: Invocation) -> dict[str, object]:
    store, sns, ddb = run.findings_store(), runtime.CLIENTS.sns, runtime.CLIENTS.dynamodb
    params = MetricsAuditParams.from_settings(run.settings)
    org = OrgScope.from_settings(run.settings)
    ledger = LedgerStore(ddb, store.table_name)
    item_sizes = TableItemSizes(ddb, store.table_name)  # each table's CloudWatch item size, for the evaluator
    if org.enabled:  # several accounts and/or Regions, each through the member role; a cycle may span invocations
        cycles = AuditCycleStore(ddb, store.table_name, retention_days=run.settings.finding_retention_days)
        org_result = org.run(
            boto3.Session(),
            store,
            cycles,
            sns,
            params,
            schedule.time,
            time_left=run.time_left,
            ledger=ledger,
            item_sizes=item_sizes,
        )
        run.emit(health.org_audit(org_result))
        return org_result.as_dict()
    result = run_metrics_audit(
        runtime.CLIENTS.audit,
        store,
        sns,
        params,
        now=schedule.time,
        time_left=run.time_left,
        ledger=ledger,
        item_sizes=item_sizes,
    )
    run.emit(health.recorded(result.recorded))
    return result.as_dict()

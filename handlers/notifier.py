"""Notifier Lambda: SNS finding events and run digests -> Slack incoming webhook (``auditor.service.notify``).

The weekly report's announcement comes through the same topic and is posted as a compact summary with a button to
the report. A message that still cannot be delivered after the notifier's own retries makes the handler raise, so
Lambda retries it and then parks it in the dead-letter queue: delayed or parked, never dropped. Each post is recorded
in the state table, so a message Slack accepted already (SNS delivered it twice, Lambda retried it) is not posted
again, and one that may have been (a stop between Slack's answer and the record) is posted again and counted in
``RepeatedPublishes``. The failure policy is in docs/sinks.md.
"""

from __future__ import annotations

import structlog
from aws_lambda_powertools.utilities.parser.models import SnsModel

from auditor.messages import FindingNotification
from auditor.service import health
from auditor.service.notify import notify
from auditor.sinks.slack import SlackDeliveryError
from handlers import runtime
from handlers.runtime import Invocation, lambda_runtime

#: Seconds kept back from the invocation's remaining time when retrying (logging, returning).
TIME_RESERVE_SECONDS = 2.0


@lambda_runtime(SnsModel)
def lambda_handler(sns: SnsModel, run: Invocation) -> dict[str, int]:
    events = [
        FindingNotification(
            message_id=r.Sns.MessageId,
            message=str(r.Sns.Message),
            attributes={name: attr.Value for name, attr in (r.Sns.MessageAttributes or {}).items()},
        )
        for r in sns.Records
    ]
    budget = run.time_left() - TIME_RESERVE_SECONDS
    try:
        result = notify(
            events,
            secrets_client=runtime.CLIENTS.secretsmanager,
            settings=run.settings,
            budget_seconds=budget,
            deliveries=run.slack_deliveries(),
        )
    except SlackDeliveryError as exc:
        run.emit(health.slack(exc.result) if exc.result is not None else [])
        raise
    run.emit(health.slack(result))
    structlog.get_logger(__name__).info("notifier_done", **result.as_dict())
    return result.as_dict()

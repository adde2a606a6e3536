"""Notifier Lambda: SNS finding events and run digests -> Slack incoming webhook (``auditor.service.notify``).

The weekly report's announcement comes through the same topic (message attribute ``kind`` = ``weekly_report``) and
is posted as a compact summary with a button to the report (``auditor.sinks.slack.render_weekly_summary``).

Failure policy. SNS invokes this function asynchronously, one message per invocation. The notifier retries the
webhook itself (``SLACK_MAX_ATTEMPTS`` attempts of ``SLACK_TIMEOUT_SECONDS``, backoff with jitter, within the
invocation's remaining time). If a message still cannot be delivered the handler **raises**: Lambda's
asynchronous invocation retries the event (up to ``MaximumRetryAttempts``, with its own growing delay), and once
those are exhausted the event goes to the function's on-failure destination / dead-letter queue, which
template.yaml must configure. The alert is therefore delayed or parked, never dropped. An event that does not
parse as an SNS event also raises (it reaches the dead-letter queue intact). A message whose ``finding_json`` is
unusable is still posted, as its readable text.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
import structlog
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import SnsModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from auditor.config import get_settings
from auditor.observability import configure_logging
from auditor.service.notify import SnsRecord, notify

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

#: Seconds kept back from the invocation's remaining time when retrying (logging, returning).
TIME_RESERVE_SECONDS = 2.0


@cache
def secrets_client() -> SecretsManagerClient:
    """One Secrets Manager client per container (honours ``AWS_ENDPOINT_URL``)."""
    return boto3.client("secretsmanager")


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    settings = get_settings()
    configure_logging(settings.log_level)
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(
        function_name=context.function_name, function_request_id=context.aws_request_id
    )
    records = parse(event=event, model=SnsModel).Records
    events = [
        SnsRecord(
            message_id=r.Sns.MessageId,
            message=str(r.Sns.Message),
            attributes={name: attr.Value for name, attr in (r.Sns.MessageAttributes or {}).items()},
        )
        for r in records
    ]
    budget = context.get_remaining_time_in_millis() / 1000 - TIME_RESERVE_SECONDS
    result = notify(events, secrets_client=secrets_client(), settings=settings, budget_seconds=budget)
    structlog.get_logger(__name__).info("notifier_done", **result.as_dict())
    return result.as_dict()

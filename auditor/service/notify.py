"""The notifier's use case: SNS messages from the findings topic -> Slack.

What reaches the notifier is decided by the Slack subscription's filter policy (template.yaml): by default the run
digests (one per evaluation or audit run, kind ``digest``) at ``SlackMinSeverity`` or above and the weekly report
announcements; with ``SlackMessages=finding`` every finding event at ``SlackMinSeverity`` or above instead. This
module hands the received messages (:class:`auditor.messages.FindingNotification`) to the Slack sink, which renders
each one (:mod:`auditor.sinks.slack_blocks`: a digest lists only findings at the minimum severity and posts nothing
when none reaches it) and delivers it with retries (:func:`auditor.sinks.slack.notify_slack`), recording each post in
the state table (:mod:`auditor.state.slack_deliveries`) so that a message is posted once, or again counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from auditor.messages import FindingNotification
from auditor.sinks.slack import NotifyResult, notify_slack

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

    from auditor.config import Settings
    from auditor.state.slack_deliveries import DeliveryLog


def notify(
    records: Iterable[FindingNotification],
    *,
    secrets_client: SecretsManagerClient,
    settings: Settings,
    budget_seconds: float | None,
    deliveries: DeliveryLog | None = None,
) -> NotifyResult:
    """Post every record to Slack; raises :class:`auditor.sinks.slack.SlackDeliveryError` if any was not delivered.

    ``deliveries`` (the state table's delivery records) skips a message Slack accepted already and counts a
    possible repeat."""
    return notify_slack(
        list(records),
        secrets_client=secrets_client,
        settings=settings,
        budget_seconds=budget_seconds,
        deliveries=deliveries,
    )

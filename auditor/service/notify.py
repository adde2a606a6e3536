"""The notifier's use case: SNS messages from the findings topic -> Slack.

What reaches the notifier is decided by the Slack subscription's filter policy (template.yaml): by default the run
digests (one per evaluation or audit run, kind ``digest``) at ``SlackMinSeverity`` or above and the weekly report
announcements; with ``SlackMessages=finding`` every finding event at ``SlackMinSeverity`` or above instead. This
module turns the parsed SNS records into :class:`auditor.sinks.slack_blocks.FindingNotification` and hands them to
the Slack sink, which renders each one (:mod:`auditor.sinks.slack_blocks`: a digest lists only findings at the
minimum severity and posts nothing when none reaches it) and delivers it with retries
(:func:`auditor.sinks.slack.notify_slack`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from auditor.sinks.slack import NotifyResult, notify_slack
from auditor.sinks.slack_blocks import FindingNotification

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

    from auditor.config import Settings


@dataclass(frozen=True, slots=True)
class SnsRecord:
    """What the notifier needs of one SNS record: its id, text and string attributes."""

    message_id: str
    message: str
    attributes: Mapping[str, str]


def notifications(records: Iterable[SnsRecord]) -> list[FindingNotification]:
    """The SNS records as notifications for the Slack sink."""
    return [FindingNotification(message_id=r.message_id, message=r.message, attributes=r.attributes) for r in records]


def notify(
    records: Iterable[SnsRecord],
    *,
    secrets_client: SecretsManagerClient,
    settings: Settings,
    budget_seconds: float | None,
) -> NotifyResult:
    """Post every record to Slack; raises :class:`auditor.sinks.slack.SlackDeliveryError` if any was not delivered."""
    return notify_slack(
        notifications(records), secrets_client=secrets_client, settings=settings, budget_seconds=budget_seconds
    )

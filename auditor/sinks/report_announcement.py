"""The weekly report's announcement on the findings topic (one SNS publish).

The use case that decides when to announce is :mod:`auditor.service.weekly_report`; the once-per-week marker that
keeps the announcement from going out twice is in the state table (:mod:`auditor.state.report_store`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

__all__ = ["publish_announcement"]


def publish_announcement(
    sns: SNSClient, topic_arn: str, *, subject: str, message: str, attributes: dict[str, str]
) -> str:
    """Publish the weekly summary on the findings topic (string message attributes); the SNS message id."""
    response = sns.publish(
        TopicArn=topic_arn,
        Subject=subject,
        Message=message,
        MessageAttributes={name: {"DataType": "String", "StringValue": value} for name, value in attributes.items()},
    )
    return response["MessageId"]

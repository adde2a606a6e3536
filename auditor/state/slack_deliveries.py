"""The notifier's delivery record per message (``pk=SLACK#{id}``): Slack is posted a message once, or again counted.

An incoming webhook has no idempotency key, so the notifier marks a message ``posting`` (conditional put) before the
post and ``posted`` after Slack accepted it. Powertools idempotency keeps the same two states, but re-runs a stale
in-progress record without saying so and deletes its record when the function raises: what the notifier needs is to
know that a message found ``posting`` may have reached Slack already (a stop between Slack's answer and the mark, or
a post whose answer was lost), so that its post is counted as a possible repeat. The items and the outcomes are in
docs/state-table.md and docs/sinks.md.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from auditor.models.finding import isoformat_z, utc
from auditor.state import keys
from auditor.state.attributes import number as _n
from auditor.state.attributes import retention
from auditor.state.attributes import string as _s

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

#: Days a delivery record is kept: as long as the notifier's dead-letter queue keeps a message (14 days), so that a
#: message redriven from it is still recognised.
SLACK_DELIVERY_RETENTION_DAYS = 14

POSTING, POSTED, FAILED = "posting", "posted", "failed"


class Claim(Enum):
    """What :meth:`SlackDeliveries.begin` found for a message."""

    #: Never posted (or a post Slack refused): post it.
    NEW = "new"
    #: Marked ``posting`` by an earlier delivery that never marked it ``posted``: Slack may have it (post, counted).
    UNSURE = "unsure"
    #: Slack accepted it already: skip it.
    POSTED = "posted"


class DeliveryLog(Protocol):
    """What the Slack sink needs from the delivery records (:class:`SlackDeliveries`)."""

    def begin(self, message_key: str, now: datetime) -> tuple[Claim, str]:
        """Mark the message ``posting``; (what was found, this delivery's token)."""
        ...

    def posted(self, message_key: str, token: str, now: datetime) -> None: ...

    def refused(self, message_key: str, token: str, now: datetime) -> None: ...


class SlackDeliveries:
    """The delivery records of the Slack notifier in the state table (see the module docstring)."""

    def __init__(
        self, client: DynamoDBClient, table_name: str, *, retention_days: int = SLACK_DELIVERY_RETENTION_DAYS
    ) -> None:
        self._client = client
        self._table = table_name
        self._retention = retention(retention_days)

    def _key(self, message_key: str) -> dict[str, AttributeValueTypeDef]:
        return {keys.PK: _s(keys.slack_delivery_pk(message_key)), keys.SK: _s(keys.SLACK_DELIVERY_SK)}

    def _expires(self, now: datetime) -> AttributeValueTypeDef:
        return _n(int((utc(now) + self._retention).timestamp()))

    def begin(self, message_key: str, now: datetime) -> tuple[Claim, str]:
        """Mark the message ``posting`` unless it is there already (a refused one is taken over): one conditional put.

        The item carries a fresh token, so that a put botocore sent again after its answer was lost recognises
        its own item. Errors other than the condition raise (the message then fails and is retried: delayed).
        """
        token = uuid.uuid4().hex
        item = self._key(message_key) | {
            "state": _s(POSTING),
            "token": _s(token),
            "posting_at": _s(isoformat_z(now)),
            keys.TTL_ATTR: self._expires(now),
        }
        try:
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk) OR #s = :failed",
                ExpressionAttributeNames={"#pk": keys.PK, "#s": "state"},
                ExpressionAttributeValues={":failed": _s(FAILED)},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            old: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
            state = old.get("state", {}).get("S")
            if old.get("token", {}).get("S") == token:  # our own put, sent again by botocore
                return Claim.NEW, token
            return (Claim.POSTED if state == POSTED else Claim.UNSURE), token
        return Claim.NEW, token

    def posted(self, message_key: str, token: str, now: datetime) -> None:
        """Record that Slack accepted the message (whoever marked it ``posting``)."""
        values = {":posted": _s(POSTED), ":now": _s(isoformat_z(now)), ":token": _s(token), ":exp": self._expires(now)}
        self._update(message_key, "SET #s = :posted, posted_at = :now, #t = :token, #e = :exp", values)

    def refused(self, message_key: str, token: str, now: datetime) -> None:
        """Record that Slack answered this delivery's post with a refusal (never posted): the next one is new.

        Only while the item is still this delivery's (another delivery may have posted it meanwhile).
        """
        values = {":failed": _s(FAILED), ":now": _s(isoformat_z(now)), ":token": _s(token), ":posting": _s(POSTING)}
        self._update(message_key, "SET #s = :failed, failed_at = :now", values, "#t = :token AND #s = :posting")

    def _update(
        self, message_key: str, expression: str, values: dict[str, AttributeValueTypeDef], condition: str = ""
    ) -> None:
        """One UpdateItem of the record (a condition that does not hold leaves it alone)."""
        names = {"#s": "state", "#t": "token", "#e": keys.TTL_ATTR}
        used = {n: v for n, v in names.items() if n in expression or n in condition}
        extra = {"ConditionExpression": condition} if condition else {}
        try:
            self._client.update_item(
                TableName=self._table,
                Key=self._key(message_key),
                UpdateExpression=expression,
                ExpressionAttributeNames=used,
                ExpressionAttributeValues=values,
                **extra,  # type: ignore[arg-type]
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

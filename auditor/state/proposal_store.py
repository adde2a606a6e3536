"""The scheduled model review's proposals in the state table (``pk=PROPOSAL#{id}``, ``sk=PROPOSAL``): each proposal
under its stable id with the fingerprint of its change last announced, so that a proposal is announced once when it
is new and once more each time its change differs (:mod:`auditor.service.model_review` decides; docs/state-table.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal

from botocore.exceptions import ClientError

from auditor.models.finding import isoformat_z
from auditor.state import keys
from auditor.state.attributes import string as _s

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["PROPOSAL_RETENTION", "PROPOSAL_SK", "Claim", "ProposalStore", "proposal_pk"]

PROPOSAL_SK: Final = "PROPOSAL"
#: How long a proposal no run made again is kept (its id then announces as new if it comes back).
PROPOSAL_RETENTION: Final = timedelta(days=90)


def proposal_pk(proposal_id: str) -> str:
    """The partition key of one proposal (``sk`` is ``PROPOSAL``)."""
    return f"PROPOSAL#{proposal_id}"


@dataclass(frozen=True, slots=True)
class Claim:
    """A proposal this run announces: ``new`` (its id was not stored) or ``changed`` (stored with another change
    fingerprint, ``previous``)."""

    status: Literal["new", "changed"]
    previous: str | None


class ProposalStore:
    """One item per proposal id. Attributes: ``fingerprint`` (of the change announced), ``kind``, ``table``,
    ``proposal_json``, ``first_seen``, ``last_seen``, ``message_id``, ``announced_at``, ``expires_at`` (TTL: the last
    run that made it plus :data:`PROPOSAL_RETENTION`)."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def _key(self, proposal_id: str) -> dict[str, AttributeValueTypeDef]:
        return {keys.PK: _s(proposal_pk(proposal_id)), keys.SK: _s(PROPOSAL_SK)}

    def claim(self, proposal_id: str, fingerprint: str, fields: dict[str, str], now: datetime) -> Claim | None:
        """Store the proposal as seen ``now``; a :class:`Claim` when this run announces it (its id is new, or its
        fingerprint changed: one run wins a race), None when it was announced with this fingerprint already."""
        values: dict[str, AttributeValueTypeDef] = {
            ":f": _s(fingerprint),
            ":now": _s(isoformat_z(now)),
            ":ttl": {"N": str(int((now + PROPOSAL_RETENTION).timestamp()))},
            **{f":{name}": _s(value) for name, value in fields.items()},
        }
        updates = ", ".join(f"#{name} = :{name}" for name in fields)
        names = {"#pk": keys.PK, "#fp": "fingerprint", "#ttl": keys.TTL_ATTR, **{f"#{n}": n for n in fields}}
        try:
            old = self._client.update_item(
                TableName=self._table,
                Key=self._key(proposal_id),
                UpdateExpression=(
                    f"SET #fp = :f, last_seen = :now, first_seen = if_not_exists(first_seen, :now), #ttl = :ttl, "
                    f"{updates}"
                ),
                ConditionExpression="attribute_not_exists(#pk) OR #fp <> :f",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="UPDATED_OLD",
            ).get("Attributes", {})
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            self._client.update_item(
                TableName=self._table,
                Key=self._key(proposal_id),
                UpdateExpression="SET last_seen = :now, #ttl = :ttl",
                ExpressionAttributeNames={"#ttl": keys.TTL_ATTR},
                ExpressionAttributeValues={":now": values[":now"], ":ttl": values[":ttl"]},
            )
            return None
        previous = old.get("fingerprint", {}).get("S")
        return Claim("changed" if previous else "new", previous)

    def release(self, proposal_id: str, claim: Claim) -> None:
        """Undo a claim whose announcement failed (the next run announces it): forget a new proposal, give a changed
        one its previous fingerprint back."""
        if claim.previous is None:
            self._client.delete_item(TableName=self._table, Key=self._key(proposal_id))
            return
        self._client.update_item(
            TableName=self._table,
            Key=self._key(proposal_id),
            UpdateExpression="SET fingerprint = :f",
            ExpressionAttributeValues={":f": _s(claim.previous)},
        )

    def mark_announced(self, proposal_id: str, message_id: str, now: datetime) -> None:
        self._client.update_item(
            TableName=self._table,
            Key=self._key(proposal_id),
            UpdateExpression="SET message_id = :m, announced_at = :at",
            ExpressionAttributeValues={":m": _s(message_id), ":at": _s(isoformat_z(now))},
        )

    def get(self, proposal_id: str) -> dict[str, Any] | None:
        """The stored item (attribute values as DynamoDB returns them), None when absent."""
        item = self._client.get_item(TableName=self._table, Key=self._key(proposal_id), ConsistentRead=True)
        return item.get("Item")

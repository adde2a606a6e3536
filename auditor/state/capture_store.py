"""The capture controller's items in the state table (key design: :mod:`auditor.state.keys`, docs/state-table.md).

The controller's state and each slice's plan, written in one conditional transaction (of two controller runs at
once, one wins and the other writes nothing); the evaluator reads the plans of the windows it evaluates
(:meth:`CaptureStore.plans`). The items are in docs/state-table.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
from botocore.exceptions import ClientError

from auditor.state import keys
from auditor.state.paging import query_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef

__all__ = ["PLAN_RETENTION_DAYS", "CaptureStore"]

PLAN_RETENTION_DAYS = 14
#: Plans read per evaluation are bounded by the period asked for (one per 5-minute slice); this caps the pages.
MAX_PLAN_PAGES = 100


class CaptureStore:
    """The controller's state and plans for one trail (client injected; build it with ``RETRY_CONFIG``)."""

    def __init__(self, client: DynamoDBClient, table: str, trail: str) -> None:
        self._ddb = client
        self._table = table
        self._pk = keys.capture_pk(trail)

    def load_state(self) -> tuple[int, dict[str, Any]]:
        """(version, state) of the controller; (0, {}) before its first run."""
        item = self._ddb.get_item(
            TableName=self._table,
            Key={keys.PK: {"S": self._pk}, keys.SK: {"S": keys.CAPTURE_STATE_SK}},
            ConsistentRead=True,
        ).get("Item")
        if not item:
            return 0, {}
        return int(item["version"]["N"]), orjson.loads(item["state"]["S"])

    def record(
        self, version: int, state: dict[str, Any], plan: dict[str, Any] | None, slice_start: int, now: datetime
    ) -> bool:
        """Write the state (version ``version`` -> ``version + 1``) and the plan's item, atomically.

        False when another run moved the version first (nothing written); any other error is raised.
        """
        condition = "attribute_not_exists(#pk)" if version == 0 else "#v = :v"
        put_state: dict[str, Any] = {
            "Put": {
                "TableName": self._table,
                "Item": {
                    keys.PK: {"S": self._pk},
                    keys.SK: {"S": keys.CAPTURE_STATE_SK},
                    "version": {"N": str(version + 1)},
                    "state": {"S": orjson.dumps(state).decode()},
                    "updated_at": {"S": now.isoformat()},
                },
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#v": "version"} if version else {"#pk": keys.PK},
                **({"ExpressionAttributeValues": {":v": {"N": str(version)}}} if version else {}),
            }
        }
        items: list[Any] = [put_state]
        if plan is not None:
            items.append(
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": {
                            keys.PK: {"S": self._pk},
                            keys.SK: {"S": keys.capture_plan_sk(slice_start)},
                            "plan": {"S": orjson.dumps(plan).decode()},
                            keys.TTL_ATTR: {"N": str(int(now.timestamp()) + PLAN_RETENTION_DAYS * 86_400)},
                        },
                    }
                }
            )
        try:
            self._ddb.transact_write_items(TransactItems=items)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in (
                "TransactionCanceledException",
                "ConditionalCheckFailedException",
            ):
                return False
            raise
        return True

    def any_plan(self, start: int, end: int) -> bool:
        """Whether the controller recorded a plan with ``start <= slice_start < end`` (one item read at most)."""
        page = self._ddb.query(
            TableName=self._table,
            KeyConditionExpression="#pk = :pk AND #sk BETWEEN :a AND :b",
            ExpressionAttributeNames={"#pk": keys.PK, "#sk": keys.SK},
            ExpressionAttributeValues={
                ":pk": {"S": self._pk},
                ":a": {"S": keys.capture_plan_sk(max(0, start))},
                ":b": {"S": keys.capture_plan_sk(max(0, end - 1))},
            },
            ProjectionExpression="#pk",
            Limit=1,
        )
        return bool(page.get("Items"))

    def plans(self, start: int, end: int) -> list[dict[str, Any]]:
        """The recorded slice plans with ``start <= slice_start < end``, oldest first (an unreadable one skipped)."""
        out: list[dict[str, Any]] = []
        params: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :a AND :b",
            "ExpressionAttributeNames": {"#pk": keys.PK, "#sk": keys.SK},
            "ExpressionAttributeValues": {
                ":pk": {"S": self._pk},
                ":a": {"S": keys.capture_plan_sk(max(0, start))},
                ":b": {"S": keys.capture_plan_sk(max(0, end - 1))},
            },
        }
        for item in query_items(self._ddb, params, max_pages=MAX_PLAN_PAGES):
            try:
                doc = orjson.loads(item["plan"]["S"])
            except (KeyError, TypeError, orjson.JSONDecodeError):
                continue
            if isinstance(doc, dict):
                out.append(doc)
        return out

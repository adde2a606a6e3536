"""Every page of a DynamoDB Query on the state table: the stores read their partitions and indexes through
:func:`query_items`, which follows ``LastEvaluatedKey``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef

__all__ = ["query_items"]


def query_items(
    client: DynamoDBClient, params: QueryInputTypeDef, *, max_pages: int | None = None
) -> Iterator[dict[str, Any]]:
    """The items of the query's pages in order, up to ``max_pages`` pages (every page when None).

    ``params`` takes each page's ``ExclusiveStartKey``."""
    pages = 0
    while True:
        page = client.query(**params)
        yield from page.get("Items", [])
        pages += 1
        last = page.get("LastEvaluatedKey")
        if not last or (max_pages is not None and pages >= max_pages):
            return
        params["ExclusiveStartKey"] = last

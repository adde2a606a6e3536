"""DynamoDB attribute values as the low-level client takes them (one string or number), and the retention every
store of ``auditor/state/`` gives its items (DynamoDB TTL), checked once."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef


def string(value: str) -> AttributeValueTypeDef:
    """``{"S": value}``."""
    return {"S": value}


def number(value: int | float) -> AttributeValueTypeDef:
    """``{"N": value}`` (DynamoDB takes numbers as text)."""
    return {"N": str(value)}


def retention(days: int) -> timedelta:
    """How long a store keeps its items: ``days`` (at least 1)."""
    if days < 1:
        raise ValueError("retention_days must be >= 1")
    return timedelta(days=days)

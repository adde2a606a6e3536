"""Typed records of the DynamoDB Streams path: item-size observations and the key helpers.

:mod:`auditor.sources.streams` builds these from stream records; detectors, sinks and services read them. The key
helpers give one text per key whatever its form (DynamoDB JSON or the plain form CloudTrail logs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Literal

import orjson

from auditor.models.dynamodb_size import ITEM_SIZE_LIMIT

__all__ = [
    "GROWTH_ATTRIBUTES",
    "INSUFFICIENT_VIEW_TYPES",
    "AttributeGrowth",
    "ItemSizeObservation",
    "StreamViewType",
    "TableRef",
    "canonical_key",
    "plain_key",
]

StreamViewType = Literal["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"]
#: View types whose records carry no ``NewImage``: item sizes cannot be watched on such a stream.
INSUFFICIENT_VIEW_TYPES: Final = frozenset({"KEYS_ONLY", "OLD_IMAGE"})
#: How many grown attributes an observation keeps (largest growth first).
GROWTH_ATTRIBUTES: Final = 3


# ----------------------------------------------------------------------------------------------------------- keys


def _plain_value(typed: Any) -> Any:
    """``{"S": "a"}`` -> ``"a"``; ``{"N": "12"}`` -> ``12`` (an int when integral and below 2**53, else the text);
    ``{"B": "..."}`` -> the base64 text. Key attributes are only ever S, N or B."""
    if isinstance(typed, Mapping) and len(typed) == 1:
        ((tag, value),) = typed.items()
        if tag == "N" and isinstance(value, str):
            try:
                number = Decimal(value)
            except InvalidOperation:
                return value
            if number.is_finite() and number == number.to_integral_value() and abs(number) < 2**53:
                return int(number)
            return value
        if tag in ("S", "B"):
            return value
    return typed


def plain_key(key: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB JSON key as CloudTrail logs keys: attribute name -> plain value (``{"pk": "USER#1"}``)."""
    return {name: _plain_value(value) for name, value in key.items()}


def _number_text(value: Any) -> str | None:
    """Normalised decimal text of a number (``1.50`` -> ``"1.5"``, ``1E+2`` -> ``"100"``), None if not one."""
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return None
    if not number.is_finite():
        return None
    return "0" if number == 0 else format(number.normalize(), "f")


def _canonical_value(value: Any) -> str:
    if isinstance(value, Mapping) and len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "N":
            return _number_text(inner) or str(inner)
        if tag in ("S", "B") and isinstance(inner, str):
            return inner
    if isinstance(value, str):
        return value
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return _number_text(value) or str(value)
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()


def canonical_key(key: Mapping[str, Any]) -> str:
    """One text per key, whatever its form: DynamoDB JSON (``{"pk": {"S": "a"}, "n": {"N": "1.50"}}``) and the
    plain form CloudTrail logs (``{"pk": "a", "n": 1.5}``) give the same result (sorted JSON of name -> text).

    Numbers (``N`` values and JSON numbers) are normalised (``{"N": "1.50"}``, ``1.5`` -> ``"1.5"``); strings are
    kept as they are. So a number matches a string holding its normalised text (``12`` and ``"12"``), which cannot
    confuse two keys of one table (each key attribute has one type) and matches CloudTrail logs that quote numbers;
    a quoted number that is not normalised (``"1.50"``) does not match ``{"N": "1.50"}``.
    """
    return orjson.dumps(
        {str(name): _canonical_value(value) for name, value in key.items()}, option=orjson.OPT_SORT_KEYS
    ).decode()


# ----------------------------------------------------------------------------------------------------------- model


@dataclass(frozen=True, slots=True)
class TableRef:
    """The audited table a record belongs to (from ``eventSourceARN``)."""

    account: str | None
    region: str | None
    table: str


@dataclass(frozen=True, slots=True)
class AttributeGrowth:
    """One top-level attribute's size (name included) in the old and new image."""

    name: str
    old_bytes: int
    new_bytes: int

    @property
    def delta(self) -> int:
        return self.new_bytes - self.old_bytes


@dataclass(frozen=True, slots=True)
class ItemSizeObservation:
    """The exact size of one written item, from one stream record."""

    ref: TableRef
    #: The key as the record carries it (DynamoDB JSON).
    key: dict[str, Any]
    event_id: str
    event_name: Literal["INSERT", "MODIFY"]
    sequence_number: str
    #: ``ApproximateCreationDateTime``, epoch seconds.
    time: float
    view_type: StreamViewType
    #: ``item_size(NewImage)``.
    size_bytes: int
    #: ``item_size(OldImage)`` when the record has one (``NEW_AND_OLD_IMAGES`` MODIFY), else None.
    old_size_bytes: int | None = None
    #: Attributes that grew between the images, largest growth first (at most ``GROWTH_ATTRIBUTES``).
    growth: tuple[AttributeGrowth, ...] = ()
    #: The largest top-level attribute of the new image and its size (name included).
    largest_attribute: str | None = None
    largest_attribute_bytes: int = 0

    @property
    def account(self) -> str | None:
        return self.ref.account

    @property
    def region(self) -> str | None:
        return self.ref.region

    @property
    def table(self) -> str:
        return self.ref.table

    @property
    def plain_key(self) -> dict[str, Any]:
        return plain_key(self.key)

    @property
    def percent_of_limit(self) -> float:
        return 100.0 * self.size_bytes / ITEM_SIZE_LIMIT

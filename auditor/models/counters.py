"""Run counters kept in dataclasses (ingest, stream and API statistics): one way to add one set into another.

Plain Python, no pydantic: the CloudTrail kernel uses it too."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def add_counts(into: DataclassInstance, other: DataclassInstance) -> None:
    """Add every number field (``int`` or ``float``, not ``bool``) of ``other`` into the same field of ``into``, two
    instances of one dataclass; its other fields (lists, maps, text) are the caller's to merge."""
    for f in fields(into):
        value = getattr(other, f.name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            setattr(into, f.name, getattr(into, f.name) + value)

"""The base of the auditor's pydantic records: a record is immutable once built, and a field it does not declare is
an error (in its input as in its constructor)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["FrozenModel"]


class FrozenModel(BaseModel):
    """A pydantic model that cannot be changed once built and rejects fields it does not declare."""

    model_config = ConfigDict(frozen=True, extra="forbid")

"""``AccessPattern``: one row of the access-pattern catalogue (docs/contract.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class AccessPattern(BaseModel):
    """Requests grouped by table, index, operation and generalised key template."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    table: str
    index: str | None
    operation: str
    key_template: str | None
    requests: int
    share: float
    efficient: bool

"""``AccessPattern``: one row of the access-pattern catalogue (docs/contract.md)."""

from __future__ import annotations

from pydantic import Field

from auditor.models.base import FrozenModel


class AccessPattern(FrozenModel):
    """API calls grouped by account, region, table, index, operation and generalised key template.

    ``requests`` counts API calls and ``share`` is of the table's calls in that account and region. ``items`` counts
    the item accesses of those calls (a BatchGetItem of 100 keys is 1 request and 100 items). ``errors`` counts the
    calls that failed, by error code.
    """

    account: str | None = None
    region: str | None = None
    table: str
    index: str | None
    operation: str
    key_template: str | None
    requests: int
    share: float
    efficient: bool
    errors: dict[str, int] = Field(default_factory=dict)
    items: int | None = None

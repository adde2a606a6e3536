"""How the weekly report reads a finding: its numbers over the report's period (its totals, else its evidence), the
money it saves, and keys and principals as people read them. Shared by the report's sections and its renderers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import orjson

from auditor.models.finding import Finding, FindingKind, measure


def format_key(key: Any) -> str:
    """A logged key as ``attr=value, attr=value`` (non-string values as compact JSON)."""
    if key is None:
        return "(unknown key)"
    if isinstance(key, Mapping):
        return ", ".join(f"{k}={v if isinstance(v, str) else _compact(v)}" for k, v in key.items())
    return key if isinstance(key, str) else _compact(key)


def _compact(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def principal_name(principal: str | None) -> str:
    """``arn:aws:iam::1:role/x`` -> ``role/x``; anything else unchanged; None -> ``(unknown principal)``."""
    if not principal:
        return "(unknown principal)"
    if principal.startswith("arn:") and principal.count(":") >= 5:
        return principal.split(":", 5)[5] or principal
    return principal


def number_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def int_or_none(value: Any) -> int | None:
    n = number_or_none(value)
    return None if n is None else int(n)


def period_count(finding: Finding) -> int:
    """The finding's measure over the report's period: its totals, else (stored without totals) its evidence."""
    if finding.totals is not None:
        return finding.totals.count
    return measure(finding.kind, finding.evidence)


def period_share(finding: Finding) -> float:
    """A share-stated finding's share over the report's period (totals' count over their denominator), else (stored
    without the denominator) its window's share from the evidence."""
    if finding.totals is not None and (share := finding.totals.share) is not None:
        return share
    return min(1.0, max(0.0, number_or_none(finding.evidence.get("share")) or 0.0))


def period_per_hour(finding: Finding) -> float | None:
    """The busiest window's rate per hour in the period (None: under an hour observed, or no totals)."""
    return finding.totals.peak_per_hour if finding.totals is not None else None


#: Where the money of a finding kind comes from: its savings estimate, or what the unused resource costs a month.
SAVINGS_SOURCES: dict[FindingKind, tuple[str, str]] = {
    FindingKind.BILLING_MODE: ("billing mode", "monthly_savings"),
    FindingKind.TABLE_CLASS: ("table class", "monthly_savings"),
    FindingKind.IDLE_TABLE: ("idle tables", "monthly_cost"),
    FindingKind.UNUSED_INDEX: ("unused indexes", "monthly_cost"),
}


def savings_source(finding: Finding) -> str | None:
    """The headline's breakdown line the finding's money goes to (None: a finding kind without money)."""
    source = SAVINGS_SOURCES.get(finding.kind)
    return source[0] if source is not None else None


def monthly_savings(finding: Finding) -> float:
    """Dollars per month the fix saves: a billing or table-class finding's savings estimate, an idle table's or an
    unused index's monthly cost (0 when the finding carries no cost estimate)."""
    if finding.evidence.get("preliminary") is True:  # too little data: never part of a savings figure
        return 0.0
    source = SAVINGS_SOURCES.get(finding.kind)
    value = number_or_none(finding.evidence.get(source[1] if source is not None else "monthly_savings"))
    return max(0.0, value) if value is not None else 0.0


def source_count(finding: Finding, source: str) -> int:
    """The finding's period count as ``source`` counted it (0 when that source did not see it)."""
    totals = finding.totals
    if totals is not None and totals.by_source is not None:
        part = totals.by_source.get(source)
        return part.count if part is not None else 0
    return period_count(finding) if finding.evidence.get("source") == source else 0

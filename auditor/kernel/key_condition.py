"""Generalise a Query's logged key condition into a template part (no values: CloudTrail logs none for it).

A Query logs ``keyConditionExpression`` (``#n0 = :v0 AND begins_with(#n1, :v1)``) with ``expressionAttributeNames``
(``{"#n0": "pk", "#n1": "sk"}``), or, from older SDKs, ``keyConditions`` (``{"pk": {"comparisonOperator": "EQ"}}``).
:func:`key_condition` turns either into ``(partition attribute, sort-key condition)``, e.g. ``("pk", "sk
begins_with ?")``. Never raises; text it cannot read gives None.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = ["key_condition", "key_condition_legacy"]

_AND = re.compile(r"\s+AND\s+", re.IGNORECASE)
_BEGINS = re.compile(r"^\(*\s*begins_with\s*\(\s*([^,\s)]+)\s*,", re.IGNORECASE)
_BETWEEN = re.compile(r"^\(*\s*([^\s()]+)\s+BETWEEN\s+", re.IGNORECASE)
_COMPARE = re.compile(r"^\(*\s*([^\s()=<>]+)\s*(=|<=|>=|<|>)\s*([^\s()]+)")
_LEGACY_OPS = {
    "EQ": "= ?",
    "LE": "<= ?",
    "LT": "< ?",
    "GE": ">= ?",
    "GT": "> ?",
    "BEGINS_WITH": "begins_with ?",
    "BETWEEN": "between ? and ?",
}


def _resolve(token: str, names: dict[str, str]) -> str:
    return names.get(token, token) if token.startswith("#") else token


def key_condition(expression: Any, names: Any) -> tuple[str, str] | None:
    """``(partition attribute, sort-key condition or "")`` of a ``keyConditionExpression``."""
    if not isinstance(expression, str) or not expression or len(expression) > 4096:
        return None
    pairs: tuple[tuple[str, str], ...] = ()
    if isinstance(names, dict):
        if len(names) == 1:  # the commonest (``{"#k": "pk"}``): the one pair, without a generator and a sort
            name, value = next(iter(names.items()))
            pairs = ((str(name), value),) if isinstance(value, str) else ()
        else:
            pairs = tuple(sorted((str(k), v) for k, v in names.items() if isinstance(v, str)))[:8]
    try:
        return _parse(expression, pairs)
    except Exception:  # never raise on garbage
        return None


@lru_cache(maxsize=2048)
def _parse(expression: str, pairs: tuple[tuple[str, str], ...]) -> tuple[str, str] | None:
    names = dict(pairs)
    parts = _AND.split(expression.strip())
    # ``x BETWEEN :a AND :b`` was split at its AND: glue the bound back on.
    merged: list[str] = []
    for part in parts:
        if merged and re.search(r"\sBETWEEN\s+\S+\s*$", merged[-1], re.IGNORECASE):
            merged[-1] = f"{merged[-1]} AND {part}"
        else:
            merged.append(part)
    partition: str | None = None
    sort = ""
    for part in merged[:2]:
        m = _BEGINS.match(part)
        if m:
            sort = f"{_resolve(m.group(1), names)} begins_with ?"
            continue
        m = _BETWEEN.match(part)
        if m:
            sort = f"{_resolve(m.group(1), names)} between ? and ?"
            continue
        m = _COMPARE.match(part)
        if m is None:
            return None
        left, op, right = m.groups()
        if left.startswith(":") and not right.startswith(":"):
            left = right  # ``:v = #n``
        attr = _resolve(left, names)
        if op == "=" and partition is None:
            partition = attr
        else:
            sort = f"{attr} {op} ?"
    if partition is None:
        return None
    return partition, sort


def key_condition_legacy(conditions: Any) -> tuple[str, str] | None:
    """The same from the legacy ``keyConditions`` map (``{attr: {comparisonOperator: EQ|BEGINS_WITH|...}}``)."""
    if not isinstance(conditions, dict) or not conditions:
        return None
    partition: str | None = None
    sort = ""
    for attr, spec in list(conditions.items())[:2]:
        if not isinstance(attr, str) or not isinstance(spec, dict):
            return None
        op = next((v for k, v in spec.items() if str(k).lower() == "comparisonoperator"), None)
        if not isinstance(op, str):
            return None
        if op.upper() == "EQ" and partition is None:
            partition = attr
        else:
            sort = f"{attr} {_LEGACY_OPS.get(op.upper(), op.lower() + ' ?')}"
    if partition is None:
        return None
    return partition, sort

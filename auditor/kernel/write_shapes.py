"""The shape of a base-table write, read from what CloudTrail logs of it, for metering its index writes.

:func:`write_shape` reads a write's shape (:data:`auditor.models.capacity.WRITE_PUT` and friends): a put's attribute
names (``item``; ``items`` in a transaction), an update's ``updateExpression`` with its ``expressionAttributeNames``
(CloudTrail logs no values: docs/capacity.md). The table windows count writes by shape
(:mod:`auditor.kernel.aggregates.index_writes`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from auditor.kernel.calls import Statement
from auditor.models.capacity import NAME_SEP, REMOVED_SEP, WRITE_DELETE, WRITE_PUT, WRITE_UPDATE

__all__ = ["MAX_SHAPE_CHARS", "statement_shape", "write_shape"]

#: The longest shape kept (a longer put is a put of unknown attributes, a longer update an unknown update).
MAX_SHAPE_CHARS: Final = 1000
_CLAUSE: Final = re.compile(r"(?<![#:\w])(SET|REMOVE|ADD|DELETE)\b", re.IGNORECASE)
_FIRST_NAME: Final = re.compile(r"\s*([#\w-]+)")


def _field(body: Mapping[str, Any], camel: str) -> Any:
    """``body[camel]``, or its lower-cased spelling (the general path's view of a request)."""
    value = body.get(camel)
    return body.get(camel.lower()) if value is None else value


def _names(value: Any) -> str | None:
    """A put's attribute names (CloudTrail logs a list of names; the API shape is a map), joined; None: unknown."""
    names = value if type(value) is list else list(value) if isinstance(value, Mapping) else None
    if not names:
        return None
    joined = NAME_SEP.join(sorted({n for n in names if type(n) is str}))
    return joined if joined and len(joined) < MAX_SHAPE_CHARS else None


def _actions(text: str) -> list[str]:
    """The comma-separated actions of one clause, commas inside parentheses kept (``list_append(a, :l)``)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth <= 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def _update(expression: str, names: Mapping[str, Any]) -> str:
    """The shape of an update expression: the top-level attributes its SET, ADD and DELETE actions change, then
    those its REMOVE actions remove (DynamoDB API Reference, UpdateItem ``UpdateExpression``)."""
    changed: set[str] = set()
    removed: set[str] = set()
    parts = _CLAUSE.split(expression)
    for keyword, text in zip(parts[1::2], parts[2::2], strict=False):
        for action in _actions(text):
            m = _FIRST_NAME.match(action)
            if m is None:
                continue
            name = names.get(m.group(1), m.group(1)) if m.group(1).startswith("#") else m.group(1)
            (removed if keyword.upper() == "REMOVE" else changed).add(str(name))
    shape = WRITE_UPDATE + NAME_SEP.join(sorted(changed)) + REMOVED_SEP + NAME_SEP.join(sorted(removed))
    return shape if len(shape) < MAX_SHAPE_CHARS else WRITE_UPDATE


#: The kind of write of each operation name an item access carries (a suffix decides any other).
_KINDS: Final = {
    "PutItem": WRITE_PUT,
    "UpdateItem": WRITE_UPDATE,
    "DeleteItem": WRITE_DELETE,
    "BatchWriteItem:Put": WRITE_PUT,
    "BatchWriteItem:Delete": WRITE_DELETE,
    "TransactWriteItems:Put": WRITE_PUT,
    "TransactWriteItems:Update": WRITE_UPDATE,
    "TransactWriteItems:Delete": WRITE_DELETE,
}
#: Shapes already read, by a put's names or an update's expression and names (bounded: cleared when full).
_SEEN: dict[tuple[Any, ...], str] = {}


def _kind(operation: str) -> str | None:
    """The kind of write of an operation name that :data:`_KINDS` does not list, by its suffix."""
    if operation.endswith(("Delete", "DeleteItem")):
        return WRITE_DELETE
    if operation.endswith(("Put", "PutItem")):
        return WRITE_PUT
    return WRITE_UPDATE if operation.endswith(("Update", "UpdateItem")) else None


def _remember(key: tuple[Any, ...], shape: str) -> str:
    if len(_SEEN) > 4096:
        _SEEN.clear()
    _SEEN[key] = shape
    return shape


def write_shape(operation: str, body: Mapping[str, Any] | None) -> str | None:
    """The shape of one base-table write (``operation`` as the item access names it: ``PutItem``,
    ``BatchWriteItem:Put``, ``TransactWriteItems:Update``, ...) from its logged request ``body``; None for what
    writes no item (a transaction's ConditionCheck)."""
    kind = _KINDS.get(operation)
    if kind is None:
        kind = _kind(operation)
    if kind is None or kind == WRITE_DELETE or body is None:
        return kind
    if kind == WRITE_PUT:
        logged = body.get("item")  # _field(body, "item"), then "items" (each its own lower-case spelling)
        if logged is None:
            logged = body.get("items")
        if type(logged) is list:
            key = tuple(logged)
            shape = _SEEN.get(key)
            if shape is not None:
                return shape
            names = _names(logged)
            return _remember(key, WRITE_PUT if names is None else WRITE_PUT + names)
        names = _names(logged)
        return WRITE_PUT if names is None else WRITE_PUT + names
    expression = body.get("updateExpression")
    if expression is None:
        expression = body.get("updateexpression")
    if type(expression) is str:
        # _field(body, "expressionAttributeNames") inline, into a name of its own (mypyc types a name once)
        aliases = body.get("expressionAttributeNames")
        if aliases is None:
            aliases = body.get("expressionattributenames")
        mapping = aliases if type(aliases) is dict or isinstance(aliases, Mapping) else {}
        key = (expression, *mapping.items())
        shape = _SEEN.get(key)
        return shape if shape is not None else _remember(key, _update(expression, mapping))
    legacy = _field(body, "attributeUpdates")
    if isinstance(legacy, Mapping) and legacy:  # the legacy AttributeUpdates: a DELETE action without a value removes
        removed = sorted(str(n) for n, a in legacy.items() if isinstance(a, Mapping) and a.get("action") == "DELETE")
        changed = sorted(str(n) for n in legacy if str(n) not in removed)
        return WRITE_UPDATE + NAME_SEP.join(changed) + REMOVED_SEP + NAME_SEP.join(removed)
    return WRITE_UPDATE


def statement_shape(statement: Statement | None) -> str | None:
    """The shape of a PartiQL write (a :class:`~auditor.kernel.calls.Statement`, or None): an INSERT puts the
    attributes it names (their values are redacted, not their names), a DELETE deletes, an UPDATE's SET list is not
    kept (an update of unknown attributes)."""
    verb = statement.verb if statement is not None else None
    if verb == "INSERT" and statement is not None:
        names = _names(list(statement.insert_names))
        return WRITE_PUT if names is None else WRITE_PUT + names
    return WRITE_DELETE if verb == "DELETE" else WRITE_UPDATE if verb == "UPDATE" else None

"""Key templates: generalise logged key values into access-pattern shapes.

``USER#123`` becomes ``USER#{n}``, a UUID becomes ``{uuid}``, ``ORDER#2026-12-01T10:00:00Z`` becomes
``ORDER#{datetime}``. Composite values are split on ``#`` and ``|`` and each part is generalised on its
own, so ``TENANT#acme#USER#42`` keeps its upper-case entity names (``TENANT#{s}#USER#{n}``): upper-case
parts (``USER``, ``PENDING``) are kept as literals, other words become ``{s}``. Numbers as key
values become ``{n}``. A template never contains more than ``MAX_LITERAL`` characters of one literal part,
so free text (names, emails) cannot explode the catalogue. A Query's template adds its sort-key condition
(:func:`query_template`), a PartiQL statement's names the attributes it constrains (:func:`statement_template`).
"""

from __future__ import annotations

import re
from typing import Any, Final

from auditor.kernel.calls import Statement

MAX_LITERAL = 24

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")
_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?")
_HEX = re.compile(r"[0-9a-fA-F]{8,}")
_ULID_LIKE = re.compile(r"[0-9A-Za-z_-]{16,}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
_DIGITS = re.compile(r"\d+")
_SPLIT = re.compile(r"([#|])")
_LITERAL = re.compile(r"(?:[A-Z0-9_.:/-]|\{n\})+")


def _part(part: str) -> str:
    if not part:
        return part
    if part.isdigit():
        return "{n}"
    if part.isalpha():
        # Entity names in single-table designs are upper case (USER, ORDER, PENDING); other words are data.
        return part if part.isupper() and len(part) <= MAX_LITERAL else "{s}"
    first = part[0]
    if len(part) == 36 and part[8] == "-" and _UUID.fullmatch(part):
        return "{uuid}"
    if first.isdigit():
        if _DATETIME.fullmatch(part):
            return "{datetime}"
        if _DATE.fullmatch(part):
            return "{date}"
        try:
            float(part)
        except ValueError:
            pass
        else:
            return "{n}"
    if _HEX.fullmatch(part) and any(c.isdigit() for c in part):
        return "{hex}"
    if "@" in part and _EMAIL.fullmatch(part):
        return "{email}"
    if len(part) >= 16 and _ULID_LIKE.fullmatch(part) and any(c.isdigit() for c in part):
        return "{id}"
    if any(c.isdigit() for c in part):
        part = _DIGITS.sub("{n}", part)
    if len(part) > MAX_LITERAL or not _LITERAL.fullmatch(part):
        return "{s}"
    return part


#: Templates by digit-blind shape: the value's UTF-8 bytes with every digit 1-9 made 0 (``bytes.translate`` is a
#: table lookup per byte, several times faster than ``str.translate``; ASCII digits are single bytes in UTF-8, so two
#: values share a shape exactly when their strings do with the digits replaced).
_CACHE: Final[dict[bytes, str]] = {}
#: Exact values seen recently (hot keys, constant sort keys repeat a lot), before the shape cache.
_VALUE_CACHE: Final[dict[str, str]] = {}
_CACHE_LIMIT: Final = 16_384
#: Every rule above treats all digits alike, so values with the same digit-blind shape share a template.
_DIGIT_SHAPE: Final = bytes.maketrans(b"123456789", b"000000000")


def value_template(value: Any) -> str:
    """The template of one key attribute value (memoised by exact value, then by digit-blind shape; bounded)."""
    if type(value) is str:
        exact = _VALUE_CACHE.get(value)
        return exact if exact is not None else _new_value(value)
    if isinstance(value, bool):
        return "{bool}"
    if isinstance(value, int | float):
        return "{n}"
    return "{?}"


def _new_value(value: str) -> str:
    """The template of a string value not in the exact-value cache, which then holds it (found by its digit-blind
    shape, or worked out)."""
    if len(_VALUE_CACHE) >= _CACHE_LIMIT:
        _VALUE_CACHE.clear()
    if len(value) == 36 and value[8] == "-" and _UUID.fullmatch(value):
        cached = "{uuid}"  # what _string_template gives it (no "#" or "|" in it), and kept out of the shape cache
    else:
        shape = value.encode("utf-8", "surrogatepass").translate(_DIGIT_SHAPE)
        found = _CACHE.get(shape)
        if found is None:
            found = _string_template(value)
            # Shapes with letters of ids (UUIDs, hex) rarely repeat: keep them out of the shape cache.
            if "{uuid}" not in found and "{hex}" not in found and "{id}" not in found:
                if len(_CACHE) >= _CACHE_LIMIT:
                    _CACHE.clear()
                _CACHE[shape] = found
        cached = found
    _VALUE_CACHE[value] = cached
    return cached


def _string_template(value: str) -> str:
    if "|" in value:
        return "".join(p if p in ("#", "|") else _part(p) for p in _SPLIT.split(value))
    if "#" in value:
        return "#".join([_part(p) for p in value.split("#")])
    return _part(value)


def key_template(key: dict[str, Any] | None) -> str | None:
    """The template of a logged key: ``name=tmpl`` for each attribute (``id={s}``, ``pk=USER#{n}, sk={uuid}``).

    Runs once per logged key, so the exact-value cache of :func:`value_template` is read inline.
    """
    if not key:
        return None
    cache = _VALUE_CACHE
    if len(key) == 1:
        for name, value in key.items():
            if type(value) is str:
                found = cache.get(value)
                return f"{name}={found if found is not None else _new_value(value)}"
            return f"{name}={value_template(value)}"
    parts = []
    for name, value in key.items():
        if type(value) is str:
            found = cache.get(value)
            parts.append(f"{name}={found if found is not None else _new_value(value)}")
        else:
            parts.append(f"{name}={value_template(value)}")
    return ", ".join(parts)


def query_template(condition: tuple[str, str], key: dict[str, Any] | None) -> str:
    """A Query's template: the partition key with its value's template when logged (else ``?``), then the sort
    key's condition (``pk=USER#{n}, sk begins_with ?``)."""
    attr, sort = condition
    value = key.get(attr) if key else None
    head = f"{attr}={value_template(value) if value is not None else '?'}"
    return f"{head}, {sort}" if sort else head


def statement_template(statement: Statement) -> str:
    """A PartiQL statement's template: visible key values generalised, ``?`` parameters, redacted (non-key)
    values as ``(redacted)``; an INSERT lists the attribute names it states."""
    if statement.verb == "INSERT":
        return ", ".join(f"{name}=(redacted)" for name in statement.insert_names[:8])
    parts = [f"{name}={value_template(v)}" for name, v in statement.key_equalities.items()]
    for name in statement.redacted_equalities:
        if name not in statement.key_equalities:
            parts.append(f"{name}=?" if name in statement.constrained else f"{name}=(redacted)")
    return ", ".join(parts[:8])


#: A placeholder of a template (``{n}``, ``{uuid}``, ``?``).
_PLACEHOLDER_RE: Final = re.compile(r"\{[a-z?]+\}")
#: Placeholders one id generator can produce for the same field (a random suffix is sometimes all digits, sometimes
#: all letters): templates that differ only in these are one pattern.
ID_LIKE: Final = frozenset({"{n}", "{hex}", "{s}", "{id}"})


def pattern_shape(template: str) -> str:
    """What groups templates into one access pattern: ``template`` with its id-like placeholders blanked
    (``DEV#{n}`` and ``DEV#{s}`` are one shape)."""
    return _PLACEHOLDER_RE.sub(lambda m: "{*}" if m.group() in ID_LIKE else m.group(), template)


def pattern_template(templates: list[str]) -> str:
    """The one template of several of the same :func:`pattern_shape`, heaviest first: each placeholder where they
    agree, ``{hex}`` where they differ only in digits and hex (short hex suffixes), else ``{id}``."""
    if len(templates) == 1:
        return templates[0]
    columns = zip(*(_PLACEHOLDER_RE.findall(t) for t in templates), strict=False)
    merged = iter([_one_placeholder(set(column)) for column in columns])
    return _PLACEHOLDER_RE.sub(lambda m: next(merged, m.group()), templates[0])


def _one_placeholder(kinds: set[str]) -> str:
    if len(kinds) == 1:
        return next(iter(kinds))
    if kinds <= {"{n}", "{hex}"} or ("{hex}" in kinds and kinds <= {"{n}", "{hex}", "{s}"}):
        return "{hex}"
    return "{id}"

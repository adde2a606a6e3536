"""Partition keys of logged calls: which attribute is the partition key, and the sketch key of its value.

:func:`encode_key` turns an attribute name and value into the string the window sketches count (bounded: a value
over DynamoDB's 2 KB key limit is kept as a digest); :func:`decode_key` gives the logged key back for a finding.
:func:`partition_attr` picks the partition-key attribute of a logged key map, which CloudTrail does not name.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import orjson

#: Partition-key and sort-key attribute names recognised when the key schema is not configured.
_PK_NAMES: Final = frozenset({"pk", "partitionkey", "partition_key", "hashkey", "hash_key", "pk1", "gsi1pk"})
_SK_NAMES: Final = frozenset({"sk", "sortkey", "sort_key", "rangekey", "range_key", "sk1", "gsi1sk"})

#: DynamoDB's limit on a partition key value (2,048 bytes): a longer logged value is not a real key, and is kept as
#: a fixed-size digest so a flood of huge distinct values cannot grow the sketches' memory.
MAX_KEY_BYTES = 2048
#: DynamoDB nests attribute values at most 32 levels deep (and a key attribute is a scalar): a logged value nested
#: deeper is not a real key, and is kept as a digest so every finding and output that quotes it stays writable.
MAX_KEY_DEPTH = 32


def _hashed(attr: str, raw: bytes, why: str) -> str:
    return f'{attr}\x1f"({why}, sha256 {hashlib.sha256(raw).hexdigest()[:32]})'


def encode_key(attr: str, value: Any) -> str:
    """Sketch key for one partition-key value: attribute name and a JSON literal, so numbers and strings differ.

    A value longer than :data:`MAX_KEY_BYTES` is stored as a digest; an integer beyond 64 bits as its digits; a
    value nested deeper than :data:`MAX_KEY_DEPTH` levels, or that JSON cannot write, as a digest of its
    ``repr``-free shape.
    """
    if isinstance(value, str):
        if len(value) > MAX_KEY_BYTES // 4 and len(value.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
            return _hashed(attr, value.encode("utf-8", "surrogatepass"), "over 2 KB")
        return f'{attr}\x1f"{value}'
    if type(value) is int and not -(2**63) <= value < 2**64:
        digits = str(value) if value.bit_length() < 6800 else ""  # str() of a huge int is quadratic
        if digits and len(digits) <= MAX_KEY_BYTES:
            return f"{attr}\x1f{digits}"
        return _hashed(attr, value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True), "over 2 KB")
    try:
        literal = orjson.dumps(value).decode()
    except TypeError:  # nesting deeper than orjson writes, or a type it does not know
        return _hashed(attr, _shape_bytes(value), "not a key value")
    if len(literal) > MAX_KEY_BYTES:
        return _hashed(attr, literal.encode(), "over 2 KB")
    if literal.count("[") + literal.count("{") > MAX_KEY_DEPTH and _depth(value) > MAX_KEY_DEPTH:
        return _hashed(attr, _shape_bytes(value), "not a key value")
    return f"{attr}\x1f{literal}"


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (0 for a scalar), iteratively."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, level = stack.pop()
        if isinstance(v, dict | list):
            level += 1
            deepest = max(deepest, level)
            stack.extend((child, level) for child in (v.values() if isinstance(v, dict) else v))
    return deepest


def _shape_bytes(value: Any) -> bytes:
    """A deterministic byte form of any nested value, iteratively (no recursion limit), bounded by its size."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack and len(out) < 1 << 16:
        v = stack.pop()
        if isinstance(v, dict):
            out.append("{")
            for k in sorted(v, key=str):
                out.append(str(k))
                stack.append(v[k])
        elif isinstance(v, list):
            out.append("[")
            stack.extend(reversed(v))
        else:
            out.append(type(v).__name__ + ":" + (v if isinstance(v, str) else str(v)[:64]))
    return "\x1e".join(out).encode("utf-8", "surrogatepass")


def decode_key(encoded: str) -> dict[str, Any]:
    """Inverse of :func:`encode_key`: the key as CloudTrail logged it (attribute name -> value)."""
    attr, _, lit = encoded.partition("\x1f")
    if lit.startswith('"'):
        return {attr: lit[1:]}
    if lit.lstrip("-").isdigit():
        return {attr: int(lit)}  # exact, also beyond 64 bits
    return {attr: orjson.loads(lit)}


def partition_attr(key: dict[str, Any], hint: str | None) -> str:
    """Which attribute of a logged key is the partition key.

    CloudTrail logs the key map without saying which attribute is the partition key. In order: the
    configured key schema (``hint``); the only attribute; an attribute named like a partition key
    (``pk``, ``PK``, ``partitionKey``...); the attribute that is not named like a sort key; else the first
    attribute as logged (SDKs keep the order the caller used, which is partition key first by
    convention, as in the AWS samples).
    """
    if hint is not None and hint in key:
        return hint
    if len(key) == 1:
        return next(iter(key))
    names = tuple(key)
    found = _PK_CACHE.get(names)
    if found is None:
        if len(_PK_CACHE) > 4096:
            _PK_CACHE.clear()
        found = _PK_CACHE[names] = _guess_partition_attr(names)
    return found


_PK_CACHE: Final[dict[tuple[str, ...], str]] = {}


def _guess_partition_attr(key: tuple[str, ...]) -> str:
    first = key[0]
    for name in key:
        if name.lower() in _PK_NAMES:
            return name
    for name in key:
        if name.lower() not in _SK_NAMES:
            return name
    return first

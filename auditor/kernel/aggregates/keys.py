"""Partition keys of logged calls: which attribute is the partition key, and the sketch key of its value.

:func:`encode_key` turns an attribute name and value into the string the window sketches count (bounded: a value
over DynamoDB's 2 KB key limit is kept as a digest); :func:`decode_key` gives the logged key back for a finding.
:func:`partition_attr` picks the partition-key attribute of a logged key map, which CloudTrail does not name.
Each index is its own partition space: its keys carry the index's prefix (:func:`index_key`) in the table's sketches
and its counts are kept in an :class:`IndexKeys`, never mixed with the table's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from auditor.kernel.aggregates.sketch import DistinctCounter

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
    """Inverse of :func:`encode_key` (and of :func:`index_key`): the key as CloudTrail logged it (name -> value)."""
    if encoded.startswith(INDEX_MARK):
        encoded = encoded.partition(_INDEX_END)[2]
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


# --- one partition space per index ---------------------------------------------------------------------------------
#
# An index has its own partitions: the keys of an index Query (or of a PartiQL statement on ``"Table"."Index"``) are
# the index's key values, and their share is measured against the index's traffic, never the table's. In the
# table's sketches such a key is ``INDEX_MARK + index name + _INDEX_END + encode_key(...)``: index names are
# ``[a-zA-Z0-9_.-]`` (CreateTable's IndexName), so neither control character can occur in one.

#: First character of a sketch key of an index's partition space.
INDEX_MARK: Final = "\x1d"
_INDEX_END: Final = "\x1e"
#: Index spaces a window keeps apart; the keys of further indexes, or of a name longer than an index name may be
#: (255 characters), share the :data:`OTHER_INDEX` space.
MAX_INDEX_SPACES: Final = 8
MAX_INDEX_NAME: Final = 255
OTHER_INDEX: Final = "(other indexes)"
#: An index space's distinct keys are stored exactly up to this many characters, else as registers (about 5.5 KB),
#: so the spaces add at most about 50 KB to a serialised window.
_EXACT_CHARS: Final = 4096


def index_key(index: str | None, encoded: str) -> str:
    """The sketch key of ``encoded`` (from :func:`encode_key`) in ``index``'s partition space (None: the table's)."""
    return encoded if index is None else f"{INDEX_MARK}{index}{_INDEX_END}{encoded}"


def key_index(encoded: str) -> str | None:
    """The index whose partition space a sketch key belongs to; None for the table's own."""
    if encoded.startswith(INDEX_MARK):
        return encoded[1:].partition(_INDEX_END)[0]
    return None


@dataclass(slots=True)
class IndexKeys:
    """The counts of one index's partition space (its keys themselves are in the table window's sketches)."""

    #: key-identified requests to the index, its reads and its reads logged ``consistentRead: false`` (the rest of
    #: its requests are writes)
    counts: list[int] = field(default_factory=lambda: [0, 0, 0])
    #: distinct partition-key values of the index
    distinct: DistinctCounter = field(default_factory=DistinctCounter)
    #: the attributes taken as the index's partition key (from its Query key conditions), with their counts
    attrs: dict[str, int] = field(default_factory=dict)

    def add(self, attr: str, is_write: bool, eventual: bool) -> None:
        """One key access to the index; ``attr``: its partition-key attribute, or "" when the access does not tell
        the index's key schema (a PartiQL statement's equalities)."""
        counts = self.counts
        counts[0] += 1
        if not is_write:
            counts[1] += 1
            counts[2] += eventual
        attrs = self.attrs
        if attr in attrs:
            attrs[attr] += 1
        elif attr and len(attrs) < 8:
            attrs[attr] = 1

    @property
    def partition_key_attr(self) -> str | None:
        """The attribute most often taken as the index's partition key."""
        return max(sorted(self.attrs), key=lambda k: self.attrs[k]) if self.attrs else None

    def merge(self, other: IndexKeys) -> None:
        """Add ``other`` (the same index) into this one."""
        self.counts = [mine + theirs for mine, theirs in zip(self.counts, other.counts, strict=True)]
        self.distinct.merge(other.distinct)
        for attr, n in other.attrs.items():
            if attr in self.attrs or len(self.attrs) < 8:
                self.attrs[attr] = self.attrs.get(attr, 0) + n

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        distinct = self.distinct
        exact = distinct.exact
        if exact is not None and sum(len(v) for v in exact) > _EXACT_CHARS:
            distinct = DistinctCounter()
            distinct.exact = set(exact)
            distinct._to_hll()  # as registers, as DistinctCounter.to_dict does past its own limit
        return {"counts": self.counts, "distinct": distinct.to_dict(), "attrs": self.attrs}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IndexKeys:
        """Inverse of :meth:`to_dict`."""
        requests, reads, eventual = (int(n) for n in d["counts"])
        attrs = {str(k): int(v) for k, v in d.get("attrs", {}).items()}
        return cls([requests, reads, eventual], DistinctCounter.from_dict(d["distinct"]), attrs)


def index_space(spaces: dict[str, IndexKeys], index: str) -> tuple[str, IndexKeys]:
    """``index``'s space in ``spaces`` (created when new; the :data:`OTHER_INDEX` space once full) and its name."""
    found = spaces.get(index)
    if found is None:
        if len(spaces) >= MAX_INDEX_SPACES or len(index) > MAX_INDEX_NAME or _INDEX_END in index:
            index = OTHER_INDEX
            found = spaces.get(index)
        if found is None:
            found = spaces[index] = IndexKeys()
    return index, found


def count_distinct(new: Iterable[str], table: DistinctCounter, spaces: dict[str, IndexKeys]) -> None:
    """Add new sketch keys to the distinct counter of their space: the table's, or their index's."""
    mine = [k for k in new if not k.startswith(INDEX_MARK)]
    table.update(mine)
    if spaces:
        for k in new:
            if k.startswith(INDEX_MARK):
                index = key_index(k)
                if index is not None and index in spaces:
                    spaces[index].distinct.add(k)

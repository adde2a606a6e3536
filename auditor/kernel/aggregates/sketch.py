"""Bounded, mergeable summaries: heavy hitters (Misra-Gries) and distinct counts (HyperLogLog).

Both merge so that per-file aggregates can be combined in any grouping:

* ``HeavyHitters`` is the Misra-Gries *frequent items* summary with lazy pruning. Counts are exact
  while the number of distinct keys stays at or below ``2 * capacity``. Beyond that, every reported
  count is a lower bound that undercounts by at most ``error`` (Agarwal et al., "Mergeable
  Summaries", PODS 2012), so a key reported above a share threshold truly is above it.
* ``DistinctCounter`` is exact up to ``EXACT_LIMIT`` distinct values and a HyperLogLog (p=12,
  about 1.6% standard error) beyond. Its result does not depend on merge order: the registers of
  a value are a pure function of the value, and register merge is an element-wise max.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Final

_HLL_P = 12
_HLL_M = 1 << _HLL_P
_HLL_REST_BITS: Final = 64 - _HLL_P
_HLL_ALPHA = 0.7213 / (1 + 1.079 / _HLL_M)


class HeavyHitters:
    """Approximate per-key counts that keep the heaviest keys in bounded memory."""

    __slots__ = ("capacity", "counts", "error", "limit", "total")

    def __init__(self, capacity: int = 512) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = capacity
        #: Prune once more than this many keys are held (hot paths may inline :meth:`add` using it).
        self.limit = 2 * capacity
        #: A ``Counter``: :meth:`add_many` counts a batch in C (``Counter.update`` of a list).
        self.counts: Counter[str] = Counter()
        self.total = 0
        #: Upper bound of the undercount of any key (0 while the summary is exact).
        self.error = 0

    def add(self, key: str, n: int = 1) -> None:
        """Count ``n`` occurrences of ``key``."""
        counts = self.counts
        counts[key] = counts.get(key, 0) + n
        self.total += n
        if len(counts) > self.limit:
            self._prune()

    def add_many(self, keys: Sequence[str]) -> None:
        """Count one occurrence of each element of ``keys`` (a batch), then prune once if needed.

        Equivalent to merging the batch's exact counts (:meth:`merge`), so the Misra-Gries guarantee holds.
        """
        self.counts.update(keys)
        self.total += len(keys)
        if len(self.counts) > self.limit:
            self._prune()

    def _prune(self) -> None:
        """Keep the ``capacity`` heaviest keys, subtracting the next count from each (Misra-Gries).

        The keys kept are exactly those counted above the ``capacity + 1``-th largest count (``cut``), so only
        that count is needed: a sort of the plain integers, not of the items.
        """
        counts = self.counts
        if len(counts) <= self.capacity:
            return
        cut = sorted(counts.values(), reverse=True)[self.capacity]
        self.error += cut
        self.counts = Counter({k: c - cut for k, c in counts.items() if c > cut})

    def merge(self, other: HeavyHitters) -> None:
        """Add another summary into this one (the result is bounded again)."""
        counts = self.counts
        for k, c in other.counts.items():
            counts[k] = counts.get(k, 0) + c
        self.total += other.total
        self.error += other.error
        if len(counts) > self.limit:
            self._prune()

    def top(self, n: int) -> list[tuple[str, int]]:
        """The ``n`` heaviest keys with their (lower-bound) counts, heaviest first, ties by key."""
        return sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def to_dict(self, limit: int | None = None) -> dict[str, Any]:
        """JSON-ready form; ``limit`` keeps only the heaviest keys (adding their cut to ``error``)."""
        top = self.top(limit if limit is not None else len(self.counts))
        error = self.error
        if limit is not None and len(self.counts) > limit:
            cut = sorted(self.counts.values(), reverse=True)[limit]
            error += cut
            top = [(k, c - cut) for k, c in top if c > cut]
        return {"capacity": self.capacity, "total": self.total, "error": error, "counts": [[k, c] for k, c in top]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HeavyHitters:
        """Inverse of :meth:`to_dict`."""
        hh = cls(int(data["capacity"]))
        hh.total = int(data["total"])
        hh.error = int(data["error"])
        hh.counts = Counter({str(k): int(c) for k, c in data["counts"]})
        return hh


#: An empty 64-bit blake2b, copied for each value: a copy costs about half of a new ``blake2b(digest_size=8)``
#: (whose keyword arguments are parsed on every call) and hashes to the very same digest.
_BLAKE2B_64: Final = hashlib.blake2b(digest_size=8)


def _hash64(value: str) -> int:
    """The 64-bit hash that places ``value`` in the registers: blake2b of its UTF-8 bytes (stable across processes,
    unlike ``hash()``, so that registers from any process or invocation merge)."""
    h = _BLAKE2B_64.copy()
    h.update(value.encode("utf-8", "surrogatepass"))
    return int.from_bytes(h.digest(), "big")


class DistinctCounter:
    """Counts distinct values: exact while small, HyperLogLog once large."""

    __slots__ = ("exact", "registers")

    EXACT_LIMIT = 1024

    def __init__(self) -> None:
        self.exact: set[str] | None = set()
        self.registers: bytearray | None = None

    def add(self, value: str) -> None:
        """Record one value."""
        self.update((value,))

    def update(self, values: Iterable[str]) -> None:
        """Record several values."""
        exact = self.exact
        if exact is not None:
            exact.update(values)
            if len(exact) > self.EXACT_LIMIT:
                self._to_hll()
            return
        regs = self.registers
        assert regs is not None
        blake2b = _BLAKE2B_64.copy
        from_bytes = int.from_bytes
        rest_bits = _HLL_REST_BITS
        rest_mask = (1 << rest_bits) - 1
        for value in values:  # _hash64, inlined: this runs once per new key of a high-cardinality table
            hasher = blake2b()
            try:
                data = value.encode()  # the same bytes as with "surrogatepass", read faster without arguments
            except UnicodeEncodeError:  # a lone surrogate
                data = value.encode("utf-8", "surrogatepass")
            hasher.update(data)
            h = from_bytes(hasher.digest(), "big")
            idx = h >> rest_bits
            rank = rest_bits - (h & rest_mask).bit_length() + 1
            if rank > regs[idx]:
                regs[idx] = rank

    def _to_hll(self) -> None:
        values = self.exact or set()
        self.exact = None
        self.registers = bytearray(_HLL_M)
        self.update(values)

    def merge(self, other: DistinctCounter) -> None:
        """Union with another counter."""
        if self.exact is not None and other.exact is not None:
            self.exact |= other.exact
            if len(self.exact) > self.EXACT_LIMIT:
                self._to_hll()
            return
        if self.exact is not None:
            self._to_hll()
        regs = self.registers
        assert regs is not None
        if other.exact is not None:
            self.update(other.exact)
            return
        assert other.registers is not None
        theirs = other.registers
        for i in range(len(theirs)):  # not enumerate(): mypyc cannot compile a loop over a bytearray
            r = theirs[i]
            if r > regs[i]:
                regs[i] = r

    def estimate(self) -> int:
        """The number of distinct values (exact below ``EXACT_LIMIT``)."""
        if self.exact is not None:
            return len(self.exact)
        regs = self.registers
        assert regs is not None
        # bytes(regs): mypyc cannot compile a loop over a bytearray
        raw = _HLL_ALPHA * _HLL_M * _HLL_M / sum(2.0**-r for r in bytes(regs))
        zeros = regs.count(0)
        if raw <= 2.5 * _HLL_M and zeros:
            raw = _HLL_M * math.log(_HLL_M / zeros)
        return round(raw)

    #: An exact set larger than this many characters is stored as registers instead (keeps items small).
    MAX_EXACT_CHARS = 16_384

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the exact set, or the registers in base64: about 5.5 KB)."""
        if self.exact is not None:
            if sum(len(v) for v in self.exact) <= self.MAX_EXACT_CHARS:
                return {"exact": sorted(self.exact)}
            copy = DistinctCounter()
            copy.exact = set(self.exact)
            copy._to_hll()
            return copy.to_dict()
        assert self.registers is not None
        return {"hll": base64.b64encode(bytes(self.registers)).decode("ascii")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DistinctCounter:
        """Inverse of :meth:`to_dict`."""
        dc = cls()
        if "hll" in data:
            dc.exact = None
            dc.registers = bytearray(base64.b64decode(data["hll"]))
            if len(dc.registers) != _HLL_M:
                raise ValueError("bad HyperLogLog register count")
        else:
            dc.exact = {str(v) for v in data["exact"]}
        return dc

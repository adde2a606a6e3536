"""The what-if replay of a proposal: the observed traffic rewritten for the proposed keys, through the what-if.

A ``shard_partition_key`` proposal spreads its key's requests of every minute evenly over the shard keys
(``value#0`` .. ``value#N-1``); a ``cache_reads`` proposal keeps its key's writes and the cache misses of its reads.
Every minute and every second is rewritten, so each key's peak is measured as the proposal measures it
(:func:`auditor.whatif.limits.key_peak`). The rewritten aggregate goes through :func:`auditor.whatif.limits.key_limits`,
the model ``ddb-audit what-if`` runs; the rewritten keys are measured against the capacity the key's throttling left
its partition (:class:`~auditor.whatif.limits.PartitionCapacity`), the capacity the proposal sizes its shards for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from auditor.kernel.aggregates.keys import decode_key, encode_key
from auditor.kernel.aggregates.sketch import HeavyHitters
from auditor.kernel.aggregates.window import TableWindow
from auditor.review.model import Proposal
from auditor.whatif.limits import MIN_PEAK_SECOND_REQUESTS, LimitItem, PartitionCapacity, WhatIfConfig, key_limits


@dataclass(frozen=True, slots=True)
class WhatIfReplay:
    """One proposal's key through the what-if, before and after the rewrite."""

    proposal: str
    table: str
    key: dict[str, Any]
    headroom_before: float | None
    headroom_after: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "proposal": self.proposal,
            "table": self.table,
            "key": self.key,
            "headroom_before": round(self.headroom_before, 2) if self.headroom_before is not None else None,
            "headroom_after": round(self.headroom_after, 2) if self.headroom_after is not None else None,
            "source": "what-if over the rewritten traffic (each key's peak, against its partition's capacity)",
        }


def _parts(n: int, shards: int) -> list[int]:
    """``n`` requests spread evenly over ``shards``: the remainder one each to the first shards (none lost)."""
    return [n // shards + (1 if i < n % shards else 0) for i in range(shards)]


def _rewrite(sketch: HeavyHitters, encoded: str, keys: list[str]) -> None:
    """Move ``encoded``'s count in ``sketch`` evenly to ``keys``."""
    n = sketch.counts.pop(encoded, 0)
    for key, part in zip(keys, _parts(n, len(keys)), strict=True):
        if part > 0:
            sketch.counts[key] = sketch.counts.get(key, 0) + part


def rewritten(span: TableWindow, proposal: Proposal) -> TableWindow:
    """A copy of ``span`` with the proposal's key rewritten in every minute sketch (see the module docstring)."""
    assert proposal.key is not None
    attr, value = next(iter(proposal.key.items()))
    encoded = encode_key(attr, value)
    out = span.copy()
    shards = int(proposal.change.get("shards") or 0)
    miss = 1 - float(proposal.change.get("hit_ratio") or 0.0)
    split = [encode_key(attr, f"{value}#{i}") for i in range(shards)]
    for m_all, m_writes in out.minutes.values():
        if shards:
            _rewrite(m_all, encoded, split)
            _rewrite(m_writes, encoded, split)
        else:
            writes = m_writes.counts.get(encoded, 0)
            reads = m_all.counts.get(encoded, 0) - writes
            m_all.counts[encoded] = writes + round(reads * miss)
    for (key, sw), n in list(out.seconds.items()):
        if key != encoded:
            continue
        if shards:
            del out.seconds[(key, sw)]
            for shard, part in zip(split, _parts(n, shards), strict=True):
                out.seconds[(shard, sw)] = out.seconds.get((shard, sw), 0) + part
        elif not sw % 2:  # a read second: its cache misses
            out.seconds[(key, sw)] = round(n * miss)
    # the key's throttling is evidence of its partition's capacity, which the rewritten keys are measured against
    out.throttle_keys.pop(encoded, None)
    return out


def _items(items: Sequence[LimitItem], keys: set[str]) -> list[LimitItem]:
    return [i for i in items if i.key is not None and encode_key(*next(iter(i.key.items()))) in keys]


def _capacity(item: LimitItem, cfg: WhatIfConfig) -> PartitionCapacity:
    """What the key's partition delivered, by the what-if's measure of it (its peak and throttles)."""
    peak = item.peak_per_second
    r, w = (peak, 0.0) if item.access == "read" else (0.0, peak)
    return PartitionCapacity.of(r, w, cfg.partition_read_units, cfg.partition_write_units, item.throttled)


def _against(item: LimitItem, capacity: PartitionCapacity) -> LimitItem:
    """``item`` measured against ``capacity`` (the rewritten key's partition, as the evidence left it)."""
    if not capacity.observed:
        return item
    limit = capacity.read if item.access == "read" else capacity.write
    return replace(item, limit_per_second=limit, limit_source="observed_throttling")


def whatif_replay(
    proposals: Sequence[Proposal], spans: Sequence[TableWindow], limits: WhatIfConfig | None = None
) -> list[WhatIfReplay]:
    """Each sharding or caching proposal's key through the what-if, before and after its rewrite."""
    cfg = (limits or WhatIfConfig()).model_copy(update={"max_keys_per_table": 1000})
    out: list[WhatIfReplay] = []
    for p in proposals:
        span = next((s for s in spans if (s.account, s.region, s.table) == p.where), None)
        if p.key is None or span is None:
            continue
        attr, value = next(iter(p.key.items()))
        found = _items(key_limits(span, cfg), {encode_key(attr, value)})
        shards = int(p.change.get("shards") or 0)
        after_keys = {encode_key(attr, f"{value}#{i}") for i in range(shards)} or {encode_key(attr, value)}
        # a shard's busiest second is the key's divided: measured over the same period as the key's peak
        threshold = math.ceil(MIN_PEAK_SECOND_REQUESTS / max(1, shards))
        after_items = _items(key_limits(rewritten(span, p), cfg, threshold), after_keys)
        if found:
            capacity = _capacity(found[0], cfg)
            after_items = [_against(i, capacity) for i in after_items]
        before = min((i.headroom for i in found), default=None)
        after = min((i.headroom for i in after_items), default=None)
        out.append(WhatIfReplay(p.id, p.table, decode_key(encode_key(attr, value)), before, after))
    return out

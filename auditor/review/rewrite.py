"""The what-if replay of a proposal: the observed traffic rewritten for the proposed keys, through the what-if.

A ``shard_partition_key`` proposal spreads its key's requests of every minute evenly over the shard keys
(``value#0`` .. ``value#N-1``); a ``cache_reads`` proposal keeps its key's writes and the cache misses of its reads.
The rewritten table aggregate then goes through :func:`auditor.whatif.limits.key_limits`, the same model
``ddb-audit what-if`` runs, so the headroom before and after are the what-if's (each key's busiest minute, one unit
per request).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from auditor.kernel.aggregates.keys import decode_key, encode_key
from auditor.kernel.aggregates.sketch import HeavyHitters
from auditor.kernel.aggregates.window import TableWindow
from auditor.review.model import Proposal
from auditor.whatif.limits import LimitItem, WhatIfConfig, key_limits


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
            "source": "what-if over the rewritten traffic (busiest minute per key)",
        }


def _rewrite(sketch: HeavyHitters, encoded: str, split: list[tuple[str, float]]) -> None:
    """Move ``encoded``'s count in ``sketch`` to the keys of ``split`` (each its share of it)."""
    n = sketch.counts.pop(encoded, 0)
    for key, share in split:
        if (part := round(n * share)) > 0:
            sketch.counts[key] = sketch.counts.get(key, 0) + part


def rewritten(span: TableWindow, proposal: Proposal) -> TableWindow:
    """A copy of ``span`` with the proposal's key rewritten in every minute sketch (see the module docstring)."""
    assert proposal.key is not None
    attr, value = next(iter(proposal.key.items()))
    encoded = encode_key(attr, value)
    out = span.copy()
    shards = int(proposal.change.get("shards") or 0)
    miss = 1 - float(proposal.change.get("hit_ratio") or 0.0)
    for m_all, m_writes in out.minutes.values():
        if shards:
            split = [(encode_key(attr, f"{value}#{i}"), 1 / shards) for i in range(shards)]
            _rewrite(m_all, encoded, split)
            _rewrite(m_writes, encoded, split)
        else:
            writes = m_writes.counts.get(encoded, 0)
            reads = m_all.counts.get(encoded, 0) - writes
            m_all.counts[encoded] = writes + round(reads * miss)
    return out


def _headroom(items: Sequence[LimitItem], keys: set[str]) -> float | None:
    found = [i.headroom for i in items if i.key is not None and encode_key(*next(iter(i.key.items()))) in keys]
    return min(found) if found else None


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
        before = _headroom(key_limits(span, cfg), {encode_key(attr, value)})
        shards = int(p.change.get("shards") or 0)
        after_keys = {encode_key(attr, f"{value}#{i}") for i in range(shards)} or {encode_key(attr, value)}
        after = _headroom(key_limits(rewritten(span, p), cfg), after_keys)
        out.append(WhatIfReplay(p.id, p.table, decode_key(encode_key(attr, value)), before, after))
    return out

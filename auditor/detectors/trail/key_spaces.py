"""The partition spaces of a table window: the table's own keys, and each index's.

An index has its own partitions, so its keys' shares, rates and cardinality are measured against the index's own
traffic and reported on the index. :func:`key_spaces` gives one :class:`KeySpace` view per space, read from the
window's shared sketches (an index's keys carry its prefix there, :func:`auditor.kernel.aggregates.keys.index_key`).
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.kernel.aggregates.keys import INDEX_MARK, key_index
from auditor.kernel.aggregates.window import TableWindow


@dataclass(frozen=True, slots=True)
class KeySpace:
    """One partition space of ``agg``: the table's (``index`` None) or one index's."""

    index: str | None
    #: key-identified requests, reads, writes and reads logged eventually consistent in this space
    requests: int
    reads: int
    writes: int
    reads_eventual: int
    distinct: int
    #: the attribute taken as the space's partition key (an index's: the described one first)
    key_attr: str | None
    #: the window sketch's counts of this space's keys (all requests, writes), and the sketch's error bound
    counts: dict[str, int]
    write_counts: dict[str, int]
    error: int

    def holds(self, encoded: str) -> bool:
        """Whether a sketch key belongs to this space."""
        if self.index is None:
            return not encoded.startswith(INDEX_MARK)
        return key_index(encoded) == self.index

    def top(self, n: int) -> list[tuple[str, int]]:
        """The ``n`` heaviest keys of the space, heaviest first, ties by key (as ``HeavyHitters.top``)."""
        return sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def where(self, table: str) -> str:
        """``table``, or ``table`` and the index, for a sentence."""
        return table if self.index is None else f"{table} (index {self.index})"


def key_spaces(agg: TableWindow) -> list[KeySpace]:
    """The table's space, then each index's, by name."""
    hot = agg.hot.counts
    writes = agg.hot_writes.counts
    spaces: list[tuple[str | None, dict[str, int], dict[str, int]]]
    if not agg.index_keys:
        spaces = [(None, hot, writes)]
    else:
        split: dict[str | None, tuple[dict[str, int], dict[str, int]]] = {None: ({}, {})}
        for index in agg.index_keys:
            split[index] = ({}, {})
        for sketch, slot in ((hot, 0), (writes, 1)):
            for encoded, n in sketch.items():
                found = split.get(key_index(encoded))
                if found is not None:
                    found[slot][encoded] = n
        spaces = [(index, *split[index]) for index in [None, *sorted(agg.index_keys)]]
    out = []
    for name, counts, write_counts in spaces:
        if name is None:
            out.append(
                KeySpace(
                    None,
                    agg.key_requests,
                    agg.key_reads,
                    agg.key_writes,
                    agg.key_reads_eventual,
                    agg.distinct.estimate(),
                    agg.partition_key_attr,
                    counts,
                    write_counts,
                    agg.hot.error,
                )
            )
            continue
        space = agg.index_keys[name]
        requests, reads, eventual = space.counts
        out.append(
            KeySpace(
                name,
                requests,
                reads,
                requests - reads,
                eventual,
                space.distinct.estimate(),
                agg.index_schema.get(name) or space.partition_key_attr,
                counts,
                write_counts,
                agg.hot.error,
            )
        )
    return out

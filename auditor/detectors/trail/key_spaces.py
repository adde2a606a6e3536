"""The partition spaces of a table window: the table's own keys, and each index's.

An index has its own partitions, so its keys' shares, rates and cardinality are measured against the index's own
traffic and reported on the index. :func:`key_spaces` gives one :class:`KeySpace` view per space, read from the
window's shared sketches (an index's keys carry its prefix there, :func:`auditor.kernel.aggregates.keys.index_key`).
An index's writes are the base table's writes it takes (write amplification): :func:`gsi_evidence`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from auditor.kernel.aggregates.index_writes import gsi_provisioned, index_writes
from auditor.kernel.aggregates.keys import INDEX_MARK, key_index
from auditor.kernel.aggregates.window import TableWindow
from auditor.models.capacity import reconcile, unit_costs


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


#: The evidence :func:`gsi_evidence` gives a GSI back-pressure finding (the throttling story keeps it).
INDEX_WRITES = (
    "index_key_attributes",
    "index_writes",
    "index_base_writes",
    "index_peak_write_units_per_second",
    "index_peak_at",
    "item_size_source",
    "headroom_factor",
    "assumed_utilisation",
    "throttles_now",
    "contradicted_assumption",
    "to_confirm",
)


def gsi_evidence(agg: TableWindow, index: str, throttled: int) -> tuple[str, dict[str, object]]:
    """(a sentence, the evidence) of the base-table writes throttled by index ``index``'s back-pressure: the index
    writes the table's writes cost it (:func:`auditor.kernel.aggregates.index_writes.index_writes`), its busiest
    minute in write units per second, and its headroom reconciled with the throttling (it throttles now)."""
    found = next((w for w in index_writes(agg) if w.index == index), None)
    if found is None or not found.writes:
        return "", {}
    known = agg.item_size_source if agg.item_size_bytes else None
    peak = found.peak_writes * unit_costs(agg.item_size_bytes)[1] / 60
    model = reconcile(None, peak, throttled, resource="index", item_size_source=known, provisioned=gsi_provisioned(agg))
    keys = ", ".join(found.key_attrs) or "not known: every put and delete charged"
    sentence = (
        f" The table's writes cost index {index} (key {keys}) {found.writes:,} index writes, {peak:,.1f} WCU/s at its "
        f"busiest minute (write amplification)." + model.sentence()
    )
    at = datetime.fromtimestamp(found.peak_minute, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if found.peak_minute else None
    return sentence, {
        "index_key_attributes": list(found.key_attrs),
        "index_writes": found.writes,
        "index_base_writes": found.base_writes,
        "index_peak_write_units_per_second": round(peak, 3),
        "index_peak_at": at,
        "item_size_source": known or "default",
        "write_amplification": sentence.strip(),
        **model.evidence(),
    }

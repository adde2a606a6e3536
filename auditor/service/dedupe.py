"""Events delivered in two CloudTrail objects count once: the evaluator's check before it merges a window.

Before the evaluator merges a window's contributions, it reads the fingerprints of the window's objects and reads the
objects that share an event again, together, with one deduplicator; that joint aggregate replaces their separate
contributions. Missing fingerprints (none stored) and unreadable groups are merged as they are, and logged; any other
error reading fingerprints (throttling, a server error) propagates, so the evaluation fails before its cursor moves
and is retried. See docs/service.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from auditor.kernel.aggregates.fingerprints import EventFingerprints
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.state.window_store import merge_parts

__all__ = ["DedupeResult", "Deduplication", "PartsLoader", "group_overlaps"]

log = structlog.get_logger(__name__)

#: Contributions whose source is a CloudTrail object (the events pipeline's sources are hashes of event ids).
_OBJECT_SOURCE = "s3://"

Parts = list[list[tuple[str, TableWindow]]]


class PartsLoader(Protocol):
    def load_window_parts(self, starts: Iterable[int]) -> Parts:
        """For each (account, region, table, start) of the given windows, its (source id, aggregate) pairs."""
        ...


@dataclass(slots=True)
class DedupeResult:
    """What the check found: objects read again together, and events that two objects both counted."""

    groups: int = 0
    objects_reread: int = 0
    events_shared: int = 0
    unchecked: list[str] = field(default_factory=list)


def group_overlaps(fingerprints: dict[str, Sequence[int]]) -> tuple[list[list[str]], int]:
    """The groups (two sources or more, sorted) whose fingerprints overlap, transitively, and how many distinct
    fingerprints two sources or more hold. ``fingerprints``: source id -> its fingerprints in one window."""
    parent = {source: source for source in fingerprints}

    def root(s: str) -> str:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    owner: dict[int, str] = {}
    shared: set[int] = set()
    for source in sorted(fingerprints):
        for fp in fingerprints[source]:
            first = owner.setdefault(fp, source)
            if first != source:
                shared.add(fp)
                a, b = root(first), root(source)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = {}
    for source in sorted(fingerprints):
        groups.setdefault(root(source), []).append(source)
    return [g for g in groups.values() if len(g) > 1], len(shared)


@dataclass(slots=True)
class Deduplication:
    """The evaluator's check (see the module docstring). ``fingerprints`` reads an object's fingerprints (None:
    none stored; it raises when they could not be read); ``reread`` reads objects again, together, with one
    deduplicator, each object's aggregate apart (None: they could not be read)."""

    fingerprints: Callable[[str], EventFingerprints | None]
    reread: Callable[[Sequence[str]], Sequence[tuple[str, AggregateSet]] | None]

    def load(self, store: PartsLoader, starts: Iterable[int]) -> tuple[list[TableWindow], DedupeResult]:
        """The windows of ``starts``, merged, with events shared by two objects counted once."""
        result = DedupeResult()
        cache: dict[str, EventFingerprints | None] = {}
        out: Parts = []
        for start in sorted(set(starts)):
            parts = store.load_window_parts([start])
            out.extend(self._window(start, parts, cache, result))
        return merge_parts(out), result

    def _window(
        self, start: int, parts: Parts, cache: dict[str, EventFingerprints | None], result: DedupeResult
    ) -> Parts:
        objects = sorted({source for group in parts for source, _ in group if source.startswith(_OBJECT_SOURCE)})
        if len(objects) < 2:
            return parts
        prints: dict[str, Sequence[int]] = {}
        for source in objects:
            if source not in cache:
                cache[source] = self.fingerprints(source)
            found = cache[source]
            if found is None:
                result.unchecked.append(source)
                continue
            prints[source] = found.window(start)
        groups, shared = group_overlaps(prints)
        if groups:
            result.events_shared += shared
        for group in groups:
            joint = self.reread(group)
            if joint is None:
                log.warning("dedupe_reread_failed", window_start=start, objects=group)
                continue
            log.info("dedupe_reread", window_start=start, objects=len(group), events_shared=shared)
            result.groups += 1
            result.objects_reread += len(group)
            parts = _replace(parts, set(group), joint, start)
        return parts


def _replace(parts: Parts, group: set[str], joint: Sequence[tuple[str, AggregateSet]], start: int) -> Parts:
    """``parts`` with the contributions of ``group`` replaced by the windows at ``start`` of the group read again
    together (each object's own, without the events an object before it counted)."""
    fresh: dict[tuple[str | None, str | None, str], list[tuple[str, TableWindow]]] = {}
    for source, aggregates in joint:
        for wk, tw in aggregates.windows.items():
            if wk[3] == start:
                fresh.setdefault(wk[:3], []).append((source, tw))
    out: Parts = []
    for table_parts in parts:
        _, first = table_parts[0]
        key = (first.account, first.region, first.table)
        kept = [(source, tw) for source, tw in table_parts if source not in group]
        kept.extend(fresh.pop(key, []))
        if kept:
            out.append(kept)
    out.extend(again for again in fresh.values() if again)  # a table only the group's objects touched
    return out

"""The caps that keep a table window bounded, in memory and in its serialised form, and the helpers that apply them.

Every map of a :class:`~auditor.kernel.aggregates.window.TableWindow` is capped: counts beyond a cap go to an
:data:`OTHER` row (or are dropped, and counted), so neither heavy traffic nor merging many windows grows it without
limit. Ingest and merge apply the same caps, so a merged window is bounded like one ingested whole.
"""

from __future__ import annotations

from typing import Any, Final

#: Key of the overflow row: what counts go to once a capped map is full.
OTHER: Final = "(other)"
#: Principals whose scans are counted apart (per operation); later ones share the :data:`OTHER` row.
MAX_SCANNERS: Final = 100
#: PartiQL statements kept per table for the key-schema decision at detection time.
MAX_STATEMENTS: Final = 50
#: Error codes kept per access-pattern row.
MAX_ROW_ERRORS: Final = 10
#: Per-second counts are kept for keys with at least this many requests in their minute (candidates), at most
#: :data:`SECONDS_PER_KEY` seconds per key (the busiest) and :data:`MAX_PEAK_KEYS` keys.
PEAK_MIN_PER_MINUTE: Final = 20
SECONDS_PER_KEY: Final = 8
MAX_PEAK_KEYS: Final = 256
MAX_SECOND_ENTRIES: Final = 8192
#: Access-pattern rows, error codes, throttled keys and keys of writes over the item size kept per window.
MAX_PATTERNS: Final = 200
MAX_ERROR_CODES: Final = 50
MAX_THROTTLE_KEYS: Final = 20
MAX_SIZE_KEYS: Final = 50
#: Key accesses a window batches before folding them into its sketches
#: (:meth:`~auditor.kernel.aggregates.window.TableWindow.flush`).
PENDING_LIMIT: Final = 4096
#: AWS services whose own calls a window counts apart.
MAX_SERVICES: Final = 20
#: Partition-key attribute names a window tracks.
MAX_KEY_ATTRS: Final = 8


def add_capped(counter: dict[Any, int], key: Any, n: int, cap: int, other_key: Any) -> None:
    """Add ``n`` to ``key``'s count, or to ``other_key``'s once ``counter`` holds ``cap`` keys."""
    if key in counter or len(counter) < cap:
        counter[key] = counter.get(key, 0) + n
    else:
        counter[other_key] = counter.get(other_key, 0) + n


def add_capped_names(counter: dict[str, int], name: str, n: int) -> None:
    """Key attribute names: the first :data:`MAX_KEY_ATTRS` names are tracked, later ones dropped."""
    if name in counter:
        counter[name] += n
    elif len(counter) < MAX_KEY_ATTRS:
        counter[name] = n


def prune_seconds(seconds: dict[tuple[str, int], int], per_key: int, keys: int) -> dict[tuple[str, int], int]:
    """Keep each key's ``per_key`` busiest (second, direction) counts, for the ``keys`` keys with the busiest."""
    by_key: dict[str, list[tuple[int, int]]] = {}
    for (encoded, sw), n in seconds.items():
        by_key.setdefault(encoded, []).append((n, sw))
    ranked = sorted(by_key.items(), key=lambda kv: (-max(n for n, _ in kv[1]), kv[0]))[:keys]
    kept: dict[tuple[str, int], int] = {}
    for encoded, entries in ranked:
        reads = sorted((e for e in entries if not e[1] % 2), key=lambda e: (-e[0], e[1]))[:per_key]
        writes = sorted((e for e in entries if e[1] % 2), key=lambda e: (-e[0], e[1]))[:per_key]
        for n, sw in reads + writes:
            kept[(encoded, sw)] = n
    return kept

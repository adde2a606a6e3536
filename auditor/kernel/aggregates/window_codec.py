"""The serialised form of a table window: what the state table stores for each contribution.

:meth:`TableWindow.to_dict <auditor.kernel.aggregates.window.TableWindow.to_dict>` and ``from_dict`` are written
here. The form is JSON, bounded by :data:`MAX_SERIALIZED_BYTES` whatever the traffic (every map of a window is capped,
and the sketches and per-second counts are cut to the budgets below). Stored windows are read back by later versions:
change the form only in ways :func:`window_from_dict` still reads (new fields with a default, as ``statements``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from auditor.kernel.aggregates.bounds import SECONDS_PER_KEY, prune_seconds
from auditor.kernel.aggregates.scans import ScanStats, StatementStats
from auditor.kernel.aggregates.sketch import DistinctCounter, HeavyHitters

if TYPE_CHECKING:
    from auditor.kernel.aggregates.window import TableWindow

#: Upper bound of one serialised aggregate (DynamoDB items are limited to 400 KB).
MAX_SERIALIZED_BYTES: Final = 300_000
#: Keys of each per-minute sketch kept in the serialised form.
MINUTE_SERIALIZED_KEYS: Final = 8
#: Keys whose per-second counts are kept in the serialised form (at most ``SECONDS_PER_KEY`` seconds each).
SERIALIZED_PEAK_KEYS: Final = 64


def window_to_dict(tw: TableWindow) -> dict[str, Any]:
    """The JSON-ready, bounded form of ``tw`` (see :data:`MAX_SERIALIZED_BYTES`)."""
    return {
        "v": 1,
        "account": tw.account,
        "region": tw.region,
        "table": tw.table,
        "window_start": tw.window_start,
        "window_seconds": tw.window_seconds,
        "windows": sorted(tw.windows),
        "sketch_capacity": tw.sketch_capacity,
        "first_time": tw.first_time if tw.calls else None,
        "last_time": tw.last_time if tw.calls else None,
        "calls": tw.calls,
        "operations": tw.operations,
        "item_reads": tw.item_reads,
        "item_writes": tw.item_writes,
        "key_requests": tw.key_requests,
        "key_reads": tw.key_reads,
        "key_writes": tw.key_writes,
        "key_reads_eventual": tw.key_reads_eventual,
        "hot": tw.hot.to_dict(limit=sketch_limit(tw.hot)),
        "hot_writes": tw.hot_writes.to_dict(limit=sketch_limit(tw.hot_writes)),
        "minutes": [
            [m, a.to_dict(limit=MINUTE_SERIALIZED_KEYS), w.to_dict(limit=MINUTE_SERIALIZED_KEYS)]
            for m, (a, w) in sorted(tw.minutes.items())
        ],
        "distinct": tw.distinct.to_dict(),
        "key_attrs": tw.key_attrs,
        "scans": [[p, op, st.to_list()] for (p, op), st in tw.scans.items()],
        "errors": tw.errors,
        "throttles": [[c, a, i, n] for (c, a, i), n in tw.throttles.items()],
        "throttle_keys": tw.throttle_keys,
        "throttle_messages": tw.throttle_messages,
        "size_exceeded": tw.size_exceeded,
        "size_exceeded_keys": tw.size_exceeded_keys,
        "patterns": [[i, o, t, e, c, n, errs] for (i, o, t, e), (c, n, errs) in tw.patterns.items()],
        "statements": [[p, v, i, c, st.count, st.first, st.last] for (p, v, i, c), st in tw.statements.items()],
        "seconds": [
            [k, sw, n] for (k, sw), n in prune_seconds(tw.seconds, SECONDS_PER_KEY, SERIALIZED_PEAK_KEYS).items()
        ],
    }


def window_from_dict(cls: type[TableWindow], d: dict[str, Any]) -> TableWindow:
    """Inverse of :func:`window_to_dict`: a ``cls`` (a :class:`TableWindow`) from its serialised form."""
    tw = cls(d["account"], d["region"], d["table"], int(d["window_start"]), int(d["window_seconds"]))
    tw.sketch_capacity = int(d["sketch_capacity"])
    tw.windows = {int(w) for w in d["windows"]}
    tw.first_time = float(d["first_time"]) if d["first_time"] is not None else float("inf")
    tw.last_time = float(d["last_time"]) if d["last_time"] is not None else 0.0
    tw.calls = int(d["calls"])
    tw.operations = {str(k): int(v) for k, v in d["operations"].items()}
    tw.item_reads = int(d["item_reads"])
    tw.item_writes = int(d["item_writes"])
    tw.key_requests = int(d["key_requests"])
    tw.key_reads = int(d["key_reads"])
    tw.key_writes = int(d["key_writes"])
    tw.key_reads_eventual = int(d.get("key_reads_eventual", 0))  # absent in contributions stored before it
    tw.hot = HeavyHitters.from_dict(d["hot"])
    tw.hot_writes = HeavyHitters.from_dict(d["hot_writes"])
    tw.minutes = {int(m): (HeavyHitters.from_dict(a), HeavyHitters.from_dict(w)) for m, a, w in d.get("minutes", [])}
    tw.distinct = DistinctCounter.from_dict(d["distinct"])
    tw.key_attrs = {str(k): int(v) for k, v in d["key_attrs"].items()}
    tw.scans = {(p, op): ScanStats.from_list(st) for p, op, st in d["scans"]}
    tw.errors = {str(k): int(v) for k, v in d["errors"].items()}
    tw.throttles = {(c, a, i): int(n) for c, a, i, n in d["throttles"]}
    tw.throttle_keys = {str(k): int(v) for k, v in d["throttle_keys"].items()}
    tw.throttle_messages = [str(m) for m in d["throttle_messages"]]
    tw.size_exceeded = int(d["size_exceeded"])
    tw.size_exceeded_keys = {str(k): int(v) for k, v in d["size_exceeded_keys"].items()}
    tw.patterns = {}
    for row in d["patterns"]:
        i, o, t, e = row[:4]
        if len(row) >= 7:  # [.., calls, items, errors]
            errors = {str(k): int(v) for k, v in row[6].items()}
            tw.patterns[(i, o, t, bool(e))] = [int(row[4]), int(row[5]), errors]
        else:  # stored before calls and items were told apart: one count
            tw.patterns[(i, o, t, bool(e))] = [int(row[4]), int(row[4]), {}]
    tw.statements = {
        (str(p), str(v), str(i), str(c)): StatementStats(int(n), float(f), float(la))
        for p, v, i, c, n, f, la in d.get("statements", [])
    }
    tw.seconds = {(str(k), int(sw)): int(n) for k, sw, n in d.get("seconds", [])}
    return tw


def sketch_limit(hh: HeavyHitters) -> int | None:
    """How many sketch keys fit the serialised budget (about 60 KB per sketch)."""
    size = 0
    for n, (k, _) in enumerate(hh.top(len(hh.counts))):
        size += len(k) + 16
        if size > 60_000:
            return n
    return None

"""The observed key distribution as a load-test profile a load-testing tool can replay.

One document per analysis (``ddb-audit-load-profile``, version 1): per table, each operation's rate scaled to the
growth with its key templates and their weights, and the hot keys with their shares. Keys appear raw, as CloudTrail
logged them. The format and what each field means are in docs/commands/what-if.md
("Load-test profile").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from auditor.kernel.aggregates.keys import decode_key
from auditor.kernel.aggregates.templates import pattern_shape, pattern_template
from auditor.kernel.aggregates.window import TableWindow

__all__ = ["PROFILE_FORMAT", "load_profile"]

PROFILE_FORMAT = "ddb-audit-load-profile"
#: Hot keys listed per table.
MAX_HOT_KEYS = 20


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _peak_minute(agg: TableWindow) -> dict[str, Any] | None:
    best: tuple[int, int, int] | None = None
    for minute, (m_all, m_writes) in agg.minutes.items():
        if best is None or m_all.total > best[1] or (m_all.total == best[1] and minute < best[0]):
            best = (minute, m_all.total, m_writes.total)
    if best is None or best[1] == 0:
        return None
    minute, total, writes = best
    return {
        "at": _iso(minute * 60),
        "reads_per_second": round((total - writes) / 60, 3),
        "writes_per_second": round(writes / 60, 3),
    }


def _operations(agg: TableWindow, growth: float) -> list[dict[str, Any]]:
    """Each operation's rate and key templates; templates of one access pattern (the same
    :func:`~auditor.kernel.aggregates.templates.pattern_shape`) are one, named as ``analyze-trail``'s access
    patterns name it (:func:`~auditor.kernel.aggregates.templates.pattern_template`)."""
    seconds = max(1, agg.window_seconds)
    by_op: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
    for (index, operation, template, _efficient), row in agg.patterns.items():
        shapes = by_op.setdefault((operation, index), {})
        found = shapes.setdefault(pattern_shape(template), {})
        found[template] = found.get(template, 0) + row[1]  # item accesses (a row is [calls, items, errors by code])
    operations = []
    for (operation, index), shapes in sorted(by_op.items(), key=lambda kv: (-_total(kv[1]), kv[0])):
        requests = _total(shapes)
        templates = {
            pattern_template(sorted(found, key=lambda t: (-found[t], t))): sum(found.values())
            for found in shapes.values()
        }
        operations.append(
            {
                "operation": operation,
                "index": index or None,
                "requests": requests,
                "rate_per_second": round(requests / seconds, 6),
                "target_rate_per_second": round(requests / seconds * growth, 6),
                "key_templates": [
                    {"template": t or None, "weight": round(n / requests, 6)}
                    for t, n in sorted(templates.items(), key=lambda kv: (-kv[1], kv[0]))
                ],
            }
        )
    return operations


def _total(shapes: dict[str, dict[str, int]]) -> int:
    return sum(n for found in shapes.values() for n in found.values())


def _hot_keys(agg: TableWindow, windows: Sequence[TableWindow]) -> list[dict[str, Any]]:
    """The heaviest keys with their counts summed over the analysis windows, as the ``hot_key`` finding counts a key
    over its period (each window's sketch, not the span's merge of them, which prunes again), and the bound of their
    undercount (``estimate_error``: the windows' sketch errors added up). Without windows, the span's sketch."""
    counts: dict[str, int] = {}
    writes: dict[str, int] = {}
    error = 0
    for tw in windows or (agg,):
        for encoded, n in tw.hot.counts.items():
            counts[encoded] = counts.get(encoded, 0) + n
            writes[encoded] = writes.get(encoded, 0) + min(n, tw.hot_writes.counts.get(encoded, 0))
        error += tw.hot.error
    total_keyed = agg.key_requests
    return [
        {
            "key": decode_key(encoded),
            "weight": round(n / total_keyed, 6) if total_keyed else 0.0,
            "reads": n - writes[encoded],
            "writes": writes[encoded],
            "estimate_error": error,
        }
        for encoded, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_HOT_KEYS]
    ]


def _table_profile(agg: TableWindow, growth: float, windows: Sequence[TableWindow]) -> dict[str, Any]:
    return {
        "table": agg.table,
        "account": agg.account,
        "region": agg.region,
        "partition_key": agg.partition_key_attr,
        "seconds": agg.window_seconds,
        "requests": agg.requests,
        "distinct_partition_keys": agg.distinct.estimate(),
        "peak_minute": _peak_minute(agg),
        "operations": _operations(agg, growth),
        "hot_keys": _hot_keys(agg, windows),
    }


def load_profile(spans: Sequence[TableWindow], growth: float, windows: Iterable[TableWindow] = ()) -> dict[str, Any]:
    """The load-test profile of CloudTrail aggregates (one per table), scaled to ``growth``; ``windows``, the
    analysis windows the spans merge, give the hot keys' counts as the ``hot_key`` finding counts them."""
    by_table: dict[tuple[str | None, str | None, str], list[TableWindow]] = {}
    for tw in windows:
        by_table.setdefault((tw.account, tw.region, tw.table), []).append(tw)
    firsts = [a.first_time for a in spans if a.calls]
    lasts = [a.last_time for a in spans if a.calls]
    start, end = (min(firsts), max(lasts)) if firsts else (None, None)
    return {
        "format": PROFILE_FORMAT,
        "version": 1,
        "growth": float(growth),
        "period": {
            "start": _iso(start) if start is not None else None,
            "end": _iso(end) if end is not None else None,
            "seconds": max((a.window_seconds for a in spans), default=0),
        },
        "tables": [
            _table_profile(a, growth, by_table.get((a.account, a.region, a.table), []))
            for a in sorted(spans, key=lambda a: (a.account or "", a.region or "", a.table))
            if a.calls
        ],
    }

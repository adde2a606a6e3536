"""``ddb-audit what-if`` as text: ``table`` (terminal) and ``markdown``; ``json`` is :meth:`WhatIfResult.to_dict`.

Tables, indexes, keys, accounts and regions come from traffic: the terminal text goes through
:func:`auditor.escaping.terminal_text`, the Markdown through :func:`auditor.escaping.markdown_line_text` (no HTML,
link, escape sequence or extra table row can form).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from auditor.escaping import markdown_line_text, terminal_text
from auditor.findings_text import markdown_inline, markdown_table, render_columns
from auditor.whatif.limits import LimitItem, WhatIfResult

__all__ = ["describe_item", "headline", "render_what_if"]

#: Rows shown in the text renderings (the JSON has every item).
MAX_ROWS = 50


#: How a value from traffic is written: as it is (``str``), or escaped for the output format.
Escape = Callable[[object], str]


def _key_text(key: dict[str, Any] | None, esc: Escape = str) -> str:
    if not key:
        return "-"
    return ", ".join(f"{esc(k)}={esc(v)}" for k, v in key.items())


def _where(item: LimitItem, esc: Escape) -> str:
    if item.table == "*":
        return "account " + esc(item.account or "?") + (f" in {esc(item.region)}" if item.region else "")
    text = esc(item.table) + (f"/{esc(item.index)}" if item.index else "")
    return text + (f" key {_key_text(item.key, esc)}" if item.key else "")


def describe_item(item: LimitItem, escape: Escape = str) -> str:
    """``Orders key pk=CUSTOMER#42 reaches partition_write at 1.8x today's peak`` (names passed through
    ``escape``); ``... throttles now (N calls throttled: no headroom)`` for one the trail saw throttled."""
    if item.model.throttles_now:
        return (
            f"{_where(item, escape)} throttles now at {item.limit} ({item.throttled:,} calls throttled: no headroom "
            "at today's peak)"
        )
    return f"{_where(item, escape)} reaches {item.limit} at {item.headroom:.1f}x today's peak"


def headline(result: WhatIfResult, escape: Escape = str) -> str:
    """One sentence: how many limits the growth reaches and which comes first (names passed through ``escape``)."""
    g = f"{result.growth:g}x"
    if not result.items:
        return f"What if traffic grows {g}: no traffic with a known limit in the input."
    hit = result.throttling
    first = result.items[0]
    if not hit:
        return (
            f"What if traffic grows {g}: no limit is reached; the nearest is {describe_item(first, escape)} "
            f"({len(result.items)} limits checked)."
        )
    keys = [i for i in result.items if i.key and i.model.throttles_now]
    unkept = sum(t["calls_on_unkept_keys"] for t in result.throttled_keys)
    parts = [f"{len(keys):,} keys throttle now, each listed"] if keys else []
    parts += [f"{unkept:,} more throttled calls on keys the trail did not keep"] if unkept else []
    now = f" ({'; '.join(parts)})" if parts else ""
    return (
        f"What if traffic grows {g}: {len(hit)} of {len(result.items)} limits are reached{now}. "
        f"First to throttle: {describe_item(first, escape)}."
    )


def _rows(result: WhatIfResult, esc: Escape = str) -> list[tuple[str, ...]]:
    """The shown rows; ``esc`` escapes the values from traffic (the other cells are the tool's own text)."""
    return [
        (
            f"{i.headroom:.2f}x",
            "now" if i.model.throttles_now else "yes" if i.throttles_at(result.growth) else "no",
            esc(i.table),
            esc(i.index) if i.index else "-",
            _key_text(i.key, esc),
            i.limit + (f" ({i.access})" if i.access and not i.limit.startswith("partition_") else ""),
            f"{i.peak_per_second:,.1f}",
            f"{i.limit_per_second:,.0f}",
            i.source,
        )
        for i in result.items[:MAX_ROWS]
    ]


_HEADER = ("headroom", "throttles", "table", "index", "key", "limit", "peak/s", "limit/s", "source")


def render_what_if(result: WhatIfResult, fmt: str) -> str:
    """The result as ``table`` or ``markdown`` text (complete, written in one piece)."""
    rows = _rows(result, markdown_line_text if fmt == "markdown" else str)
    more = len(result.items) - len(rows)
    note = (
        "Headroom is the multiple of today's peak at which the resource reaches the limit; "
        "a key's peak is its busiest minute's average, or its busiest second when busier (the hot-key finding's "
        "number); a table's is its busiest minute's average, so bursts within a minute reach it sooner."
    )
    if fmt == "markdown":
        out = ["# What if traffic grows", "", headline(result, markdown_line_text), ""]
        if rows:
            # the traffic cells are escaped already; the tool's own cells only need "|" escaped
            own = (0, 1, 5, 6, 7, 8)
            out += markdown_table(
                _HEADER, ([markdown_inline(c) if n in own else c for n, c in enumerate(r)] for r in rows)
            )
            out.append("")
        if more > 0:
            out += [f"{more} more in the JSON output.", ""]
        out += [note, *(markdown_line_text(n) for n in result.notes), ""]
        return "\n".join(out)
    lines = [headline(result, terminal_text), ""]
    if rows:
        lines += render_columns(rows, _HEADER).rstrip("\n").split("\n")
    if more > 0:
        lines.append(f"... {more} more (use --format json for all)")
    lines += ["", note, *(terminal_text(n) for n in result.notes)]
    return "\n".join(lines) + "\n"

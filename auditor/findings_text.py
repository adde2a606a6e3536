"""Text renderers for the CLI: ``json``, ``table`` (terminal) and ``markdown``.

Values from traffic (table and index names, principals, key templates, finding texts that quote them) go through
the escaping function of the output format (:mod:`auditor.escaping`): the terminal table strips control and
bidirectional characters before a cell is cut to width, Markdown escapes HTML and link syntax.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from auditor.escaping import markdown_code, markdown_text, terminal_text
from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import Finding

FORMATS = ("json", "table", "markdown")


def to_json(document: Any) -> str:
    """Pretty JSON with a trailing newline."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"


ELLIPSIS = "…"
#: A cut backs up to the last space when the word it would split is at most this long (a longer run is no word).
LONGEST_WORD = 30


def shorten(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, ending in ``…`` when cut: at a word boundary (the cut word is dropped,
    ``159 writ…`` becomes ``159 …``), never inside a number nor an ``&amp;``-style escape. Every output that shortens
    text (terminal cells, Slack, the report) uses this one function."""
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    end = limit - 1
    cut = text[:end]
    if cut and not cut[-1].isspace() and not text[end].isspace():  # inside a word
        space = max(cut.rfind(" "), cut.rfind("\n"))
        if space >= 0 and end - space - 1 <= LONGEST_WORD:
            cut = cut[: space + 1]
        else:
            digits = len(cut) - len(cut.rstrip("0123456789.,"))
            if digits and text[end].isdigit() and digits < len(cut):
                cut = cut[: len(cut) - digits]
    amp = cut.rfind("&", max(0, len(cut) - 6))
    if amp != -1 and ";" not in cut[amp:] and ";" in text[amp : amp + 8]:
        cut = cut[:amp]  # never half an HTML entity
    return cut + ELLIPSIS


def _cut(text: str, width: int) -> str:
    # cleaned first: a cut cannot leave an escape sequence open, and the width counts what is shown
    return shorten(terminal_text(text), width)


def _columns(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    rows = [[terminal_text(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines


def render_columns(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """Aligned columns with an upper-case header line."""
    return "\n".join(_columns(rows, header)) + "\n"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]], *, right: int = 0) -> list[str]:
    """A GFM table's lines: the header, the delimiter row (the last ``right`` columns right-aligned), one line per
    row. Cells are written as they are: escape what comes from traffic first (:func:`markdown_inline`,
    :func:`auditor.escaping.markdown_text`)."""
    delimiter = "|" + "---|" * (len(header) - right) + "---:|" * right
    return ["| " + " | ".join(header) + " |", delimiter, *("| " + " | ".join(row) + " |" for row in rows)]


def markdown_inline(text: str) -> str:
    """Plain text on one Markdown line (a heading, a list item, a table cell): ``|`` cannot end a table cell and a
    line break cannot end the line."""
    return text.replace("|", "\\|").replace("\n", " ")


def _cell_code(value: str) -> str:
    # a code span in a GFM table cell: "|" still ends the cell unless backslash-escaped (the backslash is dropped)
    return markdown_code(value).replace("|", "\\|")


def findings_table(findings: Sequence[Finding]) -> list[str]:
    """Findings as aligned columns, then each finding's summary and fix."""
    if not findings:
        return ["No findings."]
    rows = [
        (f.severity.value, f.kind.value, _cut(f.table + (f"/{f.index}" if f.index else ""), 32), _cut(f.title, 70))
        for f in findings
    ]
    lines = _columns(rows, ("severity", "kind", "table", "title"))
    lines.append("")
    for n, f in enumerate(findings, 1):
        lines.append(f"[{n}] {f.severity.value.upper()} {terminal_text(f.title)}")
        lines.append(f"    {terminal_text(f.summary)}")
        lines.append(f"    Fix: {terminal_text(f.recommendation)}")
        lines.append(f"    id {f.id}, seen {f.first_seen:%Y-%m-%d %H:%M} to {f.last_seen:%Y-%m-%d %H:%M} UTC")
    return lines


def patterns_table(patterns: Sequence[AccessPattern], limit: int = 40) -> list[str]:
    """The access-pattern catalogue as columns (the busiest ``limit`` rows)."""
    rows = [
        (
            p.table,
            p.index or "-",
            p.operation,
            _cut(p.key_template or "-", 48),
            str(p.requests),
            f"{p.share:.1%}",
            "yes" if p.efficient else "NO",
        )
        for p in patterns[:limit]
    ]
    lines = _columns(rows, ("table", "index", "operation", "key template", "requests", "share", "efficient"))
    if len(patterns) > limit:
        lines.append(f"... {len(patterns) - limit} more (use --format json for all)")
    return lines


def render_table(findings: Sequence[Finding], patterns: Sequence[AccessPattern], stats: dict[str, int]) -> str:
    """Terminal rendering of an analysis."""
    lines = ["Findings", "========", *findings_table(findings), "", "Access patterns", "==============="]
    lines += patterns_table(patterns) if patterns else ["No DynamoDB data events."]
    lines += ["", "Input: " + ", ".join(f"{terminal_text(k)}={terminal_text(v)}" for k, v in stats.items())]
    return "\n".join(lines) + "\n"


def render_markdown(findings: Sequence[Finding], patterns: Sequence[AccessPattern], stats: dict[str, int]) -> str:
    """Markdown rendering of an analysis (for tickets and wikis)."""
    out = ["# DynamoDB traffic audit", "", "## Findings", ""]
    if findings:
        out += markdown_table(
            ("Severity", "Kind", "Table", "Finding"),
            ((f.severity.value, f.kind.value, markdown_text(f.table), markdown_text(f.title)) for f in findings),
        )
        for f in findings:
            head = f"**{f.severity.value}** · `{f.kind.value}` · {markdown_code(f.id)}"
            out += ["", f"### {markdown_text(f.title)}", "", head, ""]
            out += [markdown_text(f.summary), "", f"**Fix:** {markdown_text(f.recommendation)}"]
    else:
        out.append("No findings.")
    out += ["", "## Access patterns", ""]
    if patterns:
        out += markdown_table(
            ("Table", "Index", "Operation", "Key template", "Requests", "Share", "Efficient"),
            (
                (
                    markdown_text(p.table),
                    markdown_text(p.index or "-"),
                    markdown_text(p.operation),
                    _cell_code(p.key_template or "-"),
                    str(p.requests),
                    f"{p.share:.1%}",
                    "yes" if p.efficient else "**no**",
                )
                for p in patterns
            ),
        )
    else:
        out.append("No DynamoDB data events.")
    out += ["", "## Input", "", ", ".join(f"{markdown_text(k)}: {markdown_text(v)}" for k, v in stats.items()), ""]
    return "\n".join(out)

"""Text renderers for the CLI: ``json``, ``table`` (terminal) and ``markdown``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import Finding

FORMATS = ("json", "table", "markdown")


def to_json(document: Any) -> str:
    """Pretty JSON with a trailing newline."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _columns(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines


def render_columns(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """Aligned columns with an upper-case header line."""
    return "\n".join(_columns(rows, header)) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


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
        lines.append(f"[{n}] {f.severity.value.upper()} {f.title}")
        lines.append(f"    {f.summary}")
        lines.append(f"    Fix: {f.recommendation}")
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
    lines += ["", "Input: " + ", ".join(f"{k}={v}" for k, v in stats.items())]
    return "\n".join(lines) + "\n"


def render_markdown(findings: Sequence[Finding], patterns: Sequence[AccessPattern], stats: dict[str, int]) -> str:
    """Markdown rendering of an analysis (for tickets and wikis)."""
    out = ["# DynamoDB traffic audit", "", "## Findings", ""]
    if findings:
        out += ["| Severity | Kind | Table | Finding |", "|---|---|---|---|"]
        out += [
            f"| {f.severity.value} | {f.kind.value} | {_md_escape(f.table)} | {_md_escape(f.title)} |" for f in findings
        ]
        for f in findings:
            out += ["", f"### {_md_escape(f.title)}", "", f"**{f.severity.value}** · `{f.kind.value}` · `{f.id}`", ""]
            out += [_md_escape(f.summary), "", f"**Fix:** {_md_escape(f.recommendation)}"]
    else:
        out.append("No findings.")
    out += ["", "## Access patterns", ""]
    if patterns:
        out += [
            "| Table | Index | Operation | Key template | Requests | Share | Efficient |",
            "|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {_md_escape(p.table)} | {_md_escape(p.index or '-')} | {p.operation} | "
            f"`{_md_escape(p.key_template or '-')}` | {p.requests} | {p.share:.1%} | "
            f"{'yes' if p.efficient else '**no**'} |"
            for p in patterns
        ]
    else:
        out.append("No DynamoDB data events.")
    out += ["", "## Input", "", ", ".join(f"{k}: {v}" for k, v in stats.items()), ""]
    return "\n".join(out)

"""analyze-trail's markdown and table renderers escape values from traffic (table names, principals, keys)."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

from markdown_it import MarkdownIt

from auditor.findings_text import render_markdown, render_table
from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint

HOSTILE_TABLES = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[x](javascript:alert(1))",
    "\x1b[31mRED\x1b[0m",
    "\x1b]8;;https://evil.example\x07" + "L" * 60 + "\x1b]8;;\x07",
    "bell\x07over\rwrite",
    "\u202egnp.exe",
    "a|b",
]
T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _finding(table: str) -> Finding:
    return Finding(
        id=fingerprint("scan", "1", "us-east-1", table, None, "x"),
        kind=FindingKind.SCAN,
        severity=Severity.HIGH,
        account="111122223333",
        region="us-east-1",
        table=table,
        title=f"Scans on {table}",
        summary=f"arn:aws:iam::1:role/{table} scanned {table}.",
        recommendation=f"Query {table} by key.",
        evidence={"principal": f"arn:aws:iam::1:role/{table}", "operation": "Scan", "count": 3, "source": "cloudtrail"},
        first_seen=T0,
        last_seen=T0,
    )


def _pattern(table: str) -> AccessPattern:
    return AccessPattern(
        table=table,
        index=table,
        operation="GetItem",
        key_template=f"pk={table}`|",
        requests=3,
        share=1.0,
        efficient=True,
    )


def test_markdown_output_forms_no_html_or_links_from_values() -> None:
    findings = [_finding(t) for t in HOSTILE_TABLES]
    patterns = [_pattern(t) for t in HOSTILE_TABLES]
    text = render_markdown(findings, patterns, {"records_read": 3})
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<script" not in html and "<img" not in html and "<a " not in html
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\r" not in text
    # every table row keeps its column count: the findings table has 4 cells, the patterns table 7
    rows = html.split("<tr>")[1:]
    assert sum(1 for r in rows if r.count("<td") == 4) == len(findings)
    assert sum(1 for r in rows if r.count("<td") == 7) == len(patterns)


def test_table_output_writes_no_control_or_bidi_characters() -> None:
    findings = [_finding(t) for t in HOSTILE_TABLES]
    patterns = [_pattern(t) for t in HOSTILE_TABLES]
    text = render_table(findings, patterns, {"records_read": 3})
    bad = [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")]
    assert not bad, sorted(set(bad))
    assert "RED" in text and "gnp.exe" in text
    # a long cell is cut after cleaning: the cut leaves no ESC behind and the column stays aligned
    assert "…" in text

"""One escaping function per output format, for values that come from traffic (table names, principals, keys).

A value read from CloudTrail, a stream or a findings file is attacker-controlled. Every renderer passes such values,
and only those, through the function for its format: :func:`markdown_text` (:func:`markdown_line_text` within a
line), :func:`terminal_text`, :func:`report_text`, :func:`csv_safe` (with :func:`csv_line`). What each one removes
or escapes is in docs/untrusted-values.md.
"""

from __future__ import annotations

import re
import unicodedata

#: C0 controls (except tab and line feed, handled per format), DEL and the C1 controls (U+0080-U+009F: CSI, OSC...).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Line breaks a value must not carry into a single-line cell: LF, CR, VT, FF, NEL, LS, PS.
_LINE_BREAKS = re.compile(r"[\n\r\x0b\x0c\x85\u2028\u2029]")
#: Bidirectional formatting characters (Unicode TR#9 explicit embeddings, overrides and isolates, marks).
_BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: Markdown characters that start emphasis, code spans, links, images, headings, table cells or strikethrough.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#!|~])")
#: A list marker or block quote at the start of a value (``- x``, ``+ x``, ``1. x``, ``1) x``; ``>`` is an entity).
_MARKDOWN_BLOCK_START = re.compile(r"^(\s*)([-+]|\d+(?=[.)]))")


def _strip_format_chars(text: str) -> str:
    # Unicode category Cf (format): bidi controls, zero-width joiners/spaces, the BOM, interlinear annotation...
    # They are invisible and can reorder or hide what a reader sees; a real table name or principal has none.
    if text.isascii():
        return text
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def terminal_text(value: object) -> str:
    """``value`` as text safe to write to a terminal: no control, escape or bidirectional characters.

    Line breaks and tabs become spaces (one value, one line). What remains cannot start an escape sequence (ESC,
    CSI and OSC introducers are controls), so cutting the result to a column width cannot leave one open.
    """
    text = _LINE_BREAKS.sub(" ", str(value)).replace("\t", " ")
    text = _CONTROL.sub("", text)
    return _strip_format_chars(_BIDI.sub("", text))


def drop_controls(text: str) -> str:
    """``text`` without control and bidirectional formatting characters; line feeds and tabs are kept.

    For whole rendered fragments (report templates), where line structure is the renderer's own.
    """
    return _BIDI.sub("", _CONTROL.sub("", text.replace("\r\n", "\n")))


def report_text(value: object) -> str:
    """``value`` for report text (Markdown or HTML report): control and format characters (bidirectional controls,
    soft hyphens, zero-width characters) dropped, line breaks as spaces."""
    text = _LINE_BREAKS.sub(" ", str(value)).replace("\t", " ")
    return _strip_format_chars(_BIDI.sub("", _CONTROL.sub("", text)))


def markdown_text(value: object) -> str:
    """``value`` as literal Markdown text: no HTML, links, images, emphasis or table-cell breaks can form.

    ``&``, ``<`` and ``>`` become HTML entities (so ``<script>`` or ``<img onerror=...>`` show as text and a raw
    ``&lt;`` stays literal), Markdown punctuation is backslash-escaped (``[x](javascript:...)`` cannot become a
    link, ``|`` cannot end a table cell), and control characters and line breaks go as in :func:`report_text`.
    """
    text = report_text(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    return _MARKDOWN_BLOCK_START.sub(_escape_block_start, text, count=1)


#: What :func:`markdown_line_text` escapes: as ``_MARKDOWN_SPECIAL`` without ``#`` (a heading only at a line start).
_MARKDOWN_INLINE_SPECIAL = re.compile(r"([\\`*_{}\[\]()!|~])")


def markdown_line_text(value: object) -> str:
    """``value`` as literal Markdown text inside a line (a table cell, the middle of a sentence).

    As :func:`markdown_text`, except that ``#`` and list markers, which act only at the start of a line, are kept
    (``pk=CUSTOMER#42`` stays as it is). Never use it for text that can start a line.
    """
    text = report_text(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_INLINE_SPECIAL.sub(r"\\\1", text)


def _escape_block_start(m: re.Match[str]) -> str:
    lead, marker = m.group(1), m.group(2)
    # "- x" -> "\- x"; "1. x" -> "1\. x" (the escaped "." or ")" ends the list marker)
    return lead + (marker + "\\" if marker.isdigit() else "\\" + marker)


def markdown_code(value: object) -> str:
    """``value`` inside a Markdown code span: a span delimited by more backticks than the value's longest run.

    Inside a code span nothing is interpreted (no HTML, no links), so only the delimiter needs care. Control
    characters and line breaks go as in :func:`report_text`.
    """
    text = report_text(value)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


#: First characters that make a spreadsheet cell a formula (OWASP CSV injection), incl. tab and carriage return.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: A ``;`` followed (after spaces or quotes) by a formula character.
_AFTER_SEMICOLON = re.compile(r";(?=[ \"]*[=+\-@\t\r])")


def csv_safe(value: object) -> str:
    """``value`` as one CSV cell that a spreadsheet shows as text, never evaluates.

    A leading ``'`` goes before a value starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (also
    when it is only preceded by spaces: some spreadsheets trim them). Control characters other than tab, line
    feed and carriage return are dropped. Quoting of commas, quotes and line breaks is the ``csv`` writer's job.
    An ``int`` or ``float`` (a numeric column: ``-3`` is a number there, not a formula) is written as it is.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "", str(value))
    # Where ";" is the list separator (German or French spreadsheets) a ";" starts a new cell: one that would
    # start with a formula character gets its "'" too (quotes around it do not help: they end the quoted cell).
    text = _AFTER_SEMICOLON.sub(";'", text)
    if text.lstrip(" ").startswith(_FORMULA_START) or text.startswith(_FORMULA_START):
        return "'" + text
    return text


def csv_line(value: object) -> str:
    """``value`` for a CSV cell on one line: line breaks (CR, LF, VT, FF, NEL, LS, PS) become spaces.

    A quoted cell may hold a line break, but programs that split the file into lines first start a new row
    inside the value; applied before :func:`csv_safe`.
    """
    return _LINE_BREAKS.sub(" ", str(value))

"""The per-format escaping layer (auditor/escaping.py): hostile values form no markup, escape sequence or formula."""

from __future__ import annotations

import csv
import io
import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from auditor.escaping import csv_safe, markdown_code, markdown_text, report_text, terminal_text

#: Injection payloads seen in the fuzz run (table names, principals, key values).
PAYLOADS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1))",
    "![x](https://evil.example/p.png)",
    "<https://evil.example>",
    "a|b|c",
    "**bold** _it_ `code` ~~s~~",
    "# heading",
    "- item",
    "1. item",
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
    "\x1b]8;;https://evil.example\x1b\\open",
    "bell\x07",
    "over\rwrite",
    "\u202egnp.exe",
    "line\nbreak",
    '=HYPERLINK("https://evil.example")',
    "+1+1",
    "-2+3",
    "@SUM(A1)",
    "\tx",
    "\rx",
    "&lt;script&gt;",
]

_md = MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _html_of(markdown: str) -> str:
    return _md.render(markdown)


def test_markdown_text_renders_as_the_literal_value() -> None:
    for value in PAYLOADS:
        escaped = markdown_text(value)
        html = _html_of(escaped)
        for tag in ("<script", "<img", "<a ", "<em", "<strong", "<code", "<h1", "<ul", "<ol", "<s>", "<del"):
            assert tag not in html, (value, html)
        # The paragraph's text is the value with its control characters dropped and line breaks as spaces
        text = re.sub(r"</?p>\n?", "", html).strip()
        text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
        assert text == report_text(value).strip(), (value, escaped, html)


def test_markdown_text_stays_in_its_table_cell() -> None:
    rows = "\n".join(f"| {markdown_text(v)} | x |" for v in PAYLOADS)
    html = _html_of("| value | other |\n|---|---|\n" + rows + "\n")
    assert html.count("<tr>") == len(PAYLOADS) + 1
    assert html.count("<td>x</td>\n</tr>") == len(PAYLOADS)  # every row kept its second cell
    assert "<script" not in html and "<img" not in html and "<a " not in html


def test_markdown_code_is_one_code_span_whatever_the_backticks() -> None:
    for value in ["a`b", "``x``", "`", "<b>x</b>", "[a](javascript:x)", "plain"]:
        html = _html_of(markdown_code(value))
        assert html.count("<code>") == 1, (value, html)
        inner = html.split("<code>")[1].split("</code>")[0]
        assert inner.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace("&quot;", '"') == value


def test_terminal_text_has_no_control_or_bidi_characters() -> None:
    for value in PAYLOADS:
        out = terminal_text(value)
        assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in out), (value, out)
    assert terminal_text("\x1b]8;;https://evil.example\x07link\x1b]8;;\x07") == "]8;;https://evil.examplelink]8;;"
    assert terminal_text("\u202egnp.exe") == "gnp.exe"
    assert terminal_text("Orders\r\nEVIL") == "Orders  EVIL"
    assert terminal_text("Café-Orders.v2") == "Café-Orders.v2"


@given(st.text())
@settings(max_examples=300, deadline=None)
def test_terminal_text_never_passes_a_control_character(value: str) -> None:
    out = terminal_text(value)
    assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in out)
    # cutting the result anywhere cannot leave an escape sequence open: there is no ESC, CSI or OSC left
    assert "\x1b" not in out and "\x9b" not in out and "\x9d" not in out


@given(st.text())
@settings(max_examples=300, deadline=None)
def test_markdown_text_never_forms_html(value: str) -> None:
    html = _html_of(markdown_text(value))
    assert "<script" not in html and "<img" not in html and "<a " not in html


@given(st.text())
@settings(max_examples=300, deadline=None)
def test_report_and_markdown_text_never_pass_a_control_or_format_character(value: str) -> None:
    # a soft hyphen (U+00AD) or a zero-width space is invisible: a name from traffic that holds one reads as another
    for out in (report_text(value), markdown_text(value)):
        assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in out)


def test_report_text_drops_soft_hyphens_and_zero_width_characters() -> None:
    assert report_text("Get\u00adItem") == "GetItem"
    assert markdown_text("Orders\u200b\u2060") == "Orders"


def test_report_text_drops_controls_and_keeps_the_rest() -> None:
    assert report_text("Orders\x00\x07\x1b[2J") == "Orders[2J"
    assert report_text("a\nb\tc") == "a b c"
    assert report_text("<b>&") == "<b>&"  # HTML escaping is Jinja's autoescape; Markdown has markdown_text


def test_csv_safe_prefixes_formula_starts() -> None:
    assert csv_safe("=1+1") == "'=1+1"
    assert csv_safe("+1") == "'+1"
    assert csv_safe("-1") == "'-1"
    assert csv_safe("@SUM(A1)") == "'@SUM(A1)"
    assert csv_safe("\t=1") == "'\t=1"
    assert csv_safe("\r=1") == "'\r=1"
    assert csv_safe("  =1") == "'  =1"
    assert csv_safe("Orders") == "Orders"
    assert csv_safe("a=b") == "a=b"
    assert csv_safe("") == ""
    # numbers in numeric columns stay numbers
    assert csv_safe(-3) == "-3"
    assert csv_safe(-0.5) == "-0.5"
    assert csv_safe(True) == "True"
    # control characters other than tab/LF/CR are dropped
    assert csv_safe("a\x00b\x1bc") == "abc"


def test_csv_safe_cells_round_trip_through_the_csv_module() -> None:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([csv_safe(v) for v in PAYLOADS])
    (row,) = list(csv.reader(io.StringIO(buf.getvalue())))
    assert len(row) == len(PAYLOADS)
    for cell in row:
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_csv_safe_guards_cells_that_start_after_a_semicolon_and_csv_line_keeps_one_line() -> None:
    from auditor.escaping import csv_line

    assert csv_safe("a;=cmd") == "a;'=cmd"
    assert csv_safe('a; "+1') == "a;' \"+1"
    assert csv_safe("a;b") == "a;b"
    assert csv_line("a\r\nb\nc\rd\u2028e") == "a  b c d e"


def test_markdown_line_text_keeps_hash_but_no_html_link_or_cell_break() -> None:
    from auditor.escaping import markdown_line_text

    assert markdown_line_text("pk=CUSTOMER#42") == "pk=CUSTOMER#42"
    assert markdown_line_text("<b>[x](javascript:y)|\x1b\n") == "&lt;b&gt;\\[x\\]\\(javascript:y\\)\\| "

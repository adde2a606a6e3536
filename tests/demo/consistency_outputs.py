"""Readers of the demo's outputs for the consistency checker (:mod:`tests.demo.consistency`): each output parsed back
from its own format (escaped HTML, Markdown tables, Slack mrkdwn, aligned terminal columns) into plain cells.

No knowledge of findings here: the weekly report becomes its sections' tables and its finding details, a Slack digest
its listed items, a terminal listing its rows. Numbers are read back with :func:`shown_number`.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

#: A number as the outputs print it (thousands separators, a decimal part), not glued to an identifier
#: (``DOC#7``, ``CUSTOMER#…fd89c9`` and ids hold digits that are no figures).
NUMBER = re.compile(r"(?<![\w#…\-/:.])-?\d[\d,]*(?:\.\d+)?(?![\w#])")


def numbers(text: str) -> list[str]:
    """The figures in ``text``, in order, as printed (``1,438``, ``0.46``)."""
    return [m.group().rstrip(",") for m in NUMBER.finditer(text)]


def shown_number(text: str) -> tuple[float, int] | None:
    """The first figure in ``text`` and how many decimals it shows (None: no figure)."""
    found = numbers(text)
    if not found:
        return None
    token = found[0].replace(",", "")
    decimals = len(token.split(".")[1]) if "." in token else 0
    return float(token), decimals


def agrees(shown: str, expected: float, scale: float = 1.0) -> bool:
    """Whether the first figure of ``shown`` is ``expected * scale`` rounded to the decimals it shows."""
    parsed = shown_number(shown)
    if parsed is None:
        return False
    value, decimals = parsed
    want = expected * scale
    return abs(value - want) <= 0.5 * 10**-decimals + 1e-9 * max(1.0, abs(want))


# ------------------------------------------------------------------------------------------------ the report


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    #: The sub-heading the table sits under (the report's status groups), "" when none.
    heading: str = ""

    def records(self) -> list[dict[str, str]]:
        return [dict(zip(self.header, row, strict=False)) for row in self.rows]


@dataclass
class Detail:
    """One finding's block under "Finding details"."""

    title: str = ""
    meta: list[str] = field(default_factory=list)
    summary: str = ""
    evidence: list[tuple[str, str]] = field(default_factory=list)
    fix: str = ""


@dataclass
class ParsedReport:
    """A weekly report read back: section title -> its tables, finding id -> its details."""

    sections: dict[str, list[Table]] = field(default_factory=dict)
    details: dict[str, Detail] = field(default_factory=dict)
    #: The summary's savings breakdown line ("Potential savings per month: billing mode $144, idle tables $66.").
    breakdown: str = ""
    #: The summary's headline sentence.
    headline: str = ""

    def tables(self, section: str) -> list[Table]:
        return self.sections.get(section, [])


_MD_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # a backslash before any ASCII punctuation


def md_plain(cell: str) -> str:
    """A Markdown cell as plain text: code spans and emphasis unwrapped, escapes undone."""
    text = cell.strip()
    code = re.fullmatch(r"(`+) ?(.*?) ?\1", text)
    if code:
        return code.group(2).replace("\\|", "|")
    text = re.sub(r"(?<!\\)\*\*(.*?)(?<!\\)\*\*", r"\1", text)
    return _MD_ESCAPED.sub(r"\1", text)


def _md_cells(line: str) -> list[str]:
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    return [md_plain(c) for c in re.split(r"(?<!\\)\|", inner)]


def _md_tables(lines: list[str]) -> list[Table]:
    tables: list[Table] = []
    block: list[str] = []
    heading = ""
    for line in [*lines, ""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if len(block) >= 2 and set(block[1].replace("|", "").replace(":", "").strip()) <= {"-"}:
            tables.append(Table(_md_cells(block[0]), [_md_cells(b) for b in block[2:]], heading))
        block = []
        if line.startswith("### "):
            heading = md_plain(line[4:])
    return tables


def parse_markdown_report(text: str) -> ParsedReport:
    out = ParsedReport()
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = body.splitlines()
        out.sections[title.strip()] = _md_tables(lines)
        if title.strip() == "Summary":
            out.headline = md_plain(next((p for p in body.split("\n\n") if p.strip()), ""))
        found = re.search(r"^Potential savings per month: (.*)$", body, flags=re.M)
        out.breakdown = md_plain(found.group(1)) if found else out.breakdown
        if title.strip() == "Finding details":
            for block in re.split(r"^### ", body, flags=re.M)[1:]:
                fid = re.search(r"^Finding id `+ ?(.+?) ?`+", block, flags=re.M)
                if not fid:
                    continue
                blines = block.splitlines()
                paras = [p.strip() for p in "\n".join(blines[1:]).split("\n\n") if p.strip()]
                detail = Detail(title=md_plain(blines[0]))
                detail.meta = [md_plain(m) for m in paras[0].split(" · ")] if paras else []
                detail.summary = md_plain(paras[1]) if len(paras) > 1 else ""
                tables = _md_tables(blines)
                if tables:
                    detail.evidence = [(r[0], r[1]) for r in tables[0].rows if len(r) >= 2]
                fix = re.search(r"^\*\*Fix:\*\* (.*)$", block, flags=re.M)
                detail.fix = md_plain(fix.group(1)) if fix else ""
                out.details[fid.group(1).replace("\\|", "|")] = detail
    return out


class _Node:
    __slots__ = ("attrs", "children", "tag")

    def __init__(self, tag: str, attrs: dict[str, str]) -> None:
        self.tag, self.attrs, self.children = tag, attrs, []  # type: ignore[var-annotated]

    def text(self) -> str:
        return " ".join("".join(c if isinstance(c, str) else f" {c.text()} " for c in self.children).split())

    def find(self, tag: str, **attrs: str) -> list[_Node]:
        found = []
        for c in self.children:
            if isinstance(c, _Node):
                if c.tag == tag and all(attrs[k] in c.attrs.get(k, "").split() for k in attrs):
                    found.append(c)
                found += c.find(tag, **attrs)
        return found


_VOID = {"br", "hr", "img", "meta", "link", "input", "col", "wbr"}


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = _Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(_Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def _walk(node: _Node) -> list[_Node]:
    out = []
    for c in node.children:
        if isinstance(c, _Node):
            out.append(c)
            out += _walk(c)
    return out


def _html_tables(section: _Node) -> list[Table]:
    tables, heading = [], ""
    for node in _walk(section):
        if node.tag == "h3":
            heading = node.text()
        elif node.tag == "table":
            tables.append(_html_table(node, heading))
    return tables


def _html_table(node: _Node, heading: str) -> Table:
    head = node.find("thead")
    header = [th.text() for th in head[0].find("th")] if head else []
    rows = []
    for body in node.find("tbody"):
        for tr in body.find("tr"):
            rows.append([c.text() for c in tr.children if isinstance(c, _Node) and c.tag in ("th", "td")])
    return Table(header, rows, heading)


def parse_html_report(text: str) -> ParsedReport:
    tree = _Tree()
    tree.feed(text)
    out = ParsedReport()
    for section in tree.root.find("section"):
        h2 = section.find("h2")
        if not h2:
            continue
        out.sections[h2[0].text()] = _html_tables(section)
    cards = {}
    for card in tree.root.find("li", **{"class": "card"}):
        parts = {s.attrs.get("class", ""): s.text() for s in card.children if isinstance(s, _Node)}
        cards[parts.get("label", "")] = (parts.get("value", ""), parts.get("note", ""))
    if cards:  # the summary's cards as the Markdown's summary table and breakdown line
        worsened = re.match(r"(\S+) worsened", cards.get("New", ("", ""))[1])
        summary = {
            "Open findings": cards.get("Open findings", ("", ""))[0],
            "New": cards.get("New", ("", ""))[0],
            "Worsened": worsened.group(1) if worsened else "",
            "Resolved": cards.get("Resolved", ("", ""))[0],
            "Potential savings": cards.get("Savings", ("", ""))[0],
        }
        out.sections.setdefault("Summary", []).append(Table(list(summary), [list(summary.values())]))
        out.breakdown = cards.get("Savings", ("", ""))[1].removeprefix("per month: ").replace(" · ", ", ")
    lead = tree.root.find("p", **{"class": "lead"})
    out.headline = lead[0].text() if lead else ""
    for article in tree.root.find("article"):
        fid = article.attrs.get("id", "").removeprefix("f-")
        meta = article.find("div", **{"class": "meta"})
        fix = article.find("div", **{"class": "fix"})
        paras = [p for p in article.find("p") if "class" not in p.attrs]
        out.details[fid] = Detail(
            title=article.find("h3")[0].text(),
            meta=[s.text() for s in meta[0].children if isinstance(s, _Node)] if meta else [],
            summary=paras[0].text() if paras else "",
            evidence=[(d.find("dt")[0].text(), d.find("dd")[0].text()) for d in article.find("div") if d.find("dt")],
            fix=fix[0].text().removeprefix("Fix:").strip() if fix else "",
        )
    return out


# ------------------------------------------------------------------------------------------------ Slack


@dataclass
class SlackItem:
    """One finding listed in a run digest."""

    post: int
    finding_id: str
    severity: str
    title: str
    fix: str


_LOOK_ALIKES = str.maketrans({"\u2217": "*", "\uff3f": "_", "\u223c": "~"})


def mrkdwn_plain(text: str) -> str:
    """Slack mrkdwn as plain text: entities and the look-alikes of formatting characters undone."""
    return html.unescape(text.translate(_LOOK_ALIKES))


def slack_items(posts: list[dict[str, object]]) -> list[SlackItem]:
    out = []
    for n, post in enumerate(posts):
        blocks = post.get("blocks")
        for block in blocks if isinstance(blocks, list) else []:
            text = (block.get("text") or {}).get("text", "") if block.get("type") == "section" else ""
            fid = re.search(r"^Finding `([^`]+)`", text, flags=re.M)
            if not fid:
                continue
            first = text.split("\n", 1)[0]
            head = re.match(r"\S+ \*(.+?)\* `[^`]*` (.*)$", first)
            fix = re.search(r"^Fix: (.*)$", text, flags=re.M)
            sev = head.group(1).split("→")[-1].strip().lower() if head else ""
            out.append(
                SlackItem(
                    post=n,
                    finding_id=html.unescape(fid.group(1)),
                    severity=sev,
                    title=mrkdwn_plain(head.group(2)) if head else "",
                    fix=mrkdwn_plain(fix.group(1)) if fix else "",
                )
            )
    return out


# ------------------------------------------------------------------------------------------------ terminal text


def columns(text: str, first: str) -> list[dict[str, str]]:
    """The rows of the aligned columns in ``text`` whose header line starts with ``first`` (up to a blank line)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(first)), None)
    if start is None:
        return []
    header = lines[start]
    bounds = [m.start() for m in re.finditer(r"(?:(?<=  )|^)\S", header)]
    names = [header[b:e].strip().lower() for b, e in zip(bounds, [*bounds[1:], None], strict=True)]
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        cells = [line[b:e].strip() for b, e in zip(bounds, [*bounds[1:], None], strict=True)]
        rows.append(dict(zip(names, cells, strict=True)))
    return rows

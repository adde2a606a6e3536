"""``ddb-audit model-review`` as text: ``table`` (terminal) and ``markdown``; ``json`` is :func:`review_document`.

Tables, keys, attributes and principals come from traffic: the terminal text goes through
:func:`auditor.escaping.terminal_text`, the Markdown through :func:`auditor.escaping.markdown_line_text`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from auditor.escaping import markdown_line_text, terminal_text
from auditor.findings_text import markdown_table, render_columns
from auditor.review.model import Proposal
from auditor.review.review import ReplayRow
from auditor.review.rewrite import WhatIfReplay

Escape = Callable[[object], str]


def review_document(
    proposals: Sequence[Proposal],
    replayed: Sequence[ReplayRow] | None = None,
    whatif: Sequence[WhatIfReplay] = (),
) -> dict[str, Any]:
    """The JSON document (docs/contract.md ``model-review``)."""
    doc: dict[str, Any] = {
        "proposals": [p.to_dict() for p in proposals],
        "monthly_saving": round(sum(p.before.monthly - p.after.monthly for p in proposals), 2),
    }
    if replayed is not None:
        doc["replay"] = [r.to_dict() for r in replayed]
        doc["what_if"] = [w.to_dict() for w in whatif]
    return doc


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _headroom(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _row(p: Proposal, esc: Escape) -> list[str]:
    return [
        p.id,
        p.kind,
        esc(p.table) + (f"/{esc(p.index)}" if p.index else ""),
        p.confidence,
        f"{_money(p.before.monthly)} -> {_money(p.after.monthly)}",
        f"{_headroom(p.before.headroom)} -> {_headroom(p.after.headroom)}",
    ]


_HEADER = ("id", "kind", "table", "confidence", "monthly cost", "headroom at peak")


def _details(p: Proposal, esc: Escape, bullet: str) -> list[str]:
    lines = [f"{p.id} {esc(p.title)}"]
    change = ", ".join(f"{k}={esc(v)}" for k, v in p.change.items() if v not in (None, [], ""))
    lines.append(f"{bullet}change: {change}")
    if p.patterns:
        lines.append(f"{bullet}access patterns: {'; '.join(esc(x) for x in p.patterns)}")
    if p.principals:
        lines.append(f"{bullet}principals: {', '.join(esc(x) for x in p.principals)}")
    if p.findings:
        lines.append(f"{bullet}findings: {', '.join(esc(x) for x in p.findings)}")
    for a in p.assumptions:
        lines.append(f"{bullet}assumes: {esc(a)}")
    return lines


def proposal_text(p: Proposal) -> str:
    """One proposal as plain text (the scheduled model review's message): the change, its price and headroom before
    and after, the access patterns, principals, findings and assumptions."""
    head = [
        terminal_text(p.title),
        f"{p.kind} on {terminal_text(p.table)}"
        + (f"/{terminal_text(p.index)}" if p.index else "")
        + f", confidence {p.confidence}",
        f"monthly cost {_money(p.before.monthly)} -> {_money(p.after.monthly)}, headroom at the peak "
        f"{_headroom(p.before.headroom)} -> {_headroom(p.after.headroom)}",
    ]
    return "\n".join(head + _details(p, terminal_text, "- ")[1:]) + "\n"


def _throttles(headroom: float | None) -> str:
    return _headroom(headroom) + (" (throttles)" if headroom is not None and headroom < 1 else "")


def _replay_rows(rows: Sequence[ReplayRow]) -> list[list[str]]:
    return [
        [
            r.proposal,
            r.kind,
            r.level,
            _headroom(r.headroom_before)
            + (" (throttles)" if r.headroom_before is not None and r.headroom_before < 1 else ""),
            _headroom(r.headroom_after)
            + (" (throttles)" if r.headroom_after is not None and r.headroom_after < 1 else ""),
            _money(r.monthly_before),
            _money(r.monthly_after),
        ]
        for r in rows
    ]


_REPLAY_HEADER = ("proposal", "kind", "load", "headroom before", "headroom after", "cost before", "cost after")


def _whatif_rows(rows: Sequence[WhatIfReplay], esc: Escape) -> list[list[str]]:
    return [
        [
            w.proposal,
            esc(w.table),
            ", ".join(f"{esc(k)}={esc(v)}" for k, v in w.key.items()),
            _throttles(w.headroom_before),
            _throttles(w.headroom_after),
        ]
        for w in rows
    ]


_WHATIF_HEADER = ("proposal", "table", "key", "what-if headroom before", "after")


def render_review(
    proposals: Sequence[Proposal], replayed: Sequence[ReplayRow] | None, fmt: str, whatif: Sequence[WhatIfReplay] = ()
) -> str:
    """``table`` or ``markdown`` text of the proposals (and of the replay, when run)."""
    md = fmt == "markdown"
    esc: Escape = markdown_line_text if md else terminal_text
    saving = sum(p.before.monthly - p.after.monthly for p in proposals)
    if not proposals:
        return "No proposals: no access pattern in this input repeats in a way the model should change.\n"
    change = f"monthly saving {_money(saving)}" if saving >= 0 else f"monthly cost rises {_money(-saving)}"
    head = f"{len(proposals)} proposals, {change} (on-demand prices)"
    rows = [_row(p, esc) for p in proposals]
    out: list[str] = []
    if md:
        out += ["## Model review", "", head, "", *markdown_table(_HEADER, rows), ""]
        for p in proposals:
            out += ["### " + _details(p, esc, "")[0], *(f"- {x}" for x in _details(p, esc, "")[1:]), ""]
        if replayed is not None:
            out += ["### Replay", "", *markdown_table(_REPLAY_HEADER, _replay_rows(replayed)), ""]
            if whatif:
                out += [*markdown_table(_WHATIF_HEADER, _whatif_rows(whatif, esc)), ""]
        return "\n".join(out)
    out = [head, "", render_columns(rows, _HEADER)]
    for p in proposals:
        out += ["\n".join(_details(p, esc, "  ")), ""]
    if replayed is not None:
        out += [
            "Replay (1x and 2x the average load, and the observed peak; each cost is a month at that load):",
            render_columns(_replay_rows(replayed), _REPLAY_HEADER),
        ]
        if whatif:
            out += [
                "The what-if over the rewritten traffic:",
                render_columns(_whatif_rows(whatif, esc), _WHATIF_HEADER),
            ]
    return "\n".join(out)

"""Slack messages: SNS finding events, run digests and report announcements in, Block Kit messages out (pure).

:func:`render_finding`, :func:`render_digest` and :func:`render_weekly_summary` build the messages within Slack's
documented Block Kit limits, escape Slack's control characters, drop control and bidirectional override characters
and redact key values; a message without usable JSON is posted as its readable text. Delivery is
:mod:`auditor.sinks.slack`. The inputs and limits are in docs/sinks.md.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import orjson
import structlog

from auditor.escaping import drop_controls
from auditor.findings_text import ELLIPSIS, shorten
from auditor.messages import (
    AttributeName,
    Digest,
    FindingNotification,
    MessageKind,
    WeeklySummary,
    message_kind,
    parse_digest,
    parse_finding,
    parse_weekly_summary,
)
from auditor.models.finding import KIND_LABELS, REQUIRED_EVIDENCE, Finding, FindingKind, isoformat_z
from auditor.redact import redact_finding, redact_text

log = structlog.get_logger(__name__)

# ----------------------------------------------------------------------------- Slack's documented limits

MAX_BLOCKS = 50
MAX_HEADER_TEXT = 150
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_CONTEXT_TEXT = 3000
#: The top-level ``text`` (Slack truncates at 40,000 and advises staying under 4,000).
MAX_MESSAGE_TEXT = 3000

#: Evidence is a compact list: names and values are shortened to these, and at most this many fields are shown.
EVIDENCE_NAME_MAX = 80
EVIDENCE_VALUE_MAX = 300
MAX_EVIDENCE_FIELDS = 30

SEVERITY_EMOJI = {
    "critical": ":red_circle:",
    "high": ":large_orange_circle:",
    "medium": ":large_yellow_circle:",
    "low": ":large_blue_circle:",
    "info": ":white_circle:",
}
RESOLVED_EMOJI = ":white_check_mark:"
STATUS_PREFIX = {"new": "", "worsened": "Worsened: ", "resolved": "Resolved: "}

_ENTITIES = ("&amp;", "&lt;", "&gt;")


#: mrkdwn formatting characters in values from traffic, replaced by look-alikes so a table name, principal or key
#: can neither format the message (``*bold*``, ``_italic_``, ``~strike~``, ```code```) nor break out of it.
_FORMATTING = str.maketrans({"*": "\u2217", "_": "\uff3f", "~": "\u223c", "`": "'"})
#: In ``plain_text`` (headers) ``&lt;`` would show literally: ``<`` and ``>`` become look-alikes instead, so a
#: ``<!channel>`` or ``<!here>`` in a value can never notify anyone.
_PLAIN = str.maketrans({"<": "\u2039", ">": "\u203a"})


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return drop_controls(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _inert(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with every text cleaned of control characters (C0 but line feed and tab, DEL, C1: NUL, ESC, BEL,
    CR...) and bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069): applied to each whole message,
    so no value from traffic keeps one, whichever field it went into."""
    return {k: _clean(v) for k, v in payload.items()}


def escape_entities(text: str) -> str:
    """Escape Slack's three control characters (``&``, ``<``, ``>``): enough inside inline code."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_mrkdwn(text: str) -> str:
    """A value made inert in mrkdwn: control characters escaped, formatting characters neutralised."""
    return escape_entities(text.translate(_FORMATTING))


def escape_plain(text: str) -> str:
    """A value made inert in a ``plain_text`` object (a header): no ``<!…>`` mention or link can form."""
    return text.translate(_PLAIN)


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when cut: at a word boundary, never inside a
    number nor an ``&amp;`` escape (:func:`auditor.findings_text.shorten`, the one cut of every output)."""
    return shorten(text, limit)


def recut(text: str) -> str:
    """A text cut upstream (it ends in ``…``, e.g. the digest's one-line fix), cut again at a word boundary so that it
    never ends inside a word or a number (``159 writ…`` becomes ``159 …``)."""
    if not text.endswith(ELLIPSIS):
        return text
    return shorten(text[: -len(ELLIPSIS)] + "xx", len(text))  # "xx": it went on past the cut


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def _field(label: str, value: str, limit: int = MAX_FIELD_TEXT) -> dict[str, Any]:
    head = f"*{escape_mrkdwn(label)}*\n"
    return _mrkdwn(head + truncate(escape_mrkdwn(value), limit - len(head)))


def _code(value: str) -> str:
    """An identifier shown as inline code (backticks inside would end it, so they become quotes)."""
    return "`" + value.replace("`", "'") + "`"


def _code_field(label: str, value: str | None) -> dict[str, Any]:
    head = f"*{escape_mrkdwn(label)}*\n"
    if not value:
        return _mrkdwn(head + "—")
    body = truncate(escape_entities(value.replace("`", "'")), MAX_FIELD_TEXT - len(head) - 2)
    return _mrkdwn(f"{head}`{body}`")


def _evidence_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 100 else f"{value:.4g}"
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and all(not isinstance(v, Mapping | list) for v in value.values()):
        return ", ".join(f"{k}={'null' if v is None else v}" for k, v in value.items()) or "{}"
    return orjson.dumps(value, default=str).decode()


def _slack_date(iso: Any) -> str:
    """A Slack date token (shown in the reader's time zone) with the ISO time as its fallback."""
    text = str(iso or "")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return escape_mrkdwn(text) or "—"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}|{escape_mrkdwn(text)}>"


def _evidence_order(kind: str, evidence: Mapping[str, Any]) -> list[str]:
    try:
        required = list(REQUIRED_EVIDENCE[FindingKind(kind)])
    except ValueError:
        required = []
    first = [k for k in required if k in evidence]
    return first + [k for k in evidence if k not in first]


def render_finding(
    finding: Finding, *, status: str | None = None, previous_severity: str | None = None
) -> dict[str, Any]:
    """The Slack message (``text`` and ``blocks``) for one typed finding (already redacted if it must be).

    ``status`` is the event (``new``, ``worsened``, ``resolved``); ``previous_severity`` is shown for ``worsened``.
    """
    severity = finding.severity.value
    kind = finding.kind.value
    table = finding.table
    title = finding.title or f"{kind} finding on {table}"
    status_key = (status or "").lower()
    emoji = RESOLVED_EMOJI if status_key == "resolved" else SEVERITY_EMOJI.get(severity, ":grey_question:")
    prefix = STATUS_PREFIX.get(status_key, "")
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {
                "type": "plain_text",
                "text": truncate(f"{emoji} {prefix}{escape_plain(title)}", MAX_HEADER_TEXT),
                "emoji": True,
            },
        },
        {
            "type": "section",
            "fields": [
                _code_field("Table", table),
                _code_field("Index", finding.index),
                _field("Kind", kind.replace("_", " ") or "—"),
                _field("Status", status or "—"),
                _field("Severity", f"{previous_severity} → {severity}" if previous_severity else severity),
                *(
                    [_field("Account / region", f"{finding.account or '—'} / {finding.region or '—'}")]
                    if finding.account or finding.region
                    else []
                ),
            ][:MAX_FIELDS],
        },
    ]
    summary = finding.summary
    if summary:
        blocks.append({"type": "section", "text": _mrkdwn(truncate(escape_mrkdwn(summary), MAX_SECTION_TEXT))})
    tail = _tail_blocks(finding)
    blocks.extend(_evidence_blocks(kind, finding.evidence, MAX_BLOCKS - len(blocks) - len(tail)))
    blocks.extend(tail)
    text = f"{severity.upper()} {status_key or 'finding'}: {title} ({table})"
    return _inert({"text": truncate(escape_mrkdwn(text), MAX_MESSAGE_TEXT), "blocks": blocks[:MAX_BLOCKS]})


def _evidence_blocks(kind: str, evidence: Any, budget: int) -> list[dict[str, Any]]:
    if not isinstance(evidence, Mapping) or not evidence or budget <= 0:
        return []
    names = _evidence_order(kind, evidence)
    fields = [
        _field(
            truncate(n.replace("_", " "), EVIDENCE_NAME_MAX), truncate(_evidence_value(evidence[n]), EVIDENCE_VALUE_MAX)
        )
        for n in names
    ]
    if len(fields) <= min(MAX_EVIDENCE_FIELDS, budget * MAX_FIELDS):
        shown_max = len(fields)
    else:  # one block is kept for the "more fields" note
        shown_max = min(MAX_EVIDENCE_FIELDS, (budget - 1) * MAX_FIELDS)
    shown, hidden = fields[:shown_max], len(fields) - shown_max
    blocks: list[dict[str, Any]] = []
    for i in range(0, len(shown), MAX_FIELDS):
        block: dict[str, Any] = {"type": "section", "fields": shown[i : i + MAX_FIELDS]}
        if i == 0:
            block["text"] = _mrkdwn("*Evidence*")
        blocks.append(block)
    if hidden:
        more = f"+{hidden} more evidence field{'s' if hidden != 1 else ''} in the finding store"
        blocks.append({"type": "context", "elements": [_mrkdwn(more)]})
    return blocks[:budget]


def _tail_blocks(finding: Finding) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    fix = finding.recommendation
    if fix:
        head = "*Fix*\n"
        blocks.append(
            {"type": "section", "text": _mrkdwn(head + truncate(escape_mrkdwn(fix), MAX_SECTION_TEXT - len(head)))}
        )
    elements = [
        f"Finding {_code(truncate(escape_entities(finding.id or '—'), 200))}",
        f"First seen {_slack_date(isoformat_z(finding.first_seen))}",
        f"Last seen {_slack_date(isoformat_z(finding.last_seen))}",
    ]
    blocks.append(
        {
            "type": "context",
            "elements": [_mrkdwn(truncate(e, MAX_CONTEXT_TEXT)) for e in elements][:MAX_CONTEXT_ELEMENTS],
        }
    )
    return blocks


def render_text_message(message: str, attributes: Mapping[str, str]) -> dict[str, Any]:
    """The Slack message for an event without a usable finding: its readable text, headed by its attributes."""
    severity = attributes.get(AttributeName.SEVERITY, "")
    status = attributes.get(AttributeName.STATUS, "")
    table = attributes.get(AttributeName.TABLE, "")
    kind = attributes.get(AttributeName.KIND, "")
    emoji = RESOLVED_EMOJI if status == "resolved" else SEVERITY_EMOJI.get(severity, ":grey_question:")
    label = " ".join(p for p in (status if status in STATUS_PREFIX else "", kind.replace("_", " "), "finding") if p)
    header = f"{emoji} {label[0].upper()}{label[1:]}" + (f" on {escape_plain(table)}" if table else "")
    if kind == MessageKind.WEEKLY_REPORT:
        week = attributes.get(AttributeName.WEEK)
        header = f"{REPORT_EMOJI} Weekly report" + (f" {escape_plain(week)}" if week else "")
    body = escape_mrkdwn(message.strip() or "(the message had no text)")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": truncate(header, MAX_HEADER_TEXT), "emoji": True}}
    ]
    chunks = _chunks(body, MAX_SECTION_TEXT)
    shown = chunks[: MAX_BLOCKS - 2]
    if len(shown) < len(chunks):
        shown[-1] = truncate(shown[-1], len(shown[-1]) - 1)  # ends in "…": the rest did not fit
    blocks.extend({"type": "section", "text": _mrkdwn(chunk)} for chunk in shown)
    blocks.append(
        {"type": "context", "elements": [_mrkdwn("Structured finding unavailable: showing the message text.")]}
    )
    text = f"{severity.upper() or 'FINDING'} {status or 'finding'}: {message.strip()}"
    return _inert({"text": truncate(escape_mrkdwn(text), MAX_MESSAGE_TEXT), "blocks": blocks})


def _chunks(text: str, size: int) -> list[str]:
    """Split escaped mrkdwn into pieces of at most ``size`` characters, at a newline when there is one."""
    out: list[str] = []
    while len(text) > size:
        cut = text.rfind("\n", size // 2, size)
        if cut == -1:
            cut = size
            amp = text.rfind("&", max(0, cut - 4), cut)
            if amp != -1 and any(text.startswith(e, amp) and amp + len(e) > cut for e in _ENTITIES):
                cut = amp
        out.append(text[:cut])
        text = text[cut:].lstrip("\n")
    if text:
        out.append(text)
    return out


def text_only(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The plain-text version of a message (what is posted when Slack rejects its blocks)."""
    return {"text": str(payload.get("text") or "DynamoDB audit finding")}


# ----------------------------------------------------------------------------- weekly report summaries

REPORT_EMOJI = ":bar_chart:"
#: Slack's limits on a button: label 75 characters, URL 3,000.
MAX_BUTTON_TEXT = 75
MAX_BUTTON_URL = 3000
#: Action text shown per action (headline and fix), so three actions stay compact.
MAX_ACTION_TEXT = 600


def redact_summary(summary: WeeklySummary, salt: str = "") -> WeeklySummary:
    """The summary with every key value of its actions redacted in all its text (as :func:`redact_finding` does)."""
    texts = {
        "headline": summary.headline,
        "actions": [{"headline": a.headline, "recommendation": a.recommendation} for a in summary.actions],
    }
    keys = [k for a in summary.actions for k in a.keys]
    clean = redact_finding({"evidence": {"keys": keys, "texts": texts}}, salt)["evidence"]["texts"]
    actions = [
        a.model_copy(
            update={
                "headline": redact_text(t["headline"], salt),
                "recommendation": redact_text(t["recommendation"], salt),
                "keys": [],
            }
        )
        for a, t in zip(summary.actions, clean["actions"], strict=True)
    ]
    return summary.model_copy(update={"headline": redact_text(clean["headline"], salt), "actions": actions})


def _link_ok(url: str | None) -> bool:
    if not url or len(url) > MAX_BUTTON_URL:
        return False
    parts = urlsplit(url)
    return parts.scheme in ("https", "http") and bool(parts.hostname)


def _money(value: float) -> str:
    return f"${value:,.0f}" if value >= 1 or value == 0 else f"${value:,.2f}"


def _kind_label(kind: str) -> str:
    try:
        return KIND_LABELS[FindingKind(kind)]
    except (ValueError, KeyError):
        return kind.replace("_", " ")


def render_weekly_summary(summary: WeeklySummary) -> dict[str, Any]:
    """The compact Slack message of a weekly report: headline, top numbers, top actions and a button to the report.

    ``summary`` must already be redacted if it must be (:func:`redact_summary`). Within Slack's Block Kit limits.
    """
    title = f"{summary.title} {summary.week}"
    by_sev = summary.by_severity
    urgent = " · ".join(f"{by_sev.get(sev, 0)} {sev}" for sev in ("critical", "high") if by_sev.get(sev))
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": truncate(f"{REPORT_EMOJI} {title}", MAX_HEADER_TEXT), "emoji": True},
        }
    ]
    if summary.headline:
        text = truncate(escape_mrkdwn(summary.headline), MAX_SECTION_TEXT)
        blocks.append({"type": "section", "text": _mrkdwn(text)})
    blocks.append(
        {
            "type": "section",
            "fields": [
                _field(
                    "Open findings",
                    f"{summary.open_findings:,} on {summary.tables_with_findings:,} of {summary.tables_seen:,} tables",
                ),
                _field("Critical / high", urgent or "none"),
                _field(
                    "This week",
                    f"{summary.new:,} new · {summary.worsened:,} worsened · {summary.resolved:,} resolved",
                ),
                _field("Potential savings", f"{_money(summary.monthly_savings)}/month"),
            ],
        }
    )
    if summary.actions:
        lines = ["*Most important actions*"]
        for a in sorted(summary.actions, key=lambda x: x.rank)[:3]:
            emoji = SEVERITY_EMOJI.get(a.severity, ":grey_question:")
            label = _kind_label(a.kind)
            head = truncate(escape_mrkdwn(a.headline), MAX_ACTION_TEXT // 2)
            fix = truncate(escape_mrkdwn(a.recommendation), MAX_ACTION_TEXT // 2)
            where = f"{_code(truncate(escape_mrkdwn(a.table), 200))} · {escape_mrkdwn(label)}"
            saves = f" · saves {_money(a.monthly_savings)}/month" if a.monthly_savings > 0 else ""
            lines.append(f"{emoji} *{a.rank}. {head}*\n{where}{saves}" + (f"\n_Fix:_ {fix}" if fix else ""))
        blocks.append({"type": "section", "text": _mrkdwn(truncate("\n".join(lines), MAX_SECTION_TEXT))})
    else:
        blocks.append({"type": "section", "text": _mrkdwn("Nothing to do this week: no open findings.")})
    context: list[str] = []
    if _link_ok(summary.url):
        blocks.append(
            {
                "type": "section",
                "text": _mrkdwn("The full report: charts, and every finding with its evidence and fix."),
                "accessory": {
                    "type": "button",
                    "text": {"type": "plain_text", "text": truncate("Open the report", MAX_BUTTON_TEXT)},
                    "url": summary.url,
                },
            }
        )
        if summary.url_expires_at and summary.url_expiry_known:
            context.append(f"The link expires {_slack_date(summary.url_expires_at)}")
        elif summary.url_expires_at:
            context.append(
                f"The link works until {_slack_date(summary.url_expires_at)} at the latest, and stops sooner when the "
                "temporary credentials that signed it expire (usually within a few hours)"
            )
        if summary.console_url and summary.console_url.startswith("https://console.aws.amazon.com/"):
            link = summary.console_url.replace("&", "&amp;").replace("<", "%3C").replace(">", "%3E").replace("|", "%7C")
            context.append(f"<{link}|Open it in the S3 console> any time (AWS sign-in needed)")
    else:
        context.append("No usable link to the report in this message: see the e-mail or the reports bucket.")
    if summary.bucket and summary.html_key:
        folder = summary.html_key.rsplit("/", 1)[0]
        context.append(truncate(escape_mrkdwn(f"HTML and Markdown in s3://{summary.bucket}/{folder}/"), 500))
    blocks.append({"type": "context", "elements": [_mrkdwn(e) for e in context][:MAX_CONTEXT_ELEMENTS]})
    text = f"{title}: {summary.headline or f'{summary.open_findings} open findings'}"
    return _inert({"text": truncate(escape_mrkdwn(text), MAX_MESSAGE_TEXT), "blocks": blocks[:MAX_BLOCKS]})


# ----------------------------------------------------------------------------- events


# ----------------------------------------------------------------------------- run digests

#: Findings listed one section each; the rest are counted in an "and N more" line (Block Kit: 50 blocks).
DIGEST_MAX_LISTED = 40
_SEVERITY_ORDER = ("critical", "high", "medium", "low", "info")


def redact_digest(digest: Digest, salt: str = "") -> Digest:
    """Key values redacted in every item's title and fix (each item carries its finding's ``key`` for this)."""
    items = []
    for item in digest.findings:
        red = redact_finding({"title": item.title, "recommendation": item.fix, "evidence": {"key": item.key}}, salt)
        items.append(item.model_copy(update={"title": red["title"], "fix": red["recommendation"], "key": None}))
    return digest.model_copy(update={"findings": items})


def severity_at_least(severity: str, minimum: str) -> bool:
    """Whether ``severity`` is ``minimum`` or more urgent (unknown severities count as info)."""
    rank = {s: len(_SEVERITY_ORDER) - i for i, s in enumerate(_SEVERITY_ORDER)}
    return rank.get(severity, 1) >= rank.get(minimum, 1)


def console_table_url(table: str, region: str | None) -> str | None:
    """The table's page in the DynamoDB console (None without a region)."""
    if not region or not region.replace("-", "").isalnum():
        return None
    return f"https://{region}.console.aws.amazon.com/dynamodbv2/home?region={region}#table?name=" + urllib.parse.quote(
        table, safe=""
    )


def _link(url: str | None, label: str) -> str:
    if not url or not _link_ok(url) or any(c in url for c in "<>|"):
        return escape_mrkdwn(label)
    return f"<{url}|{escape_mrkdwn(label)}>"


def render_digest(digest: Digest, *, min_severity: str = "medium", report_url: str | None = None) -> dict[str, Any]:
    """One Slack message for a run: the new and worsened findings at ``min_severity`` or above, most severe first
    (severity, table, title, one-line fix, id, console link), then "and N more", within Block Kit's limits.

    ``digest`` must already be redacted if it must be (:func:`redact_digest`). Returns an empty dict when no finding
    reaches ``min_severity`` (nothing to post).
    """
    items = [i for i in digest.findings if severity_at_least(i.severity, min_severity)]
    below = len(digest.findings) - len(items)
    if not items:
        return {}
    items.sort(key=lambda i: (_SEVERITY_ORDER.index(i.severity) if i.severity in _SEVERITY_ORDER else 9, i.table))
    total = len(items) + digest.more
    head = f"{SEVERITY_EMOJI.get(items[0].severity, ':grey_question:')} {total} new or worsened DynamoDB finding"
    head += "s" if total != 1 else ""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": truncate(head, MAX_HEADER_TEXT), "emoji": True}}
    ]
    listed = items[:DIGEST_MAX_LISTED]
    for item in listed:
        sev = item.severity.upper()
        if item.status == "worsened" and item.previous_severity:
            sev = f"{item.previous_severity.upper()} → {sev}"
        where = item.table + (f" / {item.index}" if item.index else "")
        lines = [
            f"{SEVERITY_EMOJI.get(item.severity, ':grey_question:')} *{escape_mrkdwn(sev)}* "
            f"{_code(escape_entities(truncate(where, 200)))} {escape_mrkdwn(truncate(item.title, 300))}",
        ]
        if item.fix:
            lines.append(f"Fix: {escape_mrkdwn(truncate(recut(item.fix), 400))}")
        console = _link(console_table_url(item.table, item.region), "table in the AWS console")
        lines.append(f"Finding {_code(escape_entities(truncate(item.id, 100)))} · {console}")
        blocks.append({"type": "section", "text": _mrkdwn(truncate("\n".join(lines), MAX_SECTION_TEXT))})
    rest = total - len(listed)
    notes = []
    if rest:
        notes.append(f"and {rest:,} more")
    if below:
        notes.append(f"{below:,} below {min_severity} not shown")
    tail = "; ".join(notes)
    report = _link(report_url, "the weekly report") if report_url else "the weekly report"
    tail = (tail + ". " if tail else "") + f"Every finding is in the findings store and {report}."
    blocks.append({"type": "context", "elements": [_mrkdwn(truncate(tail, MAX_CONTEXT_TEXT))]})
    text = f"{total} new or worsened DynamoDB findings: " + "; ".join(
        f"{i.severity.upper()} {i.title} ({i.table})" for i in listed[:5]
    )
    return _inert({"text": truncate(escape_mrkdwn(text), MAX_MESSAGE_TEXT), "blocks": blocks[:MAX_BLOCKS]})


def build_message(
    event: FindingNotification, *, redact: bool = True, salt: str = "", min_severity: str = "medium"
) -> tuple[dict[str, Any], bool]:
    """(Slack message, whether it was rendered from the structured finding or report summary) for one event.

    A run digest (``kind`` = ``digest``) is rendered by :func:`render_digest` with ``min_severity``; an empty dict
    means nothing in it reaches the minimum (nothing to post).
    """
    kind = message_kind(event.attributes)
    if kind is MessageKind.DIGEST:
        digest, problem = parse_digest(event.attributes.get(AttributeName.DIGEST_JSON))
        if digest is not None:
            return render_digest(redact_digest(digest, salt) if redact else digest, min_severity=min_severity), True
        log.warning("slack_digest_json_unusable", message_id=event.message_id, problem=problem)
        text = redact_text(event.message, salt) if redact else event.message
        return render_text_message(text, event.attributes), False
    if kind is MessageKind.WEEKLY_REPORT:
        summary, problem = parse_weekly_summary(event.attributes.get(AttributeName.REPORT_JSON))
        if summary is not None:
            return render_weekly_summary(redact_summary(summary, salt) if redact else summary), True
        log.warning("slack_report_json_unusable", message_id=event.message_id, problem=problem)
        text = redact_text(event.message, salt) if redact else event.message
        return render_text_message(text, event.attributes), False
    finding, problem = parse_finding(event.attributes.get(AttributeName.FINDING_JSON))
    if finding is not None:
        if redact:  # key values out of the evidence and the texts; what remains is still a finding
            finding = Finding.model_validate(redact_finding(finding.model_dump(mode="json"), salt))
        attrs = event.attributes
        return render_finding(
            finding,
            status=attrs.get(AttributeName.STATUS),
            previous_severity=attrs.get(AttributeName.PREVIOUS_SEVERITY),
        ), True
    log.warning("slack_finding_json_unusable", message_id=event.message_id, problem=problem)
    text = redact_text(event.message, salt) if redact else event.message
    return render_text_message(text, event.attributes), False

"""Run digests: one SNS digest per run (auditor.sinks.sns) rendered as one Slack message (auditor.sinks.slack)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from auditor.lifecycle import EventKind, FindingEvent
from auditor.messages import FindingNotification, MessageKind, parse_digest
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.sinks.slack_blocks import (
    DIGEST_MAX_LISTED,
    MAX_BLOCKS,
    build_message,
    escape_mrkdwn,
    escape_plain,
    render_finding,
)
from auditor.sinks.sns import DIGEST_MAX_ITEMS, MAX_MESSAGE_BYTES, render_digest
from tests.sinks.test_slack_blocks import assert_valid_message

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
SEVERITIES = [Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW, Severity.INFO]


def _event(i: int, severity: Severity, *, table: str = "Orders", key: str | None = None) -> FindingEvent:
    kind = FindingKind.HOT_KEY if key else FindingKind.SCAN
    evidence: dict[str, Any] = (
        {"key": {"pk": key}, "share": 0.5, "requests": 10, "window_seconds": 900, "source": "cloudtrail"}
        if key
        else {"principal": None, "operation": "Scan", "count": 5, "source": "cloudtrail"}
    )
    title = f"Hot partition key pk={key} on {table}" if key else f"Scans on {table} number {i}"
    f = Finding.create(
        kind,
        account="111122223333",
        region="eu-west-1",
        table=table,
        discriminator=i,
        severity=severity,
        title=title,
        summary="s",
        recommendation=f"Spread pk={key} over shards. Then do more." if key else "Replace the Scan with a Query.",
        evidence=evidence,
        first_seen=NOW,
        last_seen=NOW,
    )
    return FindingEvent(kind=EventKind.NEW, finding=f, at=NOW)


def _notification(events: list[FindingEvent]) -> FindingNotification:
    msg = render_digest(events, "digest-1")
    assert msg is not None
    return FindingNotification(message_id="m", message=msg.text, attributes=msg.attributes)


def test_two_hundred_findings_make_one_message_within_block_kit_and_sns_limits() -> None:
    events = [_event(i, SEVERITIES[i % 5], table=f"T{i % 7}") for i in range(200)]
    msg = render_digest(events, "digest-1")
    assert msg is not None
    assert msg.size() < MAX_MESSAGE_BYTES
    assert msg.attributes["kind"] == MessageKind.DIGEST
    assert msg.attributes["severity"] == "critical"  # the filter policy sees the most severe finding in it
    doc = orjson.loads(msg.attributes["digest_json"])
    assert len(doc["findings"]) == DIGEST_MAX_ITEMS and doc["more"] == 100
    assert [f["severity"] for f in doc["findings"][:40]] == ["critical"] * 40  # most severe first

    payload, structured = build_message(_notification(events), min_severity="medium")
    assert structured
    assert_valid_message(payload)
    assert len(payload["blocks"]) <= MAX_BLOCKS
    # The 100 items in digest_json are the most severe (all medium or above); the 100 beyond are counted.
    listed = [b for b in payload["blocks"] if b["type"] == "section"]
    assert len(listed) == DIGEST_MAX_LISTED
    header = payload["blocks"][0]["text"]["text"]
    assert "200 new or worsened DynamoDB findings" in header
    tail = payload["blocks"][-1]["elements"][0]["text"]
    assert "and 160 more" in tail and "below" not in tail

    # At the minimum "critical", only the 40 critical ones of the listed 100 are shown; 60 are counted as below it.
    payload, _ = build_message(_notification(events), min_severity="critical")
    assert_valid_message(payload)
    tail = payload["blocks"][-1]["elements"][0]["text"]
    assert "140 new or worsened" in payload["blocks"][0]["text"]["text"]
    assert "and 100 more" in tail and "60 below critical not shown" in tail


def test_a_digest_of_only_low_findings_posts_nothing_at_the_default_minimum() -> None:
    events = [_event(i, Severity.LOW) for i in range(3)] + [_event(9, Severity.INFO)]
    payload, _ = build_message(_notification(events), min_severity="medium")
    assert payload == {}
    payload, _ = build_message(_notification(events), min_severity="low")
    assert sum(1 for b in payload["blocks"] if b["type"] == "section") == 3


def test_each_item_has_fix_id_and_console_link_and_keys_are_redacted() -> None:
    payload, _ = build_message(_notification([_event(1, Severity.HIGH, key="CUSTOMER#4242")]), salt="s")
    body = payload["blocks"][1]["text"]["text"]
    assert "CUSTOMER#4242" not in orjson.dumps(payload).decode()  # blocks and the text fallback alike
    assert "CUSTOMER#" in body  # the entity prefix is kept
    assert "Fix: Spread" in body and "Then do more" not in body  # one line of fix
    assert "https://eu-west-1.console.aws.amazon.com/dynamodbv2/home?region=eu-west-1#table?name=Orders" in body
    assert "Finding `hot_key-" in body


def test_events_that_are_not_new_or_worsened_make_no_digest() -> None:
    e = _event(1, Severity.HIGH)
    assert render_digest([e.model_copy(update={"kind": EventKind.RESOLVED})], "d") is None


def test_values_from_traffic_cannot_format_or_mention() -> None:
    hostile = "<!channel> *bold* _it_ ~x~ `code` <https://evil|click>"
    assert "<" not in escape_plain(hostile) and ">" not in escape_plain(hostile)
    escaped = escape_mrkdwn(hostile)
    for ch in "<>*_~`":
        assert ch not in escaped
    finding = Finding.model_validate(
        {
            "id": "scan-1",
            "kind": "scan",
            "severity": "high",
            "table": hostile,
            "title": hostile,
            "summary": "",
            "recommendation": "",
            "evidence": {},
            "first_seen": "2026-12-01T00:00:00Z",
            "last_seen": "2026-12-01T00:00:00Z",
        }
    )
    payload = render_finding(finding, status="new")
    assert_valid_message(payload)
    assert "<!channel>" not in payload["blocks"][0]["text"]["text"]  # the plain-text header
    events = [_event(1, Severity.HIGH, table=hostile)]
    payload, _ = build_message(_notification(events))
    assert_valid_message(payload)
    assert "<!channel>" not in orjson.dumps(payload).decode()


def test_an_unusable_digest_is_still_posted_as_text() -> None:
    ok, problem = parse_digest("{not json")
    assert ok is None and problem
    note = FindingNotification(message_id="m", message="2 findings", attributes={"kind": "digest", "severity": "high"})
    payload, structured = build_message(note)
    assert not structured
    assert_valid_message(payload)


#: Characters no Slack text built from traffic may keep: NUL, BEL, ESC, CR, DEL, C1 CSI, bidi overrides/isolates.
_FORBIDDEN = [
    "\x00",
    "\x07",
    "\x1b",
    "\r",
    "\x7f",
    "\x9b",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
]


def _hostile(text: str) -> str:
    return text + "\x00\x07\x1b[31m\r\x7f\x9b\u202e\u2066evil\u2069\u202a\u202b\u202c\u202d\u2067\u2068"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _assert_clean(payload: dict[str, Any]) -> None:
    texts = _strings(payload)
    assert texts and not [(c, t) for t in texts for c in _FORBIDDEN if c in t]


def test_slack_texts_from_traffic_keep_no_control_or_bidi_override_characters() -> None:
    table = _hostile("Orders")
    event = _event(1, Severity.HIGH, table=table, key=_hostile("CUSTOMER#42"))
    f = event.finding.model_copy(update={"summary": _hostile("s"), "recommendation": _hostile("r")})
    _assert_clean(render_finding(f, status="new"))
    # the digest of such findings, and the readable-text fallback of a message without usable JSON
    payload, structured = build_message(_notification([_event(i, Severity.HIGH, table=table) for i in range(3)]))
    assert structured
    _assert_clean(payload)
    fallback = FindingNotification(
        message_id="m",
        message=_hostile("Scan on Orders"),
        attributes={"severity": "high", "status": "new", "table": table, "kind": "scan"},
    )
    payload, structured = build_message(fallback, redact=False)
    assert not structured
    _assert_clean(payload)
    assert "evil" in payload["text"]

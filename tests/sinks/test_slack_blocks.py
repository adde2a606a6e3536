"""Block Kit rendering: every documented Slack limit, mrkdwn escaping, fallbacks, secrets and Retry-After parsing."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import orjson
import pytest

from auditor.detectors.trail import hot_key
from auditor.exceptions import ConfigurationError
from auditor.messages import FindingNotification, parse_finding
from auditor.models.finding import Finding
from auditor.redact import redact_value
from auditor.sinks.slack import parse_slack_secret, retry_after_seconds
from auditor.sinks.slack_blocks import (
    MAX_BLOCKS,
    MAX_CONTEXT_ELEMENTS,
    MAX_FIELD_TEXT,
    MAX_FIELDS,
    MAX_HEADER_TEXT,
    MAX_MESSAGE_TEXT,
    MAX_SECTION_TEXT,
    build_message,
    escape_mrkdwn,
    render_finding,
    render_text_message,
    text_only,
    truncate,
)
from tests.factories import call, span

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
#: What may legitimately be inside ``<…>`` in our mrkdwn: date tokens and https links we build (console, report).
_SLACK_TOKEN = re.compile(r"<!date\^\d+\^\{date_short_pretty\} \{time\}\|[^<>]*>|<https://[^<>|\s!]+\|[^<>|]*>")
_BAD_AMP = re.compile(r"&(?!amp;|lt;|gt;)")


def assert_valid_message(payload: dict[str, Any]) -> None:
    """Every limit Slack documents for incoming-webhook Block Kit messages (and our escaping) holds."""
    orjson.dumps(payload)  # serialisable
    assert isinstance(payload.get("text"), str) and 0 < len(payload["text"]) <= MAX_MESSAGE_TEXT
    _assert_mrkdwn(payload["text"])
    blocks = payload["blocks"]
    assert 0 < len(blocks) <= MAX_BLOCKS
    for block in blocks:
        kind = block["type"]
        assert kind in ("header", "section", "context", "divider"), kind
        if kind == "header":
            assert block["text"]["type"] == "plain_text"
            assert 0 < len(block["text"]["text"]) <= MAX_HEADER_TEXT
        elif kind == "section":
            assert "text" in block or "fields" in block
            if "text" in block:
                _assert_text(block["text"], MAX_SECTION_TEXT)
            if "fields" in block:
                assert 0 < len(block["fields"]) <= MAX_FIELDS
                for f in block["fields"]:
                    _assert_text(f, MAX_FIELD_TEXT)
        elif kind == "context":
            assert 0 < len(block["elements"]) <= MAX_CONTEXT_ELEMENTS
            for e in block["elements"]:
                _assert_text(e, MAX_SECTION_TEXT)


def _assert_text(obj: dict[str, Any], limit: int) -> None:
    assert obj["type"] in ("mrkdwn", "plain_text")
    assert 0 < len(obj["text"]) <= limit, (len(obj["text"]), limit)
    if obj["type"] == "mrkdwn":
        _assert_mrkdwn(obj["text"])


def _assert_mrkdwn(text: str) -> None:
    bare = _SLACK_TOKEN.sub("", text)
    assert "<" not in bare and ">" not in bare, text[:200]
    assert not _BAD_AMP.search(bare), text[:200]  # every & starts a complete escape: no cut in the middle


def _finding(**overrides: Any) -> Finding:
    base: dict[str, Any] = {
        "id": "hot_key-0123456789abcdef0123",
        "kind": "hot_key",
        "severity": "high",
        "account": "111122223333",
        "region": "us-east-1",
        "table": "Orders",
        "index": None,
        "title": "Hot partition key pk=CUSTOMER#42 on Orders",
        "summary": "50% of the requests went to pk=CUSTOMER#42.",
        "recommendation": "Write-shard the key.",
        "evidence": {"key": {"pk": "CUSTOMER#42"}, "share": 0.5, "requests": 36000, "window_seconds": 60},
        "first_seen": T0,
        "last_seen": T0,
    }
    base.update(overrides)
    return Finding.model_validate(base)


def _all_text(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


# ----------------------------------------------------------------------------- limits


def test_ordinary_finding_renders_every_part() -> None:
    payload = render_finding(_finding(), status="new")
    assert_valid_message(payload)
    types = [b["type"] for b in payload["blocks"]]
    assert types[0] == "header" and types[-1] == "context"
    header = payload["blocks"][0]["text"]["text"]
    assert header == ":large_orange_circle: Hot partition key pk=CUSTOMER#42 on Orders"
    facts = [f["text"] for f in payload["blocks"][1]["fields"]]
    assert facts[:5] == ["*Table*\n`Orders`", "*Index*\n—", "*Kind*\nhot key", "*Status*\nnew", "*Severity*\nhigh"]
    text = _all_text(payload)
    assert "50% of the requests" in text and "*Fix*\\nWrite-shard the key." in text
    assert "*Evidence*" in text and "*key*\\npk=CUSTOMER#42" in text
    context = " ".join(e["text"] for e in payload["blocks"][-1]["elements"])
    assert "`hot_key-0123456789abcdef0123`" in context
    epoch = int(T0.timestamp())
    assert f"<!date^{epoch}^{{date_short_pretty}} {{time}}|2026-12-01T10:00:00Z>" in context
    assert payload["text"] == "HIGH new: Hot partition key pk=CUSTOMER#42 on Orders (Orders)"


def test_huge_texts_long_table_name_and_many_evidence_fields_stay_valid() -> None:
    table = "T" * 300
    evidence = {f"field_{i:03d}_" + "n" * 50: "v" * 5000 for i in range(200)}
    evidence |= {"key": {"pk": "X" * 3000}, "share": 0.5, "requests": 10, "window_seconds": 60, "source": "cloudtrail"}
    finding = _finding(
        table=table,
        index="I" * 300,
        title="Hot key " + "t" * 500,
        summary="s" * 10_000,
        recommendation="r" * 10_000,
        evidence=evidence,
        id="x" * 1000,
    )
    payload = render_finding(finding, status="worsened", previous_severity="low")
    assert_valid_message(payload)
    blocks = payload["blocks"]
    assert blocks[0]["text"]["text"].endswith("…") and len(blocks[0]["text"]["text"]) == MAX_HEADER_TEXT
    assert blocks[0]["text"]["text"].startswith(":large_orange_circle: Worsened: Hot key ttt")
    table_field = blocks[1]["fields"][0]["text"]
    assert table_field == f"*Table*\n`{table}`"  # a 300-character name fits a field whole
    assert "*Severity*\nlow → high" in [f["text"] for f in blocks[1]["fields"]]
    summary = blocks[2]["text"]["text"]
    assert len(summary) == MAX_SECTION_TEXT and summary.endswith("…")
    # Required evidence comes first; the list is compact and says how much was left out.
    evidence_fields = [f["text"] for b in blocks if b["type"] == "section" and "fields" in b for f in b["fields"]][6:]
    assert [t.split("\n")[0] for t in evidence_fields[:5]] == [
        "*key*",
        "*share*",
        "*requests*",
        "*window seconds*",
        "*source*",
    ]
    assert all(len(t) <= 80 + 300 + 3 for t in evidence_fields)  # *name*\nvalue, each shortened
    notes = [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
    assert any(n.startswith("+175 more evidence fields") for n in notes)


def test_block_budget_holds_with_the_maximum_evidence() -> None:
    # Even if the compact cap were lifted, the message would never exceed 50 blocks: check the worst case directly.
    from auditor.sinks import slack_blocks as slack

    finding = _finding(evidence={f"f{i}": i for i in range(2000)})
    original = slack.MAX_EVIDENCE_FIELDS
    try:
        slack.MAX_EVIDENCE_FIELDS = 10_000
        payload = render_finding(finding)
    finally:
        slack.MAX_EVIDENCE_FIELDS = original
    assert_valid_message(payload)
    assert len(payload["blocks"]) == MAX_BLOCKS
    assert payload["blocks"][-1]["type"] == "context"  # the finding id and times are never pushed out
    assert "more evidence fields" in _all_text(payload)


def test_escaping_of_slack_control_characters() -> None:
    nasty = "<script>alert(1)</script> & <!channel> <@U123> <https://evil.example|click>"
    finding = _finding(
        title=f"Title {nasty}",
        summary=f"Summary {nasty}",
        recommendation=f"Fix {nasty}",
        table="Orders",
        evidence={"note": nasty, "key": {"pk": nasty}},
    )
    payload = render_finding(finding, status="new")
    assert_valid_message(payload)
    text = _all_text(payload)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;!channel&gt;" in text
    mrkdwn = [b for b in payload["blocks"] if b["type"] != "header"]
    assert "<script>" not in _all_text({"b": mrkdwn}) and "<!channel>" not in _all_text({"b": mrkdwn})
    assert "<!channel>" not in payload["text"]
    # The header is plain_text: Slack shows it literally, so it is not entity-escaped (that would show "&amp;"),
    # but < and > become look-alikes so no <!channel> mention or link can form.
    assert payload["blocks"][0]["text"]["text"].endswith(nasty.replace("<", "\u2039").replace(">", "\u203a"))


def test_truncation_never_splits_an_escape() -> None:
    for n in range(2990, 3010):
        payload = render_finding(_finding(summary="&" * n + "<" * 5))
        assert_valid_message(payload)
    assert truncate(escape_mrkdwn("a&b"), 3) == "a…"
    assert truncate("abc", 3) == "abc"
    assert truncate("abcd", 3) == "ab…"
    assert truncate("x & y" * 100, 10) == "x & yx & …"  # plain text: a bare & is kept


@pytest.mark.parametrize(
    ("status", "severity", "emoji", "prefix"),
    [
        ("new", "critical", ":red_circle:", ""),
        ("worsened", "medium", ":large_yellow_circle:", "Worsened: "),
        ("resolved", "low", ":white_check_mark:", "Resolved: "),
        (None, "info", ":white_circle:", ""),
    ],
)
def test_header_emoji_and_status(status: str | None, severity: str, emoji: str, prefix: str) -> None:
    payload = render_finding(_finding(severity=severity), status=status)
    assert payload["blocks"][0]["text"]["text"].startswith(f"{emoji} {prefix}Hot partition key")
    assert payload["blocks"][0]["text"]["emoji"] is True


def test_real_detector_finding_round_trip() -> None:
    calls = [call("UpdateItem", key={"pk": "CUSTOMER#42"}, at=i / 600) for i in range(36_000)]
    calls += [call("GetItem", key={"pk": f"CUSTOMER#{1000 + i % 400}"}, at=i / 600) for i in range(36_000)]
    [f] = hot_key.detect(span(calls, window_seconds=60), hot_key.HotKeyConfig())
    event = FindingNotification("m-1", "text", {"finding_json": f.model_dump_json(), "status": "new"})
    payload, structured = build_message(event)
    assert structured
    assert_valid_message(payload)
    assert "CUSTOMER#42" not in _all_text(payload)
    assert redact_value("CUSTOMER#42") in _all_text(payload)
    raw_payload, _ = build_message(event, redact=False)
    assert "CUSTOMER#42" in _all_text(raw_payload)


# ----------------------------------------------------------------------------- fallbacks


@pytest.mark.parametrize(
    ("finding_json", "problem"),
    [
        (None, "missing"),
        ("", "missing"),
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"id": "x"}', "not a Finding"),
        (
            '{"id": "x", "kind": "nope", "severity": "high", "table": "T", "title": "t", "summary": "s", '
            '"recommendation": "r", "first_seen": "2026-12-01T00:00:00Z", "last_seen": "2026-12-01T00:00:00Z"}',
            "kind",
        ),
    ],
)
def test_unusable_finding_json_falls_back_to_the_message_text(finding_json: str | None, problem: str) -> None:
    finding, why = parse_finding(finding_json)
    assert finding is None and why is not None and problem in why
    attrs = {"severity": "high", "status": "new", "table": "Orders", "kind": "hot_key"}
    if finding_json is not None:
        attrs["finding_json"] = finding_json
    message = 'NEW: Hot partition key pk=CUSTOMER#42 on Orders\n\nEvidence:\n  key: {"pk":"CUSTOMER#42"}'
    payload, structured = build_message(FindingNotification("m-1", message, attrs))
    assert not structured
    assert_valid_message(payload)
    assert payload["blocks"][0]["text"]["text"] == ":large_orange_circle: New hot key finding on Orders"
    text = _all_text(payload)
    assert "CUSTOMER#42" not in text and redact_value("CUSTOMER#42") in text and "Hot partition key" in text


def test_extra_top_level_fields_from_the_publisher_are_ignored() -> None:
    data = _finding().model_dump(mode="json") | {"status": "open", "evidence_truncated": True}
    finding, why = parse_finding(json.dumps(data))
    assert why is None and finding is not None and finding.id == data["id"]


def test_huge_message_text_fallback_is_valid_and_keeps_what_fits() -> None:
    message = "\n".join(f"line {i} " + "&<>" * 40 for i in range(3000))
    payload = render_text_message(message, {})
    assert_valid_message(payload)
    assert len(payload["blocks"]) == MAX_BLOCKS
    sections = [b["text"]["text"] for b in payload["blocks"] if b["type"] == "section"]
    assert sections[0].startswith("line 0 &amp;&lt;&gt;")
    assert sections[-1].endswith("…")
    assert render_text_message("", {})["blocks"][1]["text"]["text"] == "(the message had no text)"


def test_text_only_version() -> None:
    payload = render_finding(_finding(), status="new")
    assert text_only(payload) == {"text": payload["text"]}


# ----------------------------------------------------------------------------- secret and Retry-After


def test_secret_formats() -> None:
    url = "https://hooks.slack.com/services/T0/B0/SECRET"
    assert parse_slack_secret(json.dumps({"webhook_url": url})).webhook_url == url
    both = parse_slack_secret(json.dumps({"webhook_url": url, "redaction_salt": "pepper"}))
    assert (both.webhook_url, both.redaction_salt) == (url, "pepper")
    assert parse_slack_secret(f"  {url}\n").webhook_url == url
    assert "SECRET" not in repr(both) and "pepper" not in repr(both)


@pytest.mark.parametrize(
    "secret",
    [
        '{"url": "https://hooks.slack.com/services/T0/B0/SECRET"}',
        '{"webhook_url": 5}',
        "{broken SECRET",
        "http://hooks.slack.com/services/T0/B0/SECRET",  # plain http off the loopback
        "file:///etc/SECRET",
        "SECRET",
        '{"webhook_url": "https://hooks.slack.com/services/T0/B0/SECRET", "redaction_salt": 1}',
    ],
)
def test_bad_secrets_are_clear_errors_that_never_quote_the_secret(secret: str) -> None:
    with pytest.raises(ConfigurationError) as exc:
        parse_slack_secret(secret)
    assert "SECRET" not in str(exc.value)


def test_retry_after_parsing() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(" 1.5 ") == 1.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    now = 1_796_119_200.0
    date = format_datetime(datetime.fromtimestamp(now + 12, UTC), usegmt=True)
    assert retry_after_seconds(date, now=lambda: now) == pytest.approx(12.0)


def test_a_fix_cut_upstream_is_cut_again_at_a_word_boundary() -> None:
    """The digest's one-line fix arrives cut (``159 writ…``): Slack shows it cut between words, never in a number."""
    from auditor.sinks.slack_blocks import recut

    assert recut("Cap the job at 159 writ…") == "Cap the job at 159 …"
    assert recut("Cap the job at 15…") == "Cap the job at …"
    assert recut("A whole sentence.") == "A whole sentence."

"""Key redaction for messages that leave the account: values, key maps, real detector findings, free text."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest

from auditor.detectors.trail import hot_key, item_size_exceeded, low_cardinality_key, throttling
from auditor.models.finding import Finding
from auditor.redact import redact_finding, redact_key, redact_text, redact_value
from tests.factories import call, span

SIZE_MSG = "Item size has exceeded the maximum allowed size"


def _hash(text: str, salt: str = "") -> str:
    if salt:
        return hmac.new(salt.encode(), text.encode(), hashlib.sha256).hexdigest()[:6]
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def _dump(d: object) -> str:
    return json.dumps(d, ensure_ascii=False)


# ----------------------------------------------------------------------------- values


def test_entity_prefix_is_kept_and_the_rest_hashed_stably() -> None:
    token = redact_value("USER#123")
    assert token == f"USER#…{_hash('USER#123')}"
    assert redact_value("USER#123") == token  # stable
    assert redact_value("USER#124") != token  # distinct values get distinct tokens
    assert redact_value("ORDER#123") == f"ORDER#…{_hash('ORDER#123')}"  # the hash covers the whole value


@pytest.mark.parametrize(
    ("value", "prefix"),
    [
        ("TENANT#acme#USER#42", "TENANT#"),  # first separator only: the tenant name is data
        ("ORDER:2026-12-01:77", "ORDER:"),
        ("SESSION|abc", "SESSION|"),
        ("CUSTOMER_V2#9", "CUSTOMER_V2#"),
        ("alice:secret", ""),  # a lower-case leading word is data, not an entity name
        ("user#123", ""),
        ("plainvalue", ""),
        ("#leading", ""),
        ("THIS_ENTITY_NAME_IS_FAR_TOO_LONG#1", ""),  # longer than 24 characters: not an entity name
        ("", ""),
    ],
)
def test_prefix_rule(value: str, prefix: str) -> None:
    token = redact_value(value)
    assert token == f"{prefix}…{_hash(value)}"
    rest = value[len(prefix) :]
    if len(rest) > 3:
        assert rest not in token


def test_non_string_values_are_stringified_first() -> None:
    assert redact_value(42) == redact_value("42") == f"…{_hash('42')}"
    assert redact_value(4.5) == redact_value("4.5")
    assert redact_value(True) == redact_value("true")
    assert redact_value({"b": 1, "a": "x"}) == redact_value('{"a":"x","b":1}')


def test_salt_changes_the_hash_and_keeps_it_stable() -> None:
    salted = redact_value("USER#123", salt="s3cret")
    assert salted == f"USER#…{_hash('USER#123', 's3cret')}"
    assert salted == redact_value("USER#123", salt="s3cret")
    assert salted != redact_value("USER#123")
    assert salted != redact_value("USER#123", salt="other")


def test_redact_key_keeps_names_none_and_dynamodb_types() -> None:
    key = {"pk": "USER#1", "sk": 7, "gone": None, "typed": {"S": "ORDER#9"}}
    out = redact_key(key)
    assert set(out) == set(key)
    assert out["pk"] == redact_value("USER#1")
    assert out["sk"] == redact_value(7)
    assert out["gone"] is None
    assert out["typed"] == {"S": redact_value("ORDER#9")}
    assert key["pk"] == "USER#1"  # input untouched


# ----------------------------------------------------------------------------- real detector findings


def _hot_key_finding(value: str) -> dict:
    calls = [
        call("GetItem", key={"pk": value if i % 2 else f"CUSTOMER#{i}", "sk": "S"}, at=i * 900 / 4000)
        for i in range(4000)
    ]
    [f] = hot_key.detect(span(calls), hot_key.HotKeyConfig())
    return f.model_dump(mode="json")


def test_hot_key_finding_has_no_raw_value_anywhere() -> None:
    finding = _hot_key_finding("CUSTOMER#42")
    before = copy.deepcopy(finding)
    out = redact_finding(finding)
    assert finding == before  # not mutated
    token = redact_value("CUSTOMER#42")
    assert "CUSTOMER#42" not in _dump(out)
    assert out["evidence"]["key"] == {"pk": token}
    assert f"pk={token}" in out["title"]
    assert f"pk={token}" in out["summary"]
    assert f"pk={token}" in out["recommendation"]
    # Counts and identifiers are not key values: untouched (``distinct_partition_keys`` ends in ``_keys``).
    for name in ("share", "requests", "distinct_partition_keys", "key_requests", "window_seconds", "source"):
        assert out["evidence"][name] == finding["evidence"][name], name
    for name in ("id", "kind", "severity", "table", "index", "account", "region", "first_seen", "last_seen"):
        assert out[name] == finding[name]


def test_value_cut_short_in_the_title_is_redacted_too() -> None:
    long_value = "CUSTOMER#" + "x" * 100 + "42"
    finding = _hot_key_finding(long_value)
    assert long_value not in finding["title"] and long_value[:60] in finding["title"]  # the detector cut it
    out = redact_finding(finding)
    assert "xxxxxxxx" not in _dump(out)
    assert f"pk={redact_value(long_value)} on Orders" in out["title"]


def test_item_size_exceeded_composite_key_and_cut_label() -> None:
    calls = [
        call(
            "PutItem",
            key={"pk": "DOC#" + "y" * 70, "sk": "VERSION#" + "z" * 60},
            at=1,
            error="ValidationException",
            message=SIZE_MSG,
        ),
        call("PutItem", key={"pk": "DOC#7"}, at=2, error="ValidationException", message=SIZE_MSG),
    ]
    findings = item_size_exceeded.detect(span(calls), item_size_exceeded.ItemSizeExceededConfig())
    assert len(findings) == 2
    for f in findings:
        out = redact_finding(f.model_dump(mode="json"))
        text = _dump(out)
        assert "yyyy" not in text and "zzzz" not in text and "DOC#7" not in text
        assert out["evidence"]["count"] == f.evidence["count"]
        assert all(str(v).startswith(("DOC#…", "VERSION#…")) for v in out["evidence"]["key"].values())


def test_throttling_top_keys_and_sample_messages() -> None:
    calls = [
        call(
            "PutItem",
            key={"pk": "CUSTOMER#42"},
            at=i,
            error="ProvisionedThroughputExceededException",
            message="Rate exceeded for CUSTOMER#42",
        )
        for i in range(12)
    ]
    calls.append(call("GetItem", key={"pk": "A1"}, at=5))
    [f] = throttling.detect(span(calls), throttling.ThrottlingConfig())
    raw = f.model_dump(mode="json")
    assert "CUSTOMER#42" in _dump(raw["evidence"]["sample_messages"])
    out = redact_finding(raw)
    assert "CUSTOMER#42" not in _dump(out)
    assert out["evidence"]["top_keys"][0] == {"key": {"pk": redact_value("CUSTOMER#42")}, "throttled_calls": 12}
    assert out["evidence"]["read_throttle_events"] == raw["evidence"]["read_throttle_events"]
    assert out["evidence"]["cause"] == raw["evidence"]["cause"]


def test_low_cardinality_values_are_redacted() -> None:
    values = ["PENDING", "RUNNING", "DONE", "FAILED"]
    calls = [call("PutItem", key={"status": values[i % 4], "id": f"JOB#{i}"}, at=i * 900 / 4000) for i in range(4000)]
    [f] = low_cardinality_key.detect(span(calls), low_cardinality_key.LowCardinalityConfig())
    out = redact_finding(f.model_dump(mode="json"))
    assert {v["value"] for v in out["evidence"]["values"]} == {redact_value(v) for v in values}
    assert [v["requests"] for v in out["evidence"]["values"]] == [v["requests"] for v in f.evidence["values"]]
    assert out["evidence"]["key_attribute"] == "status"  # an attribute name, not a value
    text = _dump(out)
    assert not any(f'"{v}"' in text for v in values)


def _finding(evidence: dict, title: str = "t", summary: str = "s", recommendation: str = "r") -> dict:
    t = datetime(2026, 12, 1, tzinfo=UTC)
    return Finding(
        id="large_item-1",
        kind="large_item",
        severity="high",
        table="Docs",
        title=title,
        summary=summary,
        recommendation=recommendation,
        evidence=evidence,
        first_seen=t,
        last_seen=t,
    ).model_dump(mode="json")


def test_nested_key_maps_anywhere_in_evidence() -> None:
    evidence = {
        "key": {"pk": "DOC#1"},
        "limit_bytes": 409600,
        "items": [{"key": {"pk": "DOC#2", "sk": "V#1"}, "size_bytes": 5}],
        "largest_key": {"pk": "DOC#3"},
        "sample_keys": [{"pk": "DOC#4"}, "DOC#5"],
        "history": {"by_key": {"pk": "DOC#6"}, "points": [1, 2]},
        "keys": ["DOC#7"],
        "distinct_partition_keys": 12,
    }
    out = redact_finding(_finding(evidence))
    text = _dump(out)
    for n in range(1, 8):
        assert f"DOC#{n}" not in text
    assert out["evidence"]["items"][0]["size_bytes"] == 5
    assert out["evidence"]["history"]["points"] == [1, 2]
    assert out["evidence"]["limit_bytes"] == 409600
    assert out["evidence"]["distinct_partition_keys"] == 12


def test_text_boundaries_short_values_and_longer_neighbours() -> None:
    finding = _finding(
        {"key": {"id": 7, "pk": "USER#1"}},
        title="Item id=7 is large",
        summary="7 writes to Docs (id=7, pk=USER#1) failed; USER#12 and USER#1. were seen",
    )
    out = redact_finding(finding)
    seven, user = redact_value(7), redact_value("USER#1")
    assert out["title"] == f"Item id={seven} is large"
    # "7 writes" is a count (short values are only replaced after ``attr=``); USER#12 is another value.
    assert out["summary"] == f"7 writes to Docs (id={seven}, pk={user}) failed; USER#12 and {user}. were seen"


def test_finding_without_key_evidence_is_unchanged() -> None:
    finding = _finding({"principal": "arn:aws:iam::1:role/x", "operation": "Scan", "count": 3, "source": "cloudtrail"})
    assert redact_finding(finding) == finding


# ----------------------------------------------------------------------------- unstructured text


def test_redact_text_on_the_publishers_readable_message() -> None:
    from auditor.lifecycle import EventKind, FindingEvent
    from auditor.sinks.sns import render

    f = Finding.model_validate(_hot_key_finding("CUSTOMER#42"))
    msg = render(FindingEvent(kind=EventKind.NEW, finding=f, at=f.last_seen), "evt-1")
    assert "CUSTOMER#42" in msg.text
    out = redact_text(msg.text)
    assert "CUSTOMER#42" not in out
    assert redact_value("CUSTOMER#42") in out
    assert f.id in out and "Orders" in out and "2026-12-01T10:00:00Z" in out  # the rest is intact


def test_redact_text_heuristics() -> None:
    text = (
        'key: {"pk":"alice","sk":3}\n'
        "Writes to T (pk=bob, sk=ORDER#9) failed; TENANT#acme#USER#1 seen by arn:aws:iam::1:role/app at "
        "2026-12-01T10:00:00Z: ValidationException: too big\n"
        'top_keys: [{"key":{"pk":"carol"},"throttled_calls":4'  # cut short by the publisher: not JSON
    )
    out = redact_text(text)
    for raw in ("alice", "bob", "ORDER#9", "acme", "carol"):
        assert raw not in out, raw
    assert "arn:aws:iam::1:role/app" in out
    assert "2026-12-01T10:00:00Z" in out
    assert "ValidationException: too big" in out
    assert redact_text(out) == out  # idempotent: tokens are not re-redacted


def test_value_cut_short_with_a_glued_ellipsis_or_marker() -> None:
    long_value = "DOC#" + "q" * 90
    finding = _finding(
        {"key": {"pk": long_value}},
        title=f"Item pk={long_value[:40]}… is large",  # a cut the detector marks itself
        summary=f"pk={long_value[:40]}+more",
    )
    out = redact_finding(finding)
    token = redact_value(long_value)
    assert out["title"] == f"Item pk={token}… is large"
    assert out["summary"] == f"pk={token}+more"
    assert redact_finding(out) == out  # idempotent

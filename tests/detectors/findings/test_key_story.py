"""The key story (pure): a low-cardinality key and the hot keys among its values are one finding, and key-range
throttling is linked with whichever key finding exists, named only when it does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from auditor.detectors.findings.correlate import CorrelateConfig, correlate
from auditor.detectors.findings.key_story import merge_keys
from auditor.detectors.metrics import throttling as cw_throttling
from auditor.detectors.trail import throttling as trail_throttling
from auditor.models.finding import Finding, FindingKind, Severity

T = datetime(2026, 12, 5, 15, tzinfo=UTC)


def finding(
    kind: FindingKind, severity: Severity, evidence: dict[str, Any], *, discriminator: Any, **kw: Any
) -> Finding:
    return Finding.create(
        kind,
        account="123456789012",
        region="us-east-1",
        table=kw.get("table", "Jobs"),
        index=kw.get("index"),
        discriminator=discriminator,
        severity=severity,
        title=f"{kind} on Jobs",
        summary=f"A {kind}.",
        recommendation=f"Fix the {kind}.",
        evidence=evidence,
        first_seen=T,
        last_seen=T + timedelta(minutes=kw.get("minutes", 14)),
    )


def low(**kw: Any) -> Finding:
    evidence = {"distinct_partition_keys": 4, "requests": 2099, "key_attribute": "status", "source": "cloudtrail"}
    return finding(FindingKind.LOW_CARDINALITY_KEY, Severity.LOW, evidence, discriminator="status", **kw)


def hot(value: str = "PENDING", attribute: str = "status", **kw: Any) -> Finding:
    evidence = {
        "key": {attribute: value},
        "share": 0.41,
        "requests": 855,
        "window_seconds": 900,
        "source": "cloudtrail",
    }
    return finding(FindingKind.HOT_KEY, Severity.HIGH, evidence, discriminator={attribute: value}, **kw)


def throttling(**kw: Any) -> Finding:
    evidence = {"cause": "key_range", "read_throttle_events": 2, "write_throttle_events": 9, "source": "cloudtrail"}
    return finding(FindingKind.THROTTLING, Severity.MEDIUM, evidence, discriminator=None, **kw)


def test_a_hot_value_of_a_low_cardinality_key_is_one_finding() -> None:
    lc, pending, other_attr, other_index = low(), hot(), hot("C#1", attribute="customer"), hot(index="ByStatus")
    out = merge_keys([pending, lc, other_attr, other_index])
    # the hot value folds into the low-cardinality finding: its id, kind and totals, the worst fact's severity
    assert [f.id for f in out] == [lc.id, other_attr.id, other_index.id]
    story = out[0]
    assert (story.kind, story.severity) == (FindingKind.LOW_CARDINALITY_KEY, Severity.HIGH)
    assert [(x["kind"], x["source"]) for x in story.evidence["facts"]] == [
        ("low_cardinality_key", "cloudtrail"),
        ("hot_key", "cloudtrail"),
    ]
    assert story.evidence["facts"][1]["key"] == {"status": "PENDING"}
    assert {"first_seen", "last_seen", "severity"} <= set(story.evidence["facts"][1])
    assert "hot value status=PENDING" in story.title and story.missing_evidence() == []
    # merging again changes nothing
    assert merge_keys(out) == out


def test_without_a_low_cardinality_finding_hot_keys_stay_their_own() -> None:
    findings = [hot(), hot("RUNNING")]
    assert merge_keys(findings) == findings


def test_key_range_throttling_is_linked_with_a_low_cardinality_key_and_names_it() -> None:
    lc, thr = low(), throttling()
    out = correlate([lc, thr], CorrelateConfig())
    new_lc, new_thr = out
    assert new_lc.evidence["related_finding_ids"] == [thr.id]
    assert new_thr.evidence["related_finding_ids"] == [lc.id]
    assert (new_lc.severity, new_thr.severity) == (Severity.MEDIUM, Severity.HIGH)
    assert new_thr.summary.endswith("Confirmed by the low_cardinality_key finding on status of Jobs.")
    assert new_lc.summary.endswith("Confirmed by the key-range throttling finding on Jobs.")
    assert correlate(out, CorrelateConfig()) == out


def test_a_reference_names_only_findings_that_exist() -> None:
    thr = throttling()
    (alone,) = correlate([thr], CorrelateConfig())
    assert alone == thr
    # the detectors' own texts name no finding: only correlate names the ones that exist
    for text in (*trail_throttling.RECOMMENDATIONS.values(), *cw_throttling.RECOMMENDATIONS.values()):
        assert "hot_key" not in text and "low_cardinality_key" not in text
    (pk,) = correlate([hot(), thr], CorrelateConfig())[1:]
    assert pk.summary.endswith("Confirmed by the hot_key finding on status=PENDING.")


def test_the_key_story_is_linked_as_one_finding() -> None:
    merged = merge_keys([hot(), low(), throttling()])
    assert [f.kind for f in merged] == [FindingKind.LOW_CARDINALITY_KEY, FindingKind.THROTTLING]
    story, thr = correlate(merged, CorrelateConfig())
    assert story.evidence["related_finding_ids"] == [thr.id] and thr.evidence["related_finding_ids"] == [story.id]

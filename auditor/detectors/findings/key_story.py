"""One key story per partition-key attribute of a table or index (pure).

A ``low_cardinality_key`` finding (the attribute has too few values) and ``hot_key`` findings on values of that
same attribute, in the same (account, region, table, index), are one problem: :func:`merge_keys` folds the hot keys
into the low-cardinality finding as facts (``evidence.facts``: kind, source, severity, period, numbers), which keeps
its id, kind and totals and takes the worst fact's severity. Key-range throttling stays its own (table-level) story,
linked by :mod:`auditor.detectors.findings.correlate`. docs/detectors.md says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from auditor.models.finding import FACTS, Finding, FindingKind, isoformat_z, worst

__all__ = ["FACTS", "hot_attribute", "merge_keys"]


_LOW_FIELDS = ("key_attribute", "distinct_partition_keys", "requests", "window_seconds", "throttled_calls", "source")

Place = tuple[str | None, str | None, str, str | None, str]


def hot_attribute(finding: Finding) -> str | None:
    """The partition-key attribute of a single-key ``hot_key`` finding (None for a grouped or keyless one)."""
    key = finding.evidence.get("key")
    if finding.kind is not FindingKind.HOT_KEY or not isinstance(key, Mapping) or len(key) != 1:
        return None
    return str(next(iter(key)))


def _place(finding: Finding, attribute: str) -> Place:
    return (finding.account, finding.region, finding.table, finding.index, attribute)


def _fact(finding: Finding, fields: Sequence[str]) -> dict[str, Any]:
    """The finding as a fact: its kind, source, severity, period and ``fields`` of its evidence (a hot key keeps all
    of its evidence: what the data-model review and what-if read of a hot key)."""
    return {
        "kind": finding.kind.value,
        "source": str(finding.evidence.get("source") or "cloudtrail"),
        "severity": finding.severity.value,
        "first_seen": isoformat_z(finding.first_seen),
        "last_seen": isoformat_z(finding.last_seen),
        **{k: finding.evidence[k] for k in fields if k in finding.evidence and k != "source"},
    }


def _key_text(key: Any) -> str:
    return ", ".join(f"{k}={v!s:.60}" for k, v in key.items()) if isinstance(key, Mapping) else str(key)


def _story(low: Finding, hot: Sequence[Finding]) -> Finding:
    facts = [_fact(low, _LOW_FIELDS), *(_fact(h, tuple(h.evidence)) for h in hot)]
    related = sorted({str(i) for h in hot for i in h.evidence.get("related_finding_ids") or ()})
    evidence: dict[str, Any] = {**low.evidence, FACTS: facts}
    if related:
        evidence["related_finding_ids"] = sorted({*related, *(low.evidence.get("related_finding_ids") or ())})
    names = ", ".join(_key_text(h.evidence.get("key")) for h in hot)
    sentences = " ".join(
        f"Its value {_key_text(h.evidence.get('key'))} is a hot key ({h.severity.value}): {h.summary}" for h in hot
    )
    return low.model_copy(
        update={
            "severity": worst([low.severity, *(h.severity for h in hot)]) or low.severity,
            "title": f"{low.title} (hot value {names})",
            "summary": f"{low.summary} {sentences}",
            "recommendation": f"{low.recommendation} For the hot value: {hot[0].recommendation}",
            "evidence": evidence,
            "first_seen": min(f.first_seen for f in (low, *hot)),
            "last_seen": max(f.last_seen for f in (low, *hot)),
        }
    )


def merge_keys(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with each ``low_cardinality_key`` finding telling the ``hot_key`` findings on values of its
    attribute (same account, Region, table and index); those hot-key findings are left out. A finding already
    merged (it has ``facts``) passes through; the order of the others is kept."""
    lows = {
        _place(f, str(f.evidence.get("key_attribute"))): f
        for f in findings
        if f.kind is FindingKind.LOW_CARDINALITY_KEY and FACTS not in f.evidence and f.evidence.get("key_attribute")
    }
    hot: dict[Place, list[Finding]] = {}
    for f in findings:
        attribute = hot_attribute(f)
        if attribute is not None and _place(f, attribute) in lows:
            hot.setdefault(_place(f, attribute), []).append(f)
    if not hot:
        return list(findings)
    folded = {id(h) for members in hot.values() for h in members}
    stories = {id(low): _story(low, sorted(hot[p], key=Finding.sort_key)) for p, low in lows.items() if p in hot}
    return [stories.get(id(f), f) for f in findings if id(f) not in folded]

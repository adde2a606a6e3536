"""Correlation of the CloudTrail and CloudWatch paths (pure).

A ``hot_key`` finding (from CloudTrail traffic, or from Contributor Insights) or a ``low_cardinality_key`` finding
and a ``throttling`` finding with cause ``key_range`` on the same table and index are two views of one problem: the
traffic names the key, the throttle metrics prove the partition limit was hit. Both findings are raised
``raise_steps`` severity levels, link each other in ``evidence.related_finding_ids`` and name each other in their
summaries (only findings that exist). Correlating again is a no-op (``evidence.correlation`` marks a finding
already raised).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auditor.detectors.base import Count, DetectorConfig, DetectorInput, DetectorMetadata
from auditor.detectors.registry import register
from auditor.models.finding import Finding, FindingKind, Severity

METADATA = DetectorMetadata(
    id="correlate",
    kind=FindingKind.HOT_KEY,
    default_severity=Severity.HIGH,
    title="Hot key confirmed by key-range throttling",
    risk="A key that takes a large share of the traffic on a partition that throttles is an incident in waiting.",
    remediation="Spread the hot key; adding capacity does not lift a partition's limit.",
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-key-range-limit-exceeded-mitigation.html",
)

RULE = "hot_key+key_range_throttling"


def for_a_period(evidence: dict[str, object]) -> dict[str, object]:
    """``evidence`` as stated for a period: its correlation block names the rule and how far it raised the severity,
    not ``severity_raised_from`` (the severity of the window the rule raised, a sub-period figure that depends on which
    evaluation raised it: a window of the service, the whole input of ``analyze-trail``)."""
    block = evidence.get("correlation")
    if not isinstance(block, dict) or "severity_raised_from" not in block:
        return evidence
    return {**evidence, "correlation": {k: v for k, v in block.items() if k != "severity_raised_from"}}


#: In a throttling story's source block (``evidence.sources[source]``), set when the link raised the story above the
#: severity of every source: the story's severity and the linked findings' ids. The block's ``severity`` stays that
#: source's own (as its ``totals.by_source[source].peak_severity``).
RAISED_TO, RAISED_BY = "severity_raised_to", "severity_raised_by"

_SEVERITIES = frozenset(s.value for s in Severity)


def raised_sources(evidence: dict[str, Any], severity: Severity) -> dict[str, Any]:
    """A throttling story's ``evidence`` whose source blocks say when the story's ``severity`` is above their own
    because the link raised it (:data:`RAISED_TO`, :data:`RAISED_BY`, next to the block's own ``severity``); a label
    the story's severity no longer bears out is removed. Other evidence is returned as it is."""
    sources = evidence.get("sources")
    if not isinstance(sources, dict):
        return evidence
    own = {
        name: Severity(str(block["severity"]))
        for name, block in sources.items()
        if isinstance(block, dict) and block.get("severity") in _SEVERITIES
    }
    correlation = evidence.get("correlation")
    linked = isinstance(correlation, dict) and correlation.get("rule") == RULE
    raised = linked and bool(own) and all(s.rank < severity.rank for s in own.values())
    blocks: dict[str, Any] = {}
    for name, block in sources.items():
        if isinstance(block, dict):
            block = {k: v for k, v in block.items() if k not in (RAISED_TO, RAISED_BY)}
            if raised and name in own:
                block = _after_severity(
                    block, {RAISED_TO: severity.value, RAISED_BY: list(evidence.get("related_finding_ids") or ())}
                )
        blocks[name] = block
    return evidence if blocks == sources else {**evidence, "sources": blocks}


def _after_severity(block: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """``block`` with ``added`` right after its ``severity`` (read together wherever the block is printed)."""
    out: dict[str, Any] = {}
    for k, v in block.items():
        out[k] = v
        if k == "severity":
            out.update(added)
    return out


class CorrelateConfig(DetectorConfig):
    """How far to raise correlated findings."""

    raise_steps: Count = 1


def _compatible(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


def _same_resource(a: Finding, b: Finding) -> bool:
    return (
        a.table == b.table
        and a.index == b.index
        and _compatible(a.account, b.account)
        and _compatible(a.region, b.region)
    )


#: The key findings a key-range throttling finding is linked with.
_KEY_KINDS = frozenset({FindingKind.HOT_KEY, FindingKind.LOW_CARDINALITY_KEY})


def _name(f: Finding) -> str:
    """How a summary names a linked finding: its kind and what it is about."""
    where = f"{f.table}/{f.index}" if f.index else f.table
    if f.kind is FindingKind.HOT_KEY:
        key = f.evidence.get("key")
        text = ", ".join(f"{k}={v!s:.40}" for k, v in key.items()) if isinstance(key, dict) else "several keys"
        return f"the hot_key finding on {text}"
    if f.kind is FindingKind.LOW_CARDINALITY_KEY:
        return f"the low_cardinality_key finding on {f.evidence.get('key_attribute')} of {where}"
    return f"the key-range throttling finding on {where}"


def _confirmed(f: Finding, partners: list[Finding], known: set[str]) -> str:
    """``f``'s summary ending with one sentence naming the findings it is linked with (those of this run by name,
    stored ones it was linked with before by count)."""
    base = f.summary.split(" Confirmed by", 1)[0]
    names = [_name(p) for p in sorted(partners, key=lambda p: p.id)]
    others = len(known - {p.id for p in partners})
    if others:
        names.append(f"{others} earlier related finding{'s' if others != 1 else ''}")
    return f"{base} Confirmed by {', '.join(names)}."


@register(METADATA, CorrelateConfig, DetectorInput.FINDINGS)
def correlate(findings: Sequence[Finding], cfg: CorrelateConfig) -> list[Finding]:
    """``findings`` in the same order, with correlated pairs raised and linked (unchanged when disabled)."""
    keys = [f for f in findings if f.kind in _KEY_KINDS]
    throttled = [f for f in findings if f.kind == FindingKind.THROTTLING and f.evidence.get("cause") == "key_range"]
    partners: dict[str, list[Finding]] = {}
    for k in keys:
        for t in throttled:
            if _same_resource(k, t):
                partners.setdefault(k.id, []).append(t)
                partners.setdefault(t.id, []).append(k)
    out = []
    for f in findings:
        linked = partners.get(f.id)
        if not linked:
            out.append(f)
            continue
        ids = {p.id for p in linked}
        previous = f.evidence.get("correlation")
        known = set(f.evidence.get("related_finding_ids") or ())
        if isinstance(previous, dict) and previous.get("rule") == RULE:
            if ids <= known:
                out.append(f)  # already raised for these: correlating twice changes nothing
                continue
            base = f.severity
        else:
            base = f.severity.raised(cfg.raise_steps)
        evidence = dict(f.evidence)
        evidence["related_finding_ids"] = sorted(known | ids)
        evidence["correlation"] = (
            previous
            if isinstance(previous, dict) and previous.get("rule") == RULE
            else {"rule": RULE, "severity_raised_from": f.severity.value, "raised_steps": cfg.raise_steps}
        )
        summary = _confirmed(f, linked, known)
        evidence = raised_sources(evidence, base)
        out.append(f.model_copy(update={"severity": base, "evidence": evidence, "summary": summary}))
    return out

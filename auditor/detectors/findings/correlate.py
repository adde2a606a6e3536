"""Correlation of the CloudTrail and CloudWatch paths (pure).

A ``hot_key`` finding (from CloudTrail traffic, or from Contributor Insights) and a ``throttling`` finding with
cause ``key_range`` on the same table and index are two views of one problem: the traffic names the key, the
throttle metrics prove the partition limit was hit. Both findings are raised ``raise_steps`` severity levels and
link each other in ``evidence.related_finding_ids``. Correlating again is a no-op (``evidence.correlation`` marks
a finding already raised).
"""

from __future__ import annotations

from collections.abc import Sequence

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


@register(METADATA, CorrelateConfig, DetectorInput.FINDINGS)
def correlate(findings: Sequence[Finding], cfg: CorrelateConfig) -> list[Finding]:
    """``findings`` in the same order, with correlated pairs raised and linked (unchanged when disabled)."""
    hot = [f for f in findings if f.kind == FindingKind.HOT_KEY]
    throttled = [f for f in findings if f.kind == FindingKind.THROTTLING and f.evidence.get("cause") == "key_range"]
    related: dict[str, set[str]] = {}
    for h in hot:
        for t in throttled:
            if _same_resource(h, t):
                related.setdefault(h.id, set()).add(t.id)
                related.setdefault(t.id, set()).add(h.id)
    out = []
    for f in findings:
        ids = related.get(f.id)
        if not ids:
            out.append(f)
            continue
        previous = f.evidence.get("correlation")
        known = set(f.evidence.get("related_finding_ids") or ())
        if isinstance(previous, dict) and previous.get("rule") == RULE:
            if ids <= known:
                out.append(f)  # already raised for these: correlating twice changes nothing
                continue
            base = f.severity
        else:
            base = f.severity.raised(cfg.raise_steps)
        other = "key-range throttling on the same partition" if f.kind == FindingKind.HOT_KEY else "a hot key"
        evidence = dict(f.evidence)
        evidence["related_finding_ids"] = sorted(known | ids)
        evidence["correlation"] = (
            previous
            if isinstance(previous, dict) and previous.get("rule") == RULE
            else {"rule": RULE, "severity_raised_from": f.severity.value}
        )
        summary = (
            f.summary if "Confirmed by" in f.summary else f"{f.summary} Confirmed by {other} ({len(ids)} related)."
        )
        out.append(f.model_copy(update={"severity": base, "evidence": evidence, "summary": summary}))
    return out

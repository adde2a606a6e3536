"""``hot_key`` (Contributor Insights path): the keys DynamoDB itself ranks as most throttled or most accessed.

A key that takes a share of a throttled-keys rule's throttles is a confirmed hot key; a key of an accessed-keys rule
is reported when its busiest period reaches a share of what one partition serves. Partition+sort key rules name the
hot items of the partition-key finding. The rules are in docs/detectors.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.detectors.base import (
    Amount,
    Count,
    DetectorConfig,
    DetectorInput,
    DetectorMetadata,
    InsightsInput,
    Limit,
    Share,
    make_finding,
)
from auditor.detectors.registry import register
from auditor.detectors.trail.hot_key import severity_for_headroom
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.inventory import TableProfile
from auditor.models.metrics import InsightContributor, InsightReport

METADATA = DetectorMetadata(
    id="ci_hot_key",
    kind=FindingKind.HOT_KEY,
    default_severity=Severity.MEDIUM,
    title="Hot key named by Contributor Insights",
    risk=(
        "All requests for one partition key go to one partition, which serves at most 3,000 read units and "
        "1,000 write units per second whatever the table's capacity. Contributor Insights shows which keys were "
        "throttled or took the most throughput."
    ),
    remediation=(
        "Spread the key: write-shard it (suffix 0..N-1 and read all shards), choose a higher-cardinality "
        "partition key, or cache hot reads (DAX or an application cache)."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/contributorinsights_HowItWorks.html",
)


class CiHotKeyConfig(DetectorConfig):
    """Which contributors are hot keys."""

    min_share: Share = 0.10
    #: Throttled-keys rules: at least this many throttled requests for the key in the window.
    min_throttles: Amount = 10.0
    #: Throttled-keys rules: high severity when the key takes this share of all throttles.
    high_throttle_share: Share = 0.5
    #: Accessed-keys rules: the key's busiest period must reach this share of one partition's throughput.
    min_saturation: Amount = 0.10
    #: ConsumedThroughputUnits one partition serves per second (3,000 read units, or 1,000 write units x 3).
    partition_units_per_second: Limit = 3000.0
    max_findings_per_rule: Count = 3


@dataclass(slots=True)
class _Candidate:
    report: InsightReport
    contributor: InsightContributor
    key: dict[str, Any]
    share: float
    severity: Severity
    saturation: float | None
    hot_items: list[dict[str, Any]] = field(default_factory=list)


def _labels(report: InsightReport, profile: TableProfile | None) -> list[str]:
    n = 2 if report.with_sort_key else 1
    if len(report.key_labels) >= n:
        return list(report.key_labels[:n])
    pk = sk = None
    if profile is not None:
        if report.index is None:
            pk, sk = profile.partition_key, profile.sort_key
        elif (gsi := profile.gsi(report.index)) is not None:
            pk, sk = gsi.partition_key, gsi.sort_key
    return [pk or "partition_key", sk or "sort_key"][:n]


def _assess(report: InsightReport, c: InsightContributor, cfg: CiHotKeyConfig) -> tuple[Severity, float | None] | None:
    share = c.aggregate / report.aggregate_value if report.aggregate_value > 0 else 0.0
    if share < cfg.min_share:
        return None
    if report.throttled:
        if c.aggregate < cfg.min_throttles:
            return None
        return (Severity.HIGH if share >= cfg.high_throttle_share else Severity.MEDIUM), None
    saturation = c.max_value / (cfg.partition_units_per_second * report.period)
    if saturation < cfg.min_saturation:
        return None
    return severity_for_headroom(1 / saturation if saturation > 0 else None), saturation


@register(METADATA, CiHotKeyConfig, DetectorInput.CONTRIBUTOR_INSIGHTS)
def detect(data: InsightsInput, cfg: CiHotKeyConfig) -> list[Finding]:
    """Hot-key findings from Contributor Insights reports (``profiles`` by table name)."""
    reports, profiles = data.reports, data.profiles
    candidates: dict[tuple[str, str | None, bool, str], _Candidate] = {}
    # Partition-key rules first, so item-level rules attach to them.
    for report in sorted(reports, key=lambda r: (r.with_sort_key, r.table, r.index or "", r.rule_name)):
        profile = profiles.get(report.table)
        labels = _labels(report, profile)
        reported = 0
        for c in sorted(report.contributors, key=lambda c: -c.aggregate):
            if reported >= cfg.max_findings_per_rule or len(c.keys) < len(labels):
                break
            assessed = _assess(report, c, cfg)
            if assessed is None:
                continue
            severity, saturation = assessed
            key = dict(zip(labels, c.keys, strict=False))
            slot = (report.table, report.index, report.throttled, c.keys[0])
            if report.with_sort_key and slot in candidates:
                candidates[slot].hot_items.append({"key": key, "requests": round(c.aggregate)})
                continue
            if slot in candidates:
                continue
            share = c.aggregate / report.aggregate_value
            candidates[slot] = _Candidate(report, c, key, share, severity, saturation)
            reported += 1
    findings = []
    for cand in candidates.values():
        profile = profiles.get(cand.report.table) or TableProfile(name=cand.report.table)
        findings.append(_finding(profile, cand, cfg))
    return findings


def _finding(profile: TableProfile, cand: _Candidate, cfg: CiHotKeyConfig) -> Finding:
    r, c = cand.report, cand.contributor
    where = f"{r.table}/{r.index}" if r.index else r.table
    key_text = ", ".join(f"{k}={v!s:.60}" for k, v in cand.key.items())
    metric = "ThrottleCount" if r.throttled else "ConsumedThroughputUnits"
    peak = c.max_value
    if r.throttled:
        summary = (
            f"Contributor Insights ({r.rule_kind}) counts about {c.aggregate:,.0f} throttled requests for {key_text} "
            f"on {where} in {(r.end - r.start) / 3600:g} hours, {cand.share:.0%} of all throttled requests there "
            f"(peak {peak:,.0f} in one {r.period // 60 or 1}-minute period)."
        )
    else:
        summary = (
            f"Contributor Insights ({r.rule_kind}) ranks {key_text} on {where} at {cand.share:.0%} of the consumed "
            f"throughput; its busiest {r.period}-second period reached {peak:,.0f} units, "
            f"{(cand.saturation or 0):.0%} of what one partition serves."
        )
    headroom = 1 / cand.saturation if cand.saturation else None
    times = [t for t, _ in c.datapoints]
    return make_finding(
        METADATA,
        profile,
        severity=cand.severity,
        discriminator={"key": cand.key, "source": "contributor_insights", "throttled": r.throttled},
        index=r.index,
        title=f"Hot {'throttled ' if r.throttled else ''}key {key_text:.80} on {where}",
        summary=summary,
        recommendation=(
            f"Spread {key_text:.80}: write-shard it (suffix the key with 0..N-1 and fan reads out), cache hot reads "
            "(DAX or an application cache), or choose a higher-cardinality partition key."
            + (" The per-item rule shows the hot items (hot_items)." if cand.hot_items else "")
        ),
        evidence={
            "key": cand.key,
            "share": round(min(1.0, cand.share), 4),
            "requests": round(c.aggregate),
            "window_seconds": r.end - r.start,
            "source": "contributor_insights",
            "metric": metric,
            "rule_name": r.rule_name,
            "rule_kind": r.rule_kind,
            "approximate": True,
            "peak_per_period": round(peak, 1),
            "period_seconds": r.period,
            "saturation": round(cand.saturation, 4) if cand.saturation is not None else None,
            "headroom_factor": round(headroom, 2) if headroom is not None else None,
            "periods_seen": len(c.datapoints),
            "unique_contributors": r.unique_contributors,
            "hot_items": cand.hot_items,
        },
        first=times[0] if times else r.start,
        last=(times[-1] + r.period) if times else r.end,
    )

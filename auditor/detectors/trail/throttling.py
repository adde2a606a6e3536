"""``throttling`` (CloudTrail path): calls rejected with a throttling error, by cause."""

from __future__ import annotations

from auditor.aggregates.window import GENERIC_PROVISIONED, OTHER, THROTTLE_CODES, TableWindow, decode_key
from auditor.detectors.base import DetectorConfig, DetectorMetadata, make_finding
from auditor.detectors.registry import register
from auditor.models.finding import Finding, FindingKind, Severity

METADATA = DetectorMetadata(
    id="throttling",
    kind=FindingKind.THROTTLING,
    default_severity=Severity.MEDIUM,
    title="Requests throttled",
    risk=(
        "Throttled requests are retried by the SDK, adding latency, and fail once retries run out. The "
        "cause decides the fix: a hot partition is not solved by adding capacity."
    ),
    remediation="Fix the cause named in the finding (see the recommendation).",
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TroubleshootingThrottling.html",
)

RECOMMENDATIONS = {
    "key_range": (
        "A single partition exceeded its limit (3,000 RCU / 1,000 WCU per second): adding table capacity will "
        "not help. Spread the hot key (write sharding, a higher-cardinality key) or cache hot reads; see the "
        "hot_key findings for this table."
    ),
    "provisioned": (
        "The table or index ran out of provisioned capacity. Raise the auto-scaling maximum and target "
        "utilisation headroom, or switch to on-demand if traffic is spiky (see the billing_mode finding)."
    ),
    "account_limit": (
        "The on-demand table hit the per-table account throughput quota. Request a quota increase in "
        "Service Quotas, or spread the workload over time."
    ),
    "on_demand_max": (
        "The table hit its own on-demand maximum throughput setting. Raise MaxReadRequestUnits / "
        "MaxWriteRequestUnits (or set -1) if the traffic is legitimate."
    ),
    "gsi_backpressure": (
        "A global secondary index could not absorb its share of the writes, so base-table writes were "
        "throttled. Give the index more write capacity (or on-demand), and check its partition key for "
        "skew: a low-cardinality GSI key throttles the whole table."
    ),
    "unknown": (
        "CloudTrail does not say why these calls were throttled. Check the per-cause CloudWatch metrics "
        "(ReadKeyRangeThroughputThrottleEvents and friends) with `ddb-audit audit`, and the hot_key findings."
    ),
}


class ThrottlingConfig(DetectorConfig):
    """Severity by throttled calls in the evaluated windows."""

    min_events: int = 1
    medium_events: int = 10
    high_events: int = 100
    #: A classic ProvisionedThroughputExceeded message is taken as a hot partition (``key_range``) when this share
    #: of the throttled calls hit one partition key, and that is ``concentration_factor`` times its traffic share.
    key_concentration: float = 0.8
    concentration_factor: float = 2.0


def _resolve(raw_cause: str, agg: TableWindow, cfg: ThrottlingConfig) -> tuple[str, str]:
    """(cause, how it was determined) for one aggregated cause."""
    if raw_cause != GENERIC_PROVISIONED:
        return raw_cause, "throttling_reasons" if raw_cause not in ("unknown", "account_limit") else "error_code"
    keyed = {k: n for k, n in agg.throttle_keys.items() if k != OTHER}
    total = sum(agg.throttle_keys.values())
    if keyed and total:
        top_key, top_n = max(sorted(keyed.items()), key=lambda kv: kv[1])
        throttled_share = top_n / total
        traffic_share = agg.hot.counts.get(top_key, 0) / agg.key_requests if agg.key_requests else 1.0
        if throttled_share >= cfg.key_concentration and throttled_share >= cfg.concentration_factor * traffic_share:
            return "key_range", "inferred_from_keys"
    return "provisioned", "error_message"


@register(METADATA, ThrottlingConfig)
def detect(agg: TableWindow, cfg: ThrottlingConfig) -> list[Finding]:
    """One finding per cause (and index) with throttled calls."""
    by_cause: dict[tuple[str, str], dict[str, int]] = {}
    sources: dict[tuple[str, str], str] = {}
    for (raw_cause, access, index), n in agg.throttles.items():
        cause, source = _resolve(raw_cause, agg, cfg)
        sources[(cause, index)] = source
        counts = by_cause.setdefault((cause, index), {"read": 0, "write": 0})
        counts[access] = counts.get(access, 0) + n
    findings: list[Finding] = []
    keys = [
        {"key": None if k == OTHER else decode_key(k), "throttled_calls": n}
        for k, n in sorted(agg.throttle_keys.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    ]
    for (cause, index), counts in sorted(by_cause.items()):
        total = counts["read"] + counts["write"]
        if total < cfg.min_events:
            continue
        if total >= cfg.high_events:
            severity = Severity.HIGH
        elif total >= cfg.medium_events:
            severity = Severity.MEDIUM
        else:
            severity = Severity.LOW
        where = f"index {index} of {agg.table}" if index else agg.table
        findings.append(
            make_finding(
                METADATA,
                agg,
                severity=severity,
                discriminator=cause,
                index=index or None,
                title=f"Throttling on {where} ({cause.replace('_', ' ')})",
                summary=(
                    f"{total} calls to {agg.table} were throttled in {agg.window_seconds // 60} minutes "
                    f"({counts['read']} reads, {counts['write']} writes; {total / max(1, agg.calls):.1%} of calls); "
                    f"cause: {cause}."
                ),
                recommendation=RECOMMENDATIONS[cause],
                evidence={
                    "cause": cause,
                    "cause_source": sources[(cause, index)],
                    "read_throttle_events": counts["read"],
                    "write_throttle_events": counts["write"],
                    "source": "cloudtrail",
                    "throttled_share": round(total / max(1, agg.calls), 4),
                    "top_keys": keys,
                    "error_codes": {k: v for k, v in sorted(agg.errors.items()) if k in THROTTLE_CODES},
                    "sample_messages": agg.throttle_messages,
                    "window_seconds": agg.window_seconds,
                },
            )
        )
    return findings

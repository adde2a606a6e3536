"""``throttling`` (CloudTrail path): calls rejected with a throttling error, by cause."""

from __future__ import annotations

from auditor.detectors.base import (
    Amount,
    Count,
    DetectorConfig,
    DetectorMetadata,
    Limit,
    Share,
    make_finding,
    tiered_severity,
)
from auditor.detectors.registry import register
from auditor.detectors.trail.key_spaces import gsi_evidence
from auditor.kernel.aggregates.bounds import OTHER
from auditor.kernel.aggregates.failures import FROM_MESSAGE, GENERIC_ON_DEMAND, GENERIC_PROVISIONED, THROTTLE_CODES
from auditor.kernel.aggregates.index_writes import amplified_index, index_writes
from auditor.kernel.aggregates.keys import decode_key
from auditor.kernel.aggregates.window import TableWindow
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
        "The throttled calls fell on a few keys: the partition holding them ran out of capacity. A partition serves "
        "at most 3,000 RCU / 1,000 WCU per second, and on a provisioned table no more than the table's capacity "
        "left: a key whose measured peak is far below the partition's limit hit the table's (or its items are "
        "larger than assumed). Adding table capacity helps only then; in either case spread the hot key (write "
        "sharding, a higher-cardinality key) or cache hot reads."
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
        "The on-demand table was throttled across many keys: it hit its maximum throughput (its own "
        "MaxReadRequestUnits / MaxWriteRequestUnits setting, or the per-table quota), or grew faster than on-demand "
        "adapts (double the previous peak within 30 minutes). Raise the maximum (or set -1), pre-warm the table "
        "(warm throughput) before known peaks, or ramp traffic up gradually."
    ),
    "gsi_backpressure": (
        "A global secondary index could not absorb its share of the writes, so base-table writes were "
        "throttled: raising the table's capacity will not help. Give the index at least the table's write capacity "
        "(or its own on-demand maximum), project fewer attributes into it, and check its partition key for skew: "
        "a low-cardinality GSI key throttles the whole table."
    ),
    "unknown": (
        "CloudTrail does not say why these calls were throttled. Check the per-cause CloudWatch metrics "
        "(ReadKeyRangeThroughputThrottleEvents and friends) with `ddb-audit audit`."
    ),
}


class ThrottlingConfig(DetectorConfig):
    """Severity by throttled calls in the evaluated windows; cause rules for throttles without reasons."""

    min_events: Count = 1
    medium_events: Count = 10
    high_events: Count = 100
    #: Throttles are concentrated when the busiest key has this share of the keyed throttles, or the three busiest
    #: ``few_keys_share`` of them.
    key_concentration: Share = 0.5
    few_keys_share: Share = 0.8
    #: On a provisioned table a concentration is a hot partition (not exhausted table capacity) when the keys'
    #: share of the throttles exceeds their share of the traffic by this margin, or the other keys were spared (they
    #: got at most this fraction of the throttles their share of the traffic would have brought them, and that would
    #: have been at least ``min_keyed_throttles``), or the keys' peak rate reaches ``key_rate_utilisation`` of a
    #: partition's limit.
    concentration_margin: Share = 0.15
    key_rate_utilisation: Amount = 0.8
    #: Fewer keyed throttles than this decide nothing.
    min_keyed_throttles: Count = 3
    partition_read_units_per_second: Limit = 3000.0
    partition_write_units_per_second: Limit = 1000.0


def _peak_utilisation(agg: TableWindow, keys: list[str], cfg: ThrottlingConfig) -> float:
    """The highest peak-minute (or peak-second) utilisation of a partition's limit among ``keys``."""
    minutes = agg.minute_peaks()
    seconds = agg.second_peaks()
    best = 0.0
    for k in keys:
        r, _, w, _ = minutes.get(k, (0, 0, 0, 0))
        sr, _, sw, _ = seconds.get(k, (0, 0, 0, 0))
        best = max(
            best,
            max(r / 60, sr) / cfg.partition_read_units_per_second,
            max(w / 60, sw) / cfg.partition_write_units_per_second,
        )
    return best


def _resolve(raw_cause: str, agg: TableWindow, cfg: ThrottlingConfig) -> tuple[str, str, str | None]:
    """(cause, how it was determined, what is missing to decide) for one aggregated cause.

    Throttles without ``ThrottlingReasons`` are decided by how they spread over keys, whatever the exception name:
    most on one key or a few keys is a hot partition (``key_range``); spread over many keys is the table's capacity
    (``provisioned``, for ProvisionedThroughputExceededException) or its on-demand maximum (``on_demand_max``, for
    ThrottlingException).
    """
    if raw_cause.startswith(FROM_MESSAGE):  # a classic message that names the cause (a GSI's)
        return raw_cause[len(FROM_MESSAGE) :], "error_message", None
    if raw_cause not in (GENERIC_PROVISIONED, GENERIC_ON_DEMAND):
        source = "throttling_reasons" if raw_cause not in ("unknown", "account_limit") else "error_code"
        missing = (
            "ThrottlingReasons in the error message, or keys on the throttled calls" if raw_cause == "unknown" else None
        )
        return raw_cause, source, missing
    provisioned = raw_cause == GENERIC_PROVISIONED
    keyed = {k: n for k, n in agg.throttle_keys.items() if k != OTHER}
    total = sum(agg.throttle_keys.values())
    if total < cfg.min_keyed_throttles or not keyed:
        if provisioned:
            return "provisioned", "error_message", None
        return (
            "unknown",
            "no_keys",
            (
                f"only {total} throttled calls name a key (Scans, Queries without a logged key and PartiQL without key "
                "literals do not): the keys' spread cannot tell a hot partition from the table's on-demand maximum"
            ),
        )
    ranked = sorted(keyed.items(), key=lambda kv: (-kv[1], kv[0]))
    top1 = ranked[0][1] / total
    top = [k for k, _ in ranked[:3]]
    top3 = sum(n for _, n in ranked[:3]) / total
    concentrated = top1 >= cfg.key_concentration or top3 >= cfg.few_keys_share
    if not concentrated:
        return ("provisioned" if provisioned else "on_demand_max"), "spread_over_keys", None
    if not provisioned:
        return "key_range", "concentrated_on_keys", None
    traffic = sum(agg.hot.counts.get(k, 0) for k in top) / agg.key_requests if agg.key_requests else 0.0
    share = top1 if top1 >= cfg.key_concentration else top3
    if traffic == 0.0 or share >= traffic + cfg.concentration_margin:
        return "key_range", "concentrated_on_keys", None
    # Keys that carry most of a window's traffic (a burst) cannot exceed their traffic share by the margin: there the
    # other keys tell. Had the throttles followed the traffic, the rest would have got their share of them.
    fair = total * (1.0 - traffic)
    if fair >= cfg.min_keyed_throttles and total * (1.0 - top3) <= cfg.concentration_margin * fair:
        return "key_range", "concentrated_on_keys", None
    if _peak_utilisation(agg, top, cfg) >= cfg.key_rate_utilisation:
        return "key_range", "key_rate_at_partition_limit", None
    return "provisioned", "throttles_follow_traffic", None


@register(METADATA, ThrottlingConfig)
def detect(agg: TableWindow, cfg: ThrottlingConfig) -> list[Finding]:
    """One finding per cause (and index) with throttled calls."""
    by_cause: dict[tuple[str, str], dict[str, int]] = {}
    sources: dict[tuple[str, str], str] = {}
    missing: dict[tuple[str, str], str | None] = {}
    amplified = amplified_index(index_writes(agg))  # a GSI message naming no index: the one the writes amplify into
    for (raw_cause, access, index), n in agg.throttles.items():
        cause, source, lacking = _resolve(raw_cause, agg, cfg)
        if cause == "gsi_backpressure" and not index and amplified is not None:
            index = amplified.index
        sources[(cause, index)] = source
        missing[(cause, index)] = lacking
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
        severity = tiered_severity(total, cfg.high_events, cfg.medium_events)
        where = f"index {index} of {agg.table}" if index else agg.table
        amplification, index_evidence = gsi_evidence(agg, index, total) if cause == "gsi_backpressure" else ("", {})
        findings.append(
            make_finding(
                METADATA,
                agg,
                severity=severity,
                discriminator=cause,
                index=index or None,
                title=f"Throttling on {where} ({cause.replace('_', ' ')})",
                summary=(
                    f"{total} calls to {agg.table} were throttled in {agg.observed_seconds / 60:g} minutes "
                    f"({counts['read']} reads, {counts['write']} writes; {total / max(1, agg.calls):.1%} of calls); "
                    f"cause: {cause}."
                    + (f" Undecided: {missing[(cause, index)]}." if missing[(cause, index)] else "")
                    + amplification
                ),
                recommendation=RECOMMENDATIONS[cause],
                evidence={
                    "cause": cause,
                    "cause_source": sources[(cause, index)],
                    "missing_to_decide": missing[(cause, index)],
                    "read_throttle_events": counts["read"],
                    "write_throttle_events": counts["write"],
                    "source": "cloudtrail",
                    "throttled_share": round(total / max(1, agg.calls), 4),
                    "calls": agg.calls,  # the window's calls: what throttled_share is of
                    "top_keys": keys,
                    "error_codes": {k: v for k, v in sorted(agg.errors.items()) if k in THROTTLE_CODES},
                    "sample_messages": agg.throttle_messages,
                    "window_seconds": agg.window_seconds,
                    **index_evidence,
                },
            )
        )
    return findings

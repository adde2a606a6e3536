"""``hot_key``: one partition key taking a disproportionate share of the key-identified requests."""

from __future__ import annotations

from auditor.aggregates.window import TableWindow, decode_key
from auditor.detectors.base import DetectorConfig, DetectorMetadata, epoch_to_dt, make_finding, per_second
from auditor.detectors.registry import register
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.whatif.limits import headroom_sentence

METADATA = DetectorMetadata(
    id="hot_key",
    kind=FindingKind.HOT_KEY,
    default_severity=Severity.MEDIUM,
    title="Hot partition key",
    risk=(
        "All requests for one partition key go to one partition, which serves at most 3,000 RCU and "
        "1,000 WCU per second whatever the table's capacity. A key that takes a large share of traffic "
        "throttles first (KeyRangeThroughputExceeded) while the rest of the table is idle."
    ),
    remediation=(
        "Spread the key: write-shard it (append a suffix 0..N-1 and read all shards), choose a higher-"
        "cardinality partition key, cache hot reads (DAX or an application cache), or move the hot "
        "counter/aggregate out of the request path."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html",
)

ASSUMPTION = (
    "CloudTrail does not log item sizes: rates assume 1 RCU per read and 1 WCU per write (items up to 4 KB "
    "read, 1 KB written). Larger items reach the partition limit sooner."
)


class HotKeyConfig(DetectorConfig):
    """A key is hot when it takes at least ``min_share`` and ``skew_factor`` times a uniform share."""

    min_key_requests: int = 200
    min_share: float = 0.10
    skew_factor: float = 10.0
    max_findings_per_table: int = 3
    partition_read_units_per_second: float = 3000.0
    partition_write_units_per_second: float = 1000.0


def headroom(reads_per_s: float, writes_per_s: float, cfg: HotKeyConfig) -> float | None:
    """The traffic multiple at which this key alone would exceed one partition's limit."""
    limits = []
    if reads_per_s > 0:
        limits.append(cfg.partition_read_units_per_second / reads_per_s)
    if writes_per_s > 0:
        limits.append(cfg.partition_write_units_per_second / writes_per_s)
    return min(limits) if limits else None


def severity_for_headroom(h: float | None) -> Severity:
    """Closer to the partition limit is more severe: at or past it is critical."""
    if h is None:
        return Severity.LOW
    if h <= 1.0:
        return Severity.CRITICAL
    if h <= 2.0:
        return Severity.HIGH
    if h <= 10.0:
        return Severity.MEDIUM
    return Severity.LOW


@register(METADATA, HotKeyConfig)
def detect(agg: TableWindow, cfg: HotKeyConfig) -> list[Finding]:
    """Report the keys whose share is both large and far above a uniform share."""
    total = agg.key_requests
    if total < cfg.min_key_requests:
        return []
    distinct = max(1, agg.distinct.estimate())
    threshold = max(cfg.min_share, cfg.skew_factor / distinct)
    findings: list[Finding] = []
    for encoded, count in agg.hot.top(cfg.max_findings_per_table):
        share = count / total
        if share < threshold:
            break
        writes = min(count, agg.hot_writes.counts.get(encoded, 0))
        reads = count - writes
        r_s = per_second(reads, agg.window_seconds)
        w_s = per_second(writes, agg.window_seconds)
        h = headroom(r_s, w_s, cfg)
        # Traffic is rarely flat: the busiest minute decides how close the key came to the partition limit.
        peak = agg.peak_minute(encoded)
        peak_r_s = peak_w_s = 0.0
        if peak is not None:
            peak_r_s, peak_w_s = (peak[1] - peak[2]) / 60, peak[2] / 60
            h_peak = headroom(peak_r_s, peak_w_s, cfg)
            if h_peak is not None and (h is None or h_peak < h):
                h = h_peak
        key = decode_key(encoded)
        attr, value = next(iter(key.items()))
        findings.append(
            make_finding(
                METADATA,
                agg,
                severity=severity_for_headroom(h),
                discriminator=key,
                title=f"Hot partition key {attr}={value!s:.60} on {agg.table}",
                summary=(
                    f"{share:.0%} of the {total} key-identified requests to {agg.table} in "
                    f"{agg.window_seconds // 60} minutes went to {attr}={value!s:.80} "
                    f"({r_s:.1f} reads/s, {w_s:.1f} writes/s) across {distinct} distinct partition keys."
                    + (
                        f" Its busiest minute ran at {peak_r_s:.1f} reads/s and {peak_w_s:.1f} writes/s: at "
                        f"{h:.1f}x that traffic this key alone exceeds one partition's limit."
                        if h is not None
                        else ""
                    )
                    + headroom_sentence(h)
                ),
                recommendation=(
                    f"Spread {attr}={value!s:.60}: "
                    + (
                        "write-shard it (suffix the key with a random or calculated shard 0..N-1 and fan reads "
                        "out over the shards), "
                        if writes
                        else ""
                    )
                    + ("cache the hot reads (DAX or an application cache), " if reads else "")
                    + "or pick a higher-cardinality partition key so requests spread over many partitions."
                ),
                evidence={
                    "key": key,
                    "share": round(share, 4),
                    "requests": count,
                    "reads": reads,
                    "writes": writes,
                    "window_seconds": agg.window_seconds,
                    "source": "cloudtrail",
                    "reads_per_second": round(r_s, 3),
                    "writes_per_second": round(w_s, 3),
                    "headroom_factor": round(h, 2) if h is not None else None,
                    "peak_minute": epoch_to_dt(peak[0]).strftime("%Y-%m-%dT%H:%M:%SZ") if peak else None,
                    "peak_minute_requests": peak[1] if peak else None,
                    "peak_reads_per_second": round(peak_r_s, 3),
                    "peak_writes_per_second": round(peak_w_s, 3),
                    "key_requests": total,
                    "distinct_partition_keys": distinct,
                    "estimate_error": agg.hot.error,
                    "assumption": ASSUMPTION,
                },
            )
        )
    return findings

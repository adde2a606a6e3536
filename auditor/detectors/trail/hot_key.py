"""``hot_key``: partition keys whose own request rate approaches one partition's limit, or that take a
disproportionate share of the key-identified requests.

A key is judged by its **absolute** peak rate, not by its share of the period: its busiest second and its busiest
minute (reads and writes separately) against one partition's 3,000 RCU / 1,000 WCU per second. A burst counts at
its own rate, however long the trail is. The share rule (a key far above a uniform share) still applies, but a key
far below the partition limits is at most ``low`` and says so. There is no cap on the keys reported: up to
``max_findings_per_table`` get a finding each; more are grouped in one finding that lists every one of them.
Throttles observed on a key raise its severity. Each index is its own partition space (:mod:`.key_spaces`): an
index's keys are measured against the index's traffic and reported on the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.detectors.base import (
    Amount,
    Count,
    DetectorConfig,
    DetectorMetadata,
    Limit,
    Share,
    epoch_to_dt,
    make_finding,
    per_second,
)
from auditor.detectors.registry import register
from auditor.detectors.trail.key_spaces import KeySpace, key_spaces
from auditor.detectors.trail.timebucket import SHARD_TARGET_UTILISATION, bucket_of, shard_advice
from auditor.kernel.aggregates.keys import decode_key
from auditor.kernel.aggregates.window import TableWindow
from auditor.models.capacity import Headroom, reconcile, unit_costs
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.whatif.limits import KeyPeak, PartitionCapacity, headroom_sentence, key_peak

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
    "CloudTrail does not log item sizes or consumed capacity: rates assume 1 RCU per read and 1 WCU per write (items "
    "up to 4 KB read strongly consistent, 1 KB written). Larger items reach the partition limit sooner."
)


#: What each item size source is, after its name (``auditor.models.capacity.ITEM_SIZE_SOURCES``).
_SIZE_SOURCES = {
    "streams": ": the exact sizes the stream watcher measured",
    "inventory": ": DescribeTable's size over its item count",
    "cloudwatch": (
        ": CloudWatch's consumed write units per write, a lower bound, as batches and transactions count at their "
        "most items"
    ),
}


@dataclass(frozen=True, slots=True)
class UnitCosts:
    """Capacity units per request on this table: ``ceil(size / 4 KB)`` read units per strongly consistent read
    (half for an eventually consistent one) and ``ceil(size / 1 KB)`` write units per write, from the typical
    item size where it is known (else 1 and 1) and the share of reads logged ``consistentRead: false``."""

    read: float = 1.0
    write: float = 1.0
    item_size_bytes: int | None = None
    item_size_source: str | None = None
    eventual_read_share: float = 0.0

    @classmethod
    def of(cls, agg: TableWindow, space: KeySpace | None = None) -> UnitCosts:
        """The costs of ``space``'s requests (the table's by default), at the table's item size."""
        size = agg.item_size_bytes
        reads, eventual_reads = (
            (agg.key_reads, agg.key_reads_eventual)
            if space is None
            else (
                space.reads,
                space.reads_eventual,
            )
        )
        eventual = eventual_reads / reads if reads else 0.0
        read, write = unit_costs(size, reads, eventual_reads)
        return cls(
            read=read,
            write=write,
            item_size_bytes=size,
            item_size_source=agg.item_size_source if size else None,
            eventual_read_share=eventual,
        )

    def assumption(self) -> str:
        """What the rates in units rest on, in words."""
        if self.item_size_bytes is None and self.eventual_read_share == 0:
            return ASSUMPTION
        size = (
            f"items of about {self.item_size_bytes:,} bytes (from the {self.item_size_source}"
            f"{_SIZE_SOURCES.get(self.item_size_source or '', '')})"
            if self.item_size_bytes
            else "items of up to 4 KB read and 1 KB written (CloudTrail logs no sizes)"
        )
        return (
            f"Rates in capacity units assume {size}: {self.read:g} RCU per read "
            f"({self.eventual_read_share:.0%} of reads logged eventually consistent, at half a unit; reads without "
            f"consistentRead count as strongly consistent) and {self.write:g} WCU per write."
        )


#: The settings that give one partition's limits.
_PARTITION_LIMITS = frozenset({"partition_read_units_per_second", "partition_write_units_per_second"})


class HotKeyConfig(DetectorConfig):
    """A key is hot by rate (peak second or minute at ``min_utilisation`` of a partition's limit) or by share (at
    least ``min_share`` and ``skew_factor`` times a uniform share)."""

    min_key_requests: Count = 200
    min_share: Share = 0.10
    skew_factor: Amount = 10.0
    min_utilisation: Amount = 0.25
    #: A peak second with fewer requests than this is not taken as the key's rate (a handful of calls).
    min_peak_second_requests: Count = 50
    #: Up to this many hot keys get a finding each; more are grouped in one finding that lists all of them.
    max_findings_per_table: Count = 5
    #: At or above this headroom (limit / peak rate) a hot key is at most ``low``.
    huge_headroom: Amount = 10.0
    #: Throttled calls on the key that make it at least ``high`` / ``critical``.
    high_throttles: Count = 1
    critical_throttles: Count = 100
    partition_read_units_per_second: Limit = 3000.0
    partition_write_units_per_second: Limit = 1000.0


def headroom(reads_per_s: float, writes_per_s: float, cfg: HotKeyConfig) -> float | None:
    """The traffic multiple at which this key alone would exceed one partition's limit, on paper (the assumptions
    only; :meth:`KeyRates.headroom` reconciles it with the throttles observed)."""
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


@dataclass(slots=True)
class KeyRates:
    """What the aggregate tells about one key's rates."""

    encoded: str
    requests: int
    writes: int
    share: float
    minute_reads: int = 0
    minute_reads_at: int = 0
    minute_writes: int = 0
    minute_writes_at: int = 0
    second_reads: int = 0
    second_reads_at: int = 0
    second_writes: int = 0
    second_writes_at: int = 0
    throttles: int = 0
    costs: UnitCosts = UnitCosts()

    def peak_units(self, cfg: HotKeyConfig) -> tuple[float, float]:
        """(peak read units/s, peak write units/s): :meth:`peak_rates` weighted by the table's :class:`UnitCosts`."""
        r, w = self.peak_rates(cfg)
        return r * self.costs.read, w * self.costs.write

    def peak(self, cfg: HotKeyConfig) -> KeyPeak:
        """The key's peak by the one definition ``what-if`` reads too (:func:`auditor.whatif.limits.key_peak`)."""
        return key_peak(
            (self.minute_reads, self.minute_reads_at, self.minute_writes, self.minute_writes_at),
            (self.second_reads, self.second_reads_at, self.second_writes, self.second_writes_at),
            cfg.min_peak_second_requests,
        )

    def peak_rates(self, cfg: HotKeyConfig) -> tuple[float, float]:
        """(peak reads/s, peak writes/s): the busiest minute's average, or the busiest second if it is busier."""
        peak = self.peak(cfg)
        return peak.reads, peak.writes

    def headroom(self, cfg: HotKeyConfig) -> Headroom:
        """The key's headroom (:func:`auditor.models.capacity.reconcile`): the partition limit over its metered peak,
        at most 1.0 when calls on the key were throttled."""
        h = headroom(*self.peak_units(cfg), cfg)
        return reconcile(
            1.0 if h is not None else None,
            1.0 / h if h else None,
            self.throttles,
            item_size_source=self.costs.item_size_source,
        )

    def capacity(self, cfg: HotKeyConfig) -> PartitionCapacity:
        """What one partition delivers to this key: the configured limits, or less where it throttled below them
        (the capacity its shards are sized against, the one :meth:`headroom` is 1.0 at)."""
        ru, wu = self.peak_units(cfg)
        limits = cfg.partition_read_units_per_second, cfg.partition_write_units_per_second
        return PartitionCapacity.of(ru, wu, *limits, self.throttles)


_Peaks = dict[str, tuple[int, int, int, int]]


def _peaks(agg: TableWindow, cfg: HotKeyConfig, space: KeySpace) -> tuple[_Peaks, _Peaks]:
    """(minute peaks, second peaks) of ``space``'s keys: :meth:`TableWindow.minute_peaks` of the keys busy enough in a
    minute to matter, and :meth:`TableWindow.second_peaks`."""
    minute_floor = int(min(cfg.partition_read_units_per_second, cfg.partition_write_units_per_second) * 60 * 0.05)
    holds = space.holds
    minutes = {k: v for k, v in agg.minute_peaks(min_requests=max(1, minute_floor)).items() if holds(k)}
    seconds = {k: v for k, v in agg.second_peaks().items() if holds(k)}
    return minutes, seconds


def _rates(
    agg: TableWindow, space: KeySpace, encoded: str, costs: UnitCosts, minutes: _Peaks, seconds: _Peaks
) -> KeyRates:
    """One key's :class:`KeyRates`: its counts in ``space``, its peaks and the throttles on it."""
    count = space.counts.get(encoded, 0)
    total = space.requests
    rates = KeyRates(encoded, count, min(count, space.write_counts.get(encoded, 0)), count / total if total else 0.0)
    rates.costs = costs
    if encoded in minutes:
        rates.minute_reads, rates.minute_reads_at, rates.minute_writes, rates.minute_writes_at = minutes[encoded]
    else:
        peak = agg.peak_minute(encoded)
        if peak is not None:
            rates.minute_reads, rates.minute_writes = peak[1] - peak[2], peak[2]
            rates.minute_reads_at = rates.minute_writes_at = peak[0]
    if encoded in seconds:
        rates.second_reads, rates.second_reads_at, rates.second_writes, rates.second_writes_at = seconds[encoded]
    rates.throttles = agg.throttle_keys.get(encoded, 0)
    return rates


def value_rates(agg: TableWindow, space: KeySpace, encoded: str, cfg: HotKeyConfig) -> KeyRates:
    """The :class:`KeyRates` of one key of ``space``, measured as :func:`key_rates` measures a hot key (the
    ``low_cardinality_key`` finding rates its busiest value by them: one capacity model, docs/capacity.md)."""
    return _rates(agg, space, encoded, UnitCosts.of(agg, space), *_peaks(agg, cfg, space))


def key_rates(agg: TableWindow, cfg: HotKeyConfig, space: KeySpace | None = None) -> list[KeyRates]:
    """Every key of ``space`` (the table's own by default) that is hot by rate or by share, busiest first (pure:
    reads the aggregate only)."""
    if space is None:
        space = key_spaces(agg)[0]
    total = space.requests
    minutes, seconds = _peaks(agg, cfg, space)
    costs = UnitCosts.of(agg, space)
    read_limit = cfg.partition_read_units_per_second / costs.read  # requests per second at the limit
    write_limit = cfg.partition_write_units_per_second / costs.write
    candidates: set[str] = set()
    for encoded, (r, _, w, _) in minutes.items():
        if r / 60 / read_limit >= cfg.min_utilisation:
            candidates.add(encoded)
        if w / 60 / write_limit >= cfg.min_utilisation:
            candidates.add(encoded)
    for encoded, (r, _, w, _) in seconds.items():
        if r >= cfg.min_peak_second_requests and r / read_limit >= cfg.min_utilisation:
            candidates.add(encoded)
        if w >= cfg.min_peak_second_requests and w / write_limit >= cfg.min_utilisation:
            candidates.add(encoded)
    if total >= cfg.min_key_requests:
        distinct = max(1, space.distinct)
        threshold = max(cfg.min_share, cfg.skew_factor / distinct)
        for encoded, count in space.top(64):
            if count / total < threshold:
                break
            candidates.add(encoded)
    out = [_rates(agg, space, encoded, costs, minutes, seconds) for encoded in candidates]

    def order(k: KeyRates) -> tuple[float, int, str]:
        h = k.headroom(cfg).value
        return (h if h is not None else float("inf"), -k.requests, k.encoded)

    out.sort(key=order)
    return out


def _severity(k: KeyRates, h: float | None, cfg: HotKeyConfig) -> Severity:
    severity = severity_for_headroom(h)
    if h is not None and h >= cfg.huge_headroom and severity.rank > Severity.LOW.rank:
        severity = Severity.LOW
    if k.throttles >= cfg.critical_throttles:
        severity = Severity.CRITICAL
    elif k.throttles >= cfg.high_throttles and severity.rank < Severity.HIGH.rank:
        severity = Severity.HIGH
    return severity


def _stamp(epoch: int) -> str | None:
    return epoch_to_dt(epoch).strftime("%Y-%m-%dT%H:%M:%SZ") if epoch else None


def _key_evidence(k: KeyRates, agg: TableWindow, cfg: HotKeyConfig) -> dict[str, Any]:
    r, w = k.peak_rates(cfg)
    ru, wu = k.peak_units(cfg)
    model = k.headroom(cfg)
    h = model.value
    key = decode_key(k.encoded)
    return {
        "key": key,
        "share": round(k.share, 4),
        "requests": k.requests,
        "reads": k.requests - k.writes,
        "writes": k.writes,
        "reads_per_second": round(per_second(k.requests - k.writes, agg.observed_seconds), 3),
        "writes_per_second": round(per_second(k.writes, agg.observed_seconds), 3),
        "peak_reads_per_second": round(r, 3),
        "peak_writes_per_second": round(w, 3),
        "peak_read_units_per_second": round(ru, 3),
        "peak_write_units_per_second": round(wu, 3),
        "peak_second_reads": k.second_reads,
        "peak_second_reads_at": _stamp(k.second_reads_at),
        "peak_second_writes": k.second_writes,
        "peak_second_writes_at": _stamp(k.second_writes_at),
        "peak_minute_reads": k.minute_reads,
        "peak_minute_writes": k.minute_writes,
        "peak_minute": _stamp(k.minute_writes_at if k.minute_writes >= k.minute_reads else k.minute_reads_at),
        # the period the peak rates were measured over: the same number and label as what-if's (key_peak)
        "peak_window": k.peak(cfg).label,
        **model.evidence(),
        "partition_utilisation": round(1 / h, 4) if h else None,
        "throttled_calls": k.throttles,
    }


def _delivered(k: KeyRates, capacity: PartitionCapacity, w: float, cfg: HotKeyConfig) -> str:
    """What the throttling shows one partition delivered to the key, and the limit it contradicts."""
    return (
        f"the {capacity.write:,.0f} WCU/s its partition delivered at the peak of {w:.0f} writes/s, where "
        f"{k.throttles:,} calls were throttled (at the assumed unit costs: a partition serves up to "
        f"{cfg.partition_write_units_per_second:,.0f} WCU/s, so its items are larger than assumed, other hot keys "
        "share the partition, or the table's capacity was below the peak)"
    )


def _shard_text(shards: int | None, k: KeyRates, capacity: PartitionCapacity, w: float, cfg: HotKeyConfig) -> str:
    """Why this many shards: half a partition each at the peak, the partition's capacity as the evidence left it."""
    if not capacity.observed:
        return f"{shards} shards keep each under half a partition at the peak of {w:.0f} writes/s"
    return f"{shards} shards keep each under half of {_delivered(k, capacity, w, cfg)}"


def _minutes(agg: TableWindow) -> str:
    """The time the shares were measured over: the window, or only its captured minutes (sampled capture)."""
    whole = agg.window_seconds // 60
    if agg.captured_seconds is None or agg.observed_seconds >= agg.window_seconds:
        return f"{whole} minutes"
    return f"the {agg.observed_seconds / 60:g} captured minutes of {whole}"


@register(METADATA, HotKeyConfig)
def detect(agg: TableWindow, cfg: HotKeyConfig) -> list[Finding]:
    """Per partition space (the table's, each index's): one finding per hot key, or one finding listing them all
    when there are more than the per-table limit."""
    return [f for space in key_spaces(agg) for f in _detect_space(agg, space, cfg)]


def _detect_space(agg: TableWindow, space: KeySpace, cfg: HotKeyConfig) -> list[Finding]:
    keys = key_rates(agg, cfg, space)
    if not keys:
        return []
    total = space.requests
    where = space.where(agg.table)
    common = {
        "window_seconds": agg.window_seconds,
        "source": "cloudtrail",
        "key_requests": total,
        "distinct_partition_keys": space.distinct,
        "estimate_error": space.error,
        "assumption": keys[0].costs.assumption(),
        "read_units_per_read": round(keys[0].costs.read, 3),
        "write_units_per_write": keys[0].costs.write,
        "item_size_bytes": keys[0].costs.item_size_bytes,
        # "default": the 1 KB / 4 KB assumption, stated as such (docs/capacity.md)
        "item_size_source": keys[0].costs.item_size_source or "default",
        # where the partition limits come from: DynamoDB's documented 3,000 RCU / 1,000 WCU, or the configuration
        "limit_source": "config" if cfg.model_fields_set & _PARTITION_LIMITS else "default",
    }
    if space.index is not None:
        common["index"] = space.index
    if len(keys) > cfg.max_findings_per_table:
        return [_grouped(agg, keys, cfg, common, space)]
    findings = []
    for k in keys:
        ev = _key_evidence(k, agg, cfg)
        model = k.headroom(cfg)
        h = model.value
        severity = _severity(k, model.assumed, cfg)
        attr, value = next(iter(ev["key"].items()))
        r, w = ev["peak_reads_per_second"], ev["peak_writes_per_second"]
        ru, wu = ev["peak_read_units_per_second"], ev["peak_write_units_per_second"]
        period = bucket_of(value)
        summary = (
            f"{attr}={value!s:.80} on {where} peaked at {r:.0f} reads/s and {w:.0f} writes/s "
            f"(peak: {ev['peak_window']}; busiest second {k.second_reads} reads / {k.second_writes} writes; "
            f"busiest minute {k.minute_reads / 60:.0f} reads/s / {k.minute_writes / 60:.0f} writes/s) against one "
            "partition's "
            f"{cfg.partition_read_units_per_second:,.0f} RCU / {cfg.partition_write_units_per_second:,.0f} WCU"
            + (
                f" ({ru:,.0f} RCU/s and {wu:,.0f} WCU/s at {k.costs.read:g} RCU per read and {k.costs.write:g} WCU "
                "per write)"
                if (k.costs.read, k.costs.write) != (1.0, 1.0)
                else ""
            )
            + model.limit_clause()
            + f" It took {k.share:.0%} of the {total} key-identified requests"
            + (" to the index" if space.index is not None else "")
            + f" in {_minutes(agg)}."
        )
        summary += model.sentence() if model.throttled else headroom_sentence(h)
        if h is not None and h >= cfg.huge_headroom:
            summary += f" Its peak is far below the partition limits (headroom {h:,.0f}x), so it is at most low."
        shards: int | None
        capacity = k.capacity(cfg)
        if period is not None:
            recommendation, shards = shard_advice(
                attr, str(value), period, wu, ru, (round(capacity.read, 6), round(capacity.write, 6))
            )
            if capacity.observed:
                recommendation += f" The shards are sized against {_delivered(k, capacity, w, cfg)}."
        else:
            shards = capacity.shards(0.0, wu, SHARD_TARGET_UTILISATION) if w else None
            recommendation = (
                f"Spread {attr}={value!s:.60}: "
                + (
                    f"write-shard it (suffix the key with a random or calculated shard 0..{(shards or 2) - 1}: "
                    + _shard_text(shards, k, capacity, w, cfg)
                    + "; fan reads out over the shards), "
                    if k.writes or w
                    else ""
                )
                + ("cache the hot reads (DAX or an application cache), " if (k.requests - k.writes) or r else "")
                + ("or pick a higher-cardinality partition key so requests spread over many partitions.")
            )
        evidence = {**ev, **common, "time_bucket": period, "suggested_shards": shards}
        findings.append(
            make_finding(
                METADATA,
                agg,
                severity=severity,
                discriminator=ev["key"],
                title=f"Hot partition key {attr}={value!s:.60} on {where}",
                summary=summary,
                recommendation=recommendation,
                evidence=evidence,
                index=space.index,
            )
        )
    return findings


def _grouped(
    agg: TableWindow, keys: list[KeyRates], cfg: HotKeyConfig, common: dict[str, Any], space: KeySpace
) -> Finding:
    listed = [_key_evidence(k, agg, cfg) for k in keys]
    severities = [_severity(k, k.headroom(cfg).assumed, cfg) for k in keys]
    severity = max(severities, key=lambda s: s.rank)
    first = listed[0]
    attr = next(iter(first["key"]))
    periods = {p for ev in listed if (p := bucket_of(next(iter(ev["key"].values())))) is not None}
    peak_w = max(ev["peak_writes_per_second"] for ev in listed)
    # each key against what its own partition delivered (less than the limit where it throttled below it)
    shards = max(k.capacity(cfg).shards(0.0, k.peak_units(cfg)[1], SHARD_TARGET_UTILISATION) for k in keys)
    observed = [k for k in keys if k.capacity(cfg).observed]
    requests = sum(ev["requests"] for ev in listed)
    return make_finding(
        METADATA,
        agg,
        severity=severity,
        discriminator="many-hot-keys",
        title=f"{len(listed)} hot partition keys on {space.where(agg.table)}",
        summary=(
            f"{len(listed)} partition keys of {space.where(agg.table)} ran close to or past one partition's limit "
            f"({cfg.partition_read_units_per_second:,.0f} RCU / {cfg.partition_write_units_per_second:,.0f} WCU "
            f"per second); the hottest, {attr}={next(iter(first['key'].values()))!s:.60}, peaked at "
            f"{first['peak_writes_per_second']:.0f} writes/s and {first['peak_reads_per_second']:.0f} reads/s. "
            f"Every key is listed in the evidence, with its requests, peaks and throttles."
        ),
        recommendation=(
            (
                f"These keys are {', '.join(sorted(periods))} buckets: write-shard each bucket with a suffix. "
                if periods
                else ""
            )
            + f"Write-shard the hot keys ({shards} shards keep each under half a partition at the peak of "
            f"{peak_w:.0f} writes/s"
            + (
                f"; {len(observed)} of them throttled below the documented partition limit, so their shards are "
                "sized against the capacity their partitions delivered at their peaks"
                if observed
                else ""
            )
            + "), cache hot reads, or pick a higher-cardinality partition key."
        ),
        evidence={
            "key": first["key"],
            "share": round(sum(ev["share"] for ev in listed), 4),
            "requests": requests,
            "keys": listed,
            "hot_keys": len(listed),
            "headroom_factor": first["headroom_factor"],
            "throttled_calls": sum(ev["throttled_calls"] for ev in listed),
            "suggested_shards": shards,
            **common,
        },
        index=space.index,
    )

"""``throttling`` (CloudWatch path): throttle events per table and GSI, by cause, with persistence.

Each throttled minute is attributed to a cause (``key_range``, ``provisioned``, ``account_limit``,
``on_demand_max``, ``gsi_backpressure``, ``unknown``): from DynamoDB's per-cause metrics, else by inference from
capacity; a cause becomes a finding only when its throttles last ``min_throttled_minutes``. The attribution rules
are in docs/detectors.md.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from statistics import median

from auditor.detectors.base import (
    Amount,
    Count,
    DetectorConfig,
    DetectorInput,
    DetectorMetadata,
    Limit,
    MetricsInput,
    Share,
    make_finding,
)
from auditor.detectors.metrics.common import iso, longest_run
from auditor.detectors.registry import register
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.inventory import ON_DEMAND, PROVISIONED, Capacity, TableProfile
from auditor.models.metrics import CAUSE_METRICS, CONSUMED, THROTTLE_EVENTS, ResourceMetrics, TableMetrics
from auditor.models.metrics import PROVISIONED as PROVISIONED_UNITS

__all__ = ["CAUSES", "METADATA", "RECOMMENDATIONS", "CwThrottlingConfig", "detect"]

METADATA = DetectorMetadata(
    id="cw_throttling",
    kind=FindingKind.THROTTLING,
    default_severity=Severity.MEDIUM,
    title="Throttle events by cause (CloudWatch)",
    risk=(
        "Throttled requests are retried by the SDK, adding latency, and fail once retries run out. CloudWatch "
        "counts every throttled event, including those the SDK retried successfully. The cause decides the fix: "
        "a hot partition is not solved by adding capacity."
    ),
    remediation="Fix the cause named in the finding (see the recommendation).",
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-diagnosing-workflow.html",
)

CAUSES = ("key_range", "provisioned", "account_limit", "on_demand_max", "gsi_backpressure", "unknown")

RECOMMENDATIONS = {
    "key_range": (
        "One partition exceeded its limit (3,000 read units / 1,000 write units per second) while the table as a "
        "whole had capacity: adding capacity will not help. Find the hot keys (Contributor Insights in "
        "throttled-keys mode, or the trail's key counts), then spread them (write sharding, a higher-cardinality "
        "partition key), cache hot reads, use eventually consistent reads (half the read units), or pre-warm the "
        "table if the spike is planned."
    ),
    "provisioned": (
        "The table or index used up its provisioned capacity. Raise the auto-scaling maximum and leave headroom "
        "in the target utilisation (auto scaling reacts after two minutes above target), or switch to on-demand if "
        "the traffic is spiky."
    ),
    "account_limit": (
        "The on-demand table or index hit the per-table throughput quota of the account. Request an increase of "
        "'Table-level read/write throughput limit' in Service Quotas, or spread the load over time."
    ),
    "on_demand_max": (
        "The on-demand table or index was throttled at its on-demand limit: its own maximum (OnDemandThroughput), or, "
        "when the traffic more than doubled its previous peak within 30 minutes, the capacity on-demand had scaled to. "
        "If the traffic is legitimate, raise MaxReadRequestUnits / MaxWriteRequestUnits (or set -1 for no maximum; if "
        "it is a cost guard, it works), and pre-warm the table (warm throughput) or ramp up gradually before known "
        "peaks."
    ),
    "gsi_backpressure": (
        "The index could not absorb its share of the writes, so writes to the base table were throttled (an index "
        "write must succeed for the table write to succeed). Give the index at least the table's write capacity "
        "(or auto scaling with the same maximum), and check its partition key for skew: a low-cardinality index key "
        "(a status, a date) throttles the whole table. Project fewer attributes to make index writes cheaper."
    ),
    "unknown": (
        "CloudWatch has no per-cause metric for these throttles and the capacity data cannot tell. On an on-demand "
        "table, traffic that more than doubles its previous peak within 30 minutes can throttle while DynamoDB "
        "scales: ramp up gradually or pre-warm (warm throughput). Check the CloudTrail throttling findings."
    ),
}


class CwThrottlingConfig(DetectorConfig):
    """Persistence and inference thresholds."""

    #: Throttles must span at least this many minutes (and two periods when periods are longer than a minute).
    min_throttled_minutes: Count = 3
    #: High severity from this many throttled minutes, or this many events.
    high_minutes: Count = 30
    high_events: Count = 10_000
    #: Inference: throttled below this share of provisioned capacity means a hot partition.
    low_utilisation: Amount = 0.5
    #: Inference: at or above this share of an on-demand maximum or the account quota means that limit.
    near_limit: Share = 0.9
    #: Default per-table account quotas (read and write request units per second).
    account_table_read_limit: Limit = 40_000.0
    account_table_write_limit: Limit = 40_000.0
    #: What a new on-demand table serves at once (read and write units per second).
    on_demand_initial_read: Limit = 12_000.0
    on_demand_initial_write: Limit = 4_000.0
    #: On-demand tables absorb up to twice their peak of this many previous minutes.
    doubling_window_minutes: Count = 30
    #: Contributor Insights for DynamoDB (us-east-1, the CloudWatch pricing page as third-party summaries read it):
    #: per rule and month, and per million events. Throttled-keys mode has 1 rule (2 with a sort key) per table or
    #: GSI, and counts only throttled requests (x2 with a sort key).
    ci_rule_usd_month: Amount = 0.50
    ci_usd_per_million_events: Amount = 0.03


@dataclass(slots=True)
class _Bucket:
    read: float = 0.0
    write: float = 0.0
    periods: set[int] = field(default_factory=set)
    per_period: Counter[int] = field(default_factory=Counter)
    sources: Counter[str] = field(default_factory=Counter)
    index_causes: Counter[str] = field(default_factory=Counter)
    utilisation: list[float] = field(default_factory=list)

    def add(self, access: str, t: int, n: float, source: str, util: float | None) -> None:
        if access == "read":
            self.read += n
        else:
            self.write += n
        self.periods.add(t)
        self.per_period[t] += round(n)
        self.sources[source] += round(n)
        if util is not None:
            self.utilisation.append(util)


def _peak_rate(res: ResourceMetrics, access: str, t: int, window: int) -> float:
    """The peak rate reached before the last ``window`` seconds: what on-demand capacity had time to adapt to."""
    s = res.get(CONSUMED[access])
    if s is None:
        return 0.0
    return max((v / s.period for ts, v in s.points.items() if ts + s.period <= t - window), default=0.0)


def _infer(
    res: ResourceMetrics,
    access: str,
    t: int,
    capacity: Capacity,
    mode: str,
    cfg: CwThrottlingConfig,
) -> tuple[str, str, float | None]:
    """(cause, how it was decided, utilisation) for throttles no cause metric explains."""
    consumed_name = CONSUMED[access]
    consumed = res.get(consumed_name)
    rate = consumed.rate(t) if consumed is not None else (0.0 if res.known(consumed_name) else None)
    prov_series = res.get(PROVISIONED_UNITS[access])
    prov = prov_series.carried(t) if prov_series is not None else None
    if not prov and mode == PROVISIONED:
        prov = float(capacity.provisioned(access)) or None
    if mode == PROVISIONED or (mode != ON_DEMAND and prov):
        if rate is None or not prov:
            return "unknown", "no_capacity_data", None
        util = rate / prov
        if util < cfg.low_utilisation:
            return "key_range", "inferred_low_utilisation", util
        return "provisioned", "inferred_high_utilisation", util
    if mode != ON_DEMAND or rate is None:
        return "unknown", "no_capacity_data", None
    maximum = capacity.on_demand_max(access)
    if maximum and rate >= cfg.near_limit * maximum:
        return "on_demand_max", "inferred_on_demand_max", None
    quota = cfg.account_table_read_limit if access == "read" else cfg.account_table_write_limit
    if rate >= cfg.near_limit * quota:
        return "account_limit", "inferred_account_limit", None
    initial = cfg.on_demand_initial_read if access == "read" else cfg.on_demand_initial_write
    ceiling = max(initial, 2 * _peak_rate(res, access, t, cfg.doubling_window_minutes * 60))
    if rate >= cfg.near_limit * ceiling:
        return "on_demand_max", "inferred_on_demand_ramp", None
    return "key_range", "inferred_below_on_demand_limits", None


def _throttled_periods(res: ResourceMetrics, access: str) -> list[int]:
    names = [THROTTLE_EVENTS[access], *(CAUSE_METRICS[c][access] for c in CAUSE_METRICS)]
    times: set[int] = set()
    for name in names:
        s = res.get(name)
        if s is not None:
            times.update(s.nonzero())
    return sorted(times)


def _split(res: ResourceMetrics, access: str, t: int) -> tuple[dict[str, float], float]:
    """(events per cause metric, events no cause metric explains) in period ``t``."""
    by_cause = {c: res.value(CAUSE_METRICS[c][access], t) for c in CAUSE_METRICS}
    explained = sum(by_cause.values())
    total = max(res.value(THROTTLE_EVENTS[access], t), explained)
    return {c: n for c, n in by_cause.items() if n > 0}, total - explained


@register(METADATA, CwThrottlingConfig, DetectorInput.TABLE_METRICS)
def detect(data: MetricsInput, cfg: CwThrottlingConfig) -> list[Finding]:
    """Throttling findings of one table and its GSIs (one per resource and cause that persisted)."""
    profile, metrics = data.profile, data.metrics
    mode = profile.billing_mode
    buckets: dict[tuple[str | None, str], _Bucket] = {}

    def bucket(index: str | None, cause: str) -> _Bucket:
        return buckets.setdefault((index, cause), _Bucket())

    # GSIs first: their write throttles are back-pressure on the table, and explain table write throttles.
    gsi_writes: dict[int, Counter[str]] = {}
    gsi_names: list[str] = sorted(i for i in metrics.resources if i is not None)
    for index in gsi_names:
        res = metrics.resources[index]
        capacity = profile.capacity_of(index)
        for access in ("read", "write"):
            for t in _throttled_periods(res, access):
                by_cause, rest = _split(res, access, t)
                items: list[tuple[str, float, str, float | None]] = [
                    (c, n, "cause_metrics", None) for c, n in by_cause.items()
                ]
                if rest > 0:
                    cause, source, util = _infer(res, access, t, capacity, mode, cfg)
                    items.append((cause, rest, source, util))
                for cause, n, source, util in items:
                    if access == "write":
                        b = bucket(index, "gsi_backpressure")
                        b.index_causes[cause] += round(n)
                        b.add(access, t, n, source, util)
                        gsi_writes.setdefault(t, Counter())[index] += round(n)
                    else:
                        bucket(index, cause).add(access, t, n, source, util)

    table = metrics.resources.get(None)
    if table is not None:
        for access in ("read", "write"):
            for t in _throttled_periods(table, access):
                by_cause, rest = _split(table, access, t)
                for cause, n in by_cause.items():
                    bucket(None, cause).add(access, t, n, "cause_metrics", None)
                if rest <= 0:
                    continue
                if access == "write" and t in gsi_writes:
                    culprit = max(sorted(gsi_writes[t]), key=lambda i: gsi_writes[t][i])
                    bucket(culprit, "gsi_backpressure").add(access, t, rest, "gsi_metrics", None)
                    continue
                cause, source, util = _infer(table, access, t, profile.capacity, mode, cfg)
                bucket(None, cause).add(access, t, rest, source, util)

    period = metrics.period
    needed = max(math.ceil(cfg.min_throttled_minutes * 60 / period), 1 if period <= 60 else 2)
    findings: list[Finding] = []
    for (where, what), b in sorted(buckets.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        if len(b.periods) >= needed:
            findings.append(_finding(profile, metrics, where, what, b, cfg))
    return findings


def throttled_keys_price(events: float, seconds: float, *, sort_key: bool, cfg: CwThrottlingConfig) -> dict[str, float]:
    """Monthly price of Contributor Insights in throttled-keys mode on one table or GSI that throttles ``events``
    times in ``seconds`` (the rate held for a 730-hour month): its rules plus the throttled events."""
    rules = 2.0 if sort_key else 1.0
    per_month = events / seconds * 730 * 3600 if seconds > 0 else 0.0
    billed = per_month * (2 if sort_key else 1)
    usd = rules * cfg.ci_rule_usd_month + billed / 1e6 * cfg.ci_usd_per_million_events
    return {"rules": rules, "events_per_month": round(billed), "usd_month": round(usd, 2)}


def _finding(
    profile: TableProfile, metrics: TableMetrics, index: str | None, cause: str, b: _Bucket, cfg: CwThrottlingConfig
) -> Finding:
    period = metrics.period
    times = sorted(b.periods)
    minutes = len(times) * period / 60
    events = b.read + b.write
    severity = Severity.HIGH if minutes >= cfg.high_minutes or events >= cfg.high_events else Severity.MEDIUM
    peak_t, peak_n = max(sorted(b.per_period.items()), key=lambda kv: kv[1])
    run = longest_run(times, period) * period / 60
    mode = profile.billing_mode
    ci = profile.insights_of(index)
    where = f"{profile.name}/{index}" if index else profile.name
    if cause == "gsi_backpressure":
        index_cause = b.index_causes.most_common(1)[0][0] if b.index_causes else "unknown"
        title = f"Writes to {profile.name} throttled by index {index} (GSI back-pressure)"
        why = f"index {index} could not absorb its writes ({index_cause.replace('_', ' ')} on the index)"
    else:
        index_cause = None
        title = f"Throttling on {where} ({cause.replace('_', ' ')})"
        why = f"cause: {cause.replace('_', ' ')}"
    summary = (
        f"{round(events)} throttle events on {where} ({round(b.read)} reads, {round(b.write)} writes) "
        f"in {minutes:g} throttled minute{'' if minutes == 1 else 's'} of the {metrics.seconds / 3600:g} "
        f"hour{'' if metrics.seconds == 3600 else 's'} audited, the longest run "
        f"{run:g} minutes; peak {peak_n} events at {iso(peak_t)}; {why}."
    )
    recommendation = RECOMMENDATIONS[cause]
    ci_price: dict[str, float] | None = None
    if cause == "key_range" and not ci.enabled:
        state = "could not be read" if ci.status == "unknown" else f"is {ci.status.lower()}"
        ci_price = throttled_keys_price(events, metrics.seconds, sort_key=profile.sort_key is not None, cfg=cfg)
        recommendation += (
            f" Contributor Insights {state} on {where}: enable it in throttled-keys mode to name the "
            f"throttled keys continuously, whatever the trail captures (aws dynamodb update-contributor-insights "
            f"--table-name {profile.name}"
            + (f" --index-name {index}" if index else "")
            + " --contributor-insights-action ENABLE --contributor-insights-mode THROTTLED_KEYS). It bills only "
            f"throttled requests: {ci_price['rules']:g} rule{'s' if ci_price['rules'] != 1 else ''} at "
            f"${cfg.ci_rule_usd_month:.2f} a month plus "
            f"${cfg.ci_usd_per_million_events:.2f} per million throttled events; at this window's rate about "
            f"${ci_price['usd_month']:,.2f} a month."
        )
    if cause in ("provisioned", "gsi_backpressure"):
        scaling = profile.capacity_of(index).scaling("write" if cause == "gsi_backpressure" or b.write else "read")
        if scaling is not None:
            recommendation += f" Auto scaling is on ({scaling.min_capacity}..{scaling.max_capacity} units)."
        elif mode == PROVISIONED:
            recommendation += " No auto scaling is configured on this capacity."
    util = round(median(b.utilisation), 3) if b.utilisation and mode != ON_DEMAND else None
    cause_source = b.sources.most_common(1)[0][0] if b.sources else "none"
    evidence = {
        "cause": cause,
        "read_throttle_events": round(b.read),
        "write_throttle_events": round(b.write),
        "source": "cloudwatch",
        "cause_source": cause_source,
        "cause_sources": dict(sorted(b.sources.items())),
        "index_cause": index_cause,
        "index_causes": dict(sorted(b.index_causes.items())) if cause == "gsi_backpressure" else None,
        "throttled_minutes": minutes,
        "throttled_periods": len(times),
        "longest_run_minutes": run,
        "peak_time": iso(peak_t),
        "peak_events": peak_n,
        "period_seconds": period,
        "capacity_mode": mode,
        "median_utilisation_when_throttled": util,
        "contributor_insights": ci.status,
        "contributor_insights_throttled_keys_price": ci_price,
        "window_start": iso(metrics.start),
        "window_end": iso(metrics.end),
        "gaps": profile.gap_lines(),
    }
    return make_finding(
        METADATA,
        profile,
        severity=severity,
        discriminator={"cause": cause, "source": "cloudwatch"},
        index=index,
        title=title,
        summary=summary,
        recommendation=recommendation,
        evidence=evidence,
        first=times[0],
        last=times[-1] + period,
    )

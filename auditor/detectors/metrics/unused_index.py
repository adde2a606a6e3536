"""``unused_index``: a GSI that is written but never read over the audited window.

Every write to a table also writes each GSI whose keys the item carries, and the GSI pays for it (its own
write capacity, or write request units on demand) and for its storage. A GSI with writes and no reads
(``ConsumedReadCapacityUnits`` of the ``TableName`` + ``GlobalSecondaryIndexName`` series sums to 0 while
``ConsumedWriteCapacityUnits`` does not) costs money for nothing, unless something reads it less often than the
window (a monthly report). The finding is for review, with the monthly cost; the auditor never deletes anything.

Prices are us-east-1 list prices (override them in the config for other Regions).
"""

from __future__ import annotations

from auditor.detectors.base import Amount, DetectorInput, DetectorMetadata, MetricsInput, make_finding
from auditor.detectors.metrics.common import CapacityPrices, iso
from auditor.detectors.registry import register
from auditor.models.billing import HOURS_PER_MONTH
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.inventory import ON_DEMAND, IndexProfile, TableProfile
from auditor.models.metrics import CONSUMED, PROVISIONED, ResourceMetrics, TableMetrics

METADATA = DetectorMetadata(
    id="unused_index",
    kind=FindingKind.UNUSED_INDEX,
    default_severity=Severity.LOW,
    title="Global secondary index written but never read",
    risk=(
        "Every table write that touches the index's keys is also written to the index and paid for again "
        "(write capacity and storage). An index no query uses is pure cost, and its write capacity can throttle "
        "the table (GSI back-pressure)."
    ),
    remediation=(
        "Confirm no access pattern needs the index (including monthly or quarterly jobs the window may not "
        "cover), then delete it; or keep it and project fewer attributes to make its writes cheaper."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-indexes-general.html",
)


class UnusedIndexConfig(CapacityPrices):
    """When an index counts as unused, and the prices its cost is computed with."""

    #: The window must cover at least this many days.
    min_days: Amount = 1.0
    #: Ignore indexes with fewer write units than this in the window.
    min_write_units: Amount = 1.0
    #: Medium severity from this monthly cost (USD), when the window covers ``confident_days``.
    medium_monthly_cost: Amount = 25.0
    confident_days: Amount = 7.0
    on_demand_write_unit_price: Amount = 0.625e-6
    on_demand_write_unit_price_ia: Amount = 0.78e-6


def _average_provisioned(res: ResourceMetrics, access: str, fallback: int) -> float:
    s = res.get(PROVISIONED[access])
    if s is not None and s.points:
        return s.total() / len(s.points)
    return float(fallback)


@register(METADATA, UnusedIndexConfig, DetectorInput.TABLE_METRICS)
def detect(data: MetricsInput, cfg: UnusedIndexConfig) -> list[Finding]:
    """One finding per GSI with writes and no reads over the window."""
    profile, metrics = data.profile, data.metrics
    if metrics.days < cfg.min_days:
        return []
    findings: list[Finding] = []
    for gsi in profile.gsis:
        res = metrics.resources.get(gsi.name)
        if res is None or not (res.known(CONSUMED["read"]) and res.known(CONSUMED["write"])):
            continue  # reads unknown: never call an index unused on missing data
        reads = res.total(CONSUMED["read"])
        writes = res.total(CONSUMED["write"])
        if reads > 0 or writes < cfg.min_write_units:
            continue
        findings.append(_finding(profile, gsi, res, metrics, writes, cfg))
    return findings


def _finding(
    profile: TableProfile,
    gsi: IndexProfile,
    res: ResourceMetrics,
    metrics: TableMetrics,
    writes: float,
    cfg: UnusedIndexConfig,
) -> Finding:
    ia = profile.table_class == "STANDARD_INFREQUENT_ACCESS"
    days = metrics.days
    writes_per_day = writes / days
    on_demand = profile.billing_mode == ON_DEMAND
    if on_demand:
        price = cfg.on_demand_write_unit_price_ia if ia else cfg.on_demand_write_unit_price
        write_cost = writes_per_day * HOURS_PER_MONTH / 24 * price
        read_cost = 0.0
    else:
        wcu = _average_provisioned(res, "write", gsi.capacity.provisioned_write)
        rcu = _average_provisioned(res, "read", gsi.capacity.provisioned_read)
        write_cost = wcu * HOURS_PER_MONTH * cfg.wcu_hour(ia)
        read_cost = rcu * HOURS_PER_MONTH * cfg.rcu_hour(ia)
    storage_cost = cfg.storage_month(gsi.size_bytes, ia) if gsi.size_bytes else 0.0
    total = write_cost + read_cost + storage_cost
    severity = (
        Severity.MEDIUM
        if total >= cfg.medium_monthly_cost and days >= cfg.confident_days
        else METADATA.default_severity
    )
    writes_series = res.get(CONSUMED["write"])
    active = writes_series.nonzero() if writes_series is not None else []
    cost_text = f"about ${total:,.2f} a month" + (
        f" (${write_cost:,.2f} writes, ${read_cost:,.2f} idle read capacity, ${storage_cost:,.2f} storage)"
        if read_cost or storage_cost
        else ""
    )
    summary = (
        f"Index {gsi.name} of {profile.name} consumed {writes:,.0f} write units and no read units in {days:.1f} days "
        f"({writes_per_day:,.0f} write units a day); it costs {cost_text}."
    )
    recommendation = (
        f"Review {gsi.name}: if no query needs it (check the access patterns, and jobs that run less often than the "
        f"{days:.1f} days audited), delete it (aws dynamodb update-table --table-name {profile.name} "
        f'--global-secondary-index-updates \'[{{"Delete": {{"IndexName": "{gsi.name}"}}}}]\'). If something does '
        f"read it rarely, project fewer attributes (projection now: {gsi.projection or 'unknown'}) to cut its write "
        "cost. The auditor never deletes an index."
    )
    return make_finding(
        METADATA,
        profile,
        severity=severity,
        discriminator={"source": "cloudwatch"},
        index=gsi.name,
        title=f"Index {gsi.name} on {profile.name} is written but never read",
        summary=summary,
        recommendation=recommendation,
        evidence={
            "days_analyzed": round(days, 2),
            "reads": 0,
            "writes": round(writes),
            "write_units_per_day": round(writes_per_day, 1),
            "capacity_mode": profile.billing_mode,
            "table_class": profile.table_class,
            "monthly_write_cost": round(write_cost, 2),
            "monthly_read_capacity_cost": round(read_cost, 2),
            "monthly_storage_cost": round(storage_cost, 2),
            "monthly_cost": round(total, 2),
            "projection": gsi.projection,
            "index_partition_key": gsi.partition_key,
            "index_size_bytes": gsi.size_bytes,
            "action": "review",
            "source": "cloudwatch",
            "window_start": iso(metrics.start),
            "window_end": iso(metrics.end),
        },
        first=active[0] if active else metrics.start,
        last=(active[-1] + metrics.period) if active else metrics.end,
    )

"""``idle_table``: a table with no reads and no writes for a whole period (default 30 days) that still costs money.

An idle table still pays for its provisioned capacity (table and GSIs, every hour) and its storage (table and GSIs,
every GB-month). The input is the metrics audit's daily activity read
(:func:`auditor.sources.cloudwatch.read_activity`): daily ``Sum`` of ``ConsumedReadCapacityUnits`` and
``ConsumedWriteCapacityUnits`` of the table and each GSI. Idle means every one of those series was read and sums
to 0, and the table existed before the period began (a table created last week has not been idle for 30 days).
The finding is for review; the auditor never changes a table.

Prices are us-east-1 list prices (override them in the config for other Regions).
"""

from __future__ import annotations

from auditor.detectors.base import Amount, DetectorInput, DetectorMetadata, MetricsInput, make_finding
from auditor.detectors.metrics.common import GIB, CapacityPrices, created_epoch, iso
from auditor.detectors.registry import register
from auditor.models.billing import HOURS_PER_MONTH
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.inventory import PROVISIONED
from auditor.models.metrics import CONSUMED

METADATA = DetectorMetadata(
    id="idle_table",
    kind=FindingKind.IDLE_TABLE,
    default_severity=Severity.LOW,
    title="Table without traffic that still costs money",
    risk=(
        "A table nothing reads or writes still pays for its provisioned read and write capacity (and that of its "
        "GSIs) every hour, and for its storage every month. Forgotten tables of old features, migrations and "
        "tests add up."
    ),
    remediation=(
        "Confirm with the owner that nothing uses it (including jobs that run less often than the period). Then "
        "switch it to on-demand (no traffic, no throughput cost), or export it to S3 and delete it, or take an "
        "on-demand backup and delete it."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CostOptimization_UnusedResources.html",
)


class IdleTableConfig(CapacityPrices):
    """How long a table must be idle, the smallest cost worth a finding, and the prices."""

    #: The period without reads and writes (days); the activity read must cover it.
    idle_days: Amount = 30.0
    #: No finding below this monthly cost (USD).
    min_monthly_cost: Amount = 1.0
    #: Medium severity from this monthly cost (USD).
    medium_monthly_cost: Amount = 25.0


@register(METADATA, IdleTableConfig, DetectorInput.TABLE_ACTIVITY)
def detect(data: MetricsInput, cfg: IdleTableConfig) -> list[Finding]:
    """One finding when the table and its GSIs had no consumed capacity over the whole activity window."""
    profile, activity = data.profile, data.metrics
    created = created_epoch(profile)
    if activity.days < cfg.idle_days or created is None or created > activity.start:
        return []
    resources = [None, *(g.name for g in profile.gsis)]
    for index in resources:
        res = activity.resources.get(index)
        if res is None or not all(res.known(CONSUMED[a]) for a in ("read", "write")):
            return []  # unknown is not idle
        if res.total(CONSUMED["read"]) > 0 or res.total(CONSUMED["write"]) > 0:
            return []
    ia = profile.table_class == "STANDARD_INFREQUENT_ACCESS"
    rcu = wcu = 0
    if profile.billing_mode == PROVISIONED:
        for index in resources:
            cap = profile.capacity_of(index)
            rcu += cap.provisioned_read
            wcu += cap.provisioned_write
    capacity_cost = HOURS_PER_MONTH * (rcu * cfg.rcu_hour(ia) + wcu * cfg.wcu_hour(ia))
    size = (profile.size_bytes or 0) + sum(g.size_bytes or 0 for g in profile.gsis)
    storage_cost = cfg.storage_month(size, ia)
    total = capacity_cost + storage_cost
    if total < cfg.min_monthly_cost:
        return []
    days = activity.days
    name = profile.name
    parts = []
    if capacity_cost:
        parts.append(f"${capacity_cost:,.2f} for {rcu:,} provisioned RCU and {wcu:,} WCU (table and GSIs)")
    if storage_cost:
        parts.append(f"${storage_cost:,.2f} for {size / GIB:,.2f} GiB of storage")
    options = []
    if profile.billing_mode == PROVISIONED:
        options.append(
            f"switch to on-demand, which costs nothing without traffic: aws dynamodb update-table --table-name {name} "
            "--billing-mode PAY_PER_REQUEST"
        )
    options.append(
        f"archive it: export to S3 (aws dynamodb export-table-to-point-in-time --table-arn {profile.arn or name} "
        "--s3-bucket BUCKET; needs point-in-time recovery), then delete the table"
    )
    options.append(
        f"delete it after an on-demand backup (aws dynamodb create-backup --table-name {name} --backup-name "
        f"{name}-final, then aws dynamodb delete-table --table-name {name}); backup storage is billed per GB-month"
    )
    return [
        make_finding(
            METADATA,
            profile,
            severity=Severity.MEDIUM if total >= cfg.medium_monthly_cost else METADATA.default_severity,
            discriminator={"source": "cloudwatch_activity"},
            title=f"{name} had no reads or writes in {days:.0f} days and costs ${total:,.2f} a month",
            summary=(
                f"No read or write units were consumed on {name}"
                + (f" or its {len(profile.gsis)} GSIs" if profile.gsis else "")
                + f" from {iso(activity.start)[:10]} to {iso(activity.end)[:10]} ({days:.0f} days), yet it costs about "
                f"${total:,.2f} a month: " + " and ".join(parts) + "."
            ),
            recommendation=(
                f"Confirm with the owner that nothing uses {name} (jobs that run less often than every {days:.0f} "
                "days, disaster-recovery copies). Then choose: " + "; or ".join(options) + ". The auditor never "
                "changes a table."
            ),
            evidence={
                "days_idle": round(days, 2),
                "reads": 0,
                "writes": 0,
                "monthly_cost": round(total, 2),
                "monthly_capacity_cost": round(capacity_cost, 2),
                "monthly_storage_cost": round(storage_cost, 2),
                "billing_mode": profile.billing_mode,
                "table_class": profile.table_class,
                "provisioned_read": rcu,
                "provisioned_write": wcu,
                "global_secondary_indexes": [g.name for g in profile.gsis],
                "size_bytes": size,
                "item_count": profile.item_count,
                "created": profile.created,
                "options": ["on_demand", "export_to_s3_and_delete", "backup_and_delete"]
                if profile.billing_mode == PROVISIONED
                else ["export_to_s3_and_delete", "backup_and_delete"],
                "action": "review",
                "source": "cloudwatch_activity",
                "window_start": iso(activity.start),
                "window_end": iso(activity.end),
            },
            first=activity.start,
            last=activity.end,
        )
    ]

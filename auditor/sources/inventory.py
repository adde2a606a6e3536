"""The table inventory: ListTables, DescribeTable, tags, TTL, Application Auto Scaling and Contributor Insights.

Read-only. Tables are selected by name, prefix or tag. An error on one call (AccessDenied, a table deleted between
ListTables and DescribeTable, an API the endpoint does not implement) becomes a :class:`~auditor.models.inventory.Gap`
on the table or the inventory, and the audit goes on: the facet it would have given is ``unknown``.

Calls per run: ``ceil(tables/100)`` ListTables pages (none when tables are named), then per table one
DescribeTable, one ListTagsOfResource and one DescribeTimeToLive; DescribeScalableTargets for provisioned tables
and their GSIs in chunks of 50 ids; DescribeScalingPolicies per scaled resource (or one account-wide sweep when many
are scaled); one account-wide ListContributorInsights sweep, then DescribeContributorInsights only for the tables
and GSIs where it is enabled (rule names); four GetServiceQuota calls (:mod:`auditor.sources.quotas`) with a client.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import structlog
from botocore.exceptions import ClientError

from auditor.exceptions import InputError
from auditor.models.inventory import (
    CI_DISABLED,
    ON_DEMAND,
    PROVISIONED,
    BillingMode,
    Capacity,
    ContributorInsights,
    Gap,
    IndexProfile,
    Inventory,
    ScalingTarget,
    TableProfile,
    ThroughputQuotas,
)
from auditor.models.metrics import ApiStats
from auditor.sources.aws_calls import NOT_FOUND, counted_call, error_code, gap_from
from auditor.sources.quotas import QuotaClient, read_throughput_quotas

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_dynamodb import DynamoDBClient

log = structlog.get_logger(__name__)

__all__ = ["TableSelector", "collect_inventory", "parse_tag"]

_ARN = re.compile(r"^arn:[^:]+:dynamodb:(?P<region>[^:]*):(?P<account>\d*):table/")
#: Above this many scaled resources, one account-wide DescribeScalingPolicies sweep is cheaper than one per resource.
_POLICY_SWEEP_THRESHOLD = 20


@dataclass(frozen=True, slots=True)
class TableSelector:
    """Which tables to audit: by exact names, a name prefix and/or one tag (all given criteria must match)."""

    names: tuple[str, ...] = ()
    prefix: str | None = None
    tag: tuple[str, str] | None = None

    def name_matches(self, name: str) -> bool:
        return (not self.names or name in self.names) and (self.prefix is None or name.startswith(self.prefix))

    def tags_match(self, tags: dict[str, str] | None) -> bool:
        if self.tag is None:
            return True
        return tags is not None and tags.get(self.tag[0]) == self.tag[1]

    def describe(self) -> str:
        parts = []
        if self.names:
            parts.append("tables " + ",".join(self.names))
        if self.prefix:
            parts.append(f"prefix {self.prefix!r}")
        if self.tag:
            parts.append(f"tag {self.tag[0]}={self.tag[1]}")
        return " and ".join(parts) or "all tables"


def parse_tag(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as a pair (an input error otherwise)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise InputError(f"--tag must be KEY=VALUE, got {text!r}")
    return key, value


@dataclass(slots=True)
class _TableResult:
    profile: TableProfile | None = None
    gaps: list[Gap] = field(default_factory=list)
    missing: bool = False
    stats: ApiStats = field(default_factory=ApiStats)


def collect_inventory(
    dynamodb: DynamoDBClient,
    autoscaling: ApplicationAutoScalingClient | None,
    selector: TableSelector,
    *,
    stats: ApiStats,
    max_workers: int = 8,
    quotas: QuotaClient | None = None,
) -> Inventory:
    """Profile the selected tables, and read the account's throughput quotas with ``quotas`` (Service Quotas; the
    documented defaults without it). Never raises for a failed AWS call: failures are gaps."""
    account_gaps: list[Gap] = []
    throughput = ThroughputQuotas()
    if selector.names:
        names = sorted(n for n in set(selector.names) if selector.name_matches(n))
    else:
        try:
            names = sorted(n for n in set(_list_tables(dynamodb, stats)) if selector.name_matches(n))
        except ClientError as exc:
            gap = gap_from(exc, "dynamodb:ListTables", "tables")
            log.info("inventory_gap", gap=gap.describe())
            return Inventory(gaps=(gap,))

    results = _map(lambda n: _profile_table(dynamodb, n, selector), names, max_workers)
    profiles: list[TableProfile] = []
    missing: list[str] = []
    for name, res in zip(names, results, strict=True):
        stats.merge(res.stats)
        if res.missing:
            missing.append(name)
            account_gaps.extend(res.gaps)
        elif res.profile is None:
            account_gaps.extend(res.gaps)  # not selected (tags unreadable): the reason stays visible
        else:
            profiles.append(res.profile)

    if autoscaling is not None:
        profiles = _add_auto_scaling(autoscaling, profiles, stats, account_gaps)
    if quotas is not None and profiles:
        throughput = read_throughput_quotas(quotas, stats, account_gaps)
    profiles = _add_contributor_insights(dynamodb, profiles, stats, account_gaps)
    for gap in account_gaps:
        log.info("inventory_gap", gap=gap.describe())
    for p in profiles:
        for gap in p.gaps:
            log.info("inventory_gap", gap=gap.describe())
    log.info("inventory_collected", tables=len(profiles), missing=len(missing), selector=selector.describe())
    return Inventory(tables=tuple(profiles), gaps=tuple(account_gaps), missing=tuple(missing), quotas=throughput)


def _map(fn: Any, items: Sequence[str], max_workers: int) -> list[_TableResult]:
    if max_workers <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(max_workers, len(items))) as pool:
        return list(pool.map(fn, items))


def _list_tables(dynamodb: DynamoDBClient, stats: ApiStats) -> list[str]:
    names: list[str] = []
    kwargs: dict[str, Any] = {"Limit": 100}
    while True:
        page = counted_call(stats, "dynamodb:ListTables", dynamodb.list_tables, **kwargs)
        names.extend(page.get("TableNames", []))
        last = page.get("LastEvaluatedTableName")
        if not last:
            return names
        kwargs["ExclusiveStartTableName"] = last


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None


def _keys(schema: Iterable[Any]) -> tuple[str | None, str | None]:
    pk = sk = None
    for k in schema or ():
        if k.get("KeyType") == "HASH":
            pk = k.get("AttributeName")
        elif k.get("KeyType") == "RANGE":
            sk = k.get("AttributeName")
    return pk, sk


def _capacity(desc: dict[str, Any], on_demand: bool) -> Capacity:
    pt = desc.get("ProvisionedThroughput") or {}
    od = desc.get("OnDemandThroughput") or {}
    warm = desc.get("WarmThroughput") or {}
    return Capacity(
        provisioned_read=0 if on_demand else int(pt.get("ReadCapacityUnits") or 0),
        provisioned_write=0 if on_demand else int(pt.get("WriteCapacityUnits") or 0),
        on_demand_max_read=_int(od.get("MaxReadRequestUnits")),
        on_demand_max_write=_int(od.get("MaxWriteRequestUnits")),
        warm_read=_int(warm.get("ReadUnitsPerSecond")),
        warm_write=_int(warm.get("WriteUnitsPerSecond")),
    )


def _index(desc: dict[str, Any], kind: Literal["GSI", "LSI"], on_demand: bool) -> IndexProfile:
    """One secondary index of a DescribeTable structure (an LSI has no status or capacity of its own)."""
    ipk, isk = _keys(desc.get("KeySchema", []))
    gsi = kind == "GSI"
    return IndexProfile(
        name=desc["IndexName"],
        type=kind,
        partition_key=ipk,
        sort_key=isk,
        projection=(desc.get("Projection") or {}).get("ProjectionType"),
        status=desc.get("IndexStatus") if gsi else None,
        size_bytes=_int(desc.get("IndexSizeBytes")),
        item_count=_int(desc.get("ItemCount")),
        capacity=_capacity(desc, on_demand) if gsi else Capacity(),
    )


def profile_from_description(table: dict[str, Any]) -> TableProfile:
    """A :class:`TableProfile` from a DescribeTable ``Table`` structure (no tags, TTL, scaling or CI yet)."""
    arn = table.get("TableArn")
    m = _ARN.match(arn or "")
    mode: BillingMode = (table.get("BillingModeSummary") or {}).get("BillingMode") or PROVISIONED  # old tables
    on_demand = mode == ON_DEMAND
    pk, sk = _keys(table.get("KeySchema", []))
    indexes = [_index(gsi, "GSI", on_demand) for gsi in table.get("GlobalSecondaryIndexes") or []]
    indexes += [_index(lsi, "LSI", on_demand) for lsi in table.get("LocalSecondaryIndexes") or []]
    stream = table.get("StreamSpecification") or {}
    created = table.get("CreationDateTime")
    return TableProfile(
        name=table["TableName"],
        account=(m.group("account") or None) if m else None,
        region=(m.group("region") or None) if m else None,
        arn=arn,
        status=table.get("TableStatus"),
        billing_mode=mode,
        table_class=(table.get("TableClassSummary") or {}).get("TableClass") or "STANDARD",
        partition_key=pk,
        sort_key=sk,
        size_bytes=_int(table.get("TableSizeBytes")),
        item_count=_int(table.get("ItemCount")),
        created=created.isoformat() if isinstance(created, datetime) else None,
        capacity=_capacity(table, on_demand),
        indexes=tuple(indexes),
        stream_view_type=stream.get("StreamViewType") if stream.get("StreamEnabled") else None,
    )


def _profile_table(dynamodb: DynamoDBClient, name: str, selector: TableSelector) -> _TableResult:
    res = _TableResult()
    try:
        desc = counted_call(res.stats, "dynamodb:DescribeTable", dynamodb.describe_table, TableName=name)
    except ClientError as exc:
        res.gaps.append(gap_from(exc, "dynamodb:DescribeTable", "table", name))
        if error_code(exc) in NOT_FOUND:
            res.missing = True  # deleted since ListTables, or a name that does not exist
            return res
        if selector.tag is not None:
            return res  # tags cannot be read without the table's ARN: not selected
        res.profile = TableProfile(name=name, gaps=tuple(res.gaps))
        return res
    profile = profile_from_description(dict(desc["Table"]))
    gaps: list[Gap] = []

    tags: dict[str, str] | None = None
    try:
        tags = _tags(dynamodb, profile.arn or "", res.stats)
    except ClientError as exc:
        gaps.append(gap_from(exc, "dynamodb:ListTagsOfResource", "tags", name))
    if not selector.tags_match(tags):
        if tags is None:
            res.gaps.extend(gaps)  # unreadable tags: say why the table is not in the audit
        return res

    ttl_status = ttl_attr = None
    try:
        ttl = counted_call(res.stats, "dynamodb:DescribeTimeToLive", dynamodb.describe_time_to_live, TableName=name)
        ttl_desc = ttl.get("TimeToLiveDescription") or {}
        ttl_status, ttl_attr = ttl_desc.get("TimeToLiveStatus"), ttl_desc.get("AttributeName")
    except ClientError as exc:
        gaps.append(gap_from(exc, "dynamodb:DescribeTimeToLive", "ttl", name))
    res.profile = profile.model_copy(
        update={"tags": tags, "ttl_status": ttl_status, "ttl_attribute": ttl_attr, "gaps": tuple(gaps)}
    )
    return res


def _tags(dynamodb: DynamoDBClient, arn: str, stats: ApiStats) -> dict[str, str]:
    tags: dict[str, str] = {}
    kwargs: dict[str, Any] = {"ResourceArn": arn}
    while True:
        page = counted_call(stats, "dynamodb:ListTagsOfResource", dynamodb.list_tags_of_resource, **kwargs)
        tags.update({t["Key"]: t["Value"] for t in page.get("Tags", [])})
        token = page.get("NextToken")
        if not token:
            return tags
        kwargs["NextToken"] = token


def _resource_id(table: str, index: str | None) -> str:
    return f"table/{table}" + (f"/index/{index}" if index else "")


def _add_auto_scaling(
    aas: ApplicationAutoScalingClient, profiles: list[TableProfile], stats: ApiStats, gaps: list[Gap]
) -> list[TableProfile]:
    ids = [
        _resource_id(p.name, idx)
        for p in profiles
        if p.billing_mode == PROVISIONED
        for idx in (None, *(g.name for g in p.gsis))
    ]
    if not ids:
        return profiles
    targets: dict[tuple[str, str], dict[str, Any]] = {}
    policies: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    try:
        for start in range(0, len(ids), 50):
            kwargs: dict[str, Any] = {"ServiceNamespace": "dynamodb", "ResourceIds": ids[start : start + 50]}
            while True:
                page = counted_call(
                    stats, "application-autoscaling:DescribeScalableTargets", aas.describe_scalable_targets, **kwargs
                )
                for t in page.get("ScalableTargets", []):
                    targets[(t["ResourceId"], t["ScalableDimension"])] = dict(t)
                if not page.get("NextToken"):
                    break
                kwargs["NextToken"] = page["NextToken"]
        scaled = sorted({rid for rid, _ in targets})
        sweeps: list[dict[str, Any]] = (
            [{"ServiceNamespace": "dynamodb"}]
            if len(scaled) > _POLICY_SWEEP_THRESHOLD
            else [{"ServiceNamespace": "dynamodb", "ResourceId": rid} for rid in scaled]
        )
        for kwargs in sweeps:
            while True:
                page2 = counted_call(
                    stats, "application-autoscaling:DescribeScalingPolicies", aas.describe_scaling_policies, **kwargs
                )
                for pol in page2.get("ScalingPolicies", []):
                    by_name = policies.setdefault((pol["ResourceId"], pol["ScalableDimension"]), {})
                    by_name[pol["PolicyName"]] = dict(pol)  # a sweep may list a policy twice: count it once
                if not page2.get("NextToken"):
                    break
                kwargs = {**kwargs, "NextToken": page2["NextToken"]}
    except ClientError as exc:
        gaps.append(gap_from(exc, "application-autoscaling:DescribeScalableTargets", "auto_scaling"))
        return profiles

    def scaling_for(table: str, index: str | None) -> tuple[ScalingTarget, ...]:
        rid = _resource_id(table, index)
        kind = "index" if index else "table"
        out = []
        for access, dim in (("read", "ReadCapacityUnits"), ("write", "WriteCapacityUnits")):
            dimension = f"dynamodb:{kind}:{dim}"
            t = targets.get((rid, dimension))
            if t is None:
                continue
            pols = sorted(policies.get((rid, dimension), {}).values(), key=lambda p: str(p["PolicyName"]))
            target_values = [
                float(p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"])
                for p in pols
                if p.get("TargetTrackingScalingPolicyConfiguration")
            ]
            out.append(
                ScalingTarget(
                    access="read" if access == "read" else "write",
                    min_capacity=int(t.get("MinCapacity", 0)),
                    max_capacity=int(t.get("MaxCapacity", 0)),
                    target_utilization=target_values[0] if target_values else None,
                    policy_names=tuple(p["PolicyName"] for p in pols),
                )
            )
        return tuple(out)

    updated = []
    for p in profiles:
        cap = p.capacity.model_copy(update={"auto_scaling": scaling_for(p.name, None)})
        idx = tuple(
            i.model_copy(
                update={"capacity": i.capacity.model_copy(update={"auto_scaling": scaling_for(p.name, i.name)})}
            )
            if i.type == "GSI"
            else i
            for i in p.indexes
        )
        updated.append(p.model_copy(update={"capacity": cap, "indexes": idx}))
    return updated


def _add_contributor_insights(
    dynamodb: DynamoDBClient, profiles: list[TableProfile], stats: ApiStats, gaps: list[Gap]
) -> list[TableProfile]:
    if not profiles:
        return profiles
    summaries: dict[tuple[str, str | None], dict[str, Any]] = {}
    try:
        kwargs: dict[str, Any] = {"MaxResults": 100}
        while True:
            page = counted_call(stats, "dynamodb:ListContributorInsights", dynamodb.list_contributor_insights, **kwargs)
            for s in page.get("ContributorInsightsSummaries", []):
                summaries[(s.get("TableName", ""), s.get("IndexName"))] = dict(s)
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
    except ClientError as exc:
        gaps.append(gap_from(exc, "dynamodb:ListContributorInsights", "contributor_insights"))
        return profiles  # every table keeps the "unknown" status

    def describe(table: str, index: str | None, table_gaps: list[Gap]) -> ContributorInsights:
        summary = summaries.get((table, index))
        if summary is None or summary.get("ContributorInsightsStatus") in (None, "DISABLED"):
            return CI_DISABLED
        status = str(summary["ContributorInsightsStatus"])
        mode = summary.get("ContributorInsightsMode")
        if status != "ENABLED":
            return ContributorInsights(status=status, mode=mode)
        kwargs: dict[str, Any] = {"TableName": table} | ({"IndexName": index} if index else {})
        try:
            d = counted_call(
                stats, "dynamodb:DescribeContributorInsights", dynamodb.describe_contributor_insights, **kwargs
            )
        except ClientError as exc:
            table_gaps.append(
                gap_from(exc, "dynamodb:DescribeContributorInsights", "contributor_insights", table, index)
            )
            return ContributorInsights(status=status, mode=mode)
        return ContributorInsights(
            status=str(d.get("ContributorInsightsStatus") or status),
            mode=d.get("ContributorInsightsMode") or mode,
            rule_names=tuple(d.get("ContributorInsightsRuleList") or ()),
        )

    updated = []
    for p in profiles:
        if p.arn is None:  # DescribeTable failed: its indexes are unknown too
            updated.append(p)
            continue
        table_gaps = list(p.gaps)
        ci = describe(p.name, None, table_gaps)
        idx = tuple(
            i.model_copy(update={"contributor_insights": describe(p.name, i.name, table_gaps)})
            if i.type == "GSI"
            else i
            for i in p.indexes
        )
        updated.append(p.model_copy(update={"contributor_insights": ci, "indexes": idx, "gaps": tuple(table_gaps)}))
    return updated


#: A table as (account, region, name): the key the evaluator's windows and these descriptions share.
TableRef = tuple[str | None, str | None, str]


def describe_tables(
    ddb: DynamoDBClient, tables: Iterable[TableRef], *, account: str | None, region: str
) -> dict[TableRef, TableProfile]:
    """One DescribeTable per distinct table of ``account`` and ``region`` (the caller's own), for the key schema
    the PartiQL full-scan decision needs (``dynamodb:DescribeTable`` on this region's tables, metadata only).

    Tables of other accounts or regions (an organisation trail) cannot be described with this client and are left
    out, as is a table whose call fails (deleted, access denied, throttled): their key schema then comes from
    ``key_schema`` in the analysis config or from the key names the trail logs. A window with no account is taken
    as the caller's. At most one call per distinct table in ``tables``.
    """
    out: dict[TableRef, TableProfile] = {}
    for ref in sorted(set(tables), key=lambda r: (r[0] or "", r[1] or "", r[2])):
        ref_account, ref_region, name = ref
        if (ref_account not in (None, account)) or (ref_region not in (None, region)):
            continue
        try:
            out[ref] = profile_from_description(dict(ddb.describe_table(TableName=name)["Table"]))
        except ClientError as exc:
            log.warning("describe_table_failed", table=name, error=exc.response.get("Error", {}).get("Code"))
        except (KeyError, TypeError, ValueError) as exc:  # a description without the fields the profile needs
            log.warning("describe_table_unreadable", table=name, error=type(exc).__name__)
    return out

"""Peak consumed capacity and capacity settings of tables and GSIs: written by ``ddb-audit audit``, read by what-if.

The audit's JSON output carries, per table, a ``capacity`` list: one entry for the table (``index`` null) and one
per GSI, each with the peak consumed read and write units per second in the audited window (the largest
``Consumed*CapacityUnits`` period ``Sum`` divided by the period) and the capacity settings that bound it
(:meth:`~auditor.whatif.limits.ResourceCapacity.to_dict`). ``ddb-audit what-if --audit FILE`` reads it back.
"""

from __future__ import annotations

from typing import Any

from auditor.exceptions import InputError
from auditor.models.inventory import Capacity, TableProfile, ThroughputQuotas
from auditor.models.metrics import CONSUMED, SCAN_REQUESTS, WRITE_OPERATIONS, TableMetrics
from auditor.whatif.limits import ResourceCapacity

__all__ = ["capacity_from_audit", "cloudwatch_item_size", "profiles_from_audit", "resource_capacities"]


def _iso(epoch: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _peak(tm: TableMetrics, index: str | None, access: str) -> tuple[float, str | None]:
    res = tm.resources.get(index)
    series = res.get(CONSUMED[access]) if res is not None else None
    if series is None or not series.points:
        return 0.0, None
    t, value = max(series.points.items(), key=lambda kv: (kv[1], -kv[0]))
    if value <= 0:
        return 0.0, None
    return value / series.period, _iso(t)


def cloudwatch_item_size(tm: TableMetrics) -> int | None:
    """The table's item size from CloudWatch: its ``ConsumedWriteCapacityUnits`` over its item writes (the
    ``SuccessfulRequestLatency`` SampleCount of the write operations, a batch or transaction counted at its most
    items, :data:`~auditor.models.metrics.WRITE_OPERATIONS`), in bytes at 1 KB per write unit. A lower bound of the
    units a write costs (the item count is an upper bound); None without writes."""
    res = tm.resources.get(None)
    if res is None:
        return None
    writes = sum(res.total(f"{SCAN_REQUESTS}:{op}") * items for op, items in WRITE_OPERATIONS.items())
    consumed = res.total(CONSUMED["write"])
    if writes <= 0 or consumed <= 0:
        return None
    return max(1, round(consumed / writes * 1024))


def _scaling_max(cap: Capacity, access: str) -> int | None:
    target = cap.scaling(access)
    return target.max_capacity if target is not None else None


def _read_quota(quotas: ThroughputQuotas | None, scope: str, access: str) -> float | None:
    """The account's quota where Service Quotas gave it (None: the documented default applies)."""
    if quotas is None:
        return None
    value, source = quotas.table(access) if scope == "table" else quotas.account(access)
    return value if source == "service_quotas" else None


def resource_capacities(
    profile: TableProfile, tm: TableMetrics, quotas: ThroughputQuotas | None = None
) -> list[ResourceCapacity]:
    """The table and each of its GSIs: peak consumption in ``tm``, the capacity settings of ``profile`` and the
    account's throughput ``quotas`` where Service Quotas gave them."""
    out = []
    for index in (None, *(g.name for g in profile.gsis)):
        cap = profile.capacity_of(index)
        peak_read, read_at = _peak(tm, index, "read")
        peak_write, write_at = _peak(tm, index, "write")
        out.append(
            ResourceCapacity(
                table=profile.name,
                index=index,
                billing_mode=profile.billing_mode,
                peak_read=peak_read,
                peak_write=peak_write,
                period_seconds=tm.period,
                account=profile.account,
                region=profile.region,
                peak_read_at=read_at,
                peak_write_at=write_at,
                provisioned_read=cap.provisioned_read,
                provisioned_write=cap.provisioned_write,
                autoscaling_max_read=_scaling_max(cap, "read"),
                autoscaling_max_write=_scaling_max(cap, "write"),
                on_demand_max_read=cap.on_demand_max("read"),
                on_demand_max_write=cap.on_demand_max("write"),
                warm_read=cap.warm_read,
                warm_write=cap.warm_write,
                table_max_read=_read_quota(quotas, "table", "read"),
                table_max_write=_read_quota(quotas, "table", "write"),
                account_max_read=_read_quota(quotas, "account", "read"),
                account_max_write=_read_quota(quotas, "account", "write"),
            )
        )
    return out


def _num(entry: dict[str, Any], name: str, where: str, *, optional: bool = False) -> Any:
    value = entry.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise InputError(f"{where}: {name} must be a number >= 0, got {value!r}")
    return value


def _text(entry: dict[str, Any], name: str) -> str | None:
    value = entry.get(name)
    return value if isinstance(value, str) else None


#: The account's quotas an entry may carry (absent from audits before they were read).
_QUOTA_FIELDS = ("table_max_read", "table_max_write", "account_max_read", "account_max_write")


def capacity_from_audit(document: Any, source: str) -> tuple[list[ResourceCapacity], list[dict[str, Any]]]:
    """The capacity entries and the findings of a ``ddb-audit audit --format json`` document.

    An entry that is not shaped as documented is an input error naming the table and entry.
    """
    if not isinstance(document, dict) or not isinstance(document.get("tables"), list):
        raise InputError(f"{source}: not the JSON output of ddb-audit audit (no 'tables' list)")
    out: list[ResourceCapacity] = []
    for t_no, table in enumerate(document["tables"]):
        if not isinstance(table, dict) or not isinstance(table.get("table"), str):
            raise InputError(f"{source}: tables[{t_no}] has no table name")
        entries = table.get("capacity")
        if entries is None:
            continue  # an audit from before capacity was recorded: no CloudWatch limits for this table
        if not isinstance(entries, list):
            raise InputError(f"{source}: tables[{t_no}].capacity must be a list")
        for e_no, entry in enumerate(entries):
            where = f"{source}: tables[{t_no}].capacity[{e_no}] ({table['table']})"
            if not isinstance(entry, dict):
                raise InputError(f"{where}: must be an object")
            index = entry.get("index")
            if index is not None and not isinstance(index, str):
                raise InputError(f"{where}: index must be a string or null")
            out.append(
                ResourceCapacity(
                    table=table["table"],
                    index=index,
                    billing_mode=str(entry.get("billing_mode") or table.get("billing_mode") or "unknown"),
                    peak_read=float(_num(entry, "peak_read_per_second", where)),
                    peak_write=float(_num(entry, "peak_write_per_second", where)),
                    period_seconds=int(_num(entry, "period_seconds", where, optional=True) or 60),
                    account=_text(table, "account"),
                    region=_text(table, "region"),
                    peak_read_at=_text(entry, "peak_read_at"),
                    peak_write_at=_text(entry, "peak_write_at"),
                    provisioned_read=int(_num(entry, "provisioned_read", where, optional=True) or 0),
                    provisioned_write=int(_num(entry, "provisioned_write", where, optional=True) or 0),
                    autoscaling_max_read=_num(entry, "autoscaling_max_read", where, optional=True),
                    autoscaling_max_write=_num(entry, "autoscaling_max_write", where, optional=True),
                    on_demand_max_read=_num(entry, "on_demand_max_read", where, optional=True),
                    on_demand_max_write=_num(entry, "on_demand_max_write", where, optional=True),
                    warm_read=_num(entry, "warm_read", where, optional=True),
                    warm_write=_num(entry, "warm_write", where, optional=True),
                    **{q: _num(entry, q, where, optional=True) for q in _QUOTA_FIELDS},
                )
            )
    return out, _findings(document.get("findings"), source)


def _findings(value: Any, source: str) -> list[dict[str, Any]]:
    """The audit's findings (objects only); a finding whose ``evidence`` is not an object is an input error."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{source}: findings must be a list")
    findings = [f for f in value if isinstance(f, dict)]
    for f_no, finding in enumerate(value):
        evidence = finding.get("evidence") if isinstance(finding, dict) else None
        if evidence is not None and not isinstance(evidence, dict):
            raise InputError(f"{source}: findings[{f_no}].evidence must be an object, got {type(evidence).__name__}")
    return findings


def profiles_from_audit(document: Any) -> dict[tuple[str | None, str | None, str], TableProfile]:
    """What an audit's tables say of their item sizes, as the profiles :func:`auditor.engine.apply_table_facts`
    reads: DescribeTable's size and item count, CloudWatch's consumed units per write (``cloudwatch_item_size_bytes``).
    Entries without a table name are left out (:func:`capacity_from_audit` reports them)."""
    out: dict[tuple[str | None, str | None, str], TableProfile] = {}
    tables = document.get("tables") if isinstance(document, dict) else None
    for table in tables if isinstance(tables, list) else ():
        if not isinstance(table, dict) or not isinstance(table.get("table"), str):
            continue
        account, region = _text(table, "account"), _text(table, "region")
        out[(account, region, table["table"])] = TableProfile(
            name=table["table"],
            account=account,
            region=region,
            size_bytes=_count(table.get("size_bytes")),
            item_count=_count(table.get("item_count")),
            cloudwatch_item_size_bytes=_count(table.get("cloudwatch_item_size_bytes")),
        )
    return out


def _count(value: Any) -> int | None:
    """A whole number above 0, else None."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None

"""Proposals from where the load lands and what items hold: ``shard_partition_key`` (a partition key whose metered
peak needs more than one partition), ``cache_reads`` (a read-heavy hot key), ``split_item`` (items growing toward
400 KB) and ``drop_index`` (an index nothing reads). They start from the engine's and the audit's findings, whose
ids they link, and add the change and its price."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from auditor.kernel.aggregates.keys import encode_key
from auditor.kernel.aggregates.window import TableWindow
from auditor.review.context import ReviewInput, rate
from auditor.review.model import (
    SECONDS_PER_MONTH,
    Effect,
    Proposal,
    partition_capacity,
    partition_headroom,
    write_units,
)
from auditor.whatif.limits import PartitionCapacity, WhatIfConfig


def _num(ev: Mapping[str, Any], name: str, default: float = 0.0) -> float:
    value = ev.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def billed_rates(ev: Mapping[str, Any], read_share: float | None = None) -> tuple[float, float]:
    """(reads, writes) per second that DynamoDB bills of a hot key's evidence: its requests less the calls on it that
    were throttled. A throttled request is denied (ProvisionedThroughputExceededException, ThrottlingException: "The
    request was denied due to request throttling", DynamoDB API Reference, Common Errors) and consumes no capacity;
    on demand "you only pay for the throughput you actually use" and are billed per request served
    (docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html). ``read_share``: the
    share of the throttled calls that were reads (the table's ``throttling`` finding); unknown, they come off reads
    and writes in proportion. Neither goes below zero."""
    reads, writes = _num(ev, "reads_per_second"), _num(ev, "writes_per_second")
    seconds = _num(ev, "window_seconds")
    throttled = _num(ev, "throttled_calls") / seconds if seconds > 0 else 0.0
    if throttled <= 0 or reads + writes <= 0:
        return reads, writes
    if read_share is None:
        served = max(0.0, 1.0 - throttled / (reads + writes))
        return reads * served, writes * served
    return max(0.0, reads - throttled * read_share), max(0.0, writes - throttled * (1.0 - read_share))


def throttled_read_share(data: ReviewInput, f: Mapping[str, Any]) -> float | None:
    """The share of reads among the throttled calls the ``throttling`` findings of ``f``'s table (and index) count,
    None when they count none."""
    counts = [0.0, 0.0]
    for other in data.findings:
        ev = other.get("evidence") or {}
        if other.get("kind") == "throttling" and _where(other) == _where(f) and other.get("index") == f.get("index"):
            counts[0] += _num(ev, "read_throttle_events")
            counts[1] += _num(ev, "write_throttle_events")
    return counts[0] / sum(counts) if sum(counts) > 0 else None


def _where(f: Mapping[str, Any]) -> tuple[str | None, str | None, str]:
    return (f.get("account"), f.get("region"), str(f["table"]))


def _hot_keys(data: ReviewInput) -> dict[tuple[Any, ...], Mapping[str, Any]]:
    """The hot-key findings, one per (account, region, table, index, key): the one with the highest peak."""
    best: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for f in data.of_kind("hot_key"):
        ev = f.get("evidence") or {}
        if not isinstance(ev.get("key"), Mapping):
            continue
        hk = (f.get("account"), f.get("region"), f["table"], f.get("index"), json.dumps(ev["key"], sort_keys=True))
        units = _num(ev, "peak_read_units_per_second") + 3 * _num(ev, "peak_write_units_per_second")
        prev = best.get(hk)
        if prev is None or units > _num(prev["evidence"], "peak_read_units_per_second") + 3 * _num(
            prev["evidence"], "peak_write_units_per_second"
        ):
            best[hk] = f
    return best


def _read_heavy(ev: Mapping[str, Any], data: ReviewInput) -> bool:
    r, w = _num(ev, "peak_read_units_per_second"), _num(ev, "peak_write_units_per_second")
    cfg = data.config
    return (
        r + w > 0
        and r / (r + w) >= cfg.hot_key.cache_read_share
        and _num(ev, "peak_reads_per_second", r) >= (cfg.hot_key.cache_peak_reads)
    )


def _capacity(
    ev: Mapping[str, Any], r: float, w: float, data: ReviewInput, limits: WhatIfConfig
) -> tuple[PartitionCapacity, bool]:
    """(what one partition delivers to a hot key, whether it throttles now). A key throttled at its peak (at least
    ``min_throttled`` calls) had no headroom left there, whatever the documented limit says (a provisioned table's
    capacity is shared by its partitions): its partition delivered at most that peak, and the change is measured
    against that capacity (the one model: :class:`auditor.whatif.limits.PartitionCapacity`)."""
    calls = int(_num(ev, "throttled_calls"))
    throttled = calls >= data.config.hot_key.min_throttled
    read_limit, write_limit = limits.partition_read_units, limits.partition_write_units
    return PartitionCapacity.of(r, w, read_limit, write_limit, calls if throttled else 0), throttled


def shard_partition_key(data: ReviewInput, limits: WhatIfConfig | None = None) -> list[Proposal]:
    """A hot (not read-heavy) or low-cardinality key whose peak leaves less than the target headroom: write shards."""
    limits = limits or WhatIfConfig()
    target = data.config.hot_key.shard_utilisation
    out: list[Proposal] = []
    cached: set[tuple[Any, ...]] = set()  # read-heavy hot keys: cached (cache_reads), not sharded
    for f in _hot_keys(data).values():
        ev = f["evidence"]
        if _read_heavy(ev, data):
            cached.add((f.get("account"), f.get("region"), f["table"], f.get("index")))
            continue
        r, w = _num(ev, "peak_read_units_per_second"), _num(ev, "peak_write_units_per_second")
        h = partition_headroom(r, w, limits)
        throttled = _num(ev, "throttled_calls") >= data.config.hot_key.min_throttled
        if h is None or (h >= 1 / target and not throttled):
            continue
        capacity, throttles_now = _capacity(ev, r, w, data, limits)
        out.append(_shard(data, f, (r, w), dict(ev["key"]), capacity, throttles_now))
    sharded = {(p.account, p.region, p.table, p.index) for p in out}
    for f in data.of_kind("low_cardinality_key"):
        ev = f.get("evidence") or {}
        if (f.get("account"), f.get("region"), f["table"], f.get("index")) in sharded | cached:
            continue
        h = ev.get("busiest_value_headroom_factor")
        if not isinstance(h, int | float) or h <= 0 or h >= 1 / target:
            continue
        attr = str(ev.get("key_attribute") or "pk")
        units = _num(ev, "requests_per_second")
        peak = (units * 0.0, limits.partition_write_units / h)
        throttles_now = ev.get("throttles_now") is True
        out.append(_shard(data, f, peak, {attr: "(all)"}, partition_capacity(limits), throttles_now))
    return out


def _shard(
    data: ReviewInput,
    f: Mapping[str, Any],
    peak: tuple[float, float],
    key: dict[str, Any],
    capacity: PartitionCapacity,
    throttles_now: bool,
) -> Proposal:
    """The shards of ``key`` for its ``peak`` (read, write units per second) against ``capacity``."""
    target = data.config.hot_key.shard_utilisation
    r, w = peak
    h = capacity.headroom(r, w) or 0.0
    ev = f.get("evidence") or {}
    told = ev.get("suggested_shards")  # the finding's own count: one number for the key's shards in every output
    shards = told if type(told) is int and told >= 2 else capacity.shards(r, w, target)
    attr, value = next(iter(key.items()))
    price = data.pricing(f.get("region"))
    reads, writes = _num(ev, "reads_per_second"), _num(ev, "writes_per_second")
    # the throttled calls are offered load, not billed
    billed_reads, billed_writes = billed_rates(ev, throttled_read_share(data, f))
    ru, wu = _num(ev, "read_units_per_read", 1.0), _num(ev, "write_units_per_write", 1.0)
    after_h = capacity.headroom(r / shards, w / shards) or 0.0
    title = f"{f['table']}: write {attr}={value} across {shards} shards ({attr}#0..{shards - 1})"
    return Proposal(
        kind="shard_partition_key",
        title=title,
        where=_where(f),
        index=f.get("index"),
        subject=f"{attr}={value}",
        change={
            "partition_key": f"{attr}#<shard 0..{shards - 1}>",
            "shards": shards,
            "suffix": "computed from the item's id (hash mod shards), so a GetItem by id still reads one shard",
            "reads_fan_out": f"a read of every item of {attr}={value} becomes {shards} Queries, one per shard",
            "peak_units_per_shard": {"read": round(r / shards, 1), "write": round(w / shards, 1)},
        },
        patterns=[f"{attr}={value}"],
        principals=data.signals.key_principals(_where(f), key) if value != "(all)" else [],
        confidence="high" if h <= 1 else "medium",
        assumptions=[
            f"shards sized for {1 / target:.0f}x headroom at the observed peak ({r:.0f} RCU/s, {w:.0f} WCU/s)"
            + (
                f" against the capacity its throttling showed one partition delivered ({capacity.read:,.0f} RCU/s, "
                f"{capacity.write:,.0f} WCU/s), not the documented partition limit"
                if capacity.observed
                else ""
            ),
            "the suffix spreads writes evenly (a computed suffix; a random one makes every read fan out)",
            f"each read of the whole key fans out to {shards} Queries of at least one read unit each",
            *(
                [
                    f"the key throttled ({_num(ev, 'throttled_calls'):.0f} calls) below the documented partition "
                    "limit: its partition served at most the observed peak (headroom 1.0 there)"
                ]
                if capacity.observed
                else []
            ),
        ],
        before=Effect(
            reads=price.monthly(billed_reads * ru, 0.0), writes=price.monthly(0.0, billed_writes * wu), headroom=h
        ),
        after=Effect(
            reads=price.monthly(billed_reads * ru + billed_reads * (shards - 1) * 0.5, 0.0),
            writes=price.monthly(0.0, billed_writes * wu),
            headroom=after_h,
        ),
        capacity=capacity,
        throttles_now=throttles_now,
        findings=[str(f.get("id"))],
        evidence={"peak_read_units_per_second": r, "peak_write_units_per_second": w},
        peak=(r, w),
        peak_after=(r / shards, w / shards),
        average=(reads * ru, writes * wu),
        key=key if value != "(all)" and not f.get("index") else None,
    )


def cache_reads(data: ReviewInput, limits: WhatIfConfig | None = None) -> list[Proposal]:
    """A hot key read far more than written, at a high peak: DAX or an application cache in front of it."""
    limits = limits or WhatIfConfig()
    cfg = data.config
    out: list[Proposal] = []
    for f in _hot_keys(data).values():
        ev = f["evidence"]
        if not _read_heavy(ev, data):
            continue
        r, w = _num(ev, "peak_read_units_per_second"), _num(ev, "peak_write_units_per_second")
        miss = 1 - cfg.hot_key.cache_hit_ratio
        price = data.pricing(f.get("region"))
        reads, ru = _num(ev, "reads_per_second"), _num(ev, "read_units_per_read", 1.0)
        billed = billed_rates(ev, throttled_read_share(data, f))[0]  # the throttled calls are not billed
        key = dict(ev["key"])
        attr, value = next(iter(key.items()))
        dax = cfg.dax_node_hour * cfg.dax_nodes * SECONDS_PER_MONTH / 3600
        capacity, throttles_now = _capacity(ev, r, w, data, limits)
        out.append(
            Proposal(
                kind="cache_reads",
                where=_where(f),
                index=f.get("index"),
                subject=f"{attr}={value}",
                title=f"{f['table']}: cache the reads of {attr}={value} (DAX or an application cache)",
                change={
                    "cache": "DAX cluster (item cache) or an application cache with a TTL",
                    "hit_ratio": cfg.hot_key.cache_hit_ratio,
                    "peak_reads_reaching_the_table": round(r * miss, 1),
                },
                patterns=[f"{attr}={value}"],
                principals=data.signals.key_principals(_where(f), key),
                confidence="medium",
                assumptions=[
                    f"{cfg.hot_key.cache_hit_ratio:.0%} of the key's reads hit the cache (eventually consistent "
                    "reads only: strongly consistent reads pass through DAX)",
                    f"DAX: {cfg.dax_nodes} nodes at ${cfg.dax_node_hour}/node-hour (an application cache costs "
                    "what its own nodes cost)",
                ],
                before=Effect(reads=price.monthly(billed * ru, 0.0), headroom=capacity.headroom(r, w)),
                after=Effect(
                    reads=price.monthly(billed * ru * miss, 0.0),
                    extra=round(dax, 2),
                    headroom=capacity.headroom(r * miss, w),
                ),
                capacity=capacity,
                throttles_now=throttles_now,
                findings=[str(f.get("id"))],
                evidence={"peak_read_units_per_second": r, "peak_write_units_per_second": w},
                peak=(r, w),
                peak_after=(r * miss, w),
                average=(reads * ru, _num(ev, "writes_per_second") * _num(ev, "write_units_per_write", 1.0)),
                key=None if f.get("index") else key,
            )
        )
    return out


def split_item(data: ReviewInput) -> list[Proposal]:
    """Items near 400 KB (large_item, item_growth) or writes refused for size (item_size_exceeded): an item
    collection of small items under the same partition key."""
    cfg = data.config
    out: list[Proposal] = []
    seen: set[tuple[Any, ...]] = set()
    for f in data.of_kind("large_item", "item_growth", "item_size_exceeded"):
        ev = f.get("evidence") or {}
        size = _num(ev, "size_bytes")
        oversize = f.get("kind") == "item_size_exceeded" and _num(ev, "count") >= cfg.item.split_min_oversize_writes
        if size < cfg.item.split_min_bytes and not oversize:
            continue
        size = size or float(_num(ev, "limit_bytes", 409_600))
        tk = (f.get("account"), f.get("region"), f["table"])
        if tk in seen:
            continue
        seen.add(tk)
        span = data.span(tk)
        writes = _item_writes(span, ev) if span is not None else _reported_writes(f)
        price = data.pricing(f.get("region"))
        attribute = ev.get("growth_attribute") or "the growing list or map"
        out.append(
            Proposal(
                kind="split_item",
                where=tk,
                subject=str(ev.get("key") or ""),
                title=f"{tk[2]}: move {attribute} into an item collection (one item per element)",
                change={
                    "sort_key": "<ENTITY>#<element id>",
                    "moves": attribute,
                    "item_size_bytes_before": round(size),
                    "item_size_bytes_after": 1024,
                },
                patterns=[f"{f.get('kind')} {ev.get('key') or ''}".strip()],
                principals=[],
                confidence="high" if oversize or size >= 300 * 1024 else "medium",
                assumptions=[
                    "each write then adds or updates one element of up to 1 KB instead of rewriting the whole item",
                    f"{writes:.3f} writes a second of such items, as observed",
                ],
                before=Effect(writes=price.monthly(0.0, writes * write_units(size))),
                after=Effect(writes=price.monthly(0.0, writes * write_units(1024))),
                findings=[str(f.get("id"))],
                evidence={"size_bytes": round(size), "finding_kind": f.get("kind")},
            )
        )
    return out


def _item_writes(span: TableWindow, ev: Mapping[str, Any]) -> float:
    """Writes per second of the large item: the key's (its sketch count, at least the refused writes) when the
    finding names one, else the table's (a large_item finding's size is the table's average item)."""
    key = ev.get("key")
    if not isinstance(key, Mapping) or len(key) != 1:
        return rate(span.item_writes, span.observed_seconds)
    attr, value = next(iter(key.items()))
    counted = span.hot_writes.counts.get(encode_key(str(attr), value), 0)
    return rate(max(counted, _num(ev, "count")), span.observed_seconds)


def _reported_writes(f: Mapping[str, Any]) -> float:
    """Writes per second of the large item as its finding reports them, without the trail: the writes refused over
    the window (item_size_exceeded), the writes CloudWatch counted over the finding's period (large_item), or the
    stream samples of the item over their days (item_growth)."""
    ev = f.get("evidence") or {}
    if f.get("kind") == "item_size_exceeded":
        return rate(_num(ev, "count"), _num(ev, "window_seconds"))
    if f.get("kind") == "item_growth":
        return rate(_num(ev, "samples"), _num(ev, "span_days") * 86_400)
    try:
        seconds = datetime.fromisoformat(str(f["last_seen"])) - datetime.fromisoformat(str(f["first_seen"]))
    except (KeyError, ValueError):
        return 0.0
    return rate(_num(ev, "writes"), seconds.total_seconds())


def drop_index(data: ReviewInput) -> list[Proposal]:
    """An index that CloudWatch saw no reads of (unused_index) and no access pattern of the trail reads."""
    out: list[Proposal] = []
    for f in data.of_kind("unused_index"):
        index = f.get("index")
        if not index or any(p.index == index for p in data.table_patterns(f["table"])):
            continue
        ev = f.get("evidence") or {}
        before = Effect(
            index_writes=_num(ev, "monthly_write_cost"),
            storage=_num(ev, "monthly_storage_cost"),
            extra=_num(ev, "monthly_read_capacity_cost"),
        )
        out.append(
            Proposal(
                kind="drop_index",
                where=_where(f),
                index=str(index),
                subject=str(index),
                title=f"{f['table']}: delete the index {index} (no reads in {_num(ev, 'days_analyzed'):.0f} days)",
                change={"delete_index": index, "projection": ev.get("projection")},
                patterns=[],
                principals=[],
                confidence="high" if _num(ev, "days_analyzed") >= 14 else "medium",
                assumptions=["no reader of the index runs less often than the audited window (monthly jobs)"],
                before=before,
                after=Effect(),
                findings=[str(f.get("id"))],
                evidence={"days_analyzed": ev.get("days_analyzed"), "writes": ev.get("writes")},
            )
        )
    return out

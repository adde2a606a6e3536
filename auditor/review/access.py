"""Proposals from how items are found: ``add_gsi`` (a recurring filtered Scan), ``query_instead_of_gets`` (bursts of
GetItems on one partition: an N+1 read) and ``composite_sort_key`` (a Query that filters on the same attribute every
time). Each needs traffic that repeats (:class:`~auditor.review.model.ReviewConfig`), never one call."""

from __future__ import annotations

import math
import re

from auditor.kernel.aggregates.index_writes import amplified_writes
from auditor.kernel.aggregates.window import TableWindow
from auditor.review.context import ReviewInput, rate, size_assumption
from auditor.review.model import Effect, Proposal, read_units, write_units

#: Attribute names of statuses and flags: few distinct values, so an index keyed on one alone has hot partitions
#: (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-indexes-general-sparse-indexes.html).
_FEW_VALUES = re.compile(
    r"[Ss]tatus|[Ss]tate$|[Tt]ype$|[Ff]lag|[Ee]xpired|[Dd]eleted|[Aa]ctive|[Ee]nabled|^(is|has)(_|[A-Z])"
)


def _confidence(n: float, strong: float) -> str:
    return "high" if n >= strong else "medium"


def _scanners(data: ReviewInput, span: TableWindow) -> dict[tuple[str, str], tuple[int, float]]:
    """(principal, operation) -> (logical scans, read units) of the span's Scans and of the PartiQL statements the
    scan detector found to be full scans (their verdict waits for the key schema: its findings carry it)."""
    found = {(p, op): (st.logical(), st.read_units) for (p, op), st in span.scans.items()}
    for f in data.of_kind("scan"):
        ev = f.get("evidence") or {}
        if (f.get("account"), f.get("region"), f["table"]) == (span.account, span.region, span.table) and ev.get(
            "operation"
        ) == "ExecuteStatement":
            key = (str(ev.get("principal") or "(unknown)"), "ExecuteStatement")
            scans, units = int(ev.get("logical_scans") or 0), float(ev.get("estimated_read_units") or 0.0)
            if scans > found.get(key, (0, 0.0))[0]:
                found[key] = (scans, units)
    return found


def add_gsi(data: ReviewInput) -> list[Proposal]:
    """A principal that Scans with a filter on the same attribute on most pages, repeatedly: an index keyed on it."""
    cfg = data.config
    out: list[Proposal] = []
    for span in data.spans:
        tk = (span.account, span.region, span.table)
        keys = {span.schema_hint, span.partition_key_attr}
        for (principal, op), (scans, units) in sorted(_scanners(data, span).items()):
            sig = data.signals.scans.get((tk, principal, op))
            if scans < cfg.scan.min_scans or sig is None or not sig.pages:
                continue
            share = cfg.scan.min_filter_share
            keyed = {a: n for a, n in sig.equal.items() if n / sig.pages >= share and a not in keys}
            if not keyed:
                continue
            attr = max(sorted(keyed), key=lambda a: keyed[a])
            ranged = {a: n for a, n in sig.ranges.items() if n / sig.pages >= share}
            sort = max(sorted(ranged), key=lambda a: ranged[a]) if ranged else None
            projected = sorted(a for a, n in sig.projected.items() if n / sig.pages >= share)
            out.append(_gsi(data, span, (principal, op), scans, units, attr, sort, projected))
    return out


def _gsi(
    data: ReviewInput,
    span: TableWindow,
    who: tuple[str, str],
    scans: int,
    scan_units: float,
    attr: str,
    sort: str | None,
    projected: list[str],
) -> Proposal:
    seconds = span.observed_seconds
    size, source = data.item_size(span.table)
    price = data.pricing(span.region)
    projection = "INCLUDE" if projected else "ALL"
    index_item = min(size, 100 + 40 * len(projected)) if projected else size
    # the index's writes metered as DynamoDB meters a GSI's (write amplification): the same model as the audit's
    per_minute, base = amplified_writes(span.write_shapes, (attr, sort) if sort else (attr,))
    writes = rate(sum(per_minute.values()), seconds)
    storage = data.storage_bytes(span.table)
    index_storage = storage * index_item / size if storage is not None else 0.0
    before = Effect(reads=price.monthly(rate(scan_units, seconds), 0.0))
    after = Effect(
        reads=price.monthly(rate(scans, seconds) * read_units(index_item, eventual=True), 0.0),
        index_writes=price.monthly(0.0, writes * write_units(index_item)),
        storage=price.monthly(0.0, 0.0, index_storage),
    )
    name = f"By{attr[:1].upper()}{attr[1:]}"
    assumptions = [
        f"each full scan becomes one Query of {name} reading one item (a selective equality on {attr})",
        f"the table's writes that carry or change {attr} write the index (write amplification): {writes:.2f} index "
        f"writes/s from {rate(base, seconds):.2f} writes/s (a put that names {attr} or a delete 1, an update that sets "
        f"{attr} 2; CloudTrail logs a put's attribute names and an update's expression, never their values)",
    ]
    if storage is None:
        assumptions.append("index storage not priced: pass --audit for the table's size")
    few = _FEW_VALUES.search(attr) is not None
    if few:
        assumptions.append(
            f"{attr} looks like a status or flag with few values: keyed on it alone the index would have hot "
            f"partitions; write {attr} only on the items the Scan looks for (a sparse index) or shard it"
        )
    return Proposal(
        kind="add_gsi",
        where=(span.account, span.region, span.table),
        subject=f"{attr}|{sort or ''}",
        title=f"{span.table}: add a GSI keyed on {attr} for the Scans that filter on it",
        change={
            "index": name,
            "partition_key": attr,
            "sort_key": sort,
            "projection": projection,
            "projected_attributes": projected,
            "replaces": f"{who[1]} with filter on {attr}",
        },
        patterns=[f"{who[1]} filter {attr} = :v" + (f", {sort} range" if sort else "")],
        principals=[who[0]],
        confidence="medium" if few else _confidence(scans, data.config.scan.min_scans * 10),
        assumptions=assumptions + size_assumption(size, source),
        before=before,
        after=after,
        evidence={
            "logical_scans": scans,
            "scans_per_second": round(rate(scans, seconds), 3),
            "scan_read_units": round(scan_units, 1),
            "observed_seconds": seconds,
        },
    )


def query_instead_of_gets(data: ReviewInput) -> list[Proposal]:
    """Many GetItems of distinct items of one partition by one principal within seconds, repeatedly: one Query."""
    cfg = data.config
    out: list[Proposal] = []
    for (tk, principal, template), row in sorted(data.signals.gets.items(), key=lambda kv: str(kv[0])):
        if (
            row.bursts < cfg.burst.min_bursts
            or len(row.partitions) < cfg.burst.min_partitions
            or row.burst_gets < cfg.burst.min_share * row.gets
        ):
            continue
        span = data.span(tk)
        seconds = span.observed_seconds if span is not None else 1.0
        size, source = data.item_size(tk[2])
        price = data.pricing(tk[1])
        eventual = row.eventual > row.gets / 2
        per_burst = row.burst_gets / row.bursts
        before_units = rate(row.burst_gets, seconds) * read_units(size, eventual)
        after_units = rate(row.bursts, seconds) * read_units(per_burst * size, eventual)
        out.append(
            Proposal(
                kind="query_instead_of_gets",
                where=tk,
                subject=f"{principal}|{template}",
                title=f"{tk[2]}: one Query per {row.partition_attr} instead of {per_burst:.0f} GetItems",
                change={
                    "operation": "Query",
                    "key_condition": f"{row.partition_attr} = :v",
                    "replaces": f"GetItem {template} x{per_burst:.1f} within 2 s",
                    "requests_saved": row.burst_gets - row.bursts,
                },
                patterns=[f"GetItem {template}"],
                principals=[principal],
                confidence=_confidence(row.bursts, cfg.burst.min_bursts * 10),
                assumptions=[
                    f"a burst's {per_burst:.1f} items are the partition's item collection (one Query page reads them)",
                    *size_assumption(size, source),
                ],
                before=Effect(reads=price.monthly(before_units, 0.0)),
                after=Effect(reads=price.monthly(after_units, 0.0)),
                evidence={
                    "gets": row.gets,
                    "bursts": row.bursts,
                    "burst_gets": row.burst_gets,
                    "largest_burst": row.largest,
                    "partitions": len(row.partitions),
                    "requests_per_second_before": round(rate(row.burst_gets, seconds), 3),
                    "requests_per_second_after": round(rate(row.bursts, seconds), 3),
                },
            )
        )
    return out


def composite_sort_key(data: ReviewInput) -> list[Proposal]:
    """A Query template that filters on the same attribute on (nearly) every call: a sort key that begins with it."""
    cfg = data.config
    out: list[Proposal] = []
    for (tk, index, template), row in sorted(data.signals.queries.items(), key=lambda kv: str(kv[0])):
        if row.queries < cfg.filter.min_queries or not row.attrs:
            continue
        attr = max(sorted(row.attrs), key=lambda a: row.attrs[a])
        if row.attrs[attr] < cfg.filter.min_share * row.queries:
            continue
        span = data.span(tk)
        seconds = span.observed_seconds if span is not None else 1.0
        size, source = data.item_size(tk[2])
        price = data.pricing(tk[1])
        per_query = cfg.filter.items_per_query
        kept = max(1, math.ceil(per_query * cfg.filter.keeps))
        q = rate(row.queries, seconds)
        sort = template.split(", ", 1)[1].split(" ", 1)[0] if ", " in template else None
        new_sort = f"{attr}#{sort}" if sort else attr
        out.append(
            Proposal(
                kind="composite_sort_key",
                where=tk,
                index=index or None,
                subject=f"{index}|{template}|{attr}",
                title=f"{tk[2]}: a sort key that begins with {attr} (the Query filters on it every time)",
                change={
                    "sort_key": new_sort,
                    "key_condition": f"{template.split(',', 1)[0]}, {new_sort} begins_with :{attr}",
                    "alternative": f"a GSI with the same partition key and sort key {new_sort} (an LSI only at "
                    "table creation)",
                    "replaces": f"Query {template} with FilterExpression on {attr}",
                },
                patterns=[f"Query {template} filter {attr}"],
                principals=sorted(row.principals),
                confidence="medium",
                assumptions=[
                    f"each Query reads {per_query} items and its filter keeps {kept} (CloudTrail logs neither "
                    "ScannedCount nor Count: the saving scales with what the filter really discards)",
                    *size_assumption(size, source),
                ],
                before=Effect(reads=price.monthly(q * read_units(per_query * size), 0.0)),
                after=Effect(reads=price.monthly(q * read_units(kept * size), 0.0)),
                evidence={
                    "queries": row.queries,
                    "filtered": row.filtered,
                    "filter_attribute_queries": row.attrs[attr],
                    "queries_per_second": round(q, 3),
                },
            )
        )
    return out

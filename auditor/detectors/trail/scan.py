"""``scan``: Scans and full-table PartiQL statements, per table and principal."""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from pydantic import Field

from auditor.detectors.base import Amount, Count, DetectorConfig, DetectorMetadata, make_finding
from auditor.detectors.registry import register
from auditor.kernel.aggregates.bounds import OTHER
from auditor.kernel.aggregates.scans import RCU_PER_FULL_PAGE, SCAN_SPAN_SECONDS, ScanStats
from auditor.kernel.aggregates.window import TableWindow
from auditor.models.finding import Finding, FindingKind, Severity

METADATA = DetectorMetadata(
    id="scan",
    kind=FindingKind.SCAN,
    default_severity=Severity.MEDIUM,
    title="Table scanned on a request path",
    risk=(
        "A Scan reads every item and pays for every item read, however few it returns. Repeated scans grow "
        "with the table, burn capacity, raise latency and throttle the requests sharing the table."
    ),
    remediation=(
        "Serve the access pattern with a Query: add a GSI whose partition key is the attribute the scan "
        "filters on, or remodel the key so the items live in one item collection. Keep Scans for "
        "exports and one-off jobs, run them off-peak with a small Limit, or export to S3."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-query-scan.html",
)


class ScanThresholds(DetectorConfig):
    """How many scans, and how many an hour, make a high or a medium finding, and the fewest worth one (this
    detector counts logical scans, the CloudWatch ``cw_scan`` Scan requests)."""

    high_per_hour: Amount = 60.0
    high_min_count: Count = 10
    medium_per_hour: Amount = 4.0
    medium_min_count: Count = 5
    low_min_count: Count = 3

    def tier(self, count: float, per_hour: float) -> Severity | None:
        """High or medium when ``count`` scans at ``per_hour`` reach that tier's thresholds, else None."""
        if count >= self.high_min_count and per_hour >= self.high_per_hour:
            return Severity.HIGH
        if count >= self.medium_min_count and per_hour >= self.medium_per_hour:
            return Severity.MEDIUM
        return None


class ScanConfig(ScanThresholds):
    """Thresholds are *logical* scans per hour over the evaluated windows (a paginated or parallel scan is one)."""

    #: Principals (exact ARNs or shell-style patterns) whose scans are known batch or admin jobs.
    allow_principals: list[str] = Field(default_factory=list)
    #: A single logical scan estimated at this many read units or more is ``low`` rather than ``info``.
    low_read_units: Amount = 10_000.0
    #: A Scan whose every page has a ``limit`` at most this, one page per logical scan, reads a bounded sample.
    bounded_limit: Count = 100


def _partition_key(agg: TableWindow) -> tuple[str | None, str | None]:
    """(partition-key attribute, where it comes from): the analysis config or the table's description (the
    service's inventory), else the key names the trail's item-level calls log."""
    if agg.schema_hint:
        return agg.schema_hint, agg.schema_source or "config"
    learned = agg.partition_key_attr
    return (learned, "trail") if learned else (None, None)


def index_partition_key(agg: TableWindow, index: str) -> tuple[str | None, str | None]:
    """An index's own partition key, never the table's: the table's description, else the attribute its Query
    records name (:attr:`TableWindow.index_keys`)."""
    described = agg.index_schema.get(index)
    if described:
        return described, "inventory"
    space = agg.index_keys.get(index)
    learned = space.partition_key_attr if space is not None else None
    return (learned, "trail") if learned else (None, None)


def _schema_full_scans(agg: TableWindow) -> dict[str, tuple[ScanStats, str, str]]:
    """PartiQL statements that constrain attributes but not the partition key of their target (the table, or the
    index they name), per principal, with the key that decided and where it came from (schema known; an unknown key
    leaves the statement a key lookup)."""
    pk, source = _partition_key(agg)
    found: dict[str, tuple[ScanStats, str, str]] = {}
    for (principal, _verb, index, constrained), st in agg.statements.items():
        key, key_source = index_partition_key(agg, index) if index else (pk, source)
        if key is None or key_source is None or key in constrained.split(","):
            continue
        mine = found.setdefault(principal, (ScanStats(), key, key_source))[0]
        mine.count += st.count
        mine.overflow += st.count
        mine.unbounded_pages += st.count
        mine.read_units += st.count * RCU_PER_FULL_PAGE
        mine.first = min(mine.first, st.first)
        mine.last = max(mine.last, st.last)
        if index:
            mine.indexes.add(index)
    return found


def _where(table: str, index: Any) -> str:
    """``table``, or ``table`` and the index, for a sentence."""
    return f"{table} (index {index})" if index else table


def _minutes(seconds: int) -> str:
    """``1 minute``, ``15 minutes`` (a rate per hour is stated only when an hour or more was observed)."""
    m = max(1, seconds // 60)
    return f"{m} minute{'s' if m != 1 else ''}"


def scan_summary(who: str, table: str, evidence: Mapping[str, Any], period: str, per_hour: float) -> str:
    """What ``who`` scanned on ``table`` in ``period`` (words: ``15 minutes``, ``the week``), from a scan finding's
    evidence (its logical scans, pages, segments, read units, inferred scans and page limit) and ``per_hour``."""
    logical, pages = int(evidence.get("count") or 0), int(evidence.get("pages") or 0)
    operation = evidence.get("operation")
    indexes = evidence.get("indexes")
    index = indexes[0] if isinstance(indexes, list) and len(indexes) == 1 else None
    what = "Scan" if operation == "Scan" else f"full-{'index' if index else 'table'} PartiQL statement"
    segments = int(evidence.get("total_segments") or 0)
    parallel = f" as a parallel scan of {segments} segments" if segments > 1 else ""
    pages_text = (
        f" in {pages} pages ({pages / logical:.1f} per scan)"
        if operation == "Scan" and pages != logical and logical
        else ""
    )
    units = float(evidence.get("estimated_read_units") or 0)
    summary = (
        f"{who} ran {logical} {what}{'s' if logical != 1 else ''}{parallel} on {_where(table, index)}{pages_text} "
        f"in {period} ({per_hour:.1f} per hour), an estimated {units:,.0f} read units."
    )
    inferred = int(evidence.get("inferred_scans") or 0)
    if inferred:
        summary += (
            f" {inferred} of these scans were inferred by grouping pages in time (their request parameters were "
            f"truncated, so whether a page continued a scan is not logged); a group spans at most "
            f"{SCAN_SPAN_SECONDS} seconds."
        )
    if evidence.get("limit_bounded"):
        limit = evidence.get("page_limit")
        summary += (
            f" Every page had Limit {limit} or less: each call reads at most {limit} items "
            f"(a bounded sample, e.g. the console's item browser), not the whole table."
        )
    return summary


@register(METADATA, ScanConfig)
def detect(agg: TableWindow, cfg: ScanConfig) -> list[Finding]:
    """One finding per principal and operation that scanned the table (allowlisted principals excepted)."""
    findings: list[Finding] = []
    hours = agg.window_seconds / 3600
    scans = dict(agg.scans)
    pk = _partition_key(agg)[0]
    decided: dict[tuple[str, str], tuple[str | None, str]] = {}  # -> the partition key that decided, and its source
    for principal, (extra, key, key_source) in _schema_full_scans(agg).items():
        sk = (principal, "ExecuteStatement")
        mine = scans.get(sk)
        if mine is None:
            scans[sk] = extra
        else:
            merged = ScanStats()
            merged.merge(mine)
            merged.merge(extra)
            merged.first, merged.last = min(mine.first, extra.first), max(mine.last, extra.last)
            scans[sk] = merged
        decided[sk] = (key, key_source)
    for (principal, operation), st in sorted(scans.items()):
        if principal != OTHER and any(fnmatchcase(principal, p) for p in cfg.allow_principals):
            continue
        pages = st.count
        logical = st.logical() if operation == "Scan" else pages
        per_hour = logical / hours if hours > 0 else float(logical)
        bounded = (
            operation == "Scan"
            and st.unbounded_pages == 0
            and 0 < st.limit_max <= cfg.bounded_limit
            and pages <= logical * 1.5
        )
        tier = cfg.tier(logical, per_hour)
        if bounded:
            severity = Severity.LOW if tier is Severity.HIGH else Severity.INFO
        elif tier is not None:
            severity = tier
        elif logical >= cfg.low_min_count or st.read_units >= cfg.low_read_units:
            severity = Severity.LOW
        else:
            severity = Severity.INFO
        who = "an unknown principal" if principal == "(unknown)" else principal
        if principal == OTHER:
            who = "other principals (too many to list)"
        index = sorted(st.indexes)[0] if len(st.indexes) == 1 else None
        what = "Scan" if operation == "Scan" else f"full-{'index' if index else 'table'} PartiQL statement"
        interval = agg.window_seconds / logical if logical else None
        inferred = st.inferred() if operation == "Scan" else 0
        if operation == "ExecuteStatement":
            fix = (
                "Add an equality condition on the partition key to the PartiQL WHERE clause (a SELECT without "
                "one is a full table scan), or query a GSI keyed on the filtered attribute. "
            )
            if (principal, operation) in decided:
                decided_key, key_source = decided[(principal, operation)]
                origin = "analysis config" if key_source == "config" else "key names the trail logs"
                fix += (
                    f"The partition key is {decided_key!r} (from the {origin}): these statements constrain other "
                    "attributes. "
                )
        elif bounded:
            fix = "A Limit-bounded Scan reads little; if it looks items up, a GetItem or Query on the key is cheaper. "
        else:
            fix = "Replace the Scan with a Query on a key or GSI designed for this access pattern. "
        if severity is Severity.HIGH:
            fix += "At this frequency the scan is on a request path: every logical scan reads the whole table."
        elif not bounded:
            fix += (
                f"If this is a known batch or admin job (an export, a nightly job), add {principal!r} to the scan "
                "detector's allow_principals, run it off-peak, or use an export to S3."
            )
        evidence = {
            "principal": None if principal in ("(unknown)", OTHER) else principal,
            "operation": operation,
            "count": logical,
            "source": "cloudtrail",
            "pages": pages,
            "logical_scans": logical,
            "per_hour": round(per_hour, 3),
            "mean_interval_seconds": round(interval, 3) if interval else None,
            "segments_seen": sorted(st.segments),
            "total_segments": st.total_segments or None,
            "indexes": sorted(st.indexes),
            "estimated_read_units": round(st.read_units, 1),
            "page_limit": st.limit_max or None,
            "limit_bounded": bounded,
            # how pages were grouped into logical scans: from exclusiveStartKey, segment and totalSegments as logged,
            # or (for some) inferred from their times
            "grouping": "inferred_from_time" if inferred else "logged",
            "inferred_scans": inferred,
            # 1 when the first page continued a scan begun before the window: summed over windows, that scan is
            # counted once (models.period_evidence)
            "continued_scans": int(st.opened_by_continuation and operation == "Scan"),
            "filters": sorted(st.filters),
            "window_seconds": agg.window_seconds,
        }
        if operation == "ExecuteStatement":  # the key of the statements' target: the index's when they name one
            decided_key, key_source = decided.get(
                (principal, operation), (index_partition_key(agg, index)[0] if index else pk, "")
            )
            evidence["decided_by"] = f"key_schema_{key_source}" if key_source else "no_key_condition"
            evidence["partition_key"] = decided_key
        summary = scan_summary(who, agg.table, evidence, _minutes(agg.window_seconds), per_hour)
        findings.append(
            make_finding(
                METADATA,
                agg,
                severity=severity,
                discriminator=[principal, operation],
                index=index,
                title=f"{what[0].upper()}{what[1:]}s on {_where(agg.table, index)} by {who.rsplit('/', 1)[-1]}",
                summary=summary,
                recommendation=fix,
                evidence=evidence,
                first=st.first,
                last=st.last,
            )
        )
    return findings

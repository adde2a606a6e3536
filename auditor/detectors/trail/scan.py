"""``scan``: Scans and full-table PartiQL statements, per table and principal."""

from __future__ import annotations

from fnmatch import fnmatchcase

from pydantic import Field

from auditor.aggregates.window import OTHER, TableWindow
from auditor.detectors.base import DetectorConfig, DetectorMetadata, make_finding
from auditor.detectors.registry import register
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


class ScanConfig(DetectorConfig):
    """Thresholds are scan calls per hour over the evaluated windows."""

    #: Principals (exact ARNs or shell-style patterns) whose scans are known batch or admin jobs.
    allow_principals: list[str] = Field(default_factory=list)
    high_per_hour: float = 60.0
    high_min_count: int = 10
    medium_per_hour: float = 4.0
    medium_min_count: int = 5
    low_min_count: int = 3


@register(METADATA, ScanConfig)
def detect(agg: TableWindow, cfg: ScanConfig) -> list[Finding]:
    """One finding per principal and operation that scanned the table (allowlisted principals excepted)."""
    findings: list[Finding] = []
    hours = agg.window_seconds / 3600
    for (principal, operation), st in sorted(agg.scans.items()):
        if principal != OTHER and any(fnmatchcase(principal, p) for p in cfg.allow_principals):
            continue
        per_hour = st.count / hours if hours > 0 else float(st.count)
        if st.count >= cfg.high_min_count and per_hour >= cfg.high_per_hour:
            severity = Severity.HIGH
        elif st.count >= cfg.medium_min_count and per_hour >= cfg.medium_per_hour:
            severity = Severity.MEDIUM
        elif st.count >= cfg.low_min_count:
            severity = Severity.LOW
        else:
            severity = Severity.INFO
        who = "an unknown principal" if principal == "(unknown)" else principal
        if principal == OTHER:
            who = "other principals (too many to list)"
        what = "Scan" if operation == "Scan" else "full-table PartiQL statement"
        interval = agg.window_seconds / st.count if st.count else None
        parallel = f" as a parallel scan of {st.total_segments} segments" if st.total_segments > 1 else ""
        summary = (
            f"{who} ran {st.count} {what}{'s' if st.count != 1 else ''} on {agg.table}{parallel} "
            f"in {agg.window_seconds // 60} minutes ({per_hour:.1f} per hour)."
        )
        if operation == "ExecuteStatement":
            fix = (
                "Add an equality condition on the partition key to the PartiQL WHERE clause (a SELECT without "
                "one is a full table scan), or query a GSI keyed on the filtered attribute. "
            )
        else:
            fix = "Replace the Scan with a Query on a key or GSI designed for this access pattern. "
        if severity in (Severity.HIGH, Severity.MEDIUM):
            fix += "At this frequency the scan is on a request path: every call reads the whole table."
        else:
            fix += f"If this is a known batch or admin job, add {principal!r} to the scan detector's allow_principals."
        findings.append(
            make_finding(
                METADATA,
                agg,
                severity=severity,
                discriminator=[principal, operation],
                index=sorted(st.indexes)[0] if len(st.indexes) == 1 else None,
                title=f"{what[0].upper()}{what[1:]}s on {agg.table} by {who.rsplit('/', 1)[-1]}",
                summary=summary,
                recommendation=fix,
                evidence={
                    "principal": None if principal in ("(unknown)", OTHER) else principal,
                    "operation": operation,
                    "count": st.count,
                    "source": "cloudtrail",
                    "per_hour": round(per_hour, 3),
                    "mean_interval_seconds": round(interval, 3) if interval else None,
                    "segments_seen": sorted(st.segments),
                    "total_segments": st.total_segments or None,
                    "indexes": sorted(st.indexes),
                    "window_seconds": agg.window_seconds,
                },
                first=st.first,
                last=st.last,
            )
        )
    return findings

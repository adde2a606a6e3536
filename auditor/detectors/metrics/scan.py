"""``scan`` (CloudWatch path): Scan request volume and returned items, per table.

``SuccessfulRequestLatency`` with ``Operation=Scan`` and statistic ``SampleCount`` counts successful Scan requests
(one per 1 MB page); ``ReturnedItemCount`` with ``Operation=Scan`` counts the items they returned after filtering.
CloudWatch does not say who scanned (the CloudTrail path does) nor what a Scan consumed (``Consumed*`` has no
``Operation`` dimension): a full page costs up to 128 read units eventually consistent (256 strongly consistent),
which bounds the read capacity scans can have used.
"""

from __future__ import annotations

from auditor.detectors.base import DetectorInput, DetectorMetadata, Limit, MetricsInput, make_finding
from auditor.detectors.metrics.common import iso
from auditor.detectors.registry import register
from auditor.detectors.trail.scan import ScanThresholds
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.metrics import CONSUMED, RETURNED_ITEMS, SCAN_REQUESTS

METADATA = DetectorMetadata(
    id="cw_scan",
    kind=FindingKind.SCAN,
    default_severity=Severity.MEDIUM,
    title="Scan request volume (CloudWatch)",
    risk=(
        "A Scan reads every item and pays for every item read, however few it returns. Repeated scans grow with "
        "the table, burn read capacity, and concentrate on one partition at a time, throttling the requests "
        "that share it."
    ),
    remediation=(
        "Serve the access pattern with a Query on a key or GSI designed for it; keep Scans for exports and "
        "one-off jobs, off-peak, with a small Limit. `ddb-audit analyze-trail` names the principals that scan."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-query-scan.html",
)


class CwScanConfig(ScanThresholds):
    """Thresholds are Scan requests (pages) per hour over the audited window (the CloudTrail scan defaults)."""

    #: Read units a full 1 MB Scan page consumes (eventually consistent).
    read_units_per_page: Limit = 128.0


@register(METADATA, CwScanConfig, DetectorInput.TABLE_METRICS)
def detect(data: MetricsInput, cfg: CwScanConfig) -> list[Finding]:
    """At most one finding per table: how often it was scanned, and what that can have cost."""
    profile, metrics = data.profile, data.metrics
    res = metrics.resources.get(None)
    if res is None:
        return []
    requests = res.get(f"{SCAN_REQUESTS}:Scan")
    if requests is None:
        return []
    count = round(requests.total())
    if count < cfg.low_min_count:
        return []
    hours = metrics.seconds / 3600
    per_hour = count / hours if hours > 0 else float(count)
    severity = cfg.tier(count, per_hour) or Severity.LOW
    returned = round(res.total(f"{RETURNED_ITEMS}:Scan"))
    consumed = res.total(CONSUMED["read"])
    bound = count * cfg.read_units_per_page
    active = requests.nonzero()
    share = round(min(1.0, bound / consumed), 3) if consumed > 0 else None
    summary = (
        f"{count} Scan requests on {profile.name} in {hours:g} hour{'' if hours == 1 else 's'} "
        f"({per_hour:.1f} per hour, in {len(active)} "
        f"distinct {metrics.period // 60 or 1}-minute periods), returning {returned} items "
        f"({returned / count:.1f} per request)."
    )
    if share is not None:
        summary += (
            f" At up to {cfg.read_units_per_page:g} read units per 1 MB page, scans can account for up to "
            f"{share:.0%} of the {consumed:.0f} read units the table consumed."
        )
    fix = "Replace the Scan with a Query on a key or GSI designed for this access pattern."
    if severity in (Severity.HIGH, Severity.MEDIUM):
        fix += " At this frequency the scan is on a request path: every call reads the whole table (or a page of it)."
    fix += " Run `ddb-audit analyze-trail` on the table's CloudTrail data events to see which principal scans."
    return [
        make_finding(
            METADATA,
            profile,
            severity=severity,
            discriminator={"operation": "Scan", "source": "cloudwatch"},
            title=f"Scans on {profile.name} ({per_hour:.1f} per hour)",
            summary=summary,
            recommendation=fix,
            evidence={
                "principal": None,
                "operation": "Scan",
                "count": count,
                "source": "cloudwatch",
                "per_hour": round(per_hour, 3),
                "returned_items": returned,
                "returned_items_per_request": round(returned / count, 2),
                "active_periods": len(active),
                "period_seconds": metrics.period,
                "max_read_units_from_scans": round(bound, 1),
                "consumed_read_units": round(consumed, 1),
                "max_share_of_consumed_read_units": share,
                "window_start": iso(metrics.start),
                "window_end": iso(metrics.end),
            },
            first=active[0] if active else metrics.start,
            last=(active[-1] + metrics.period) if active else metrics.end,
        )
    ]

"""``capture_cap``: a table whose scans and PartiQL statements the trail logs only one time slice in N.

The capture controller logs every Scan and PartiQL call of every table (the always-on selector), but one table may
use at most a share of what the audit budget leaves for data events (each 1 MB page of a Scan or SELECT is one
event). A table above that cap is logged one slice in N: scan jobs that run only in the other slices are not seen.
The input is the plan's figures for each capped table over one period (the controller's day); the finding states
the cap, the pages expected and what is not seen. Pure: the plan comes from :mod:`auditor.cost.plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from auditor.detectors.base import (
    Count,
    DetectorConfig,
    DetectorInput,
    DetectorMetadata,
    Table,
    epoch_to_dt,
    make_finding,
)
from auditor.detectors.registry import register
from auditor.models.finding import Finding, FindingKind, Severity, isoformat_z

__all__ = ["METADATA", "CaptureCapConfig", "CaptureCapInput", "ScanCap", "detect"]

METADATA = DetectorMetadata(
    id="capture_cap",
    kind=FindingKind.CAPTURE_CAP,
    default_severity=Severity.LOW,
    title="Scans and PartiQL of a table sampled: the capture cap is reached",
    risk=(
        "Each 1 MB page of a Scan or a SELECT is one CloudTrail data event. A large table scanned often would take "
        "the whole audit budget, so its scans and PartiQL statements are logged in some time slices only: a scan "
        "job that runs only in the other slices is not found, and scan counts of the table are samples."
    ),
    remediation=(
        "Find who scans the table (the scan findings of the logged slices name the principals) and move the job "
        "off full-table reads (a Query on an index, or an export to S3, which reads no capacity and logs no data "
        "event), or raise audit_budget_percent until the table's scans fit under the cap."
    ),
    docs_url="https://docs.aws.amazon.com/awscloudtrail/latest/userguide/logging-data-events-with-cloudtrail.html",
)


@dataclass(frozen=True, slots=True)
class ScanCap:
    """One table's scans and PartiQL above the per-table cap, as the planner costed them (pages per month)."""

    table: str
    arn: str
    expected_pages: float
    cap_pages: float
    #: Logged one slice in ``every``.
    every: int
    pages_per_scan: float
    expected_usd_month: float
    cap_usd_month: float


@dataclass(frozen=True, slots=True)
class CaptureCapInput:
    """The capped tables of a capture plan and the period it covers (epoch seconds)."""

    caps: Sequence[ScanCap]
    period_start: float
    period_end: float


class CaptureCapConfig(DetectorConfig):
    """When the finding is medium rather than low."""

    #: Medium from this N (logged one slice in N or fewer: most scans unseen).
    medium_every: Count = 10


def _place(cap: ScanCap) -> Table:
    parts = cap.arn.split(":")
    account, region = (parts[4] or None, parts[3] or None) if len(parts) > 5 else (None, None)
    return Table(account, region, cap.table)


@register(METADATA, CaptureCapConfig, DetectorInput.CAPTURE_PLAN)
def detect(data: CaptureCapInput, cfg: CaptureCapConfig) -> list[Finding]:
    """One finding per capped table over the period (its id does not depend on the figures or the period)."""
    findings = []
    for cap in sorted(data.caps, key=lambda c: c.arn):
        unseen = 1 - 1 / cap.every
        not_seen = (
            f"the scans and PartiQL statements outside one capture slice in {cap.every}: about {unseen:.0%} of them; "
            "a job that runs only in the other slices is not found"
        )
        findings.append(
            make_finding(
                METADATA,
                _place(cap),
                severity=Severity.MEDIUM if cap.every >= cfg.medium_every else Severity.LOW,
                discriminator={"source": "capture_plan"},
                title=f"Scans and PartiQL of {cap.table:.80} sampled: the capture cap is reached",
                summary=(
                    f"{cap.table}'s scans and PartiQL statements would log about {cap.expected_pages:,.0f} pages a "
                    f"month (about {cap.pages_per_scan:,.0f} pages a scan, ${cap.expected_usd_month:,.2f}), above the "
                    f"per-table cap of {cap.cap_pages:,.0f} pages (${cap.cap_usd_month:,.2f}): the trail logs them one "
                    f"slice in {cap.every}. Not seen: {not_seen}."
                ),
                recommendation=(
                    f"Find who scans {cap.table:.80} (the scan findings of the logged slices name the principals) and "
                    "move the job to a Query on an index or an export to S3, or raise audit_budget_percent until "
                    f"its scans fit under the cap (about ${cap.expected_usd_month:,.2f} a month of data events)."
                ),
                evidence={
                    "cap_pages": round(cap.cap_pages),
                    "expected_pages": round(cap.expected_pages),
                    "every": cap.every,
                    "logged_fraction": round(1 / cap.every, 4),
                    "pages_per_scan": round(cap.pages_per_scan),
                    "expected_usd_month": round(cap.expected_usd_month, 2),
                    "cap_usd_month": round(cap.cap_usd_month, 2),
                    "period_start": isoformat_z(epoch_to_dt(data.period_start)),
                    "period_end": isoformat_z(epoch_to_dt(data.period_end)),
                    "not_seen": not_seen,
                    "source": "capture_plan",
                },
                first=data.period_start,
                last=data.period_end,
            )
        )
    return findings

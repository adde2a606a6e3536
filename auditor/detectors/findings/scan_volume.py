"""CloudWatch's scan volume told on the CloudTrail scan findings that name who scans (pure).

CloudWatch counts a table's Scan requests (``cw_scan``: ``SuccessfulRequestLatency`` ``SampleCount`` with
``Operation=Scan``) but not who sent them; CloudTrail's ``scan`` findings name the principals. When a table has
both, :func:`attach_scan_volume` puts CloudWatch's count on each CloudTrail ``Scan`` finding of that table
(``evidence.cloudwatch_scans``, and a sentence in the summary: "CloudWatch counted X Scan requests ...; CloudTrail
attributes Y Scan requests to A and B ...", each count with its own period: CloudWatch's audited window, and the
CloudTrail findings' latest windows, whose ``pages`` they count) and drops the CloudWatch finding, which
would otherwise be a scanner without a principal. A table that CloudTrail does not show scanning keeps its
CloudWatch finding. :func:`with_stored` keeps the attachment on a later CloudTrail sighting of the same finding while
CloudWatch's count is current.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from auditor.models.finding import Finding, FindingKind, isoformat_z, utc

__all__ = ["attach_scan_volume", "is_volume", "with_stored"]

_SENTENCE = " CloudWatch counted "


def is_volume(f: Finding) -> bool:
    """A CloudWatch scan-volume finding (no principal)."""
    return f.kind is FindingKind.SCAN and f.evidence.get("source") == "cloudwatch"


def _attributed(f: Finding) -> bool:
    return (
        f.kind is FindingKind.SCAN
        and f.evidence.get("source") == "cloudtrail"
        and f.evidence.get("operation") == "Scan"
        and isinstance(f.evidence.get("principal"), str)
    )


def _compatible(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


def _same_table(a: Finding, b: Finding) -> bool:
    return a.table == b.table and _compatible(a.account, b.account) and _compatible(a.region, b.region)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


def _short(principal: str) -> str:
    return principal.rsplit("/", 1)[-1] if principal.startswith("arn:") else principal


def _span(start: datetime, end: datetime) -> str:
    return (
        f"from {start:%Y-%m-%d %H:%M} to {end:%H:%M} UTC"
        if start.date() == end.date()
        else (f"from {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC")
    )


def _pages(f: Finding) -> int:
    return _int(f.evidence.get("pages")) or _int(f.evidence.get("count"))


def _window(f: Finding) -> tuple[datetime, datetime]:
    """The period ``evidence.pages`` counts: the finding's latest window (a stored finding's first_seen is its whole
    history's), at most ``window_seconds`` before its last_seen."""
    seconds = _int(f.evidence.get("window_seconds"))
    start = max(f.first_seen, f.last_seen - timedelta(seconds=seconds)) if seconds else f.first_seen
    return start, f.last_seen


def _when(text: Any) -> datetime:
    return utc(datetime.fromisoformat(str(text).replace("Z", "+00:00")))


def _sentence(volume: dict[str, Any]) -> str:
    names = [f"{_short(str(p['principal']))} ({_int(p['pages']):,})" for p in volume["principals"]]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
    return (
        f"{_SENTENCE.strip()} {_int(volume['count']):,} Scan requests on the table "
        f"{_span(_when(volume['period_start']), _when(volume['period_end']))}; CloudTrail attributes "
        f"{_int(volume['attributed_pages']):,} Scan requests to {listed} "
        f"{_span(_when(volume['attributed_start']), _when(volume['attributed_end']))}."
    )


def _with_volume(f: Finding, volume: dict[str, Any]) -> Finding:
    base = f.summary.split(_SENTENCE, 1)[0]
    evidence = {**f.evidence, "cloudwatch_scans": volume}
    return f.model_copy(update={"evidence": evidence, "summary": f"{base} {_sentence(volume)}"})


def attach_scan_volume(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with each CloudWatch scan-volume finding attached to its table's CloudTrail ``Scan`` findings
    (and dropped); a volume finding of a table without them is kept. Order otherwise unchanged."""
    volumes = [f for f in findings if is_volume(f)]
    if not volumes:
        return list(findings)
    attached: dict[str, dict[str, Any]] = {}
    folded: set[str] = set()
    for v in volumes:
        scanners = [f for f in findings if _attributed(f) and _same_table(f, v)]
        if not scanners:
            continue
        folded.add(v.id)
        window_start = v.evidence.get("window_start")
        window_end = v.evidence.get("window_end")
        volume = {
            "finding_id": v.id,
            "count": _int(v.evidence.get("count")),
            "period_start": window_start if isinstance(window_start, str) else isoformat_z(v.first_seen),
            "period_end": window_end if isinstance(window_end, str) else isoformat_z(v.last_seen),
            "returned_items": _int(v.evidence.get("returned_items")),
            "attributed_pages": sum(_pages(s) for s in scanners),
            "attributed_start": isoformat_z(min(_window(s)[0] for s in scanners)),
            "attributed_end": isoformat_z(max(_window(s)[1] for s in scanners)),
            "principals": [
                {"principal": s.evidence["principal"], "pages": _pages(s)}
                for s in sorted(scanners, key=lambda s: (-_pages(s), str(s.evidence["principal"])))
            ],
        }
        for s in scanners:
            attached[s.id] = volume
    out = []
    for f in findings:
        if f.id in folded:
            continue
        out.append(_with_volume(f, attached[f.id]) if f.id in attached else f)
    return out


def with_stored(stored: Finding | None, seen: Finding, max_age_seconds: float) -> Finding:
    """``seen`` with the stored finding's CloudWatch scan volume when the sighting lacks one and it is current (its
    period ended no more than ``max_age_seconds`` before the sighting's last_seen)."""
    if stored is None or not _attributed(seen) or "cloudwatch_scans" in seen.evidence:
        return seen
    volume = stored.evidence.get("cloudwatch_scans")
    if not isinstance(volume, dict) or not isinstance(volume.get("principals"), list):
        return seen
    try:
        end = _when(volume["period_end"])
        _sentence(volume)
    except (KeyError, ValueError, TypeError):
        return seen
    if end.timestamp() < seen.last_seen.timestamp() - max_age_seconds:
        return seen
    return _with_volume(seen, volume)

"""Sampling-aware findings: what a finding found in a partly captured window says, and how sure it is.

Pure functions (no boto3, no clock). Scan findings stay exact (the always-on selector); counts of the other findings
are estimates ``n / f`` with a 95 % margin; rates and shares are measured over the captured seconds only. The model
and its assumption are in docs/cost.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from auditor.models.finding import Finding, FindingKind

__all__ = ["EXACT_KINDS", "Z95", "Estimate", "apply_capture", "estimate"]

#: Two-sided 95 % normal quantile.
Z95 = 1.96
#: Kinds whose calls the always-on selector logs in full (Scan and the PartiQL operations).
EXACT_KINDS = frozenset({FindingKind.SCAN})
#: Unit of each kind's counted measure (:func:`auditor.models.finding.measure`), for the text.
UNITS = {
    FindingKind.THROTTLING: "throttled calls",
    FindingKind.HOT_KEY: "requests to the key",
    FindingKind.LOW_CARDINALITY_KEY: "key-identified requests",
    FindingKind.ITEM_SIZE_EXCEEDED: "rejected writes",
}


@dataclass(frozen=True, slots=True)
class Estimate:
    """``observed`` events in a captured fraction ``fraction``: about ``value`` (± ``margin``, 95 %)."""

    observed: int
    fraction: float
    value: int
    margin: int

    def text(self, unit: str) -> str:
        if self.fraction >= 1:
            return f"{self.value:,} {unit}"
        return f"about {self.value:,} (±{self.margin:,}) {unit}"


def _round_to(value: float, step: int) -> int:
    return int(round(value / step) * step) if step > 1 else round(value)


def estimate(observed: int, fraction: float) -> Estimate:
    """The estimate of a count from its captured part (see the module docstring).

    The value is rounded to the margin's precision (two significant digits of the margin): 11,964 ± 812 reads
    "about 12,000 (±810)". ``fraction`` must be in (0, 1]; 1 is exact.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"captured fraction must be in (0, 1], got {fraction}")
    if fraction >= 1:
        return Estimate(observed, 1.0, observed, 0)
    raw = observed / fraction
    margin = Z95 * math.sqrt(observed * (1 - fraction)) / fraction
    if observed == 0:
        margin = Z95 * (1 - fraction) / fraction  # nothing seen: the interval still is not empty
    step = 10 ** max(0, math.floor(math.log10(margin)) - 1) if margin >= 1 else 1
    return Estimate(observed, fraction, _round_to(raw, step), int(math.ceil(margin / step) * step))


def apply_capture(finding: Finding, captured_seconds: float, window_seconds: float) -> Finding:
    """``finding`` (found in a window of which ``captured_seconds`` were captured) with its counts scaled, its
    uncertainty stated and a sentence that says so; a scan finding states that it is exact. Unchanged when the
    whole window was captured."""
    if window_seconds <= 0 or captured_seconds >= window_seconds:
        return finding
    fraction = max(0.0, captured_seconds) / window_seconds
    capture: dict[str, Any] = {
        "captured_fraction": round(fraction, 4),
        "captured_seconds": round(captured_seconds, 1),
        "window_seconds": window_seconds,
    }
    if finding.kind in EXACT_KINDS:
        capture["basis"] = "exact: scans and PartiQL are logged whatever the capture plan"
        return finding.model_copy(update={"evidence": {**finding.evidence, "capture": capture}})
    minutes = f"{captured_seconds / 60:g} of {window_seconds / 60:g} minutes"
    if fraction <= 0:  # nothing but the always-on selector's calls: no key traffic to scale
        capture["basis"] = "sampled: no key traffic captured in this window"
        summary = f"{finding.summary} Sampled: none of this window's key traffic was captured."
        return finding.model_copy(update={"summary": summary, "evidence": {**finding.evidence, "capture": capture}})
    totals = finding.totals
    unit = UNITS.get(finding.kind, "events")
    est = estimate(totals.count if totals is not None else 0, fraction)
    capture.update(
        basis="sampled",
        observed=est.observed,
        estimated=est.value,
        margin=est.margin,
        confidence=0.95,
    )
    summary = (
        f"{finding.summary} Sampled: the trail captured {minutes} of this window ({fraction:.0%}); the counts "
        f"above are what was captured, {est.text(unit)} in the whole window if the traffic was steady "
        f"(95 % interval); rates and shares are measured over the captured minutes only."
    )
    update: dict[str, Any] = {"summary": summary, "evidence": {**finding.evidence, "capture": capture}}
    if totals is not None:
        base = totals.share_base
        scaled: dict[str, Any] = {
            "count": est.value,
            "margin": est.margin,
            "share_base": None if base is None else round(base / fraction),
        }
        if totals.peak_per_hour is not None:
            scaled["peak_per_hour"] = round(totals.peak_per_hour / fraction, 3)
        update["totals"] = totals.model_copy(update=scaled)
    return finding.model_copy(update=update)

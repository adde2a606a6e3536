"""A finding stated for a period (pure): the period's totals, its severity and, for a throttling story, its cause.

Every output that names a period uses :func:`for_period`: ``analyze-trail`` (the input), the service's weekly report
and findings (the ISO week), the replay (the input). The rules and why they are these:
:meth:`auditor.models.finding.Finding.over_period` (the severity: the highest any window reached) and
:func:`auditor.detectors.findings.throttling_story.over_period` (the cause: the one with the most throttled requests
over the period's windows).
"""

from __future__ import annotations

from auditor.detectors.findings import throttling_story
from auditor.models.finding import Finding, Totals

__all__ = ["for_period"]


def for_period(finding: Finding, totals: Totals | None) -> Finding:
    """``finding`` with ``totals`` (the period's; None: nothing counted in it) and what they decide for the period."""
    return throttling_story.over_period(finding.over_period(totals))

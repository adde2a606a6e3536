"""The weekly audit report: a pure model (:mod:`.model`), inline SVG charts (:mod:`.charts`) and the HTML and
Markdown renderers (:mod:`.render`, Jinja2 templates in ``templates/``)."""

from auditor.report.model import (
    AuditorUsage,
    CapacitySeries,
    CostRates,
    IsoWeek,
    ThrottleCount,
    WeeklyReport,
    build_report_from_findings,
    parse_findings_document,
)
from auditor.report.report_pages import render_html, render_markdown, write_report

__all__ = [
    "AuditorUsage",
    "CapacitySeries",
    "CostRates",
    "IsoWeek",
    "ThrottleCount",
    "WeeklyReport",
    "build_report_from_findings",
    "parse_findings_document",
    "render_html",
    "render_markdown",
    "write_report",
]

"""The weekly audit report: a pure model (:mod:`.model`, built from :mod:`.inputs` by :mod:`.sections` into
:mod:`.contents`), inline SVG charts (:mod:`.charts`) and the HTML and Markdown renderers (:mod:`.report_pages`,
Jinja2 templates in ``templates/``)."""

from auditor.report.auditor_cost import AuditorUsage, CostRates
from auditor.report.inputs import CapacitySeries, ThrottleCount, parse_findings_document
from auditor.report.model import IsoWeek, WeeklyReport, build_report_from_findings
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

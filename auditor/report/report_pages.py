"""Render a ``WeeklyReport`` as a self-contained HTML file (inline SVG charts, no JavaScript) and as Markdown.

Both use Jinja2 templates from ``auditor/report/templates``. The HTML environment autoescapes every value; the
only markup inserted as is comes from :mod:`auditor.report.charts`, which escapes every label itself. The
Markdown environment escapes values with the ``md`` filter (pipes, brackets, emphasis characters, angle brackets)
so a table name cannot break a table or smuggle in HTML. Both drop control and bidirectional formatting characters
from every value they print (the environments' ``finalize``, :func:`auditor.escaping.drop_controls`).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from auditor.escaping import drop_controls, report_text
from auditor.findings_text import shorten
from auditor.lifecycle import STATUS_MEANINGS, FindingStatus
from auditor.models.finding import KIND_LABELS, REQUIRED_EVIDENCE, Finding, FindingKind, Severity
from auditor.report.auditor_cost import ledger_period, ledger_periods, priced_hours
from auditor.report.charts import Chart, ReportCharts, compact, human_bytes, report_charts
from auditor.report.contents import STATUSES, WHAT_IF_GROWTHS, Delta
from auditor.report.figures import format_key
from auditor.report.inputs import THROTTLE_SOURCES
from auditor.report.model import WeeklyReport

HTML_NAME = "report.html"
MARKDOWN_NAME = "report.md"

#: The lifecycle's status words (auditor.lifecycle.FindingStatus), the same in every output.
STATUS_LABELS = {str(s): s.label for s in FindingStatus}
STATUS_HINTS = {str(k): v for k, v in STATUS_MEANINGS.items()}

# ------------------------------------------------------------------------------------------------ filters


def money(value: float | None, cents: bool = True) -> str:
    if value is None:
        return "-"
    if not cents or abs(value) >= 1000:
        return f"${value:,.0f}"
    if 0 < abs(value) < 0.01:
        return "<$0.01" if value > 0 else "-<$0.01"
    return f"${value:,.2f}"


def num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def pct(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 100:.1f}%" if value < 0.1 else f"{value * 100:.0f}%"


def when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def day(value: datetime) -> str:
    return value.strftime("%a %d %b %Y")


def md(value: object) -> str:
    """Escape text for Markdown (CommonMark/GFM), including inside table cells; newlines become spaces."""
    text = report_text(value)
    out = []
    for i, ch in enumerate(text):
        if ch == "_":
            # An underscore inside a word (PAY_PER_REQUEST) cannot start emphasis; leave it readable.
            inside = 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
            out.append("_" if inside else "\\_")
        elif ch in "\\`*[]<>|&~":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def md_code(value: object) -> str:
    """An inline code span that survives any backticks and pipes in the value."""
    text = report_text(value).replace("|", "\\|")
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def delta_text(d: Delta) -> str:
    c = d.change
    if c is None:
        return "no data for last week"
    if abs(c) < 1e-9:
        return "no change"
    arrow = "▲" if c > 0 else "▼"
    amount = money(abs(c), cents=False) if d.unit == "usd" else f"{abs(c):,.0f}"
    return f"{arrow} {amount} vs last week"


def value_text(d: Delta, value: float | None) -> str:
    if value is None:
        return "-"
    return money(value, cents=False) if d.unit == "usd" else f"{value:,.0f}"


# ------------------------------------------------------------------------------------------------ evidence


#: Evidence field -> the label a person reads (other fields: the name with spaces, capitalised).
EVIDENCE_LABELS: dict[str, str] = {
    "size_bytes": "Item size",
    "limit_bytes": "Size limit",
    "bytes_per_day": "Growth per day (bytes)",
    "days_to_limit": "Days to the limit",
    "window_seconds": "Period",
    "mean_interval_seconds": "Mean interval between calls",
    "per_hour": "Calls per hour (over the period)",
    "count": "Calls",
    "requests": "Requests",
    "key_requests": "Key-identified requests",
    "distinct_partition_keys": "Distinct partition keys",
    "headroom_factor": "Headroom (traffic multiplier before the limit)",
    "busiest_value_headroom_factor": "Busiest value's headroom (traffic multiplier)",
    "read_throttle_events": "Throttled reads",
    "write_throttle_events": "Throttled writes",
    "throttled_share": "Share of calls throttled",
    "cause_source": "Cause decided by",
    "missing_to_decide": "Missing to decide the cause",
    "top_keys": "Most throttled keys",
    "error_codes": "Error codes",
    "sample_messages": "Sample error messages",
    "related_finding_ids": "Related findings",
    "current_mode": "Billing mode now",
    "recommended_mode": "Recommended billing mode",
    "current_class": "Table class now",
    "recommended_class": "Recommended table class",
    "monthly_cost_current": "Cost now (per month)",
    "monthly_cost_recommended": "Cost after the change (per month)",
    "monthly_savings": "Saving (per month)",
    "monthly_cost_on_demand": "Cost on demand (per month)",
    "monthly_cost_provisioned_current": "Cost as provisioned now (per month)",
    "monthly_cost_provisioned_simulated": "Cost with auto scaling, simulated (per month)",
    "days_analyzed": "Days of data analysed",
    "confidence": "Confidence",
    "preliminary": "Preliminary (too little data to alert)",
    "peak_minute": "Busiest minute",
    "peak_minute_requests": "Requests in the busiest minute",
    # the peak's sub-period (a busiest second or minute: evidence.peak_window) is named beside the label
    "peak_reads_per_second": "Peak reads per second",
    "peak_writes_per_second": "Peak writes per second",
    "reads_per_second": "Reads per second",
    "writes_per_second": "Writes per second",
    "requests_per_second": "Requests per second",
    "estimate_error": "Estimate error (requests)",
    "rising_pair_share": "Share of rising samples",
    "largest_step_share": "Largest single step's share",
    "span_days": "Days sampled",
    "samples": "Samples",
    "projected_limit_at": "Reaches the limit around",
    "growth_attribute": "Growing attribute",
    "method": "Method",
    "simulation": "Simulation",
    "pricing": "Prices",
    "source": "Source",
    "principal": "Principal",
    "operation": "Operation",
    "key": "Key",
    "share": "Share",
    "key_attribute": "Key attribute",
    "values": "Values",
}


def _duration(seconds: float) -> str:
    """``15 minutes``, ``1 hour``, ``2.5 hours``, ``45 seconds``."""
    if seconds < 60:
        n, unit = seconds, "second"
    elif seconds < 3600:
        n, unit = seconds / 60, "minute"
    elif seconds < 172_800:
        n, unit = seconds / 3600, "hour"
    else:
        n, unit = seconds / 86_400, "day"
    text = f"{n:,.1f}".removesuffix(".0")
    return f"{text} {unit}{'' if text == '1' else 's'}"


def evidence_label(name: str) -> str:
    """The label of an evidence field."""
    return EVIDENCE_LABELS.get(name) or name.replace("_", " ").capitalize()


def _plain(value: Any, name: str = "") -> str:
    """Nested evidence as readable text: ``a: 1, b: 2`` for objects, ``x; y`` for lists of objects."""
    if value is None:
        return "-"
    if name == "key" or name.endswith("_key"):
        return format_key(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and name.endswith("_seconds") and value >= 0:
        return _duration(float(value))
    if isinstance(value, (int, float)) and name == "confidence" and 0 <= value <= 1:
        return pct(float(value))
    if isinstance(value, float):
        if name in ("share", "throttled_share") and 0 <= value <= 1:
            return pct(value)
        if name.startswith("monthly_") or name.endswith("_cost"):
            return money(value)
        return _figure(value)
    if isinstance(value, int):
        if name.endswith("bytes"):
            return f"{value:,} bytes ({human_bytes(value)})"
        return f"{value:,}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_plain(v, str(k))}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        sep = (
            "; "
            if any(isinstance(v, (Mapping, list, tuple)) or (isinstance(v, str) and len(v) > 40) for v in value)
            else ", "
        )
        return sep.join(_plain(v, name) for v in value) if value else "none"
    return str(value)


def _figure(value: float) -> str:
    """A float of the evidence: two decimals without trailing zeros, at least two significant digits under 0.01 (a
    figure that is not 0 never reads 0: a utilisation of 0.0009 is ``0.0009``), whole above a million."""
    if abs(value) >= 1e6:
        return f"{value:,.0f}"
    digits = 1 - math.floor(math.log10(abs(value))) if 0 < abs(value) < 0.01 else 2
    return f"{value:,.{digits}f}".rstrip("0").rstrip(".")


def _evidence_value(name: str, value: Any) -> str:
    text = _plain(value, name)
    return shorten(text, 400)


#: The peak rates measured over a finding's ``peak_window`` (its busiest second, or minute).
_PEAK_RATES = ("peak_reads_per_second", "peak_writes_per_second")


def evidence_items(finding: Finding) -> list[tuple[str, str]]:
    """The evidence as (label, text) pairs: the required fields first, then the rest (empty ones left out). A figure
    of a sub-period (``evidence.sub_periods``: the busiest second, minute or window) says which in its label."""
    ev = finding.evidence
    sub: dict[str, Any] = dict(ev["sub_periods"]) if isinstance(ev.get("sub_periods"), Mapping) else {}
    if isinstance(ev.get("peak_window"), str):  # a peak rate's own sub-period, also in a one-window finding
        sub.update({n: ev["peak_window"] for n in _PEAK_RATES if n in ev and n not in sub})
    required = REQUIRED_EVIDENCE.get(FindingKind(finding.kind), ())
    optional = sorted(n for n in ev if n not in required and n != "sub_periods" and ev[n] not in (None, [], {}, ""))
    names = [n for n in required if n in ev] + optional
    return [(evidence_label(n) + (f" ({sub[n]})" if n in sub else ""), _evidence_value(n, ev[n])) for n in names]


def headline(report: WeeklyReport) -> str:
    """One sentence for the top of the report (and for e-mail or chat summaries)."""
    s = report.summary
    if not s.open_findings:
        return f"No open findings in week {report.week.label}; {s.resolved} resolved."
    urgent = [f"{s.by_severity[sev]} {sev.value}" for sev in (Severity.CRITICAL, Severity.HIGH) if s.by_severity[sev]]
    parts = [
        f"{s.open_findings} open finding{'s' if s.open_findings != 1 else ''} on {s.tables_with_findings} "
        f"table{'s' if s.tables_with_findings != 1 else ''}" + (f" ({', '.join(urgent)})" if urgent else ""),
        f"{s.new} new",
    ]
    if s.worsened:
        parts.append(f"{s.worsened} worsened")
    if s.resolved:
        parts.append(f"{s.resolved} resolved")
    text = ", ".join(parts) + "."
    if s.monthly_savings > 0:
        text += f" Up to {money(s.monthly_savings, cents=False)}/month can be saved."
    if report.actions:
        text += f" Start with: {report.actions[0].headline}."
    return text


# ------------------------------------------------------------------------------------------------ environments


def _environment(*, html: bool) -> Environment:
    """Jinja2 over the report templates: undefined names are errors, every printed value goes through
    :func:`_finalize`; HTML autoescapes, Markdown escapes each value with its ``md``/``mdcode`` filters instead."""
    env = Environment(
        loader=PackageLoader("auditor.report", "templates"),
        autoescape=html,
        undefined=StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=not html,
    )
    env.filters.update(money=money, num=num, pct=pct, when=when, day=day, compact=compact, bytes=human_bytes)
    env.filters.update(hours=priced_hours, ledger_periods=ledger_periods, ledger_days=ledger_period)
    if not html:
        env.filters.update(md=md, mdcode=md_code)
    env.globals.update(
        STATUSES=STATUSES,
        STATUS_LABELS=STATUS_LABELS,
        STATUS_HINTS=STATUS_HINTS,
        KIND_LABELS=KIND_LABELS,
        SEVERITIES=list(Severity),
        evidence_items=evidence_items,
        delta_text=delta_text,
        value_text=value_text,
        headline=headline,
        WHAT_IF_GROWTHS=WHAT_IF_GROWTHS,
        THROTTLE_SOURCES=THROTTLE_SOURCES,
    )
    return env


def _finalize(value: Any) -> Any:
    """Every printed value without control characters (markup stays markup: its text is cleaned the same way)."""
    if isinstance(value, Markup):
        return Markup(drop_controls(str(value)))
    if isinstance(value, str):
        return drop_controls(value)
    return value


@cache
def html_environment() -> Environment:
    """Jinja2 for HTML: autoescape on, undefined names are errors."""
    return _environment(html=True)


@cache
def markdown_environment() -> Environment:
    """Jinja2 for Markdown: no HTML autoescape (values go through the ``md`` filter instead)."""
    return _environment(html=False)


def _context(report: WeeklyReport, charts: ReportCharts) -> dict[str, Any]:
    return {
        "report": report,
        "charts": charts,
        "svg": _svg_markup,
        "period": f"{day(report.week.start)} to {day(report.week.end - timedelta(days=1))}"
        + (" (week in progress)" if report.generated_at < report.week.end else ""),
        "deltas": {d.metric: d for d in report.deltas},
    }


def _svg_markup(chart: Chart) -> Markup:
    """The chart's SVG, which :mod:`auditor.report.charts` has already escaped, as safe markup."""
    return Markup(chart.svg)


def render_html(report: WeeklyReport) -> str:
    """The report as one self-contained HTML document (inline CSS and SVG, no scripts, no external assets)."""
    return html_environment().get_template("report.html.j2").render(_context(report, report_charts(report)))


def render_markdown(report: WeeklyReport) -> str:
    """The report as Markdown with the same content; each chart becomes a table."""
    return markdown_environment().get_template("report.md.j2").render(_context(report, report_charts(report)))


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        Path(tmp).chmod(0o644)  # mkstemp creates 0600; a report is meant to be read and shared
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_report(report: WeeklyReport, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``report.html`` and ``report.md`` into ``out_dir`` (created if needed); each file is complete or absent."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    html_text, md_text = render_html(report), render_markdown(report)
    html_path, md_path = out / HTML_NAME, out / MARKDOWN_NAME
    _write_atomic(html_path, html_text)
    _write_atomic(md_path, md_text)
    return html_path, md_path

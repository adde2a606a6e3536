"""Inline SVG charts for the weekly report (pure: data in, markup out).

Every chart is a complete ``<svg>`` element with ``role="img"``, a ``<title>`` and a ``<desc>`` referenced by
``aria-labelledby``, explicit non-zero ``width``/``height`` and a matching ``viewBox``. Every piece of text that
reaches the markup goes through :func:`html.escape` (table names, principals and keys are untrusted). Each chart
also carries its data as a small table (``headers``/``rows``): the HTML report offers it next to the picture and
the Markdown report prints it instead of the picture.

The palette is Okabe-Ito (distinguishable with the common colour-vision deficiencies); lines differ by dash
pattern as well as colour.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from html import escape
from itertools import count

from auditor.detectors.stream.item_growth import days_text
from auditor.findings_text import shorten
from auditor.models.finding import Severity
from auditor.report.contents import ITEM_LIMIT_BYTES, LOGICAL_SCANS, CapacityPanel
from auditor.report.model import WeeklyReport

WIDTH = 940
HALF_WIDTH = 470
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Arial, sans-serif"
CHAR_W = 7.3  # average glyph width at 12px (DejaVu Sans is wide), for layout estimates
INK, MUTED, GRID = "#1f2937", "#6b7280", "#e5e7eb"

BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, GREY = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#8c8c8c",
)
PALETTE = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, GREY)

SEVERITY_COLORS: dict[Severity, str] = {
    Severity.CRITICAL: "#991b1b",
    Severity.HIGH: "#c2410c",
    Severity.MEDIUM: "#b7791f",
    Severity.LOW: "#2563eb",
    Severity.INFO: "#64748b",
}

CAUSE_COLORS: dict[str, str] = {
    "key_range": VERMILLION,
    "provisioned": BLUE,
    "account_limit": PURPLE,
    "on_demand_max": ORANGE,
    "gsi_backpressure": GREEN,
    "unknown": GREY,
}


@dataclass(frozen=True, slots=True)
class Chart:
    """One rendered chart: the SVG markup (already escaped) plus its data as a table."""

    chart_id: str
    title: str
    description: str
    svg: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: float
    color: str = BLUE
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Segment:
    name: str
    values: Sequence[float]
    color: str


@dataclass(frozen=True, slots=True)
class Line:
    name: str
    values: Sequence[float | None]
    color: str
    dashed: bool = False
    area: bool = False


# ------------------------------------------------------------------------------------------------ formatting


def e(text: object) -> str:
    """Escape for SVG/HTML text and attribute values."""
    return escape(str(text), quote=True)


def fit(text: str, max_chars: int) -> str:
    """Shorten to ``max_chars`` with an ellipsis (the full text goes into a tooltip)."""
    return shorten(text, max(2, max_chars))


def compact(value: float) -> str:
    """1234 -> 1.2k, 2500000 -> 2.5M; small numbers keep up to one decimal."""
    v = abs(value)
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{value / div:.1f}".rstrip("0").rstrip(".") + suffix
    if v >= 10 or v == int(v):
        return f"{value:.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def human_bytes(value: float) -> str:
    """Bytes in KB (1 KB = 1,024 bytes, as DynamoDB counts item sizes)."""
    if value >= 1024:
        return f"{value / 1024:,.0f} KB"
    return f"{value:,.0f} B"


def whole(value: float) -> str:
    """A count, whole and with thousands separators: 12345 -> 12,345."""
    return f"{value:,.0f}"


def percent(value: float) -> str:
    return f"{value * 100:.0f}%" if value >= 0.01 or value == 0 else f"{value * 100:.1f}%"


def nice_ticks(max_value: float, target: int = 5, *, integer: bool = False) -> list[float]:
    """0 .. a round maximum >= ``max_value`` in 1/2/2.5/5 x 10^k steps (whole steps when ``integer``)."""
    if max_value <= 0 or not math.isfinite(max_value):
        return [0.0, 1.0]
    raw = max_value / target
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    if integer:
        step = max(1.0, math.ceil(step))
    n = math.ceil(max_value / step - 1e-9)
    return [i * step for i in range(n + 1)]


def _text(
    x: float, y: float, text: str, *, anchor: str = "start", fill: str = INK, size: int = 12, weight: str = ""
) -> str:
    w = f' font-weight="{weight}"' if weight else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}" font-size="{size}"{w}>{e(text)}</text>'


def _chart(
    chart_id: str,
    title: str,
    description: str,
    height: float,
    body: list[str],
    width: int,
    headers: tuple[str, ...],
    rows: tuple[tuple[str, ...], ...],
) -> Chart:
    """The chart: ``body`` in an accessible SVG (titled and described), with the table of its values."""
    h = max(1, math.ceil(height))
    svg = (
        f'<svg class="chart" role="img" aria-labelledby="{chart_id}-title {chart_id}-desc" '
        f'width="{width}" height="{h}" viewBox="0 0 {width} {h}" '
        f'font-family="{e(FONT)}" font-size="12" preserveAspectRatio="xMinYMin meet">'
        f'<title id="{chart_id}-title">{e(title)}</title><desc id="{chart_id}-desc">{e(description)}</desc>'
        f'<rect x="0" y="0" width="{width}" height="{h}" fill="#ffffff"/>' + "".join(body) + "</svg>"
    )
    return Chart(chart_id, title, description, svg, headers, rows)


def _value_grid(
    ticks: Sequence[float],
    left: float,
    plot_w: float,
    scale_max: float,
    top: float,
    axis_y: float,
    value_label: Callable[[float], str],
) -> list[str]:
    """A horizontal bar chart's vertical grid lines, one per tick, each labelled under the axis."""
    body: list[str] = []
    for t in ticks:
        x = left + plot_w * t / scale_max
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{axis_y:.1f}" stroke="{GRID}"/>')
        body.append(_text(x, axis_y + 16, value_label(t), anchor="middle", fill=MUTED, size=11))
    return body


def _legend(items: Sequence[tuple[str, str, bool]], x0: float, y: float, max_x: float) -> tuple[list[str], float]:
    """Legend swatches (name, colour, dashed) laid out left to right, wrapping; returns (markup, height used)."""
    out: list[str] = []
    x, row = x0, 0
    for name, color, dashed in items:
        label = fit(name, 40)
        w = 22 + len(label) * CHAR_W + 16
        if x + w > max_x and x > x0:
            x, row = x0, row + 1
        yy = y + row * 18
        if dashed:
            out.append(
                f'<line x1="{x:.1f}" y1="{yy - 4:.1f}" x2="{x + 16:.1f}" y2="{yy - 4:.1f}" stroke="{color}" '
                'stroke-width="2.5" stroke-dasharray="5 3"/>'
            )
        else:
            out.append(f'<rect x="{x:.1f}" y="{yy - 10:.1f}" width="12" height="12" rx="2" fill="{color}"/>')
        out.append(_text(x + 20, yy, label, fill=INK))
        x += w
    return out, (row + 1) * 18


# ------------------------------------------------------------------------------------------------ primitives


def bar_chart(
    chart_id: str,
    title: str,
    description: str,
    bars: Sequence[Bar],
    *,
    value_label: Callable[[float], str] = compact,
    axis_max: float | None = None,
    marker: tuple[float, str] | None = None,
    headers: tuple[str, str] = ("Label", "Value"),
    integer: bool = False,
    width: int = WIDTH,
) -> Chart:
    """Horizontal bars, one per label, with an x axis and an optional vertical marker line (a limit)."""
    label_chars = min(38, max((len(b.label) for b in bars), default=8))
    left = 14 + label_chars * CHAR_W + 10
    right = width - 78
    top = 10 + (18 if marker else 0)
    row_h = 26
    top_value = max([b.value for b in bars] + [marker[0] if marker else 0.0] + [0.0])
    ticks = nice_ticks(axis_max if axis_max is not None else top_value, integer=integer)
    scale_max = ticks[-1] or 1.0
    plot_w = right - left
    height = top + len(bars) * row_h + 34
    axis_y = top + len(bars) * row_h + 4
    body = _value_grid(ticks, left, plot_w, scale_max, top, axis_y, value_label)
    for i, b in enumerate(bars):
        y = top + i * row_h
        w = max(0.0, plot_w * min(b.value, scale_max) / scale_max)
        tip = b.detail or f"{b.label}: {value_label(b.value)}"
        body.append(f"<g><title>{e(tip)}</title>")
        body.append(_text(left - 8, y + 16, fit(b.label, label_chars), anchor="end"))
        if b.value > 0:
            body.append(
                f'<rect x="{left:.1f}" y="{y + 4:.1f}" width="{max(w, 2.0):.1f}" height="16" rx="2" fill="{b.color}"/>'
            )
        body.append(_text(left + w + 6, y + 16, value_label(b.value), fill=INK if b.value > 0 else MUTED, weight="600"))
        body.append("</g>")
    body.append(f'<line x1="{left:.1f}" y1="{top - 4}" x2="{left:.1f}" y2="{axis_y:.1f}" stroke="{MUTED}"/>')
    if marker is not None:
        mx = left + plot_w * min(marker[0], scale_max) / scale_max
        body.append(
            f'<line x1="{mx:.1f}" y1="{top - 10}" x2="{mx:.1f}" y2="{axis_y:.1f}" stroke="{VERMILLION}" '
            'stroke-width="2" stroke-dasharray="4 3"/>'
        )
        body.append(_text(mx, top - 12, marker[1], anchor="end" if mx > width / 2 else "start", fill=VERMILLION))
    rows = tuple((b.label, value_label(b.value)) for b in bars)
    return _chart(chart_id, title, description, height, body, width, headers, rows)


def stacked_bar_chart(
    chart_id: str,
    title: str,
    description: str,
    categories: Sequence[str],
    segments: Sequence[Segment],
    *,
    value_label: Callable[[float], str] = compact,
    category_header: str = "Table",
    integer: bool = False,
    width: int = WIDTH,
) -> Chart:
    """Horizontal stacked bars: one bar per category, one coloured segment per series, legend on top."""
    segments = [s for s in segments if any(v > 0 for v in s.values)]
    label_chars = min(34, max((len(c) for c in categories), default=8))
    left = 14 + label_chars * CHAR_W + 10
    right = width - 78
    legend, legend_h = _legend([(s.name, s.color, False) for s in segments], left, 18, width - 10)
    top = 8 + legend_h + 6
    row_h = 28
    totals = [sum(s.values[i] for s in segments) for i in range(len(categories))]
    ticks = nice_ticks(max(totals, default=0.0), integer=integer)
    scale_max = ticks[-1] or 1.0
    plot_w = right - left
    axis_y = top + len(categories) * row_h + 4
    body = [*legend, *_value_grid(ticks, left, plot_w, scale_max, top, axis_y, value_label)]
    for i, cat in enumerate(categories):
        y = top + i * row_h
        body.append(f"<g><title>{e(cat)}: {e(value_label(totals[i]))} in all</title>")
        body.append(_text(left - 8, y + 17, fit(cat, label_chars), anchor="end"))
        body.append("</g>")
        x = left
        for s in segments:
            v = s.values[i]
            if v <= 0:
                continue
            w = plot_w * v / scale_max
            body.append(
                f"<g><title>{e(cat)}, {e(s.name)}: {e(value_label(v))}</title>"
                f'<rect x="{x:.1f}" y="{y + 4:.1f}" width="{max(w, 1.5):.1f}" height="18" fill="{s.color}" '
                'stroke="#ffffff" stroke-width="0.75"/></g>'
            )
            x += w
        body.append(_text(x + 6, y + 17, value_label(totals[i]), weight="600"))
    body.append(f'<line x1="{left:.1f}" y1="{top - 4}" x2="{left:.1f}" y2="{axis_y:.1f}" stroke="{MUTED}"/>')
    height = axis_y + 28
    headers = (category_header, *(s.name for s in segments), "Total")
    rows = tuple(
        (cat, *(value_label(s.values[i]) for s in segments), value_label(totals[i])) for i, cat in enumerate(categories)
    )
    return _chart(chart_id, title, description, height, body, width, headers, rows)


def line_chart(
    chart_id: str,
    title: str,
    description: str,
    x_values: Sequence[float],
    lines: Sequence[Line],
    *,
    x_ticks: Sequence[tuple[float, str]],
    value_label: Callable[[float], str] = compact,
    y_max: float | None = None,
    threshold: tuple[float, str] | None = None,
    headers: tuple[str, ...] = (),
    rows: tuple[tuple[str, ...], ...] = (),
    height: int = 250,
    width: int = WIDTH,
) -> Chart:
    """Lines over a numeric x axis (gaps where a value is None), an optional horizontal threshold line."""
    left, right = 62, width - 18
    legend_items = [(ln.name, ln.color, ln.dashed) for ln in lines]
    if threshold is not None:
        legend_items.append((threshold[1], VERMILLION, True))
    legend, legend_h = _legend(legend_items, left, 16, width - 10)
    height += math.ceil(legend_h) - 18  # room for a legend that wraps onto more lines
    top = 8 + legend_h + 8
    bottom = height - 30
    values = [v for ln in lines for v in ln.values if v is not None]
    top_value = max([*values, threshold[0] if threshold else 0.0, 0.0])
    ticks = nice_ticks(y_max if y_max is not None else top_value, 4)
    y_scale = ticks[-1] or 1.0
    x_min, x_max = (min(x_values), max(x_values)) if x_values else (0.0, 1.0)
    x_span = (x_max - x_min) or 1.0

    def px(x: float) -> float:
        return left + (right - left) * (x - x_min) / x_span

    def py(v: float) -> float:
        return bottom - (bottom - top) * min(v, y_scale) / y_scale

    body = list(legend)
    for t in ticks:
        y = py(t)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 6, y + 4, value_label(t), anchor="end", fill=MUTED, size=11))
    for x, label in x_ticks:
        xx = px(x)
        body.append(f'<line x1="{xx:.1f}" y1="{bottom}" x2="{xx:.1f}" y2="{bottom + 4}" stroke="{MUTED}"/>')
        body.append(_text(xx, bottom + 18, label, anchor="middle", fill=MUTED, size=11))
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{MUTED}"/>')
    for ln in lines:
        runs: list[list[tuple[float, float]]] = [[]]
        for x, v in zip(x_values, ln.values, strict=False):
            if v is None:
                if runs[-1]:
                    runs.append([])
                continue
            runs[-1].append((px(x), py(v)))
        for run in (r for r in runs if r):
            pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            if ln.area and len(run) > 1:
                area = f"{run[0][0]:.1f},{bottom} {pts} {run[-1][0]:.1f},{bottom}"
                body.append(f'<polygon points="{area}" fill="{ln.color}" fill-opacity="0.14" stroke="none"/>')
            dash = ' stroke-dasharray="6 4"' if ln.dashed else ""
            if len(run) == 1:
                x, y = run[0]
                body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{ln.color}"/>')
            else:
                body.append(
                    f'<polyline points="{pts}" fill="none" stroke="{ln.color}" stroke-width="2"'
                    f' stroke-linejoin="round"{dash}><title>{e(ln.name)}</title></polyline>'
                )
    if threshold is not None:
        ty = py(threshold[0])
        body.append(
            f'<line x1="{left}" y1="{ty:.1f}" x2="{right}" y2="{ty:.1f}" stroke="{VERMILLION}" stroke-width="1.5" '
            'stroke-dasharray="5 3"/>'
        )
    return _chart(chart_id, title, description, height, body, width, headers, rows)


# ------------------------------------------------------------------------------------------------ report charts


@dataclass(slots=True)
class ReportCharts:
    """The weekly report's charts, by section (None or empty where the week has no data for one)."""

    findings_by_table: Chart | None = None
    capacity: list[Chart] = field(default_factory=list)
    throttles: Chart | None = None
    scanners: Chart | None = None
    hot_keys: Chart | None = None
    item_sizes: Chart | None = None
    item_growth: Chart | None = None
    access_patterns: Chart | None = None

    def all(self) -> list[Chart]:
        singles = [
            self.findings_by_table,
            self.throttles,
            self.scanners,
            self.hot_keys,
            self.item_sizes,
            self.item_growth,
            self.access_patterns,
        ]
        return [c for c in singles if c is not None] + list(self.capacity)


def _label(table: str, index: str | None) -> str:
    return f"{table} / {index}" if index else table


def findings_by_table_chart(report: WeeklyReport, chart_id: str, limit: int = 12) -> Chart | None:
    tables = [t for t in report.tables if t.open_findings][:limit]
    if not tables:
        return None
    segments = [
        Segment(s.value.capitalize(), [float(t.by_severity.get(s, 0)) for t in tables], SEVERITY_COLORS[s])
        for s in Severity
    ]
    worst = tables[0]
    return stacked_bar_chart(
        chart_id,
        "Open findings by table and severity",
        f"{sum(t.open_findings for t in tables)} open findings on {len(tables)} tables; "
        f"{worst.table} needs the most attention ({worst.open_findings} findings, worst "
        f"{worst.worst.value if worst.worst else 'none'}).",
        [t.table for t in tables],
        segments,
        value_label=lambda v: f"{v:.0f}",
        integer=True,
    )


def _time_ticks(start: datetime, end: datetime, max_ticks: int = 8) -> list[tuple[datetime, str]]:
    span = (end - start).total_seconds()
    if span > 2 * 86_400:
        first = start.replace(hour=0, minute=0, second=0, microsecond=0)
        if first < start:
            first += timedelta(days=1)
        step, fmt = timedelta(days=max(1, math.ceil(span / 86_400 / max_ticks))), "%a %d"
    elif span > 6 * 3600:
        first = start.replace(minute=0, second=0, microsecond=0)
        step, fmt = timedelta(hours=max(1, math.ceil(span / 3600 / max_ticks))), "%H:%M"
        if first < start:
            first += timedelta(hours=1)
    else:
        first = start.replace(second=0, microsecond=0)
        step, fmt = timedelta(minutes=max(1, math.ceil(span / 60 / max_ticks))), "%H:%M"
        if first < start:
            first += timedelta(minutes=1)
    ticks: list[tuple[datetime, str]] = []
    t = first
    while t <= end and len(ticks) <= max_ticks:
        ticks.append((t, t.strftime(fmt)))
        t += step
    return ticks


def capacity_chart(panel: CapacityPanel, chart_id: str) -> Chart | None:
    if not panel.times:
        return None
    t0 = panel.times[0]
    xs = [(t - t0).total_seconds() for t in panel.times]
    dim = panel.dimension
    unit = "RCU" if dim == "read" else "WCU"
    has_prov = any(p is not None for p in panel.provisioned)
    lines = [Line(f"Consumed {unit}/s", panel.consumed, BLUE, area=True)]
    if has_prov:
        lines.append(Line(f"Provisioned {unit}/s", panel.provisioned, ORANGE, dashed=True))
    util = panel.peak_utilisation
    name = _label(panel.table, panel.index)
    bucket = f"{panel.bucket_seconds // 60} min" if panel.bucket_seconds < 3600 else f"{panel.bucket_seconds // 3600} h"
    desc = (
        f"{name} {dim} capacity, averaged per {bucket}: consumed peaks at {compact(panel.peak_consumed)} {unit}/s"
        + (f", {percent(util)} of provisioned at the busiest point." if util is not None else " (on-demand).")
    )
    end = panel.times[-1]
    ticks = [((t - t0).total_seconds(), label) for t, label in _time_ticks(t0, end)]
    # The data table: one row per day (or per bucket when the series is shorter than two days).
    by_day: dict[str, list[int]] = {}
    for i, t in enumerate(panel.times):
        key = t.strftime("%a %d %b") if (end - t0).total_seconds() > 2 * 86_400 else t.strftime("%Y-%m-%d %H:%M")
        by_day.setdefault(key, []).append(i)
    rows = []
    provisioned_table = any(p is not None for p in panel.provisioned)
    for key, idx in by_day.items():
        cons = [c for c in (panel.consumed[i] for i in idx) if c is not None]
        provs = [p for p in (panel.provisioned[i] for i in idx) if p is not None]
        rows.append(
            (
                key,
                compact(sum(cons) / len(cons)) if cons else "no data",
                compact(max(cons)) if cons else "no data",
                compact(max(provs)) if provs else ("no data" if provisioned_table else "on-demand"),
            )
        )
    return line_chart(
        chart_id,
        f"{name}: {dim} capacity, consumed vs provisioned",
        desc,
        xs,
        lines,
        x_ticks=ticks,
        headers=("Time (UTC)", f"Mean consumed {unit}/s", f"Peak consumed {unit}/s", f"Provisioned {unit}/s"),
        rows=tuple(rows),
        width=HALF_WIDTH,
        height=230,
    )


_THROTTLE_NOUNS = {"cloudwatch": "throttle events (CloudWatch)", "cloudtrail": "throttled calls (CloudTrail)"}


def throttle_chart(report: WeeklyReport, chart_id: str) -> Chart | None:
    rows = report.throttles
    if not rows:
        return None
    cats: list[str] = []
    for r in rows:
        lab = _label(r.table, r.index)
        if lab not in cats:
            cats.append(lab)
    causes: list[str] = []
    for r in rows:
        if r.cause not in causes:
            causes.append(r.cause)
    segs = []
    for n, cause in enumerate(causes):
        vals = [float(sum(r.total for r in rows if r.cause == cause and _label(r.table, r.index) == c)) for c in cats]
        segs.append(Segment(cause.replace("_", " "), vals, CAUSE_COLORS.get(cause, PALETTE[n % len(PALETTE)])))
    # Each row is one source's count (CloudWatch's throttle events, else CloudTrail's throttled calls): the totals
    # are stated per source, never added across sources.
    by_source: dict[str | None, int] = {}
    for r in rows:
        by_source[r.source] = by_source.get(r.source, 0) + r.total
    stated = " and ".join(
        f"{n:,} {_THROTTLE_NOUNS.get(src or '', 'throttle events')}"
        for src, n in sorted(by_source.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))
    )
    top = rows[0]
    return stacked_bar_chart(
        chart_id,
        "Throttle events by cause",
        f"{stated} on {len(cats)} tables or indexes; the most on {_label(top.table, top.index)} "
        f"({top.total:,}, cause {top.cause.replace('_', ' ')}).",
        cats,
        segs,
        value_label=whole,
        integer=True,
    )


def scanner_chart(report: WeeklyReport, chart_id: str, limit: int = 10) -> Chart | None:
    totals: dict[str, float] = {}
    tables: dict[str, set[str]] = {}
    for r in report.scanners:
        if r.status == "resolved" or r.unit != LOGICAL_SCANS:  # CloudWatch's Scan pages are another unit
            continue
        totals[r.principal_name] = totals.get(r.principal_name, 0) + r.count
        tables.setdefault(r.principal_name, set()).add(r.table)
    if not totals:
        return None
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    bars = [
        Bar(name, value, BLUE, f"{name}: {value:,.0f} logical scans on {', '.join(sorted(tables[name]))}")
        for name, value in ranked
    ]
    top_name, top_value = ranked[0]
    return bar_chart(
        chart_id,
        "Logical scans by principal (CloudTrail)",
        f"{len(totals)} principal{'s' if len(totals) != 1 else ''} ran full-table scans; {top_name} ran the most "
        f"({top_value:,.0f} logical scans).",
        bars,
        value_label=whole,
        headers=("Principal", "Logical scans"),
        integer=True,
    )


def _about(n: int, margin: int | None) -> str:
    """``n``, or ``about n (±margin)`` for a count estimated from sampled capture."""
    return f"{n:,}" if margin is None else f"about {n:,} (±{margin:,})"


def hot_key_chart(report: WeeklyReport, chart_id: str, limit: int = 10) -> Chart | None:
    rows = [r for r in report.hot_keys if r.status != "resolved"][:limit]
    if not rows:
        return None
    bars = [
        Bar(
            f"{r.table}: {r.key}",
            r.share,
            SEVERITY_COLORS[r.severity],
            (
                f"{r.table}, {r.key}: {_about(r.requests, r.margin)} of {'about ' if r.margin is not None else ''}"
                f"{r.share_base:,} key-identified requests, "
                f"{percent(r.share)} ({r.severity.value})"
                if r.share_base
                else f"{r.table}, {r.key}: {_about(r.requests, r.margin)} requests, {percent(r.share)} of the table's "
                "key-identified"
                f" requests in the window it was found in ({r.severity.value})"
            ),
        )
        for r in rows
    ]
    top = rows[0]
    return bar_chart(
        chart_id,
        "Hot keys: share of the table's key-identified requests",
        f"{len(rows)} hot keys; {top.key} on {top.table} takes {percent(top.share)} of that table's requests. "
        "Bar colour is the finding's severity.",
        bars,
        value_label=percent,
        axis_max=max(0.5, max(r.share for r in rows)),
        headers=("Table: key", "Share of requests"),
    )


_GROWTH_COLORS = (BLUE, GREEN, PURPLE, ORANGE, SKY, GREY)  # the limit line is vermillion and dashed

_SIZE_BANDS: tuple[tuple[str, float, float], ...] = (
    ("under 100 KB", 0, 100 * 1024),
    ("100-200 KB", 100 * 1024, 200 * 1024),
    ("200-300 KB", 200 * 1024, 300 * 1024),
    ("300-350 KB", 300 * 1024, 350 * 1024),
    ("350-400 KB", 350 * 1024, ITEM_LIMIT_BYTES),
)


def item_size_chart(report: WeeklyReport, chart_id: str) -> Chart | None:
    rows = [r for r in report.items if r.status != "resolved"]
    if not rows:
        return None
    # each item in one bar, by its size (an item whose writes were rejected but whose size is known, under the limit,
    # is in its band); only an item of no known size under the limit (its writes rejected) is over 400 KB
    sized = [r.size_bytes for r in rows if r.size_bytes is not None and r.size_bytes < ITEM_LIMIT_BYTES]
    bands = [(name, sum(1 for size in sized if lo <= size < hi)) for name, lo, hi in _SIZE_BANDS]
    over = len(rows) - len(sized)
    rejected = sum(1 for r in rows if r.rejected_writes is not None)
    bars = [
        Bar(name, float(n), ORANGE if lo >= 300 * 1024 else SKY)
        for (name, n), (_, lo, _) in zip(bands, _SIZE_BANDS, strict=True)
    ]
    bars.append(Bar("over 400 KB (writes rejected)", float(over), VERMILLION))
    flagged = len(rows)
    return bar_chart(
        chart_id,
        "Flagged items by size",
        f"{flagged} items flagged this week: {sum(n for _, n in bands[3:])} within 100 KB of the 400 KB limit, "
        f"{over} over it, and {rejected} already rejecting writes.",
        bars,
        value_label=lambda v: f"{v:.0f}",
        headers=("Item size", "Items"),
        integer=True,
        width=HALF_WIDTH,
    )


def item_growth_chart(report: WeeklyReport, chart_id: str, horizon_days: int = 30, limit: int = 6) -> Chart | None:
    rows = [
        r
        for r in report.items
        if r.status != "resolved" and r.bytes_per_day and r.bytes_per_day > 0 and r.size_bytes is not None
    ][:limit]
    if not rows:
        return None
    days = list(range(horizon_days + 1))
    lines = []
    for n, r in enumerate(rows):
        assert r.size_bytes is not None and r.bytes_per_day is not None
        values: list[float | None] = []
        for d in days:
            size = r.size_bytes + r.bytes_per_day * d
            values.append(min(size, ITEM_LIMIT_BYTES) / 1024)
            if size >= ITEM_LIMIT_BYTES:
                break
        values += [None] * (len(days) - len(values))
        lines.append(Line(f"{r.table}: {r.key or '?'}", values, _GROWTH_COLORS[n % len(_GROWTH_COLORS)]))
    soonest = min(rows, key=lambda r: r.days_to_limit if r.days_to_limit is not None else math.inf)
    when = (
        f"in {days_text(soonest.days_to_limit)}"
        if soonest.days_to_limit is not None
        else "within the projection window"
    )
    table_rows = tuple(
        (
            f"{r.table}: {r.key or '?'}",
            human_bytes(r.size_bytes or 0),
            f"{(r.bytes_per_day or 0) / 1024:,.1f} KB/day",
            f"{r.days_to_limit:.1f}" if r.days_to_limit is not None else "-",  # as the finding states them
        )
        for r in rows
    )
    return line_chart(
        chart_id,
        "Growing items: projected size over the next 30 days",
        f"Projected sizes of {len(rows)} growing items at their current growth rate; "
        f"{soonest.key or 'an item'} on {soonest.table} reaches the 400 KB limit {when}.",
        [float(d) for d in days],
        lines,
        x_ticks=[(float(d), f"day {d}") for d in range(0, horizon_days + 1, 5)],
        value_label=lambda v: f"{v:.0f} KB",
        y_max=ITEM_LIMIT_BYTES / 1024,
        threshold=(ITEM_LIMIT_BYTES / 1024, "400 KB item limit"),
        headers=("Item", "Size now", "Growth", "Days to limit"),
        rows=table_rows,
        width=HALF_WIDTH,
    )


def access_pattern_chart(report: WeeklyReport, chart_id: str, limit: int = 12) -> Chart | None:
    tables = report.pattern_tables[:limit]
    if not tables:
        return None
    total = sum(t.requests for t in tables)
    bad = sum(t.inefficient_requests for t in tables)
    return stacked_bar_chart(
        chart_id,
        "Requests by table: efficient vs full-scan access",
        f"{total:,} requests on {len(tables)} tables; {bad:,} ({percent(bad / total if total else 0)}) were scans "
        "or full-table PartiQL statements.",
        [t.table for t in tables],
        [
            Segment("Efficient (key lookups, queries)", [float(t.efficient_requests) for t in tables], GREEN),
            Segment("Inefficient (scans)", [float(t.inefficient_requests) for t in tables], VERMILLION),
        ],
        value_label=whole,
        integer=True,
    )


def report_charts(report: WeeklyReport) -> ReportCharts:
    """Every chart of the report, with unique element ids."""
    ids = (f"chart-{n}" for n in count(1))
    return ReportCharts(
        findings_by_table=findings_by_table_chart(report, next(ids)),
        capacity=[c for p in report.capacity if (c := capacity_chart(p, next(ids))) is not None],
        throttles=throttle_chart(report, next(ids)),
        scanners=scanner_chart(report, next(ids)),
        hot_keys=hot_key_chart(report, next(ids)),
        item_sizes=item_size_chart(report, next(ids)),
        item_growth=item_growth_chart(report, next(ids)),
        access_patterns=access_pattern_chart(report, next(ids)),
    )

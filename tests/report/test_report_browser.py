"""The weekly report in a real browser: headless Chromium (Debian's ``chromium`` package).

The report is built from findings of a generated CloudTrail workload (tests.factories' planted problems), plus the
finding kinds CloudTrail cannot produce (billing, item sizes) and a week of capacity history, so every chart
type is on the page. Checks: the PNG screenshot is not blank, every chart's SVG has a non-zero rendered size
(measured by a test-only copy of the page with a probe script; the report itself has no script), no external
resource is loaded, nothing is logged to the console, and the page prints to a multi-page PDF.

Chromium is installed by ``.ci/run`` (``apt-get install -y chromium``); where it is missing the tests skip
with a message saying so.
"""

from __future__ import annotations

import html
import json
import math
import re
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from auditor.config import AnalysisConfig
from auditor.engine import analyze_trail
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.report.auditor_cost import AuditorUsage
from auditor.report.charts import report_charts
from auditor.report.inputs import CapacitySeries
from auditor.report.model import IsoWeek, WeeklyReport, build_report_from_findings
from auditor.report.report_pages import write_report
from tests.factories import planted_workload, write_trail

START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
ACCOUNT, REGION = "111122223333", "us-east-1"
WIDTH, HEIGHT = 1200, 1600
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
NAVY = (0x0F, 0x27, 0x42)  # the masthead background in the report's CSS


@pytest.fixture(scope="module")
def chromium() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(
        "headless Chromium is not installed, so the browser test of the weekly report cannot run "
        "(install it with `apt-get install -y chromium`; .ci/run does this)"
    )


def _extra(kind: str, severity: str, table: str, evidence: dict[str, object], title: str) -> Finding:
    return Finding(
        id=fingerprint(kind, ACCOUNT, REGION, table, None, title),
        kind=FindingKind(kind),
        severity=Severity(severity),
        account=ACCOUNT,
        region=REGION,
        table=table,
        title=title,
        summary=f"{title}.",
        recommendation="See the documentation.",
        evidence=evidence,
        first_seen=START - timedelta(days=8),
        last_seen=START + timedelta(hours=20),
    )


def _capacity(table: str, week: IsoWeek) -> CapacitySeries:
    n = 7 * 24 * 12  # a week of 5-minute periods
    daily = [1 + 0.8 * math.sin(2 * math.pi * i / 288) for i in range(n)]
    return CapacitySeries(
        table=table,
        start=week.start,
        period_seconds=300,
        consumed_read=[300 * 40 * d for d in daily],
        consumed_write=[300 * 8 * d for d in daily],
        provisioned_read=[120.0] * n,
        provisioned_write=[40.0] * n,
    )


@dataclass(frozen=True)
class Rendered:
    report: WeeklyReport
    html_path: Path
    md_path: Path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    base = tmp_path_factory.mktemp("report")
    trail = base / "trail"
    write_trail(planted_workload(START, hours=0.25, seed=5), trail, ACCOUNT, REGION, seed=5)
    analysis = analyze_trail([str(trail)], AnalysisConfig())
    kinds = {f.kind for f in analysis.findings}
    assert {FindingKind.SCAN, FindingKind.HOT_KEY, FindingKind.THROTTLING} <= kinds, kinds
    extra = [
        _extra(
            "billing_mode",
            "medium",
            "Orders",
            {
                "current_mode": "PROVISIONED",
                "recommended_mode": "PAY_PER_REQUEST",
                "monthly_cost_current": 190.0,
                "monthly_cost_recommended": 61.5,
                "monthly_savings": 128.5,
                "days_analyzed": 14.0,
            },
            "Orders costs less on demand",
        ),
        _extra(
            "large_item",
            "high",
            "Documents",
            {"key": {"docId": "DOC#88"}, "size_bytes": 381_000, "limit_bytes": 409_600},
            "Item DOC#88 is 372 KB",
        ),
        _extra(
            "item_growth",
            "medium",
            "Documents",
            {"key": {"docId": "DOC#12"}, "size_bytes": 180_000, "bytes_per_day": 9_200, "days_to_limit": 24.9},
            "DOC#12 grows",
        ),
    ]
    findings = [*analysis.findings, *extra]
    week = IsoWeek.of(START)
    previous = [f.model_copy(update={"last_seen": week.start - timedelta(days=1)}) for f in extra[:2]]
    report = build_report_from_findings(
        findings,
        START + timedelta(days=6),
        week=week,
        previous_findings=previous,
        access_patterns=analysis.access_patterns,
        capacity=[_capacity("Orders", week)],
        usage=AuditorUsage(cloudtrail_data_events=analysis.stats.data_events),
        input_stats=analysis.stats.as_dict(),
    )
    html_path, md_path = write_report(report, base / "out")
    return Rendered(report, html_path, md_path)


def _run(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, timeout=120, check=False)


def _console_lines(stderr: bytes) -> list[str]:
    """Console messages (log, warnings, errors, uncaught exceptions) Chromium wrote to its log."""
    return [line for line in stderr.decode(errors="replace").splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def decode_png(data: bytes) -> tuple[int, int, list[bytes], int]:
    """(width, height, unfiltered rows, bytes per pixel) of an 8-bit RGB/RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        ctype, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if ctype == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif ctype == b"IDAT":
            idat.append(body)
        elif ctype == b"IEND":
            break
    assert header is not None
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and interlace == 0 and color in (2, 6), header
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        at = y * (stride + 1)
        kind, line = raw[at], bytearray(raw[at + 1 : at + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + (left + prev[i]) // 2) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


def test_screenshot_is_not_blank(chromium: str, rendered: Rendered, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    proc = _run(
        chromium,
        tmp_path / "profile",
        f"--window-size={WIDTH},{HEIGHT}",
        f"--screenshot={shot}",
        rendered.html_path.as_uri(),
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert shot.exists() and shot.stat().st_size > 10_000
    width, height, rows, bpp = decode_png(shot.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    colours: Counter[bytes] = Counter()
    for row in rows[::3]:
        for x in range(0, len(row), bpp * 3):
            colours[row[x : x + 3]] += 1
    total = sum(colours.values())
    _background, count = colours.most_common(1)[0]
    assert len(colours) > 200, "a rendered report has text anti-aliasing, badges and charts in many colours"
    assert 1 - count / total > 0.15, f"{1 - count / total:.1%} of the page differs from its background"
    # The dark masthead at the top proves the inline stylesheet was applied.
    r, g, b = rows[20][30 * bpp : 30 * bpp + 3]
    assert max(abs(r - NAVY[0]), abs(g - NAVY[1]), abs(b - NAVY[2])) < 12, (r, g, b)


PROBE = """<script>
(function () {
  var svgs = Array.prototype.map.call(document.querySelectorAll("svg"), function (svg) {
    var box = svg.getBoundingClientRect();
    var title = svg.querySelector("title");
    return {title: title ? title.textContent : null, width: box.width, height: box.height,
            texts: svg.querySelectorAll("text").length, shapes: svg.querySelectorAll("rect,polyline,line").length};
  });
  var resources = performance.getEntriesByType("resource").map(function (e) { return e.name; });
  var out = document.createElement("pre");
  out.id = "probe-result";
  out.textContent = JSON.stringify({svgs: svgs, resources: resources, viewport: window.innerWidth});
  document.body.appendChild(out);
})();
</script>"""


def _probe(chromium: str, rendered: Rendered, tmp_path: Path, width: int) -> dict[str, object]:
    """Measure the charts in a copy of the report with a probe script appended (the report has none)."""
    page = rendered.html_path.read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    probe = rendered.html_path.with_name(f"probe-{width}.html")
    probe.write_text(page.replace("</body>", PROBE + "\n</body>"), encoding="utf-8")
    proc = _run(chromium, tmp_path / f"profile-{width}", f"--window-size={width},1200", "--dump-dom", probe.as_uri())
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    match = re.search(r'<pre id="probe-result">(.*?)</pre>', proc.stdout.decode())
    assert match, "the probe did not run"
    result: dict[str, object] = json.loads(html.unescape(match.group(1)))
    return result


def test_every_chart_has_a_rendered_size(chromium: str, rendered: Rendered, tmp_path: Path) -> None:
    expected = [c.title for c in report_charts(rendered.report).all()]
    assert (
        len(expected) >= 9
    )  # every chart type: tables, capacity (read, write), throttles, scans, hot keys, items x2, patterns
    result = _probe(chromium, rendered, tmp_path, WIDTH)
    svgs = result["svgs"]
    assert isinstance(svgs, list)
    assert sorted(s["title"] for s in svgs) == sorted(expected)
    for s in svgs:
        assert s["width"] > 200 and s["height"] > 60, s
        assert s["texts"] > 0 and s["shapes"] > 0, s
    assert result["resources"] == [], "the report must not load anything"


def test_charts_shrink_to_a_narrow_screen(chromium: str, rendered: Rendered, tmp_path: Path) -> None:
    result = _probe(chromium, rendered, tmp_path, 420)
    svgs = result["svgs"]
    assert isinstance(svgs, list) and svgs
    viewport = result["viewport"]
    assert isinstance(viewport, int | float)
    for s in svgs:
        assert 0 < s["width"] <= viewport and s["height"] > 0, s


def test_no_console_messages(chromium: str, rendered: Rendered, tmp_path: Path) -> None:
    # The detector works here: a page with a console error and an uncaught exception is caught.
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><p>x</p><script>console.error("probe-error"); missingFunction();</script>')
    seen = _console_lines(_run(chromium, tmp_path / "p1", "--dump-dom", bad.as_uri()).stderr)
    assert any("probe-error" in line for line in seen) and any("Uncaught" in line for line in seen), seen
    # The report logs nothing at all.
    proc = _run(chromium, tmp_path / "p2", f"--window-size={WIDTH},{HEIGHT}", "--dump-dom", rendered.html_path.as_uri())
    assert proc.returncode == 0
    assert _console_lines(proc.stderr) == []
    assert "Finding details" in proc.stdout.decode()


def test_prints_to_pdf(chromium: str, rendered: Rendered, tmp_path: Path) -> None:
    pdf = tmp_path / "report.pdf"
    proc = _run(
        chromium, tmp_path / "profile", "--no-pdf-header-footer", f"--print-to-pdf={pdf}", rendered.html_path.as_uri()
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
    assert pages >= 3, pages

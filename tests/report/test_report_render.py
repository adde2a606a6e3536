"""Rendering the weekly report: escaping of untrusted names, self-contained HTML, SVG charts, Markdown, CLI."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.cli import main
from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint
from auditor.report.auditor_cost import AuditorUsage
from auditor.report.charts import Bar, Line, bar_chart, line_chart, nice_ticks, report_charts
from auditor.report.inputs import CapacitySeries
from auditor.report.model import IsoWeek, WeeklyReport, build_report_from_findings
from auditor.report.report_pages import md, md_code, render_html, render_markdown, write_report

W49 = IsoWeek(year=2026, week=49)
MON = datetime(2026, 11, 30, tzinfo=UTC)
NOW = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
EVIL_TABLE = "<script>alert(1)</script>"
EVIL_KEY = '"&<>'
EVIL_PRINCIPAL = 'arn:aws:iam::1:role/<img src=x onerror="alert(2)">'
DOCS = "https://docs.aws.amazon.com/"


def make(
    kind: str, severity: str, table: str, evidence: dict[str, Any], *, title: str = "", days: float = 1
) -> Finding:
    first = MON + timedelta(days=days)
    return Finding(
        id=fingerprint(kind, "111122223333", "us-east-1", table, None, repr(sorted(evidence.items()))),
        kind=FindingKind(kind),
        severity=Severity(severity),
        account="111122223333",
        region="us-east-1",
        table=table,
        title=title or f"{kind} on {table}",
        summary=f"Something about {table}.",
        recommendation=f"Fix {table} | now.",
        evidence=evidence,
        first_seen=first,
        last_seen=first + timedelta(hours=2),
    )


def every_kind(table: str = "Orders", key: str = "K#1", principal: str = "arn:aws:iam::1:role/job") -> list[Finding]:
    """One finding of each kind the report charts, on ``table``."""
    return [
        make(
            "scan", "high", table, {"principal": principal, "operation": "Scan", "count": 120, "source": "cloudtrail"}
        ),
        make(
            "throttling",
            "high",
            table,
            {"cause": "key_range", "read_throttle_events": 5, "write_throttle_events": 9, "source": "cloudtrail"},
        ),
        make(
            "hot_key",
            "medium",
            table,
            {
                "key": {"pk": key},
                "share": 0.42,
                "requests": 900,
                "window_seconds": 900,
                "source": "cloudtrail",
                "headroom_factor": 3.5,
            },
        ),
        make("large_item", "high", table, {"key": {"pk": key}, "size_bytes": 390_000, "limit_bytes": 409_600}),
        make(
            "item_growth",
            "medium",
            table,
            {"key": {"pk": key + "g"}, "size_bytes": 150_000, "bytes_per_day": 12_000, "days_to_limit": 21.6},
        ),
        make("item_size_exceeded", "high", table, {"count": 4, "key": {"pk": key}, "limit_bytes": 409_600}),
        make(
            "billing_mode",
            "medium",
            table,
            {
                "current_mode": "PROVISIONED",
                "recommended_mode": "PAY_PER_REQUEST",
                "monthly_cost_current": 300.0,
                "monthly_cost_recommended": 100.0,
                "monthly_savings": 200.0,
                "days_analyzed": 14.0,
            },
        ),
    ]


def capacity(table: str) -> CapacitySeries:
    n = 7 * 24 * 12
    return CapacitySeries(
        table=table,
        start=MON,
        period_seconds=300,
        consumed_read=[300.0 * (1 + (i % 288) / 288) for i in range(n)],
        consumed_write=[60.0] * n,
        provisioned_read=[5.0] * n,
        provisioned_write=[1.0] * n,
    )


def pattern(table: str, operation: str, requests: int, efficient: bool, template: str | None) -> AccessPattern:
    return AccessPattern(
        table=table,
        index=None,
        operation=operation,
        key_template=template,
        requests=requests,
        share=0.5,
        efficient=efficient,
    )


def build(findings: list[Finding], table: str = "Orders", **kw: Any) -> WeeklyReport:
    return build_report_from_findings(
        findings,
        NOW,
        week=W49,
        capacity=[capacity(table)],
        access_patterns=[pattern(table, "Scan", 100, False, None), pattern(table, "GetItem", 900, True, "pk=K#{n}")],
        usage=AuditorUsage(cloudtrail_data_events=1_000_000),
        **kw,
    )


class Page(HTMLParser):
    """Collects every start tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data
        self.text.append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


# ---------------------------------------------------------------- escaping


def test_untrusted_names_render_inert_in_html_and_svg() -> None:
    findings = every_kind(EVIL_TABLE, EVIL_KEY, EVIL_PRINCIPAL)
    report = build(findings, EVIL_TABLE)
    html = render_html(report)
    page = parse(html)

    # Nothing executable: no script element, no event-handler attribute, no javascript: URL anywhere.
    assert "<script" not in html.lower()
    assert "<img" not in html.lower()
    assert not [t for t, _ in page.tags if t in ("script", "img", "iframe", "object", "embed")]
    assert not [(t, a) for t, attrs in page.tags for a in attrs if a.lower().startswith("on")]
    assert "javascript:" not in html.lower()
    # The raw strings never appear unescaped ...
    assert EVIL_KEY not in html
    assert 'onerror="alert(2)"' not in html
    # ... but they are still shown, as text, in the page and inside the charts.
    text = "".join(page.text)
    assert EVIL_TABLE in text
    assert f"pk={EVIL_KEY}" in text
    assert EVIL_PRINCIPAL in text
    charts = report_charts(report).all()
    assert len(charts) >= 8
    for chart in charts:
        svg = parse(chart.svg)
        assert not [t for t, _ in svg.tags if t not in SVG_TAGS], chart.title
        assert "<script" not in chart.svg
    svg_text = "".join("".join(parse(c.svg).text) for c in charts)
    assert EVIL_TABLE in svg_text and EVIL_KEY in svg_text


SVG_TAGS = {"svg", "title", "desc", "rect", "line", "text", "g", "polyline", "polygon", "circle"}


def test_markdown_escapes_pipes_and_html() -> None:
    table = "Pipe|Table " + EVIL_TABLE
    report = build(every_kind(table, "a|b`c"), table)
    text = render_markdown(report)
    assert "<script>" not in text
    assert "\\<script\\>" in text
    assert "Pipe\\|Table" in text
    # Every table row has as many unescaped cell separators as its header.
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows
    widths: list[int] = []
    for line in rows:
        cells = len(re.findall(r"(?<!\\)\|", line))
        if re.fullmatch(r"\|(\s*-+:?\|)+", line.replace("---:", "---")):
            widths.append(cells)
        assert cells >= 2, line
    header_widths = {len(re.findall(r"(?<!\\)\|", r)) for r in rows}
    assert header_widths <= set(widths)  # no row has a column count that no table declares


def test_md_helpers() -> None:
    assert md("a|b") == "a\\|b"
    assert md("x\ny") == "x y"
    assert md("<b>*hi*</b>") == "\\<b\\>\\*hi\\*\\</b\\>"
    assert md("PAY_PER_REQUEST") == "PAY_PER_REQUEST"  # intra-word underscores stay readable
    assert md("_lead") == "\\_lead"
    assert md_code("pk=A|B") == "`pk=A\\|B`"
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x") == "`` `x ``"


# ---------------------------------------------------------------- self-contained HTML


def test_html_is_self_contained_without_scripts() -> None:
    html = render_html(build(every_kind()))
    page = parse(html)
    assert "<script" not in html.lower()
    links = [(t, a.get("src") or a.get("href") or "") for t, a in page.tags if "src" in a or "href" in a]
    assert links, "the report links its sections and the AWS documentation"
    for tag, url in links:
        assert url.startswith("#") or url.startswith(DOCS), (tag, url)
    assert not [t for t, _ in page.tags if t in ("link", "img", "iframe", "object", "embed", "video", "audio")]
    assert "@import" not in page.style and "url(" not in page.style
    assert "@media print" in page.style
    assert html.startswith("<!DOCTYPE html>")
    assert ("html", {"lang": "en"}) in page.tags


def test_html_is_accessible() -> None:
    page = parse(render_html(build(every_kind())))
    tags = [t for t, _ in page.tags]
    assert tags.count("h1") == 1
    assert tags.count("h2") >= 10
    assert "caption" in tags
    scopes = {a.get("scope") for t, a in page.tags if t == "th"}
    assert {"col", "row"} <= scopes
    # Every chart is an image with a text alternative wired to its title and description.
    svgs = [a for t, a in page.tags if t == "svg"]
    assert len(svgs) >= 8
    ids = {a["id"] for _, a in page.tags if a.get("id")}
    for attrs in svgs:
        assert attrs.get("role") == "img"
        label_ids = (attrs.get("aria-labelledby") or "").split()
        assert len(label_ids) == 2 and all(i in ids for i in label_ids)
    assert len(ids) == len([1 for _, a in page.tags if a.get("id")])  # ids are unique


def test_every_chart_has_size_title_and_description() -> None:
    report = build(every_kind())
    charts = report_charts(report)
    assert charts.findings_by_table and charts.throttles and charts.scanners and charts.hot_keys
    assert charts.item_sizes and charts.item_growth and charts.access_patterns
    assert len(charts.capacity) == 2  # read and write
    for chart in charts.all():
        page = parse(chart.svg)
        tag, attrs = page.tags[0]
        assert tag == "svg"
        w, h = float(attrs["width"] or 0), float(attrs["height"] or 0)
        assert w > 0 and h > 0
        assert attrs["viewbox"] == f"0 0 {attrs['width']} {attrs['height']}"  # the parser lower-cases names
        assert page.tags[1][0] == "title" and page.tags[2][0] == "desc"
        assert chart.title in "".join(page.text) and chart.description in "".join(page.text)
        assert chart.rows and all(len(r) == len(chart.headers) for r in chart.rows)


def test_chart_primitives() -> None:
    assert nice_ticks(2, integer=True) == [0, 1, 2]
    assert nice_ticks(431)[-1] >= 431
    assert nice_ticks(0) == [0.0, 1.0]
    chart = bar_chart("c1", "T", "D", [Bar("a", 3), Bar("b", 0)], marker=(2.5, "limit"))
    assert chart.rows == (("a", "3"), ("b", "0"))
    assert chart.svg.count("<rect") == 2  # the background and one bar: a zero bar draws nothing
    line = line_chart("c2", "T", "D", [0, 1, 2, 3], [Line("x", [1.0, None, 2.0, 3.0], "#000")], x_ticks=[(0, "0")])
    assert line.svg.count("<circle") == 1 and line.svg.count("<polyline") == 1  # the gap splits the line


def test_finding_details_show_evidence_fix_and_order() -> None:
    findings = every_kind()
    report = build(findings)
    page = parse(render_html(report))
    text = " ".join(page.text)
    for f in findings:
        assert f.title in text
        assert (
            "article",
            {"class": f"finding sev-{f.severity.value}", "id": f"f-{f.id}", "aria-labelledby": f"f-{f.id}-h"},
        ) in page.tags
    assert "Fix Orders | now." in text
    assert "390,000 bytes (381 KB)" in text
    assert "pk=K#1" in text
    articles = [a["id"] for t, a in page.tags if t == "article"]
    assert articles == [f"f-{rf.finding.id}" for rf in report.findings]
    sevs = [rf.finding.severity.rank for rf in report.findings]
    assert sevs == sorted(sevs, reverse=True)


def test_summary_shows_numbers_and_three_actions() -> None:
    report = build(every_kind())
    html = render_html(report)
    page = parse(html)
    items = [a for t, a in page.tags if t == "li" and (a.get("class") or "").startswith("sev-")]
    assert len(items) == 3
    text = " ".join(page.text)
    assert "$200" in text  # savings
    assert "7 open findings on 1 table (4 high)" in text


def test_empty_report_renders() -> None:
    report = build_report_from_findings([], NOW, week=W49)
    html, text = render_html(report), render_markdown(report)
    assert "No open findings" in html and "No findings this week." in html
    assert "<svg" not in html
    assert "No findings this week." in text


def test_markdown_has_the_same_content_with_tables_for_charts() -> None:
    report = build(every_kind())
    text = render_markdown(report)
    for heading in (
        "## Summary",
        "### The three most important actions",
        "## Capacity and throttling",
        "## Top scanners",
        "## Hot keys",
        "## Largest and growing items",
        "## Access patterns",
        "## Billing recommendations",
        "## Week over week",
        "## Finding details",
    ):
        assert heading in text
    # The capacity chart became a table: one row per day of the week.
    assert "| Time (UTC) | Mean consumed RCU/s | Peak consumed RCU/s | Provisioned RCU/s |" in text
    assert "| Mon 30 Nov |" in text and "| Sun 06 Dec |" in text
    assert (
        "| Orders | Billing mode: PROVISIONED → **PAY_PER_REQUEST** | $300.00 | $100.00 | **$200.00** "
        "| 14.0 | — | new |" in text  # 14 days analysed; no confidence stated by this finding
    )
    assert "[AWS documentation](https://docs.aws.amazon.com/" in text
    assert "<svg" not in text


def test_write_report(tmp_path: Path) -> None:
    report = build(every_kind())
    html_path, md_path = write_report(report, tmp_path / "out" / "nested")
    assert html_path.name == "report.html" and md_path.name == "report.md"
    assert html_path.read_text(encoding="utf-8") == render_html(report)
    assert md_path.read_text(encoding="utf-8") == render_markdown(report)
    assert not [p for p in html_path.parent.iterdir() if p.name.startswith(".")]  # no temporary files left


# ---------------------------------------------------------------- CLI


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_report_from_analyze_trail_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    findings = every_kind(EVIL_TABLE)
    doc = {
        "findings": [f.model_dump(mode="json") for f in findings],
        "access_patterns": [pattern(EVIL_TABLE, "Scan", 10, False, None).model_dump(mode="json")],
        "stats": {"files_read": 1, "data_events": 2_000_000},
    }
    src = tmp_path / "findings.json"
    src.write_bytes(orjson.dumps(doc))
    code, out, err = run(["report", "--findings", str(src), "--out", str(tmp_path / "r")], capsys)
    assert code == 0, err
    assert out.splitlines() == [str(tmp_path / "r" / "report.html"), str(tmp_path / "r" / "report.md")]
    html = (tmp_path / "r" / "report.html").read_text()
    assert "week 2026-W49" in html  # the week of the findings, not of today
    assert "$2.00" in html  # 2M CloudTrail data events at $0.10 per 100k
    assert "<script" not in html.lower()


def test_cli_report_with_previous_week_and_capacity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    now = every_kind()
    before = [
        f.model_copy(update={"first_seen": MON - timedelta(days=3), "last_seen": MON - timedelta(days=2)})
        for f in now[:2]
    ]
    (tmp_path / "now.json").write_bytes(orjson.dumps([f.model_dump(mode="json") for f in now]))  # a bare list
    (tmp_path / "before.json").write_bytes(orjson.dumps({"findings": [f.model_dump(mode="json") for f in before]}))
    cap = {
        "table": "Orders",
        "region": "us-east-1",
        "table_class": "STANDARD",
        "billing_mode": "PROVISIONED",
        "start": "2026-11-30T00:00:00Z",
        "period_seconds": 3600,
        "series": [
            {
                "index": None,
                "consumed_read": [3600.0] * 168,
                "consumed_write": [360.0] * 168,
                "provisioned_read": [5] * 168,
                "provisioned_write": [1] * 168,
            }
        ],
    }
    (tmp_path / "cap.json").write_bytes(orjson.dumps(cap))
    code, _, err = run(
        [
            "report",
            "--findings",
            str(tmp_path / "now.json"),
            "--previous",
            str(tmp_path / "before.json"),
            "--capacity",
            str(tmp_path / "cap.json"),
            "--week",
            "2026-W49",
            "--out",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 0, err
    text = (tmp_path / "report.md").read_text()
    assert "| Open findings | 7 | 2 | ▲ 5 vs last week |" in text
    assert "Orders: read capacity, consumed vs provisioned" in text
    assert "| Mon 30 Nov | 1 | 1 | 5 |" in text


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (None, [], "No such file"),
        (b"{not json", [], "not valid JSON"),
        (b'{"findings": [{"id": "x"}]}', [], r"findings\[0\]: kind: Field required"),
        (b'{"stats": {}}', [], "no 'findings' member"),
        (b"[]", ["--week", "2026-W99"], "week '2026-W99'"),
    ],
)
def test_cli_report_input_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, extra: list[str], message: str
) -> None:
    src = tmp_path / "in.json"
    if content is not None:
        src.write_bytes(content)
    code, out, err = run(["report", "--findings", str(src), "--out", str(tmp_path / "out"), *extra], capsys)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "out" / "report.html").exists()


def test_cli_report_requires_findings_and_out(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["report", "--out", "x"])
    assert exc.value.code == 2


#: Terminal/control payloads from the fuzz run: ANSI colour, OSC-8 hyperlink, BEL, CR, RLO, NUL.
CONTROL_TABLE = "Ord\x1b[31mers\x1b]8;;https://evil.example\x07x\x1b]8;;\x07\r\u202eevil\x00"


def test_report_files_drop_control_and_bidi_characters() -> None:
    findings = every_kind(CONTROL_TABLE, "K\x1b[2J#1", "arn:aws:iam::1:role/\x07job")
    report = build(findings, CONTROL_TABLE)
    for text in (render_html(report), render_markdown(report)):
        bad = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c == "\u202e"]
        assert not bad, sorted(set(bad))
        # the printable rest of the name is still shown
        assert "31mers" in text and "evil" in text


def test_cli_report_merges_several_findings_files_deduplicated_by_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    findings = every_kind("Orders")
    half = len(findings) // 2
    first, second = findings[: half + 2], findings[half:]  # two findings in both files
    paths = []
    for name, part in (("a.json", first), ("b.json", second)):
        p = tmp_path / name
        p.write_bytes(orjson.dumps({"findings": [f.model_dump(mode="json") for f in part], "stats": {"files_read": 1}}))
        paths.append(p)
    code, _, err = run(
        ["report", "--findings", str(paths[0]), "--findings", str(paths[1]), "--out", str(tmp_path / "r")], capsys
    )
    assert code == 0, err
    md_text = (tmp_path / "r" / "report.md").read_text()
    for f in findings:
        assert md_text.count(f.id) >= 1
    code, _, err = run(["report", "--findings", str(paths[0]), "--out", str(tmp_path / "one")], capsys)
    one = (tmp_path / "one" / "report.md").read_text()
    assert all(f.id not in one for f in findings[half + 2 :])
    from auditor.report.inputs import merge_findings_documents, parse_findings_document

    merged = merge_findings_documents([parse_findings_document(orjson.loads(p.read_bytes()), str(p)) for p in paths])
    assert sorted(fi.finding.id for fi in merged.findings) == sorted(f.id for f in findings)
    assert merged.stats == {"files_read": 2}


def test_numbers_labels_and_unchanged_modes_read_as_a_person_would_say_them() -> None:
    keep = make(
        "billing_mode",
        "low",
        "Orders",
        {
            "current_mode": "PROVISIONED",
            "recommended_mode": "PROVISIONED",
            "monthly_cost_current": 1148.29,
            "monthly_cost_recommended": 623.78,
            "monthly_savings": 524.51,
            "days_analyzed": 14.0,
            "confidence": 0.003,
            "source": "cloudwatch_billing",
        },
    )
    scan = make(
        "scan",
        "high",
        "Sessions",
        {
            "principal": "arn:aws:iam::1:role/job",
            "operation": "Scan",
            "count": 120,
            "source": "cloudtrail",
            "window_seconds": 900,
            "size_bytes": 2048,
        },
    )
    report = build([keep, scan])
    for text in (render_markdown(report), render_html(report)):
        assert "PROVISIONED → " not in text and "PROVISIONED →" not in text
        assert "keep PROVISIONED, re-size its auto scaling" in text
        assert not re.search(r"\d\.\d+e[-+]\d\d", text)  # no scientific notation anywhere
        assert "$13.33 per million GB-seconds" in text  # Lambda's price per GB-second, stated per million
        assert "Window seconds" not in text and "Size bytes" not in text and "Monthly cost current" not in text
        assert "15 minutes" in text  # window_seconds 900
        assert "Cost now (per month)" in text
        assert "0.3%" in text  # confidence 0.003, a share, not "0"


def test_report_capacity_accepts_the_nulls_billing_accepts(tmp_path: Path) -> None:
    findings = tmp_path / "f.json"
    findings.write_bytes(orjson.dumps({"findings": [f.model_dump(mode="json") for f in every_kind()]}))
    # a billing --input document: 4 one-minute periods, CloudWatch returned nothing for the 2nd and the 4th
    capacity = tmp_path / "cap.json"
    capacity.write_bytes(
        orjson.dumps(
            {
                "table": "Orders",
                "start": "2026-12-01T00:00:00Z",
                "period_seconds": 60,
                "series": [
                    {
                        "index": None,
                        "consumed_read": [60.0, None, 180.0, None],
                        "consumed_write": [None, None, None, None],
                        "provisioned_read": [5.0, None, 5.0, 5.0],
                        "provisioned_write": None,
                    }
                ],
            }
        )
    )
    out = tmp_path / "out"
    assert main(["report", "--findings", str(findings), "--capacity", str(capacity), "--out", str(out)]) == 0
    text = (out / "report.md").read_text()
    # one row per minute: a minute without a datapoint says so, never reads as zero (nor as on-demand)
    rows = [line for line in text.splitlines() if line.startswith("| 2026-12-01 00:0")]
    assert rows[:4] == [
        "| 2026-12-01 00:00 | 1 | 1 | 5 |",
        "| 2026-12-01 00:01 | no data | no data | no data |",
        "| 2026-12-01 00:02 | 3 | 3 | 5 |",
        "| 2026-12-01 00:03 | no data | no data | 5 |",
    ]


def test_the_default_week_is_the_last_complete_iso_week() -> None:
    from auditor.report.inputs import FindingInput
    from auditor.report.model import default_week

    now = datetime(2026, 12, 9, 12, tzinfo=UTC)  # Wednesday of 2026-W50
    last_week = FindingInput(finding=make("scan", "low", "A", {"count": 1}, days=2))  # Wed of W49
    this_week = FindingInput(finding=make("scan", "low", "B", {"count": 1}, days=8))  # Tue of W50
    assert default_week([last_week, this_week], now).label == "2026-W49"
    # an input with findings of this week only still gets a report: that week, marked in progress
    assert default_week([this_week], now).label == "2026-W50"
    report = build_report_from_findings([this_week.finding], now, week=IsoWeek(year=2026, week=50))
    assert "(week in progress)" in render_markdown(report).splitlines()[2]
    assert "(week in progress)" not in render_markdown(build([last_week.finding])).splitlines()[2]

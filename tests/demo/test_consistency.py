"""Issue 30: the demo's outputs tell one story per finding, with one number per fact.

One demo run (module-scoped: it takes most of a minute) feeds every output; :func:`tests.demo.consistency.check`
holds them against findings.json field by field. The mutation tests change one output's renderer (or the one
formatting function it uses for a field) to print a different figure, render that output again from the same demo
state, and require the checker to report it.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from auditor.demo.service import DemoResult, run_service_demo
from auditor.report import report_pages
from auditor.report.model import WeeklyReport
from auditor.sinks import slack_blocks
from tests.demo.consistency import Disagreement, Outputs, check, leaves
from tests.demo.consistency_outputs import NUMBER
from tests.demo.test_demo import DEMO_NOW


@dataclass
class DemoState:
    """The demo's result and what its renderers were given, to render an output again."""

    result: DemoResult
    report: WeeklyReport
    digests: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> DemoState:
    reports: list[WeeklyReport] = []
    digests: list[tuple[Any, dict[str, Any]]] = []
    write_report, render_digest = report_pages.write_report, slack_blocks.render_digest

    def keep_report(report: WeeklyReport, out: str | Path) -> tuple[Path, Path]:
        reports.append(report)
        return write_report(report, out)

    def keep_digest(digest: Any, **kwargs: Any) -> dict[str, Any]:
        digests.append((digest, kwargs))
        return render_digest(digest, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_pages, "write_report", keep_report)
        mp.setattr(slack_blocks, "render_digest", keep_digest)
        result = run_service_demo(tmp_path_factory.mktemp("consistency"), now=DEMO_NOW)
    return DemoState(result, reports[-1], digests)


def _cli(args: list[str], result: DemoResult) -> str:
    """What ``ddb-audit ARGS`` prints; ``demo`` shows ``result`` instead of running the demo again."""
    from auditor.cli import main

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setattr("auditor.demo.service.run_service_demo", lambda *_a, **_k: result)
        main(args)
    return out.getvalue()


def _posts(state: DemoState) -> list[dict[str, Any]]:
    rendered = [slack_blocks.render_digest(d, **kw) for d, kw in state.digests]
    return [p for p in rendered if p]


def collect(state: DemoState, only: str | None = None, base: Outputs | None = None) -> Outputs:
    """Every output of the demo state (``only``: render just that output again, the rest from ``base``)."""
    result, out = state.result, state.result.out
    trail = str(out / "trail")
    renders: dict[str, Callable[[], Any]] = {
        "report_md": lambda: report_pages.render_markdown(state.report),
        "report_html": lambda: report_pages.render_html(state.report),
        "slack_posts": lambda: _posts(state),
        "listing": lambda: _cli(["demo", "--out", str(out)], result),
        "cli_json": lambda: _cli(["demo", "--out", str(out), "--format", "json"], result),
        "cli_csv": lambda: _cli(["demo", "--out", str(out), "--format", "csv"], result),
        "cli_markdown": lambda: _cli(["demo", "--out", str(out), "--format", "markdown"], result),
        # one process reads the files as the service does (docs/architecture.md, "Several processes")
        "trail_json": lambda: _cli(["analyze-trail", trail, "--format", "json", "--jobs", "1"], result),
        "trail_table": lambda: _cli(["analyze-trail", trail, "--jobs", "1"], result),
        "whatif_json": lambda: _cli(["what-if", trail, "--format", "json", "--jobs", "1"], result),
        "whatif_table": lambda: _cli(["what-if", trail, "--jobs", "1"], result),
    }
    if base is not None and only is not None:
        return replace(base, **{only: renders[only]()})
    findings = json.loads((out / "findings.json").read_text())["findings"]
    return Outputs(
        findings=findings,
        report_md=(out / "report.md").read_text(),
        report_html=(out / "report.html").read_text(),
        slack_posts=result.slack_posts,
        **{
            name: render()
            for name, render in renders.items()
            if name not in ("report_md", "report_html", "slack_posts")
        },
    )


@pytest.fixture(scope="module")
def outputs(state: DemoState) -> Outputs:
    return collect(state)


@pytest.fixture(scope="module")
def found(outputs: Outputs) -> list[Disagreement]:
    return check(outputs)


def test_the_outputs_are_read_back(outputs: Outputs, state: DemoState) -> None:
    """The written files are what the captured renderers give again (the mutation tests re-render from these)."""
    assert outputs.report_md == report_pages.render_markdown(state.report)
    assert outputs.slack_posts == _posts(state)
    assert outputs.findings and "SEVERITY  STATUS" in outputs.listing


#: The outputs computed again from the demo's trail (its input's period) rather than read from the stored findings.
FROM_THE_TRAIL = ("analyze-trail", "what-if")


def test_every_output_of_the_stored_findings_agrees_with_them(found: list[Disagreement]) -> None:
    """The report (HTML and Markdown), the Slack digests, the listing and the CLI's formats show the findings'
    own figures."""
    mine = [d for d in found if not d.output.startswith(FROM_THE_TRAIL)]
    assert not mine, "\n".join(str(d) for d in mine)


def test_analyze_trail_and_what_if_on_the_same_trail_agree_with_the_findings(found: list[Disagreement]) -> None:
    """The service (one contribution per trail object, merged in the files' order, over the part of the week the
    trail had data in) and ``analyze-trail``/``what-if`` on the same files (over their input) state the same figures,
    the heavy-hitter estimates included."""
    theirs = [d for d in found if d.output.startswith(FROM_THE_TRAIL)]
    assert not theirs, "\n".join(str(d) for d in theirs)


#: Figures of a heavy-hitter sketch (lower bounds, ``estimate_error`` at most under): a count, and what is derived
#: from it with its denominator (the key-identified requests, the period's seconds).
_ESTIMATED = {"requests": None, "reads": None, "writes": None, "count": None}
_DERIVED = {"share": "key_requests", "reads_per_second": "window_seconds", "writes_per_second": "window_seconds"}


def test_analyze_trail_in_several_processes_differs_from_one_only_within_the_stated_estimate_error(
    state: DemoState,
) -> None:
    """Several processes split the events (each counts its share of every window): every figure is the same as in one
    process except a hot key's sketch estimates, which stay within the ``estimate_error`` both state."""
    trail = str(state.result.out / "trail")
    one = json.loads(_cli(["analyze-trail", trail, "--format", "json", "--jobs", "1"], state.result))
    two = json.loads(_cli(["analyze-trail", trail, "--format", "json", "--jobs", "2"], state.result))
    assert {k: v for k, v in one.items() if k != "findings"} == {k: v for k, v in two.items() if k != "findings"}
    theirs = {f["id"]: f for f in two["findings"]}
    assert set(theirs) == {f["id"] for f in one["findings"]}
    for mine in one["findings"]:
        other = theirs[mine["id"]]
        a, b = dict(leaves(mine)), dict(leaves(other))
        assert set(a) == set(b), mine["id"]
        error = max(mine["evidence"].get("estimate_error") or 0, other["evidence"].get("estimate_error") or 0)
        for path, value in a.items():
            name = path.rsplit(".", 1)[-1]
            if mine["kind"] != "hot_key" or value == b[path] or path.count(".") > 1:
                assert value == b[path], (mine["id"], path)
            elif name in _ESTIMATED:
                assert abs(value - b[path]) <= error, (mine["id"], path, value, b[path], error)
            else:
                base = mine["evidence"][_DERIVED[name]]
                assert abs(value - b[path]) <= error / base + 0.001, (mine["id"], path, value, b[path])


# ------------------------------------------------------------------------------------------------ mutations


def bump(text: str) -> str:
    """``text`` with its first figure printed differently (doubled plus one, the decimals kept)."""
    m = NUMBER.search(text)
    if m is None:
        return text
    token = m.group().replace(",", "")
    decimals = len(token.split(".")[1]) if "." in token else 0
    return text[: m.start()] + f"{float(token) * 2 + 1:,.{decimals}f}" + text[m.end() :]


def _bump_evidence(doc: Any) -> Any:
    """A findings document with one evidence figure of the first finding changed."""
    for f in doc.get("findings", []):
        f = f if isinstance(f, dict) else None
        for name, value in (f or {}).get("evidence", {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                f["evidence"][name] = value * 2 + 1  # type: ignore[index]
                return doc
    return doc


Patch = Callable[[pytest.MonkeyPatch], None]


def _filter(html: bool, name: str) -> Patch:
    def patch(mp: pytest.MonkeyPatch) -> None:
        env = report_pages.html_environment() if html else report_pages.markdown_environment()
        original = env.filters[name]
        mp.setitem(env.filters, name, lambda value, *a: bump(original(value, *a)))

    return patch


def _week_values(html: bool) -> Patch:
    def patch(mp: pytest.MonkeyPatch) -> None:
        env = report_pages.html_environment() if html else report_pages.markdown_environment()
        mp.setitem(env.globals, "value_text", lambda d, v: bump(report_pages.value_text(d, v)))

    return patch


def _evidence_values(mp: pytest.MonkeyPatch) -> None:
    original = report_pages._evidence_value
    mp.setattr(report_pages, "_evidence_value", lambda name, value: bump(original(name, value)))


def _status_label(html: bool) -> Patch:
    def patch(mp: pytest.MonkeyPatch) -> None:
        env = report_pages.html_environment() if html else report_pages.markdown_environment()
        labels = env.globals["STATUS_LABELS"]
        mp.setitem(labels, "ongoing", labels["new"])

    return patch


def _slack_cut(limit: int) -> Patch:
    def patch(mp: pytest.MonkeyPatch) -> None:
        original = slack_blocks.truncate
        mp.setattr(slack_blocks, "truncate", lambda t, n: original(bump(t) if n == limit else t, n))

    return patch


def _slack_severity(mp: pytest.MonkeyPatch) -> None:
    original = slack_blocks.escape_mrkdwn
    mp.setattr(slack_blocks, "escape_mrkdwn", lambda t: original({"CRITICAL": "HIGH", "HIGH": "MEDIUM"}.get(t, t)))


def _listing_titles(mp: pytest.MonkeyPatch) -> None:
    from auditor import findings_text

    original = findings_text.shorten
    mp.setattr(findings_text, "shorten", lambda t, n: original(bump(t), n))


def _listing_cut(mp: pytest.MonkeyPatch) -> None:
    from auditor import findings_text

    mp.setattr(findings_text, "shorten", lambda t, n: t if len(t) <= n else t[: n - 2] + "…")  # where it falls


def _listing_status(mp: pytest.MonkeyPatch) -> None:
    from auditor import findings_text

    original = findings_text.render_columns

    def columns(rows: Any, header: Any) -> str:
        swap = {"ongoing": "new", "new": "ongoing"}
        return original([(r[0], swap.get(r[1], r[1]), *r[2:]) for r in rows], header)

    mp.setattr(findings_text, "render_columns", columns)


def _json_evidence(module: str) -> Patch:
    def patch(mp: pytest.MonkeyPatch) -> None:
        from auditor.findings_text import to_json

        mp.setattr(f"{module}.to_json", lambda doc: to_json(_bump_evidence(json.loads(to_json(doc)))))

    return patch


def _csv_evidence(mp: pytest.MonkeyPatch) -> None:
    from auditor import formats

    original = formats.csv_line

    def line(cell: str) -> str:
        if not cell.startswith("{"):
            return original(cell)
        doc = _bump_evidence({"findings": [{"evidence": json.loads(cell)}]})
        return original(json.dumps(doc["findings"][0]["evidence"]))

    mp.setattr(formats, "csv_line", line)


def _markdown_texts(mp: pytest.MonkeyPatch) -> None:
    from auditor import findings_text

    original = findings_text.markdown_text
    mp.setattr(findings_text, "markdown_text", lambda t: bump(original(t)))


def _trail_severity(mp: pytest.MonkeyPatch) -> None:
    from auditor import findings_text

    original = findings_text.findings_table

    def table(findings: Any) -> list[str]:
        swap = {"CRITICAL": "HIGH", "HIGH": "MEDIUM", "MEDIUM": "LOW", "LOW": "INFO", "INFO": "LOW"}
        return [re.sub(r"^(\[\d+\] )(\w+)", lambda m: m[1] + swap[m[2]], line) for line in original(findings)]

    mp.setattr(findings_text, "findings_table", table)


def _whatif_headroom(mp: pytest.MonkeyPatch) -> None:
    from auditor.findings_text import to_json

    def changed(doc: dict[str, Any]) -> str:
        return to_json({**doc, "items": [{**i, "headroom": i["headroom"] * 2 + 1} for i in doc["items"]]})

    mp.setattr("auditor.cli.what_if.to_json", changed)


def _whatif_peak(mp: pytest.MonkeyPatch) -> None:
    from auditor.whatif import whatif_text

    original = whatif_text._rows
    mp.setattr(whatif_text, "_rows", lambda *a: [(*r[:6], bump(r[6]), *r[7:]) for r in original(*a)])


#: (output rendered again, the output's name in a disagreement, the field it must report, the patch)
MUTATIONS: list[tuple[str, str, str, Patch]] = [
    *(
        (attr, name, fld, patch)
        for html, attr, name in ((False, "report_md", "report.md"), (True, "report_html", "report.html"))
        for fld, patch in (
            ("hot_keys.share", _filter(html, "pct")),
            ("top_scanners.calls", _filter(html, "num")),
            ("hot_keys.headroom", _filter(html, "num")),
            ("billing.cost_now", _filter(html, "money")),
            ("items.size", _filter(html, "bytes")),
            ("week.", _week_values(html)),
            ("evidence.", _evidence_values),
            ("status", _status_label(html)),
        )
    ),
    ("slack_posts", "slack", "title", _slack_cut(300)),
    ("slack_posts", "slack", "fix", _slack_cut(400)),
    ("slack_posts", "slack", "severity", _slack_severity),
    ("listing", "listing", "title", _listing_titles),
    ("listing", "listing", "status", _listing_status),
    ("listing", "listing", "title.cut", _listing_cut),
    ("cli_json", "demo --format json", "evidence.", _json_evidence("auditor.cli.demo")),
    ("cli_csv", "demo --format csv", "evidence.", _csv_evidence),
    ("cli_markdown", "demo --format markdown", "title", _markdown_texts),
    ("trail_json", "analyze-trail json", "evidence.", _json_evidence("auditor.cli.common")),
    ("trail_table", "analyze-trail table", "severity", _trail_severity),
    ("whatif_json", "what-if", "headroom", _whatif_headroom),
    ("whatif_table", "what-if", "table.peak_per_second", _whatif_peak),
]


@contextlib.contextmanager
def _patched(patch: Patch) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        patch(mp)
        yield


@pytest.mark.parametrize(
    ("attr", "output", "fld", "patch"), MUTATIONS, ids=[f"{m[1]}:{m[2].rstrip('.')}" for m in MUTATIONS]
)
def test_a_changed_figure_is_reported(
    state: DemoState, outputs: Outputs, found: list[Disagreement], attr: str, output: str, fld: str, patch: Patch
) -> None:
    with _patched(patch):
        changed = collect(state, only=attr, base=outputs)
    assert getattr(changed, attr) != getattr(outputs, attr), "the mutation changed nothing"
    new = [d for d in check(changed) if d not in found and d.output == output]
    assert any(d.field.startswith(fld) or d.field.endswith(fld) for d in new), new

"""The demo's outputs held against each other, finding by finding (issue 30: one number per fact in every output).

:func:`check` takes what one demo run produced (:class:`Outputs`: findings.json, the weekly report as HTML and
Markdown, the Slack digests, the CLI's listing, JSON and CSV, ``analyze-trail`` and ``what-if`` on the demo's trail)
and returns every :class:`Disagreement`: for each finding of findings.json, each figure another output shows for it
(severity, status, counts, shares, peaks, rates, dollars, sizes, headroom) read back from that output's own format and
compared with the finding's. A figure agrees when it is the finding's rounded to the decimals it shows, never 0 for a
figure that is not. Nothing here knows the demo's findings: it iterates over the findings and their evidence fields.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from auditor.models.finding import KIND_LABELS, FindingKind
from auditor.report.report_pages import EVIDENCE_LABELS
from tests.demo.consistency_outputs import (
    ParsedReport,
    Table,
    agrees,
    columns,
    md_plain,
    numbers,
    parse_html_report,
    parse_markdown_report,
    shown_number,
    slack_items,
)

#: The lifecycle's status words: the one vocabulary of every output.
STATUSES = ("new", "ongoing", "worsened", "resolved")
ITEM_LIMIT_BYTES = 409_600
#: The evidence field that holds a kind's own count in one sighting (what ``totals.count`` sums).
MEASURE_FIELDS = {
    "scan": ("count",),
    "item_size_exceeded": ("count",),
    "hot_key": ("requests",),
    "low_cardinality_key": ("requests",),
    "throttling": ("read_throttle_events", "write_throttle_events"),
}
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400}


@dataclass(frozen=True)
class Disagreement:
    """One figure an output shows for a finding that is not the finding's."""

    finding_id: str
    output: str
    field: str
    expected: str
    shown: str

    def __str__(self) -> str:
        return f"{self.output}: {self.finding_id} {self.field}: shows {self.shown!r}, the finding has {self.expected!r}"


@dataclass
class Outputs:
    """What one demo run produced, each output as its text (the Slack digests as the posted payloads)."""

    findings: list[dict[str, Any]]
    report_md: str
    report_html: str
    slack_posts: list[dict[str, Any]]
    listing: str
    cli_json: str
    cli_csv: str
    cli_markdown: str
    trail_json: str
    trail_table: str
    whatif_json: str
    whatif_table: str


# ------------------------------------------------------------------------------------------------ the model's facts


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def key_text(key: Any) -> str:
    if isinstance(key, Mapping):
        return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in key.items())
    return "" if key is None else str(key)


def period_count(f: Mapping[str, Any]) -> float:
    """The finding's count over its period: its totals, else its one sighting's measure."""
    totals = f.get("totals")
    if totals:
        return float(totals["count"])
    ev = f["evidence"]
    return float(sum(_num(ev.get(n)) or 0 for n in MEASURE_FIELDS.get(f["kind"], ()))) or 1.0


def source_count(f: Mapping[str, Any], source: str) -> float | None:
    totals = f.get("totals") or {}
    part = (totals.get("by_source") or {}).get(source)
    if part:
        return float(part["count"])
    return period_count(f) if f["evidence"].get("source", "cloudtrail") == source else None


def period_share(f: Mapping[str, Any]) -> float | None:
    totals = f.get("totals") or {}
    if totals.get("share_base"):
        return float(min(1.0, totals["count"] / totals["share_base"]))
    return _num(f["evidence"].get("share"))


def savings(f: Mapping[str, Any]) -> float:
    """The dollars a month the finding's fix saves (its estimate, or what the unused resource costs)."""
    ev = f["evidence"]
    if ev.get("preliminary") is True or ev.get("collecting_data") is True:
        return 0.0
    field = "monthly_cost" if f["kind"] in ("idle_table", "unused_index") else "monthly_savings"
    return max(0.0, _num(ev.get(field)) or 0.0)


def _where(f: Mapping[str, Any]) -> str:
    return f["table"] + (f" / {f['index']}" if f.get("index") else "")


def _sub_periods(f: Mapping[str, Any]) -> set[str]:
    named = f["evidence"].get("sub_periods")
    return set(named) if isinstance(named, Mapping | list) else set()


# ------------------------------------------------------------------------------------------------ comparisons


class _Log:
    """Collects the disagreements of one output."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.found: list[Disagreement] = []

    def add(self, f: Mapping[str, Any] | str, field: str, expected: Any, shown: Any) -> None:
        fid = f if isinstance(f, str) else str(f["id"])
        self.found.append(Disagreement(fid, self.output, field, str(expected), str(shown)))

    def figure(
        self, f: Mapping[str, Any] | str, field: str, expected: float | None, shown: str, scale: float = 1.0
    ) -> None:
        """``shown`` must be ``expected`` rounded to the decimals it shows (and not 0 when ``expected`` is not)."""
        if expected is None:
            if shown_number(shown) is not None:
                self.add(f, field, "no figure", shown)
            return
        parsed = shown_number(shown)
        if not agrees(shown, expected, scale) or (parsed is not None and parsed[0] == 0 and expected != 0):
            self.add(f, field, expected * scale, shown)

    def same(self, f: Mapping[str, Any], field: str, expected: Any, shown: Any) -> None:
        if expected != shown:
            self.add(f, field, expected, shown)

    def figures_in(self, f: Mapping[str, Any], field: str, expected: str, shown: str, prefix: bool = False) -> None:
        """The figures of a text (a title, a fix) as the finding's text has them, in order; a text cut short (``…``)
        or a ``prefix`` of it (a digest's first sentence of the fix) keeps the first ones."""
        cut = shown.removesuffix("…")
        if (
            cut != shown
            and expected.startswith(cut)
            and cut[-1:].isalnum()
            and expected[len(cut) : len(cut) + 1].isalnum()
        ):
            self.add(f, field + ".cut", "cut at a word boundary", shown[-20:])
        mine, theirs = numbers(expected), numbers(cut)
        if shown.endswith("…") or prefix:
            mine = mine[: len(theirs)]
        if mine != theirs:
            self.add(f, field, " ".join(mine), " ".join(theirs))


def _col(row: Mapping[str, str], name: str) -> str:
    """The cell of column ``name``, or of the column whose name is ``name`` with a label after it ("Per hour (busiest
    window)"); "" when the row has none."""
    if name in row:
        return row[name]
    return next((v for k, v in row.items() if k.startswith(name + " (")), "")


def _severity(text: str) -> str:
    return text.split(" ")[0].strip().lower()


# ------------------------------------------------------------------------------------------------ findings.json


def check_findings(findings: list[dict[str, Any]]) -> list[Disagreement]:
    """findings.json on its own: one status vocabulary, references to findings that exist, and each evidence count
    or share for the finding's period (as its totals) unless the evidence names it a sub-period's."""
    log = _Log("findings.json")
    ids = {f["id"] for f in findings}
    kinds_on = {(f["table"], f["kind"]) for f in findings}
    for f in findings:
        ev = f["evidence"]
        if f.get("status") not in STATUSES:
            log.add(f, "status", "/".join(STATUSES), f.get("status"))
        for ref in ev.get("related_finding_ids") or []:
            if ref not in ids:
                log.add(f, "related_finding_ids", "an existing finding", ref)
        days = _num(ev.get("days_analyzed"))
        if f["kind"] in ("billing_mode", "table_class") and days is not None and days < 7:
            for text in ("title", "summary", "recommendation"):
                if "$" in f[text]:
                    log.add(f, text, "no dollar figure from under 7 days of data", f[text])
        for kind in re.findall(r"see the (\w+) findings", f["recommendation"]):
            if (f["table"], kind) not in kinds_on:
                log.add(f, "recommendation", f"{kind} findings on {f['table']}", f"see the {kind} findings")
        totals = f.get("totals")
        if not totals:
            continue
        by_source = totals.get("by_source") or {}
        for i, fact in enumerate(ev.get("facts") or []):
            part = by_source.get(fact.get("source")) if isinstance(fact, Mapping) else None
            if part and _num(fact.get("count")) is not None and fact["count"] != part["count"]:
                log.add(f, f"evidence.facts[{i}].count", part["count"], fact["count"])
        sub = _sub_periods(f)
        fields = [n for n in MEASURE_FIELDS.get(f["kind"], ()) if n in ev and n not in sub]
        if fields and len(fields) == len(MEASURE_FIELDS[f["kind"]]):
            mine = sum(_num(ev[n]) or 0 for n in fields)
            source = ev.get("source")
            want = source_count(f, source) if isinstance(source, str) else period_count(f)
            if want is not None and mine != want:
                log.add(f, "evidence." + "+".join(fields), want, mine)
        share = _num(ev.get("share"))
        if share is not None and "share" not in sub and totals.get("share_base"):
            log.figure(f, "evidence.share", period_share(f), f"{share:.4f}")
    return log.found


# ------------------------------------------------------------------------------------------------ the weekly report


def _label_names(evidence: Mapping[str, Any]) -> dict[str, str]:
    return {EVIDENCE_LABELS.get(n) or n.replace("_", " ").capitalize(): n for n in evidence}


def _evidence_figure(log: _Log, f: Mapping[str, Any], name: str, value: Any, shown: str) -> None:
    if isinstance(value, Mapping):
        parts = re.split(r"(?:^|, )([A-Za-z_]+): ", shown)
        pairs = dict(zip(parts[1::2], parts[2::2], strict=False))
        for k, v in value.items():
            if _num(v) is not None and k in pairs:
                _evidence_figure(log, f, f"{name}.{k}", v, pairs[k])
        return
    number = _num(value)
    if number is None or "…" in shown:
        return
    unit = re.search(r"\b(second|minute|hour|day)s?\b", shown)
    if name.endswith("_seconds") and unit:
        log.figure(f, f"evidence.{name}", number, shown, 1 / _UNIT_SECONDS[unit.group(1)])
    else:
        log.figure(f, f"evidence.{name}", number, shown, 100.0 if shown.rstrip().endswith("%") else 1.0)


def _details(log: _Log, f: Mapping[str, Any], report: ParsedReport) -> None:
    d = report.details.get(f["id"])
    if d is None:
        log.add(f, "present", "in Finding details", "missing")
        return
    log.same(f, "title", f["title"], d.title)
    log.same(f, "summary", f["summary"], d.summary)
    log.same(f, "recommendation", f["recommendation"], d.fix)
    log.same(f, "severity", f["severity"], _severity(d.meta[0]) if d.meta else "")
    log.same(f, "status", f.get("status"), d.meta[1].lower() if len(d.meta) > 1 else "")
    saves = next((m for m in d.meta if m.startswith("saves ")), None)
    if saves is not None or savings(f) > 0:
        log.figure(f, "monthly_savings", savings(f), saves or "-")
    names = _label_names(f["evidence"])
    for label, shown in d.evidence:
        bare = [label[:i] for i in range(len(label)) if label.startswith(" (", i)]  # a sub-period's label cut off
        name = names.get(label) or next((names[b] for b in bare if b in names), None)
        if name is None:
            log.add(f, "evidence", "a field of the finding's evidence", label)
            continue
        if name in _sub_periods(f) and not label.endswith(")"):
            log.add(f, f"evidence.{name}", "labelled with its sub-period", label)
        _evidence_figure(log, f, name, f["evidence"][name], shown)


def _rows(report: ParsedReport, section: str, first: str, *need: str) -> list[tuple[str, dict[str, str]]]:
    """The rows of the section's table whose first column is ``first`` (and that has the columns ``need``)."""
    tables: list[Table] = [
        t for t in report.tables(section) if t.header and t.header[0] == first and set(need) <= set(t.header)
    ]
    widest = max((len(t.header) for t in tables), default=0)  # the section's table, not a chart's data table
    tables = [t for t in tables if len(t.header) == widest]
    return [(t.heading, r) for t in tables for r in t.records()]


def _one_row(log: _Log, f: Mapping[str, Any], section: str, rows: list[dict[str, str]]) -> dict[str, str] | None:
    if len(rows) != 1:
        log.add(f, section, "one row", f"{len(rows)} rows")
        return None
    return rows[0]


def _row_common(log: _Log, f: Mapping[str, Any], row: dict[str, str], prefix: str) -> None:
    if "Severity" in row:
        log.same(f, f"{prefix}.severity", f["severity"], _severity(_col(row, "Severity")))
    if "Status" in row:
        log.same(f, f"{prefix}.status", f.get("status"), _col(row, "Status").lower())


def _sections(log: _Log, f: Mapping[str, Any], report: ParsedReport) -> None:
    ev, kind, where = f["evidence"], f["kind"], _where(f)
    groups = [
        h.split(" (")[0].lower()
        for h, r in _rows(report, "Findings this week", "Severity")
        if r.get("Finding") == f["title"] and r.get("Table") == where
    ]
    if groups != [f.get("status")]:
        log.add(f, "findings_this_week.status", f.get("status"), ", ".join(groups) or "missing")
    if kind == "hot_key":
        rows = [r for _, r in _rows(report, "Hot keys", "Key") if _col(r, "Key") == key_text(ev.get("key"))]
        row = _one_row(log, f, "hot_keys", [r for r in rows if _col(r, "Table") == where])
        if row:
            log.figure(f, "hot_keys.share", period_share(f), _col(row, "Share"), 100.0)
            log.figure(f, "hot_keys.requests", period_count(f), _col(row, "Requests"))
            log.figure(f, "hot_keys.headroom", _num(ev.get("headroom_factor")), _col(row, "Headroom"))
            _row_common(log, f, row, "hot_keys")
    if _num(ev.get("headroom_factor")) and f.get("status") in ("new", "ongoing", "worsened"):
        attr = ev.get("key_attribute")
        key = key_text(ev["key"]) if ev.get("key") else f"{attr} (busiest value)"
        rows = [
            r
            for _, r in _rows(report, "What throttles first", "Key")
            if _col(r, "Key") == key and _col(r, "Table") == where
        ]
        row = _one_row(log, f, "what_throttles_first", rows)
        if row:
            log.figure(f, "what_throttles_first.headroom", _num(ev["headroom_factor"]), _col(row, "Headroom"))
    if kind == "scan":
        principal = ev.get("principal") or "(not logged: CloudWatch's count)"
        rows = [
            r
            for _, r in _rows(report, "Top scanners", "Principal")
            if _col(r, "Principal") == principal
            and _col(r, "Table") == where
            and _col(r, "Operation") == (ev.get("operation") or "Scan")
        ]
        row = _one_row(log, f, "top_scanners", rows)
        if row:
            log.figure(f, "top_scanners.calls", period_count(f), _col(row, "Calls") or _col(row, "Count"))
            log.figure(
                f, "top_scanners.per_hour", _num((f.get("totals") or {}).get("peak_per_hour")), _col(row, "Per hour")
            )
            _row_common(log, f, row, "top_scanners")
    if kind in ("large_item", "item_growth", "item_size_exceeded"):
        _item_row(log, f, report)
    if kind in ("billing_mode", "table_class"):
        _billing_row(log, f, report)
    if kind == "throttling" and f.get("status") != "resolved":
        _throttle_rows(log, f, report)


def _item_row(log: _Log, f: Mapping[str, Any], report: ParsedReport) -> None:
    ev = f["evidence"]
    key = key_text(ev.get("key")) if ev.get("key") else "(key not logged)"
    label = KIND_LABELS[FindingKind(f["kind"])]
    rows = [
        r
        for _, r in _rows(report, "Largest and growing items", "Key")
        if _col(r, "Key") == key and _col(r, "Table") == f["table"] and r.get("Kind") == label
    ]
    row = _one_row(log, f, "items", rows)
    if not row:
        return
    size = _num(ev.get("size_bytes"))
    if size is not None:
        log.figure(f, "items.size", size, _col(row, "Size"), 1 / 1024 if "KB" in _col(row, "Size") else 1.0)
        log.figure(f, "items.of_limit", size / ITEM_LIMIT_BYTES, _col(row, "Of limit"), 100.0)
    growth = _num(ev.get("bytes_per_day"))
    if growth:
        log.figure(
            f,
            "items.growth_per_day",
            growth,
            _col(row, "Growth/day"),
            1 / 1024 if "KB" in _col(row, "Growth/day") else 1.0,
        )
    log.figure(f, "items.days_to_limit", _num(ev.get("days_to_limit")), _col(row, "Days to limit"))
    rejected = period_count(f) if f["kind"] == "item_size_exceeded" else None
    log.figure(f, "items.rejected_writes", rejected, _col(row, "Rejected writes"))
    _row_common(log, f, row, "items")


def _billing_row(log: _Log, f: Mapping[str, Any], report: ParsedReport) -> None:
    ev = f["evidence"]
    label = KIND_LABELS[FindingKind(f["kind"])]
    rows = [
        r
        for _, r in _rows(report, "Billing recommendations", "Table")
        if _col(r, "Table") == _where(f) and _col(r, "Change").startswith(label + ":")
    ]
    row = _one_row(log, f, "billing", rows)
    if not row:
        return
    days = _num(ev.get("days_analyzed"))
    instead = "collecting data" in _col(row, "Change") or "not advised" in _col(row, "Change")
    if days is not None and days < 7 and "collecting data" not in _col(row, "Change"):
        log.add(f, "billing.change", "collecting data (under 7 days)", _col(row, "Change"))
    log.figure(f, "billing.cost_now", _num(ev.get("monthly_cost_current")), _col(row, "Cost now/month"))
    if not instead:
        log.figure(f, "billing.cost_after", _num(ev.get("monthly_cost_recommended")), _col(row, "Cost after/month"))
        if "preliminary" in _col(row, "Saving/month"):
            log.figure(f, "billing.saving", _num(ev.get("monthly_savings")), _col(row, "Saving/month"))
        else:
            log.figure(f, "billing.saving", savings(f), _col(row, "Saving/month"))
    elif shown_number(_col(row, "Saving/month")) is not None:
        log.add(f, "billing.saving", "no saving (" + _col(row, "Change") + ")", _col(row, "Saving/month"))
    log.figure(f, "billing.days_analysed", days, _col(row, "Days analysed"))
    log.figure(f, "billing.confidence", _num(ev.get("confidence")), _col(row, "Confidence"), 100.0)
    _row_common(log, f, row, "billing")


def _throttle_rows(log: _Log, f: Mapping[str, Any], report: ParsedReport) -> None:
    ev = f["evidence"]
    source = ev.get("source") if isinstance(ev.get("source"), str) else "cloudtrail"
    rows = [
        r
        for _, r in _rows(report, "Capacity and throttling", "Table")
        if _col(r, "Table") == _where(f) and r.get("Counted by", "").lower().startswith(source)
    ]
    if not rows:
        log.add(f, "throttles", "rows", "none")
        return
    reads = sum((shown_number(_col(r, "Read events")) or (0.0, 0))[0] for r in rows)
    writes = sum((shown_number(_col(r, "Write events")) or (0.0, 0))[0] for r in rows)
    count = source_count(f, source)
    if count != reads + writes:
        log.add(f, "throttles.events", count, reads + writes)
    ev_reads, ev_writes = _num(ev.get("read_throttle_events")), _num(ev.get("write_throttle_events"))
    if ev_reads is not None and ev_writes is not None and ev_reads + ev_writes == count:
        log.figure(f, "throttles.read_events", ev_reads, f"{reads:.0f}")
    elif reads and writes:
        log.add(f, "throttles.read_events", "a read/write split of the period's count (the finding has none)", reads)


#: The headline's breakdown line per kind with money (the report's words).
MONEY_SOURCES = {
    "billing_mode": "billing mode",
    "table_class": "table class",
    "idle_table": "idle tables",
    "unused_index": "unused indexes",
}


def held(f: Mapping[str, Any], findings: list[dict[str, Any]]) -> bool:
    """A capacity recommendation towards provisioned capacity for a table with an open throttling finding: not
    advised, no saving counted."""
    ev = f["evidence"]
    if f["kind"] != "billing_mode" or ev.get("recommended_mode") != "PROVISIONED" or ev.get("collecting_data"):
        return False
    place = (f.get("account"), f.get("region"), f["table"])
    return any(
        t["kind"] == "throttling"
        and t.get("status") != "resolved"
        and (t.get("account"), t.get("region"), t["table"]) == place
        for t in findings
    )


def _week_totals(log: _Log, findings: list[dict[str, Any]], report: ParsedReport) -> None:
    """The report's totals (the summary, its savings breakdown, the week's measures) are the findings' sums."""
    live = [f for f in findings if f.get("status") != "resolved"]
    money: dict[str, float] = {}
    for f in live:
        if f["kind"] in MONEY_SOURCES and not held(f, findings) and savings(f) > 0:
            money[MONEY_SOURCES[f["kind"]]] = money.get(MONEY_SOURCES[f["kind"]], 0.0) + savings(f)

    def sources(kind: str, source: str) -> float:
        return sum(source_count(f, source) or 0 for f in live if f["kind"] == kind)

    expected: dict[str, float] = {
        "Open findings": len(live),
        "Critical and high findings": sum(1 for f in live if f["severity"] in ("critical", "high")),
        "Tables with findings": len({(f.get("account"), f.get("region"), f["table"]) for f in live}),
        "Scan calls (CloudTrail)": sources("scan", "cloudtrail"),
        "Scan requests (CloudWatch)": sources("scan", "cloudwatch"),
        "Throttled calls (CloudTrail)": sources("throttling", "cloudtrail"),
        "Throttle events (CloudWatch)": sources("throttling", "cloudwatch"),
        "Hot keys": sum(1 for f in live if f["kind"] == "hot_key"),
        "Writes rejected for item size": sum(period_count(f) for f in live if f["kind"] == "item_size_exceeded"),
        "Potential savings ($/month)": sum(money.values()),
    }
    for _, row in _rows(report, "Tables that need attention", "Table", "Open", "Savings/month"):
        table = _col(row, "Table").split(" ")[0]  # the HTML adds the Region (a table name has no space)
        mine = [f for f in live if f["table"] == table]
        log.figure("(the week)", f"tables.{table}.open", len(mine), _col(row, "Open"))
        money_of = sum(savings(f) for f in mine if f["kind"] in MONEY_SOURCES and not held(f, findings))
        log.figure("(the week)", f"tables.{table}.savings", money_of or None, _col(row, "Savings/month"))
    for _, row in _rows(report, "Week over week", "Measure"):
        name = _col(row, "Measure")
        shown = next((v for k, v in row.items() if k.startswith("This week")), "")
        if name in expected:
            log.figure("(the week)", f"week.{name}", expected[name], shown)
    for _, row in _rows(report, "Summary", "Open findings"):
        log.figure("(the week)", "summary.open_findings", len(live), _col(row, "Open findings"))
        for status in ("new", "worsened", "resolved"):
            log.figure(
                "(the week)",
                f"summary.{status}",
                sum(1 for f in findings if f.get("status") == status),
                row[status.capitalize()],
            )
        log.figure("(the week)", "summary.savings", sum(money.values()), _col(row, "Potential savings"))
    said = re.search(r"(\d+) open findings?.*?, (\d+) new", report.headline)
    if said:
        log.figure("(the week)", "headline.open_findings", len(live), said.group(1))
        log.figure("(the week)", "headline.new", sum(1 for f in findings if f.get("status") == "new"), said.group(2))
    saved = re.search(r"Up to (\$\S+)/month", report.headline)
    if saved or sum(money.values()) > 0:
        log.figure("(the week)", "headline.savings", sum(money.values()), saved.group(1) if saved else "-")
    shown_parts = dict(re.findall(r"(?:^|, )([a-z ]+) (\$\d+(?:,\d{3})*(?:\.\d+)?)", report.breakdown))
    for source in sorted(set(money) | set(shown_parts)):
        log.figure("(the week)", f"summary.savings.{source}", money.get(source, 0.0), shown_parts.get(source, "-"))


def check_report(findings: list[dict[str, Any]], report: ParsedReport, output: str) -> list[Disagreement]:
    log = _Log(output)
    for f in findings:
        _details(log, f, report)
        _sections(log, f, report)
    _week_totals(log, findings, report)
    return log.found


# ------------------------------------------------------------------------------------------------ Slack


def check_slack(findings: list[dict[str, Any]], posts: list[dict[str, Any]]) -> list[Disagreement]:
    """Each finding a digest lists: its severity, and the figures of its title and fix, as the finding's.

    A digest is its run's message, and a finding is alerted once (then again only when it worsens): the digest that
    alerted a finding still ``new``, or the last one of a finding ``worsened``, shows the finding as it is; an earlier
    digest of a finding seen again since (``ongoing``, or before its worsening) showed it as it was then, and only
    its severity is held against the finding's (an ``ongoing`` finding has not worsened since).
    """
    log = _Log("slack")
    by_id = {f["id"]: f for f in findings}
    items = slack_items(posts)
    last = {item.finding_id: n for n, item in enumerate(items)}
    for n, item in enumerate(items):
        f = by_id.get(item.finding_id)
        if f is None:
            log.add(item.finding_id, "present", "a finding of findings.json", f"digest {item.post + 1}")
            continue
        current = f.get("status") == "new" or (f.get("status") == "worsened" and last[item.finding_id] == n)
        if current or f.get("status") == "ongoing":
            log.same(f, "severity", f["severity"], item.severity)
        if current:
            log.figures_in(f, "title", f["title"], item.title)
            log.figures_in(f, "fix", f["recommendation"], item.fix, prefix=True)
    return log.found


# ------------------------------------------------------------------------------------------------ the CLI


def check_listing(findings: list[dict[str, Any]], text: str) -> list[Disagreement]:
    """The demo's listing of the state table (severity, status, kind, account/region, table, title)."""
    log = _Log("listing")
    rows = columns(text, "SEVERITY  STATUS")
    for f in findings:
        place = f"{f.get('account') or '-'}/{f.get('region') or '-'}"
        mine = [
            r
            for r in rows
            if (_col(r, "kind"), _col(r, "account/region"), _col(r, "table")) == (f["kind"], place, f["table"])
        ]
        exact = [r for r in mine if f["title"].startswith(_col(r, "title").removesuffix("…"))]
        bare = re.sub(r"[\d,.]+", "#", f["title"])
        titled = [r for r in mine if bare.startswith(re.sub(r"[\d,.]+", "#", _col(r, "title").removesuffix("…")))]
        rows_for = exact if len(exact) == 1 else titled or mine
        if len(rows_for) != 1:
            log.add(f, "present", "one row", f"{len(rows_for)} rows")
            continue
        row = rows_for[0]
        log.same(f, "severity", f["severity"], _col(row, "severity"))
        log.same(f, "status", f.get("status"), _col(row, "status"))
        log.figures_in(f, "title", f["title"], _col(row, "title"))
    return log.found


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf of a JSON document with its dotted path (``evidence.sources.cloudtrail.events``)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def _same_document(log: _Log, f: Mapping[str, Any], theirs: Mapping[str, Any], parts: tuple[str, ...]) -> None:
    for part in parts:
        mine = dict(leaves(f.get(part), part))
        for path, value in leaves(theirs.get(part), part):
            if path in mine and _num(mine[path]) is not None and mine[path] != value:
                log.add(f, path, mine[path], value)


def check_cli_json(findings: list[dict[str, Any]], text: str, output: str) -> list[Disagreement]:
    """A findings JSON document (``demo --format json``, ``analyze-trail --format json``): each finding it shares with
    findings.json by id has the same severity, title and figures (evidence and totals, field by field)."""
    log = _Log(output)
    theirs = {f["id"]: f for f in json.loads(text)["findings"]}
    for f in findings:
        other = theirs.get(f["id"])
        if other is None:
            if output.startswith("demo"):
                log.add(f, "present", "listed", "missing")
            continue
        if "status" in other:
            log.same(f, "status", f.get("status"), other["status"])
        if set((f.get("totals") or {}).get("by_source") or {}) - {"cloudtrail"} and not output.startswith("demo"):
            # a story with a part the trail does not show (CloudWatch, the item's stream): its CloudTrail part's totals
            # are the trail's; its severity, title and other figures rest on the other sources too
            part = f["totals"]["by_source"].get("cloudtrail") or {}
            other_totals = other.get("totals") or {}
            other_part = (other_totals.get("by_source") or {}).get("cloudtrail") or other_totals
            _same_document(log, {"id": f["id"], "totals": part}, {"totals": other_part}, ("totals",))
            continue
        log.same(f, "severity", f["severity"], other["severity"])
        log.figures_in(f, "title", f["title"], other["title"])
        _same_document(log, f, other, ("evidence", "totals"))
    return log.found


def check_csv(findings: list[dict[str, Any]], text: str) -> list[Disagreement]:
    log = _Log("demo --format csv")
    theirs = {_col(r, "id"): r for r in csv.DictReader(io.StringIO(text))}
    for f in findings:
        row = theirs.get(f["id"])
        if row is None:
            log.add(f, "present", "a row", "missing")
            continue
        log.same(f, "severity", f["severity"], _col(row, "severity"))
        log.figures_in(f, "title", f["title"], _col(row, "title"))
        log.figures_in(f, "summary", f["summary"], _col(row, "summary"))
        _same_document(log, f, {"evidence": json.loads(_col(row, "evidence").lstrip("'"))}, ("evidence",))
    return log.found


def check_cli_markdown(findings: list[dict[str, Any]], text: str) -> list[Disagreement]:
    """``demo --format markdown``: each finding's section (its title, ``**severity** · `kind` · `id```, summary)."""
    log = _Log("demo --format markdown")
    by_id = {f["id"]: f for f in findings}
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        head = re.search(r"^\*\*(\w+)\*\* · `[^`]*` · `+ ?([^`]+?) ?`+$", block, flags=re.M)
        f = by_id.get(head.group(2)) if head else None
        if f is None or head is None:
            continue
        paras = [p.strip() for p in block.split("\n\n")]
        log.same(f, "severity", f["severity"], head.group(1))
        log.figures_in(f, "title", f["title"], md_plain(paras[0]))
        log.figures_in(f, "summary", f["summary"], md_plain(paras[2]) if len(paras) > 2 else "")
    return log.found


def check_trail_table(findings: list[dict[str, Any]], text: str) -> list[Disagreement]:
    """``analyze-trail``'s table: each finding block (``[n] SEVERITY title``, summary, fix, ``id ...``)."""
    log = _Log("analyze-trail table")
    by_id = {f["id"]: f for f in findings}
    blocks = re.findall(r"^\[\d+\] (\S+) (.*)\n    (.*)\n    Fix: (.*)\n    id (\S+),", text, flags=re.M)
    for severity, title, _summary, _fix, fid in blocks:
        f = by_id.get(fid)
        if f is None or set((f.get("totals") or {}).get("by_source") or {}) - {"cloudtrail"}:
            continue  # not the trail's, or a story resting on other sources too (see check_cli_json)
        log.same(f, "severity", f["severity"], severity.lower())
        log.figures_in(f, "title", f["title"], title)
    return log.found


# ------------------------------------------------------------------------------------------------ what-if


def _whatif_key(f: Mapping[str, Any]) -> dict[str, Any] | None:
    ev = f["evidence"]
    if isinstance(ev.get("key"), Mapping):
        return dict(ev["key"])
    values = ev.get("values")
    if isinstance(ev.get("key_attribute"), str) and isinstance(values, list) and values:
        return {ev["key_attribute"]: values[0].get("value")}
    return None


def check_what_if(findings: list[dict[str, Any]], json_text: str, table_text: str) -> list[Disagreement]:
    """``what-if`` on the demo's trail against the findings that measured a key's headroom (hot keys, low-cardinality
    keys: its headroom, whether it throttles now, its peak) and the throttling findings (a throttled table has a
    limit that throttles now)."""
    log = _Log("what-if")
    items = json.loads(json_text)["items"]
    rows = columns(table_text, "HEADROOM")
    for f in findings:
        ev = f["evidence"]
        if ev.get("source", "cloudtrail") != "cloudtrail" and f["kind"] != "throttling":
            continue
        key = _whatif_key(f)
        headroom = _num(ev.get("headroom_factor"))
        if key is not None and headroom is not None:
            mine = [i for i in items if i["table"] == f["table"] and i["key"] == key]
            if len(mine) != 1:
                log.add(f, "present", "one key item", f"{len(mine)} items")
                continue
            item = mine[0]
            log.figure(f, "headroom", headroom, f"{item['headroom']}")
            log.same(f, "throttles_now", ev.get("throttles_now"), item["throttles_now"])
            if _num(ev.get("throttled_calls")) is not None:
                log.figure(f, "throttled_calls", _num(ev["throttled_calls"]), f"{item['throttled_calls']}")
            access = item.get("access")
            if f["kind"] == "hot_key" and access in ("read", "write"):
                peak = _num(ev.get(f"peak_{access}_units_per_second"))
                log.figure(f, "peak_per_second", peak, f"{item['peak_per_second']}")
            text_key = ", ".join(f"{k}={v}" for k, v in key.items())
            row = next((r for r in rows if _col(r, "table") == f["table"] and _col(r, "key") == text_key), None)
            if row is None:
                log.add(f, "table.present", "a row", "missing")
                continue
            log.figure(f, "table.headroom", headroom, _col(row, "headroom"))
            log.same(
                f,
                "table.throttles",
                "now" if ev.get("throttles_now") else _col(row, "throttles"),
                _col(row, "throttles"),
            )
            if f["kind"] == "hot_key" and access in ("read", "write"):
                log.figure(
                    f, "table.peak_per_second", _num(ev.get(f"peak_{access}_units_per_second")), _col(row, "peak/s")
                )
        throttled = f["kind"] == "throttling" and "cloudtrail" in (ev.get("sources") or {ev.get("source"): 1})
        if throttled and not any(i["table"] == f["table"] and i["throttles_now"] for i in items):
            log.add(f, "throttles_now", "a limit of the table that throttles now", "none")
    return log.found


# ------------------------------------------------------------------------------------------------ everything


def check(outputs: Outputs) -> list[Disagreement]:
    """Every disagreement between findings.json and the other outputs (and within findings.json)."""
    findings = outputs.findings
    return [
        *check_findings(findings),
        *check_report(findings, parse_markdown_report(outputs.report_md), "report.md"),
        *check_report(findings, parse_html_report(outputs.report_html), "report.html"),
        *check_slack(findings, outputs.slack_posts),
        *check_listing(findings, outputs.listing),
        *check_cli_json(findings, outputs.cli_json, "demo --format json"),
        *check_csv(findings, outputs.cli_csv),
        *check_cli_markdown(findings, outputs.cli_markdown),
        *check_cli_json(findings, outputs.trail_json, "analyze-trail json"),
        *check_trail_table(findings, outputs.trail_table),
        *check_what_if(findings, outputs.whatif_json, outputs.whatif_table),
    ]

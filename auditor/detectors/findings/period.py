"""A finding stated for a period (pure): the period's totals, its severity, its evidence and, for a throttling story,
its cause.

Every output that names a period uses :func:`for_period`: ``analyze-trail`` (the input), the service's weekly report
and findings (the ISO week), the replay (the input). The rules and why they are these:
:meth:`auditor.models.finding.Finding.over_period` (the severity: the highest any window reached; the evidence: the
period's figures, :mod:`auditor.models.period_evidence`) and
:func:`auditor.detectors.findings.throttling_story.over_period` (the cause: the one with the most throttled requests
over the period's windows).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from auditor.detectors.findings import correlate, item_story, throttling_story
from auditor.detectors.trail.scan import scan_summary
from auditor.models.capacity import Headroom
from auditor.models.finding import FACTS, Finding, FindingKind, Severity, Totals, isoformat_z
from auditor.models.period_evidence import period_evidence
from auditor.whatif.limits import headroom_sentence

__all__ = ["for_period", "period_text"]

#: The hot-key summary's share sentence, as the detector writes it for its window.
_SHARE_SENTENCE = re.compile(
    r" It took [\d.]+% of the [\d,]+ key-identified requests( to the index)? in "
    r"(?:the [\d.]+ captured minutes of \d+|\d+ minutes|the week|[\d,]+ (?:minutes?|hours?|days?)"
    r"|the [\d,]+ minutes it was hot \(of [^)]+\))\."
)


def for_period(finding: Finding, totals: Totals | None) -> Finding:
    """``finding`` with ``totals`` (the period's; None: nothing counted in it) and what they decide for the period:
    its severity, its evidence (every count, share and rate of the period; peaks of the busiest window, so named)
    and, for a throttling story, its cause, its sources' counts and what raised it above their own severities."""
    stated = finding.over_period(totals)
    if totals is None:
        return stated
    stated = stated.model_copy(update={"evidence": correlate.for_a_period(stated.evidence)})
    stated = throttling_story.over_period(_story_counts(stated, totals))
    # its sources' own severities, and what raised the story above them (the period's severity)
    stated = stated.model_copy(update={"evidence": correlate.raised_sources(stated.evidence, stated.severity)})
    stated = stated.with_totals(stated.totals)  # a story rebuilt from its blocks: its evidence of the period again
    if stated.totals is None or stated.totals.figures is None:
        return item_story.restated(stated)  # totals before figures existed: the evidence and text are the window's
    stated = _headroom_sentences(_key_sentences(_peak_sentences(_share_sentence(stated))))
    return item_story.restated(_scan_sentences(stated))


def _story_counts(story: Finding, totals: Totals) -> Finding:
    """A throttling story whose sources' blocks count the period's throttled reads and writes, first to last seen
    (each source's own totals and their figures), so that the story rebuilt for the period states them."""
    sources = story.evidence.get("sources")
    if not throttling_story.is_story(story) or not isinstance(sources, dict) or not totals.by_source:
        return story
    blocks: dict[str, Any] = {}
    for source, block in sources.items():
        part = totals.by_source.get(source)
        sums = (part.figures or {}).get("sum", {}) if part is not None else {}
        if part is not None and isinstance(block, dict) and "read_throttle_events" in sums:
            read, write = int(sums["read_throttle_events"]), int(sums.get("write_throttle_events", 0))
            block = {**block, "read": read, "write": write, "events": read + write}
            block.update(first_seen=isoformat_z(part.first_seen), last_seen=isoformat_z(part.last_seen))
            if part.peak_severity is not None and block.get("severity") is not None:
                block["severity"] = part.peak_severity.value  # the highest any window of the period reached
            if isinstance(block.get("details"), dict):
                block["details"] = _details(story.table, block["details"], part, totals)
        blocks[source] = block
    return story.model_copy(update={"evidence": {**story.evidence, "sources": blocks}})


#: The head of a CloudTrail throttling detector's summary (its window's counts), up to its cause.
_THROTTLE_HEAD = re.compile(r"^[\d,]+ calls to .+? were throttled in .+?; cause: [a-z_]+\.")


def _details(table: str, details: dict[str, Any], part: Totals, totals: Totals) -> dict[str, Any]:
    """A source's per-cause details stated for the period: each cause's throttled reads and writes over the period's
    windows (``figures["by"]``), its share of the period's calls, the period's length, and its summary's head."""
    figures = part.figures or {}
    calls = (figures.get("shared") or {}).get("calls")
    out: dict[str, Any] = {}
    for cause, detail in details.items():
        counts = (figures.get("by") or {}).get(cause)
        if not isinstance(detail, dict) or not counts:
            out[cause] = detail
            continue
        read, write = int(counts.get("read_throttle_events", 0)), int(counts.get("write_throttle_events", 0))
        # the window's throttled keys and error codes are the period's; its counts are this cause's
        detail = period_evidence("throttling", detail, figures, totals.observed_seconds)
        detail.update(read_throttle_events=read, write_throttle_events=write)
        share = ""
        if isinstance(calls, int) and calls > 0:
            if "calls" in detail:
                detail["calls"] = calls
            detail["throttled_share"] = round((read + write) / calls, 4)
            share = f"; {(read + write) / calls:.1%} of calls"
        summary = detail.get("summary")
        match = _THROTTLE_HEAD.match(summary) if isinstance(summary, str) else None
        if isinstance(summary, str) and match is not None:
            head = (
                f"{read + write} calls to {table} were throttled in {period_text(totals)} ({read} reads, {write} "
                f"writes{share}); cause: {cause}."
            )
            detail["summary"] = head + summary[match.end() :]
        out[cause] = detail
    return out


def period_text(totals: Totals) -> str:
    """The period in words: ``the week`` (an ISO week), else its length (``45 minutes``, ``3 hours``, ``2 days``)."""
    start, seconds = totals.period_start, totals.observed_seconds
    if seconds == timedelta(days=7).total_seconds() and start.weekday() == 0 and start.time().isoformat() == "00:00:00":
        return "the week"
    minutes = max(1, round(seconds / 60))
    if minutes < 180 or minutes % 60:
        return f"{minutes:,} minute{'s' if minutes != 1 else ''}"
    hours = minutes // 60
    if hours < 48 or hours % 24:
        return f"{hours:,} hours"
    return f"{hours // 24:,} days"


def _seen_only(finding: Finding, field: str) -> str | None:
    """``the 30 minutes it was found in`` when ``field`` counts only the windows the finding was found in, shorter
    than its period (``evidence.sub_periods``), else None."""
    label = (finding.evidence.get("sub_periods") or {}).get(field)
    return label if isinstance(label, str) and label.endswith("it was found in") else None


def _share_sentence(finding: Finding) -> Finding:
    """A hot key's summary stating its share of the period's key-identified requests (not one window's)."""
    totals = finding.totals
    if finding.kind is not FindingKind.HOT_KEY or totals is None or totals.share is None or not totals.share_base:
        return finding
    match = _SHARE_SENTENCE.search(finding.summary)
    if match is None:
        return finding
    seen = _seen_only(finding, "share")
    when = f"{seen.removesuffix(' found in')} hot (of {period_text(totals)})" if seen else period_text(totals)
    sentence = (
        f" It took {totals.share:.0%} of the {totals.share_base} key-identified requests{match.group(1) or ''} "
        f"in {when}."
    )
    summary = finding.summary[: match.start()] + sentence + finding.summary[match.end() :]
    return finding.model_copy(update={"summary": summary})


#: Where text other findings added to a scan finding's summary starts (CloudWatch's volume, linked findings).
_ADDED = (" CloudWatch counted ", " Confirmed by")


def _scan_sentences(finding: Finding) -> Finding:
    """A CloudTrail scan finding's summary stating the period's scans, pages, rate and read units."""
    totals, ev = finding.totals, finding.evidence
    if finding.kind is not FindingKind.SCAN or totals is None or ev.get("source") != "cloudtrail":
        return finding
    who, ran, _ = finding.summary.partition(" ran ")
    per_hour = ev.get("per_hour")
    if not ran or not isinstance(per_hour, int | float):
        return finding
    added = [i for marker in _ADDED if (i := finding.summary.find(marker)) >= 0]
    rest = finding.summary[min(added) :] if added else ""
    text = scan_summary(who, finding.table, ev, period_text(totals), float(per_hour)) + rest
    return finding.model_copy(update={"summary": text})


#: A low-cardinality key's first sentence.
_LOW_CARDINALITY = re.compile(
    r"^[\d,]+ key-identified requests to (.+?) \([\d.,]+/s\)(?: in the [\d,]+ minutes it was found in,)? used only "
    r"\d+ distinct values of (.+?)"
    r"(?: in the busiest [^:]+)?: "
)


def _key_sentences(finding: Finding) -> Finding:
    """A low-cardinality key's summary stating the period's requests and their rate (the distinct values of the
    busiest window)."""
    ev, summary = finding.evidence, finding.summary
    if finding.kind is not FindingKind.LOW_CARDINALITY_KEY:
        return finding
    requests, rate, distinct = ev.get("requests"), ev.get("requests_per_second"), ev.get("distinct_partition_keys")
    match = _LOW_CARDINALITY.search(summary)
    if match and isinstance(rate, int | float):
        label = (ev.get("sub_periods") or {}).get("distinct_partition_keys", "busiest window")
        seen = _seen_only(finding, "requests")
        head = (
            f"{requests} key-identified requests to {match.group(1)} ({rate:.1f}/s)"
            + (f" in {seen}," if seen else "")
            + f" used only {distinct} distinct values of {match.group(2)} in the {label}: "
        )
        summary = head + summary[match.end() :]
    return finding if summary == finding.summary else finding.model_copy(update={"summary": summary})


#: A hot key's share of the limit: ``: 24% of the limit (headroom 4.1x).`` or ``... on the assumptions.``.
_LIMIT_CLAUSE = re.compile(r": \d+% of the limit(?: \(headroom [\d.,]+x\)| on the assumptions)\.")
#: A key's headroom (:func:`auditor.whatif.limits.headroom_sentence`), or its throttled calls
#: (:meth:`auditor.models.capacity.Headroom.sentence`; the assumptions and checks it names have no full stop).
_HEADROOM = re.compile(
    r" Headroom [\d.,]+x: throttles at [\d.,]+ times today's peak\."
    r"| [\d,]+ calls on it were throttled: no headroom at today's peak, it throttles now\."
    r"(?: The throttling contradicts the assumptions, which put the peak at [^:]+ of the limit: [^.]*\.)?"
    r"(?: To confirm: [^.]*\.)?"
)
#: A key far below the partition limits: ``(headroom 3,529x), so ... at most low.``.
_FAR_BELOW = re.compile(
    r" (Its (?:busiest value peaked|peak is) far below (?:a partition's|the partition) limits) \(headroom [\d,]+x\)"
    r"(, so (?:this|it) is at most low\.)"
)
#: Where a low-cardinality story's hot-key facts begin (auditor.detectors.findings.key_story): their own texts.
_FACT_TEXTS = " Its value "


def _headroom_sentences(finding: Finding) -> Finding:
    """A key finding's summary stating the headroom of its period's evidence (the tightest window's, with its
    utilisation and the period's throttled calls), whatever its text was written from (a window, or the whole input,
    which counts windows the key was not found in): its share of the limit, its headroom or throttled calls, and
    its "far below the limits" note (kept only while the period did not throttle and, outside a story of several
    facts, stays low). A story's hot-key facts keep their own texts."""
    ev = finding.evidence
    if finding.kind not in (FindingKind.LOW_CARDINALITY_KEY, FindingKind.HOT_KEY) or "keys" in ev:
        return finding
    h, used, throttled = ev.get("headroom_factor"), ev.get("assumed_utilisation"), ev.get("throttled_calls")
    h = float(h) if isinstance(h, int | float) and not isinstance(h, bool) and h > 0 else None
    used = float(used) if isinstance(used, int | float) and not isinstance(used, bool) and used > 0 else None
    throttled = throttled if isinstance(throttled, int) and not isinstance(throttled, bool) else 0
    contradicted, confirm = ev.get("contradicted_assumption"), ev.get("to_confirm")
    model = Headroom(
        h,
        1 / used if used else None,
        throttled,
        str(contradicted) if contradicted else None,
        str(confirm) if confirm else None,
    )
    limit = model.limit_clause()
    headroom = model.sentence() if throttled > 0 else headroom_sentence(h)
    low = FACTS in ev or finding.severity is Severity.LOW
    own, facts_at, facts = finding.summary.partition(_FACT_TEXTS) if FACTS in ev else (finding.summary, "", "")
    own = _LIMIT_CLAUSE.sub(lambda _: limit, own, count=1) if finding.kind is FindingKind.HOT_KEY else own
    own = _HEADROOM.sub(lambda _: headroom, own, count=1)
    own = _FAR_BELOW.sub(
        lambda m: f" {m.group(1)} (headroom {h:,.0f}x){m.group(2)}" if h and not throttled and low else "", own, count=1
    )
    summary = own + facts_at + facts
    return finding if summary == finding.summary else finding.model_copy(update={"summary": summary})


#: A hot key's peak figures in its summary and recommendation, each with the evidence field(s) that state it.
_PEAK_TEXT: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    (
        re.compile(r"peaked at [\d,]+ reads/s and [\d,]+ writes/s"),
        "peaked at {:.0f} reads/s and {:.0f} writes/s",
        ("peak_reads_per_second", "peak_writes_per_second"),
    ),
    (re.compile(r"\(peak: [^;)]+;"), "(peak: {};", ("peak_window",)),
    (
        re.compile(r"busiest second [\d,]+ reads / [\d,]+ writes"),
        "busiest second {} reads / {} writes",
        ("peak_second_reads", "peak_second_writes"),
    ),
    (
        re.compile(r"busiest minute [\d,]+ reads/s / [\d,]+ writes/s"),
        "busiest minute {:.0f} reads/s / {:.0f} writes/s",
        ("peak_minute_reads_per_second", "peak_minute_writes_per_second"),
    ),
    (
        re.compile(r"\([\d,]+ RCU/s and [\d,]+ WCU/s at"),
        "({:,.0f} RCU/s and {:,.0f} WCU/s at",
        ("peak_read_units_per_second", "peak_write_units_per_second"),
    ),
    (re.compile(r"at the peak of [\d,]+ writes/s"), "at the peak of {:.0f} writes/s", ("peak_writes_per_second",)),
    (re.compile(r"for the peak of [\d,]+ writes/s"), "for the peak of {:.0f} writes/s", ("peak_writes_per_second",)),
)


def _peak_sentences(finding: Finding) -> Finding:
    """A hot key's summary and recommendation stating the period's peaks (the busiest second and minute of any of
    its windows, as its evidence states them), not the last window's."""
    ev = finding.evidence
    if finding.kind is not FindingKind.HOT_KEY or "keys" in ev:
        return finding
    values = dict(ev)
    for rate, count in (("reads", "peak_minute_reads"), ("writes", "peak_minute_writes")):
        if isinstance(ev.get(count), int | float):
            values[f"peak_minute_{rate}_per_second"] = ev[count] / 60
    texts = {"summary": finding.summary, "recommendation": finding.recommendation}
    for pattern, template, fields in _PEAK_TEXT:
        args = [values.get(f) for f in fields]
        if any(a is None or isinstance(a, bool) for a in args):
            continue
        text = template.format(*args).replace("\\", "\\\\")  # a literal replacement
        for name, before in texts.items():
            texts[name] = pattern.sub(text, before, count=1)
    if (texts["summary"], texts["recommendation"]) == (finding.summary, finding.recommendation):
        return finding
    return finding.model_copy(update=texts)

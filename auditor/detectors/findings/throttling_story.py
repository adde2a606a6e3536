"""One throttling story per table or index, whichever sources saw it (pure).

:func:`merge_throttling` makes CloudWatch's, CloudTrail's and Contributor Insights' views of the same throttled
requests one finding per (account, region, table, index): each source keeps its own counts (never added), and the
cause is decided with a precedence (cause metrics, error details, inference). :func:`with_stored` adds the stored
story's other sources to a run's sighting. The evidence fields and the precedence are in docs/detectors.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from auditor.detectors.findings.correlate import raised_sources
from auditor.detectors.trail.key_spaces import INDEX_WRITES
from auditor.detectors.trail.throttling import RECOMMENDATIONS as _RECOMMENDATIONS
from auditor.models.finding import (
    SOURCE_PRECEDENCE,
    Finding,
    FindingKind,
    Severity,
    Totals,
    fingerprint,
    isoformat_z,
    preferred_source,
    utc,
    worst,
)
from auditor.models.period_evidence import same_window_figures

__all__ = [
    "CLOUDTRAIL",
    "CLOUDWATCH",
    "CONTRIBUTOR_INSIGHTS",
    "combine",
    "is_story",
    "merge_throttling",
    "story_id",
    "with_stored",
]

CLOUDWATCH, CLOUDTRAIL, CONTRIBUTOR_INSIGHTS = SOURCE_PRECEDENCE

_LABEL = {CLOUDWATCH: "CloudWatch", CLOUDTRAIL: "CloudTrail", CONTRIBUTOR_INSIGHTS: "Contributor Insights"}

#: How each detector's ``cause_source`` ranks: 0 CloudWatch's per-cause metrics, 1 CloudTrail's error details,
#: 2 inference from CloudTrail's keys, 3 inference from CloudWatch's capacity, 4 undecided. CloudTrail's error details
#: are all the logged error says: ``ThrottlingReasons``, a classic message that names the cause (a GSI's back-pressure,
#: a table's provisioned throughput) and the error code.
_CW_METRICS = frozenset({"cause_metrics", "gsi_metrics"})
_CT_DETAILS = frozenset({"throttling_reasons", "error_message", "error_code"})
_UNDECIDED = frozenset({"no_capacity_data", "no_keys", "none"})

#: Evidence fields of a member finding that are the story's own (not copied into its source's details).
_OWN = frozenset({"cause", "read_throttle_events", "write_throttle_events", "source", "cause_source"})


def _rank(source: str, cause_source: str) -> int:
    if source == CLOUDWATCH and cause_source in _CW_METRICS:
        return 0
    if source == CLOUDTRAIL and cause_source in _CT_DETAILS:
        return 1
    if cause_source in _UNDECIDED:
        return 4
    return 2 if source == CLOUDTRAIL else 3


_DECIDED_BY = {0: "cloudwatch_cause_metrics", 1: "cloudtrail_error_details", 2: "inference", 3: "inference"}
_DECIDED_TEXT = {
    0: "CloudWatch's per-cause throttle metrics",
    1: "CloudTrail's error details",
    2: "inference from how CloudTrail's throttled calls spread over keys",
    3: "inference from CloudWatch's capacity utilisation",
    4: "nothing: no source could tell",
}


def story_id(account: str | None, region: str | None, table: str, index: str | None) -> str:
    """The story's stable id: one per (account, region, table, index) for the ``throttling`` kind."""
    return fingerprint(FindingKind.THROTTLING, account, region, table, index, None)


def is_story(finding: Finding) -> bool:
    """A throttling finding already merged by :func:`merge_throttling`."""
    return finding.kind is FindingKind.THROTTLING and isinstance(finding.evidence.get("sources"), dict)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


def _source_of(f: Finding) -> str | None:
    if f.kind is FindingKind.THROTTLING:
        src = f.evidence.get("source")
        return src if src in (CLOUDWATCH, CLOUDTRAIL) else None
    if (
        f.kind is FindingKind.HOT_KEY
        and f.evidence.get("source") == CONTRIBUTOR_INSIGHTS
        and f.evidence.get("metric") == "ThrottleCount"
    ):
        return CONTRIBUTOR_INSIGHTS
    return None


def _block(source: str, members: Sequence[Finding]) -> dict[str, Any]:
    """One source's part of the story from its member findings (one per cause, or one per throttled key for CI)."""
    first = min(m.first_seen for m in members)
    last = max(m.last_seen for m in members)
    block: dict[str, Any] = {"first_seen": isoformat_z(first), "last_seen": isoformat_z(last)}
    if source == CONTRIBUTOR_INSIGHTS:
        keys: list[dict[str, Any]] = sorted(
            (
                {
                    "key": m.evidence.get("key"),
                    "throttled_requests": _int(m.evidence.get("requests")),
                    "share": m.evidence.get("share"),
                }
                for m in members
            ),
            key=lambda k: -int(k["throttled_requests"]),
        )
        # The rule's total throttled requests: a key's requests over its share of them (approximate, as CI is).
        totals = [
            round(_int(m.evidence.get("requests")) / float(share))
            for m in members
            if isinstance(share := m.evidence.get("share"), float | int) and not isinstance(share, bool) and share > 0
        ]
        total = max(totals, default=sum(int(k["throttled_requests"]) for k in keys))
        block.update(events=total, read=0, write=0, approximate=True, keys=keys[:5], severity=None)
        return block
    causes: dict[str, int] = {}
    how: dict[str, str] = {}
    details: dict[str, dict[str, Any]] = {}
    recommendations: dict[str, str] = {}
    notes: list[str] = []
    captures: list[dict[str, Any]] = []
    read = write = 0
    for m in sorted(members, key=lambda m: str(m.evidence.get("cause"))):
        cause = str(m.evidence.get("cause") or "unknown")
        r, w = _int(m.evidence.get("read_throttle_events")), _int(m.evidence.get("write_throttle_events"))
        read, write = read + r, write + w
        causes[cause] = causes.get(cause, 0) + r + w
        how[cause] = str(m.evidence.get("cause_source") or "none")
        details[cause] = {**{k: v for k, v in m.evidence.items() if k not in _OWN}, "summary": m.summary}
        recommendations[cause] = m.recommendation
        sampled = m.summary.find(" Sampled: ")
        if sampled >= 0:  # a partly captured window (auditor.cost.sampling): its estimate, as the detector said it
            notes.append((f"{_cause_label(cause)}: " if len(members) > 1 else "") + m.summary[sampled + 1 :].strip())
        capture = m.evidence.get("capture")
        if isinstance(capture, dict) and str(capture.get("basis", "")).startswith("sampled"):
            captures.append(capture)
    block.update(
        events=read + write,
        read=read,
        write=write,
        causes=dict(sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))),
        cause_sources=how,
        severity=max((m.severity for m in members), key=lambda s: s.rank).value,
        recommendations=recommendations,
        details=details,
    )
    if notes:
        block["sampled_notes"] = notes
    if captures:
        block["capture"] = _combined_capture(captures)
    return block


def _combined_capture(captures: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One source's sampling of several causes in the same window(s): observed and estimated counts add, margins
    add as independent estimates."""
    if len(captures) == 1:
        return dict(captures[0])
    out = dict(captures[0])
    for key in ("observed", "estimated"):
        out[key] = sum(_int(c.get(key)) for c in captures)
    out["margin"] = math.ceil(math.hypot(*(_int(c.get("margin")) for c in captures)))
    return out


def _block_rank(source: str, block: Mapping[str, Any]) -> int:
    causes: dict[str, int] = block.get("causes") or {}
    how: dict[str, str] = block.get("cause_sources") or {}
    if not causes:
        return 5
    top = next(iter(causes))
    return _rank(source, how.get(top, "none"))


def _when(block: Mapping[str, Any], field: str) -> datetime:
    return utc(datetime.fromisoformat(str(block[field]).replace("Z", "+00:00")))


def _period_text(block: Mapping[str, Any]) -> str:
    first, last = _when(block, "first_seen"), _when(block, "last_seen")
    minutes = max(1, round((last - first).total_seconds() / 60))
    return f"from {first:%Y-%m-%d %H:%M} to {last:%H:%M} UTC ({minutes} minute{'s' if minutes != 1 else ''})"


def _source_sentence(source: str, block: Mapping[str, Any]) -> str:
    events = _int(block.get("events"))
    if source == CONTRIBUTOR_INSIGHTS:
        keys = block.get("keys") or []
        named = ", ".join(
            f"{_key_text(k.get('key'))} ({_int(k.get('throttled_requests')):,})"
            for k in keys[:3]
            if isinstance(k, dict)
        )
        return f"Contributor Insights counted about {events:,} throttled requests {_period_text(block)}" + (
            f", most on {named}" if named else ""
        )
    noun = "throttle events" if source == CLOUDWATCH else "throttled calls"
    verb = "counted" if source == CLOUDWATCH else "logged"
    text = (
        f"{_LABEL[source]} {verb} {events:,} {noun} ({_int(block.get('read')):,} reads, "
        f"{_int(block.get('write')):,} writes) {_period_text(block)}"
    )
    notes = block.get("sampled_notes")
    if isinstance(notes, list) and notes:
        text += " (" + " ".join(str(n).rstrip(".") + "." for n in notes).rstrip(".") + ")"
    return text


def _key_text(key: Any) -> str:
    if isinstance(key, dict):
        return ", ".join(f"{k}={v!s:.40}" for k, v in key.items())
    return str(key)


def _cause_label(cause: str) -> str:
    return cause.replace("_", " ")


def _build(
    account: str | None,
    region: str | None,
    table: str,
    index: str | None,
    blocks: Mapping[str, dict[str, Any]],
    totals: Totals | None,
) -> Finding:
    """The story finding from its sources' blocks."""
    counted = [s for s in SOURCE_PRECEDENCE if s in blocks and s != CONTRIBUTOR_INSIGHTS]
    count_source = counted[0] if counted else preferred_source(blocks)
    ranked = sorted(
        (s for s in blocks if blocks[s].get("causes")),
        key=lambda s: (_block_rank(s, blocks[s]), 0 if s == CLOUDTRAIL else 1),
    )
    decider = ranked[0] if ranked else count_source
    decision = blocks[decider]
    causes: dict[str, int] = decision.get("causes") or {"unknown": 0}
    decided_total = sum(causes.values())
    cause = next(iter(causes))
    rank = _block_rank(decider, decision)
    shares: list[dict[str, Any]] = [
        {
            "cause": c,
            "events": n,
            "share": round(n / decided_total, 4) if decided_total else None,
            "decided_by": (decision.get("cause_sources") or {}).get(c),
        }
        for c, n in causes.items()
    ]
    counts = blocks[count_source]
    where = f"{table}/{index}" if index else table
    if len(shares) == 1:
        title = f"Throttling on {where} ({_cause_label(cause)})"
    else:
        listed = ", ".join(f"{_cause_label(s['cause'])} {s['share']:.0%}" for s in shares[:3] if s["share"] is not None)
        title = f"Throttling on {where} ({listed})"
    order = [s for s in SOURCE_PRECEDENCE if s in blocks] + sorted(s for s in blocks if s not in SOURCE_PRECEDENCE)
    sentences = [_source_sentence(s, blocks[s]) for s in order if s in _LABEL]
    cause_text = ", ".join(
        f"{_cause_label(s['cause'])} {s['share']:.0%}" if s["share"] is not None else _cause_label(s["cause"])
        for s in shares
    )
    of_what = f"{_LABEL.get(decider, decider)}'s {'events' if decider == CLOUDWATCH else 'calls'}"
    summary = (
        f"Throttling on {where}: "
        + "; ".join(sentences)
        + ". "
        + (
            f"Cause: {_cause_label(cause)} ({cause_text.rsplit(' ', 1)[-1]} of {of_what})"
            if len(shares) == 1 and shares[0]["share"] is not None
            else f"Cause{'s' if len(shares) > 1 else ''}: {cause_text} of {of_what}"
        )
        + f", decided by {_DECIDED_TEXT.get(rank, _DECIDED_TEXT[4])}."
    )
    if len([s for s in order if s in _LABEL]) > 1:
        summary += " The sources count the same throttled requests each in their own way: their counts are not added."
    recs: dict[str, str] = decision.get("recommendations") or {}
    recommendation = recs.get(cause) or "Fix the cause named in the finding."
    for extra in shares[1:3]:
        text = recs.get(extra["cause"])
        if text and text != recommendation:
            recommendation += f" For the {_cause_label(extra['cause'])} throttles: {text}"
    severities = [Severity(str(b["severity"])) for b in blocks.values() if b.get("severity")]
    severity = max(severities, key=lambda s: s.rank) if severities else Severity.MEDIUM
    evidence: dict[str, Any] = {
        "cause": cause,
        "causes": shares,
        "cause_decided_by": _DECIDED_BY.get(rank, "undecided"),
        "cause_decided_in": decider,
        "cause_source": (decision.get("cause_sources") or {}).get(cause, "none"),
        "read_throttle_events": _int(counts.get("read")),
        "write_throttle_events": _int(counts.get("write")),
        "source": count_source,
        "sources": {s: blocks[s] for s in order},
    }
    top_details = (counts.get("details") or {}).get(next(iter(counts.get("causes") or {"-": 0})), {})
    for key in ("window_seconds", "top_keys", "contributor_insights", "capacity_mode", "index_cause", *INDEX_WRITES):
        if key in top_details:
            evidence[key] = top_details[key]
    if isinstance(top_details.get("write_amplification"), str):  # a GSI's metered writes and reconciled headroom
        summary += " " + top_details["write_amplification"]
    if isinstance(counts.get("capture"), dict):
        evidence["capture"] = counts["capture"]
    first = min(_when(b, "first_seen") for b in blocks.values())
    last = max(_when(b, "last_seen") for b in blocks.values())
    story = Finding.create(
        FindingKind.THROTTLING,
        account=account,
        region=region,
        table=table,
        index=index,
        discriminator=None,
        severity=severity,
        title=title,
        summary=summary,
        recommendation=recommendation,
        evidence=evidence,
        first_seen=first,
        last_seen=last,
    )
    return story.model_copy(update={"totals": totals}) if totals is not None else story


def _same_window(members: Sequence[Finding]) -> Totals:
    """One source's totals of its findings (one per cause) in the same window(s): their events add, their windows do
    not; ``by_cause`` keeps each cause's events, under how the cause was decided."""
    parts = [m.sighting_totals() for m in members]
    by_cause: dict[str, dict[str, int]] = {}
    for m, p in zip(members, parts, strict=True):
        how = by_cause.setdefault(str(m.evidence.get("cause") or "unknown"), {})
        source = str(m.evidence.get("cause_source") or "none")
        how[source] = how.get(source, 0) + p.count
    peaks = [p.peak_per_hour for p in parts]
    margins = [p.margin for p in parts if p.margin is not None]
    return Totals(
        margin=math.ceil(math.hypot(*margins)) if margins else None,
        count=sum(p.count for p in parts),
        windows=max(p.windows for p in parts),
        first_seen=min(p.first_seen for p in parts),
        last_seen=max(p.last_seen for p in parts),
        peak_per_hour=None if any(p is None for p in peaks) else sum(p for p in peaks if p is not None),
        period_start=min(p.period_start for p in parts),
        period_end=max(p.period_end for p in parts),
        peak_severity=worst(p.peak_severity for p in parts),
        by_cause=by_cause,
        figures=same_window_figures([p.figures for p in parts]),
    )


def merge_throttling(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with every table's (or index's) throttling findings made one story (:mod:`this module`).

    Contributor Insights' throttled-key findings join the story of their table and index when there is one (they
    stay ``hot_key`` findings too). Findings already merged pass through. The order of the other findings is kept;
    each story takes the place of its first member.
    """
    groups: dict[tuple[str | None, str | None, str, str | None], dict[str, list[Finding]]] = {}
    for f in findings:
        source = _source_of(f)
        if source is None or is_story(f):
            continue
        groups.setdefault((f.account, f.region, f.table, f.index), {}).setdefault(source, []).append(f)
    stories: dict[tuple[str | None, str | None, str, str | None], Finding] = {}
    for place, by_source in groups.items():
        if CLOUDWATCH not in by_source and CLOUDTRAIL not in by_source:
            continue  # Contributor Insights alone: its hot_key finding tells it
        blocks = {s: _block(s, members) for s, members in by_source.items()}
        parts = {s: _same_window(members) for s, members in by_source.items() if s != CONTRIBUTOR_INSIGHTS}
        stories[place] = _build(*place, blocks, Totals.of_sources(parts))
    out: list[Finding] = []
    for f in findings:
        place = (f.account, f.region, f.table, f.index)
        story = stories.get(place)
        if story is None or _source_of(f) is None or is_story(f):
            out.append(f)
            continue
        if f.kind is FindingKind.HOT_KEY:
            out.append(f)  # the throttled key stays a hot-key finding; its counts are in the story
            continue
        if story.id not in {o.id for o in out}:
            out.append(story)
    return out


def over_period(story: Finding) -> Finding:
    """``story`` (already stated for a period, :meth:`Finding.over_period`) with the period's causes.

    **The period's cause is the one with the most throttled requests over the period**, each window's requests
    counted under the cause decided in that window (``totals.by_cause``, of the source that decides the story's
    cause); how a cause was decided is the way that decided most of its requests. A window decides its cause in its
    own context (the throttled keys against the traffic of the same minutes); summing the windows' decisions keeps
    that, where one decision over a week or a whole input would set a burst's throttles against the traffic of hours
    without one. ``analyze-trail``, the replay and the service's report apply this to the same per-window decisions,
    so they name the same cause. The title, summary, ``cause``, ``causes`` (with their shares over the period) and
    recommendation follow; the severity stays the period's.
    A story whose totals have no causes (stored before they existed) is returned as it is.
    """
    totals = story.totals
    if not is_story(story) or totals is None:
        return story
    decider = str(story.evidence.get("cause_decided_in") or "")
    part = (totals.by_source or {}).get(decider) or totals
    if not part.by_cause:
        return story
    sources: dict[str, Any] = story.evidence["sources"]
    blocks: dict[str, dict[str, Any]] = {s: dict(b) for s, b in sources.items() if isinstance(b, dict)}
    if decider not in blocks:
        return story
    events = {cause: sum(how.values()) for cause, how in part.by_cause.items()}
    causes = dict(sorted(events.items(), key=lambda kv: (-kv[1], kv[0])))
    block = blocks[decider]
    block["causes"] = causes
    block["cause_sources"] = {
        c: min(part.by_cause[c].items(), key=lambda kv: (-kv[1], kv[0]))[0] if part.by_cause[c] else "none"
        for c in causes
    }
    block["recommendations"] = {
        c: (block.get("recommendations") or {}).get(c) or _RECOMMENDATIONS.get(c, _RECOMMENDATIONS["unknown"])
        for c in causes
    }
    period = _build(story.account, story.region, story.table, story.index, blocks, totals)
    evidence, summary = _with_correlation(period, story)
    return period.model_copy(
        update={
            "evidence": evidence,
            "summary": summary,
            "severity": story.severity,
            "first_seen": story.first_seen,
            "last_seen": story.last_seen,
        }
    )


def _with_correlation(rebuilt: Finding, story: Finding) -> tuple[dict[str, Any], str]:
    """The evidence and summary of ``rebuilt`` (a story built again from its parts) with what a correlation added
    to ``story``: its evidence keys and the "Confirmed by ..." sentence of its summary."""
    evidence = dict(rebuilt.evidence)
    for key in ("correlation", "related_finding_ids"):
        if key in story.evidence:
            evidence[key] = story.evidence[key]
    summary = rebuilt.summary
    tail = story.summary.find(" Confirmed by")
    if tail >= 0:
        summary += story.summary[tail:]
    return evidence, summary


def with_stored(stored: Finding | None, seen: Finding, max_age_seconds: float) -> Finding:
    """``seen`` (a story sighting of one run) with the stored story's other sources that are still current.

    A stored source joins when it was last seen no more than ``max_age_seconds`` before the sighting ends (an
    older one is history: the problem no longer shows there). The sighting's own sources and its totals are kept;
    the severity does not drop below the sighting's nor, while stored parts are carried, below the stored one (a
    correlation may have raised either), and a correlation sentence of the sighting's summary is kept.
    """
    if stored is None or not is_story(seen) or not is_story(stored) or stored.id != seen.id:
        return seen
    mine: dict[str, dict[str, Any]] = dict(seen.evidence["sources"])
    theirs: dict[str, Any] = stored.evidence["sources"]
    horizon = seen.last_seen.timestamp() - max_age_seconds
    added = {
        s: b
        for s, b in theirs.items()
        if s not in mine and isinstance(b, dict) and "last_seen" in b and _when(b, "last_seen").timestamp() >= horizon
    }
    if not added:
        return seen
    story = _build(seen.account, seen.region, seen.table, seen.index, {**mine, **added}, seen.totals)
    evidence, summary = _with_correlation(story, seen)
    # The stored severity was decided with the parts carried over (a correlation may have raised it): it holds
    # while they are current.
    severity = max(story.severity, seen.severity, stored.severity, key=lambda s: s.rank)
    evidence = raised_sources(evidence, severity)
    return story.model_copy(update={"evidence": evidence, "summary": summary, "severity": severity})


def combine(older: Finding, newer: Finding) -> Finding:
    """Two outputs' stories of one problem as one (``report --findings audit.json --findings trail.json``): every
    source's part, ``newer``'s where both have one, and each source's own totals (never added)."""
    if not (is_story(older) and is_story(newer)) or older.id != newer.id:
        return newer
    story = with_stored(older, newer, float("inf"))
    parts: dict[str, Totals] = {}
    for f in (older, newer):
        if f.totals is not None:
            parts.update(f.totals.by_source or {f.evidence.get("source") or "unknown": f.totals})
    return story.model_copy(update={"totals": Totals.of_sources(parts) if parts else story.totals})

"""One item-size story per item, whichever sources saw it (pure).

``large_item`` and ``item_growth`` (Streams: the item's measured size and its growth) and ``item_size_exceeded``
(CloudTrail: writes already rejected) on the same (account, region, table, key) are one finding: :func:`merge_items`
makes it, with the stable id of that item alone (:func:`story_id`), each fact in ``evidence.facts`` (kind, source,
severity, period, numbers). :func:`with_stored` adds the stored story's other facts to a run's sighting (the service
sees them in different runs). The kind, severity and text rules are in docs/detectors.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from auditor.detectors.stream.item_growth import days_text
from auditor.detectors.stream.large_item import key_label
from auditor.detectors.stream.large_item import recommendation as size_recommendation
from auditor.detectors.trail.item_size_exceeded import RECOMMENDATION as REJECTED_RECOMMENDATION
from auditor.models.dynamodb_size import ITEM_SIZE_LIMIT
from auditor.models.finding import FACTS, Finding, FindingKind, Severity, Totals, fingerprint, isoformat_z, utc, worst
from auditor.models.stream import canonical_key

__all__ = [
    "FACTS",
    "ITEM_KINDS",
    "combine",
    "is_story",
    "merge_items",
    "restated",
    "story_id",
    "with_stored",
]


#: The item kinds, worst first: at equal severity the story takes the first one's kind (lost writes, then a
#: projection of when writes will fail, then a size).
ITEM_KINDS = (FindingKind.ITEM_SIZE_EXCEEDED, FindingKind.ITEM_GROWTH, FindingKind.LARGE_ITEM)

_SOURCE = {
    FindingKind.ITEM_SIZE_EXCEEDED: "cloudtrail",
    FindingKind.ITEM_GROWTH: "dynamodb_streams",
    FindingKind.LARGE_ITEM: "dynamodb_streams",
}
#: Evidence fields that belong to the story, not to one fact.
_STORY_FIELDS = frozenset({"key", "limit_bytes", "source", FACTS, "sources", "related_finding_ids"})
#: Fields of a fact that are its place in the story, not its numbers.
_FACT_META = ("kind", "source", "severity", "first_seen", "last_seen")

Place = tuple[str | None, str | None, str, str]


def story_id(account: str | None, region: str | None, table: str, key: Mapping[str, Any]) -> str:
    """The story's stable id: one per (account, region, table, key), whatever kinds of facts it holds."""
    return fingerprint("item", account, region, table, None, canonical_key(key))


def _key(finding: Finding) -> dict[str, Any] | None:
    key = finding.evidence.get("key")
    return key if isinstance(key, dict) and key else None


def _member(finding: Finding) -> bool:
    """A keyed finding of an item kind (an estimate or a view-type notice has no key and tells no item's story)."""
    return finding.kind in _SOURCE and _key(finding) is not None and finding.index is None


def is_story(finding: Finding) -> bool:
    """A finding already made a story by :func:`merge_items`."""
    return finding.kind in _SOURCE and isinstance(finding.evidence.get(FACTS), list)


def _fact(finding: Finding) -> dict[str, Any]:
    numbers = {k: v for k, v in finding.evidence.items() if k not in _STORY_FIELDS}
    return {
        "kind": finding.kind.value,
        "source": str(finding.evidence.get("source") or _SOURCE[finding.kind]),
        "severity": finding.severity.value,
        "first_seen": isoformat_z(finding.first_seen),
        "last_seen": isoformat_z(finding.last_seen),
        **numbers,
    }


def _when(fact: Mapping[str, Any], field: str) -> datetime:
    return utc(datetime.fromisoformat(str(fact[field]).replace("Z", "+00:00")))


def _num(fact: Mapping[str, Any] | None, field: str) -> float | None:
    value = fact.get(field) if fact else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _severity(facts: Mapping[FindingKind, Mapping[str, Any]]) -> Severity:
    """The worst fact's severity; rejected writes with a size or growth fact are critical (data already lost at the
    limit the other fact measures)."""
    found = worst(Severity(str(f["severity"])) for f in facts.values()) or Severity.MEDIUM
    if FindingKind.ITEM_SIZE_EXCEEDED in facts and len(facts) > 1:
        return Severity.CRITICAL
    return found


def _kind(facts: Mapping[FindingKind, Mapping[str, Any]]) -> FindingKind:
    if FindingKind.ITEM_SIZE_EXCEEDED in facts:
        return FindingKind.ITEM_SIZE_EXCEEDED
    return max(
        facts, key=lambda k: (Severity(str(facts[k]["severity"])).rank, -ITEM_KINDS.index(k))
    )  # the worst fact; at equal severity the first of ITEM_KINDS


def _size(facts: Mapping[FindingKind, Mapping[str, Any]]) -> float | None:
    """The item's size as last measured (the later of the size and growth facts)."""
    measured = [f for k, f in facts.items() if k is not FindingKind.ITEM_SIZE_EXCEEDED and _num(f, "size_bytes")]
    latest = max(measured, key=lambda f: _when(f, "last_seen"), default=None)
    return _num(latest, "size_bytes")


def _title(table: str, label: str, facts: Mapping[FindingKind, Mapping[str, Any]]) -> str:
    parts: list[str] = []
    rejected, growth = facts.get(FindingKind.ITEM_SIZE_EXCEEDED), facts.get(FindingKind.ITEM_GROWTH)
    if rejected is not None:
        n = int(_num(rejected, "count") or 0)
        parts.append(f"{n:,} write{'s' if n != 1 else ''} rejected for item size")
    size = _size(facts)
    if size is not None:
        parts.append(f"at {100 * size / ITEM_SIZE_LIMIT:.0f}% of 400 KB")
    rate, days = _num(growth, "bytes_per_day"), _num(growth, "days_to_limit")
    if rate is not None and days is not None:
        parts.append(f"growing {rate / 1024:,.1f} KB/day, at the limit in {days_text(days)}")
    return f"Item {label:.60} of {table}: " + ", ".join(parts)


def _summary(table: str, label: str, facts: Mapping[FindingKind, Mapping[str, Any]]) -> str:
    rejected, growth, large = (facts.get(k) for k in ITEM_KINDS)
    sentences: list[str] = []
    if rejected is not None:
        n = int(_num(rejected, "count") or 0)
        whole = int(_num(rejected, "whole_calls") or 0)
        sentences.append(
            f"CloudTrail logged {n:,} write{'s' if n != 1 else ''} to it rejected with a ValidationException for item "
            f"size (the last at {_when(rejected, 'last_seen'):%Y-%m-%d %H:%M} UTC): the item would exceed the 400 KB "
            "limit, and these writes were not applied"
            + (f" ({whole} of them batch or transaction calls)" if whole else "")
        )
    if large is not None:
        size = int(_num(large, "size_bytes") or 0)
        text = (
            f"Its stream image measured {size:,} bytes ({100 * size / ITEM_SIZE_LIMIT:.1f}% of the limit) at "
            f"{_when(large, 'last_seen'):%Y-%m-%d %H:%M} UTC"
        )
        attribute, attribute_bytes = large.get("largest_attribute"), _num(large, "largest_attribute_bytes")
        if attribute and attribute_bytes is not None:
            text += f'; its largest attribute, "{attribute}", is {attribute_bytes / 1024:,.1f} KB'
        sentences.append(text)
    if growth is not None:
        rate, days = _num(growth, "bytes_per_day") or 0.0, _num(growth, "days_to_limit") or 0.0
        span = _num(growth, "span_days") or 0.0
        reached = growth.get("projected_limit_at")
        sentences.append(
            f"Its stream shows it growing by about {rate:,.0f} bytes a day (robust slope over "
            f"{int(_num(growth, 'samples') or 0)} samples spanning {span:.1f} days, to "
            f"{int(_num(growth, 'size_bytes') or 0):,} bytes): at this rate it reaches the limit in {days_text(days)}"
            + (f" (around {str(reached)[:10]})" if reached else "")
            + ", after which every write to it fails"
            + (f'. The growth is in "{growth["growth_attribute"]}"' if growth.get("growth_attribute") else "")
        )
    return f"Item {label:.120} of {table}: " + ". ".join(sentences) + "."


def _recommendation(table: str, facts: Mapping[FindingKind, Mapping[str, Any]]) -> str:
    large, growth = facts.get(FindingKind.LARGE_ITEM), facts.get(FindingKind.ITEM_GROWTH)
    if large is None and growth is None:
        return REJECTED_RECOMMENDATION
    attribute = (growth or {}).get("growth_attribute") or (large or {}).get("largest_attribute")
    grows = growth is not None or bool((large or {}).get("growth_attributes"))
    return size_recommendation(table, str(attribute) if attribute else None, growing=grows)


def _build(place: Place, key: dict[str, Any], facts: Mapping[FindingKind, dict[str, Any]]) -> Finding:
    """The story finding from its facts (one per kind)."""
    account, region, table, _ = place
    kind = _kind(facts)
    label = key_label(key)
    ordered = [facts[k] for k in ITEM_KINDS if k in facts]
    evidence: dict[str, Any] = {}
    for fact in reversed(ordered):  # the worst fact's numbers win where two facts name the same field
        evidence.update({k: v for k, v in fact.items() if k not in _FACT_META})
    size = _size(facts)
    if size is not None:  # the latest measurement, as the title states it
        evidence.update(size_bytes=int(size), percent_of_limit=round(100 * size / ITEM_SIZE_LIMIT, 2))
    evidence.update(
        key=key,
        limit_bytes=ITEM_SIZE_LIMIT,
        source=facts[kind]["source"],
        sources=sorted({str(f["source"]) for f in ordered}),
        facts=ordered,
    )
    story = Finding(
        id=story_id(account, region, table, key),
        kind=kind,
        severity=_severity(facts),
        account=account,
        region=region,
        table=table,
        title=_title(table, label, facts),
        summary=_summary(table, label, facts),
        recommendation=_recommendation(table, facts),
        evidence=evidence,
        first_seen=min(_when(f, "first_seen") for f in ordered),
        last_seen=max(_when(f, "last_seen") for f in ordered),
    )
    return story


def _place(finding: Finding) -> Place:
    key = _key(finding)
    return (finding.account, finding.region, finding.table, canonical_key(key or {}))


def _facts_of(finding: Finding) -> dict[FindingKind, dict[str, Any]]:
    if is_story(finding):
        return {FindingKind(str(f["kind"])): dict(f) for f in finding.evidence[FACTS] if isinstance(f, dict)}
    return {finding.kind: _fact(finding)}


def _later(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``a`` is the later sighting of one fact (or as late and at least as severe)."""
    return (_when(a, "last_seen"), Severity(str(a["severity"])).rank) >= (
        _when(b, "last_seen"),
        Severity(str(b["severity"])).rank,
    )


def _totals(members: Sequence[Finding], severity: Severity) -> Totals:
    """Each source's totals of its members in this sighting (never added across sources); the sources' facts of one
    observation (a size and a growth) are one sighting, the latest one's."""
    parts: dict[str, Totals] = {}
    for m in sorted(members, key=lambda m: m.last_seen):
        own = m.sighting_totals()
        if is_story(m) and own.by_source:
            parts.update(own.by_source)
        else:
            parts[str(m.evidence.get("source") or _SOURCE[m.kind])] = own
    return Totals.of_sources(parts).model_copy(update={"peak_severity": severity})


def merge_items(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with every item's keyed ``large_item``, ``item_growth`` and ``item_size_exceeded`` findings made
    one story (:mod:`this module`); a fact seen several times keeps its latest sighting. The order of the other
    findings is kept; each story takes the place of its first member."""
    groups: dict[Place, list[Finding]] = {}
    for f in findings:
        if _member(f):
            groups.setdefault(_place(f), []).append(f)
    stories: dict[Place, Finding] = {}
    for place, members in groups.items():
        if len(members) == 1 and is_story(members[0]):
            stories[place] = members[0]  # already a story: merging again changes nothing
            continue
        facts: dict[FindingKind, dict[str, Any]] = {}
        for m in members:
            for kind, fact in _facts_of(m).items():
                if kind in facts:  # the latest sighting of the fact, over the period of both
                    latest, other = (fact, facts[kind]) if _later(fact, facts[kind]) else (facts[kind], fact)
                    first = min(_when(latest, "first_seen"), _when(other, "first_seen"))
                    fact = {**latest, "first_seen": isoformat_z(first)}
                facts[kind] = fact
        key = _key(members[0]) or {}
        story = _build(place, key, facts)
        stories[place] = story.model_copy(update={"totals": _totals(members, story.severity)})
    out: list[Finding] = []
    placed: set[Place] = set()
    for f in findings:
        if not _member(f):
            out.append(f)
            continue
        place = _place(f)
        if place not in placed:
            placed.add(place)
            out.append(stories[place])
    return out


def restated(story: Finding) -> Finding:
    """``story`` stated for a period (:func:`auditor.detectors.findings.period.for_period`): its severity is never
    below what its facts make it (the period's severity is the highest a single sighting reached, and a fact that
    joined from another run raises the story above its sightings), and the rejected-writes fact takes the
    evidence's counts (the period's where they were stated) and CloudTrail's period from the totals, the title and
    summary following, so that every number the story states is the period's."""
    if not is_story(story):
        return story
    facts = _facts_of(story)
    severity = worst([story.severity, _severity(facts)]) or story.severity
    if story.kind is not FindingKind.ITEM_SIZE_EXCEEDED or FindingKind.ITEM_SIZE_EXCEEDED not in facts:
        return story if severity is story.severity else story.model_copy(update={"severity": severity})
    rejected = dict(facts[FindingKind.ITEM_SIZE_EXCEEDED])
    for field in ("count", "whole_calls", "window_seconds"):
        if field in story.evidence:
            rejected[field] = story.evidence[field]
    part = (story.totals.by_source or {}).get("cloudtrail", story.totals) if story.totals is not None else None
    if part is not None:
        rejected.update(first_seen=isoformat_z(part.first_seen), last_seen=isoformat_z(part.last_seen))
    rebuilt = _build(_place(story), _key(story) or {}, {**facts, FindingKind.ITEM_SIZE_EXCEEDED: rejected})
    evidence = {**story.evidence, FACTS: rebuilt.evidence[FACTS]}
    update = {"title": rebuilt.title, "summary": rebuilt.summary, "evidence": evidence, "severity": severity}
    return story.model_copy(update=update)


def with_stored(stored: Finding | None, seen: Finding, max_age_seconds: float) -> Finding:
    """``seen`` (a story sighting of one run) with the stored story's other facts that are still current.

    A stored fact joins when it is of a kind the sighting lacks and was last seen no more than ``max_age_seconds``
    before the sighting ends (an older one is history). The sighting's own facts and its totals are kept; kind,
    severity and text follow from all the facts.
    """
    if stored is None or not is_story(seen) or not is_story(stored) or stored.id != seen.id:
        return seen
    mine = _facts_of(seen)
    horizon = seen.last_seen.timestamp() - max_age_seconds
    added = {
        k: f
        for k, f in _facts_of(stored).items()
        if k not in mine and "last_seen" in f and _when(f, "last_seen").timestamp() >= horizon
    }
    if not added:
        return seen
    key = _key(seen) or {}
    story = _build(_place(seen), key, {**mine, **added})
    return story.model_copy(update={"totals": seen.totals})


def combine(older: Finding, newer: Finding) -> Finding:
    """Two outputs' stories of one item as one (``report --findings a.json --findings b.json``): every fact,
    ``newer``'s where both have one, each source's own totals (never added)."""
    if not (is_story(older) and is_story(newer)) or older.id != newer.id:
        return newer
    story = with_stored(older, newer, float("inf"))
    parts = {
        source: part
        for f in (older, newer)  # newer's part of a source wins
        for source, part in ((f.totals.by_source or {}) if f.totals is not None else {}).items()
    }
    if not parts:
        return story
    totals = Totals.of_sources(parts)
    return story.model_copy(update={"totals": totals.model_copy(update={"peak_severity": story.severity})})

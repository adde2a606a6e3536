"""The finding lifecycle: what changed since the last evaluation, and what to tell people about it.

Pure: no boto3, no clock, no environment. The caller passes ``now`` and the stored states in, and gets the new
states (new, ongoing, worsened, resolved) and the events to publish back; the store writes each state change and its
event atomically. Resolution is by absence, measured from the evaluated horizon, never the clock. It also holds the
suppress and snooze rules (``SUPPRESS_RULES_JSON``). Statuses, events and the rules' format are in docs/service.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from fnmatch import fnmatchcase

from pydantic import Field, TypeAdapter, ValidationError, field_validator, model_validator

from auditor.exceptions import ConfigurationError
from auditor.models.base import FrozenModel
from auditor.models.finding import Finding, FindingKind, Severity, Totals, isoformat_z, utc

#: How many ISO weeks of totals a finding keeps (the report reads the last complete week).
WEEKS_KEPT = 8

#: (account, region, table) of an audited table.
TableKey = tuple[str | None, str | None, str]


class FindingStatus(StrEnum):
    """Where a finding is in its lifecycle."""

    NEW = "new"
    ONGOING = "ongoing"
    WORSENED = "worsened"
    RESOLVED = "resolved"

    @property
    def is_open(self) -> bool:
        """Every status but ``resolved``."""
        return self is not FindingStatus.RESOLVED

    @property
    def label(self) -> str:
        """The status word as a label (``Ongoing``): every output shows these four words, nothing else."""
        return self.value.capitalize()


#: What each status means (the report's hints, the docs): the lifecycle's own rules in words.
STATUS_MEANINGS: dict[str, str] = {
    FindingStatus.NEW: "First seen by the latest evaluation, or seen again after it was resolved.",
    FindingStatus.ONGOING: "Seen before and still happening.",
    FindingStatus.WORSENED: "Still happening, and more severe than when it was last alerted.",
    FindingStatus.RESOLVED: "Not seen any more.",
}


class EventKind(StrEnum):
    """What a published message says happened to a finding."""

    NEW = "new"
    WORSENED = "worsened"
    RESOLVED = "resolved"


def table_key(finding: Finding) -> TableKey:
    """The audited table a finding is on."""
    return (finding.account, finding.region, finding.table)


# ---------------------------------------------------------------------------------------------------------------
# Suppress / snooze rules
# ---------------------------------------------------------------------------------------------------------------


class SuppressRule(FrozenModel):
    """One suppress (no ``until``) or snooze (``until``) rule."""

    table: str | None = Field(default=None, min_length=1)
    kind: FindingKind | None = None
    principal: str | None = Field(default=None, min_length=1)
    key: str | None = Field(default=None, min_length=1)
    until: datetime | None = None
    reason: str = Field(min_length=1, max_length=500)

    @field_validator("until")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return utc(value) if value is not None else None

    @model_validator(mode="after")
    def _names_something(self) -> SuppressRule:
        if self.table is None and self.kind is None and self.principal is None and self.key is None:
            raise ValueError("a rule must name at least one of table, kind, principal or key")
        return self

    def active(self, now: datetime) -> bool:
        """A suppress rule is always active; a snooze until its ``until``."""
        return self.until is None or utc(now) < self.until

    def matches(self, finding: Finding, now: datetime) -> bool:
        """Whether this rule mutes ``finding`` at ``now``."""
        if not self.active(now):
            return False
        if self.table is not None and not fnmatchcase(finding.table, self.table):
            return False
        if self.kind is not None and finding.kind is not self.kind:
            return False
        if self.principal is not None:
            principal = finding.evidence.get("principal")
            if not isinstance(principal, str) or not fnmatchcase(principal, self.principal):
                return False
        if self.key is not None:
            return any(fnmatchcase(text, self.key) for text in _key_texts(finding.evidence.get("key")))
        return True


def _key_texts(key: object) -> list[str]:
    """What a ``key`` rule is matched against: each value of the key, and ``attribute=value``."""
    if isinstance(key, str):
        return [key]
    if isinstance(key, Mapping):
        out: list[str] = []
        for name, value in key.items():
            out += [str(value), f"{name}={value}"]
        return out
    return []


_RULES = TypeAdapter(list[SuppressRule])


def parse_suppress_rules(text: str | None) -> tuple[SuppressRule, ...]:
    """Parse ``SUPPRESS_RULES_JSON``; empty or unset means no rules.

    Raises:
        ConfigurationError: the document is not JSON, not a list, or a rule is invalid (the message names
            the rule's position and field).
    """
    if text is None or not text.strip():
        return ()
    try:
        return tuple(_RULES.validate_json(text))
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "json_invalid":
            raise ConfigurationError(f"SUPPRESS_RULES_JSON is not valid JSON: {err['msg']}") from exc
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        raise ConfigurationError(f"SUPPRESS_RULES_JSON is invalid at {loc or '(root)'}: {err['msg']}") from exc


#: A preliminary billing or table-class recommendation (too little data, see
#: ``auditor.detectors.billing.gate``) is stored but never alerted: it is muted by this built-in rule.
PRELIMINARY_RULE_REASON = "preliminary billing recommendation: not alerted until 7 days of data with a weekend"


def matching_rule(rules: Iterable[SuppressRule], finding: Finding, now: datetime) -> SuppressRule | None:
    """The first rule that mutes ``finding`` at ``now`` (a preliminary recommendation is always muted)."""
    if finding.evidence.get("preliminary") is True:
        return SuppressRule(kind=finding.kind, reason=PRELIMINARY_RULE_REASON)
    return next((r for r in rules if r.matches(finding, now)), None)


# ---------------------------------------------------------------------------------------------------------------
# States, events and changes
# ---------------------------------------------------------------------------------------------------------------


class FindingState(FrozenModel):
    """A finding as the service remembers it between evaluations.

    ``finding`` is the latest sighting, with ``first_seen`` (earliest ever, across re-openings) and
    ``last_seen`` (latest) of the whole history. ``version`` belongs to the store (optimistic concurrency;
    0 means never stored).
    """

    finding: Finding
    status: FindingStatus
    #: When the current episode opened (first sighting, or the re-opening).
    opened_at: datetime
    #: When the state last changed.
    updated_at: datetime
    #: The severity of the last ``new``/``worsened`` event published in this episode (None: not published).
    published_severity: Severity | None = None
    resolved_at: datetime | None = None
    #: The reason of the suppress/snooze rule that muted the latest decision, if any.
    muted_reason: str | None = None
    #: The end of that snooze (None with a reason: suppressed for good).
    muted_until: datetime | None = None
    #: Totals per ISO week (``2026-W49``), the most recent :data:`WEEKS_KEPT`; empty for a state stored by a
    #: version without totals (they start from the next sighting).
    weekly_totals: dict[str, Totals] = Field(default_factory=dict)
    version: int = Field(default=0, ge=0)

    @field_validator("opened_at", "updated_at", "resolved_at", "muted_until")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return utc(value) if value is not None else None

    @property
    def id(self) -> str:
        """The finding id (stable across runs)."""
        return self.finding.id

    @property
    def first_seen(self) -> datetime:
        """Earliest sighting ever."""
        return self.finding.first_seen

    @property
    def last_seen(self) -> datetime:
        """Latest sighting."""
        return self.finding.last_seen

    @property
    def is_open(self) -> bool:
        """Not resolved."""
        return self.status.is_open

    @property
    def muted(self) -> bool:
        """A rule muted the latest decision."""
        return self.muted_reason is not None

    def totals_for(self, week: str) -> Totals | None:
        """The totals of ISO week ``week`` (``2026-W49``), None when not seen (or not counted) that week."""
        return self.weekly_totals.get(week)


class FindingEvent(FrozenModel):
    """A message to publish: what happened to which finding (the finding as of the event)."""

    kind: EventKind
    finding: Finding
    at: datetime
    #: For ``worsened``: the severity published before.
    previous_severity: Severity | None = None

    @field_validator("at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return utc(value)


@dataclass(frozen=True, slots=True)
class StateChange:
    """One finding's new state, the state it replaces, and the event to publish with it (if any)."""

    previous: FindingState | None
    state: FindingState
    event: FindingEvent | None = None
    #: The event a rule muted (so it is counted, never published).
    muted_event: EventKind | None = None

    @property
    def id(self) -> str:
        """The finding id."""
        return self.state.id

    def without_event(self) -> StateChange:
        """The same state change, publishing nothing."""
        return replace(self, event=None)


@dataclass(slots=True)
class Reconciliation:
    """The outcome of one evaluation: the changed states, in id order, and the merged sightings."""

    changes: list[StateChange] = field(default_factory=list)
    #: The run's sightings by id (several windows' findings of one id merged), for re-applying on conflict.
    sightings: dict[str, Finding] = field(default_factory=dict)

    @property
    def events(self) -> list[FindingEvent]:
        """The events to publish (before the caller's ``publish_resolved`` filter)."""
        return [c.event for c in self.changes if c.event is not None]

    @property
    def states(self) -> dict[str, FindingState]:
        """The new states by id."""
        return {c.id: c.state for c in self.changes}

    def count(self, kind: EventKind) -> int:
        """Events of ``kind`` (published or muted)."""
        return sum(1 for c in self.changes if kind in {c.muted_event, c.event.kind if c.event else None})


# ---------------------------------------------------------------------------------------------------------------
# Transitions
# ---------------------------------------------------------------------------------------------------------------


def iso_week(moment: datetime) -> str:
    """``2026-W49``: the ISO week of ``moment`` (UTC)."""
    year, week, _ = utc(moment).isocalendar()
    return f"{year}-W{week:02d}"


def sighting_totals(findings: Iterable[Finding]) -> dict[str, list[Totals]]:
    """Each id's sightings' totals (one per evaluated window), oldest first."""
    out: dict[str, list[Totals]] = {}
    for f in findings:
        out.setdefault(f.id, []).append(f.sighting_totals())
    for totals in out.values():
        totals.sort(key=lambda t: (t.first_seen, t.period_start))
    return out


def add_sightings(weekly: Mapping[str, Totals], sightings: Sequence[Totals]) -> dict[str, Totals]:
    """``weekly`` with ``sightings`` added to the ISO week each one's window starts in.

    The week's ``peak_severity`` is the highest its sightings reached (:meth:`Totals.merged`), the finding's
    severity for that week (:meth:`auditor.models.finding.Finding.over_period`). A sighting is counted only when
    it starts after everything already counted that week (its ``first_seen``
    after the week's ``last_seen``): windows are evaluated in time order, so a re-evaluated window (a retry, two
    evaluators racing, a correlation that re-sights a stored finding) is never counted twice. Only the
    :data:`WEEKS_KEPT` most recent weeks are kept.
    """
    out = dict(weekly)
    for t in sightings:
        week = iso_week(t.period_start)
        stored = out.get(week)
        if stored is None:
            out[week] = t
        elif t.by_source is not None and stored.by_source is not None:
            # Several sources (a throttling story): each source's sightings are in time order, not the sources
            # between them, so each source is checked against its own last sighting and added to its own sum.
            fresh = {
                s: part
                for s, part in t.by_source.items()
                if s not in stored.by_source or part.first_seen > stored.by_source[s].last_seen
            }
            if fresh:
                story = Totals.of_sources(fresh).model_copy(update={"peak_severity": t.peak_severity})
                out[week] = stored.merged(story)
        elif t.first_seen > stored.last_seen:
            out[week] = stored.merged(t)
    return {w: out[w] for w in sorted(out)[-WEEKS_KEPT:]}


def _latest_totals(weekly: Mapping[str, Totals]) -> Totals | None:
    return weekly[max(weekly)] if weekly else None


def merge_sightings(findings: Iterable[Finding]) -> dict[str, Finding]:
    """One sighting per id: the most severe (then latest) one, spanning all their first/last seen times.

    Times are floored to whole seconds, the precision findings are serialised (and stored) with, so a sighting
    compares equal to its stored copy.
    """
    merged: dict[str, Finding] = {}
    for raw in findings:
        f = _with_times(raw, raw.first_seen.replace(microsecond=0), raw.last_seen.replace(microsecond=0))
        seen = merged.get(f.id)
        if seen is None:
            merged[f.id] = f
            continue
        best = f if (f.severity.rank, f.last_seen) > (seen.severity.rank, seen.last_seen) else seen
        merged[f.id] = best.model_copy(
            update={"first_seen": min(seen.first_seen, f.first_seen), "last_seen": max(seen.last_seen, f.last_seen)}
        )
    return merged


def _with_times(finding: Finding, first: datetime, last: datetime) -> Finding:
    if finding.first_seen == first and finding.last_seen == last:
        return finding
    return finding.model_copy(update={"first_seen": first, "last_seen": last})


def _mute(rule: SuppressRule | None) -> dict[str, object]:
    return {"muted_reason": rule.reason if rule else None, "muted_until": rule.until if rule else None}


def _same(a: FindingState, b: FindingState) -> bool:
    ignore = {"updated_at", "version"}
    return a.model_dump(exclude=ignore) == b.model_dump(exclude=ignore)


def transition(
    previous: FindingState | None,
    seen: Finding | None,
    *,
    now: datetime,
    rules: Sequence[SuppressRule] = (),
    resolve_after_seconds: int,
    horizon: datetime | None,
    counted: Sequence[Totals] | None = None,
) -> StateChange | None:
    """The change to one finding given its stored state and this run's sighting (None: not seen).

    ``horizon`` is the end of the latest evaluated window of the finding's table in this run, or None when
    the table was not evaluated (then an unseen finding cannot resolve). ``counted`` are the totals of each of
    this run's sightings (one per window, see :func:`sighting_totals`; default: ``seen``'s own), added to the
    state's weekly totals by :func:`add_sightings`. Returns None when nothing changes.
    """
    now = utc(now)
    if seen is not None:
        weekly = add_sightings(
            previous.weekly_totals if previous else {}, [seen.sighting_totals()] if counted is None else counted
        )
        return _seen(previous, seen.with_totals(_latest_totals(weekly)), now, rules, weekly)
    if previous is None or not previous.is_open or horizon is None:
        return None
    if (utc(horizon) - previous.last_seen).total_seconds() < resolve_after_seconds:
        return None
    rule = matching_rule(rules, previous.finding, now)
    state = previous.model_copy(
        update={"status": FindingStatus.RESOLVED, "resolved_at": now, "updated_at": now, **_mute(rule)}
    )
    if previous.published_severity is None:
        return StateChange(previous, state)  # never announced: nothing to retract
    if rule is not None:
        return StateChange(previous, state, muted_event=EventKind.RESOLVED)
    return StateChange(previous, state, FindingEvent(kind=EventKind.RESOLVED, finding=state.finding, at=now))


def _seen(
    previous: FindingState | None,
    seen: Finding,
    now: datetime,
    rules: Sequence[SuppressRule],
    weekly: dict[str, Totals],
) -> StateChange | None:
    rule = matching_rule(rules, seen, now)
    if previous is None or not previous.is_open:
        if previous is not None and seen.last_seen <= previous.last_seen:
            return None  # old evidence (a re-evaluated window): it does not re-open a resolved finding
        first = min(previous.first_seen, seen.first_seen) if previous else seen.first_seen
        finding = _with_times(seen, first, seen.last_seen)
        state = FindingState(
            finding=finding,
            status=FindingStatus.NEW,
            opened_at=now,
            updated_at=now,
            published_severity=None if rule else finding.severity,
            muted_reason=rule.reason if rule else None,
            muted_until=rule.until if rule else None,
            weekly_totals=weekly,
            version=previous.version if previous else 0,
        )
        if rule is not None:
            return StateChange(previous, state, muted_event=EventKind.NEW)
        return StateChange(previous, state, FindingEvent(kind=EventKind.NEW, finding=finding, at=now))

    finding = _with_times(seen, min(previous.first_seen, seen.first_seen), max(previous.last_seen, seen.last_seen))
    reference = previous.published_severity or previous.finding.severity
    base = {"finding": finding, "updated_at": now, "weekly_totals": weekly, **_mute(rule)}
    if rule is None and previous.published_severity is None:
        # Muted until now (a snooze ended, a rule was removed): announce it for the first time.
        state = previous.model_copy(
            update={**base, "status": FindingStatus.NEW, "published_severity": finding.severity}
        )
        return StateChange(previous, state, FindingEvent(kind=EventKind.NEW, finding=finding, at=now))
    if finding.severity.rank > reference.rank:
        if rule is not None:
            state = previous.model_copy(update={**base, "status": FindingStatus.WORSENED})
            return StateChange(previous, state, muted_event=EventKind.WORSENED)
        state = previous.model_copy(
            update={**base, "status": FindingStatus.WORSENED, "published_severity": finding.severity}
        )
        event = FindingEvent(kind=EventKind.WORSENED, finding=finding, at=now, previous_severity=reference)
        return StateChange(previous, state, event)
    state = previous.model_copy(update={**base, "status": FindingStatus.ONGOING})
    return None if _same(state, previous) else StateChange(previous, state)


def reconcile(
    previous: Mapping[str, FindingState],
    current: Iterable[Finding],
    now: datetime,
    rules: Sequence[SuppressRule],
    resolve_after_seconds: int,
    evaluated_tables: Mapping[TableKey, datetime],
) -> Reconciliation:
    """Compare this run's findings with the stored states.

    Args:
        previous: stored states by id: at least the open findings of every evaluated table and the stored
            state of every id in ``current``.
        current: this run's findings (several windows may report the same id: they are merged).
        now: the decision time (``opened_at``, ``resolved_at`` and event times).
        rules: suppress/snooze rules.
        resolve_after_seconds: absence that resolves a finding.
        evaluated_tables: the tables evaluated in this run, each with its horizon (the end of its latest
            evaluated window); findings of other tables never resolve in this run.
    """
    current = list(current)
    sightings = merge_sightings(current)
    counted = sighting_totals(current)
    result = Reconciliation(sightings=sightings)
    for fid in sorted(set(previous) | set(sightings)):
        prev = previous.get(fid)
        seen = sightings.get(fid)
        subject = seen if seen is not None else previous[fid].finding
        change = transition(
            prev,
            seen,
            now=now,
            rules=rules,
            resolve_after_seconds=resolve_after_seconds,
            horizon=evaluated_tables.get(table_key(subject)),
            counted=counted.get(fid),
        )
        if change is not None:
            result.changes.append(change)
    return result


def describe(event: FindingEvent) -> str:
    """A one-line description of an event (logs, message subjects)."""
    f = event.finding
    if event.kind is EventKind.RESOLVED:
        return f"resolved: {f.title} (last seen {isoformat_z(f.last_seen)})"
    if event.kind is EventKind.WORSENED and event.previous_severity is not None:
        return f"worsened {event.previous_severity} -> {f.severity}: {f.title}"
    return f"new {f.severity}: {f.title}"

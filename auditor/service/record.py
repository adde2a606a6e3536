"""Recording findings from any source through the one findings lifecycle: store the changes, queue and publish events.

Every source of findings (the window evaluator, the hourly metrics audit, the stream item-size watcher) calls
:func:`record_findings` (or :func:`apply_lifecycle` when it publishes at another moment): read the stored states,
decide each change with :mod:`auditor.lifecycle`, write it with its publish intent in one transaction, drain the
outbox. A source resolves only its own findings on the tables it read (:class:`ResolveScope`), and
:func:`carry_over` keeps the other sources' part of a story. A window evaluated again replaces its part of the
weekly totals (:func:`apply_corrections`). The rules are in docs/service.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

import structlog

from auditor.detectors.findings import item_story, scan_volume, throttling_story
from auditor.lifecycle import (
    EventKind,
    FindingState,
    FindingStatus,
    StateChange,
    SuppressRule,
    TableKey,
    merge_sightings,
    parse_suppress_rules,
    sighting_totals,
    table_key,
    transition,
)
from auditor.models.finding import Finding, FindingKind, Totals, utc, worst
from auditor.sinks.sns import PublishResult, publish_pending
from auditor.state.findings_store import FindingsStore

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

    from auditor.config import Settings

__all__ = [
    "DEFAULT_PUBLISH_LIMIT",
    "SOURCE_CLOUDTRAIL",
    "SOURCE_CLOUDWATCH",
    "SOURCE_CLOUDWATCH_ACTIVITY",
    "SOURCE_CLOUDWATCH_BILLING",
    "SOURCE_CONTRIBUTOR_INSIGHTS",
    "SOURCE_STREAMS",
    "Correction",
    "LifecycleParams",
    "LifecyclePolicy",
    "OpenFindings",
    "RecordResult",
    "ResolveScope",
    "apply_corrections",
    "apply_lifecycle",
    "correct",
    "corrected_week",
    "finding_source",
    "record_findings",
]

log = structlog.get_logger(__name__)

SOURCE_CLOUDTRAIL = "cloudtrail"
SOURCE_CLOUDWATCH = "cloudwatch"
#: The billing decision's findings (``billing_mode``, ``table_class``): the metrics audit's once-a-day billing read.
SOURCE_CLOUDWATCH_BILLING = "cloudwatch_billing"
#: Idle-table and TTL findings: the metrics audit's once-a-day read of daily activity (``read_activity``).
SOURCE_CLOUDWATCH_ACTIVITY = "cloudwatch_activity"
SOURCE_CONTRIBUTOR_INSIGHTS = "contributor_insights"
SOURCE_STREAMS = "dynamodb_streams"

#: Outbox entries published per run.
DEFAULT_PUBLISH_LIMIT = 200

#: The source of findings whose evidence does not name one (the detectors name it; this is the fallback). Kinds with
#: several possible sources (hot_key, scan, throttling, large_item's CloudWatch estimate) or also an offline one
#: (billing_mode, table_class: the live audit sets ``evidence.source`` to ``cloudwatch_billing``) have no fallback:
#: such a finding without a source is never resolved by absence.
_KIND_SOURCE: dict[FindingKind, str] = {
    FindingKind.LOW_CARDINALITY_KEY: SOURCE_CLOUDTRAIL,
    FindingKind.ITEM_SIZE_EXCEEDED: SOURCE_CLOUDTRAIL,
    FindingKind.ITEM_GROWTH: SOURCE_STREAMS,
    FindingKind.UNUSED_INDEX: SOURCE_CLOUDWATCH,
    FindingKind.IDLE_TABLE: SOURCE_CLOUDWATCH_ACTIVITY,
    FindingKind.TTL_NOT_EXPIRING: SOURCE_CLOUDWATCH_ACTIVITY,
}


def finding_source(finding: Finding) -> str | None:
    """Where a finding's evidence comes from: ``evidence.source`` when set, else the kind's only source, else None."""
    source = finding.evidence.get("source")
    if isinstance(source, str) and source:
        return source
    return _KIND_SOURCE.get(finding.kind)


@dataclass(frozen=True, slots=True)
class ResolveScope:
    """Which stored open findings a run may resolve by absence, and the horizon it read each one's table to.

    ``horizons`` maps (source, table) to the end of what the run read of that table from that source. A finding is
    in scope when its own source (:func:`finding_source`) and table are a key; a finding of an unknown source never
    is.
    """

    horizons: Mapping[tuple[str, TableKey], datetime] = field(default_factory=dict)

    @classmethod
    def nothing(cls) -> ResolveScope:
        """A run that resolves nothing (the stream item-size watcher)."""
        return cls({})

    @classmethod
    def tables(cls, horizons: Mapping[TableKey, datetime], sources: Iterable[str]) -> ResolveScope:
        """Every given source on every given table, each with the table's horizon."""
        return cls({(source, key): utc(at) for source in sources for key, at in horizons.items()})

    def horizon(self, finding: Finding) -> datetime | None:
        """The horizon to resolve ``finding`` against, or None when this run may not resolve it."""
        source = finding_source(finding)
        return None if source is None else self.horizons.get((source, table_key(finding)))

    def table_keys(self) -> list[TableKey]:
        """The tables whose open findings the run must read (sorted, each once)."""
        return sorted({key for _, key in self.horizons}, key=lambda k: (k[0] or "", k[1] or "", k[2]))


class OpenFindings:
    """The stored open findings of tables (GSI1), read once per table per run and shared by the run's steps."""

    def __init__(self, store: FindingsStore) -> None:
        self._store = store
        self._cache: dict[TableKey, list[FindingState]] = {}

    def of(self, key: TableKey) -> list[FindingState]:
        """The open findings of one table (eventually consistent; ids seen again are re-read strongly)."""
        if key not in self._cache:
            account, region, table = key
            self._cache[key] = self._store.open_findings(account, region, table)
        return self._cache[key]


#: The counters of :class:`RecordResult` that recording sets (the others are the outbox drain's).
_COUNTERS = ("findings_seen", "states_written", "new", "worsened", "resolved", "events_queued", "muted", "conflicts")


@dataclass(slots=True)
class RecordResult:
    """What recording one run's findings did."""

    findings_seen: int = 0
    #: State changes written, and how many of them moved to each status.
    states_written: int = 0
    new: int = 0
    worsened: int = 0
    resolved: int = 0
    #: Events queued for publishing, and events a suppress/snooze rule muted.
    events_queued: int = 0
    muted: int = 0
    conflicts: int = 0
    published: int = 0
    publish_failed: int = 0
    #: Events still in the outbox after the drain (up to the drain's limit), and the oldest one's age in seconds.
    outbox_pending: int = 0
    outbox_age_seconds: float = 0.0
    #: The drain's publishes that may repeat one a crashed run made (a repeated e-mail), and its bookkeeping writes
    #: that failed after an accepted publish (the entry is finished by the next run).
    repeated_publishes: int = 0
    outbox_bookkeeping_failed: int = 0
    publish_errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready counters (the publish errors as a count)."""
        data = asdict(self)
        data.pop("publish_errors")
        return data

    def take_publish(self, published: PublishResult) -> None:
        """Take an outbox drain's counters (sent, failed, what it left behind)."""
        self.published, self.publish_failed, self.publish_errors = published.sent, published.failed, published.errors
        self.outbox_pending, self.outbox_age_seconds = published.left, round(published.oldest_left_seconds, 3)
        self.repeated_publishes, self.outbox_bookkeeping_failed = published.repeated, published.bookkeeping_failed

    def count(self, written: StateChange | None) -> None:
        """Count one state change as stored (None: nothing was left to write)."""
        if written is None:
            return
        status = written.state.status
        self.states_written += 1
        self.new += int(status is FindingStatus.NEW)
        self.worsened += int(status is FindingStatus.WORSENED)
        self.resolved += int(status is FindingStatus.RESOLVED)
        self.events_queued += int(written.event is not None)
        self.muted += int(written.muted_event is not None)

    def add_counts(self, other: RecordResult) -> None:
        """Add ``other``'s recording counters (not the publish ones) to this result's."""
        for name in _COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def take_counts(self, other: RecordResult) -> None:
        """Copy ``other``'s recording counters (not the publish ones) into this result."""
        self.findings_seen, self.states_written = other.findings_seen, other.states_written
        self.new, self.worsened, self.resolved = other.new, other.worsened, other.resolved
        self.events_queued, self.muted, self.conflicts = other.events_queued, other.muted, other.conflicts


@dataclass(frozen=True, slots=True, kw_only=True)
class LifecyclePolicy:
    """How a source's findings move through the lifecycle: the suppress/snooze rules, how long an unseen finding
    stays open (``resolve_after_seconds``) and whether its resolution is published. The settings of every source
    (:class:`LifecycleParams`, the evaluator's) extend it."""

    rules: tuple[SuppressRule, ...] = ()
    resolve_after_seconds: int = 86_400
    publish_resolved: bool = False


@dataclass(frozen=True, slots=True)
class LifecycleParams(LifecyclePolicy):
    """The lifecycle settings every source records with, with the topic and the drain's limit (see
    :meth:`from_settings`)."""

    topic_arn: str
    publish_limit: int = DEFAULT_PUBLISH_LIMIT

    @classmethod
    def from_settings(cls, settings: Settings) -> LifecycleParams:
        """From the process settings (raises ConfigurationError on a missing topic or invalid rules)."""
        return cls(
            topic_arn=settings.require("findings_topic_arn"),
            rules=parse_suppress_rules(settings.suppress_rules_json),
            resolve_after_seconds=settings.resolve_after_seconds,
            publish_resolved=settings.publish_resolved,
        )

    def record(
        self,
        store: FindingsStore,
        sns: SNSClient,
        findings: Iterable[Finding],
        *,
        now: datetime,
        scope: ResolveScope,
        open_findings: OpenFindings | None = None,
        publish_when_idle: bool = True,
    ) -> RecordResult:
        """Store a run's findings through the lifecycle with these settings (:func:`apply_lifecycle`), then drain
        the outbox to SNS (see :func:`record_findings`)."""
        result = apply_lifecycle(store, findings, now=now, scope=scope, policy=self, open_findings=open_findings)
        if self.publish_limit > 0 and (publish_when_idle or result.events_queued):
            published = publish_pending(store, sns, self.topic_arn, self.publish_limit, now=utc(now))
            result.take_publish(published)
        log.info("findings_recorded", **result.as_dict())
        return result


def carry_over(stored: Finding, seen: Finding, max_age_seconds: float) -> Finding:
    """``seen`` with what other sources told about the same finding in earlier runs, while it is current.

    A throttling story keeps the stored story's other sources (:func:`throttling_story.with_stored`), an item story
    its other facts (:func:`item_story.with_stored`: the stream watcher's sizes, the evaluator's rejected writes); a
    CloudTrail scan finding keeps CloudWatch's scan volume attached to it (:func:`scan_volume.with_stored`).
    """
    seen = throttling_story.with_stored(stored, seen, max_age_seconds)
    seen = item_story.with_stored(stored, seen, max_age_seconds)
    return scan_volume.with_stored(stored, seen, max_age_seconds)


def _story_restated(change: StateChange) -> StateChange:
    """``change`` with an item story's text restated from its evidence, which the lifecycle stated for the week
    (:func:`item_story.restated`: the title's count of rejected writes is the stored evidence's)."""
    finding = item_story.restated(change.state.finding)
    if finding == change.state.finding:
        return change
    event = change.event
    if event is not None and event.finding.id == finding.id:
        event = event.model_copy(update={"finding": item_story.restated(event.finding)})
    return replace(change, state=change.state.model_copy(update={"finding": finding}), event=event)


def _previous_states(
    store: FindingsStore, scope: ResolveScope, seen_ids: Iterable[str], open_findings: OpenFindings
) -> dict[str, FindingState]:
    previous: dict[str, FindingState] = {}
    for key in scope.table_keys():
        for state in open_findings.of(key):
            if scope.horizon(state.finding) is not None:
                previous[state.id] = state
    previous.update(store.get_many(seen_ids))  # strongly consistent: wins over the GSI copy
    return previous


def apply_lifecycle(
    store: FindingsStore,
    findings: Iterable[Finding],
    *,
    now: datetime,
    scope: ResolveScope,
    policy: LifecyclePolicy = LifecyclePolicy(),
    open_findings: OpenFindings | None = None,
) -> RecordResult:
    """Store this run's findings' lifecycle changes with their publish intents; publishes nothing.

    ``findings`` are this run's sightings (several of one id are merged). Stored open findings the ``scope`` covers
    and that were not seen resolve once absent for the ``policy``'s ``resolve_after_seconds`` (measured to the
    scope's horizon).
    """
    rules, resolve_after_seconds = policy.rules, policy.resolve_after_seconds
    now = utc(now)
    findings = list(findings)
    sightings = merge_sightings(findings)
    counted = sighting_totals(findings)
    result = RecordResult(findings_seen=len(sightings))
    previous = _previous_states(store, scope, sightings, open_findings or OpenFindings(store))

    def decide(stored: FindingState | None, seen: Finding | None) -> StateChange | None:
        if seen is not None and stored is not None:
            # What other sources (other runs) told about the same problem stays on it while it is current.
            seen = carry_over(stored.finding, seen, resolve_after_seconds)
        subject = seen if seen is not None else stored.finding if stored is not None else None
        change = transition(
            stored,
            seen,
            now=now,
            rules=rules,
            resolve_after_seconds=resolve_after_seconds,
            horizon=scope.horizon(subject) if subject is not None else None,
            counted=counted.get(seen.id) if seen is not None else None,
        )
        if change is None:
            return None
        change = _story_restated(change)
        if change.event is not None and change.event.kind is EventKind.RESOLVED and not policy.publish_resolved:
            return change.without_event()
        return change

    conflicts_before = store.conflicts
    for fid in sorted(set(previous) | set(sightings)):
        seen = sightings.get(fid)
        change = decide(previous.get(fid), seen)
        if change is None:
            continue

        def recompute(stored: FindingState | None, seen: Finding | None = seen) -> StateChange | None:
            return decide(stored, seen)

        result.count(store.apply(change, recompute))
    result.conflicts = store.conflicts - conflicts_before
    return result


@dataclass(frozen=True, slots=True)
class Correction:
    """One finding's week after a window was evaluated again (a late contribution): the week's CloudTrail totals
    summed again from every evaluated window of the week (None: no window of it sights the finding any more), and
    the window's new sighting of it (None: the window no longer shows it)."""

    finding_id: str
    week: str
    totals: Totals | None
    seen: Finding | None = None
    #: How many of the week's other evaluated windows sight the finding: its stored week must count these and at
    #: most the window itself, else earlier windows have no stored sightings (stored before they were kept) and
    #: the week is left as it is.
    other_windows: int = 0


def corrected_week(stored: Totals | None, cloudtrail: Totals | None) -> Totals | None:
    """A week's totals with their CloudTrail part replaced by ``cloudtrail``; the parts of other sources (a throttling
    story CloudWatch saw too) are kept as they are."""
    others = {s: t for s, t in ((stored.by_source or {}) if stored else {}).items() if s != SOURCE_CLOUDTRAIL}
    if not others:
        return cloudtrail
    parts = dict(others)
    if cloudtrail is not None:
        parts.update(cloudtrail.by_source or {SOURCE_CLOUDTRAIL: cloudtrail})
    peaks = [t.peak_severity for t in others.values()] + [cloudtrail.peak_severity if cloudtrail else None]
    return Totals.of_sources(parts).model_copy(update={"peak_severity": worst(peaks)})


def correct(
    stored: FindingState | None,
    correction: Correction,
    *,
    now: datetime,
    rules: Sequence[SuppressRule] = (),
    resolve_after_seconds: int = 86_400,
) -> StateChange | None:
    """The change a corrected week makes to one finding (None: none).

    The week's totals are **replaced** (an absolute sum over the week's windows, so applying the same correction
    again changes nothing). A sighting that makes the finding new (never stored, re-opened by later evidence, no
    longer muted) or worse than published is decided and announced as any sighting (:func:`transition`); otherwise
    only the totals and the first/last seen times change: the stored finding keeps its latest evidence and is not
    announced again.
    """
    seen = correction.seen
    if stored is None:
        if seen is None or correction.totals is None:
            return None
        return transition(
            None,
            seen,
            now=now,
            rules=rules,
            resolve_after_seconds=resolve_after_seconds,
            horizon=None,
            counted=[correction.totals],
        )
    weekly = dict(stored.weekly_totals)
    before = weekly.get(correction.week)
    part = before if before is None or before.by_source is None else before.by_source.get(SOURCE_CLOUDTRAIL)
    if not 0 <= (part.windows if part is not None else 0) - correction.other_windows <= 1:
        log.warning("late_correction_skipped", finding_id=stored.id, week=correction.week, reason="sightings missing")
        return None
    week = corrected_week(before, correction.totals)
    if week is None:
        weekly.pop(correction.week, None)
    else:
        weekly[correction.week] = week
    if seen is not None:
        change = transition(
            stored.model_copy(update={"weekly_totals": weekly}),
            seen,
            now=now,
            rules=rules,
            resolve_after_seconds=resolve_after_seconds,
            horizon=None,
            counted=[],
        )
        if change is not None and (change.event is not None or change.muted_event is not None):
            return change
    finding = stored.finding
    first, last = finding.first_seen, finding.last_seen
    if seen is not None:
        first, last = min(first, seen.first_seen), max(last, seen.last_seen)
    latest = weekly[max(weekly)] if weekly else None
    stated = finding.with_totals(latest).model_copy(update={"first_seen": first, "last_seen": last})
    state = stored.model_copy(update={"finding": stated, "weekly_totals": weekly})
    if state == stored:
        return None
    return StateChange(stored, state.model_copy(update={"updated_at": now}))


def apply_corrections(
    store: FindingsStore,
    corrections: Iterable[Correction],
    *,
    now: datetime,
    policy: LifecyclePolicy = LifecyclePolicy(),
) -> RecordResult:
    """Store the corrected weeks of windows evaluated again (:func:`correct` with the ``policy``'s rules, each
    conditional on the version read as every lifecycle write); publishes nothing and resolves nothing."""
    rules, resolve_after_seconds = policy.rules, policy.resolve_after_seconds
    now = utc(now)
    corrections = sorted(corrections, key=lambda c: (c.finding_id, c.week))
    result = RecordResult(findings_seen=len({c.finding_id for c in corrections if c.seen is not None}))
    stored = store.get_many({c.finding_id for c in corrections})
    conflicts_before = store.conflicts
    for c in corrections:

        def decide(state: FindingState | None, c: Correction = c) -> StateChange | None:
            return correct(state, c, now=now, rules=rules, resolve_after_seconds=resolve_after_seconds)

        change = decide(stored.get(c.finding_id))
        if change is None:
            continue
        written = store.apply(change, decide)
        if written is None:
            continue
        stored[c.finding_id] = written.state
        if written.event is None and written.muted_event is None:
            result.states_written += 1  # the totals only: the status did not move
        else:
            result.count(written)
    result.conflicts = store.conflicts - conflicts_before
    return result


def record_findings(
    findings_store: FindingsStore,
    sns: SNSClient,
    topic_arn: str,
    findings: Iterable[Finding],
    *,
    now: datetime,
    scope: ResolveScope,
    rules: Sequence[SuppressRule] = (),
    resolve_after_seconds: int = 86_400,
    publish_resolved: bool = False,
    publish_limit: int = DEFAULT_PUBLISH_LIMIT,
    open_findings: OpenFindings | None = None,
    publish_when_idle: bool = True,
) -> RecordResult:
    """Store a run's findings through the lifecycle (:func:`apply_lifecycle`), then drain the outbox to SNS.

    The drain publishes up to ``publish_limit`` pending entries, oldest first: this run's events and any earlier
    ones whose publish failed (they stay pending, never lost). ``publish_limit`` 0 publishes nothing; with
    ``publish_when_idle`` False the outbox is only drained when this run queued an event (the stream watcher: a
    batch that changed nothing costs no outbox reads; the scheduled sources retry earlier failures).
    """
    params = LifecycleParams(
        topic_arn=topic_arn,
        publish_limit=publish_limit,
        rules=tuple(rules),
        resolve_after_seconds=resolve_after_seconds,
        publish_resolved=publish_resolved,
    )
    return params.record(
        findings_store,
        sns,
        findings,
        now=now,
        scope=scope,
        open_findings=open_findings,
        publish_when_idle=publish_when_idle,
    )

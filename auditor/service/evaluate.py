"""The window evaluator (scheduled): evaluate the windows that closed, keep the findings' lifecycle, publish.

:func:`run_evaluation` reads the cursor, loads the windows closed since (after the evaluation delay), runs the
traffic detectors on each table window alone, records the findings through :mod:`auditor.service.record`, advances
the cursor conditionally and drains the outbox. A crash before the cursor moves makes the next run evaluate the same
windows again, harmlessly. Windows that got a contribution after they were evaluated are evaluated again, their part
of the findings' totals replaced (:mod:`auditor.service.late`). The steps are in docs/service.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from auditor.config import AnalysisConfig, Settings
from auditor.cost.plan import captured_seconds
from auditor.engine import TableSchemas, evaluate
from auditor.kernel.aggregates.window import TableWindow
from auditor.lifecycle import TableKey, parse_suppress_rules
from auditor.models.finding import Finding, utc
from auditor.service.dedupe import Deduplication
from auditor.service.late import Reevaluation, corrections, record_sightings
from auditor.service.record import (
    SOURCE_CLOUDTRAIL,
    LifecyclePolicy,
    RecordResult,
    ResolveScope,
    apply_corrections,
    apply_lifecycle,
)
from auditor.sinks.sns import publish_pending
from auditor.state.findings_store import FindingsStore
from auditor.state.interfaces import CapturePlans, WindowLedger, WindowLoader

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

__all__ = ["EvaluationParams", "EvaluationResult", "closed_window_starts", "run_evaluation"]

log = structlog.get_logger(__name__)

#: Windows evaluated per invocation (32 x 15 minutes = 8 hours of traffic).
DEFAULT_MAX_WINDOWS = 32
#: How far back the first run starts.
DEFAULT_LOOKBACK_SECONDS = 86_400
#: Outbox entries published per invocation.
DEFAULT_PUBLISH_LIMIT = 200


#: A late window is evaluated again only while all its contributions are surely kept (their TTL runs from their write,
#: at most this long after the window's start); older ones are counted (``late_expired``) and dropped.
LATE_MARGIN_SECONDS = 86_400

#: How far before the first evaluated window the capture plans are read (a slice without a plan of its own keeps
#: what the latest earlier plan left on the trail).
PLAN_LOOKBACK_SECONDS = 3600


class DescribeTables(Protocol):
    """The tables' descriptions by (account, region, table), where they can be read
    (:func:`auditor.sources.inventory.describe_tables`); the rest are left out."""

    def __call__(self, tables: set[tuple[str | None, str | None, str]], /) -> TableSchemas: ...


@dataclass(frozen=True, slots=True)
class EvaluationParams(LifecyclePolicy):
    """The evaluator's settings: its findings' lifecycle policy and the windows it evaluates (see
    :meth:`from_settings`)."""

    analysis: AnalysisConfig
    topic_arn: str
    evaluation_delay_seconds: int = 1200
    max_windows_per_run: int = DEFAULT_MAX_WINDOWS
    initial_lookback_seconds: int = DEFAULT_LOOKBACK_SECONDS
    publish_limit: int = DEFAULT_PUBLISH_LIMIT

    def __post_init__(self) -> None:
        if self.max_windows_per_run < 1:
            raise ValueError("max_windows_per_run must be >= 1")
        if self.initial_lookback_seconds < 0 or self.evaluation_delay_seconds < 0:
            raise ValueError("delays must be >= 0")

    @classmethod
    def from_settings(cls, settings: Settings) -> EvaluationParams:
        """Parameters from the process settings (raises ConfigurationError on a missing or invalid one)."""
        return cls(
            analysis=settings.analysis_config(),
            topic_arn=settings.require("findings_topic_arn"),
            evaluation_delay_seconds=settings.evaluation_delay_seconds,
            resolve_after_seconds=settings.resolve_after_seconds,
            publish_resolved=settings.publish_resolved,
            rules=parse_suppress_rules(settings.suppress_rules_json),
        )


@dataclass(slots=True)
class EvaluationResult(RecordResult):
    """What one run did (logged by the handler, returned as its result): the recording counters plus the windows."""

    window_starts: list[int] = field(default_factory=list)
    table_windows: int = 0
    tables: int = 0
    cursor: int | None = None
    cursor_advanced: bool = False
    #: More closed windows wait for the next run.
    backlog: bool = False
    detector_errors: list[str] = field(default_factory=list)
    #: The duplicate check across trail objects: objects read again together, and events two objects both counted.
    objects_reread: int = 0
    events_shared: int = 0
    #: Windows evaluated again after a late contribution, the finding states their sightings corrected, and late
    #: windows too old to evaluate again exactly (their earlier contributions may have expired).
    late_windows: int = 0
    late_corrected: int = 0
    late_expired: int = 0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready summary (window starts as the first and last only)."""
        data = RecordResult.as_dict(self)
        starts = self.window_starts
        data.pop("window_starts")
        data["windows"] = len(starts)
        data["first_window"] = starts[0] if starts else None
        data["last_window"] = starts[-1] if starts else None
        return data


def closed_window_starts(
    cursor: int | None,
    now: datetime,
    *,
    window_seconds: int,
    delay_seconds: int,
    max_windows: int,
    lookback_seconds: int = DEFAULT_LOOKBACK_SECONDS,
) -> tuple[list[int], bool]:
    """The closed windows after ``cursor`` (at most ``max_windows``) and whether more are closed already."""
    now_s = int(utc(now).timestamp())
    if cursor is None:
        start = (now_s - lookback_seconds) // window_seconds * window_seconds
    else:
        start = cursor // window_seconds * window_seconds + window_seconds
    starts: list[int] = []
    while start + window_seconds + delay_seconds <= now_s:
        if len(starts) == max_windows:
            return starts, True
        starts.append(start)
        start += window_seconds
    return starts, False


def mark_captured(windows: Sequence[TableWindow], plans: Sequence[dict[str, Any]]) -> None:
    """Set each window's ``captured_seconds`` from the recorded capture plans (left None without a plan)."""
    if not plans:
        return
    for tw in windows:
        tw.captured_seconds = captured_seconds(plans, tw.table, tw.window_start, tw.window_start + tw.window_seconds)


def _evaluate_windows(
    windows: Sequence[TableWindow],
    params: EvaluationParams,
    result: EvaluationResult,
    describe: DescribeTables | None = None,
) -> tuple[list[tuple[TableWindow, list[Finding]]], dict[TableKey, datetime]]:
    """Findings of every table window alone, and each table's horizon (end of its latest window). ``describe``
    gives the tables' descriptions (their key schemas), read once per run for the tables of these windows."""
    evaluated: list[tuple[TableWindow, list[Finding]]] = []
    horizons: dict[TableKey, datetime] = {}
    schemas = describe({(tw.account, tw.region, tw.table) for tw in windows}) if describe and windows else None
    for tw in windows:
        found, errors = evaluate([tw], params.analysis, schemas)
        evaluated.append((tw, found))
        result.detector_errors.extend(errors)
        end = datetime.fromtimestamp(tw.window_start + params.analysis.window_seconds, tz=UTC)
        key = (tw.account, tw.region, tw.table)
        horizons[key] = max(horizons.get(key, end), end)
    return evaluated, horizons


def run_evaluation(
    window_store: WindowLoader,
    findings_store: FindingsStore,
    sns: SNSClient,
    params: EvaluationParams,
    now: datetime,
    describe: DescribeTables | None = None,
    capture: CapturePlans | None = None,
    ledger: WindowLedger | None = None,
    dedupe: Deduplication | None = None,
    late: Reevaluation | None = None,
) -> EvaluationResult:
    """Evaluate the windows closed since the last run, store the findings' changes and publish them.

    ``capture``: the capture controller's plans (None: the trail logs everything). ``ledger``: the daily cost
    ledger, which gets each evaluated window's data events per table. ``dedupe``: the duplicate check across trail
    objects (:mod:`auditor.service.dedupe`; None: contributions are merged as they are). ``late``: the seal, the late
    flags and the windows' sightings: the windows are sealed before they are loaded, their sightings kept, and the
    windows flagged late are evaluated again after this run's windows (None: late contributions are not looked for).
    """
    now = utc(now)
    result = EvaluationResult()
    cursor = findings_store.get_cursor()
    result.cursor = cursor
    starts, result.backlog = closed_window_starts(
        cursor,
        now,
        window_seconds=params.analysis.window_seconds,
        delay_seconds=params.evaluation_delay_seconds,
        max_windows=params.max_windows_per_run,
        lookback_seconds=params.initial_lookback_seconds,
    )
    result.window_starts = starts
    run = _Run(window_store, findings_store, params, now, result, describe, capture, ledger, dedupe, late)
    if starts:
        if late is not None:  # before loading: a contribution stored from now on to these windows is flagged late
            late.flags.seal(starts[-1], now)
        run.evaluate_and_store(starts)
        if findings_store.advance_cursor(starts[-1], expected=cursor, now=now):
            result.cursor, result.cursor_advanced = starts[-1], True
        else:
            log.warning("cursor_moved_by_another_evaluator", expected=cursor, wanted=starts[-1])
    if late is not None:
        run.reevaluate_late(late)
    published = publish_pending(findings_store, sns, params.topic_arn, params.publish_limit, now=now)
    result.take_publish(published)
    log.info("evaluation_finished", **result.as_dict())
    return result


@dataclass(slots=True)
class _Run:
    """One evaluator run's collaborators, shared by the cursor's windows and the late ones."""

    window_store: WindowLoader
    store: FindingsStore
    params: EvaluationParams
    now: datetime
    result: EvaluationResult
    describe: DescribeTables | None
    capture: CapturePlans | None
    ledger: WindowLedger | None
    dedupe: Deduplication | None
    late: Reevaluation | None

    def _load(
        self, starts: list[int], wanted: set[tuple[str | None, str | None, str, int]] | None = None
    ) -> tuple[list[tuple[TableWindow, list[Finding]]], dict[TableKey, datetime]]:
        """Load, book and evaluate the windows of ``starts`` (only the ``wanted`` table windows, when given)."""
        if self.dedupe is None:
            windows = self.window_store.load_windows(starts)
        else:
            windows, checked = self.dedupe.load(self.window_store, starts)
            self.result.objects_reread += checked.objects_reread
            self.result.events_shared += checked.events_shared
        if wanted is not None:
            windows = [tw for tw in windows if (tw.account, tw.region, tw.table, tw.window_start) in wanted]
        if self.ledger is not None:  # the data events per table and window (a window evaluated again overwrites)
            for tw in windows:
                day = datetime.fromtimestamp(tw.window_start, UTC).date()
                self.ledger.put_window(day, tw.account, tw.region, tw.table, tw.window_start, tw.calls)
        if self.capture is not None and windows:
            mark_captured(
                windows,
                self.capture.plans(starts[0] - PLAN_LOOKBACK_SECONDS, starts[-1] + self.params.analysis.window_seconds),
            )
        return _evaluate_windows(windows, self.params, self.result, self.describe)

    def evaluate_and_store(self, starts: list[int]) -> None:
        """The cursor's windows: evaluate, keep their sightings, record the findings' lifecycle."""
        evaluated, horizons = self._load(starts)
        self.result.table_windows = len(evaluated)
        self.result.tables = len(horizons)
        if self.late is not None:
            record_sightings(self.late.sightings, evaluated, self.now)
        # Absence in the evaluated windows is evidence for CloudTrail findings only (see auditor.service.record).
        recorded = apply_lifecycle(
            self.store,
            [f for _, found in evaluated for f in found],
            now=self.now,
            scope=ResolveScope.tables(horizons, [SOURCE_CLOUDTRAIL]),
            policy=self.params,
        )
        self.result.take_counts(recorded)

    def reevaluate_late(self, late: Reevaluation) -> None:
        """The windows flagged late: evaluate each again, replace its part of its findings' weeks, clear the flag
        (only then: a crash in between makes the next run do the same again, which changes nothing more)."""
        flags = late.flags.late_windows()
        if not flags:
            return
        oldest = self.now.timestamp() - (late.flags.retention_seconds - LATE_MARGIN_SECONDS)
        fresh = [f for f in flags if f.window_start >= oldest]
        for f in flags:
            if f.window_start < oldest:
                log.error("late_window_expired", table=f.table, window_start=f.window_start)
                self.result.late_expired += 1
                late.flags.clear_late(f)
        starts = sorted({f.window_start for f in fresh})[: self.params.max_windows_per_run]  # the rest: next runs
        fresh = [f for f in fresh if f.window_start in starts]
        if not fresh:
            return
        wanted = {(f.account, f.region, f.table, f.window_start) for f in fresh}
        evaluated, _ = self._load(starts, wanted)
        recorded = apply_corrections(
            self.store,
            corrections(late.sightings, evaluated, self.now),
            now=self.now,
            policy=self.params,
        )
        self.result.add_counts(recorded)
        self.result.late_windows += len(fresh)
        self.result.late_corrected += recorded.states_written
        for f in fresh:
            if not late.flags.clear_late(f):  # flagged again meanwhile: the next run evaluates it again
                log.info("late_window_flagged_again", table=f.table, window_start=f.window_start)
        log.info("late_windows_evaluated", windows=len(fresh), corrected=recorded.states_written)

"""Stream item-size use case: a DynamoDB Streams batch -> observations -> size histories -> findings.

:class:`StreamItemSizeBatch` sizes each record's item, runs ``large_item`` on it and, for items above the history
floor only, updates the item's size history and runs ``item_growth``; only a state-table failure fails a record.
:meth:`StreamItemSizeBatch.finish` returns the batch's findings, one story per item, and, with a
:class:`StreamFindingsRecorder`, records them (resolving nothing) with the stored story's other facts (CloudTrail's
rejected writes). The steps are in docs/service.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import Field

from auditor.config import Settings
from auditor.detectors.base import HistoryInput, ObservationInput
from auditor.detectors.findings import item_story
from auditor.detectors.settings import DetectorSettings
from auditor.detectors.stream import item_growth, large_item
from auditor.detectors.stream.large_item import Config as LargeItemConfig
from auditor.exceptions import AuditorError
from auditor.models.base import FrozenModel
from auditor.models.finding import Finding
from auditor.service.record import LifecycleParams, OpenFindings, RecordResult, ResolveScope
from auditor.sources.streams import StreamStats, parse_stream_record
from auditor.state.findings_store import FindingsStore
from auditor.state.item_history import DEFAULT_MAX_SAMPLES, DEFAULT_RETENTION_DAYS, ItemHistoryStore
from auditor.state.table_item_sizes import PendingSizes, TableItemSizes

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

__all__ = [
    "ItemSizeConfig",
    "StreamBatchResult",
    "StreamFindingsRecorder",
    "StreamItemSizeBatch",
    "item_size_config",
    "process_stream_records",
    "record_stream_findings",
]

log = structlog.get_logger(__name__)


class ItemSizeConfig(FrozenModel):
    """Tuning of the stream item-size watcher."""

    #: Items at least this large (bytes) get a size history; smaller ones cost no state-table request.
    history_floor_bytes: int = Field(default=65_536, ge=0, le=409_600)
    #: Samples kept per item (older ones are thinned, see :mod:`auditor.state.item_history`).
    max_samples: int = Field(default=DEFAULT_MAX_SAMPLES, ge=8, le=400)
    #: A history not written for this long expires (TTL).
    history_retention_days: int = Field(default=DEFAULT_RETENTION_DAYS, ge=1, le=400)
    #: The detector tree (``large_item`` and ``item_growth`` settings, per table where given).
    detectors: DetectorSettings = Field(default_factory=DetectorSettings)

    def detector_config(self, detector_id: str, table: str) -> Any:
        """One detector's settings on ``table``."""
        return self.detectors.detector_config(detector_id, table)


def item_size_config(settings: Settings) -> ItemSizeConfig:
    """The watcher's config from the process settings: the history floor, and the detector tree of
    ``ANALYSIS_CONFIG_JSON`` with the ``large_item`` threshold of ``LARGE_ITEM_THRESHOLD_PCT`` under it (the tree's
    ``detectors.large_item`` and ``tables.<table>.large_item`` win).

    A threshold above the default ``high_pct`` (85%) or ``critical_pct`` (95%) moves that level up with it, so the
    first finding is then high (or critical).
    """
    threshold = settings.large_item_threshold_pct
    defaults = LargeItemConfig()
    tree = settings.analysis_config()
    large_item_settings = {
        "threshold_pct": threshold,
        "high_pct": max(defaults.high_pct, threshold),
        "critical_pct": max(defaults.critical_pct, threshold),
        **tree.detectors.get("large_item", {}),
    }
    return ItemSizeConfig(
        history_floor_bytes=settings.item_size_history_floor_bytes,
        detectors=DetectorSettings(detectors={**tree.detectors, "large_item": large_item_settings}, tables=tree.tables),
    )


@dataclass(slots=True)
class StreamBatchResult:
    """What one batch produced."""

    findings: list[Finding]
    stats: StreamStats
    #: Records added to a size history, and records whose sample was already there (redeliveries).
    history_updates: int = 0
    history_duplicates: int = 0
    #: Observed items below the history floor (no state-table request).
    below_floor: int = 0
    #: What recording the findings did (None: not recorded, no recorder or no findings).
    recorded: RecordResult | None = None

    def as_dict(self) -> dict[str, int]:
        rec = self.recorded
        return {
            **self.stats.as_dict(),
            "findings": len(self.findings),
            "history_updates": self.history_updates,
            "history_duplicates": self.history_duplicates,
            "below_floor": self.below_floor,
            "findings_stored": rec.states_written if rec else 0,
            "events_queued": rec.events_queued if rec else 0,
            "published": rec.published if rec else 0,
            "publish_failed": rec.publish_failed if rec else 0,
        }


def record_stream_findings(
    store: FindingsStore,
    sns: SNSClient,
    lifecycle: LifecycleParams,
    findings: Sequence[Finding],
    *,
    now: datetime,
) -> tuple[list[Finding], RecordResult]:
    """Record a batch's findings, each item's facts as one story (:func:`item_story.merge_items`).

    An item story shares its id with the evaluator's rejected writes on the same item, so recording adds the stored
    story's facts to the batch's (:func:`auditor.service.record.carry_over`): one stored finding per item. Returns
    the batch's findings as recorded and what recording did; the run resolves nothing.
    """
    stories = item_story.merge_items(findings)
    recorded = lifecycle.record(
        store,
        sns,
        stories,
        now=now,
        scope=ResolveScope.nothing(),
        open_findings=OpenFindings(store),
        publish_when_idle=False,
    )
    stored = store.get_many([f.id for f in stories])
    return [stored[f.id].finding if f.id in stored else f for f in stories], recorded


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class StreamFindingsRecorder:
    """Stores and publishes a batch's findings (:func:`record_stream_findings`) at the wall-clock time."""

    store: FindingsStore
    sns: SNSClient
    lifecycle: LifecycleParams
    clock: Callable[[], datetime] = _utcnow

    def record(self, findings: Sequence[Finding]) -> tuple[list[Finding], RecordResult]:
        return record_stream_findings(self.store, self.sns, self.lifecycle, findings, now=self.clock())


@dataclass(slots=True)
class StreamItemSizeBatch:
    """Processes one stream batch record by record; ``store`` None means no history (sizes and large_item only).

    ``recorder`` None means the findings are only returned and logged (the CLI and tests of the watcher alone).
    ``sizes``, when given, gets the count and bytes of the items sized, per table and ISO week (the evaluator's
    ``streams`` item size, :mod:`auditor.state.table_item_sizes`), from ``pending`` once enough waits there.
    """

    store: ItemHistoryStore | None
    config: ItemSizeConfig = field(default_factory=ItemSizeConfig)
    stats: StreamStats = field(default_factory=StreamStats)
    recorder: StreamFindingsRecorder | None = None
    sizes: TableItemSizes | None = None
    pending: PendingSizes = field(default_factory=PendingSizes)
    _findings: dict[str, Finding] = field(default_factory=dict, init=False)
    _position: int = field(default=0, init=False)
    _updates: int = field(default=0, init=False)
    _duplicates: int = field(default=0, init=False)
    _below_floor: int = field(default=0, init=False)

    @property
    def position(self) -> int:
        """1-based index of the record processed last."""
        return self._position

    def process_record(self, raw: object) -> None:
        """Process one record. Raises only when its size history cannot be written (retry the record)."""
        self._position += 1
        errors = self.stats.errors
        obs = parse_stream_record(raw, self.stats, position=self._position)
        if obs is None:
            if self.stats.errors > errors:
                log.warning("stream_record_skipped", position=self._position, problem=self.stats.last_problem)
            return
        self.pending.add((obs.ref.account, obs.ref.region, obs.ref.table), obs.time, obs.size_bytes)
        found: list[Finding] = []
        if obs.size_bytes < self.config.history_floor_bytes:
            self._below_floor += 1
        elif self.store is not None:
            update = self.store.record(obs)
            if update.applied:
                self._updates += 1
            else:
                self._duplicates += 1
            history = HistoryInput(obs, update.history.samples, update.history.driver)
            found += item_growth.detect(history, self.config.detector_config("item_growth", obs.table))
        found += large_item.detect(ObservationInput(obs), self.config.detector_config("large_item", obs.table))
        for finding in found:
            self._keep(finding)

    def _keep(self, finding: Finding) -> None:
        seen = self._findings.get(finding.id)
        if seen is None:
            self._findings[finding.id] = finding
            return
        latest = finding if finding.last_seen >= seen.last_seen else seen
        first = min(finding.first_seen, seen.first_seen)
        self._findings[finding.id] = latest.model_copy(update={"first_seen": first})

    def finish(self) -> StreamBatchResult:
        """The batch's findings (sorted, most severe first) and counters; both are logged. Records them too.

        With a ``recorder``, the findings returned are the ones recorded (with the stored story's facts, CloudTrail's
        rejected writes among them); a recording failure raises (retry the batch).
        """
        for ref, (view_type, at) in self.stats.insufficient_views.items():
            log.warning(
                "stream_view_type_insufficient",
                table=ref.table,
                account=ref.account,
                region=ref.region,
                stream_view_type=view_type,
            )
            self._keep(large_item.insufficient_view_type(ref.account, ref.region, ref.table, view_type, at))
        findings = sorted(item_story.merge_items(list(self._findings.values())), key=Finding.sort_key)
        self._store_sizes()
        recorded: RecordResult | None = None
        if self.recorder is not None and findings:
            linked, recorded = self.recorder.record(findings)
            findings = sorted(linked, key=Finding.sort_key)
        result = StreamBatchResult(
            findings=findings,
            stats=self.stats,
            history_updates=self._updates,
            history_duplicates=self._duplicates,
            below_floor=self._below_floor,
            recorded=recorded,
        )
        for finding in findings:
            log.info(
                "item_size_finding",
                finding_id=finding.id,
                kind=str(finding.kind),
                severity=str(finding.severity),
                table=finding.table,
                key=finding.evidence.get("key"),
                size_bytes=finding.evidence.get("size_bytes"),
                days_to_limit=finding.evidence.get("days_to_limit"),
                facts=[f.get("kind") for f in finding.evidence.get(item_story.FACTS) or ()],
            )
        log.info("stream_batch_processed", **result.as_dict())
        return result

    def _store_sizes(self) -> None:
        """Store the item sizes waiting, once enough wait (a failure is logged and they wait for the next time: the
        sizes are a hint, not the watcher's job)."""
        if self.sizes is None or not self.pending.due:
            return
        sums = self.pending.take()
        try:
            self.sizes.add(sums)
        except (ClientError, BotoCoreError) as exc:
            self.pending.put_back(sums)
            log.warning("table_item_sizes_not_stored", tables=len(sums), error=type(exc).__name__)


def process_stream_records(
    records: Iterable[object], store: ItemHistoryStore | None, config: ItemSizeConfig | None = None
) -> tuple[StreamBatchResult, list[object]]:
    """Process every record of a batch outside Lambda (CLI, demo); returns the result and the records that failed."""
    batch = StreamItemSizeBatch(store, config or ItemSizeConfig())
    failed: list[object] = []
    for raw in records:
        try:
            batch.process_record(raw)
        except (ClientError, BotoCoreError, AuditorError):
            log.exception("stream_record_failed", position=batch.position)
            failed.append(raw)
    return batch.finish(), failed

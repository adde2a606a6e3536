"""Ingest use cases: CloudTrail log objects (S3 notifications through SQS) and EventBridge events (through SQS).

:func:`process_trail_message` streams one CloudTrail object into window contributions, then marks it processed (a
redelivery writes the same items again). :func:`process_events` commits each chunk of events with a conditional
marker per event id in the same transaction, so a duplicated delivery counts once. A contribution to a window the
evaluator already sealed is flagged late, for the evaluator to evaluate it again (``late`` in the results). The
failure policy and the design choices are in docs/service.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import orjson
import structlog
from botocore.exceptions import BotoCoreError, ClientError

from auditor.config import AnalysisConfig
from auditor.engine import ingest_source, new_aggregate_set
from auditor.exceptions import AuditorError, MalformedRecordError
from auditor.kernel.aggregates.fingerprints import EventFingerprints
from auditor.kernel.aggregates.window import AggregateSet
from auditor.kernel.calls import ApiCall
from auditor.kernel.inputs import source_order
from auditor.kernel.normalize import normalize_record
from auditor.kernel.reader import Deduper
from auditor.kernel.stats import IngestStats
from auditor.sources.s3_objects import (
    NotificationError,
    ObjectReadInterruptedError,
    ObjectUnreadableError,
    S3ObjectRef,
    is_trail_log_key,
    parse_s3_notification,
    trail_object,
)
from auditor.state.fingerprint_store import FingerprintStore
from auditor.state.unreadable_store import UnreadableObjectStore
from auditor.state.window_store import LateWindow, StoreError, WindowStore, events_fit

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "CLOUDTRAIL_DETAIL_TYPE",
    "EventsCommitError",
    "EventsResult",
    "NotificationError",
    "ObjectContentError",
    "ObjectResult",
    "ObjectUnreadableError",
    "S3ObjectRef",
    "is_trail_log_key",
    "parse_s3_notification",
    "process_events",
    "process_trail_message",
    "process_trail_object",
]

log = structlog.get_logger(__name__)

CLOUDTRAIL_DETAIL_TYPE = "AWS API Call via CloudTrail"
DYNAMODB_EVENT_BRIDGE_SOURCE = "aws.dynamodb"


class EventsCommitError(AuditorError):
    """The events of an SQS message could not be committed to the state table (the message is retried)."""


class ObjectContentError(ObjectUnreadableError):
    """A trail object was fetched but its content cannot be read (corrupt or truncated gzip, broken JSON framing):
    recorded as an unreadable object each time (docs/service.md), and the message is retried like any other."""


# ---------------------------------------------------------------------------------------------------------------------
# Trail objects
# ---------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ObjectResult:
    """What happened to one notified object."""

    bucket: str
    key: str
    #: ``ingested``; ``duplicate`` (already processed, or processed concurrently); ``skipped`` (not a log file).
    status: Literal["ingested", "duplicate", "skipped"]
    reason: str | None = None
    stats: dict[str, int] = field(default_factory=dict)
    #: Window contributions stored (one per table and window of the file).
    windows: int = 0
    items_written: int = 0
    #: Window contributions that arrived after the evaluator had sealed their window (flagged late).
    late: int = 0


def _log_result(result: ObjectResult) -> None:
    log.info(
        f"trail_object_{result.status}",
        bucket=result.bucket,
        key=result.key,
        reason=result.reason,
        windows=result.windows,
        items_written=result.items_written,
        late=result.late,
        **result.stats,
    )


def process_trail_object(
    s3: S3Client,
    store: WindowStore,
    bucket: str,
    key: str,
    config: AnalysisConfig,
    now: datetime,
    *,
    etag: str | None = None,
    fingerprints: FingerprintStore | None = None,
) -> ObjectResult:
    """Ingest one CloudTrail object into the window store, exactly once (see the module docstring).

    With ``fingerprints``, the fingerprints of the events counted are written there first, for the evaluator's
    duplicate check across objects (:mod:`auditor.service.dedupe`).

    Raises :class:`ObjectUnreadableError` when the object is missing or unreadable (nothing is stored), the
    subclass :class:`ObjectContentError` when its content cannot be read.
    """
    if store.is_processed(bucket, key):
        result = ObjectResult(bucket, key, "duplicate", reason="already processed")
        _log_result(result)
        return result
    source_id = f"s3://{bucket}/{key}"
    stats = IngestStats()
    prints = EventFingerprints(config.window_seconds) if fingerprints is not None else None
    with trail_object(s3, bucket, key) as obj:
        aggregates = ingest_source(obj.source, config, Deduper(), stats, fingerprints=prints)
    object_etag = obj.etag
    if aggregates is None:
        reason = stats.problems[0] if stats.problems else f"{source_id}: unreadable"
        raise ObjectContentError(reason)
    if fingerprints is not None and prints is not None:
        fingerprints.put(source_id, prints)
    items = store.put_contributions(source_id, aggregates, now)
    late = store.flag_late(source_id, aggregates, now)  # after the write: see docs/service.md
    counters = stats.as_dict()
    marked = store.mark_processed(bucket, key, etag=object_etag or etag, stats=counters, now=now)
    result = ObjectResult(
        bucket,
        key,
        "ingested" if marked else "duplicate",
        reason=None if marked else "processed concurrently",
        stats=counters,
        windows=len(aggregates.windows),
        items_written=items,
        late=len(late),
    )
    _log_result(result)
    for window in late:
        log.warning("late_contribution", source=source_id, table=window.table, window_start=window.window_start)
    for problem in stats.problems[:5]:
        log.warning("trail_record_skipped", bucket=bucket, key=key, problem=problem)
    return result


def reread_objects(
    s3: S3Client, config: AnalysisConfig
) -> Callable[[Sequence[str]], list[tuple[str, AggregateSet]] | None]:
    """For the evaluator's duplicate check (:mod:`auditor.service.dedupe`): read CloudTrail objects again, given
    their source ids (``s3://bucket/key``), in :func:`auditor.kernel.inputs.source_order` with one deduplicator, as
    ``analyze-trail`` reads them: each object's aggregate without the events an object before it counted. None when
    one of them cannot be read for good (missing, or not a CloudTrail file: logged); a stream that breaks off raises
    :class:`ObjectReadInterruptedError`, so the evaluation fails before its cursor moves and is retried."""

    def reread(source_ids: Sequence[str]) -> list[tuple[str, AggregateSet]] | None:
        parts: list[tuple[str, AggregateSet]] = []
        deduper = Deduper()
        stats = IngestStats()
        for source_id in sorted(source_ids, key=source_order):
            bucket, _, key = source_id.removeprefix("s3://").partition("/")
            try:
                with trail_object(s3, bucket, key) as obj:
                    part = ingest_source(obj.source, config, deduper, stats)
            except ObjectReadInterruptedError:
                raise
            except ObjectUnreadableError as exc:
                log.warning("reread_failed", source=source_id, error=str(exc))
                return None
            if part is None:
                log.warning("reread_failed", source=source_id, error=stats.problems[-1:] or "unreadable")
                return None
            parts.append((source_id, part))
        return parts

    return reread


def process_trail_message(
    s3: S3Client,
    store: WindowStore,
    body: str | bytes,
    config: AnalysisConfig,
    now: datetime,
    fingerprints: FingerprintStore | None = None,
    unreadable: UnreadableObjectStore | None = None,
) -> list[ObjectResult]:
    """Handle one SQS message of the trail-ingest queue: every log object it notifies, in order.

    Raises :class:`NotificationError` for a malformed body and :class:`ObjectUnreadableError` for an object
    that cannot be read; objects of the message processed before the failure stay processed (a redelivery
    skips them as duplicates). An object whose content cannot be read (:class:`ObjectContentError`) is first
    recorded in ``unreadable``, on every attempt (a failure to record it is logged, never hides the read error).
    """
    try:
        refs = parse_s3_notification(body)
    except NotificationError as exc:
        log.error("trail_message_invalid", error=str(exc))
        raise
    if not refs:
        log.info("trail_message_test_event")
        return []
    results: list[ObjectResult] = []
    for ref in refs:
        if not ref.event_name.startswith("ObjectCreated:"):
            reason = f"event {ref.event_name}"
        elif not is_trail_log_key(ref.key):
            reason = "not a CloudTrail log file"
        else:
            try:
                results.append(
                    process_trail_object(
                        s3,
                        store,
                        ref.bucket,
                        ref.key,
                        config,
                        now,
                        etag=_quoted_etag(ref.etag),
                        fingerprints=fingerprints,
                    )
                )
            except ObjectUnreadableError as exc:
                log.error("trail_object_failed", bucket=ref.bucket, key=ref.key, error=str(exc))
                if isinstance(exc, ObjectContentError) and unreadable is not None:
                    _record_unreadable(unreadable, ref, str(exc), now, config.window_seconds)
                raise
            continue
        skipped = ObjectResult(ref.bucket, ref.key, "skipped", reason=reason)
        _log_result(skipped)
        results.append(skipped)
    return results


def _record_unreadable(
    unreadable: UnreadableObjectStore, ref: S3ObjectRef, reason: str, now: datetime, window_seconds: int
) -> None:
    try:
        unreadable.record(ref.bucket, ref.key, reason, at=now, window_seconds=window_seconds)
    except (ClientError, BotoCoreError) as exc:
        log.error(
            "unreadable_object_not_recorded", bucket=ref.bucket, key=ref.key, error=f"{type(exc).__name__}: {exc}"
        )


def _quoted_etag(etag: str | None) -> str | None:
    """S3 notifications carry the ETag without quotes, GetObject with them: store it as GetObject does."""
    if etag is None or etag.startswith('"'):
        return etag
    return f'"{etag}"'


# ---------------------------------------------------------------------------------------------------------------------
# EventBridge events
# ---------------------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class EventsResult:
    """Counters of one events batch.

    ``stats.records_read`` counts the events received, ``stats.records_skipped`` the malformed ones,
    ``stats.duplicates_dropped`` the events already counted (in this batch or before), ``stats.data_events`` the
    events committed now. ``ignored`` counts well-formed events that are not DynamoDB data-plane calls.
    """

    stats: IngestStats = field(default_factory=IngestStats)
    ignored: int = 0
    transactions: int = 0
    items_written: int = 0
    #: Window contributions committed after the evaluator had sealed their window (flagged late).
    late: int = 0
    #: SQS message ids whose events could not be committed (report them as batch item failures).
    failed_message_ids: list[str] = field(default_factory=list)


def _event_call(event: Any, index: int, stats: IngestStats) -> ApiCall | Literal[False] | None:
    """The call of one EventBridge event; None when it is not DynamoDB traffic, False when malformed."""
    where = f"event {index}"
    if isinstance(event, str | bytes):
        try:
            event = orjson.loads(event)
        except orjson.JSONDecodeError:
            stats.note(f"{where}: body is not JSON")
            return False
    if not isinstance(event, dict) or not isinstance(event.get("detail-type"), str) or "detail" not in event:
        stats.note(f"{where}: not an EventBridge event")
        return False
    if event["detail-type"] != CLOUDTRAIL_DETAIL_TYPE or event.get("source") != DYNAMODB_EVENT_BRIDGE_SOURCE:
        return None
    detail = event["detail"]
    if not isinstance(detail, dict):
        stats.note(f"{where}: detail is not an object")
        return False
    try:
        return normalize_record(detail)
    except MalformedRecordError as exc:
        stats.note(f"{where}: {exc}")
        return False
    except (ValueError, TypeError, OverflowError, RecursionError, KeyError, AttributeError) as exc:
        # a value the normaliser cannot handle (a date at the edge of the range, ...): one malformed event
        stats.note(f"{where}: unusable value ({type(exc).__name__})")
        return False


def _chunks(calls: Sequence[tuple[str, ApiCall]], window_seconds: int) -> Iterator[list[tuple[str, ApiCall]]]:
    """Consecutive groups whose events plus distinct windows fit one transaction."""
    chunk: list[tuple[str, ApiCall]] = []
    windows: set[tuple[str | None, str | None, str, int]] = set()
    for mid, call in calls:
        start = int(call.time.timestamp() // window_seconds) * window_seconds
        mine = {(call.account, call.region, table, start) for table in call.tables}
        if chunk and not events_fit(len(chunk) + 1, len(windows | mine)):
            yield chunk
            chunk, windows = [], set()
        chunk.append((mid, call))
        windows |= mine
    if chunk:
        yield chunk


def _events_source_id(event_ids: Sequence[str]) -> str:
    digest = hashlib.sha256("\n".join(sorted(event_ids)).encode()).hexdigest()[:40]
    return f"events:{digest}"


def _aggregate(calls: Sequence[tuple[str, ApiCall]], config: AnalysisConfig) -> AggregateSet:
    aggs = new_aggregate_set(config)
    for _, call in calls:
        aggs.add(call)
    return aggs


def _commit_chunk(
    store: WindowStore, chunk: list[tuple[str, ApiCall]], config: AnalysisConfig, now: datetime, result: EventsResult
) -> None:
    """Commit one chunk, dropping the events recorded before, until what is left is committed."""
    pending = chunk
    while pending:
        aggs = _aggregate(pending, config)
        ids = [call.event_id for _, call in pending]
        result.transactions += 1
        late: list[LateWindow] = []
        existing = store.commit_events(ids, _events_source_id(ids), aggs, now, late)
        if not existing:
            result.stats.data_events += len(pending)
            result.items_written += len(pending) + len(aggs.windows) + len(late)
            result.late += len(late)
            for window in late:
                log.warning("late_contribution", events=len(ids), table=window.table, window_start=window.window_start)
            return
        result.stats.duplicates_dropped += len(existing)
        pending = [(mid, call) for mid, call in pending if call.event_id not in existing]


def process_events(
    store: WindowStore, events: Sequence[tuple[str, Any]], config: AnalysisConfig, now: datetime
) -> EventsResult:
    """Count a batch of EventBridge "AWS API Call via CloudTrail" events into the window store, once each.

    ``events`` are ``(message_id, event)`` pairs, ``event`` being the decoded event or the raw SQS body (JSON
    text). See the module docstring for the exactly-once design. Never raises for bad events: malformed ones are
    counted and dropped, one that cannot be processed at all (a poison message) is reported alone in
    ``failed_message_ids``, and a chunk whose commit fails puts its message ids there too.
    """
    result = EventsResult()
    stats = result.stats
    seen: set[str] = set()
    calls: list[tuple[str, ApiCall]] = []
    # Every call is added to a scratch aggregate first: one whose aggregation fails (whatever its content) is a
    # poison message, reported alone, so it can never take the rest of the batch's commit down with it.
    scratch = new_aggregate_set(config)
    poison: list[str] = []
    for index, (message_id, event) in enumerate(events, start=1):
        stats.records_read += 1
        try:
            call = _event_call(event, index, stats)
            if call is not False and call is not None and call.event_id not in seen:
                int(call.time.timestamp() // config.window_seconds)
                scratch.add(call)
        except Exception as exc:  # the isolation boundary: one event, never the batch
            stats.records_skipped += 1
            stats.note(f"event {index}: cannot be processed ({type(exc).__name__})")
            poison.append(message_id)
            continue
        if call is False:
            stats.records_skipped += 1
        elif call is None:
            result.ignored += 1
        elif call.event_id in seen:
            stats.duplicates_dropped += 1
        else:
            seen.add(call.event_id)
            calls.append((message_id, call))
    poisoned = set(poison)
    calls = [(mid, call) for mid, call in calls if mid not in poisoned]  # a message is retried whole
    result.failed_message_ids.extend(sorted(poisoned))
    for chunk in _chunks(calls, config.window_seconds):
        try:
            _commit_chunk(store, chunk, config, now, result)
        except (ClientError, BotoCoreError, StoreError) as exc:
            failed = sorted({mid for mid, _ in chunk})
            result.failed_message_ids.extend(failed)
            log.error("events_commit_failed", messages=len(failed), error=f"{type(exc).__name__}: {exc}")
    log.info(
        "events_batch_ingested",
        received=stats.records_read,
        committed=stats.data_events,
        duplicates=stats.duplicates_dropped,
        malformed=stats.records_skipped,
        ignored=result.ignored,
        transactions=result.transactions,
        items_written=result.items_written,
        late=result.late,
        failed_messages=len(result.failed_message_ids),
        problems=stats.problems[:5],
    )
    return result

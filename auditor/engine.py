"""The analysis engine: sources -> mergeable aggregates -> pure detectors -> findings.

The CLI and the Lambda handlers call these functions; nothing here talks to AWS.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import structlog

from auditor.config import AnalysisConfig
from auditor.cost.sampling import apply_capture
from auditor.detectors.base import DetectorInput
from auditor.detectors.findings.correlate import correlate
from auditor.detectors.findings.item_story import merge_items
from auditor.detectors.findings.key_story import merge_keys
from auditor.detectors.findings.period import for_period
from auditor.detectors.findings.throttling_story import merge_throttling
from auditor.detectors.registry import all_detectors, guarded
from auditor.detectors.trail.key_spaces import key_spaces
from auditor.detectors.trail.scan import index_partition_key
from auditor.exceptions import SourceReadError
from auditor.kernel.aggregates.fingerprints import EventFingerprints
from auditor.kernel.aggregates.keys import encode_key, index_key
from auditor.kernel.aggregates.templates import pattern_shape, pattern_template
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.calls import ApiCall
from auditor.kernel.inputs import discover
from auditor.kernel.normalize import normalize_record
from auditor.kernel.reader import Deduper, InputSource, Shard, read_calls
from auditor.kernel.stats import IngestStats
from auditor.lifecycle import TableKey
from auditor.models.access_pattern import AccessPattern
from auditor.models.capacity import item_size
from auditor.models.finding import Finding, FindingKind, Totals, window_totals
from auditor.models.inventory import TableProfile
from auditor.models.period_evidence import (
    TOP_KEYS,
    PeriodKeys,
    SpaceKeys,
    key_id,
    with_period_base,
    with_period_key,
)

log = structlog.get_logger(__name__)

#: Inputs smaller than this (bytes on disk) are read in one process: forking would cost more than it saves.
PARALLEL_MIN_BYTES = 8 << 20
#: At most this many processes: each one gunzips the whole input, so more stop paying off.
MAX_PROCESSES = 4
#: A record's full normaliser (:func:`auditor.kernel.normalize.normalize_record` or one that wraps it).
Normalizer = Callable[[Mapping[str, Any]], ApiCall | None]


@dataclass(slots=True)
class TrailAnalysis:
    """The result of analysing CloudTrail input (docs/contract.md ``analyze-trail`` JSON output)."""

    findings: list[Finding]
    access_patterns: list[AccessPattern]
    stats: IngestStats
    aggregates: AggregateSet
    detector_errors: list[str] = field(default_factory=list)

    def service_calls(self) -> dict[str, int]:
        """The calls AWS services made on their own behalf (Time to Live deletes, global-table replication, ...;
        docs/capacity.md), kept apart from user traffic, per service."""
        by_service: dict[str, int] = {}
        for tw in self.aggregates.windows.values():
            for service, n in tw.service_calls.items():
                by_service[service] = by_service.get(service, 0) + n
        return dict(sorted(by_service.items()))

    def summary(self) -> dict[str, object]:
        """The docs/contract.md ``summary``: the service calls, in all and per service."""
        by_service = self.service_calls()
        return {"service_calls": sum(by_service.values()), "service_calls_by_service": by_service}

    def to_dict(self) -> dict[str, object]:
        """The docs/contract.md JSON document."""
        return {
            "findings": [f.model_dump(mode="json") for f in self.findings],
            "access_patterns": [p.model_dump(mode="json") for p in self.access_patterns],
            "stats": self.stats.as_dict(),
            "summary": self.summary(),
        }


def new_aggregate_set(config: AnalysisConfig) -> AggregateSet:
    """An empty aggregate set tuned by ``config``."""
    return AggregateSet(config.window_seconds, config.sketch_capacity, config.key_schema)


def ingest_source(
    source: InputSource,
    config: AnalysisConfig,
    deduper: Deduper,
    stats: IngestStats,
    shard: Shard | None = None,
    outcomes: list[tuple[int, int] | None] | None = None,
    fingerprints: EventFingerprints | None = None,
    normalize: Normalizer | None = None,
) -> AggregateSet | None:
    """Aggregate one source. Returns None (and counts ``files_failed``) when it cannot be read.

    ``fingerprints``, when given, gets the fingerprint of every event counted (trail ingest keeps them, so that the
    evaluator can find events delivered in two objects: :mod:`auditor.service.dedupe`). ``normalize``, when given,
    reads every record in full instead of the light path (the model review observes the records through it).

    A failed source contributes nothing: its partial aggregate is dropped and its event ids are
    forgotten, so a retry of the same file later counts in full. ``outcomes``, when given, gets the source's
    outcome appended: the number of records in it (all shards') and the number this shard read, or None when it
    failed.
    """
    file_stats = IngestStats()
    aggs = new_aggregate_set(config)
    # Records are parsed into many short-lived objects and the aggregates hold no cycles: the cyclic GC would only
    # walk the growing aggregates again and again (trail ingest calls this directly, the CLI through ingest()).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        add_batch = aggs.add_batch
        keep = fingerprints.add if fingerprints is not None else None
        for batch in read_calls(source, file_stats, deduper, normalize or normalize_record, shard, light=True):
            add_batch(batch)
            if keep is not None:
                for call in batch:
                    if isinstance(call, ApiCall):
                        if call.event_id:  # an event without an id is never deduplicated anywhere
                            keep(call.event_id, call.time.timestamp())
                    else:
                        keep(call[0], call[3])
    except SourceReadError as exc:
        deduper.rollback()
        stats.files_failed += 1
        stats.note(str(exc))
        log.info("source_failed", source=source.name, reason=exc.reason)
        if outcomes is not None:
            outcomes.append(None)
        return None
    finally:
        if gc_was_enabled:
            gc.enable()
    if outcomes is not None:
        outcomes.append((file_stats.records_seen, file_stats.records_read))
    deduper.commit()
    file_stats.files_read = 1
    stats.merge(file_stats)
    return aggs


def ingest(
    sources: Iterable[InputSource],
    config: AnalysisConfig,
    shard: Shard | None = None,
    outcomes: list[tuple[int, int] | None] | None = None,
    normalize: Normalizer | None = None,
) -> tuple[AggregateSet, IngestStats]:
    """Aggregate every source, one at a time; unreadable ones are counted and skipped.

    With ``shard``, only that shard's records are aggregated (see :class:`auditor.kernel.reader.Shard`).
    ``outcomes`` gets one entry per source (see :func:`ingest_source`).
    """
    total = new_aggregate_set(config)
    stats = IngestStats()
    deduper = Deduper()
    # Records are parsed into many short-lived objects: the cyclic GC only costs time here.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for source in sources:
            aggs = ingest_source(source, config, deduper, stats, shard, outcomes, normalize=normalize)
            if aggs is not None:
                total.merge(aggs, take=True)
    finally:
        if gc_was_enabled:
            gc.enable()
    return total, stats


def plan_processes(sources: Sequence[InputSource], requested: int | None = None) -> int:
    """How many processes should read ``sources``: ``requested`` if given (capped at the CPU count), else automatic.

    Automatic: one process for stdin, for small inputs (under :data:`PARALLEL_MIN_BYTES`) and where ``fork`` is not
    available; otherwise one per available CPU, at most :data:`MAX_PROCESSES`.
    """
    if requested is not None and requested <= 1:
        return 1
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if any(not Path(src.name).is_file() for src in sources):  # stdin (or a stream) can be read only once
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if requested is not None:
        # never more processes than CPUs (or MAX_PROCESSES): --jobs 100000 must not fork until descriptors run out
        return max(1, min(requested, cpus, MAX_PROCESSES))
    size = sum(Path(src.name).stat().st_size for src in sources)
    if size < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(cpus, MAX_PROCESSES))


def _shard_worker(sources: Sequence[InputSource], config: AnalysisConfig, shard: Shard, conn: object) -> None:
    """Child process: aggregate one shard and send ``(aggregates, stats)`` (or a traceback string) back."""
    from multiprocessing.connection import Connection

    assert isinstance(conn, Connection)
    try:
        outcomes: list[tuple[int, int] | None] = []
        aggregates, stats = ingest(sources, config, shard, outcomes)
        aggregates.flush()  # fold the pending batches here, in parallel, not in the parent after unpickling
        payload: object = (aggregates, stats, outcomes)
    except BaseException:  # reported to the parent, which redoes the shard itself
        payload = traceback.format_exc(limit=5)
    try:
        conn.send(payload)
    finally:
        conn.close()


def _merge_shard_stats(into: IngestStats, other: IngestStats) -> None:
    """Add another shard's record counters; file counters are every shard's (each reads every file)."""
    into.records_read += other.records_read
    into.records_skipped += other.records_skipped
    into.data_events += other.data_events
    into.duplicates_dropped += other.duplicates_dropped
    for problem in other.problems:
        if problem not in into.problems:
            into.note(problem)


def ingest_parallel(
    sources: Sequence[InputSource], config: AnalysisConfig, processes: int
) -> tuple[AggregateSet, IngestStats]:
    """Like :func:`ingest`, with the records split over ``processes`` processes by ``eventID``.

    This process reads shard 0 while forked children read the others; each child sends back its aggregates, which
    merge (the aggregates are mergeable, and every event lands in exactly one shard, so deduplication stays
    exact). A child that fails is logged and the input is read again here in one process: nothing is lost.

    Every shard reads every source whole, so all must agree on each source's outcome (its number of records, or
    that it failed), and the records the shards read must add up to that number. They disagree only on corrupt
    inputs (records cut in the wrong place, see :func:`auditor.kernel.framing._raw_owned`, or a record that
    cannot be decoded, which no shard or two may take as theirs) or inputs whose bytes changed between the reads:
    then the sharded results are dropped and the input is read again in this process alone, the reference.
    """
    if processes <= 1:
        return ingest(sources, config)
    ctx = multiprocessing.get_context("fork")
    children = []
    for i in range(1, processes):
        reader, writer = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_shard_worker, args=(sources, config, Shard(i, processes), writer), daemon=True)
        proc.start()
        writer.close()
        children.append((i, proc, reader))
    outcomes: list[tuple[int, int] | None] = []
    total, stats = ingest(sources, config, Shard(0, processes), outcomes)
    agree = True
    reads = [o[1] if o is not None else 0 for o in outcomes]
    for i, proc, reader in children:
        try:
            payload: object = reader.recv()
        except (EOFError, OSError) as exc:
            payload = f"no result: {type(exc).__name__}"
        finally:
            reader.close()
            proc.join()
        if not isinstance(payload, tuple):
            log.warning("shard_failed", shard=i, processes=processes, reason=str(payload)[-500:])
            agree = False
            continue
        aggs, shard_stats, shard_outcomes = payload
        if shard_stats.wrong_cuts:
            agree = False
            continue
        if [None if o is None else o[0] for o in shard_outcomes] != [None if o is None else o[0] for o in outcomes]:
            agree = False
            continue
        reads = [r + (o[1] if o is not None else 0) for r, o in zip(reads, shard_outcomes, strict=True)]
        total.merge(aggs, take=True)
        _merge_shard_stats(stats, shard_stats)
    # Every record must have been read by exactly one shard: a record that no shard (or two) took as its own
    # (ownership decided differently before and after parsing, on corrupt input) makes the sums differ.
    if agree and any(o is not None and r != o[0] for r, o in zip(reads, outcomes, strict=True)):
        agree = False
    if stats.wrong_cuts:  # a slice other shards skipped as one record held more: what it hid may be nobody's
        agree = False
    if not agree:
        log.warning("shards_disagree", processes=processes, reason="sources read differently by the shards")
        return ingest(sources, config)
    return total, stats


def _with_totals(finding: Finding, agg: TableWindow, window_seconds: int) -> Finding:
    """``finding`` with the totals of the aggregate it was found in (one window, or a span of several)."""
    windows = sorted(agg.windows) or [agg.window_start]
    start = datetime.fromtimestamp(windows[0], tz=UTC)
    end = datetime.fromtimestamp(windows[-1] + window_seconds, tz=UTC)
    totals = window_totals(
        finding.kind, finding.evidence, finding.first_seen, finding.last_seen, start, end, windows=len(windows)
    )
    return finding.model_copy(update={"totals": totals})


#: A table's description as the service's inventory read it, by (account, region, table).
TableSchemas = Mapping[tuple[str | None, str | None, str], TableProfile]


def apply_table_facts(agg: TableWindow, config: AnalysisConfig, schemas: TableSchemas | None = None) -> None:
    """Tell ``agg`` what the trail cannot, before detection: its partition key, ``--config``'s ``key_schema`` first
    (the user's word), else the table's description (DescribeTable, in the service), with the indexes' partition
    keys (without either the detectors fall back to the key names the trail itself logs); and its typical item
    size in the order of :func:`auditor.models.capacity.item_size`: ``item_size_bytes`` from the config, the stream
    watcher's exact sizes, the description's size over its item count, CloudWatch's consumed units per write."""
    profile = (schemas or {}).get((agg.account, agg.region, agg.table))
    size, source = item_size(
        config=config.item_size_bytes.get(agg.table),
        streams=profile.stream_item_size_bytes if profile is not None else None,
        inventory=profile.described_item_size if profile is not None else None,
        cloudwatch=profile.cloudwatch_item_size_bytes if profile is not None else None,
    )
    agg.item_size_bytes, agg.item_size_source = (size, source) if size is not None else (None, None)
    agg.index_schema = {i.name: i.partition_key for i in profile.indexes if i.partition_key} if profile else {}
    if (hint := config.key_schema.get(agg.table)) is not None:
        agg.schema_hint, agg.schema_source = hint, "config"
    elif profile is not None and profile.partition_key:
        agg.schema_hint, agg.schema_source = profile.partition_key, "inventory"
    else:
        agg.schema_hint, agg.schema_source = None, None


def evaluate(
    aggregates: Sequence[TableWindow], config: AnalysisConfig, schemas: TableSchemas | None = None
) -> tuple[list[Finding], list[str]]:
    """Run every enabled traffic detector on every aggregate (with the table's settings); a failing detector is
    logged and reported, never fatal (:func:`auditor.detectors.registry.guarded`).
    Each finding carries the totals of the aggregate it was found in (:func:`_with_totals`); in a window the trail
    captured only in part (``captured_seconds``) they are estimates (:func:`auditor.cost.sampling.apply_capture`).
    ``schemas`` are the tables' descriptions where the caller read them (the service's evaluator), see
    :func:`apply_table_facts`."""
    findings: list[Finding] = []
    errors: list[str] = []
    detectors = all_detectors(DetectorInput.TRAIL_WINDOW)
    for agg in aggregates:
        apply_table_facts(agg, config, schemas)
        mine: list[Finding] = []
        for det in detectors:
            cfg = config.detector_config(det.id, agg.table)
            found = guarded(errors, det.id, agg.table, partial(det.run, agg, cfg))
            found = [_with_totals(f, agg, config.window_seconds) for f in found]
            if agg.captured_seconds is not None:  # sampled capture: counts scaled, scans stated exact
                found = [apply_capture(f, agg.observed_seconds, agg.window_seconds) for f in found]
            mine.extend(found)
        # The throttling findings of one table or index in this aggregate (one per cause) are one story (its causes
        # with their shares); aggregates of other windows stay other sightings.
        # An item's rejected writes are an item story (auditor.detectors.findings.item_story), with the id the stream
        # watcher's size facts of the same item share.
        # A low-cardinality key and the hot keys among its values are one story (auditor.detectors.findings.key_story).
        findings.extend(merge_keys(merge_items(merge_throttling(mine))))
    # A hot key and the key-range throttling it causes are one problem: linked (and raised), as the service links
    # CloudTrail and CloudWatch findings (auditor.detectors.findings.correlate; correlating again is a no-op).
    findings = correlate(findings, config.detector_config("correlate"))
    findings.sort(key=Finding.sort_key)
    return findings, errors


_PARTIQL_PREFIXES = ("ExecuteStatement:", "BatchExecuteStatement:", "ExecuteTransaction:")


def _statement_efficient(operation: str, template: str, efficient: bool, partition_key: str | None) -> bool:
    """A PartiQL row is efficient only if its template constrains the partition key of its target, the table or the
    index it names (when that key is known)."""
    if not efficient or partition_key is None or not operation.startswith(_PARTIQL_PREFIXES):
        return efficient
    if operation.endswith(":INSERT"):
        return True
    for part in template.split(", "):
        name, _, value = part.partition("=")
        if name == partition_key and value != "(redacted)":
            return True
    return False


def access_patterns(spans: Sequence[TableWindow], key_schema: dict[str, str] | None = None) -> list[AccessPattern]:
    """The access-pattern catalogue: API calls by account, region, table, index, operation and key template.

    Templates that differ only in id-like placeholders (``TS#{datetime}#{hex}`` / ``TS#{datetime}#{n}``) are one
    row. A PartiQL row without the partition key of its target is not efficient once that key is known: the table's
    from the analysis config, else the key names the trail's classic calls log; an index's as the scan detector learns
    it (the table's description, else the key its Query records name).
    """
    rows: list[AccessPattern] = []
    for agg in spans:
        calls = agg.calls
        if not calls or not agg.patterns:
            continue
        partition_key = (key_schema or {}).get(agg.table) or agg.schema_hint or agg.partition_key_attr
        grouped: dict[tuple[str, str, str, bool], list[Any]] = {}
        names: dict[tuple[str, str, str, bool], list[str]] = {}
        for (index, operation, template, efficient), (n, items, errors) in agg.patterns.items():
            gk = (index, operation, pattern_shape(template), efficient)
            row = grouped.get(gk)
            if row is None:
                row = grouped[gk] = [0, 0, {}]
                names[gk] = []
            row[0] += n
            row[1] += items
            for code, c in errors.items():
                row[2][code] = row[2].get(code, 0) + c
            names[gk].append(template)
        for gk, (n, items, errors) in grouped.items():
            index, operation, _, efficient = gk
            target_key = index_partition_key(agg, index)[0] if index else partition_key
            templates = sorted(names[gk], key=lambda t: (-agg.patterns[(index, operation, t, efficient)][0], t))
            template = pattern_template(templates)
            rows.append(
                AccessPattern(
                    account=agg.account,
                    region=agg.region,
                    table=agg.table,
                    index=index or None,
                    operation=operation,
                    key_template=template or None,
                    requests=n,
                    share=round(n / calls, 4),
                    efficient=_statement_efficient(operation, template, efficient, target_key),
                    errors=dict(sorted(errors.items())),
                    items=items,
                )
            )
    rows.sort(
        key=lambda p: (
            p.table,
            p.account or "",
            p.region or "",
            -p.requests,
            p.operation,
            p.index or "",
            p.key_template or "",
        )
    )
    return rows


def analyze_trail(
    paths: Sequence[str],
    config: AnalysisConfig | None = None,
    stdin: BinaryIO | None = None,
    processes: int | None = None,
) -> TrailAnalysis:
    """Analyse CloudTrail files, directories, EventBridge event files or stdin (``-``).

    ``processes``: how many processes read the input (None: automatic, see :func:`plan_processes`).
    """
    return analyze_sources(discover(paths, stdin=stdin), config, processes)


def analyze_sources(
    sources: Sequence[InputSource], config: AnalysisConfig | None = None, processes: int | None = None
) -> TrailAnalysis:
    """:func:`analyze_trail` of sources already found (the CLI wraps them to show progress as each is opened)."""
    cfg = config or AnalysisConfig()
    return analysis_of(*ingest_parallel(sources, cfg, plan_processes(sources, processes)), cfg)


def analysis_of(aggs: AggregateSet, stats: IngestStats, cfg: AnalysisConfig) -> TrailAnalysis:
    """The findings and access patterns of input already aggregated (``model-review`` aggregates it with
    :func:`ingest` and a ``normalize`` that observes each record: one read of the input, in one process)."""
    spans = aggs.spans()
    findings, errors = evaluate(spans, cfg)
    findings = period_totals(findings, aggs, cfg)
    return TrailAnalysis(findings, access_patterns(spans, cfg.key_schema), stats, aggs, errors)


def input_period(aggs: AggregateSet, window_seconds: int) -> tuple[datetime, datetime] | None:
    """The period an input covers: the start of its first window to the end of its last."""
    starts = [wk[3] for wk in aggs.windows]
    if not starts:
        return None
    return datetime.fromtimestamp(min(starts), tz=UTC), datetime.fromtimestamp(max(starts) + window_seconds, tz=UTC)


def period_totals(findings: Sequence[Finding], aggs: AggregateSet, config: AnalysisConfig) -> list[Finding]:
    """The input's findings with totals and severity over the whole input, judged the way the service judges them.

    The service evaluates each window alone (:func:`auditor.service.evaluate.run_evaluation`, one table window per
    :func:`evaluate`) and sums the sightings of a finding (see :func:`auditor.lifecycle.add_sightings`); here every
    table window is evaluated alone too and the same sums are made, so a replay of the same files through the
    service gives the same totals, the same severity (the highest any window reached) and, for throttling, the same
    cause (the one with the most throttled calls over the windows): :func:`auditor.detectors.findings.period.for_period`
    says why. A finding of the whole input that no single
    window shows keeps the totals and severity of the whole input. Every finding's period is the input's; a finding
    some window shows is first and last seen when its sightings were (:meth:`Finding.sighted`), as its totals say.
    """
    period = input_period(aggs, config.window_seconds)
    if period is None:
        return list(findings)
    sums: dict[str, Totals] = {}
    bases: dict[TableKey, PeriodKeys] = {}
    for window in sorted(aggs.windows.values(), key=lambda w: w.window_start):
        found, _ = evaluate([window], config)
        for f in found:
            seen = sums.get(f.id)
            sums[f.id] = f.sighting_totals() if seen is None else seen.merged(f.sighting_totals())
        into = bases.setdefault((window.account, window.region, window.table), PeriodKeys())
        into.add(key_request_counts(window), window_keys(window), (f.id for f in found))
    out = []
    for f in findings:
        seen = sums.get(f.id)
        stated = for_period(f, with_key_base(f, (seen or f.sighting_totals()).over(*period), bases))
        out.append(stated if seen is None else stated.sighted(seen))  # seen first and last when its sightings were
    return out


def key_request_counts(window: TableWindow) -> dict[str, int]:
    """A table window's key-identified requests by partition space: ``""`` the table's, else an index's name (the
    hot-key detector's ``key_requests`` of each space, :func:`auditor.detectors.trail.key_spaces.key_spaces`)."""
    out = {"": window.key_requests} if window.key_requests else {}
    out.update({name: space.counts[0] for name, space in sorted(window.index_keys.items()) if space.counts[0]})
    return out


def window_keys(window: TableWindow) -> dict[str, SpaceKeys]:
    """A table window's :data:`~auditor.models.period_evidence.TOP_KEYS` heaviest keys of each partition space with
    their requests and writes (the window's key sketch, as the hot-key detector counts them), whatever the detectors
    found; ``below``: an unlisted key's most requests there (the last listed count when more keys were counted, at
    least the sketch's error)."""
    out: dict[str, SpaceKeys] = {}
    for space in key_spaces(window):
        if not space.requests:
            continue
        ranked = space.top(TOP_KEYS + 1)
        prefix = len(index_key(space.index, ""))
        top = {key_id(k[prefix:]): (n, min(n, space.write_counts.get(k, 0))) for k, n in ranked[:TOP_KEYS]}
        below = max(space.error, ranked[TOP_KEYS - 1][1] if len(ranked) > TOP_KEYS else 0)
        out[space.index or ""] = SpaceKeys(space.requests, top, below)
    return out


def hot_key_id(finding: Finding) -> str | None:
    """The id a window keeps a one-key hot-key finding's key under (:func:`window_keys`); None for a finding listing
    many keys."""
    key = finding.evidence.get("key")
    if "keys" in finding.evidence or not isinstance(key, dict) or len(key) != 1:
        return None
    ((attr, value),) = key.items()
    return key_id(encode_key(str(attr), value))


def with_key_base(finding: Finding, totals: Totals, bases: Mapping[TableKey, PeriodKeys]) -> Totals:
    """``totals`` of a hot key stated for every window of the period, ``bases`` (by table: each evaluated window's
    key-identified requests and top keys), not only for the windows it was hot in: its share is of its table's (or
    index's) key-identified requests (:func:`auditor.models.period_evidence.with_period_base`) and its requests,
    reads and writes add its counts in the windows where it was not hot (``with_period_key``; docs/contract.md,
    hot_key ``share``). ``analyze-trail`` (:func:`period_totals`) and the service (the weekly report, a replay) both
    state a hot key so."""
    if finding.kind is not FindingKind.HOT_KEY or totals.figures is None:
        return totals
    period = bases.get((finding.account, finding.region, finding.table))
    base = None if period is None else period.bases.get(finding.index or "")
    seen = totals.figures.get("sum", {}).get("key_requests")
    if period is None or not base or not isinstance(seen, int) or base < seen:  # counts missing: left as they were
        return totals
    figures = with_period_base(totals.figures, base)
    # a sampled window's share_base is scaled (auditor.cost.sampling.apply_capture): its excess is kept
    excess = max(0, (totals.share_base or seen) - seen)
    update: dict[str, Any] = {"share_base": base + excess, "figures": figures}
    key = hot_key_id(finding)
    count = None if key is None else period.key_count(finding.index or "", key, finding.id)
    if count is not None:  # the key's requests in the period's other windows too (a lower bound: stated)
        update.update(figures=with_period_key(figures, count), count=totals.count + count.requests)
    return totals.model_copy(update=update)

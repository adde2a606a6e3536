"""The analysis engine: sources -> mergeable aggregates -> pure detectors -> findings.

The CLI and the Lambda handlers call these functions; nothing here talks to AWS.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

import structlog

from auditor.aggregates.window import AggregateSet, TableWindow
from auditor.config import AnalysisConfig
from auditor.detectors.registry import all_detectors
from auditor.exceptions import SourceReadError
from auditor.models.access_pattern import AccessPattern
from auditor.models.finding import Finding
from auditor.sources.cloudtrail import Deduper, InputSource, discover, read_calls
from auditor.sources.stats import IngestStats

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class TrailAnalysis:
    """The result of analysing CloudTrail input (SPEC.md ``analyze-trail`` JSON output)."""

    findings: list[Finding]
    access_patterns: list[AccessPattern]
    stats: IngestStats
    aggregates: AggregateSet
    detector_errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """The SPEC.md JSON document."""
        return {
            "findings": [f.model_dump(mode="json") for f in self.findings],
            "access_patterns": [p.model_dump(mode="json") for p in self.access_patterns],
            "stats": self.stats.as_dict(),
        }


def new_aggregate_set(config: AnalysisConfig) -> AggregateSet:
    """An empty aggregate set tuned by ``config``."""
    return AggregateSet(config.window_seconds, config.sketch_capacity, config.key_schema)


def ingest_source(
    source: InputSource, config: AnalysisConfig, deduper: Deduper, stats: IngestStats
) -> AggregateSet | None:
    """Aggregate one source. Returns None (and counts ``files_failed``) when it cannot be read.

    A failed source contributes nothing: its partial aggregate is dropped and its event ids are
    forgotten, so a retry of the same file later counts in full.
    """
    file_stats = IngestStats()
    aggs = new_aggregate_set(config)
    try:
        for call in read_calls(source, file_stats, deduper):
            aggs.add(call)
    except SourceReadError as exc:
        deduper.rollback()
        stats.files_failed += 1
        stats.note(str(exc))
        log.info("source_failed", source=source.name, reason=exc.reason)
        return None
    deduper.commit()
    file_stats.files_read = 1
    stats.merge(file_stats)
    return aggs


def ingest(sources: Iterable[InputSource], config: AnalysisConfig) -> tuple[AggregateSet, IngestStats]:
    """Aggregate every source, one at a time; unreadable ones are counted and skipped."""
    total = new_aggregate_set(config)
    stats = IngestStats()
    deduper = Deduper()
    # Records are parsed into many short-lived objects: the cyclic GC only costs time here.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for source in sources:
            aggs = ingest_source(source, config, deduper, stats)
            if aggs is not None:
                total.merge(aggs, take=True)
    finally:
        if gc_was_enabled:
            gc.enable()
    return total, stats


def evaluate(aggregates: Sequence[TableWindow], config: AnalysisConfig) -> tuple[list[Finding], list[str]]:
    """Run every enabled detector on every aggregate; a failing detector is logged, never fatal."""
    findings: list[Finding] = []
    errors: list[str] = []
    detectors = all_detectors()
    for agg in aggregates:
        for det in detectors:
            overrides = config.detectors.get(det.metadata.id, {})
            cfg = det.config_model.model_validate(overrides)
            try:
                findings.extend(det.run(agg, cfg))
            except Exception as exc:  # a detector bug must not hide the other findings
                log.exception("detector_failed", detector_id=det.metadata.id, table=agg.table)
                errors.append(f"{det.metadata.id} on {agg.table}: {type(exc).__name__}: {exc}")
    findings.sort(key=Finding.sort_key)
    return findings, errors


def access_patterns(spans: Sequence[TableWindow]) -> list[AccessPattern]:
    """The access-pattern catalogue: requests by table, index, operation and key template."""
    rows: list[AccessPattern] = []
    for agg in spans:
        total = sum(agg.patterns.values())
        if not total:
            continue
        for (index, operation, template, efficient), n in agg.patterns.items():
            rows.append(
                AccessPattern(
                    table=agg.table,
                    index=index or None,
                    operation=operation,
                    key_template=template or None,
                    requests=n,
                    share=round(n / total, 4),
                    efficient=efficient,
                )
            )
    rows.sort(key=lambda p: (p.table, -p.requests, p.operation, p.index or "", p.key_template or ""))
    return rows


def analyze_trail(
    paths: Sequence[str], config: AnalysisConfig | None = None, stdin: BinaryIO | None = None
) -> TrailAnalysis:
    """Analyse CloudTrail files, directories, EventBridge event files or stdin (``-``)."""
    cfg = config or AnalysisConfig()
    sources = discover(paths, stdin=stdin)
    aggs, stats = ingest(sources, cfg)
    spans = aggs.spans()
    findings, errors = evaluate(spans, cfg)
    return TrailAnalysis(findings, access_patterns(spans), stats, aggs, errors)

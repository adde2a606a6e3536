"""What the weekly report reads: findings (``Finding`` objects, SPEC JSON dicts or lifecycle states), whole findings
documents (the JSON output of ``analyze-trail``, ``billing`` and ``audit``), capacity series and throttle counts.

Every parser raises ``InputError`` naming where the bad value is (``file.json: findings[3]: ...``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from auditor.detectors.findings import item_story, throttling_story
from auditor.exceptions import InputError
from auditor.models.access_pattern import AccessPattern
from auditor.models.base import FrozenModel
from auditor.models.finding import Finding, Severity, utc
from auditor.report.contents import STATUSES, Status


class CapacitySeries(FrozenModel):
    """One table's (or index's) CloudWatch capacity history: consumed ``Sum`` per period, provisioned units.

    The same shape as one entry of the ``ddb-audit billing`` input (docs/contract.md), with the table and time added.
    """

    table: str
    index: str | None = None
    start: datetime
    period_seconds: int = Field(default=60, ge=1)
    #: ``null`` is a missing datapoint (CloudWatch returned nothing for that period), as in the billing input.
    consumed_read: list[float | None] = Field(default_factory=list)
    consumed_write: list[float | None] = Field(default_factory=list)
    provisioned_read: list[float | None] | None = None
    provisioned_write: list[float | None] | None = None

    @field_validator("start")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return utc(value)

    @model_validator(mode="after")
    def _lengths(self) -> CapacitySeries:
        for name in ("provisioned_read", "provisioned_write"):
            values = getattr(self, name)
            consumed = getattr(self, name.replace("provisioned", "consumed"))
            if values is not None and len(values) != len(consumed):
                raise ValueError(f"{name} has {len(values)} values but consumed has {len(consumed)}")
        return self


#: Who counted a throttle row, as the report says it.
THROTTLE_SOURCES: dict[str | None, str] = {
    "cloudwatch": "CloudWatch (throttle events)",
    "cloudtrail": "CloudTrail (throttled calls)",
}


class ThrottleCount(FrozenModel):
    """Throttle events of one table (or index) and cause, e.g. from the per-cause CloudWatch metrics."""

    table: str
    index: str | None = None
    cause: str
    read_events: int = Field(default=0, ge=0)
    write_events: int = Field(default=0, ge=0)
    #: Whose count this is (``cloudwatch``: throttle events; ``cloudtrail``: throttled calls); None when not known.
    source: str | None = None

    @property
    def total(self) -> int:
        return self.read_events + self.write_events


_LIFECYCLE_KEYS = ("status", "resolved_at", "published_severity", "previous_severity")
_STATUS_ALIASES: dict[str, Status | None] = {"open": None, "active": None, "reopened": "new", "re-opened": "new"}


class FindingInput(FrozenModel):
    """One parsed input finding with whatever lifecycle information came with it."""

    finding: Finding
    status: Status | None = None
    resolved_at: datetime | None = None
    published_severity: Severity | None = None


def _status(value: Any, where: str) -> Status | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in _STATUS_ALIASES:
        return _STATUS_ALIASES[text]
    for s in STATUSES:
        if s == text:
            return s
    raise InputError(f"{where}: unknown lifecycle status {value!r} (expected one of {', '.join(STATUSES)})")


def _validation_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def parse_finding(item: Any, where: str = "finding") -> FindingInput:
    """Accept a ``Finding``, a SPEC finding dict (lifecycle keys allowed), or a lifecycle state.

    A lifecycle state is a dict (or pydantic model) with a ``finding`` member plus ``status``,
    ``resolved_at`` and ``published_severity``. Unknown extra keys are ignored; a missing or invalid field
    raises ``InputError`` naming ``where`` and the field.
    """
    if isinstance(item, BaseModel):
        # Findings are re-validated too: ``model_copy(update=...)`` skips validation.
        item = item.model_dump(mode="json")
    if not isinstance(item, Mapping):
        raise InputError(f"{where}: expected a finding object, got {type(item).__name__}")
    meta: Mapping[str, Any] = item
    body: Any = item
    if "finding" in item and "kind" not in item:
        body = item["finding"]
        if isinstance(body, Finding):
            body = body.model_dump(mode="json")
        if not isinstance(body, Mapping):
            raise InputError(f"{where}.finding: expected a finding object, got {type(body).__name__}")
    fields = {k: v for k, v in body.items() if k in Finding.model_fields}
    try:
        finding = Finding.model_validate(fields)
    except ValidationError as exc:
        raise InputError(f"{where}: {_validation_message(exc)}") from exc
    extra = {k: meta.get(k, body.get(k)) for k in _LIFECYCLE_KEYS}
    try:
        resolved_at = None if extra["resolved_at"] is None else utc(_as_datetime(extra["resolved_at"]))
        published = extra["published_severity"] or extra["previous_severity"]
        return FindingInput(
            finding=finding,
            status=_status(extra["status"], where),
            resolved_at=resolved_at,
            published_severity=None if published is None else Severity(str(published).lower()),
        )
    except (ValueError, TypeError) as exc:
        raise InputError(f"{where}: invalid lifecycle field: {exc}") from exc


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, tz=UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


class FindingsDocument(FrozenModel):
    """The JSON output of ``analyze-trail`` / ``billing`` / ``audit`` (or a bare list of findings), parsed."""

    findings: list[FindingInput]
    access_patterns: list[AccessPattern] = Field(default_factory=list)
    stats: dict[str, int] = Field(default_factory=dict)
    coverage_gaps: list[str] = Field(default_factory=list)
    #: The tables an ``audit`` read (its ``tables`` block), findings or not.
    audited_tables: list[str] = Field(default_factory=list)
    #: The capacity series an ``audit`` read (``tables[].capacity_history``), for the capacity charts.
    capacity: list[CapacitySeries] = Field(default_factory=list)


def _audit_tables(document: Mapping[str, Any], source: str) -> tuple[list[str], list[CapacitySeries]]:
    """The audited tables' names and capacity series of an ``audit`` output (nothing for other documents)."""
    tables = document.get("tables")
    if not isinstance(tables, list):
        return [], []
    names: list[str] = []
    capacity: list[CapacitySeries] = []
    for i, t in enumerate(tables):
        if not isinstance(t, Mapping) or not isinstance(t.get("table"), str):
            continue
        names.append(t["table"])
        history = t.get("capacity_history")
        if history is not None:
            capacity += capacity_from_billing_input(history, f"{source}: tables[{i}].capacity_history")
    return names, capacity


def parse_findings_document(document: Any, source: str = "findings") -> FindingsDocument:
    """Parse a findings document; errors name the source and the index (``file.json: findings[3]: ...``)."""
    if isinstance(document, list):
        raw_findings: Any = document
        raw_patterns: Any = []
        raw_stats: Any = {}
    elif isinstance(document, Mapping):
        if "findings" not in document:
            raise InputError(f"{source}: no 'findings' member (expected the JSON output of a ddb-audit command)")
        raw_findings = document["findings"]
        raw_patterns = document.get("access_patterns") or []
        raw_stats = document.get("stats") or {}
    else:
        raise InputError(f"{source}: expected a JSON object with 'findings' or a JSON array of findings")
    if not isinstance(raw_findings, list):
        raise InputError(f"{source}: 'findings' must be a JSON array")
    if not isinstance(raw_patterns, list):
        raise InputError(f"{source}: 'access_patterns' must be a JSON array")
    findings = [parse_finding(item, f"{source}: findings[{i}]") for i, item in enumerate(raw_findings)]
    patterns = []
    for i, p in enumerate(raw_patterns):
        try:
            patterns.append(AccessPattern.model_validate(p))
        except ValidationError as exc:
            raise InputError(f"{source}: access_patterns[{i}]: {_validation_message(exc)}") from exc
    stats = (
        {str(k): int(v) for k, v in raw_stats.items() if isinstance(v, int) and not isinstance(v, bool)}
        if isinstance(raw_stats, Mapping)
        else {}
    )
    gaps = document.get("coverage_gaps") if isinstance(document, Mapping) else None
    coverage = [_coverage_line(g) for g in gaps if isinstance(g, Mapping)] if isinstance(gaps, list) else []
    audited, capacity = _audit_tables(document, source) if isinstance(document, Mapping) else ([], [])
    return FindingsDocument(
        findings=findings,
        access_patterns=patterns,
        stats=stats,
        coverage_gaps=coverage,
        audited_tables=audited,
        capacity=capacity,
    )


def _coverage_line(gap: Mapping[str, Any]) -> str:
    """``444455556666/eu-west-1: role missing (sts:AssumeRole: AccessDenied)`` from a ``coverage_gaps`` entry."""
    where = f"{gap.get('account') or 'own account'}/{gap.get('region') or '-'}"
    reason = str(gap.get("reason") or "error").replace("_", " ")
    return f"{where}: {reason} ({gap.get('call') or '-'}: {gap.get('error_code') or '-'})"


#: The stories whose findings of one id in two inputs are combined, not replaced.
_IS_STORY = (throttling_story.is_story, item_story.is_story)


def merge_findings_documents(docs: Sequence[FindingsDocument]) -> FindingsDocument:
    """Several findings documents as one (``report --findings A --findings B``).

    Findings are deduplicated by id: the sighting seen last wins (its totals are that input's; two inputs of the
    same period should not be merged). A throttling story in two inputs (``audit``'s CloudWatch part and
    ``analyze-trail``'s CloudTrail part) becomes one with both parts, each source's totals its own. Access patterns
    are kept from every input and input counters are added.
    """
    if len(docs) == 1:
        return docs[0]
    by_id: dict[str, FindingInput] = {}
    for doc in docs:
        for fi in doc.findings:
            seen = by_id.get(fi.finding.id)
            if seen is not None and any(is_story(seen.finding) and is_story(fi.finding) for is_story in _IS_STORY):
                # one throttling problem told by two outputs (audit: CloudWatch; analyze-trail: CloudTrail), or one
                # item's story (the service's size facts, analyze-trail's rejected writes)
                older, newer = sorted((seen, fi), key=lambda x: x.finding.last_seen)
                story = item_story.combine(older.finding, throttling_story.combine(older.finding, newer.finding))
                fi = newer.model_copy(update={"finding": story})
                by_id[fi.finding.id] = fi
            elif seen is None or fi.finding.last_seen >= seen.finding.last_seen:
                by_id[fi.finding.id] = fi
    stats: dict[str, int] = {}
    for doc in docs:
        for k, v in doc.stats.items():
            stats[k] = stats.get(k, 0) + v
    return FindingsDocument(
        findings=list(by_id.values()),
        access_patterns=[p for doc in docs for p in doc.access_patterns],
        stats=stats,
        coverage_gaps=[g for doc in docs for g in doc.coverage_gaps],
        audited_tables=sorted({t for doc in docs for t in doc.audited_tables}),
        capacity=[c for doc in docs for c in doc.capacity],
    )


def capacity_from_billing_input(document: Any, source: str = "capacity") -> list[CapacitySeries]:
    """The capacity series of a ``ddb-audit billing`` input document (docs/contract.md), one per table/index."""
    if not isinstance(document, Mapping) or not isinstance(document.get("series"), list):
        raise InputError(f"{source}: expected a billing input document with 'table', 'start' and 'series'")
    out = []
    for i, s in enumerate(document["series"]):
        if not isinstance(s, Mapping):
            raise InputError(f"{source}: series[{i}]: expected an object")
        try:
            out.append(
                CapacitySeries.model_validate(
                    {
                        "table": document.get("table"),
                        "start": document.get("start"),
                        "period_seconds": document.get("period_seconds", 60),
                        **{k: s.get(k) for k in ("index",)},
                        "consumed_read": s.get("consumed_read") or [],
                        "consumed_write": s.get("consumed_write") or [],
                        "provisioned_read": s.get("provisioned_read"),
                        "provisioned_write": s.get("provisioned_write"),
                    }
                )
            )
        except ValidationError as exc:
            raise InputError(f"{source}: series[{i}]: {_validation_message(exc)}") from exc
    return out

"""The public ``Finding`` model (docs/contract.md "Finding (JSON)") and its stable fingerprint."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import orjson
from pydantic import (
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_serializer,
)

from auditor.models.base import FrozenModel
from auditor.models.period_evidence import Figures, figures_of, merge_figures, period_evidence, repeated_scans


class Severity(StrEnum):
    """Finding severities, ordered from most to least urgent."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is more urgent (info=0 ... critical=4)."""
        return _SEVERITY_RANK[self]

    def raised(self, steps: int = 1) -> Severity:
        """This severity moved ``steps`` levels up (capped at critical)."""
        return _BY_RANK[min(4, max(0, self.rank + steps))]


_SEVERITY_RANK = {
    Severity.INFO: 0,
    Severity.LOW: 1,
    Severity.MEDIUM: 2,
    Severity.HIGH: 3,
    Severity.CRITICAL: 4,
}
_BY_RANK = {v: k for k, v in _SEVERITY_RANK.items()}


class FindingKind(StrEnum):
    """Every finding kind of the public contract."""

    SCAN = "scan"
    THROTTLING = "throttling"
    HOT_KEY = "hot_key"
    LOW_CARDINALITY_KEY = "low_cardinality_key"
    LARGE_ITEM = "large_item"
    ITEM_GROWTH = "item_growth"
    ITEM_SIZE_EXCEEDED = "item_size_exceeded"
    BILLING_MODE = "billing_mode"
    TABLE_CLASS = "table_class"
    UNUSED_INDEX = "unused_index"
    IDLE_TABLE = "idle_table"
    TTL_NOT_EXPIRING = "ttl_not_expiring"
    CAPTURE_CAP = "capture_cap"


#: Human names of the finding kinds (headings, action titles).
KIND_LABELS: dict[FindingKind, str] = {
    FindingKind.SCAN: "Scans",
    FindingKind.THROTTLING: "Throttling",
    FindingKind.HOT_KEY: "Hot key",
    FindingKind.LOW_CARDINALITY_KEY: "Low-cardinality key",
    FindingKind.LARGE_ITEM: "Large item",
    FindingKind.ITEM_GROWTH: "Growing item",
    FindingKind.ITEM_SIZE_EXCEEDED: "Item size exceeded",
    FindingKind.BILLING_MODE: "Billing mode",
    FindingKind.TABLE_CLASS: "Table class",
    FindingKind.UNUSED_INDEX: "Unused index",
    FindingKind.IDLE_TABLE: "Idle table",
    FindingKind.TTL_NOT_EXPIRING: "TTL not expiring",
    FindingKind.CAPTURE_CAP: "Capture cap reached",
}

#: Evidence fields docs/contract.md requires for each kind.
REQUIRED_EVIDENCE: dict[FindingKind, tuple[str, ...]] = {
    FindingKind.SCAN: ("principal", "operation", "count", "source"),
    FindingKind.THROTTLING: ("cause", "read_throttle_events", "write_throttle_events", "source"),
    FindingKind.HOT_KEY: ("key", "share", "requests", "window_seconds", "source"),
    FindingKind.LOW_CARDINALITY_KEY: ("distinct_partition_keys", "requests"),
    FindingKind.LARGE_ITEM: ("key", "size_bytes", "limit_bytes"),
    FindingKind.ITEM_GROWTH: ("key", "size_bytes", "bytes_per_day", "days_to_limit"),
    FindingKind.ITEM_SIZE_EXCEEDED: ("count", "key"),
    FindingKind.BILLING_MODE: (
        "current_mode",
        "recommended_mode",
        "monthly_cost_current",
        "monthly_cost_recommended",
        "monthly_savings",
        "days_analyzed",
    ),
    FindingKind.TABLE_CLASS: ("current_class", "recommended_class", "monthly_savings"),
    FindingKind.UNUSED_INDEX: ("days_analyzed", "reads", "writes"),
    FindingKind.IDLE_TABLE: ("days_idle", "reads", "writes", "monthly_cost"),
    FindingKind.TTL_NOT_EXPIRING: ("ttl_attribute", "deleted_items", "days_analyzed", "writes"),
    FindingKind.CAPTURE_CAP: (
        "cap_pages",
        "expected_pages",
        "every",
        "period_start",
        "period_end",
        "not_seen",
        "source",
    ),
}


def fingerprint(
    kind: FindingKind | str,
    account: str | None,
    region: str | None,
    table: str,
    index: str | None,
    discriminator: Any = None,
) -> str:
    """Stable id: the same problem on the same resource gets the same id in every run.

    ``discriminator`` names what separates two findings of one kind on one resource (the principal of a
    scan, the key of a hot key, the cause of throttling). It must not contain counts or times.
    """
    material = orjson.dumps(
        [str(kind), account or "", region or "", table, index or "", discriminator],
        option=orjson.OPT_SORT_KEYS,
    )
    return f"{kind}-{hashlib.sha256(material).hexdigest()[:20]}"


def utc(dt: datetime) -> datetime:
    """Normalise to an aware UTC datetime (naive input is taken as UTC)."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    try:
        return dt.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-14:00 and 0001-01-01T00:00:00+14:00 have no UTC datetime
        raise ValueError(f"time {dt.isoformat()} is out of range in UTC") from None


def isoformat_z(dt: datetime) -> str:
    """ISO-8601 UTC with a ``Z`` suffix and second precision."""
    return utc(dt).strftime("%Y-%m-%dT%H:%M:%SZ")


#: Kinds whose measure is a number of events over time (a rate per hour means something for them).
RATE_KINDS = frozenset(
    {
        FindingKind.SCAN,
        FindingKind.THROTTLING,
        FindingKind.HOT_KEY,
        FindingKind.LOW_CARDINALITY_KEY,
        FindingKind.ITEM_SIZE_EXCEEDED,
    }
)

#: A rate per hour is stated only when at least this much time was observed.
HOUR = 3600


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


def measure(kind: FindingKind, evidence: dict[str, Any]) -> int:
    """The finding's own measure in one sighting: what ``totals.count`` sums.

    scan calls (``scan``), throttled requests (``throttling``: reads + writes, one source's count), requests to the
    key (``hot_key``), key-identified requests (``low_cardinality_key``), rejected writes (``item_size_exceeded``);
    for the other kinds (one item, one table's bill, one index) each sighting counts 1.
    """
    if kind is FindingKind.SCAN or kind is FindingKind.ITEM_SIZE_EXCEEDED:
        return _int(evidence.get("count"))
    if kind is FindingKind.THROTTLING:
        return _int(evidence.get("read_throttle_events")) + _int(evidence.get("write_throttle_events"))
    if kind is FindingKind.HOT_KEY or kind is FindingKind.LOW_CARDINALITY_KEY:
        return _int(evidence.get("requests"))
    return 1


def measure_base(kind: FindingKind, evidence: dict[str, Any]) -> int | None:
    """The denominator of the finding's share in one sighting, counted over the same window as :func:`measure`.

    ``hot_key``: the table's key-identified requests (``key_requests``), so a share over a period is the key's
    requests over the table's requests in the same windows. None for kinds that state no share.
    """
    if kind is FindingKind.HOT_KEY:
        value = evidence.get("key_requests")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


#: The serialisation context key under which :class:`Totals` keep their evidence ``figures`` (the stores' items).
STORED_FIGURES = "stored_figures"
#: The serialisation context of a stored record (``model_dump(context=STORED)``): totals keep their figures.
STORED = {STORED_FIGURES: True}


class Totals(FrozenModel):
    """A finding's measure summed over a period (docs/contract.md ``totals``).

    ``count`` sums the finding's own :func:`measure` over the windows in which it was seen within
    [``period_start``, ``period_end``); ``windows`` is how many such windows; ``first_seen``/``last_seen`` the
    first and last event among them; ``peak_per_hour`` the busiest window's rate per hour, null when less than an
    hour was observed or the kind is not a rate. ``share_base`` is, for a kind stated as a share (``hot_key``), the
    denominator summed over the same windows as ``count`` (the table's key-identified requests), so the share over
    the period is ``count / share_base``; null for other kinds and for totals stored before it existed.
    ``peak_severity`` is the highest severity the finding reached in any of those windows: its severity for the
    period (:meth:`Finding.over_period`); null for totals stored before it existed. ``by_cause`` is, for a
    throttling finding, ``count`` by the cause decided in each window and by how it was decided there
    (``{cause: {cause_source: int}}``; null for other kinds and for totals stored before it existed), so the period's
    cause is the one with the most throttled requests.
    """

    count: int = Field(ge=0)
    windows: int = Field(ge=0)
    first_seen: datetime
    last_seen: datetime
    peak_per_hour: float | None = None
    period_start: datetime
    period_end: datetime
    share_base: int | None = Field(default=None, ge=0)
    margin: int | None = Field(default=None, ge=0)
    peak_severity: Severity | None = None
    by_cause: dict[str, dict[str, int]] | None = None
    #: For a finding several sources saw (a throttling story): each source's own totals, never added together; the
    #: top-level fields are those of the first source of :data:`SOURCE_PRECEDENCE` present. None for other findings.
    by_source: dict[str, Totals] | None = None
    #: The evidence's figures over the same windows as ``count`` (:mod:`auditor.models.period_evidence`): what the
    #: finding's evidence states for the period. None for kinds without them and for totals stored before them.
    figures: Figures | None = None

    @field_validator("first_seen", "last_seen", "period_start", "period_end")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return utc(value)

    @field_serializer("first_seen", "last_seen", "period_start", "period_end")
    def _ser_time(self, value: datetime) -> str:
        return isoformat_z(value)

    @model_serializer(mode="wrap")
    def _ser(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """``share_base`` appears only for kinds stated as a share (the other kinds keep the contract's seven keys);
        ``figures`` only in what the service stores (serialised with :data:`STORED`), not in the outputs."""
        out: dict[str, Any] = handler(self)
        for optional in ("share_base", "margin", "peak_severity", "by_cause", "by_source", "figures"):
            if out.get(optional) is None:
                out.pop(optional, None)
        if not (isinstance(info.context, dict) and info.context.get(STORED_FIGURES)):
            out.pop("figures", None)
        return out

    def __eq__(self, other: object) -> bool:
        """The same sums over the same period (the evidence's ``figures`` aside: they are the evidence's, not the
        totals' own figures)."""
        if not isinstance(other, Totals):
            return NotImplemented
        return self._compared() == other._compared()

    __hash__ = FrozenModel.__hash__

    def _compared(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in type(self).model_fields if name != "figures"}
        return out

    @property
    def source(self) -> str | None:
        """The source whose counts the top-level fields are (None: a single-source finding's totals)."""
        return preferred_source(self.by_source) if self.by_source else None

    @classmethod
    def of_sources(cls, parts: Mapping[str, Totals]) -> Totals:
        """Totals stating each source's own ``parts`` (never added), the top level being the preferred source's."""
        if not parts:
            raise ValueError("of_sources needs at least one source")
        clean = {s: t.model_copy(update={"by_source": None}) for s, t in sorted(parts.items())}
        top = clean[preferred_source(clean)]
        peak = worst(t.peak_severity for t in clean.values())
        return top.model_copy(update={"by_source": clean, "peak_severity": peak})

    @property
    def share(self) -> float | None:
        """``count / share_base`` over the period (0..1), None when the kind states no share."""
        if not self.share_base:
            return None
        return min(1.0, self.count / self.share_base)

    @property
    def observed_seconds(self) -> float:
        """Length of the period."""
        return max(0.0, (self.period_end - self.period_start).total_seconds())

    def count_text(self, unit: str) -> str:
        """``N unit``, or ``about N (±M) unit`` for an estimate from sampled capture."""
        if self.margin is None:
            return f"{self.count:,} {unit}"
        return f"about {self.count:,} (±{self.margin:,}) {unit}"

    def rate_text(self, unit: str) -> str:
        """``N unit in M minutes`` below an hour observed, else ``N unit (X per hour at peak)`` (``about N (±M)``
        for an estimate)."""
        n = self.count_text(unit)
        if self.observed_seconds < HOUR or self.peak_per_hour is None:
            minutes = max(1, round(self.observed_seconds / 60))
            return f"{n} in {minutes} minute{'s' if minutes != 1 else ''}"
        return f"{n} ({self.peak_per_hour:,.0f} per hour at peak)"

    def merged(self, other: Totals) -> Totals:
        """Both totals added (their windows must not overlap: the caller counts each window once).

        Totals by source add source by source: a source's count is never added to another source's. The peak
        severity is the higher of the two (:func:`worst`).
        """
        peak_severity = worst((self.peak_severity, other.peak_severity))
        if self.by_source is not None or other.by_source is not None:
            mine = self.by_source or {}
            theirs = other.by_source or {}
            parts = {
                s: mine[s].merged(theirs[s]) if s in mine and s in theirs else (mine.get(s) or theirs[s])
                for s in set(mine) | set(theirs)
            }
            return Totals.of_sources(parts).model_copy(update={"peak_severity": peak_severity})
        peaks = [p for p in (self.peak_per_hour, other.peak_per_hour) if p is not None]
        start = min(self.period_start, other.period_start)
        end = max(self.period_end, other.period_end)
        base = None
        if self.share_base is not None and other.share_base is not None:
            base = self.share_base + other.share_base
        margin = None
        if self.margin is not None or other.margin is not None:  # independent estimates: variances add
            margin = math.ceil(math.hypot(self.margin or 0, other.margin or 0))
        by_cause = None
        if self.by_cause is not None or other.by_cause is not None:
            by_cause = {cause: dict(how) for cause, how in (self.by_cause or {}).items()}
            for cause, how in (other.by_cause or {}).items():
                into = by_cause.setdefault(cause, {})
                for decided_by, n in how.items():
                    into[decided_by] = into.get(decided_by, 0) + n
        b_first = other.first_seen < self.first_seen
        earlier, later = (other, self) if b_first else (self, other)
        pause = (later.first_seen - earlier.last_seen).total_seconds()
        return Totals(
            # a scan both count (one crossing the boundary between their windows) is counted once
            count=self.count + other.count - repeated_scans(self.figures, other.figures, b_first, pause),
            windows=self.windows + other.windows,
            first_seen=min(self.first_seen, other.first_seen),
            last_seen=max(self.last_seen, other.last_seen),
            peak_per_hour=max(peaks) if peaks else None,
            period_start=start,
            period_end=end,
            share_base=base,
            margin=margin,
            peak_severity=peak_severity,
            by_cause=by_cause,
            figures=merge_figures(self.figures, other.figures, b_first, pause),
        )

    def over(self, period_start: datetime, period_end: datetime) -> Totals:
        """The same sums, stated for a wider period (the input, the report's week); peak dropped below an hour."""
        out = self.model_copy(update={"period_start": utc(period_start), "period_end": utc(period_end)})
        if out.observed_seconds < HOUR:
            out = out.model_copy(update={"peak_per_hour": None})
        return out


def worst(severities: Iterable[Severity | None]) -> Severity | None:
    """The highest of ``severities`` (None when there is none)."""
    known = [s for s in severities if s is not None]
    return max(known, key=lambda s: s.rank) if known else None


#: Which source's counts a finding several sources saw states at its top level: CloudWatch counts every request
#: DynamoDB throttled, CloudTrail the calls its data events logged (a capture may be partial), Contributor Insights
#: approximates.
SOURCE_PRECEDENCE = ("cloudwatch", "cloudtrail", "contributor_insights")


def preferred_source(sources: Iterable[str]) -> str:
    """The first of ``sources`` in :data:`SOURCE_PRECEDENCE` (unknown sources last, by name)."""
    ranked = sorted(
        sources, key=lambda s: (SOURCE_PRECEDENCE.index(s) if s in SOURCE_PRECEDENCE else len(SOURCE_PRECEDENCE), s)
    )
    if not ranked:
        raise ValueError("no source")
    return ranked[0]


#: Evidence field of a story, one finding per problem and entity whatever the detectors and sources that saw it: its
#: facts, worst first, each ``{"kind", "source", "severity", "first_seen", "last_seen", ...its own numbers}``
#: (docs/contract.md; :mod:`auditor.detectors.findings.item_story`, :mod:`auditor.detectors.findings.key_story`).
FACTS = "facts"


def fact_views(finding: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A finding (as JSON) seen as each of its facts, each a finding of the fact's kind and severity whose evidence
    is the story's with the fact's numbers over it; a finding that is no story, as itself. For readers that look for
    one kind of problem (a benchmark's scorer, the data-model review)."""
    evidence = finding.get("evidence")
    told = evidence.get(FACTS) if isinstance(evidence, Mapping) else None
    if not isinstance(told, list) or not told or not isinstance(evidence, Mapping):
        return [dict(finding)]
    return [
        {**finding, "kind": fact["kind"], "severity": fact["severity"], "evidence": {**evidence, **fact}}
        for fact in told
        if isinstance(fact, Mapping) and "kind" in fact and "severity" in fact
    ]


def window_totals(
    kind: FindingKind,
    evidence: dict[str, Any],
    first_seen: datetime,
    last_seen: datetime,
    period_start: datetime,
    period_end: datetime,
    windows: int = 1,
) -> Totals:
    """Totals of one sighting over the window(s) it was found in."""
    count = measure(kind, evidence)
    seconds = (utc(period_end) - utc(period_start)).total_seconds()
    peak = None
    if kind in RATE_KINDS and seconds > 0 and windows == 1:
        peak = round(count * HOUR / seconds, 3)
    return Totals(
        count=count,
        windows=windows,
        first_seen=first_seen,
        last_seen=last_seen,
        peak_per_hour=peak,
        period_start=period_start,
        period_end=period_end,
        share_base=measure_base(kind, evidence),
        figures=figures_of(kind, evidence),
    )


class Finding(FrozenModel):
    """One problem on one resource, with evidence and a concrete fix (docs/contract.md)."""

    id: str
    kind: FindingKind
    severity: Severity
    account: str | None = None
    region: str | None = None
    table: str
    index: str | None = None
    title: str
    summary: str
    recommendation: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    first_seen: datetime
    last_seen: datetime
    #: Period totals (None: stored by a version without totals; they start from the next sighting).
    totals: Totals | None = None

    @field_validator("first_seen", "last_seen")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        value = utc(value)
        if not 1970 <= value.year <= 2999:  # week and period arithmetic must stay within datetime's range
            raise ValueError(f"{value.isoformat()} is not a plausible time (years 1970 to 2999)")
        return value

    @field_serializer("first_seen", "last_seen")
    def _ser_time(self, value: datetime) -> str:
        return isoformat_z(value)

    def sighting_totals(self) -> Totals:
        """Its totals, or (none yet) the totals of this sighting alone, over its own first..last seen; either way
        with this sighting's severity as their ``peak_severity`` (a sighting is one window, judged as it stands, a
        correlation's raise included)."""
        if self.totals is not None:
            return self.totals.model_copy(update={"peak_severity": self.severity})
        seconds = self.evidence.get("window_seconds")
        end = self.last_seen
        if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0:
            end = max(end, self.first_seen + timedelta(seconds=seconds))
        totals = window_totals(self.kind, self.evidence, self.first_seen, self.last_seen, self.first_seen, end)
        return totals.model_copy(update={"peak_severity": self.severity})

    def over_period(self, totals: Totals | None) -> Finding:
        """This finding as stated for a period: ``totals`` (the period's, None for none) and, when they know it,
        the period's severity, ``totals.peak_severity``.

        **The period's severity is the highest severity any window of the period reached.** Every path judges one
        window at a time, with the detectors' own thresholds: the service's window evaluator (one scheduled
        evaluation per closed window), ``analyze-trail``'s per-window pass (:func:`auditor.engine.period_totals`,
        windows on the records' event times, the service's window length) and the replay. Their sightings' totals
        merge (:meth:`Totals.merged`: counts add, ``peak_severity`` keeps the highest), so the findings file and
        report of a week, a replay and ``analyze-trail`` on the same records state the same severity.

        Why not judge the whole period at once (one evaluation of the week, or of the whole input)? The detectors'
        thresholds are rates and shares within a window (a partition's per-second limit, throttled calls per
        evaluated window, a key's share of the traffic around it): summed over a longer period they grow with its
        length (125 throttled calls in 3 hours, never more than 17 in 15 minutes, would be "high" like 125 in one
        window) or dilute (a burst averaged over a week), and the service, which keeps only each window's
        sightings, could not compute them. The highest window is what the service already alerted on ("new" or
        "worsened" at that severity), so the report never states less than was announced.
        """
        update: dict[str, Any] = {"totals": totals}
        if totals is not None and totals.peak_severity is not None:
            update["severity"] = totals.peak_severity
        return self.model_copy(update=update).with_totals(totals)

    def sighted(self, totals: Totals) -> Finding:
        """This finding first and last seen when its sightings' ``totals`` were: the first and last window it was
        found in, as the service's lifecycle keeps a stored finding's first and last sighting (``analyze-trail``'s
        findings of the whole input, :func:`auditor.engine.period_totals`, so that a replay of the same records
        states the same times). Its text and every renderer read ``first_seen``/``last_seen``."""
        return self.model_copy(update={"first_seen": totals.first_seen, "last_seen": totals.last_seen})

    def with_totals(self, totals: Totals | None) -> Finding:
        """This finding with ``totals`` and **its evidence stated for their period**: counts summed over the same
        windows, peaks of the busiest window (named in ``evidence.sub_periods``), shares and rates of the period's
        sums (:func:`auditor.models.period_evidence.period_evidence`). Totals without figures (stored before they
        existed, or of a kind without them) leave the evidence as it is."""
        if totals is None or totals.figures is None:
            return self.model_copy(update={"totals": totals})
        evidence = period_evidence(
            self.kind.value, self.evidence, totals.figures, totals.observed_seconds, totals.windows
        )
        return self.model_copy(update={"totals": totals, "evidence": evidence})

    @classmethod
    def create(
        cls,
        kind: FindingKind,
        *,
        account: str | None,
        region: str | None,
        table: str,
        index: str | None = None,
        discriminator: Any = None,
        severity: Severity,
        title: str,
        summary: str,
        recommendation: str,
        evidence: dict[str, Any],
        first_seen: datetime,
        last_seen: datetime,
    ) -> Finding:
        """A finding whose ``id`` is the stable :func:`fingerprint` of its kind, resource and ``discriminator``."""
        return cls(
            id=fingerprint(kind, account, region, table, index, discriminator),
            kind=kind,
            severity=severity,
            account=account,
            region=region,
            table=table,
            index=index,
            title=title,
            summary=summary,
            recommendation=recommendation,
            evidence=evidence,
            first_seen=first_seen,
            last_seen=last_seen,
        )

    def missing_evidence(self) -> list[str]:
        """Evidence fields docs/contract.md requires for this kind that are absent."""
        return [f for f in REQUIRED_EVIDENCE[self.kind] if f not in self.evidence]

    def sort_key(self) -> tuple[int, str, str, str]:
        """Most severe first, then by table, kind and id (deterministic output order)."""
        return (-self.severity.rank, self.table, self.kind.value, self.id)

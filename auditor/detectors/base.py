"""The detector abstraction: metadata, per-detector configuration, inputs and the finding factory.

Every detector is one pure function ``detect(data, config) -> list[Finding]`` declared with
:func:`auditor.detectors.registry.register`, which wraps it in a :class:`Detector` (generic over its input type and
config model) and records it in the one catalogue. The input types are below: a CloudTrail traffic window, a
table's CloudWatch metrics, Contributor Insights reports, a stream observation, an item's size history, a billing
result, or existing findings.

Detectors are pure: no boto3, no clock, no environment. Time reaches them only through the data they are given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Generic, Protocol, TypeVar

from pydantic import Field, HttpUrl, field_validator

from auditor.kernel.aggregates.window import TableWindow
from auditor.models.base import FrozenModel
from auditor.models.billing import BillingResult
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.models.inventory import TableProfile
from auditor.models.metrics import InsightReport, TableMetrics
from auditor.models.stream import ItemSizeObservation

__all__ = [
    "Amount",
    "BillingResultInput",
    "Count",
    "Detector",
    "DetectorConfig",
    "DetectorInput",
    "DetectorMetadata",
    "HistoryInput",
    "InsightsInput",
    "Limit",
    "MetricsInput",
    "ObservationInput",
    "Place",
    "Share",
    "Table",
    "epoch_to_dt",
    "make_finding",
    "per_second",
]


class DetectorInput(StrEnum):
    """What a detector reads (one input type each)."""

    #: :class:`~auditor.kernel.aggregates.window.TableWindow`: CloudTrail traffic of one table over the evaluated
    #: windows.
    TRAIL_WINDOW = "trail_window"
    #: :class:`MetricsInput`: a table's inventory profile and CloudWatch metrics over the audited window.
    TABLE_METRICS = "table_metrics"
    #: :class:`MetricsInput`: a table's profile and its daily activity (consumption, TTL deletions) over a long window.
    TABLE_ACTIVITY = "table_activity"
    #: :class:`InsightsInput`: Contributor Insights reports.
    CONTRIBUTOR_INSIGHTS = "contributor_insights"
    #: :class:`ObservationInput`: one item's size from one stream record.
    STREAM_OBSERVATION = "stream_observation"
    #: :class:`HistoryInput`: one item's size history (stream observations over time).
    ITEM_HISTORY = "item_history"
    #: :class:`BillingResultInput`: a table's billing simulation result.
    BILLING_RESULT = "billing_result"
    #: ``Sequence[Finding]``: findings already made (correlation of two sources).
    FINDINGS = "findings"
    #: :class:`~auditor.detectors.capture.capture_cap.CaptureCapInput`: the capture plan's capped tables.
    CAPTURE_PLAN = "capture_plan"


class DetectorMetadata(FrozenModel):
    """What a detector looks for, why it matters and how to fix it."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: FindingKind
    default_severity: Severity
    title: str = Field(max_length=80)
    risk: str
    remediation: str
    docs_url: HttpUrl

    @field_validator("title")
    @classmethod
    def _no_ensure(cls, value: str) -> str:
        if value.lower().startswith("ensure"):
            raise ValueError("titles state the problem; they do not start with 'Ensure'")
        return value


#: The types of a detector's numeric tunables: a limit (a divisor, such as a partition's units per second) is more
#: than 0; a count, threshold, duration or price is never negative; a share is a fraction from 0 to 1.
Limit = Annotated[float, Field(gt=0)]
Count = Annotated[int, Field(ge=0)]
Amount = Annotated[float, Field(ge=0)]
Share = Annotated[float, Field(ge=0, le=1)]


class DetectorConfig(FrozenModel):
    """Base of every detector's tunables (unknown keys are an error)."""

    enabled: bool = True


# ------------------------------------------------------------------------------------------------------ inputs


@dataclass(frozen=True, slots=True)
class MetricsInput:
    """A table's inventory profile and its CloudWatch metrics over the audited window."""

    profile: TableProfile
    metrics: TableMetrics


@dataclass(frozen=True, slots=True)
class InsightsInput:
    """Contributor Insights reports, with the audited tables' profiles by table name."""

    reports: Sequence[InsightReport]
    profiles: Mapping[str, TableProfile]


@dataclass(frozen=True, slots=True)
class ObservationInput:
    """One item-size observation; ``first_seen`` is when the item was first seen large (epoch seconds), if known."""

    observation: ItemSizeObservation
    first_seen: float | None = None


@dataclass(frozen=True, slots=True)
class HistoryInput:
    """One item's size history (``(epoch seconds, bytes)`` samples, the observation included) and the attribute
    that drives its growth, when known."""

    observation: ItemSizeObservation
    samples: Sequence[tuple[float, float]]
    driver: str | None = None


@dataclass(frozen=True, slots=True)
class BillingResultInput:
    """A table's billing result, with the account the table belongs to (the result does not carry it)."""

    result: BillingResult
    account: str | None = None


C = TypeVar("C", bound=DetectorConfig)
I = TypeVar("I")  # noqa: E741 (the input type)


@dataclass(frozen=True, slots=True)
class Detector(Generic[I, C]):
    """A registered detector: metadata, config model, input and the pure detection function.

    Calling it (or :meth:`run`) resolves the config (defaults when none is given), returns nothing when the config
    disables it (a detector over findings then returns them unchanged), and otherwise calls ``detect``.
    """

    metadata: DetectorMetadata
    config_model: type[C]
    detect: Callable[[I, C], list[Finding]]
    input: DetectorInput = DetectorInput.TRAIL_WINDOW
    #: The module that declares it (``auditor.detectors.trail.hot_key``).
    module: str = ""

    @property
    def id(self) -> str:
        return self.metadata.id

    def config(self, config: DetectorConfig | Mapping[str, Any] | None = None) -> C:
        """``config`` as this detector's config model: defaults for None, validation for a mapping."""
        if isinstance(config, self.config_model):
            return config
        if isinstance(config, Mapping):
            return self.config_model.model_validate(dict(config))
        return self.config_model()

    def run(self, data: I, config: DetectorConfig | Mapping[str, Any] | None = None) -> list[Finding]:
        """Evaluate ``data`` with ``config`` (or the defaults); a disabled detector finds nothing."""
        cfg = self.config(config)
        if not cfg.enabled:
            # A detector over findings (correlation) passes them through unchanged; the others find nothing.
            return list(data) if self.input is DetectorInput.FINDINGS else []  # type: ignore[call-overload]
        return self.detect(data, cfg)

    def __call__(self, data: I, config: DetectorConfig | Mapping[str, Any] | None = None) -> list[Finding]:
        return self.run(data, config)


# ---------------------------------------------------------------------------------------------- the factory


class Place(Protocol):
    """Where a finding is: anything with an account, a region and a table name."""

    @property
    def account(self) -> str | None: ...

    @property
    def region(self) -> str | None: ...

    @property
    def table(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Table:
    """A :class:`Place` given by its parts."""

    account: str | None
    region: str | None
    table: str


def epoch_to_dt(epoch: float) -> datetime:
    """Seconds since the epoch as an aware UTC datetime."""
    return datetime.fromtimestamp(epoch, tz=UTC)


def _when(value: float | datetime) -> datetime:
    return value if isinstance(value, datetime) else epoch_to_dt(value)


def make_finding(
    meta: DetectorMetadata,
    where: Place | TableProfile,
    *,
    severity: Severity,
    discriminator: Any,
    title: str,
    summary: str,
    recommendation: str,
    evidence: dict[str, Any],
    index: str | None = None,
    first: float | datetime | None = None,
    last: float | datetime | None = None,
) -> Finding:
    """The one finding factory: a finding of ``meta``'s kind on ``where``'s table with a stable id.

    ``where`` is a traffic window, a table profile, a stream observation or a :class:`Table`. ``first``/``last``
    (epoch seconds or datetimes) default to a traffic window's first and last record; other places must give them.
    """
    table = where.name if isinstance(where, TableProfile) else where.table
    if first is None or last is None:
        if not isinstance(where, TableWindow):
            raise ValueError("first and last are required unless the place is a traffic window")
        first = where.first_time if first is None else first
        last = where.last_time if last is None else last
    return Finding.create(
        meta.kind,
        account=where.account,
        region=where.region,
        table=table,
        index=index,
        discriminator=discriminator,
        severity=severity,
        title=title,
        summary=summary,
        recommendation=recommendation,
        evidence=evidence,
        first_seen=_when(first),
        last_seen=_when(last),
    )


def tiered_severity(value: float, high: float, medium: float) -> Severity:
    """High from ``high``, medium from ``medium``, low below."""
    if value >= high:
        return Severity.HIGH
    if value >= medium:
        return Severity.MEDIUM
    return Severity.LOW


def per_second(count: float, seconds: float) -> float:
    """A rate, guarding against empty windows."""
    return count / seconds if seconds > 0 else 0.0

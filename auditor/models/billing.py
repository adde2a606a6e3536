"""Input and output models of ``ddb-audit billing`` (docs/contract.md), and the decision's tunables.

The input is one table's capacity history (``null`` inside a list is a missing datapoint); ``BillingResult``
carries every field of the contract and adds more after them. The optional fields and the decision's rules are in
docs/billing-simulation.md.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

import orjson
from pydantic import Field, ValidationError, field_validator, model_validator

from auditor.exceptions import InputError
from auditor.models.base import FrozenModel
from auditor.models.finding import isoformat_z, utc

BillingMode = Literal["PAY_PER_REQUEST", "PROVISIONED"]
TableClassName = Literal["STANDARD", "STANDARD_INFREQUENT_ACCESS"]
Simulation = Literal["aws", "evaluator"]
Action = Literal["keep", "switch_to_on_demand", "switch_to_provisioned", "adjust_provisioned"]

HOURS_PER_MONTH = 730.0
GIB = 2**30


#: A capacity value: a JSON number (strict: ``true`` or ``"5"`` are errors, not 1 and 5) or null.
Capacity = Annotated[float, Field(strict=True)]
#: Above any capacity DynamoDB can report (and far below where sums of a month of minutes overflow a float).
MAX_CAPACITY_VALUE = 1e15
#: CloudWatch keeps 1-hour datapoints for 455 days (15 months): a longer window cannot come from it, and the
#: simulation's per-minute memory stays bounded whatever ``period_seconds`` stretches the input over.
MAX_WINDOW_DAYS = 455


def _check_values(values: list[float | None] | None, name: str) -> list[float | None] | None:
    if values is None:
        return None
    for n, v in enumerate(values):
        if v is not None and (not math.isfinite(v) or not 0 <= v <= MAX_CAPACITY_VALUE):
            raise ValueError(f"{name}[{n}] must be a finite number from 0 to {MAX_CAPACITY_VALUE:g} or null, got {v!r}")
    return values


class CurrentScaling(FrozenModel):
    """A dimension's auto-scaling settings in force (Application Auto Scaling), when known."""

    min_capacity: int = Field(ge=0)
    max_capacity: int = Field(ge=0)
    #: The target-tracking policy's target value; None when the scalable target has no such policy.
    target_utilization: float | None = None


class SeriesInput(FrozenModel):
    """The capacity history of the table (``index`` null) or of one GSI."""

    index: str | None = None
    consumed_read: list[Capacity | None]
    consumed_write: list[Capacity | None]
    provisioned_read: list[Capacity | None] | None = None
    provisioned_write: list[Capacity | None] | None = None
    #: The auto-scaling settings in force per dimension (``read``/``write``), when known (``audit`` fills it).
    auto_scaling: dict[Literal["read", "write"], CurrentScaling] | None = None

    @model_validator(mode="after")
    def _valid(self) -> SeriesInput:
        for name in ("consumed_read", "consumed_write", "provisioned_read", "provisioned_write"):
            _check_values(getattr(self, name), name)
        for dim in ("read", "write"):
            prov = getattr(self, f"provisioned_{dim}")
            consumed = getattr(self, f"consumed_{dim}")
            if prov is not None and len(prov) != len(consumed):
                raise ValueError(
                    f"provisioned_{dim} has {len(prov)} values but consumed_{dim} has {len(consumed)} "
                    "(one value per period, same length)"
                )
        return self


class BillingInput(FrozenModel):
    """One table's capacity history (docs/contract.md ``ddb-audit billing`` input)."""

    table: str = Field(min_length=1)
    region: str = Field(default="us-east-1", min_length=1)
    table_class: TableClassName = "STANDARD"
    billing_mode: BillingMode
    start: datetime
    period_seconds: int = Field(default=60, ge=60, le=86_400)
    series: list[SeriesInput] = Field(min_length=1)
    table_size_bytes: int | None = Field(default=None, ge=0)

    @field_validator("start")
    @classmethod
    def _start_utc_minute(cls, value: datetime) -> datetime:
        value = utc(value)
        if not 1970 <= value.year <= 2999:  # CloudWatch data; also keeps the window's end a valid datetime
            raise ValueError(f"start {value.isoformat()} is not a plausible time (years 1970 to 2999)")
        if value.second or value.microsecond:
            raise ValueError("start must fall on a whole minute (CloudWatch period boundaries)")
        return value

    @field_validator("period_seconds")
    @classmethod
    def _whole_minutes(cls, value: int) -> int:
        if value % 60:
            raise ValueError("period_seconds must be a multiple of 60")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> BillingInput:
        seen: set[str | None] = set()
        for n, s in enumerate(self.series):
            if s.index in seen:
                raise ValueError(f"series[{n}]: index {s.index!r} appears twice")
            seen.add(s.index)
            if self.billing_mode == "PROVISIONED" and (s.provisioned_read is None or s.provisioned_write is None):
                raise ValueError(
                    f"series[{n}]: provisioned_read and provisioned_write are required when billing_mode is PROVISIONED"
                )
        if not any(s.consumed_read or s.consumed_write for s in self.series):
            raise ValueError("series hold no datapoints")
        if self.minutes > MAX_WINDOW_DAYS * 1440:
            raise ValueError(
                f"the series cover {self.minutes / 1440:,.0f} days at {self.period_seconds}-second periods; at most "
                f"{MAX_WINDOW_DAYS} days (CloudWatch's retention) can be simulated"
            )
        return self

    @property
    def periods(self) -> int:
        """Periods in the window: the longest list of any series."""
        return max(max(len(s.consumed_read), len(s.consumed_write)) for s in self.series)

    @property
    def minutes(self) -> int:
        """Minutes in the window."""
        return self.periods * (self.period_seconds // 60)

    @property
    def end(self) -> datetime:
        """End of the window (exclusive)."""
        return self.start + timedelta(minutes=self.minutes)

    @classmethod
    def from_json(cls, data: bytes | str, source: str) -> BillingInput:
        """Parse and validate; problems raise :class:`InputError` naming ``source`` and the location."""
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{source}: not valid JSON: {exc}") from exc
        return cls.from_document(doc, source)

    @classmethod
    def from_document(cls, doc: Any, source: str) -> BillingInput:
        """Validate an already parsed document; problems raise :class:`InputError` naming ``source``."""
        if not isinstance(doc, dict):
            raise InputError(f"{source}: expected a JSON object with table, billing_mode, start and series")
        try:
            return cls.model_validate(doc)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
            msg = str(err["msg"]).removeprefix("Value error, ")
            raise InputError(f"{source}: {loc or '(top level)'}: {msg}") from exc


# --------------------------------------------------------------------------------------------------- config


class DimensionSettings(FrozenModel):
    """Auto-scaling settings of one dimension (reads or writes) to simulate; None keeps the shared default."""

    #: Target utilisation (percent); default: ``BillingConfig.target_utilization``.
    target_utilization: float | None = Field(default=None, ge=20.0, le=90.0)
    #: Minimum capacity; default: searched (``aws``) or ``BillingConfig.min_capacity`` (``evaluator``).
    min_capacity: float | None = Field(default=None, ge=1.0)
    #: Maximum capacity; default: twice what the peak minute needed (``aws``) or the evaluator's maximum.
    max_capacity: float | None = Field(default=None, ge=1.0)

    @model_validator(mode="after")
    def _ordered(self) -> DimensionSettings:
        if self.min_capacity is not None and self.max_capacity is not None and self.min_capacity > self.max_capacity:
            raise ValueError(f"min_capacity {self.min_capacity:g} is above max_capacity {self.max_capacity:g}")
        return self


class BillingConfig(FrozenModel):
    """Tunables of the decision (all optional)."""

    #: Auto-scaling target utilisation (percent) simulated and recommended.
    target_utilization: float = Field(default=70.0, ge=20.0, le=90.0)
    #: Lowest and highest minimum capacity the ``aws`` simulation may recommend; maximum capacity per table or GSI.
    min_capacity: float = Field(default=1.0, ge=1.0)
    max_capacity: float = Field(default=40_000.0, ge=1.0)
    #: The archived evaluator's own maximum (its CLI default) for ``--simulation evaluator``.
    evaluator_max_capacity: float = Field(default=80_000.0, ge=1.0)
    #: Recommend a change only when it saves at least this share of the current monthly cost ...
    margin: float = Field(default=0.10, ge=0.0, lt=1.0)
    #: ... and at least this many dollars per month.
    min_monthly_savings: float = Field(default=1.0, ge=0.0)
    #: Provisioned is only recommended when the simulated throttling stays at or below this share of the demand.
    max_throttled_share: float = Field(default=0.001, ge=0.0, le=1.0)
    #: Try several minimum capacities (the load's percentiles) and keep the cheapest acceptable one (``aws``).
    search_min_capacity: bool = True
    #: Minutes from the alarm firing to the new capacity in force (``aws``).
    reaction_minutes: int = Field(default=2, ge=0, le=60)
    #: The evaluator's "Provisioned_Modify" threshold: current provisioned cost above simulated by this share.
    modify_threshold: float = Field(default=0.15, ge=0.0, lt=1.0)
    #: Days of data that give full confidence (CloudWatch keeps 1-minute data for 15 days).
    full_confidence_days: float = Field(default=14.0, gt=0.0)
    #: Per-dimension target, minimum and maximum (each None: the defaults above).
    read: DimensionSettings = Field(default_factory=DimensionSettings)
    write: DimensionSettings = Field(default_factory=DimensionSettings)

    def target(self, dim: Literal["read", "write"]) -> float:
        """The target utilisation simulated for ``dim``."""
        own = (self.read if dim == "read" else self.write).target_utilization
        return self.target_utilization if own is None else own

    def settings(self, dim: Literal["read", "write"]) -> DimensionSettings:
        """The per-dimension settings of ``dim``."""
        return self.read if dim == "read" else self.write


# --------------------------------------------------------------------------------------------------- result


class DimensionResult(FrozenModel):
    """Window totals of one dimension (SPEC fields first; USD, not rounded)."""

    on_demand_cost: float
    provisioned_cost_simulated: float
    provisioned_cost_current: float
    recommended_mode: str
    # Additions.
    consumed_units: float
    peak_units_per_second: float
    simulated_min_capacity: float
    simulated_max_capacity: float
    throttled_units: float | None = None
    throttled_share: float | None = None


class SeriesResult(FrozenModel):
    """The table (``index`` null) or one GSI."""

    index: str | None
    read: DimensionResult
    write: DimensionResult


class CapacitySetting(FrozenModel):
    """Auto-scaling settings to apply to one dimension, next to those in force."""

    target_utilization: float
    min_capacity: int
    max_capacity: int
    #: The settings in force (Application Auto Scaling), when the input has them.
    current: CurrentScaling | None = None
    #: True when the settings in force are the ones simulated (None when they are unknown).
    already_optimal: bool | None = None

    def describe(self, name: str) -> str:
        """``reads 5-200 at 70%``, with the settings in force when known (``now ...``, ``already optimal``)."""
        text = f"{name} {self.min_capacity}-{self.max_capacity} at {self.target_utilization:g}%"
        if self.current is not None:
            now = self.current
            target = "no target tracking" if now.target_utilization is None else f"{now.target_utilization:g}%"
            text += f" (now {now.min_capacity}-{now.max_capacity} at {target}"
            text += ", already optimal)" if self.already_optimal else ")"
        return text


class CapacityRecommendation(FrozenModel):
    """Auto-scaling settings for the table or one GSI."""

    index: str | None
    read: CapacitySetting
    write: CapacitySetting


class Throttling(FrozenModel):
    """Throttling of the simulated provisioned capacity (only the ``aws`` simulation models it)."""

    modelled: bool
    throttled_units: float | None = None
    throttled_share: float | None = None
    acceptable: bool = True
    max_share: float


class TableClassHint(FrozenModel):
    """Standard vs Standard-IA for the recommended billing mode (monthly USD)."""

    current_class: TableClassName
    recommended_class: TableClassName
    storage_gb: float
    storage_share: float
    monthly_cost_standard: float
    monthly_cost_standard_ia: float
    monthly_savings: float


class ReservedCapacityTerm(FrozenModel):
    """Reserved capacity worth owning for one dimension and term."""

    dimension: Literal["read", "write"]
    years: int
    units: int
    upfront: float
    monthly_savings: float


class ReservedCapacityNote(FrozenModel):
    """Reserved capacity for a steady provisioned table (Standard class only)."""

    note: str
    terms: list[ReservedCapacityTerm]


class BillingResult(FrozenModel):
    """docs/contract.md ``BillingResult``: one decision per table, plus per-series, per-dimension window totals."""

    table: str
    current_mode: BillingMode
    recommended_mode: BillingMode
    monthly_cost_current: float
    monthly_cost_recommended: float
    monthly_savings: float
    days_analyzed: float
    simulation: Simulation
    series: list[SeriesResult]
    # Additions.
    region: str
    table_class: TableClassName
    window_start: datetime
    window_end: datetime
    action: Action
    reason: str
    monthly_cost_on_demand: float
    monthly_cost_provisioned_simulated: float
    monthly_cost_provisioned_current: float | None
    confidence: float
    confidence_label: Literal["high", "medium", "low"]
    coverage: float
    throttling: Throttling
    capacity: list[CapacityRecommendation]
    pricing: dict[str, Any]
    table_class_hint: TableClassHint | None = None
    reserved_capacity: ReservedCapacityNote | None = None
    notes: list[str] = Field(default_factory=list)
    #: The simulation's rules, each marked documented or assumed, with the hourly-billing bound (``aws``).
    assumptions: list[str] = Field(default_factory=list)
    #: Simulated provisioned cost per month if each clock hour were billed at its highest capacity (``aws``).
    monthly_cost_provisioned_simulated_hourly_peak: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, SPEC field order first; times as ISO-8601 UTC with ``Z``."""
        doc = self.model_dump(mode="json")
        doc["window_start"] = isoformat_z(self.window_start)
        doc["window_end"] = isoformat_z(self.window_end)
        return doc

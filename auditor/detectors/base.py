"""Detector declarations: metadata, per-detector configuration and the finding factory.

Detectors are pure: they take aggregates and a config and return findings. No boto3, no clock, no
environment. Time reaches them only through the aggregates they are given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator

from auditor.aggregates.window import TableWindow
from auditor.models.finding import Finding, FindingKind, Severity


class DetectorMetadata(BaseModel):
    """What a detector looks for, why it matters and how to fix it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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


class DetectorConfig(BaseModel):
    """Base of every detector's tunables (unknown keys are an error)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True


C = TypeVar("C", bound=DetectorConfig)

DetectFn = Callable[[TableWindow, C], list[Finding]]


@dataclass(frozen=True, slots=True)
class Detector(Generic[C]):
    """A registered detector: metadata, config model and the pure detection function."""

    metadata: DetectorMetadata
    config_model: type[C]
    detect: DetectFn[C]

    def run(self, aggregate: TableWindow, config: DetectorConfig | None = None) -> list[Finding]:
        """Evaluate one aggregate with ``config`` (or the defaults)."""
        cfg = config if isinstance(config, self.config_model) else self.config_model()
        if not cfg.enabled:
            return []
        return self.detect(aggregate, cfg)


def epoch_to_dt(epoch: float) -> datetime:
    """Seconds since the epoch as an aware UTC datetime."""
    return datetime.fromtimestamp(epoch, tz=UTC)


def make_finding(
    meta: DetectorMetadata,
    agg: TableWindow,
    *,
    severity: Severity,
    discriminator: Any,
    title: str,
    summary: str,
    recommendation: str,
    evidence: dict[str, Any],
    index: str | None = None,
    first: float | None = None,
    last: float | None = None,
) -> Finding:
    """Build a finding on ``agg``'s table with a stable id."""
    return Finding.create(
        meta.kind,
        account=agg.account,
        region=agg.region,
        table=agg.table,
        index=index,
        discriminator=discriminator,
        severity=severity,
        title=title,
        summary=summary,
        recommendation=recommendation,
        evidence=evidence,
        first_seen=epoch_to_dt(first if first is not None else agg.first_time),
        last_seen=epoch_to_dt(last if last is not None else agg.last_time),
    )


def per_second(count: float, seconds: float) -> float:
    """A rate, guarding against empty windows."""
    return count / seconds if seconds > 0 else 0.0

"""Configuration.

``Settings`` is the one model that reads the process environment (Lambda and CLI alike); nothing else
in the code base touches ``os.environ``. ``AnalysisConfig`` is the analysis tuning document (the CLI's
``--config FILE``): window size, key schema hints and per-detector thresholds. Its ``service`` section holds the
deployed stack's advanced settings (:data:`DOCUMENT_SETTINGS`); an environment variable of the same name wins.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from auditor.detectors.settings import DetectorSettings
from auditor.exceptions import ConfigurationError, InputError
from auditor.models.base import read_json_file
from auditor.review.model import ReviewConfig


class Settings(BaseModel):
    """Process settings from environment variables (UPPER_SNAKE names)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    #: The ``service`` dimension of the auditor's health metrics (template.yaml: the stack name, so two stacks in one
    #: account keep their own numbers; Powertools reads the same variable).
    powertools_service_name: str = Field(default="ddb-traffic-auditor", min_length=1, max_length=255)
    #: Where the CLI's ``analyze-trail`` looks for an analysis config when ``--config`` is not given.
    audit_config: Path | None = None

    # ---- the deployed service (template.yaml sets these on every function) ----
    #: The state table (windows, processed objects, findings, outbox).
    state_table_name: str | None = None
    #: The findings topic (SNS).
    findings_topic_arn: str | None = None
    #: Secrets Manager secret holding the Slack incoming-webhook URL (``{"webhook_url": ...}`` or the bare URL).
    slack_secret_arn: str | None = None
    #: Bucket for weekly reports.
    reports_bucket: str | None = None
    #: Bucket for trail objects' event fingerprints (template.yaml: the reports bucket, under ``fingerprints/``); unset:
    #: no duplicate check across trail objects (an event delivered in two objects then counts twice).
    fingerprints_bucket: str | None = None
    #: Analysis tuning as inline JSON (the same document as ``--config FILE``); empty means defaults.
    analysis_config_json: str | None = None
    #: A window is evaluated once its end is this far in the past (CloudTrail delivers within ~15 minutes).
    evaluation_delay_seconds: int = Field(default=1200, ge=0, le=86_400)
    #: A finding not seen again for this long is resolved.
    resolve_after_seconds: int = Field(default=86_400, ge=900)
    #: Publish resolved findings too (new and worsened ones are always published).
    publish_resolved: bool = False
    #: Suppress/snooze rules as a JSON list (docs/alerts.md, "Suppressing and snoozing findings").
    suppress_rules_json: str | None = None
    #: Redact key values in messages that leave the account (Slack).
    redact_keys: bool = True
    #: Slack webhook: seconds per attempt and attempts in all.
    slack_timeout_seconds: float = Field(default=5.0, gt=0, le=60)
    slack_max_attempts: int = Field(default=3, ge=1, le=10)
    #: Slack: the least severe finding a run digest lists (SNS's subscription filter drops digests below it too).
    slack_min_severity: Literal["critical", "high", "medium", "low", "info"] = "medium"
    #: How long (days) window contributions and processed-object marks are kept (DynamoDB TTL).
    state_retention_days: int = Field(default=14, ge=1, le=400)
    #: How long (days) resolved findings are kept.
    finding_retention_days: int = Field(default=90, ge=7, le=3650)
    #: Stream item-size watcher: keep a per-key size history only for items at least this large (bytes).
    item_size_history_floor_bytes: int = Field(default=65_536, ge=0, le=409_600)
    #: Stream item-size watcher: report ``large_item`` from this share of the 400 KB limit (percent).
    large_item_threshold_pct: float = Field(default=75.0, gt=0, le=100)
    #: Metrics audit (hourly): audit only these tables (comma-separated names; empty: every table).
    audit_tables: str | None = None
    #: Metrics audit: audit only tables whose name starts with this prefix.
    audit_table_prefix: str | None = None
    #: Metrics audit: audit only tables tagged ``KEY=VALUE``.
    audit_table_tag: str | None = None
    #: Metrics audit: how much CloudWatch history each run reads (seconds; ``unused_index`` needs a day).
    audit_lookback_seconds: int = Field(default=86_400, ge=3_600, le=1_296_000)
    #: Metrics audit: days of 1-minute capacity the daily billing decision reads (CloudWatch keeps 15 days of them).
    billing_lookback_days: int = Field(default=14, ge=1, le=15)
    #: Metrics audit: billing is decided by the run whose schedule time falls in this UTC hour (once a day).
    billing_audit_hour_utc: int = Field(default=6, ge=0, le=23)
    #: Metrics audit across accounts: these account ids (comma-separated), each through ``MEMBER_ROLE_NAME``.
    audit_accounts: str | None = None
    #: Metrics audit across accounts: every ACTIVE account of the Organization (``organizations:ListAccounts``).
    audit_organization: bool = False
    #: Metrics audit: these Regions (comma-separated; empty: the function's own Region).
    audit_regions: str | None = None
    #: The read-only member role (templates/member-role.yaml) assumed in each audited account.
    member_role_name: str | None = None
    #: Metrics audit: account/Region pairs audited at once.
    audit_concurrency: int = Field(default=8, ge=1, le=64)
    #: Weekly report: how long the presigned link in the announcement works (SigV4 allows at most 7 days).
    report_link_expiry_seconds: int = Field(default=604_800, ge=60, le=604_800)
    #: Weekly report: the KMS key to encrypt report objects with (empty: the bucket's default encryption).
    reports_kms_key_id: str | None = None

    #: Capture controller: the stack's own trail, the audit budget (percent of the audited DynamoDB bill) and, when
    #: the trail is restricted to some tables, their ARNs (comma-separated; empty: every table in the Region).
    capture_trail_name: str | None = None
    audit_budget_percent: float = Field(default=1.0, ge=0, le=100)
    capture_table_arns: str | None = None
    #: Capture controller: Contributor Insights on demand for this many slices on a table read at a quarter of a
    #: partition's limit (``PlannerConfig.insights_slices``; 0: off).
    capture_insights_slices: int = Field(default=0, ge=0, le=288)

    @field_validator("audit_table_tag")
    @classmethod
    def _tag_pair(cls, value: str | None) -> str | None:
        if value and (not value.partition("=")[0].strip() or "=" not in value):
            raise ValueError("must be KEY=VALUE")
        return value or None

    def audit_table_names(self) -> tuple[str, ...]:
        """``AUDIT_TABLES`` as a tuple of names (empty: no name filter)."""
        return _comma_list(self.audit_tables)

    def capture_table_arn_set(self) -> frozenset[str] | None:
        """``service.capture_table_arns`` as a set of ARNs (None: every table)."""
        return frozenset(_comma_list(self.capture_table_arns)) or None

    def require(self, name: str) -> str:
        """A service setting that must be present (a clear error names the environment variable)."""
        value = getattr(self, name)
        if not value:
            raise ConfigurationError(f"environment variable {name.upper()} is required")
        return str(value)

    def analysis_config(self) -> AnalysisConfig:
        """The analysis tuning from ``ANALYSIS_CONFIG_JSON`` (defaults when unset)."""
        if not self.analysis_config_json:
            return AnalysisConfig()
        try:
            return AnalysisConfig.model_validate_json(_analysis_part(self.analysis_config_json))
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise ConfigurationError(f"ANALYSIS_CONFIG_JSON is invalid at {loc or '(root)'}: {err['msg']}") from exc

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


#: The settings the ``service`` section of the configuration document (``ANALYSIS_CONFIG_JSON``) may hold: the
#: deployed stack's advanced settings (docs/deploy.md), which template.yaml does not set as environment variables.
DOCUMENT_SETTINGS = frozenset(
    {
        "log_level",
        "evaluation_delay_seconds",
        "resolve_after_seconds",
        "publish_resolved",
        "suppress_rules_json",
        "redact_keys",
        "slack_timeout_seconds",
        "slack_max_attempts",
        "state_retention_days",
        "finding_retention_days",
        "item_size_history_floor_bytes",
        "large_item_threshold_pct",
        "audit_tables",
        "audit_table_prefix",
        "audit_table_tag",
        "audit_lookback_seconds",
        "billing_lookback_days",
        "billing_audit_hour_utc",
        "audit_accounts",
        "audit_organization",
        "audit_regions",
        "audit_concurrency",
        "report_link_expiry_seconds",
        "audit_budget_percent",
        "capture_table_arns",
        "capture_insights_slices",
    }
)


def _document_settings(document: str | None) -> dict[str, Any]:
    """The ``service`` section of the configuration document, as Settings input (lists of names joined with
    commas, a ``*_json`` setting given as JSON serialised). A document that is not a JSON object is left to
    :meth:`Settings.analysis_config` to report."""
    try:
        parsed = orjson.loads(document) if document else None
    except orjson.JSONDecodeError:
        return {}
    section = parsed.get("service") if isinstance(parsed, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigurationError("ANALYSIS_CONFIG_JSON: service must be an object of settings")
    unknown = sorted(set(section) - DOCUMENT_SETTINGS)
    if unknown:
        raise ConfigurationError(f"ANALYSIS_CONFIG_JSON: service.{unknown[0]} is not a document setting")
    out: dict[str, Any] = {}
    for name, value in section.items():
        if name.endswith("_json") and not isinstance(value, str):
            value = orjson.dumps(value).decode()
        elif isinstance(value, list):
            value = ",".join(str(v) for v in value)
        out[name] = value
    return out


def settings_from_env(environ: dict[str, str] | None = None) -> Settings:
    """Build settings from ``environ`` (default: the process environment), then the configuration document's
    ``service`` section for the settings the environment does not set."""
    env = dict(os.environ) if environ is None else environ
    data: dict[str, Any] = {k.lower(): v for k, v in env.items() if k.lower() in Settings.model_fields}
    data = {**_document_settings(data.get("analysis_config_json")), **data}
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(f"invalid environment: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from exc


@cache
def get_settings() -> Settings:
    """The process settings, read once (tests call ``get_settings.cache_clear()``)."""
    return settings_from_env()


class AnalysisConfig(DetectorSettings):
    """Tuning for the analysis (all fields optional): aggregation, key schema, and the detector tree
    (``detectors`` by id, ``tables`` for per-table overrides; see :mod:`auditor.detectors.settings`)."""

    #: Aggregation window. Findings are evaluated over all windows of a table together.
    window_seconds: int = Field(default=900, ge=60, le=86_400)
    #: Heavy-hitter sketch size per table window (exact below 2x this many distinct keys).
    sketch_capacity: int = Field(default=512, ge=16, le=4096)
    #: Partition-key attribute per table, when the key names do not make it obvious.
    key_schema: dict[str, str] = Field(default_factory=dict)
    #: Typical item size in bytes per table (CloudTrail logs no sizes): hot-key rates count read and write units
    #: from it (a read of up to 4 KB is one unit, a write of up to 1 KB is one). The service also takes it from the
    #: table's description (size / item count); without either, one unit per request.
    item_size_bytes: dict[str, Annotated[int, Field(ge=1, le=409_600)]] = Field(default_factory=dict)
    #: The data-model review's thresholds (``ddb-audit model-review``, docs/model-review.md); omitted ones keep their
    #: defaults.
    model_review: ReviewConfig = Field(default_factory=ReviewConfig)


def _without_service(document: object) -> object:
    """The analysis part of the configuration document: without its ``service`` section (read by ``Settings``)."""
    if isinstance(document, dict):
        return {k: v for k, v in document.items() if k != "service"}
    return document


def _analysis_part(document: str) -> str:
    """``document`` without its ``service`` section (unchanged when it has none or is not JSON)."""
    try:
        parsed = orjson.loads(document)
    except orjson.JSONDecodeError:
        return document
    if isinstance(parsed, dict) and "service" in parsed:
        return orjson.dumps(_without_service(parsed)).decode()
    return document


def load_analysis_config(path: str | Path | None) -> AnalysisConfig:
    """Read an analysis config JSON file; ``None`` gives the defaults."""
    if path is None:
        return AnalysisConfig()
    p = Path(path)
    data = read_json_file(p, "config")
    try:
        return AnalysisConfig.model_validate(_without_service(data))
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise InputError(f"{p}: invalid config at {loc or '(root)'}: {err['msg']}") from exc


def _comma_list(value: str | None) -> tuple[str, ...]:
    """A comma-separated setting's items, stripped, empty ones dropped."""
    return tuple(n.strip() for n in (value or "").split(",") if n.strip())

"""The one handler runtime: what every Lambda function does around its use case.

``@lambda_runtime(Model)`` turns ``body(event, run) -> result`` into a Lambda handler ``(event, context)``: logging
and its context keys, event validation, one client per AWS service per container and the state-table stores, the
health metrics the body reports (:meth:`Invocation.emit`, one EMF line), and Powertools Tracer. The six steps are in
docs/service.md.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import boto3
import structlog
from aws_lambda_powertools import Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel, SnsModel, SqsModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.config import Config
from pydantic import BaseModel, ValidationError

from auditor.config import Settings, get_settings
from auditor.observability import configure_logging
from auditor.service.health import NAMESPACE, SERVICE, HealthMetric
from auditor.sources.audit_clients import AuditClients, build_clients
from auditor.state.findings_store import FindingsStore
from auditor.state.fingerprint_store import FingerprintStore
from auditor.state.slack_deliveries import SlackDeliveries
from auditor.state.unreadable_store import UnreadableObjectStore
from auditor.state.window_store import RETRY_CONFIG, SightingStore, WindowStore

if TYPE_CHECKING:
    from mypy_boto3_cloudtrail import CloudTrailClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from mypy_boto3_securityhub import SecurityHubClient
    from mypy_boto3_sns import SNSClient

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")

#: S3 presigned URLs are signed with SigV4 (its 7-day limit bounds REPORT_LINK_EXPIRY_SECONDS); retries as the rest.
S3_CONFIG = RETRY_CONFIG.merge(Config(signature_version="s3v4"))

METRICS = Metrics(namespace=NAMESPACE, service=SERVICE)
TRACER = Tracer(service=SERVICE)


class Clients:
    """One client per AWS service, built on first use (after the environment is set), reused while warm."""

    @cached_property
    def dynamodb(self) -> DynamoDBClient:
        return boto3.client("dynamodb", config=RETRY_CONFIG)

    @cached_property
    def s3(self) -> S3Client:
        return boto3.client("s3", config=S3_CONFIG)

    @cached_property
    def sns(self) -> SNSClient:
        return boto3.client("sns")

    @cached_property
    def secretsmanager(self) -> SecretsManagerClient:
        return boto3.client("secretsmanager")

    @cached_property
    def securityhub(self) -> SecurityHubClient:
        return boto3.client("securityhub")

    @cached_property
    def cloudtrail(self) -> CloudTrailClient:
        return boto3.client("cloudtrail")

    @cached_property
    def cloudwatch(self) -> CloudWatchClient:
        return boto3.client("cloudwatch")

    @cached_property
    def audit(self) -> AuditClients:
        """The clients the live audit reads this account with (inventory, CloudWatch, Contributor Insights)."""
        return build_clients()


CLIENTS = Clients()


@dataclass
class _Container:
    """What a Lambda container keeps between invocations."""

    prepared: bool = False
    cold: bool = True
    #: Where the embedded-metric-format lines go (stdout, which Lambda sends to CloudWatch Logs).
    write_metrics: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stdout, flush=True))


_container = _Container()


def prepare() -> None:
    """Container start: configure logging (once; the first invocation calls it)."""
    if not _container.prepared:
        configure_logging(get_settings().log_level)
        # The tracer logs a handler's exception as free text; the Lambda runtime reports it already (and the
        # auditor's own log lines are structlog JSON only).
        logging.getLogger("aws_lambda_powertools.tracing").setLevel(logging.CRITICAL)
        _container.prepared = True


def reset() -> None:
    """Forget the container (clients, settings, logging set-up): the next invocation is a cold start."""
    global CLIENTS  # the container's clients are module state by design
    CLIENTS = Clients()
    get_settings.cache_clear()
    _container.prepared, _container.cold = False, True


def set_metrics_writer(write: Callable[[str], None]) -> Callable[[str], None]:
    """Send the embedded-metric-format lines to ``write`` (the demo collects them); returns the previous writer."""
    previous, _container.write_metrics = _container.write_metrics, write
    return previous


@dataclass
class Invocation:
    """One invocation: its settings, context and the health metrics the body reports."""

    context: LambdaContext
    settings: Settings
    metrics: list[HealthMetric] = field(default_factory=list)

    @property
    def account(self) -> str:
        """The function's own account (from its ARN)."""
        return self.context.invoked_function_arn.split(":")[4]

    @property
    def region(self) -> str:
        """The function's own Region (from its ARN)."""
        return self.context.invoked_function_arn.split(":")[3]

    def time_left(self) -> float:
        """Seconds before Lambda stops the invocation."""
        return self.context.get_remaining_time_in_millis() / 1000

    def bind(self, **values: object) -> None:
        """Add keys to every log line of this invocation (``table`` where the handler has one)."""
        structlog.contextvars.bind_contextvars(**values)

    def emit(self, metrics: Iterable[HealthMetric]) -> None:
        """Report health metrics (written when the body ends)."""
        self.metrics.extend(metrics)

    def state_table(self) -> str:
        return self.settings.require("state_table_name")

    def window_store(self) -> WindowStore:
        return WindowStore(CLIENTS.dynamodb, self.state_table(), retention_days=self.settings.state_retention_days)

    def fingerprint_store(self) -> FingerprintStore | None:
        """Where trail objects' event fingerprints go (None: the duplicate check across objects is off)."""
        bucket = self.settings.fingerprints_bucket
        return FingerprintStore(CLIENTS.s3, bucket) if bucket else None

    def sighting_store(self) -> SightingStore:
        """What each evaluated window sighted (the evaluator corrects the weeks of a window evaluated again)."""
        return SightingStore(CLIENTS.dynamodb, self.state_table(), retention_days=self.settings.state_retention_days)

    def findings_store(self) -> FindingsStore:
        return FindingsStore(CLIENTS.dynamodb, self.state_table(), retention_days=self.settings.finding_retention_days)

    def slack_deliveries(self) -> SlackDeliveries:
        """The notifier's delivery record per message (a message is posted to Slack once, or again counted)."""
        return SlackDeliveries(CLIENTS.dynamodb, self.state_table())

    def unreadable_store(self) -> UnreadableObjectStore:
        """The trail objects that could not be read (trail ingest records them, the weekly report lists them)."""
        retention = self.settings.state_retention_days
        return UnreadableObjectStore(CLIENTS.dynamodb, self.state_table(), retention_days=retention)


def _write_metrics(metrics: list[HealthMetric], service: str) -> None:
    """One EMF line with every metric reported (several values of a name: summed, a gauge's last one)."""
    if not metrics:
        return
    units: dict[str, str] = {}
    totals: dict[str, float] = {}
    for metric in metrics:
        totals[metric.name] = metric.value + (0.0 if metric.gauge else totals.get(metric.name, 0.0))
        units[metric.name] = metric.unit
    for name, value in totals.items():
        METRICS.add_metric(name=name, unit=MetricUnit(units[name]), value=value)
    METRICS.service = service
    blob = METRICS.serialize_metric_set()
    METRICS.clear_metrics()
    _container.write_metrics(json.dumps(blob, separators=(",", ":")))


#: What each event model is, for the error a wrong event raises.
_EVENT_NAMES: dict[type[BaseModel], str] = {
    EventBridgeModel: "an EventBridge scheduled event",
    SnsModel: "an SNS event",
    SqsModel: "an SQS batch event",
}


def _parse(model: type[M], event: dict[str, Any], function: str) -> M:
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        what = _EVENT_NAMES.get(model, f"a {model.__name__} event")
        raise ValueError(f"{function} expects {what}: {where}: {err['msg']}") from None


def lambda_runtime(
    model: type[M] | None,
) -> Callable[[Callable[[Any, Invocation], R]], Callable[[dict[str, Any], LambdaContext], R]]:
    """The handler for ``body`` (see the module docstring); ``model`` None passes the raw event."""

    def wrap(body: Callable[[Any, Invocation], R]) -> Callable[[dict[str, Any], LambdaContext], R]:
        function = body.__module__.rsplit(".", 1)[-1]

        @functools.wraps(body)
        def handler(event: dict[str, Any], context: LambdaContext) -> R:
            prepare()
            cold, _container.cold = _container.cold, False
            structlog.contextvars.clear_contextvars()
            structlog.contextvars.bind_contextvars(
                function_name=context.function_name, function_request_id=context.aws_request_id, cold_start=cold
            )
            run = Invocation(context, get_settings())
            parsed: Any = event if model is None else _parse(model, event, function)
            if isinstance(parsed, EventBridgeModel):
                run.bind(schedule_event_id=parsed.id)
            try:
                return body(parsed, run)
            finally:
                _write_metrics(run.metrics, run.settings.powertools_service_name)

        # The tracer's segment: cold start and service annotations, the error as metadata; not the response (it
        # can carry table names and counts only, but a trace is no place for results).
        return TRACER.capture_lambda_handler(handler, capture_response=False)

    return wrap

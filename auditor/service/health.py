"""The auditor's own health: the metrics each use case's result yields (pure; the handler runtime emits them).

One namespace (:data:`NAMESPACE`) and one dimension (``service``), so the dashboard and the alarms in template.yaml
read each metric under one name whichever function emitted it. docs/service.md lists every metric with its unit and
what it counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

from auditor.models.finding import utc

if TYPE_CHECKING:
    from auditor.kernel.stats import IngestStats
    from auditor.service.evaluate import EvaluationResult
    from auditor.service.ingest import EventsResult, ObjectResult
    from auditor.service.metrics_audit import OrgMetricsAuditResult
    from auditor.service.record import RecordResult
    from auditor.service.stream_item_size import StreamBatchResult
    from auditor.sinks.slack import NotifyResult

#: The CloudWatch namespace of every health metric (template.yaml's dashboard and alarms read it).
NAMESPACE: Final = "DdbTrafficAuditor"
#: The ``service`` dimension's value outside a stack (the deployed functions use the stack name).
SERVICE: Final = "ddb-traffic-auditor"

#: Every health metric, as the table above lists them (template.yaml's dashboard and alarms use only these).
METRIC_NAMES: Final = (
    "RecordsIngested",
    "RecordsFailed",
    "DuplicatesDropped",
    "FilesIngested",
    "FilesFailed",
    "UnreadableObjects",
    "LateContributions",
    "EvaluationLag",
    "FindingsOpened",
    "FindingsWorsened",
    "FindingsResolved",
    "OutboxPending",
    "OutboxAge",
    "PublishFailures",
    "RepeatedPublishes",
    "SlackDelivered",
    "SlackFailures",
)

Unit = Literal["Count", "Seconds"]


@dataclass(frozen=True, slots=True)
class HealthMetric:
    """One value of one health metric."""

    name: str
    value: float
    unit: Unit = "Count"
    #: A gauge is a state (the outbox after a drain, the lag): of several values in one invocation the last counts;
    #: other values are events, summed.
    gauge: bool = False


def _counts(**values: float) -> list[HealthMetric]:
    return [HealthMetric(name, float(value)) for name, value in values.items()]


def ingest_stats(stats: IngestStats) -> list[HealthMetric]:
    """Records committed, malformed and duplicate, from an ingest run's counters."""
    return _counts(
        RecordsIngested=stats.data_events,
        RecordsFailed=stats.records_skipped,
        DuplicatesDropped=stats.duplicates_dropped,
    )


def trail_objects(objects: list[ObjectResult]) -> list[HealthMetric]:
    """One trail message's objects: files read (a duplicate object counts as one duplicate) and their records."""
    metrics = _counts(
        FilesIngested=sum(1 for o in objects if o.status == "ingested"),
        RecordsIngested=sum(o.stats.get("data_events", 0) for o in objects),
        RecordsFailed=sum(o.stats.get("records_skipped", 0) for o in objects),
        DuplicatesDropped=sum(o.stats.get("duplicates_dropped", 0) + (o.status == "duplicate") for o in objects),
    )
    return metrics + late_contributions(sum(o.late for o in objects))


def late_contributions(count: int) -> list[HealthMetric]:
    """Window contributions stored after the evaluator sealed their window (evaluated again); only when some were."""
    return _counts(LateContributions=count) if count else []


def files_failed(count: int) -> list[HealthMetric]:
    """Trail messages reported as batch item failures."""
    return _counts(FilesFailed=count)


def unreadable_objects(count: int) -> list[HealthMetric]:
    """Trail objects whose content could not be read (corrupt or truncated gzip, broken JSON), one per attempt."""
    return _counts(UnreadableObjects=count)


def events(result: EventsResult) -> list[HealthMetric]:
    """An EventBridge events batch."""
    return ingest_stats(result.stats) + late_contributions(result.late)


def recorded(result: RecordResult) -> list[HealthMetric]:
    """The findings lifecycle and the outbox drain of one run."""
    return [
        *_counts(
            FindingsOpened=result.new,
            FindingsWorsened=result.worsened,
            FindingsResolved=result.resolved,
            PublishFailures=result.publish_failed,
            RepeatedPublishes=result.repeated_publishes,
        ),
        HealthMetric("OutboxPending", result.outbox_pending, gauge=True),
        HealthMetric("OutboxAge", result.outbox_age_seconds, "Seconds", gauge=True),
    ]


def org_audit(result: OrgMetricsAuditResult) -> list[HealthMetric]:
    """An organisation audit: every target's lifecycle counts, and its one outbox drain after them."""
    metrics = [m for _, run in result.runs for m in recorded(run.recorded) if not m.gauge]
    if result.publish is not None:
        metrics = [m for m in metrics if m.name not in ("PublishFailures", "RepeatedPublishes")]
        metrics += [
            HealthMetric("PublishFailures", result.publish.failed),
            HealthMetric("RepeatedPublishes", result.publish.repeated),
            HealthMetric("OutboxPending", result.publish.left, gauge=True),
            HealthMetric("OutboxAge", result.publish.oldest_left_seconds, "Seconds", gauge=True),
        ]
    return metrics


def evaluation(result: EvaluationResult, now: datetime, window_seconds: int) -> list[HealthMetric]:
    """An evaluator run: the lifecycle and, once a window was ever evaluated, the lag behind the traffic."""
    metrics = recorded(result)
    if result.cursor is not None:
        lag = utc(now).timestamp() - (result.cursor + window_seconds)
        metrics.append(HealthMetric("EvaluationLag", max(0.0, lag), "Seconds", gauge=True))
    return metrics


def stream_batch(result: StreamBatchResult) -> list[HealthMetric]:
    """A stream batch: items observed, bad records, redelivered samples, and the lifecycle when it recorded."""
    metrics = _counts(
        RecordsIngested=result.stats.observations,
        RecordsFailed=result.stats.errors,
        DuplicatesDropped=result.history_duplicates,
    )
    return metrics + (recorded(result.recorded) if result.recorded is not None else [])


def slack(result: NotifyResult) -> list[HealthMetric]:
    """Slack deliveries and failures of one notifier invocation, and its posts that may repeat an earlier one
    (``RepeatedPublishes``, only when there are some)."""
    repeats = _counts(RepeatedPublishes=result.repeated) if result.repeated else []
    return _counts(SlackDelivered=result.delivered, SlackFailures=result.failed) + repeats

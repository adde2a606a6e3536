"""CloudWatch metrics of the audited tables and GSIs: find the active series, then buy only those.

The audit's read plans the candidate series (:func:`candidate_series`), discovers which exist with ListMetrics
(:func:`discover_active`) and fetches them with GetMetricData (:func:`fetch_series`), counting every call and its
cost. :func:`read_billing_metrics` is the separate billing read, packed by datapoints (:func:`plan_batches`). The
plan, the limits and the costs are in docs/sources.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import ClientError

from auditor.models.inventory import ON_DEMAND, Gap, Inventory, TableProfile
from auditor.models.inventory import PROVISIONED as PROVISIONED_MODE
from auditor.models.metrics import (
    CAUSE_METRICS,
    CONSUMED,
    NAMESPACE,
    PROVISIONED,
    RETURNED_ITEMS,
    SCAN_REQUESTS,
    THROTTLE_EVENTS,
    TTL_DELETED,
    WRITE_OPERATIONS,
    ApiStats,
    MetricSeries,
    SeriesKey,
    TableMetrics,
)
from auditor.sources.aws_calls import counted_call, error_code, error_message, gap_from

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

log = structlog.get_logger(__name__)

__all__ = [
    "BILLING_GROUP_DATAPOINTS",
    "MAX_DATAPOINTS_PER_CALL",
    "MAX_QUERIES_PER_CALL",
    "ONE_MINUTE_RETENTION_SECONDS",
    "MetricsResult",
    "align_window",
    "billing_series",
    "billing_window",
    "candidate_series",
    "choose_period",
    "collect_metrics",
    "discover_active",
    "estimated_points",
    "fetch_series",
    "plan_batches",
    "read_billing_metrics",
]

MAX_QUERIES_PER_CALL = 500
#: Datapoints one GetMetricData response holds; more are paged (``NextToken``), every page re-sending the queries.
MAX_DATAPOINTS_PER_CALL = 100_800
#: Provisioned capacity (and every non-counter DynamoDB metric) is published every 5 minutes.
PROVISIONED_PERIOD = 300
_DAY = 86_400
#: CloudWatch keeps 1-minute datapoints for 15 days (then 5-minute ones for 63 days, hourly ones for 455).
ONE_MINUTE_RETENTION_SECONDS = 15 * _DAY
#: The billing read holds about this many datapoints at once (four full GetMetricData responses: some 40 MB of
#: series), fetching and deciding a group of tables at a time.
BILLING_GROUP_DATAPOINTS = 4 * MAX_DATAPOINTS_PER_CALL

#: The per-minute counters every table and GSI gets (name, statistic).
_COUNTERS: tuple[str, ...] = (
    CONSUMED["read"],
    CONSUMED["write"],
    THROTTLE_EVENTS["read"],
    THROTTLE_EVENTS["write"],
    *(m for by_access in CAUSE_METRICS.values() for m in by_access.values()),
)
_PROVISIONED: tuple[str, ...] = (PROVISIONED["read"], PROVISIONED["write"])
#: Table-only series dimensioned by Operation=Scan: (metric, statistic).
_SCAN_SERIES: tuple[tuple[str, str], ...] = ((SCAN_REQUESTS, "SampleCount"), (RETURNED_ITEMS, "Sum"))


def choose_period(start: int, end: int, now: int) -> int:
    """The period of the per-minute family for a window: 60 s while 1-minute data is both kept and affordable.

    1-minute data is kept 15 days, 5-minute data 63 days, hourly data 455 days. Windows longer than three days use
    5-minute periods (a week of 1-minute points for 500 series is 5 million datapoints per call).
    """
    age = now - start
    if age > 63 * _DAY:
        return 3600
    if age > 15 * _DAY or end - start > 3 * _DAY:
        return 300
    return 60


def align_window(start: int, end: int, period: int) -> tuple[int, int]:
    """Start rounded down to 5 minutes (so 1- and 5-minute periods share boundaries), end down to the period."""
    step = max(period, PROVISIONED_PERIOD)
    a = start - start % step
    b = end - end % period
    return a, max(b, a + period)


def candidate_series(profile: TableProfile, period: int) -> list[SeriesKey]:
    """Every series the detectors can use for one table and its GSIs (before discovery)."""
    prov_period = max(period, PROVISIONED_PERIOD)
    with_provisioned = profile.billing_mode != ON_DEMAND
    keys: list[SeriesKey] = []
    for index in (None, *(g.name for g in profile.gsis)):
        keys += [SeriesKey(m, profile.name, index, None, "Sum", period) for m in _COUNTERS]
        if with_provisioned:
            keys += [SeriesKey(m, profile.name, index, None, "Average", prov_period) for m in _PROVISIONED]
    keys += [SeriesKey(m, profile.name, None, "Scan", stat, period) for m, stat in _SCAN_SERIES]
    keys += [SeriesKey(SCAN_REQUESTS, profile.name, None, op, "SampleCount", period) for op in WRITE_OPERATIONS]
    return keys


def billing_series(profile: TableProfile, period: int = 60) -> list[SeriesKey]:
    """The series the billing decision needs for one table: consumed read/write of the table and each GSI (``Sum``
    per ``period``) and, on a provisioned table, their provisioned read/write capacity (5-minute ``Average``).

    Empty for a table whose billing mode is unknown (it cannot be decided, so nothing is bought).
    """
    if profile.billing_mode not in (ON_DEMAND, PROVISIONED_MODE):
        return []
    prov_period = max(period, PROVISIONED_PERIOD)
    keys: list[SeriesKey] = []
    for index in (None, *(g.name for g in profile.gsis)):
        keys += [SeriesKey(CONSUMED[a], profile.name, index, None, "Sum", period) for a in ("read", "write")]
        if profile.billing_mode == PROVISIONED_MODE:
            keys += [SeriesKey(m, profile.name, index, None, "Average", prov_period) for m in _PROVISIONED]
    return keys


def estimated_points(key: SeriesKey, start: int, end: int) -> int:
    """The most datapoints ``key`` can return over ``[start, end)``: one per period."""
    return max(1, -(-(end - start) // key.period))


def plan_batches(
    keys: Sequence[SeriesKey],
    start: int,
    end: int,
    *,
    batch_size: int = MAX_QUERIES_PER_CALL,
    max_datapoints: int | None = None,
) -> list[list[SeriesKey]]:
    """GetMetricData calls for ``keys``: at most ``batch_size`` queries each and, with ``max_datapoints``, at most that
    many estimated datapoints (first fit, longest series first; a series longer than the budget gets a call of its
    own). Without ``max_datapoints``: consecutive runs of ``batch_size`` keys, in order.
    """
    if not 1 <= batch_size <= MAX_QUERIES_PER_CALL:
        raise ValueError(f"batch_size must be 1..{MAX_QUERIES_PER_CALL}")
    if max_datapoints is None:
        return [list(keys[b : b + batch_size]) for b in range(0, len(keys), batch_size)]
    if max_datapoints < 1:
        raise ValueError("max_datapoints must be >= 1")
    batches: list[list[SeriesKey]] = []
    room: list[int] = []  # datapoints left in each batch
    for key in sorted(keys, key=lambda k: -estimated_points(k, start, end)):
        points = estimated_points(key, start, end)
        for i, left in enumerate(room):
            if points <= left and len(batches[i]) < batch_size:
                batches[i].append(key)
                room[i] -= points
                break
        else:
            batches.append([key])
            room.append(max_datapoints - points)
    return batches


def _identity(key: SeriesKey) -> tuple[str, str, str | None, str | None]:
    return key.metric, key.table, key.index, key.operation


def _listed_identity(metric: dict[str, Any]) -> tuple[str, str, str | None, str | None] | None:
    """(metric, table, index, operation) of a ListMetrics entry whose dimensions are exactly one of our shapes."""
    dims = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
    table = dims.pop("TableName", None)
    if table is None:
        return None
    index = dims.pop("GlobalSecondaryIndexName", None)
    operation = dims.pop("Operation", None)
    if dims or (index is not None and operation is not None):
        return None  # another shape (Source=..., StreamLabel=...): not one of our series
    return str(metric["MetricName"]), table, index, operation


def discover_active(
    cloudwatch: CloudWatchClient,
    candidates: Sequence[SeriesKey],
    stats: ApiStats,
    *,
    recently_active: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[SeriesKey], list[Gap]]:
    """The candidates that CloudWatch lists (reported in the last two weeks, or 3 hours with ``recently_active``).

    Few tables: one ListMetrics sweep per table (``TableName`` filter). Many tables: one sweep per metric name over
    the namespace. If ListMetrics fails, every candidate is kept (a gap says discovery was skipped).
    """
    if not candidates:
        return [], []
    tables = sorted({k.table for k in candidates})
    metrics = sorted({k.metric for k in candidates})
    base: dict[str, Any] = {"Namespace": NAMESPACE} | ({"RecentlyActive": "PT3H"} if recently_active else {})
    if len(tables) <= len(metrics):
        sweeps = [base | {"Dimensions": [{"Name": "TableName", "Value": t}]} for t in tables]
    else:
        sweeps = []
        for m in metrics:
            if m == SCAN_REQUESTS:
                for op in ("Scan", *WRITE_OPERATIONS):
                    sweeps.append(base | {"MetricName": m, "Dimensions": [{"Name": "Operation", "Value": op}]})
            elif m == RETURNED_ITEMS:
                sweeps.append(base | {"MetricName": m, "Dimensions": [{"Name": "Operation", "Value": "Scan"}]})
            else:
                sweeps.append(base | {"MetricName": m})
    listed: set[tuple[str, str, str | None, str | None]] = set()
    try:
        for kwargs in sweeps:
            while True:
                page = counted_call(stats, "cloudwatch:ListMetrics", cloudwatch.list_metrics, sleep=sleep, **kwargs)
                for metric in page.get("Metrics", []):
                    ident = _listed_identity(dict(metric))
                    if ident is not None:
                        listed.add(ident)
                token = page.get("NextToken")
                if not token:
                    break
                kwargs = kwargs | {"NextToken": token}
    except ClientError as exc:
        gap = gap_from(exc, "cloudwatch:ListMetrics", "active_series")
        log.info("metric_discovery_failed", gap=gap.describe())
        return list(candidates), [gap]
    active = [k for k in candidates if _identity(k) in listed]
    return active, []


def _epoch(ts: datetime | float | int) -> int:
    if isinstance(ts, datetime):
        return int((ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp())
    return int(ts)


def fetch_series(
    cloudwatch: CloudWatchClient,
    keys: Sequence[SeriesKey],
    start: int,
    end: int,
    stats: ApiStats,
    *,
    sleep: Callable[[float], None] = time.sleep,
    batch_size: int = MAX_QUERIES_PER_CALL,
    max_datapoints: int | None = None,
) -> tuple[dict[SeriesKey, MetricSeries], dict[SeriesKey, str]]:
    """Read ``keys`` over ``[start, end)`` (epoch seconds): (series by key, failed key -> reason).

    Calls of at most 500 MetricStat queries (and, with ``max_datapoints``, at most that many estimated datapoints:
    :func:`plan_batches`), each followed through its ``NextToken`` pages.
    """
    batches = plan_batches(keys, start, end, batch_size=batch_size, max_datapoints=max_datapoints)
    series: dict[SeriesKey, MetricSeries] = {k: MetricSeries(k) for k in keys}
    failed: dict[SeriesKey, str] = {}
    t0, t1 = datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)
    for batch in batches:
        by_id = {f"m{i}": k for i, k in enumerate(batch)}
        queries = [{"Id": qid, "MetricStat": k.metric_stat(), "ReturnData": True} for qid, k in by_id.items()]
        kwargs: dict[str, Any] = {
            "MetricDataQueries": queries,
            "StartTime": t0,
            "EndTime": t1,
            "ScanBy": "TimestampAscending",
        }
        try:
            while True:
                stats.metrics_requested += len(queries)
                page = counted_call(
                    stats, "cloudwatch:GetMetricData", cloudwatch.get_metric_data, sleep=sleep, **kwargs
                )
                for result in page.get("MetricDataResults", []):
                    key = by_id.get(result.get("Id", ""))
                    if key is None:
                        continue
                    status = result.get("StatusCode", "Complete")
                    if status in ("Forbidden", "InternalError"):
                        msgs = "; ".join(m.get("Value", "") for m in result.get("Messages", []) or [])
                        failed[key] = f"{status}{': ' + msgs if msgs else ''}"
                        continue
                    points = series[key].points
                    for ts, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=False):
                        points[_epoch(ts)] = float(value)
                        stats.datapoints += 1
                token = page.get("NextToken")
                if not token:
                    break
                kwargs["NextToken"] = token
        except ClientError as exc:
            reason = f"{error_code(exc)}: {error_message(exc)}"
            for k in batch:
                failed[k] = reason
            log.info("get_metric_data_failed", series=len(batch), error=reason)
    for k in failed:
        series.pop(k, None)
    return series, failed


def _table_metrics(
    profiles: Sequence[TableProfile],
    start: int,
    end: int,
    period: int,
    series: dict[SeriesKey, MetricSeries],
    failed: dict[SeriesKey, str],
) -> dict[str, TableMetrics]:
    """Every profile's :class:`TableMetrics` (a resource per table and GSI) filed from what was read."""
    tables: dict[str, TableMetrics] = {}
    for p in profiles:
        tm = TableMetrics(p.name, start, end, period)
        for index in (None, *(g.name for g in p.gsis)):
            tm.resource(index)
        tables[p.name] = tm
    for key, s in series.items():
        tables[key.table].resource(key.index).series[key.name] = s
    for key in failed:
        tables[key.table].resource(key.index).unavailable.add(key.name)
    return tables


def _failure_gaps(failed: dict[SeriesKey, str], facet: str) -> list[Gap]:
    """One gap per distinct GetMetricData failure reason, counting the series it made unknown."""
    by_reason: dict[str, int] = {}
    for reason in failed.values():
        by_reason[reason] = by_reason.get(reason, 0) + 1
    return [
        Gap(
            call="cloudwatch:GetMetricData",
            error_code=reason.split(":", 1)[0],
            message=f"{n} series: {reason}",
            facet=facet,
        )
        for reason, n in sorted(by_reason.items())
    ]


@dataclass(slots=True)
class MetricsResult:
    """Every table's series over the audited window, with the gaps met on the way."""

    tables: dict[str, TableMetrics] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)
    start: int = 0
    end: int = 0
    period: int = 60


def _active_series(
    cloudwatch: CloudWatchClient,
    candidates: list[SeriesKey],
    stats: ApiStats,
    *,
    discover: bool = True,
    recently_active: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[SeriesKey], list[Gap]]:
    """The candidates to fetch (those :func:`discover_active` lists, or all without ``discover``), counted in
    ``stats`` with the candidates."""
    stats.series_candidates += len(candidates)
    if discover:
        active, gaps = discover_active(cloudwatch, candidates, stats, recently_active=recently_active, sleep=sleep)
    else:
        active, gaps = list(candidates), []
    stats.series_active += len(active)
    return active, gaps


def _series_counts(
    profiles: list[TableProfile], candidates: list[SeriesKey], active: list[SeriesKey]
) -> dict[str, int]:
    """A read's plan for its log line: the tables, their candidate series and the active ones."""
    return {"tables": len(profiles), "series_candidates": len(candidates), "series_active": len(active)}


def collect_metrics(
    cloudwatch: CloudWatchClient,
    inventory: Inventory | Iterable[TableProfile],
    start: int,
    end: int,
    stats: ApiStats,
    *,
    now: int | None = None,
    period: int | None = None,
    discover: bool | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> MetricsResult:
    """Plan, discover and fetch the series of every table in ``inventory`` over ``[start, end)``.

    ``discover`` defaults to True when the window starts within the last 14 days (ListMetrics forgets metrics after
    two weeks); ``RecentlyActive=PT3H`` is used when the whole window is within the last three hours.
    """
    now = end if now is None else now
    period = period or choose_period(start, end, now)
    start, end = align_window(start, end, period)
    profiles = list(inventory.tables if isinstance(inventory, Inventory) else inventory)
    result = MetricsResult(start=start, end=end, period=period)
    candidates = [k for p in profiles for k in candidate_series(p, period)]
    if discover is None:
        discover = now - start <= 14 * _DAY
    active, gaps = _active_series(
        cloudwatch, candidates, stats, discover=discover, recently_active=now - start <= 3 * 3600, sleep=sleep
    )
    result.gaps.extend(gaps)
    series, failed = fetch_series(cloudwatch, active, start, end, stats, sleep=sleep)
    result.tables = _table_metrics(profiles, start, end, period, series, failed)
    result.gaps += _failure_gaps(failed, "metrics")
    log.info(
        "cloudwatch_metrics_read",
        **_series_counts(profiles, candidates, active),
        series_failed=len(failed),
        get_metric_data_calls=stats.calls.get("cloudwatch:GetMetricData", 0),
        list_metrics_calls=stats.calls.get("cloudwatch:ListMetrics", 0),
        metrics_requested=stats.metrics_requested,
        estimated_cost_usd=round(stats.estimated_cost_usd, 6),
    )
    return result


def billing_window(end: int, days: float, now: int | None = None) -> tuple[int, int]:
    """``[start, end)`` of a billing read over the ``days`` before ``end`` (epoch seconds).

    ``end`` is rounded down to the minute and ``start`` up to a 5-minute boundary (the provisioned series' period),
    never earlier than the 15 days of 1-minute data CloudWatch keeps before ``now`` (default ``end``).
    """
    now = end if now is None else now
    end -= end % 60
    start = max(end - int(days * _DAY), now - ONE_MINUTE_RETENTION_SECONDS)
    start = -(-start // PROVISIONED_PERIOD) * PROVISIONED_PERIOD
    return start, max(end, start + 60)


def read_billing_metrics(
    cloudwatch: CloudWatchClient,
    profiles: Iterable[TableProfile],
    start: int,
    end: int,
    stats: ApiStats,
    *,
    period: int = 60,
    group_datapoints: int = BILLING_GROUP_DATAPOINTS,
    proceed: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Generator[MetricsResult, None, None]:
    """The billing read (:func:`billing_series`) of ``profiles`` over ``[start, end)`` (see :func:`billing_window`).

    One ListMetrics discovery for every table (a series not reported in two weeks is not bought: its minutes are
    zero), then one :class:`MetricsResult` is yielded per group of consecutive tables whose series hold at most
    ``group_datapoints`` estimated datapoints (a bigger table is a group of its own), so only one group's series are
    held at a time. Each group is fetched with :func:`fetch_series` packed by datapoints (at most
    :data:`MAX_DATAPOINTS_PER_CALL` per call); a series that fails is unknown (``unavailable``) and a gap with facet
    ``billing_metrics``. The first result also carries the discovery gap, if any. With ``proceed``, a group is only
    fetched (and discovery only made) while ``proceed()`` is true (the caller's time budget); the read stops at the
    first false.
    """
    if proceed is not None and not proceed():
        return
    profiles = list(profiles)
    candidates = [k for p in profiles for k in billing_series(p, period)]
    active, gaps = _active_series(cloudwatch, candidates, stats, sleep=sleep)
    by_table: dict[str, list[SeriesKey]] = {}
    for key in active:
        by_table.setdefault(key.table, []).append(key)
    groups: list[list[TableProfile]] = []
    load = 0
    for p in profiles:
        points = sum(estimated_points(k, start, end) for k in by_table.get(p.name, ()))
        if not groups or load + points > group_datapoints:
            groups.append([])
            load = 0
        groups[-1].append(p)
        load += points
    log.info(
        "billing_read_planned",
        **_series_counts(profiles, candidates, active),
        groups=len(groups),
        datapoints_estimated=sum(estimated_points(k, start, end) for k in active),
    )
    for n, group in enumerate(groups, start=1):
        if proceed is not None and not proceed():
            log.warning("billing_read_stopped", groups_read=n - 1, groups=len(groups))
            return
        keys = [k for p in group for k in by_table.get(p.name, ())]
        calls_before = stats.calls.get("cloudwatch:GetMetricData", 0)
        series, failed = fetch_series(
            cloudwatch, keys, start, end, stats, sleep=sleep, max_datapoints=MAX_DATAPOINTS_PER_CALL
        )
        log.info(
            "billing_metrics_read",
            group=n,
            groups=len(groups),
            tables=len(group),
            series=len(keys),
            series_failed=len(failed),
            get_metric_data_calls=stats.calls.get("cloudwatch:GetMetricData", 0) - calls_before,
        )
        yield MetricsResult(
            tables=_table_metrics(group, start, end, period, series, failed),
            gaps=[*(gaps if n == 1 else []), *_failure_gaps(failed, "billing_metrics")],
            start=start,
            end=end,
            period=period,
        )


#: The activity read's period: one datapoint per day (CloudWatch keeps hourly data 455 days).
ACTIVITY_PERIOD = 86_400


@dataclass(slots=True)
class ActivityRead:
    """Daily consumed capacity (and TTL deletions) of tables and GSIs over the last ``days``: the idle-table and TTL
    detectors' input (:func:`read_activity`)."""

    start: int
    end: int
    days: float
    tables: dict[str, TableMetrics] = field(default_factory=dict)
    #: Tables whose every activity series was read.
    read_complete: set[str] = field(default_factory=set)
    gaps: list[Gap] = field(default_factory=list)
    stats: ApiStats = field(default_factory=ApiStats)

    def as_dict(self) -> dict[str, Any]:
        return {
            "window_start": datetime.fromtimestamp(self.start, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "window_end": datetime.fromtimestamp(self.end, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "days": round(self.days, 3),
            "tables_read": len(self.read_complete),
            "get_metric_data_calls": self.stats.calls.get("cloudwatch:GetMetricData", 0),
            "metrics_requested": self.stats.metrics_requested,
        }


def activity_series(profile: TableProfile) -> list[SeriesKey]:
    """Daily ``Sum`` of consumed read and write units of the table and each GSI, and the table's TTL deletions when
    TTL is enabled."""
    keys = [
        SeriesKey(CONSUMED[access], profile.name, index, None, "Sum", ACTIVITY_PERIOD)
        for index in (None, *(g.name for g in profile.gsis))
        for access in ("read", "write")
    ]
    if profile.ttl_status == "ENABLED":
        keys.append(SeriesKey(TTL_DELETED, profile.name, None, None, "Sum", ACTIVITY_PERIOD))
    return keys


def read_activity(
    cloudwatch: CloudWatchClient,
    profiles: Sequence[TableProfile],
    *,
    end: int,
    days: float,
    sleep: Callable[[float], None] = time.sleep,
) -> ActivityRead:
    """Read every profile's :func:`activity_series` over the ``days`` before ``end`` (whole days, ending at ``end``
    rounded down to the minute). No discovery: a series CloudWatch does not have reads as empty, which for consumed
    capacity means no traffic (DynamoDB publishes consumption only for tables that had some). A failed series is a gap,
    and its table is not ``read_complete``."""
    end = end - end % 60
    start = end - int(days * 86_400)
    read = ActivityRead(start=start, end=end, days=(end - start) / 86_400)
    keys = [k for p in profiles for k in activity_series(p)]
    if not keys:
        return read
    series, failed = fetch_series(cloudwatch, keys, start, end, read.stats, sleep=sleep)
    read.tables = _table_metrics(profiles, start, end, ACTIVITY_PERIOD, series, failed)
    failed_tables = {k.table for k in failed}
    read.read_complete = {p.name for p in profiles if p.name not in failed_tables}
    read.gaps = _failure_gaps(failed, "activity")
    log.info("cloudwatch_activity_read", tables=len(profiles), series=len(keys), failed=len(failed), days=read.days)
    return read

"""History on Amazon Athena: the CloudTrail table (partition projection) and the traffic aggregation as SQL.

:func:`create_table_sql` creates (or reuses) a CloudTrail table over the trail bucket, :func:`aggregation_sql`
aggregates the DynamoDB data events in one ``GROUP BY``, and :func:`aggregate_rows` feeds the rows to the same
normaliser, aggregates and detectors as ``analyze-trail``. The SQL is tested offline with sqlglot and DuckDB. The
design is in docs/sources.md.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from auditor.exceptions import InputError, MalformedRecordError
from auditor.kernel.aggregates.window import AggregateSet
from auditor.kernel.normalize import normalize_record

__all__ = [
    "COLUMNS",
    "AthenaScope",
    "RowStats",
    "aggregate_rows",
    "aggregation_sql",
    "create_table_sql",
    "table_name",
]

#: The result columns of :func:`aggregation_sql`, in order.
COLUMNS = (
    "account",
    "region",
    "minute",
    "second",
    "event_name",
    "event_category",
    "management_event",
    "identity_type",
    "identity_arn",
    "identity_account",
    "invoked_by",
    "issuer_arn",
    "resource_arn",
    "request_parameters",
    "error_code",
    "error_message",
    "calls",
    "first_time",
    "last_time",
)

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_ORG = re.compile(r"^o-[a-z0-9]{10,32}$")
_ACCOUNT = re.compile(r"^\d{12}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,127}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_./-]*$")


#: The years a time range may touch (as the rest of the project: window arithmetic stays within datetime's range).
MIN_YEAR, MAX_YEAR = 1970, 2999
#: The longest range one run reads (``--hours`` at most 9,600).
MAX_RANGE = timedelta(days=400)


def check_time_range(start: datetime, end: datetime) -> None:
    """Raise :class:`InputError` unless ``start < end`` (aware times), both in years 1970 to 2999, within 400 days."""
    for option, t in (("--start", start), ("--end", end)):
        # The local year first: converting year 1 or 9999 to UTC can overflow.
        if not MIN_YEAR <= t.year <= MAX_YEAR or not MIN_YEAR <= t.astimezone(UTC).year <= MAX_YEAR:
            raise InputError(f"{option}: {t.isoformat()} is out of range (years {MIN_YEAR} to {MAX_YEAR})")
    if not start < end:
        raise InputError(f"--start must be before --end (got {start.isoformat()} and {end.isoformat()})")
    if end - start > MAX_RANGE:
        raise InputError(f"the time range is at most 400 days (got {start.isoformat()} to {end.isoformat()})")


@dataclass(frozen=True, slots=True)
class AthenaScope:
    """What to read: the trail bucket (and prefix, organisation id), accounts, Regions and the time range."""

    bucket: str
    accounts: tuple[str, ...]
    regions: tuple[str, ...]
    start: datetime
    end: datetime
    prefix: str = ""
    organization_id: str | None = None
    database: str = "default"

    def __post_init__(self) -> None:
        if not _BUCKET.match(self.bucket):
            raise InputError(f"--bucket: not an S3 bucket name: {self.bucket!r}")
        if not _PREFIX.match(self.prefix) or ".." in self.prefix:
            raise InputError(f"--prefix: unsupported characters in {self.prefix!r}")
        if self.organization_id is not None and not _ORG.match(self.organization_id):
            raise InputError(f"--organization-id: not an Organization id (o-...): {self.organization_id!r}")
        if not self.accounts or any(not _ACCOUNT.match(a) for a in self.accounts):
            raise InputError("--accounts: one or more 12-digit account ids are required")
        if not self.regions or any(not _REGION.match(r) for r in self.regions):
            raise InputError("--regions: one or more Region names are required (e.g. us-east-1,eu-west-1)")
        if not _IDENT.match(self.database):
            raise InputError(f"--database: not a simple Glue database name: {self.database!r}")
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise InputError("the time range needs timezone-aware --start and --end")
        check_time_range(self.start, self.end)

    @property
    def location(self) -> str:
        """The S3 folder above the account folders: ``s3://bucket/[prefix/]AWSLogs/[o-xxx/]``."""
        prefix = self.prefix.strip("/")
        org = f"{self.organization_id}/" if self.organization_id else ""
        return f"s3://{self.bucket}/{prefix + '/' if prefix else ''}AWSLogs/{org}"

    def days(self) -> list[str]:
        """The ``yyyy/MM/dd`` partitions the range touches (UTC), first to last."""
        day = self.start.astimezone(UTC).date()
        last = (self.end.astimezone(UTC) - timedelta(microseconds=1)).date()
        out: list[str] = []
        while day <= last:
            out.append(day.strftime("%Y/%m/%d"))
            day += timedelta(days=1)
        return out


def table_name(scope: AthenaScope) -> str:
    """``ddb_audit_trail_<hash>``: one table per location, accounts and Regions (reused by runs of that scope)."""
    digest = hashlib.sha256(
        "|".join([scope.location, ",".join(sorted(scope.accounts)), ",".join(sorted(scope.regions))]).encode()
    ).hexdigest()[:12]
    return f"ddb_audit_trail_{digest}"


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)  # every value is validated by AthenaScope (no quote can occur)


def create_table_sql(scope: AthenaScope, *, first_day: str = "2015/01/01") -> str:
    """The CloudTrail table with partition projection (Athena DDL, after the AWS documentation's CloudTrail table).

    Only the columns the aggregation reads are declared (the JSON SerDe ignores the others); ``requestparameters``
    stays a string (its JSON text), as in the documented table.
    """
    name = table_name(scope)
    return f"""CREATE EXTERNAL TABLE IF NOT EXISTS {scope.database}.{name} (
    eventversion STRING,
    useridentity STRUCT<
        type: STRING,
        principalid: STRING,
        arn: STRING,
        accountid: STRING,
        invokedby: STRING,
        sessioncontext: STRUCT<
            sessionissuer: STRUCT<type: STRING, principalid: STRING, arn: STRING, accountid: STRING,
                                  username: STRING>>>,
    eventtime STRING,
    eventsource STRING,
    eventname STRING,
    awsregion STRING,
    errorcode STRING,
    errormessage STRING,
    requestparameters STRING,
    eventid STRING,
    readonly STRING,
    resources ARRAY<STRUCT<arn: STRING, accountid: STRING, type: STRING>>,
    eventtype STRING,
    recipientaccountid STRING,
    managementevent BOOLEAN,
    eventcategory STRING
)
PARTITIONED BY (account STRING, region STRING, `timestamp` STRING)
ROW FORMAT SERDE 'org.apache.hive.hcatalog.data.JsonSerDe'
STORED AS INPUTFORMAT 'com.amazon.emr.cloudtrail.CloudTrailInputFormat'
OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat'
LOCATION '{scope.location}'
TBLPROPERTIES (
    'projection.enabled' = 'true',
    'projection.account.type' = 'enum',
    'projection.account.values' = '{",".join(sorted(scope.accounts))}',
    'projection.region.type' = 'enum',
    'projection.region.values' = '{",".join(sorted(scope.regions))}',
    'projection.timestamp.type' = 'date',
    'projection.timestamp.format' = 'yyyy/MM/dd',
    'projection.timestamp.interval' = '1',
    'projection.timestamp.interval.unit' = 'DAYS',
    'projection.timestamp.range' = '{first_day},NOW',
    'storage.location.template' = '{scope.location}${{account}}/CloudTrail/${{region}}/${{timestamp}}'
)"""


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def aggregation_sql(scope: AthenaScope, table: str | None = None) -> str:
    """The traffic aggregation (Athena/Trino SQL): see the module docstring. ``table`` defaults to the scope's."""
    source = table or f"{scope.database}.{table_name(scope)}"
    days = scope.days()
    return f"""SELECT
    recipientaccountid AS account,
    awsregion AS region,
    substr(eventtime, 1, 16) AS minute,
    substr(eventtime, 1, 19) AS second,
    eventname AS event_name,
    eventcategory AS event_category,
    managementevent AS management_event,
    useridentity.type AS identity_type,
    useridentity.arn AS identity_arn,
    useridentity.accountid AS identity_account,
    useridentity.invokedby AS invoked_by,
    useridentity.sessioncontext.sessionissuer.arn AS issuer_arn,
    resources[1].arn AS resource_arn,
    requestparameters AS request_parameters,
    errorcode AS error_code,
    errormessage AS error_message,
    count(DISTINCT eventid) AS calls,
    min(eventtime) AS first_time,
    max(eventtime) AS last_time
FROM {source}
WHERE eventsource = 'dynamodb.amazonaws.com'
    AND account IN ({_quoted(sorted(scope.accounts))})
    AND region IN ({_quoted(sorted(scope.regions))})
    AND "timestamp" BETWEEN '{days[0]}' AND '{days[-1]}'
    AND eventtime >= '{_iso(scope.start)}'
    AND eventtime < '{_iso(scope.end)}'
GROUP BY
    recipientaccountid, awsregion, substr(eventtime, 1, 16), substr(eventtime, 1, 19), eventname, eventcategory,
    managementevent,
    useridentity.type, useridentity.arn, useridentity.accountid, useridentity.invokedby,
    useridentity.sessioncontext.sessionissuer.arn, resources[1].arn, requestparameters, errorcode, errormessage
ORDER BY 1, 2, 3"""


#: The problems :class:`RowStats` keeps (the count of malformed rows is always whole).
MAX_PROBLEMS = 10


@dataclass(slots=True)
class RowStats:
    """What the aggregation's rows held."""

    rows: int = 0
    #: Distinct DynamoDB data events (the sum of ``calls`` over rows the normaliser accepted).
    data_events: int = 0
    #: Events of rows that are not data-plane calls (control plane, streams) or are malformed.
    events_skipped: int = 0
    rows_malformed: int = 0
    problems: list[str] = field(default_factory=list)


def _record(row: Mapping[str, Any], event_id: str, time: str) -> dict[str, Any]:
    """The CloudTrail record a row stands for (the fields the normaliser reads)."""
    identity: dict[str, Any] = {}
    for key, column in (
        ("type", "identity_type"),
        ("arn", "identity_arn"),
        ("accountId", "identity_account"),
        ("invokedBy", "invoked_by"),
    ):
        if row.get(column) is not None:
            identity[key] = row[column]
    if row.get("issuer_arn") is not None:
        identity["sessionContext"] = {"sessionIssuer": {"arn": row["issuer_arn"]}}
    params = row.get("request_parameters")
    record: dict[str, Any] = {
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": row.get("event_name"),
        "eventID": event_id,
        "eventTime": time,
        "awsRegion": row.get("region"),
        "recipientAccountId": row.get("account"),
        "userIdentity": identity,
        "requestParameters": _parse_params(params),
    }
    if row.get("event_category") is not None:
        record["eventCategory"] = row["event_category"]
    if row.get("management_event") is not None:
        record["managementEvent"] = row["management_event"] in (True, "true")
    if row.get("resource_arn") is not None:
        record["resources"] = [{"ARN": row["resource_arn"], "type": "AWS::DynamoDB::Table"}]
    for key, column in (("errorCode", "error_code"), ("errorMessage", "error_message")):
        if row.get(column) is not None:
            record[key] = row[column]
    return record


def _parse_params(text: Any) -> Any:
    """``requestparameters`` is the JSON text of the object (null when absent; unparseable text stays text, as
    CloudTrail's truncated parameters do)."""
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def aggregate_rows(rows: Iterable[Mapping[str, Any]], aggregates: AggregateSet, stats: RowStats) -> None:
    """Add the aggregation's rows to ``aggregates`` through the normaliser (see the module docstring)."""
    for n, row in enumerate(rows):
        stats.rows += 1
        try:
            calls = int(row["calls"])
        except (KeyError, TypeError, ValueError):
            stats.rows_malformed += 1
            if len(stats.problems) < MAX_PROBLEMS:
                stats.problems.append(f"row {n}: calls is not a number")
            continue
        try:
            call = normalize_record(_record(row, f"athena-{n}", str(row.get("first_time"))))
        except MalformedRecordError as exc:
            stats.rows_malformed += 1
            stats.events_skipped += calls
            if len(stats.problems) < MAX_PROBLEMS:
                stats.problems.append(f"row {n}: {exc}")
            continue
        if call is None:
            stats.events_skipped += calls
            continue
        stats.data_events += calls
        last = call
        if calls > 1 and row.get("last_time") != row.get("first_time"):
            last_call = normalize_record(_record(row, f"athena-{n}-last", str(row.get("last_time"))))
            if last_call is not None:
                last = replace(call, time=last_call.time)
        for i in range(calls):
            aggregates.add(last if i == calls - 1 else call)


def iter_result_rows(pages: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """Rows of Athena ``GetQueryResults`` pages as dicts, one page at a time (a page is read only when the rows of
    the one before it have been consumed, so memory is bounded by a page, not by the result).

    The first row of the first page repeats the column names (a SELECT's header); Athena returns every value as
    ``VarCharValue`` text and leaves it out for NULL.
    """
    names: list[str] | None = None
    for page in pages:
        result = page.get("ResultSet", {})
        rows: Sequence[Mapping[str, Any]] = result.get("Rows", [])
        skip = 0
        if names is None:
            names = [c["Name"] for c in result.get("ResultSetMetadata", {}).get("ColumnInfo", [])]
            if rows and [d.get("VarCharValue") for d in rows[0].get("Data", [])] == names:
                skip = 1
        for row in itertools.islice(rows, skip, None):
            values = [d.get("VarCharValue") for d in row.get("Data", [])]
            yield dict(zip(names, values, strict=False))


def rows_from_result_set(pages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every row of :func:`iter_result_rows` in a list (for a result known to be small)."""
    return list(iter_result_rows(pages))

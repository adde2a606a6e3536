"""The Athena aggregation SQL, run offline: transpiled from Athena's dialect (Trino) with sqlglot and executed by
DuckDB over the same generated multi-hour, two-account, two-Region trail that ``analyze-trail`` reads; the findings
and access patterns must match."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest
import sqlglot

from auditor.config import AnalysisConfig
from auditor.engine import access_patterns, analyze_trail, evaluate, new_aggregate_set, period_totals
from auditor.exceptions import InputError
from auditor.models.finding import Finding, FindingKind
from auditor.sources.athena import AthenaScope, RowStats, aggregate_rows, aggregation_sql, create_table_sql
from tests.factories import Workload, workload_records, write_log_file

ORG = "o-a1b2c3d4e5"
A, B = "111122223333", "444455556666"
START = datetime(2026, 11, 30, 22, 30, tzinfo=UTC)  # crosses midnight: two daily partitions
HOURS = 2.0

#: The DuckDB table standing in for the Athena table: the same column names and types.
DUCKDB_COLUMNS = {
    "eventversion": "VARCHAR",
    "useridentity": (
        "STRUCT(type VARCHAR, principalid VARCHAR, arn VARCHAR, accountid VARCHAR, invokedby VARCHAR, "
        "sessioncontext STRUCT(sessionissuer STRUCT(type VARCHAR, principalid VARCHAR, arn VARCHAR, "
        "accountid VARCHAR, username VARCHAR)))"
    ),
    "eventtime": "VARCHAR",
    "eventsource": "VARCHAR",
    "eventname": "VARCHAR",
    "awsregion": "VARCHAR",
    "errorcode": "VARCHAR",
    "errormessage": "VARCHAR",
    "requestparameters": "VARCHAR",
    "eventid": "VARCHAR",
    "readonly": "VARCHAR",
    "resources": "STRUCT(arn VARCHAR, accountid VARCHAR, type VARCHAR)[]",
    "eventtype": "VARCHAR",
    "recipientaccountid": "VARCHAR",
    "managementevent": "BOOLEAN",
    "eventcategory": "VARCHAR",
    "account": "VARCHAR",
    "region": "VARCHAR",
    "timestamp": "VARCHAR",
}


def _lower(value: Any) -> Any:
    """The JSON SerDe matches struct fields case-insensitively: CloudTrail's camelCase becomes the column names."""
    if isinstance(value, dict):
        return {k.lower(): _lower(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lower(v) for v in value]
    return value


def athena_row(record: dict[str, Any], account: str, region: str) -> dict[str, Any]:
    """One CloudTrail record as a row of the Athena table (partition columns from the S3 key's layout)."""
    row = {k.lower(): v for k, v in record.items()}
    params = row.get("requestparameters")
    row["requestparameters"] = None if params is None else orjson.dumps(params).decode()
    row["useridentity"] = _lower(row.get("useridentity"))
    row["resources"] = _lower(row.get("resources"))
    row.update(account=account, region=region, timestamp=record["eventTime"][:10].replace("-", "/"))
    return {k: row.get(k) for k in DUCKDB_COLUMNS}


#: The planted problems of tests.factories.Workload at a quarter of its rates (about 40,000 records per account in
#: two hours).
_RATES: dict[str, Any] = {
    "hot_key_burst_rps": 40.0,
    "hot_key_burst_fraction": 0.1,
    "orders_rate": 1.0,
    "sessions_rate": 0.4,
    "jobs_rate": 0.5,
    "users_rate": 0.5,
    "catalog_rate": 0.4,
}


def trail_records() -> Iterator[tuple[str, str, list[dict[str, Any]]]]:
    """Two accounts in two Regions, two hours each (the workload with its planted problems)."""
    for account, region, seed in ((A, "us-east-1", 7), (B, "eu-west-1", 8)):
        workload = Workload(account=account, region=region, hours=HOURS, seed=seed, **_RATES)
        yield account, region, workload_records(workload, START)


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, duckdb.DuckDBPyConnection]:
    """The trail as files in the organisation layout, and the same records in a DuckDB table ``cloudtrail``."""
    root = tmp_path_factory.mktemp("trail")
    rows: list[dict[str, Any]] = []
    for account, region, records in trail_records():
        by_day: dict[str, list[dict[str, Any]]] = {}
        for rec in records:
            by_day.setdefault(rec["eventTime"][:10].replace("-", "/"), []).append(rec)
            rows.append(athena_row(rec, account, region))
        for day, recs in by_day.items():
            folder = root / "AWSLogs" / ORG / account / "CloudTrail" / region / day
            folder.mkdir(parents=True)
            write_log_file(recs, folder / f"{account}_CloudTrail_{region}_{day.replace('/', '')}.json.gz")
    ndjson = root / "rows.ndjson"
    ndjson.write_bytes(b"\n".join(orjson.dumps(r) for r in rows))
    con = duckdb.connect()
    columns = ", ".join(f"'{k}': '{v}'" for k, v in DUCKDB_COLUMNS.items())
    con.execute(
        f"CREATE TABLE cloudtrail AS SELECT * FROM read_json('{ndjson}', format='newline_delimited', "
        f"columns={{{columns}}})"
    )
    return root / "AWSLogs", con


def run_duckdb(con: duckdb.DuckDBPyConnection, scope: AthenaScope) -> list[dict[str, Any]]:
    """The Athena SQL, transpiled to DuckDB, over the ``cloudtrail`` table; rows as Athena returns them (text)."""
    [sql] = sqlglot.transpile(aggregation_sql(scope, table="cloudtrail"), read="trino", write="duckdb")
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [
        {
            n: (None if v is None else str(v).lower() if isinstance(v, bool) else str(v))
            for n, v in zip(names, r, strict=True)
        }
        for r in cursor.fetchall()
    ]


def findings_via_sql(rows: Sequence[dict[str, Any]], config: AnalysisConfig) -> tuple[list[Finding], Any, RowStats]:
    aggs = new_aggregate_set(config)
    stats = RowStats()
    aggregate_rows(rows, aggs, stats)
    spans = aggs.spans()
    findings, errors = evaluate(spans, config)
    assert errors == []
    return period_totals(findings, aggs, config), access_patterns(spans), stats


def _untotalled(findings: Sequence[Finding]) -> list[Finding]:
    return [f.model_copy(update={"totals": None}) for f in findings]


def _comparable(f: Finding) -> tuple[Any, ...]:
    ev = f.evidence
    return (
        f.id,
        f.kind.value,
        f.severity.value,
        f.account,
        f.region,
        f.table,
        f.index,
        orjson.dumps(ev.get("principal")),
        orjson.dumps(ev.get("key"), option=orjson.OPT_SORT_KEYS),
        orjson.dumps(getattr(f, "totals", None), default=str),  # period totals, where the model has them
        orjson.dumps(ev, option=orjson.OPT_SORT_KEYS, default=str),
        f.first_seen,
        f.last_seen,
    )


def scope(accounts: Sequence[str] = (A, B), regions: Sequence[str] = ("eu-west-1", "us-east-1")) -> AthenaScope:
    return AthenaScope(
        bucket="org-trail-logs",
        organization_id=ORG,
        accounts=tuple(accounts),
        regions=tuple(regions),
        start=START,
        end=START + timedelta(hours=HOURS),
    )


def test_sql_in_duckdb_gives_the_same_findings_as_analyze_trail(
    trail: tuple[Path, duckdb.DuckDBPyConnection],
) -> None:
    folder, con = trail
    config = AnalysisConfig()
    expected = analyze_trail([str(folder)], config, processes=1)
    rows = run_duckdb(con, scope())
    findings, patterns, stats = findings_via_sql(rows, config)

    assert stats.data_events == expected.stats.data_events
    assert stats.rows < stats.data_events  # aggregated: identical calls of a minute share a row
    assert {(f.account, f.region) for f in findings} == {(A, "us-east-1"), (B, "eu-west-1")}
    # Both state the findings for the period the same way (auditor.engine.period_totals: each window's sightings
    # summed, the highest severity a window reached, a throttling story's cause over the windows): equal totals, but
    # for a hot key's count, a heavy-hitter sketch estimate merged in another order (compared without totals).
    assert sorted(map(_comparable, _untotalled(findings))) == sorted(map(_comparable, _untotalled(expected.findings)))
    assert {f.id: f.totals for f in findings if f.kind is not FindingKind.HOT_KEY} == {
        f.id: f.totals for f in expected.findings if f.kind is not FindingKind.HOT_KEY
    }
    assert [p.model_dump() for p in patterns] == [p.model_dump() for p in expected.access_patterns]


def test_the_scope_selects_accounts_regions_and_time(trail: tuple[Path, duckdb.DuckDBPyConnection]) -> None:
    _, con = trail
    only_b = run_duckdb(con, scope(accounts=[B], regions=["eu-west-1"]))
    assert {r["account"] for r in only_b} == {B}
    assert run_duckdb(con, scope(accounts=[A], regions=["eu-west-1"])) == []  # A logs in us-east-1 only
    late = AthenaScope(
        bucket="org-trail-logs",
        organization_id=ORG,
        accounts=(A,),
        regions=("us-east-1",),
        start=START + timedelta(hours=1),
        end=START + timedelta(hours=1, minutes=30),
    )
    minutes = {r["minute"] for r in run_duckdb(con, late)}
    assert min(minutes) == "2026-11-30T23:30" and max(minutes) == "2026-11-30T23:59"


def test_an_empty_range_gives_no_rows(trail: tuple[Path, duckdb.DuckDBPyConnection]) -> None:
    _, con = trail
    empty = AthenaScope(
        bucket="org-trail-logs",
        accounts=(A,),
        regions=("us-east-1",),
        start=datetime(2025, 1, 1, tzinfo=UTC),
        end=datetime(2025, 1, 2, tzinfo=UTC),
    )
    rows = run_duckdb(con, empty)
    findings, patterns, stats = findings_via_sql(rows, AnalysisConfig())
    assert (rows, findings, patterns, stats.data_events) == ([], [], [], 0)


def test_create_table_projects_the_organisation_layout() -> None:
    ddl = create_table_sql(scope())
    assert "LOCATION 's3://org-trail-logs/AWSLogs/o-a1b2c3d4e5/'" in ddl
    assert (
        "'storage.location.template' = 's3://org-trail-logs/AWSLogs/o-a1b2c3d4e5/${account}/CloudTrail/${region}/"
        "${timestamp}'" in ddl
    )
    assert f"'projection.account.values' = '{A},{B}'" in ddl
    assert "'projection.region.values' = 'eu-west-1,us-east-1'" in ddl
    assert scope().days() == ["2026/11/30", "2026/12/01"]
    single = AthenaScope(
        bucket="b-logs",
        prefix="trail/",
        accounts=(A,),
        regions=("us-east-1",),
        start=START,
        end=START + timedelta(minutes=5),
    )
    assert "LOCATION 's3://b-logs/trail/AWSLogs/'" in create_table_sql(single)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("bucket", "Bad_Bucket", "bucket"),
        ("organization_id", "o-x'; DROP", "Organization"),
        ("accounts", ("1111",), "12-digit"),
        ("regions", ("us-east-1'--",), "Region"),
        ("prefix", "a'b", "prefix"),
    ],
)
def test_scope_values_that_would_break_the_sql_are_refused(field: str, value: Any, message: str) -> None:
    base: dict[str, Any] = {
        "bucket": "org-trail-logs",
        "accounts": (A,),
        "regions": ("us-east-1",),
        "start": START,
        "end": START + timedelta(hours=1),
    }
    base[field] = value
    with pytest.raises(InputError, match=message):
        AthenaScope(**base)


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (datetime(1, 1, 1, tzinfo=UTC), START, "years 1970 to 2999"),
        (START, datetime(9999, 12, 31, tzinfo=UTC), "years 1970 to 2999"),
        (START - timedelta(days=401), START, "at most 400 days"),
        (START, START, "--start must be before --end"),
    ],
)
def test_a_scope_never_lists_more_than_400_days_of_partitions(start: datetime, end: datetime, message: str) -> None:
    base: dict[str, Any] = {"bucket": "org-trail-logs", "accounts": (A,), "regions": ("us-east-1",)}
    with pytest.raises(InputError, match=message):
        AthenaScope(**base, start=start, end=end)
    widest = AthenaScope(**base, start=START - timedelta(days=400), end=START)
    assert len(widest.days()) <= 401
    with pytest.raises(InputError, match="at most 400 days"):  # replace() checks again
        replace(widest, start=START - timedelta(days=401))

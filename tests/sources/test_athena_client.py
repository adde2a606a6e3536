"""``ddb-audit athena``'s Athena calls, answered by botocore's Stubber with the response shapes AWS documents
(StartQueryExecution, GetQueryExecution, GetQueryResults, StopQueryExecution): success, failure, timeout, and a
prefix with no data for the range."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from auditor.cli import main
from auditor.config import AnalysisConfig
from auditor.models.finding import FindingKind
from auditor.service.athena_audit import AthenaError, run_athena_audit
from auditor.sources.athena import COLUMNS, AthenaScope, aggregation_sql, create_table_sql

A = "111122223333"
START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
SCOPE = AthenaScope(
    bucket="org-trail-logs",
    organization_id="o-a1b2c3d4e5",
    accounts=(A,),
    regions=("us-east-1",),
    start=START,
    end=START + timedelta(hours=1),
)
CLEANER = "arn:aws:iam::111122223333:role/session-cleaner"


def _execution(query_id: str, state: str, *, scanned: int = 0, reason: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"State": state, "SubmissionDateTime": START}
    if reason:
        status["StateChangeReason"] = reason
        status["AthenaError"] = {"ErrorCategory": 2, "ErrorType": 1301, "Retryable": False, "ErrorMessage": reason}
    return {
        "QueryExecution": {
            "QueryExecutionId": query_id,
            "Query": "SELECT ...",
            "StatementType": "DML",
            "ResultConfiguration": {"OutputLocation": f"s3://athena-results/{query_id}.csv"},
            "QueryExecutionContext": {"Database": "default"},
            "Status": status,
            "Statistics": {
                "EngineExecutionTimeInMillis": 1834,
                "DataScannedInBytes": scanned,
                "TotalExecutionTimeInMillis": 2010,
                "QueryQueueTimeInMillis": 120,
                "ServiceProcessingTimeInMillis": 56,
            },
            "WorkGroup": "primary",
        }
    }


def _results(rows: list[dict[str, str | None]], *, header: bool, token: str | None = None) -> dict[str, Any]:
    data = [{"Data": [{"VarCharValue": c} for c in COLUMNS]}] if header else []
    for row in rows:
        data.append({"Data": [{"VarCharValue": row[c]} if row.get(c) is not None else {} for c in COLUMNS]})
    page: dict[str, Any] = {
        "UpdateCount": 0,
        "ResultSet": {
            "Rows": data,
            "ResultSetMetadata": {
                "ColumnInfo": [
                    {"CatalogName": "hive", "Name": c, "Label": c, "Type": "varchar", "Nullable": "UNKNOWN"}
                    for c in COLUMNS
                ]
            },
        },
    }
    if token:
        page["NextToken"] = token
    return page


def _scan_row(minute: int, calls: int, page: int = 0) -> dict[str, str | None]:
    """One aggregated row: ``calls`` Scan pages in one second; ``page`` > 0 is a later page of a scan, which carries
    the ``exclusiveStartKey`` its previous page returned (so each continuation is a row of its own)."""
    t = START + timedelta(minutes=minute)
    params = '{"tableName":"Sessions","limit":1000}'
    if page:
        params = f'{{"tableName":"Sessions","limit":1000,"exclusiveStartKey":{{"id":"s-{minute}-{page}"}}}}'
    return {
        "account": A,
        "region": "us-east-1",
        "minute": t.strftime("%Y-%m-%dT%H:%M"),
        "second": t.strftime("%Y-%m-%dT%H:%M:05"),
        "event_name": "Scan",
        "event_category": "Data",
        "management_event": "false",
        "identity_type": "AssumedRole",
        "identity_arn": "arn:aws:sts::111122223333:assumed-role/session-cleaner/i-0abc",
        "identity_account": A,
        "invoked_by": None,
        "issuer_arn": CLEANER,
        "resource_arn": "arn:aws:dynamodb:us-east-1:111122223333:table/Sessions",
        "request_parameters": params,
        "error_code": None,
        "error_message": None,
        "calls": str(calls),
        "first_time": t.strftime("%Y-%m-%dT%H:%M:05Z"),
        "last_time": t.strftime("%Y-%m-%dT%H:%M:05Z"),  # rows are per second
    }


def _start(stub: Stubber, query_id: str, sql: str) -> None:
    stub.add_response(
        "start_query_execution",
        {"QueryExecutionId": query_id},
        {
            "QueryString": sql,
            "QueryExecutionContext": {"Database": "default"},
            "WorkGroup": "primary",
            "ResultConfiguration": {"OutputLocation": "s3://athena-results/"},
        },
    )


def _client() -> tuple[Any, Stubber]:
    client = boto3.Session().client("athena", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


def _run(client: Any, **kwargs: Any) -> Any:
    return run_athena_audit(
        client,
        SCOPE,
        AnalysisConfig(),
        workgroup="primary",
        output_location="s3://athena-results/",
        sleep=lambda _: None,
        **kwargs,
    )


def test_queries_run_and_their_rows_become_findings_with_bytes_and_cost() -> None:
    client, stub = _client()
    _start(stub, "ddl-1", create_table_sql(SCOPE))
    stub.add_response("get_query_execution", _execution("ddl-1", "SUCCEEDED"), {"QueryExecutionId": "ddl-1"})
    _start(stub, "agg-1", aggregation_sql(SCOPE))
    stub.add_response("get_query_execution", _execution("agg-1", "QUEUED"), {"QueryExecutionId": "agg-1"})
    stub.add_response("get_query_execution", _execution("agg-1", "RUNNING"), {"QueryExecutionId": "agg-1"})
    scanned = 3 * 1024**3 + 5
    stub.add_response(
        "get_query_execution", _execution("agg-1", "SUCCEEDED", scanned=scanned), {"QueryExecutionId": "agg-1"}
    )
    rows = [_scan_row(m, 1, page) for m in range(60) for page in range(12)]
    stub.add_response(
        "get_query_results", _results(rows[:400], header=True, token="page-2"), {"QueryExecutionId": "agg-1"}
    )
    stub.add_response(
        "get_query_results",
        _results(rows[400:], header=False),
        {"QueryExecutionId": "agg-1", "NextToken": "page-2"},
    )
    with stub:
        result = _run(client)
    stub.assert_no_pending_responses()

    assert result.rows.rows == 720
    assert result.rows.data_events == 720
    scans = [f for f in result.findings if f.kind is FindingKind.SCAN]
    # each minute's 12 pages (a start without exclusiveStartKey, 11 continuations with it) are one logical scan
    assert [
        (f.account, f.region, f.table, f.evidence["principal"], f.evidence["count"], f.evidence["pages"]) for f in scans
    ] == [(A, "us-east-1", "Sessions", CLEANER, 60, 720)]
    assert result.bytes_scanned == scanned
    # billed: rounded up to the MB; the DDL is free
    assert result.cost_usd == pytest.approx((3 * 1024 + 1) / 1024**2 * 5.0)
    assert result.stats()["query_ids"] == ["ddl-1", "agg-1"]


def test_a_failed_query_is_an_error_with_athenas_reason() -> None:
    client, stub = _client()
    _start(stub, "ddl-1", create_table_sql(SCOPE))
    reason = "HIVE_BAD_DATA: Error parsing field value for field 3"
    stub.add_response(
        "get_query_execution", _execution("ddl-1", "FAILED", reason=reason), {"QueryExecutionId": "ddl-1"}
    )
    with stub, pytest.raises(AthenaError, match="ddl query ddl-1 failed: HIVE_BAD_DATA"):
        _run(client)


def test_a_query_past_the_timeout_is_stopped_and_reported() -> None:
    client, stub = _client()
    _start(stub, "ddl-1", create_table_sql(SCOPE))
    stub.add_response("get_query_execution", _execution("ddl-1", "SUCCEEDED"), {"QueryExecutionId": "ddl-1"})
    _start(stub, "agg-1", aggregation_sql(SCOPE))
    for _ in range(3):
        stub.add_response("get_query_execution", _execution("agg-1", "RUNNING"), {"QueryExecutionId": "agg-1"})
    stub.add_response("stop_query_execution", {}, {"QueryExecutionId": "agg-1"})
    ticks = iter([0.0, 0.0, 10.0, 20.0, 61.0])  # two deadlines, then one reading per poll
    with stub, pytest.raises(AthenaError, match="did not finish within 60 s"):
        _run(client, timeout_seconds=60, clock=lambda: next(ticks))
    stub.assert_no_pending_responses()


def test_a_prefix_with_no_data_gives_no_findings() -> None:
    client, stub = _client()
    _start(stub, "ddl-1", create_table_sql(SCOPE))
    stub.add_response("get_query_execution", _execution("ddl-1", "SUCCEEDED"), {"QueryExecutionId": "ddl-1"})
    _start(stub, "agg-1", aggregation_sql(SCOPE))
    stub.add_response("get_query_execution", _execution("agg-1", "SUCCEEDED"), {"QueryExecutionId": "agg-1"})
    stub.add_response("get_query_results", _results([], header=True), {"QueryExecutionId": "agg-1"})
    with stub:
        result = _run(client)
    assert (result.findings, result.access_patterns, result.rows.data_events) == ([], [], 0)
    assert result.bytes_scanned == 0
    assert result.cost_usd == pytest.approx(10 / 1024**2 * 5.0)  # the 10 MB minimum of the aggregation query


def test_start_refused_is_an_error() -> None:
    client, stub = _client()
    stub.add_client_error(
        "start_query_execution",
        service_error_code="InvalidRequestException",
        service_message="Unable to verify/create output bucket athena-results",
        expected_params={
            "QueryString": ANY,
            "QueryExecutionContext": ANY,
            "WorkGroup": ANY,
            "ResultConfiguration": ANY,
        },
    )
    with stub, pytest.raises(AthenaError, match="did not start the ddl query: Unable to verify/create output"):
        _run(client)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bucket", "Bad_Bucket", "--accounts", A, "--regions", "us-east-1"], "not an S3 bucket name"),
        (["--bucket", "b-logs", "--accounts", "12", "--regions", "us-east-1"], "12-digit"),
        (["--bucket", "b-logs", "--accounts", A, "--regions", "us-east-1", "--start", "yesterday"], "ISO 8601"),
    ],
)
def test_cli_input_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["athena", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------- streamed result pages


def _paged(stub: Stubber, rows: list[dict[str, str | None]], per_page: int) -> list[dict[str, Any]]:
    """Queue ``rows`` as GetQueryResults pages (the header on the first, NextToken on all but the last)."""
    pages = []
    for n, first in enumerate(range(0, len(rows), per_page)):
        last = first + per_page >= len(rows)
        page = _results(rows[first : first + per_page], header=n == 0, token=None if last else f"token-{n + 1}")
        params = {"QueryExecutionId": "agg-1", **({"NextToken": f"token-{n}"} if n else {})}
        stub.add_response("get_query_results", page, params)
        pages.append(page)
    return pages


def test_result_pages_are_aggregated_one_at_a_time_with_the_all_in_memory_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from auditor.engine import access_patterns, evaluate, new_aggregate_set, period_totals
    from auditor.service import athena_audit
    from auditor.sources.athena import RowStats, aggregate_rows, rows_from_result_set

    client, stub = _client()
    _start(stub, "ddl-1", create_table_sql(SCOPE))
    stub.add_response("get_query_execution", _execution("ddl-1", "SUCCEEDED"), {"QueryExecutionId": "ddl-1"})
    _start(stub, "agg-1", aggregation_sql(SCOPE))
    stub.add_response("get_query_execution", _execution("agg-1", "SUCCEEDED"), {"QueryExecutionId": "agg-1"})
    per_page, n_pages = 40, 25
    rows = [_scan_row(k % 60, 1 + k % 7) for k in range(per_page * n_pages)]
    pages = _paged(stub, rows, per_page)
    assert len(pages) == n_pages

    fetched: list[int] = []
    client.meta.events.register("after-call.athena.GetQueryResults", lambda **_: fetched.append(1))
    seen: list[int] = []
    real = athena_audit.aggregate_rows

    def watched(result_rows: Any, aggregates: Any, stats: Any) -> None:
        def each() -> Any:
            for k, row in enumerate(result_rows):
                # row k is on page k // per_page: that page is the last one read, the next is not read yet
                assert len(fetched) == k // per_page + 1, (k, len(fetched))
                seen.append(k)
                yield row

        real(each(), aggregates, stats)

    monkeypatch.setattr(athena_audit, "aggregate_rows", watched)
    with stub:
        result = _run(client)
    stub.assert_no_pending_responses()
    assert len(seen) == len(rows) and len(fetched) == n_pages

    # the same as aggregating every row held in memory at once
    config = AnalysisConfig()
    aggregates, stats = new_aggregate_set(config), RowStats()
    aggregate_rows(rows_from_result_set(pages), aggregates, stats)
    spans = aggregates.spans()
    findings, errors = evaluate(spans, config)
    assert result.findings == period_totals(findings, aggregates, config) and result.findings
    assert result.access_patterns == access_patterns(spans)
    assert result.rows == stats and stats.rows == len(rows) and result.detector_errors == errors


def test_a_result_page_that_cannot_be_read_is_an_athena_error() -> None:
    from auditor.sources.athena_queries import iter_rows

    client, stub = _client()
    stub.add_response(
        "get_query_results", _results([_scan_row(0, 1)], header=True, token="token-1"), {"QueryExecutionId": "agg-1"}
    )
    stub.add_client_error(
        "get_query_results",
        service_error_code="InvalidRequestException",
        service_message="Query has not yet finished",
        expected_params={"QueryExecutionId": "agg-1", "NextToken": "token-1"},
    )
    rows = iter_rows(client, "agg-1")
    with stub:
        assert next(rows)["calls"] == "1"
        with pytest.raises(AthenaError, match="cannot read the results of Athena query agg-1: Query has not yet"):
            next(rows)

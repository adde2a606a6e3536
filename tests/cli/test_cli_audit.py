"""``ddb-audit audit`` end to end against moto server through AWS_ENDPOINT_URL, with planted CloudWatch metrics:
the right cause for each throttling table, nothing for quiet tables, ``unused_index`` for a written, unread GSI."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.report.model import IsoWeek
from tests.cw_support import aws, create_table, dims, minutes, put_data, put_points


@pytest.fixture
def planted(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Tables with planted metrics over the last 40 minutes; returns the first planted minute."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # moto answers HTTP 500 for Contributor Insights: do not retry it
    ddb, cw = aws("dynamodb", aws_reset), aws("cloudwatch", aws_reset)
    now = int(time.time())
    t0 = now - now % 60 - 40 * 60

    create_table(ddb, "hot-partition", read=1000, write=1000)
    put_points(cw, "WriteKeyRangeThroughputThrottleEvents", "hot-partition", minutes(t0, 6, 40))
    put_points(cw, "WriteThrottleEvents", "hot-partition", minutes(t0, 6, 40))
    put_points(cw, "ConsumedWriteCapacityUnits", "hot-partition", minutes(t0, 30, 6000))

    create_table(ddb, "under-provisioned", read=10, write=10)
    put_points(cw, "ReadProvisionedThroughputThrottleEvents", "under-provisioned", minutes(t0, 35, 20))
    put_points(cw, "ConsumedReadCapacityUnits", "under-provisioned", minutes(t0, 35, 600))

    create_table(ddb, "capped", on_demand=True)
    put_points(cw, "WriteMaxOnDemandThroughputThrottleEvents", "capped", minutes(t0, 4, 9))

    create_table(ddb, "quota", on_demand=True)
    put_points(cw, "ReadAccountLimitThrottleEvents", "quota", minutes(t0, 4, 9, step=2))

    create_table(ddb, "indexed", gsis=["byStatus"])
    put_points(cw, "WriteProvisionedThroughputThrottleEvents", "indexed", minutes(t0, 5, 30), index="byStatus")
    put_points(cw, "WriteThrottleEvents", "indexed", minutes(t0, 5, 30), index="byStatus")
    put_points(cw, "WriteThrottleEvents", "indexed", minutes(t0, 5, 30))
    put_points(cw, "ConsumedReadCapacityUnits", "indexed", minutes(t0, 5, 60), index="byStatus")

    create_table(ddb, "legacy", read=100, write=100)  # throttles without per-cause metrics, far below capacity
    put_points(cw, "WriteThrottleEvents", "legacy", minutes(t0, 5, 12))
    put_points(cw, "ConsumedWriteCapacityUnits", "legacy", minutes(t0, 30, 600))

    create_table(ddb, "blip")  # an auto-scaling blip: one minute
    put_points(cw, "WriteProvisionedThroughputThrottleEvents", "blip", {t0: 500})

    create_table(ddb, "quiet", gsis=["byDay"])
    put_points(cw, "ConsumedReadCapacityUnits", "quiet", minutes(t0, 30, 120))
    put_points(cw, "ConsumedWriteCapacityUnits", "quiet", minutes(t0, 30, 60), index="byDay")
    put_points(cw, "ConsumedReadCapacityUnits", "quiet", minutes(t0, 30, 6), index="byDay")

    create_table(ddb, "unread-index", on_demand=True, gsis=["byDate"])
    put_points(cw, "ConsumedWriteCapacityUnits", "unread-index", minutes(t0, 30, 1000), index="byDate")
    put_points(cw, "ConsumedReadCapacityUnits", "unread-index", minutes(t0, 30, 0), index="byDate")

    create_table(ddb, "scanned", on_demand=True)
    put_data(
        cw,
        [
            {
                "MetricName": "SuccessfulRequestLatency",
                "Dimensions": dims("scanned", operation="Scan"),
                "Timestamp": datetime.fromtimestamp(t, UTC),
                "StatisticValues": {"SampleCount": 10, "Sum": 80.0, "Minimum": 5.0, "Maximum": 12.0},
                "Unit": "Milliseconds",
            }
            for t in minutes(t0, 30, 0)
        ],
    )
    put_points(cw, "ReturnedItemCount", "scanned", minutes(t0, 30, 250), operation="Scan")
    return t0


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_audit_names_each_cause_and_stays_quiet_on_quiet_tables(
    planted: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # (billing and the activity read have their own reads, tested elsewhere: skipped here)
    code, out, err = run(capsys, "--format", "json", "--days", "1", "--billing-days", "0", "--idle-days", "0")
    assert code == 0, err
    doc = json.loads(out)
    findings = doc["findings"]
    throttling = {(f["table"], f["index"], f["evidence"]["cause"]) for f in findings if f["kind"] == "throttling"}
    assert throttling == {
        ("hot-partition", None, "key_range"),
        ("under-provisioned", None, "provisioned"),
        ("capped", None, "on_demand_max"),
        ("quota", None, "account_limit"),
        ("indexed", "byStatus", "gsi_backpressure"),
        ("legacy", None, "key_range"),
    }
    by_table = {f["table"]: f for f in findings if f["kind"] == "throttling"}
    assert by_table["legacy"]["evidence"]["cause_source"] == "inferred_low_utilisation"
    assert by_table["hot-partition"]["evidence"]["cause_source"] == "cause_metrics"
    assert by_table["hot-partition"]["evidence"]["write_throttle_events"] == 240
    assert by_table["indexed"]["evidence"]["index_cause"] == "provisioned"
    assert by_table["under-provisioned"]["severity"] == "high"  # 35 throttled minutes
    assert by_table["hot-partition"]["account"] == "123456789012"
    unused = [(f["table"], f["index"]) for f in findings if f["kind"] == "unused_index"]
    assert unused == [("unread-index", "byDate")]
    scans = [f for f in findings if f["kind"] == "scan"]
    assert [(f["table"], f["evidence"]["count"], f["evidence"]["source"]) for f in scans] == [
        ("scanned", 300, "cloudwatch")
    ]
    assert not {f["table"] for f in findings} & {"quiet", "blip"}
    for f in findings:
        required = {
            "throttling": {"cause", "read_throttle_events", "write_throttle_events", "source"},
            "unused_index": {"days_analyzed", "reads", "writes"},
            "scan": {"principal", "operation", "count", "source"},
        }[f["kind"]]
        assert required <= set(f["evidence"]), f["kind"]
    assert [t["table"] for t in doc["tables"]] == sorted(t["table"] for t in doc["tables"])
    assert len(doc["tables"]) == 10
    stats = doc["stats"]
    assert stats["tables_audited"] == 10
    assert stats["get_metric_data_calls"] == 1
    assert stats["metrics_requested"] == stats["series_active"] < stats["series_candidates"]
    assert stats["estimated_cost_usd"] == pytest.approx(stats["metrics_requested"] * 0.01 / 1000)
    # moto does not implement Contributor Insights: a gap, said once on stderr, never a failure
    assert [g["call"] for g in doc["gaps"]] == ["dynamodb:ListContributorInsights"]
    assert "warning: dynamodb:ListContributorInsights" in err


def test_fail_on_and_formats(planted: int, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--days", "0.1", "--fail-on", "high")
    assert code == 1
    assert "Throttling on under-provisioned (provisioned)" in out
    code, out, _ = run(capsys, "--days", "0.1", "--fail-on", "critical", "--prefix", "hot-", "--format", "markdown")
    assert code == 0
    assert out.startswith("# DynamoDB live audit")
    assert "key range" in out and "under-provisioned" not in out
    code, out, _ = run(capsys, "--days", "0.1", "--tables", "quiet,blip", "--format", "table")
    assert code == 0
    assert out.startswith("Findings\n========\nNo findings.")


def test_usage_and_input_errors_exit_2_with_one_line(planted: int, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in (
        (["--tables", "nope,absent"], "no such table: absent, nope"),
        (["--tag", "oops"], "--tag must be KEY=VALUE, got 'oops'"),
    ):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), err
        assert err.strip().splitlines()[-1] == f"ddb-audit: error: {message}"
    with pytest.raises(SystemExit) as exc:
        main(["audit", "--days", "0"])
    assert exc.value.code == 2


def test_unreachable_endpoint_is_a_clear_error(
    aws_reset: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    code, out, err = run(capsys, "--days", "0.1")
    assert (code, out) == (2, "")
    assert err.startswith("ddb-audit: error: cannot reach AWS")


def test_region_option_is_used(planted: int, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--days", "0.1", "--region", "eu-west-1", "--format", "json")
    assert code == 0
    assert json.loads(out)["tables"] == []  # the tables live in us-east-1


def test_audit_json_carries_capacity_that_what_if_reads(
    planted: int, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "--format", "json", "--days", "1", "--billing-days", "0")
    assert code == 0, err
    tables = {t["table"]: t for t in json.loads(out)["tables"]}
    (under,) = tables["under-provisioned"]["capacity"]
    assert under["index"] is None and under["billing_mode"] == "PROVISIONED"
    assert under["peak_read_per_second"] == pytest.approx(600 / 60)
    assert under["peak_write_per_second"] == 0
    assert (under["provisioned_read"], under["provisioned_write"]) == (10, 10)
    assert [c["index"] for c in tables["indexed"]["capacity"]] == [None, "byStatus"]
    audit_file = tmp_path / "audit.json"
    audit_file.write_text(out)
    # A trail with a few reads of the same table: the CloudWatch capacity decides its table-level limits.
    record = {
        "eventVersion": "1.08",
        "eventTime": datetime.fromtimestamp(planted, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": "GetItem",
        "awsRegion": "us-east-1",
        "requestParameters": {"tableName": "under-provisioned", "key": {"pk": "A"}},
        "responseElements": None,
        "readOnly": True,
        "eventType": "AwsApiCall",
        "managementEvent": False,
        "recipientAccountId": "123456789012",
        "eventCategory": "Data",
    }
    trail = tmp_path / "trail.json"
    trail.write_text(json.dumps({"Records": [record | {"eventID": f"e{i}"} for i in range(5)]}))
    code = main(["what-if", str(trail), "--audit", str(audit_file), "--growth", "1.5", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    first = doc["items"][0]
    assert (first["table"], first["limit"], first["access"], first["source"]) == (
        "under-provisioned",
        "provisioned",
        "read",
        "cloudwatch",
    )
    assert first["headroom"] == pytest.approx(1.0) and first["throttles_at_growth"] is True
    hot = next(i for i in doc["items"] if i["table"] == "hot-partition" and i["limit"] == "provisioned")
    assert hot["access"] == "write" and hot["headroom"] == pytest.approx(1000 / 100)


def test_audit_reads_30_days_of_activity_for_idle_tables_and_ttl(
    aws_reset: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import timedelta

    from tests.moto_server import backdate_table

    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    ddb, cw = aws("dynamodb", aws_reset), aws("cloudwatch", aws_reset)
    now = int(time.time())
    t0 = now - now % 60 - 3 * 86_400
    long_ago = datetime.now(UTC) - timedelta(days=90)
    create_table(ddb, "archive", read=50, write=20)  # no traffic at all
    create_table(ddb, "carts", on_demand=True)  # written every day, TTL on, nothing expires
    ddb.update_time_to_live(TableName="carts", TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"})
    ddb.put_item(TableName="carts", Item={"pk": {"S": "CART#1"}, "expiresAt": {"N": str(now * 1000)}})
    put_points(cw, "ConsumedWriteCapacityUnits", "carts", {t0 + 86_400 * d: 500.0 for d in range(3)})
    create_table(ddb, "busy", on_demand=True)  # old, with reads
    put_points(cw, "ConsumedReadCapacityUnits", "busy", {t0: 10.0})
    create_table(ddb, "fresh", read=50, write=20)  # idle, but created today
    for name in ("archive", "carts", "busy"):
        backdate_table(name, long_ago)

    code, out, err = run(capsys, "--format", "json", "--days", "0.05", "--billing-days", "0")
    assert code == 0, err
    doc = json.loads(out)
    found = {(f["kind"], f["table"]): f for f in doc["findings"] if f["kind"] in ("idle_table", "ttl_not_expiring")}
    assert sorted(found) == [("idle_table", "archive"), ("ttl_not_expiring", "carts")]
    idle = found[("idle_table", "archive")]["evidence"]
    assert idle["days_idle"] == 30 and idle["provisioned_read"] == 50 and idle["provisioned_write"] == 20
    assert idle["monthly_capacity_cost"] == pytest.approx(730 * (50 * 0.00013 + 20 * 0.00065), abs=0.01)
    ttl = found[("ttl_not_expiring", "carts")]["evidence"]
    assert ttl["ttl_attribute"] == "expiresAt" and ttl["writes"] == 1500 and ttl["write_days"] == 3
    activity = doc["stats"]["activity"]
    assert activity["days"] == 30 and activity["tables_read"] == 4
    # read + write per table, and TTL deletions for the TTL table: 9 series in one call.
    assert (activity["get_metric_data_calls"], activity["metrics_requested"]) == (1, 9)
    # --idle-days 0 skips the read.
    code, out, _ = run(capsys, "--format", "json", "--days", "0.05", "--billing-days", "0", "--idle-days", "0")
    doc = json.loads(out)
    assert doc["stats"]["activity"] is None
    assert not [f for f in doc["findings"] if f["kind"] in ("idle_table", "ttl_not_expiring")]


def test_audit_shows_the_cost_ledger(planted: int, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--format", "json", "--days", "1", "--billing-days", "0")
    assert code == 0, err
    doc = json.loads(out)
    cost = doc["cost"]
    rows = {r["table"]: r for r in cost["tables"]}
    assert set(rows) == {t["table"] for t in doc["tables"]}
    # On demand: the GSI's 30 minutes of 1,000 write units, at $0.625 per million.
    assert rows["unread-index"]["dynamodb_usd"] == pytest.approx(30 * 1000 * 0.625e-6)
    # Provisioned 10 RCU / 10 WCU for the window (DescribeTable's units: moto publishes no Provisioned*).
    hours = cost["window_days"] * 24
    assert rows["under-provisioned"]["dynamodb_usd"] == pytest.approx(hours * 10 * (0.00013 + 0.00065), rel=1e-3)
    # The auditor's side of a CLI audit: its own metrics requested, $0.01 per 1,000.
    assert cost["total"]["auditor_usd"] == pytest.approx(doc["stats"]["metrics_requested"] * 1e-5)
    assert sum(r["auditor_usd"] for r in rows.values()) <= cost["total"]["auditor_usd"] + 1e-9
    assert rows["quiet"]["auditor_usd"] > 0
    total = cost["total"]
    assert total["dynamodb_usd"] == pytest.approx(sum(r["dynamodb_usd"] for r in rows.values()), abs=1e-6)
    assert total["ratio"] == pytest.approx(total["auditor_usd"] / total["dynamodb_usd"], rel=1e-3)
    code, text, _ = run(capsys, "--days", "1", "--billing-days", "0")
    assert "Cost ledger" in text
    assert "under-provisioned" in text.split("Cost ledger")[1]


def test_the_report_draws_capacity_charts_from_the_audit_output_and_counts_every_audited_table(
    planted: int, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "--format", "json", "--days", "1", "--billing-days", "0", "--idle-days", "0")
    assert code == 0, err
    doc = json.loads(out)
    tables = {t["table"]: t for t in doc["tables"]}
    history = tables["under-provisioned"]["capacity_history"]
    assert history["table"] == "under-provisioned" and history["series"][0]["index"] is None
    consumed = [v for v in history["series"][0]["consumed_read"] if v is not None]
    assert consumed and max(consumed) == pytest.approx(600)  # the planted 600 RCU a minute, as CloudWatch summed it
    audit_file = tmp_path / "audit.json"
    audit_file.write_text(out)
    week = IsoWeek.of(datetime.fromtimestamp(planted, UTC)).label
    assert main(["report", "--findings", str(audit_file), "--out", str(tmp_path / "r"), "--week", week]) == 0
    capsys.readouterr()
    text = (tmp_path / "r" / "report.md").read_text()
    assert "No CloudWatch capacity series in this input." not in text
    assert "_under-provisioned: read capacity, consumed vs provisioned._" in text
    # ten tables audited; the summary's "of N" counts them all, not only the ones with findings
    with_findings = len({f["table"] for f in doc["findings"]})
    assert with_findings < 10
    assert f"| {with_findings} of 10 |" in text

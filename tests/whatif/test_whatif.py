"""`ddb-audit what-if`: headroom of keys, indexes and tables against their limits, and the load-test profile."""

from __future__ import annotations

import gzip
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.cli import main
from auditor.whatif.capacity import capacity_from_audit
from auditor.whatif.limits import (
    LIMIT_NAMES,
    LimitItem,
    PartitionCapacity,
    ResourceCapacity,
    WhatIfConfig,
    WhatIfResult,
    capacity_limits,
    key_limits,
    what_if,
)
from auditor.whatif.loadtest import PROFILE_FORMAT, load_profile
from auditor.whatif.whatif_text import render_what_if
from tests.factories import call, span

START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
ACCOUNT = "111122223333"


def _record(n: int, at: float, table: str, op: str, key: dict[str, Any]) -> dict[str, Any]:
    """A CloudTrail data event shaped like the DynamoDB developer guide's PutItem/GetItem samples."""
    params: dict[str, Any] = {"tableName": table, "key": key}
    if op == "PutItem":
        params["item"] = list(key)
    return {
        "eventVersion": "1.08",
        "userIdentity": {
            "type": "AssumedRole",
            "principalId": "AROAEXAMPLE:app",
            "arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/app/app",
            "accountId": ACCOUNT,
        },
        "eventTime": (START + timedelta(seconds=at)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": op,
        "awsRegion": "us-east-1",
        "sourceIPAddress": "192.0.2.10",
        "userAgent": "Boto3/1.35.0",
        "requestParameters": params,
        "responseElements": None,
        "requestID": f"REQ{n:020d}",
        "eventID": f"00000000-0000-4000-8000-{n:012d}",
        "readOnly": op != "PutItem",
        "resources": [
            {
                "accountId": ACCOUNT,
                "type": "AWS::DynamoDB::Table",
                "ARN": f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/{table}",
            }
        ],
        "eventType": "AwsApiCall",
        "apiVersion": "2012-08-10",
        "managementEvent": False,
        "recipientAccountId": ACCOUNT,
        "eventCategory": "Data",
    }


def _planted_trail(path: Path) -> None:
    """Two minutes of writes to Orders: the first is background only, the second adds CUSTOMER#42 at 550 writes/s.

    550 writes/s is 55% of one partition's 1,000 write units, so the key reaches its partition's limit at 1.82x.
    Background: 2,000 customers, 40 writes/s in total.
    """
    rng = random.Random(3)
    records = []
    n = 0
    for minute in range(2):
        for i in range(40 * 60):
            records.append(
                _record(
                    n,
                    minute * 60 + i / 40,
                    "Orders",
                    "PutItem",
                    {"pk": f"CUSTOMER#{rng.randrange(1, 2001) + 100}", "sk": "ORDER"},
                )
            )
            n += 1
    for i in range(550 * 60):
        records.append(_record(n, 60 + i / 550, "Orders", "PutItem", {"pk": "CUSTOMER#42", "sk": f"ORDER#{i}"}))
        n += 1
    path.write_bytes(gzip.compress(orjson.dumps({"Records": records})))


def _uniform_trail(path: Path) -> None:
    """Users: 5,000 keys read and written uniformly, 400 requests/s in total for 90 seconds."""
    rng = random.Random(5)
    records = []
    for n in range(400 * 90):
        op = "PutItem" if n % 3 == 0 else "GetItem"
        records.append(_record(n, n / 400, "Users", op, {"userId": f"USER#{rng.randrange(5000)}"}))
    path.write_bytes(gzip.compress(orjson.dumps({"Records": records})))


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("planted") / "trail.json.gz"
    _planted_trail(path)
    return path


@pytest.fixture(scope="module")
def uniform(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("uniform") / "trail.json.gz"
    _uniform_trail(path)
    return path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(args)
    except SystemExit as exc:  # argparse rejects usage errors by exiting
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_key_at_55_percent_of_its_partition_write_limit_throttles_first_at_2x(
    planted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(["what-if", str(planted), "--growth", "2", "--format", "json"], capsys)
    assert code == 0, err
    doc = orjson.loads(out)
    assert doc["growth"] == 2.0
    items = doc["items"]
    first = items[0]
    assert first["key"] == {"pk": "CUSTOMER#42"}
    assert first["table"] == "Orders" and first["index"] is None
    assert first["limit"] == "partition_write"
    assert first["headroom"] == pytest.approx(1000 / 550, rel=1e-3)
    assert first["throttles_at_growth"] is True
    assert first["peak_at"] == "2026-12-01T10:01:00Z"
    # Nothing else throttles at 2x: the table's 590 writes/s are far from its 40,000-unit quota.
    assert [i for i in items if i["throttles_at_growth"]] == [first]
    table = next(i for i in items if i["key"] is None and i["limit"] == "table_max")
    assert table["peak_per_second"] == pytest.approx(590, rel=1e-3)
    assert table["headroom"] == pytest.approx(40_000 / 590, rel=1e-3)
    # At 1.5x the same key is the nearest limit, but not yet reached.
    code, out, _ = _run(["what-if", str(planted), "--growth", "1.5", "--format", "json"], capsys)
    assert orjson.loads(out)["items"][0]["throttles_at_growth"] is False


def test_items_follow_the_contract_and_sort_by_headroom(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(["what-if", str(planted), "--growth", "3", "--format", "json"], capsys)
    doc = orjson.loads(out)
    assert set(doc) == {"growth", "items"}
    headrooms = [i["headroom"] for i in doc["items"]]
    assert headrooms == sorted(headrooms)
    for item in doc["items"]:
        assert {"table", "index", "key", "limit", "headroom", "throttles_at_growth"} <= set(item)
        assert item["limit"] in LIMIT_NAMES
        assert item["throttles_at_growth"] == (item["headroom"] <= 3)


def test_a_uniform_table_shows_no_key_limit_before_its_table_limit(
    uniform: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = _run(["what-if", str(uniform), "--growth", "3", "--format", "json"], capsys)
    items = orjson.loads(out)["items"]
    assert items, "the uniform table has limits"
    first_table = next(n for n, i in enumerate(items) if i["key"] is None)
    assert all(i["key"] is None for i in items[: first_table + 1])
    assert items[first_table]["limit"] == "table_max"
    assert any(i["key"] is not None for i in items[first_table:]), "keys are listed, after the table"


def test_a_uniform_provisioned_table_reaches_its_capacity_before_any_key(
    uniform: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = {
        "findings": [],
        "tables": [
            {
                "table": "Users",
                "account": ACCOUNT,
                "region": "us-east-1",
                "billing_mode": "PROVISIONED",
                "capacity": [
                    ResourceCapacity(
                        table="Users",
                        index=None,
                        billing_mode="PROVISIONED",
                        peak_read=820.0,
                        peak_write=410.0,
                        provisioned_read=1000,
                        provisioned_write=500,
                    ).to_dict()
                ],
            }
        ],
    }
    path = tmp_path / "audit.json"
    path.write_bytes(orjson.dumps(audit))
    _, out, _ = _run(["what-if", str(uniform), "--audit", str(path), "--growth", "3", "--format", "json"], capsys)
    items = orjson.loads(out)["items"]
    assert items[0]["limit"] == "provisioned" and items[0]["access"] == "read"
    assert items[0]["headroom"] == pytest.approx(1000 / 820, rel=1e-3)
    assert items[0]["source"] == "cloudwatch"
    # CloudWatch's consumed units replace CloudTrail's request counts for the table: no CloudTrail table item.
    assert not [i for i in items if i["key"] is None and i["source"] == "cloudtrail"]
    assert {i["limit"] for i in items} >= {"provisioned", "table_max", "account_quota", "partition_write"}


def test_table_and_markdown_name_the_first_to_throttle(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["what-if", str(planted), "--growth", "2"], capsys)
    assert code == 0
    assert out.startswith("What if traffic grows 2x: 1 of ")
    assert "First to throttle: Orders key pk=CUSTOMER#42 reaches partition_write at 1.8x today's peak." in out
    _, md, _ = _run(["what-if", str(planted), "--growth", "2", "--format", "markdown"], capsys)
    assert md.startswith("# What if traffic grows")
    assert "| 1.82x | yes | Orders | - | pk=CUSTOMER#42 | partition_write |" in md


def test_bad_input_exits_2(tmp_path: Path, planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["what-if", str(planted), "--growth", "0"], capsys)
    assert code == 2 and out == "" and "--growth" in err
    bad = tmp_path / "audit.json"
    bad.write_text('{"tables": [{"table": "Orders", "capacity": [{"peak_read_per_second": "lots"}]}]}')
    code, out, err = _run(["what-if", str(planted), "--audit", str(bad)], capsys)
    assert code == 2 and out == ""
    assert "tables[0].capacity[0] (Orders): peak_read_per_second must be a number" in err
    code, out, err = _run(["what-if", str(tmp_path / "missing")], capsys)
    assert code == 2 and out == ""


def test_load_test_profile(planted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile_path = tmp_path / "profile.json"
    code, _, err = _run(["what-if", str(planted), "--growth", "3", "--profile-out", str(profile_path)], capsys)
    assert code == 0, err
    profile = orjson.loads(profile_path.read_bytes())
    assert profile["format"] == PROFILE_FORMAT and profile["version"] == 1 and profile["growth"] == 3.0
    (orders,) = profile["tables"]
    assert orders["table"] == "Orders" and orders["partition_key"] == "pk"
    assert orders["requests"] == 40 * 120 + 550 * 60
    (put,) = orders["operations"]
    assert put["operation"] == "PutItem" and put["requests"] == orders["requests"]
    assert put["rate_per_second"] == pytest.approx(orders["requests"] / orders["seconds"], rel=1e-5)
    assert put["target_rate_per_second"] == pytest.approx(3 * put["rate_per_second"], rel=1e-5)
    assert sum(t["weight"] for t in put["key_templates"]) == pytest.approx(1.0)
    assert {t["template"] for t in put["key_templates"]} == {
        "pk=CUSTOMER#{n}, sk=ORDER",
        "pk=CUSTOMER#{n}, sk=ORDER#{n}",
    }
    hot = orders["hot_keys"][0]
    assert hot["key"] == {"pk": "CUSTOMER#42"} and hot["writes"] == 550 * 60 and hot["reads"] == 0
    assert hot["weight"] == pytest.approx(550 * 60 / orders["requests"], rel=1e-5)
    assert orders["peak_minute"] == {"at": "2026-12-01T10:01:00Z", "reads_per_second": 0.0, "writes_per_second": 590.0}


# ---------------------------------------------------------------- the pure pieces


def test_partition_headroom_is_the_nearer_of_the_read_and_write_limits() -> None:
    cfg = WhatIfConfig()
    capacity = PartitionCapacity(cfg.partition_read_units, cfg.partition_write_units)
    assert capacity.headroom(0, 500) == pytest.approx(2.0)
    assert capacity.headroom(1500, 0) == pytest.approx(2.0)
    # Half the read limit and a quarter of the write limit: the read limit is the nearer.
    assert capacity.headroom(1500, 250) == pytest.approx(2.0)
    assert capacity.headroom(0, 0) is None


def test_key_limits_take_each_keys_busiest_minute() -> None:
    calls = [call("PutItem", key={"pk": "A"}, at=i * 0.1) for i in range(600)]  # minute 0: 10 writes/s
    calls += [call("GetItem", key={"pk": "A"}, at=60 + i * 0.01) for i in range(6000)]  # minute 1: 100 reads/s
    calls += [call("GetItem", key={"pk": "B"}, at=120 + i) for i in range(60)]
    items = key_limits(span(calls))
    a = next(i for i in items if i.key == {"pk": "A"})
    # 10 writes/s use 1% of the partition, 100 reads/s 3.3%: the read minute is the peak.
    assert a.limit == "partition_read"
    assert a.headroom == pytest.approx(30.0)
    assert a.peak_at == "2026-12-01T10:01:00Z"
    assert items[0].key == {"pk": "A"}


def test_capacity_limits_by_mode() -> None:
    on_demand = ResourceCapacity("Events", None, "PAY_PER_REQUEST", peak_read=100.0, peak_write=3_000.0)
    capped = ResourceCapacity(
        "Events", "ByType", "PAY_PER_REQUEST", peak_read=0.0, peak_write=900.0, on_demand_max_write=1_000
    )
    scaled = ResourceCapacity(
        "Orders",
        None,
        "PROVISIONED",
        peak_read=0.0,
        peak_write=30_000.0,
        provisioned_write=31_000,
        autoscaling_max_write=35_000,
    )
    other = ResourceCapacity("Carts", None, "PROVISIONED", peak_read=0.0, peak_write=20_000.0, provisioned_write=25_000)
    items = {(i.table, i.index, i.limit, i.access): i for i in capacity_limits([on_demand, capped, scaled, other])}
    # On demand: twice the previous peak (3,000 -> 6,000) is above a new table's 4,000 write units.
    assert items[("Events", None, "on_demand_doubling", "write")].headroom == pytest.approx(2.0)
    # A small peak still gets a new table's 12,000 read units at once.
    assert items[("Events", None, "on_demand_doubling", "read")].headroom == pytest.approx(120.0)
    assert items[("Events", "ByType", "on_demand_max", "write")].headroom == pytest.approx(1000 / 900)
    assert items[("Orders", None, "autoscaling_max", "write")].headroom == pytest.approx(35_000 / 30_000)
    assert ("Orders", None, "provisioned", "write") not in items  # auto scaling raises it up to the maximum
    assert items[("Carts", None, "provisioned", "write")].headroom == pytest.approx(1.25)
    assert items[("Orders", None, "table_max", "write")].headroom == pytest.approx(40_000 / 30_000)
    # The account's provisioned quota is shared by the provisioned tables only: 50,000 of 80,000 write units.
    account = items[("*", None, "account_quota", "write")]
    assert account.headroom == pytest.approx(80_000 / 50_000)
    assert ("*", None, "account_quota", "read") not in items


def test_what_if_merges_contributor_insights_keys() -> None:
    audit = {
        "tables": [{"table": "Orders", "capacity": []}],
        "findings": [
            {
                "kind": "hot_key",
                "table": "Orders",
                "index": None,
                "evidence": {"source": "contributor_insights", "key": {"pk": "X"}, "headroom_factor": 1.25},
            },
            {"kind": "hot_key", "table": "Orders", "evidence": {"source": "cloudtrail", "headroom_factor": 0.5}},
        ],
    }
    capacity, findings = capacity_from_audit(audit, "audit.json")
    result = what_if([], 2, capacity=capacity, insight_findings=findings)
    assert [(i.key, i.limit, round(i.headroom, 2), i.source) for i in result.items] == [
        ({"pk": "X"}, "partition", 1.25, "contributor_insights")
    ]
    assert result.to_dict()["items"][0]["throttles_at_growth"] is True


def test_growth_must_be_positive() -> None:
    with pytest.raises(ValueError, match="growth"):
        what_if([], 0)


def test_profile_of_nothing_is_empty() -> None:
    assert load_profile([], 2)["tables"] == []


def test_hot_key_and_low_cardinality_findings_state_their_headroom() -> None:
    from auditor.detectors.trail import hot_key, low_cardinality_key

    # One value written at 5 writes/s in one minute and 40 writes/s (4% of a partition) in the next: headroom 25.
    busy = [call("PutItem", key={"status": "OPEN"}, at=i * 0.2) for i in range(300)]
    busy += [call("PutItem", key={"status": "OPEN"}, at=60 + i * 0.025) for i in range(2400)]
    few = [call("PutItem", key={"status": s}, at=i) for s in ("DONE", "LATE", "LOST") for i in range(10)]
    many = [call("PutItem", key={"status": f"S{n}"}, at=120 + n * 1.5) for n in range(400)]  # 40 a minute
    [hot] = hot_key.detect(span(busy + many), hot_key.HotKeyConfig())
    assert hot.evidence["headroom_factor"] == pytest.approx(25.0)
    assert "Headroom 25.0x: throttles at 25.0 times today's peak." in hot.summary
    [low] = low_cardinality_key.detect(span(busy + few), low_cardinality_key.LowCardinalityConfig(min_requests=100))
    assert low.evidence["headroom_factor"] == pytest.approx(25.0)
    assert low.summary.endswith(" Headroom 25.0x: throttles at 25.0 times today's peak.")


def test_weekly_report_lists_what_throttles_first() -> None:
    from auditor.detectors.trail import hot_key, low_cardinality_key
    from auditor.report.model import build_report_from_findings
    from auditor.report.report_pages import render_html, render_markdown

    hot_calls = [call("PutItem", key={"pk": "CUSTOMER|42"}, at=60 + i / 550) for i in range(33_000)]  # 550/s
    hot_calls += [call("PutItem", key={"pk": f"C{n}"}, at=120 + n * 1.5) for n in range(400)]
    low_calls = [call("GetItem", table="Jobs", key={"status": s}, at=i * 0.1) for s in ("A", "B") for i in range(600)]
    findings = hot_key.detect(span(hot_calls), hot_key.HotKeyConfig())
    findings += low_cardinality_key.detect(span(low_calls), low_cardinality_key.LowCardinalityConfig(min_requests=100))
    report = build_report_from_findings(findings, datetime(2026, 12, 2, tzinfo=UTC))
    assert [(r.table, r.key, round(r.headroom, 2)) for r in report.what_if] == [
        ("Orders", "pk=CUSTOMER|42", 1.82),
        ("Jobs", "status (busiest value)", 300.0),
    ]
    assert [r.throttles_at(2) for r in report.what_if] == [True, False]
    md = render_markdown(report)
    assert "| `pk=CUSTOMER\\|42` | Orders | partition | 1.8x | throttles | throttles |" in md
    assert "| - | Jobs | partition | 300.0x | ok | ok |" not in md  # a low-cardinality row names its attribute
    assert "| `status (busiest value)` | Jobs | partition | 300.0x | ok | ok |" in md
    html = render_html(report)
    assert 'id="whatif-h">What throttles first</h2>' in html
    assert "pk=CUSTOMER|42" in html and "<strong>throttles</strong>" in html


def test_hostile_names_cannot_inject_html_links_escapes_or_rows_into_what_if_text() -> None:
    hostile = "<img src=x onerror=alert(1)>[x](javascript:alert(1))\x1b]8;;http://evil\x07\x1b[31m|\n| forged | row |"
    item = LimitItem(
        table=hostile,
        index=hostile,
        key={hostile: hostile},
        limit="partition_write",
        access="write",
        peak_per_second=600.0,
        limit_per_second=1000.0,
        source="cloudtrail",
    )
    result = WhatIfResult(growth=2.0, items=[item])
    md = render_what_if(result, "markdown")
    for raw in ("<img", "](javascript:", "\x1b", "\x07", "\n| forged"):
        assert raw not in md, raw
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 3  # header, delimiter, one row
    cells = re.split(r"(?<!\\)\|", table[2])[1:-1]
    assert len(cells) == 9 and cells[0].strip() == "1.67x"
    text = render_what_if(result, "table")
    assert "\x1b" not in text and "\x07" not in text and "\n| forged" not in text

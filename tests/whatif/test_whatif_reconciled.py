"""``what-if`` reads the one headroom model: throttled keys throttle now, ``--config`` item sizes, provisioned tables.

The demo's trail: its throttled hot key shows no headroom above 1x in the finding, the what-if, the report's "what
throttles first" rows and the Slack message.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from auditor.cli import main
from auditor.demo.trail import write_log_file
from auditor.demo.workload import demo_workload
from auditor.engine import analyze_trail
from auditor.report.contents import ReportFinding
from auditor.report.sections import what_if as report_what_if
from auditor.sinks.slack_blocks import render_finding
from auditor.whatif.limits import ResourceCapacity, what_if
from auditor.whatif.whatif_text import render_what_if
from tests.factories import call, span

PROVISIONED = (
    "ProvisionedThroughputExceededException",
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your "
    "provisioning level with the UpdateTable API.",
)


def _throttled_orders() -> list:
    calls = [call("PutItem", key={"pk": "CUSTOMER#42"}, at=i * 0.6) for i in range(100)]
    calls += [call("PutItem", key={"pk": f"CUSTOMER#{i}"}, at=i * 0.5) for i in range(100)]
    error, message = PROVISIONED
    calls += [call("PutItem", key={"pk": "CUSTOMER#42"}, at=30 + i, error=error, message=message) for i in range(20)]
    return calls


def test_a_throttled_key_throttles_now_whatever_its_assumed_headroom() -> None:
    result = what_if([span(_throttled_orders())], 2.0)
    first = result.items[0]
    assert first.key == {"pk": "CUSTOMER#42"} and first.headroom == 1.0 and first.model.throttles_now
    doc = first.to_dict(2.0)
    assert doc["throttles_now"] is True and doc["throttled_calls"] == 20 and doc["assumed_utilisation"] < 0.1
    assert "items larger than assumed" in doc["contradicted_assumption"]
    assert "throttled-keys mode" in doc["to_confirm"] and doc["item_size_source"] == "default"
    text = render_what_if(result, "table")
    assert "throttles now at partition_write (20 calls throttled" in text


def test_a_provisioned_table_is_not_measured_against_the_on_demand_maximum() -> None:
    result = what_if([span(_throttled_orders())], 2.0)
    assert not [i for i in result.items if i.key is None and i.limit == "table_max"]
    assert any("Orders is provisioned" in n and "--audit" in n for n in result.notes)


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(args) == 0
    return orjson.loads(capsys.readouterr().out)


def test_what_if_honours_config_item_sizes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trail = tmp_path / "trail.json.gz"
    write_log_file(demo_workload(datetime(2026, 12, 5, 11, 0, tzinfo=UTC), hours=0.25), trail)
    config = tmp_path / "config.json"
    config.write_text('{"item_size_bytes": {"Orders": 4096}}')
    plain = _json(["what-if", str(trail), "--format", "json"], capsys)["items"]
    sized = _json(["what-if", str(trail), "--config", str(config), "--format", "json"], capsys)["items"]
    key = {"pk": "CUSTOMER#42"}
    [before] = [i for i in plain if i["table"] == "Orders" and i["key"] == key]
    [after] = [i for i in sized if i["table"] == "Orders" and i["key"] == key]
    assert (before["item_size_source"], after["item_size_source"]) == ("default", "config")
    # a 4 KB item is 4 write units and 1 read unit: the key's writes weigh four times as much
    assert 3 * before["peak_per_second"] < after["peak_per_second"] <= 4 * before["peak_per_second"]


def _headrooms(text: str) -> list[float]:
    """Every headroom a text states: ``headroom 5.8x``, ``Headroom 1.0x``, ``"headroom_factor": 1.0``."""
    found = re.findall(r"headroom(?:[ _]factor)?\W{0,6}(\d+(?:\.\d+)?)", text, flags=re.IGNORECASE)
    return [float(n) for n in found]


def test_the_demos_throttled_hot_key_has_no_headroom_above_1x_anywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trail = tmp_path / "trail.json.gz"
    write_log_file(demo_workload(datetime(2026, 12, 5, 11, 0, tzinfo=UTC)), trail)
    key = {"pk": "CUSTOMER#42"}
    # the finding
    [finding] = [
        f for f in analyze_trail([str(trail)]).findings if f.kind.value == "hot_key" and f.evidence["key"] == key
    ]
    assert finding.evidence["throttled_calls"] > 0 and finding.evidence["headroom_factor"] <= 1
    assert finding.evidence["contradicted_assumption"] and finding.evidence["to_confirm"]
    assert "no headroom at today's peak" in finding.summary and max(_headrooms(finding.summary), default=0) <= 1
    # the what-if, at 2x and at 3x
    for growth in ("2", "3"):
        items = _json(["what-if", str(trail), "--growth", growth, "--format", "json"], capsys)["items"]
        [item] = [i for i in items if i["table"] == "Orders" and i["key"] == key]
        assert item["headroom"] <= 1 and item["throttles_now"] and item["throttles_at_growth"]
        assert not [i for i in items if i["table"] == "Orders" and i["limit"] == "table_max"]
    # the report's "what throttles first" rows
    report = ReportFinding(finding=finding, status="ongoing", docs_url="https://example.com")
    [row] = report_what_if([report])
    assert row.headroom <= 1 and row.throttles_at(2.0)
    # the Slack message (summary and evidence fields)
    slack = orjson.dumps(render_finding(finding, status="new")).decode()
    assert "no headroom at today's peak" in slack and max(_headrooms(slack), default=0) <= 1


def test_a_provisioned_table_is_measured_against_its_capacity_and_throttles_now_when_cloudwatch_says_so() -> None:
    orders = ResourceCapacity("Orders", None, "PROVISIONED", peak_read=50.0, peak_write=90.0, provisioned_write=100)
    throttled = {
        "kind": "throttling",
        "table": "Orders",
        "evidence": {"cause": "provisioned", "write_throttle_events": 2160, "read_throttle_events": 0},
    }
    calm = what_if([], 2.0, capacity=[orders])
    first = calm.items[0]
    assert (first.limit, first.access, first.limit_per_second) == ("provisioned", "write", 100.0)
    assert first.headroom == pytest.approx(100 / 90) and not first.model.throttles_now
    result = what_if([], 2.0, capacity=[orders], insight_findings=[throttled])
    first = result.items[0]
    assert (first.limit, first.throttled, first.model.assumed) == ("provisioned", 2160, pytest.approx(100 / 90))
    # the assumptions put the peak at 90% of the provisioned 100: throttled, it throttles now
    assert first.headroom == first.model.value == 1.0 and first.model.throttles_now
    assert "capacity below the peak" in (first.model.contradicted or "")
    quota = next(i for i in result.items if i.limit == "table_max" and i.access == "write")
    assert quota.throttled == 0  # the 40,000-unit quota is not what throttled

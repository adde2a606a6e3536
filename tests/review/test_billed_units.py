"""The review prices what DynamoDB bills: a throttled call is denied and consumes no capacity (DynamoDB API
Reference, Common Errors: ProvisionedThroughputExceededException "The request was denied due to request
throttling"; on demand "you only pay for the throughput you actually use", Developer Guide, on-demand capacity mode),
so a hot key's monthly cost counts its served requests, not its throttled ones."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from auditor.cli import main
from auditor.demo.trail import write_log_file
from auditor.demo.workload import demo_workload
from auditor.engine import analyze_trail
from auditor.review.keys import billed_rates
from auditor.review.model import Pricing


def test_billed_rates_leave_out_the_throttled_calls() -> None:
    ev = {"reads_per_second": 0.0, "writes_per_second": 1.2, "throttled_calls": 1200, "window_seconds": 5400}
    reads, writes = billed_rates(ev)
    assert reads == 0.0 and writes == pytest.approx(1.2 - 1200 / 5400)
    mixed = {"reads_per_second": 3.0, "writes_per_second": 1.0, "throttled_calls": 400, "window_seconds": 1000}
    assert billed_rates(mixed) == pytest.approx((2.7, 0.9))  # in proportion: 0.4 of 4.0 requests a second
    assert billed_rates({"reads_per_second": 2.0, "writes_per_second": 1.0}) == (2.0, 1.0)
    # the table's throttling finding says which access the throttled calls were
    assert billed_rates(mixed, read_share=0.0) == pytest.approx((3.0, 0.6))


def test_the_shard_proposals_cost_is_the_served_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trail = tmp_path / "trail.json.gz"
    write_log_file(demo_workload(datetime(2026, 12, 5, 11, 0, tzinfo=UTC)), trail)
    key = {"pk": "CUSTOMER#42"}
    [finding] = [
        f for f in analyze_trail([str(trail)]).findings if f.kind.value == "hot_key" and f.evidence["key"] == key
    ]
    ev = finding.evidence
    assert ev["throttled_calls"] > 0
    assert main(["model-review", str(trail), "--format", "json"]) == 0
    [proposal] = [
        p
        for p in orjson.loads(capsys.readouterr().out)["proposals"]
        if p["kind"] == "shard_partition_key" and p["table"] == "Orders"
    ]
    # the throttled calls come off the access the table's throttling finding counts them in
    [throttling] = [
        f for f in analyze_trail([str(trail)]).findings if f.kind.value == "throttling" and f.table == "Orders"
    ]
    reads, writes = throttling.evidence["read_throttle_events"], throttling.evidence["write_throttle_events"]
    served = ev["writes_per_second"] - ev["throttled_calls"] / ev["window_seconds"] * writes / (reads + writes)
    billed = Pricing.for_region(finding.region).monthly(0.0, served * ev["write_units_per_write"])
    assert proposal["before"]["writes"] == pytest.approx(billed, abs=0.01)
    offered = Pricing.for_region(finding.region).monthly(0.0, ev["writes_per_second"] * ev["write_units_per_write"])
    assert proposal["before"]["writes"] < offered

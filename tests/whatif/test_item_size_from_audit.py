"""``what-if --audit`` reads the audit's item sizes in their order: DescribeTable's size over its item count before
CloudWatch's consumed units per write (a lower bound), each stated in ``item_size_source``."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.cli import main
from auditor.models.metrics import CONSUMED, SCAN_REQUESTS, MetricSeries, SeriesKey, TableMetrics
from auditor.whatif.capacity import cloudwatch_item_size, profiles_from_audit
from tests.whatif.test_whatif import ACCOUNT, _record

T0 = 1_764_583_200


def _metrics(consumed_wcu: float, requests: dict[str, float]) -> TableMetrics:
    tm = TableMetrics(table="Orders", start=T0, end=T0 + 3600, period=60)
    series = [(SeriesKey(CONSUMED["write"], "Orders"), consumed_wcu)]
    series += [(SeriesKey(SCAN_REQUESTS, "Orders", None, op, "SampleCount"), n) for op, n in requests.items()]
    for key, value in series:
        tm.resource(None).series[key.name] = MetricSeries(key, {T0: value})
    return tm


def test_cloudwatch_item_size_is_consumed_units_per_item_write() -> None:
    # 100 puts and 4 batches (counted at 25 items each): 200 item writes consumed 600 WCU, 3 WCU per write
    assert cloudwatch_item_size(_metrics(600.0, {"PutItem": 100, "BatchWriteItem": 4})) == 3 * 1024
    assert cloudwatch_item_size(_metrics(0.0, {"PutItem": 100})) is None
    assert cloudwatch_item_size(_metrics(50.0, {})) is None


def _audit(table: dict[str, Any]) -> dict[str, Any]:
    return {"findings": [], "tables": [{"table": "Orders", "account": ACCOUNT, "region": "us-east-1", **table}]}


def test_profiles_from_audit() -> None:
    doc = _audit({"size_bytes": 9_000_000, "item_count": 3_000, "cloudwatch_item_size_bytes": 2_048})
    profile = profiles_from_audit(doc)[(ACCOUNT, "us-east-1", "Orders")]
    assert (profile.described_item_size, profile.cloudwatch_item_size_bytes) == (3_000, 2_048)
    assert profiles_from_audit({"tables": [{"size_bytes": 1}]}) == {}


@pytest.mark.parametrize(
    ("table", "source", "bytes_"),
    [
        ({"size_bytes": 9_000_000, "item_count": 3_000, "cloudwatch_item_size_bytes": 2_048}, "inventory", 3_000),
        ({"size_bytes": None, "item_count": 0, "cloudwatch_item_size_bytes": 2_048}, "cloudwatch", 2_048),
        ({}, "default", None),
    ],
)
def test_what_if_states_the_item_size_it_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: dict[str, Any], source: str, bytes_: int | None
) -> None:
    trail = tmp_path / "trail.json.gz"
    records = [_record(n, n / 200, "Orders", "PutItem", {"pk": "CUSTOMER#42", "sk": f"O#{n}"}) for n in range(6_000)]
    trail.write_bytes(gzip.compress(orjson.dumps({"Records": records})))
    audit = tmp_path / "audit.json"
    audit.write_bytes(orjson.dumps(_audit({"capacity": None, **table})))
    assert main(["what-if", str(trail), "--audit", str(audit), "--format", "json"]) == 0
    items = orjson.loads(capsys.readouterr().out)["items"]
    [key] = [i for i in items if i["key"] == {"pk": "CUSTOMER#42"}]
    assert key["item_size_source"] == source
    units = -(-bytes_ // 1024) if bytes_ else 1  # ceil(size / 1 KB) write units per write
    assert key["peak_per_second"] == pytest.approx(200 * units, rel=0.02)

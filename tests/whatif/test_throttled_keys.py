"""What-if lists every key the trail saw throttled, at the limit of the direction its calls were throttled in, and
takes the partition limits' source from the ``hot_key`` settings as the finding does."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from auditor.cli import main
from auditor.demo.trail import write_log_file
from auditor.demo.workload import demo_workload
from auditor.detectors.trail.hot_key import HotKeyConfig
from auditor.whatif.limits import WhatIfConfig, key_limits, what_if
from auditor.whatif.whatif_text import render_what_if
from tests.factories import call, span

# The message DynamoDB returns with ProvisionedThroughputExceededException on a provisioned table (API reference,
# PutItem "Errors"; the text as CloudTrail logs it in errorMessage).
PROVISIONED = (
    "ProvisionedThroughputExceededException",
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your "
    "provisioning level with the UpdateTable API.",
)


def _orders() -> list:
    """A hot counter key throttled, and 15 customers each read twice and throttled once on a PutItem."""
    error, message = PROVISIONED
    calls = [call("UpdateItem", key={"pk": "HOT"}, at=i * 0.5) for i in range(200)]
    calls += [call("UpdateItem", key={"pk": "HOT"}, at=40 + i, error=error, message=message) for i in range(30)]
    for n in range(15):
        calls += [call("GetItem", key={"pk": f"CUSTOMER#{n}"}, at=n * 3 + d) for d in (0, 1)]
        calls.append(call("PutItem", key={"pk": f"CUSTOMER#{n}"}, at=n * 3 + 2, error=error, message=message))
    return calls


def test_every_throttled_key_is_listed_first_whatever_the_cap() -> None:
    agg = span(_orders())
    items = key_limits(agg, WhatIfConfig(max_keys_per_table=5))
    throttled = [i for i in items if i.throttled]
    assert len(throttled) == 16 and sum(i.throttled for i in throttled) == 45
    assert items[: len(throttled)] == throttled  # the throttled keys first, none capped away
    text = render_what_if(what_if([agg], 1.0, config=WhatIfConfig(max_keys_per_table=5)), "table")
    assert "(16 keys throttle now, each listed)" in text
    assert "Orders: 16 keys throttled (45 calls), each listed." in text


def test_a_throttled_keys_limit_is_the_direction_its_calls_were_throttled_in() -> None:
    items = key_limits(span(_orders()))
    customers = [i for i in items if i.key and str(i.key["pk"]).startswith("CUSTOMER#")]
    assert len(customers) == 15
    # each was read twice and throttled on a write: its limit is the partition's write limit
    assert {(i.limit, i.access, i.model.throttles_now) for i in customers} == {("partition_write", "write", True)}


def test_partition_limits_not_set_in_the_config_are_the_default() -> None:
    assert WhatIfConfig.of_partition_settings(HotKeyConfig()).source("partition", "write") == "default"
    given = WhatIfConfig.of_partition_settings(HotKeyConfig(partition_write_units_per_second=800))
    assert (given.partition_write_units, given.source("partition", "write")) == (800.0, "config")
    assert given.source("partition", "read") == "default"


def test_what_ifs_limit_source_is_the_hot_key_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trail = tmp_path / "trail.json.gz"
    write_log_file(demo_workload(datetime(2026, 12, 5, 11, 0, tzinfo=UTC), hours=0.25), trail)
    config = tmp_path / "config.json"
    config.write_text('{"item_size_bytes": {"Orders": 2000}}')  # no partition limits
    assert main(["what-if", str(trail), "--config", str(config), "--format", "json"]) == 0
    items = orjson.loads(capsys.readouterr().out)["items"]
    assert {i["limit_source"] for i in items if i["key"]} == {"default"}


def test_the_summary_counts_the_throttled_calls_on_keys_the_trail_did_not_keep() -> None:
    error, message = PROVISIONED
    calls = [call("PutItem", key={"pk": f"CUSTOMER#{n}"}, at=n, error=error, message=message) for n in range(30)]
    result = what_if([span(calls)], 1.0)
    [tally] = result.to_dict()["throttled_keys"]
    listed = [i for i in result.items if i.key and i.throttled]
    # the window keeps a bounded number of throttled keys: the rest of the calls are counted, never dropped
    assert tally["keys"] == len(listed) and tally["calls"] + tally["calls_on_unkept_keys"] == 30
    assert tally["calls_on_unkept_keys"] > 0
    text = render_what_if(result, "table")
    assert (
        f"({len(listed)} keys throttle now, each listed; {tally['calls_on_unkept_keys']} more throttled calls" in text
    )

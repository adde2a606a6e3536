"""what-if of global secondary indexes from the trail: each index's writes metered from the table's writes (write
amplification), at its busiest minute; an index whose back-pressure throttled the table's writes throttles now.

Messages: the GSI back-pressure messages of the DynamoDB API Reference (TransactWriteItems errors), as
``benchmarks.workloads`` quotes them.
"""

from __future__ import annotations

from typing import Any

from auditor.kernel.aggregates.index_writes import count_write
from auditor.kernel.aggregates.window import TableWindow
from auditor.whatif.limits import ResourceCapacity, capacity_limits, capacity_throttled, index_limits_from_trail
from benchmarks.workloads import GSI_ON_DEMAND_MESSAGE, GSI_PROVISIONED_MESSAGE

SETS_CARRIER = "UcarrierId\x1fupdatedAt\x1e"  # UpdateItem "SET #c = :c, #u = :u"
SETS_SEEN = "UlastSeen\x1e"


def _window(message: str | None, throttled: int = 0) -> TableWindow:
    tw = TableWindow("111122223333", "us-east-1", "Parcels", 0, 900)
    tw.index_schema = {"ByCarrier": "carrierId", "ByStatus": "parcelStatus"}
    count_write(tw.write_shapes, SETS_CARRIER, 1, 6000)  # 100 updates/s for a minute: 200 index WCU/s
    count_write(tw.write_shapes, SETS_SEEN, 1, 6000)
    count_write(tw.write_shapes, "PcarrierId\x1fparcelId", 2, 600)
    if message:
        tw.throttles[("message:gsi_backpressure", "write", "")] = throttled
        tw.throttle_messages.append(message)
    return tw


def test_a_provisioned_index_that_throttled_the_writes_throttles_now_at_its_metered_writes() -> None:
    [item] = index_limits_from_trail(_window(GSI_PROVISIONED_MESSAGE, 40))
    assert (item.index, item.limit, item.access, item.throttled, item.provisioned) == (
        "ByCarrier",
        "provisioned",
        "write",
        40,
        True,
    )
    assert item.peak_per_second == 200.0 and item.peak_at == "1970-01-01T00:01:00Z"
    assert item.headroom == 1.0 and item.model.throttles_now
    # ByStatus takes no writes: no put names parcelStatus, no update sets it


def test_an_on_demand_index_is_measured_against_the_table_quota_and_throttles_now_when_it_throttled() -> None:
    [calm] = index_limits_from_trail(_window(None))
    assert (calm.limit, calm.limit_per_second, calm.throttled) == ("table_max", 40_000.0, 0)
    assert calm.headroom == 200.0
    [hot] = index_limits_from_trail(_window(GSI_ON_DEMAND_MESSAGE, 5))
    assert (hot.limit, hot.provisioned, hot.headroom, hot.throttled) == ("table_max", False, 1.0, 5)


def test_item_sizes_scale_the_index_writes() -> None:
    tw = _window(None)
    tw.item_size_bytes, tw.item_size_source = 3000, "config"
    [item] = index_limits_from_trail(tw)
    assert item.peak_per_second == 600.0 and item.item_size_source == "config"


def test_a_back_pressure_finding_makes_the_indexs_cloudwatch_capacity_throttle_now() -> None:
    res = ResourceCapacity("Parcels", "ByCarrier", "PROVISIONED", 0.0, 90.0, provisioned_write=100)
    table = ResourceCapacity("Parcels", None, "PROVISIONED", 0.0, 50.0, provisioned_write=500)
    finding: dict[str, Any] = {
        "kind": "throttling",
        "table": "Parcels",
        "index": "ByCarrier",
        "evidence": {"cause": "gsi_backpressure", "write_throttle_events": 12},
    }
    unnamed = {**finding, "index": None}
    items = capacity_throttled(capacity_limits([res, table]), [finding, unnamed])
    by = {(i.index, i.limit): i for i in items if i.limit == "provisioned"}
    assert by[("ByCarrier", "provisioned")].throttled == 12 and by[("ByCarrier", "provisioned")].headroom == 1.0
    assert by[(None, "provisioned")].throttled == 0  # the table's own capacity was not what ran out

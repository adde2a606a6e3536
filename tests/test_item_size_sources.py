"""Item sizes with a stated source (docs/capacity.md): the configuration, the stream watcher's exact sizes,
DescribeTable's size over its item count, CloudWatch's consumed units per write, else the 1 KB / 4 KB default, each
winning in that order wherever the item size is chosen (:func:`auditor.engine.apply_table_facts`), and said in the
evidence of the hot-key finding and the what-if items."""

from __future__ import annotations

from typing import Any

import pytest

from auditor.config import AnalysisConfig
from auditor.detectors.trail import hot_key
from auditor.engine import apply_table_facts
from auditor.models.inventory import TableProfile
from auditor.whatif.limits import key_limits
from tests.factories import call, span

REF = ("111122223333", "us-east-1", "Orders")
#: Every source, each with its own size: the configuration's 5,000 bytes, ...
SIZES: dict[str, dict[str, Any]] = {
    "config": {"item_size_bytes": 5_000},
    "streams": {"stream_item_size_bytes": 4_000},
    "inventory": {"size_bytes": 3_000_000, "item_count": 1_000},
    "cloudwatch": {"cloudwatch_item_size_bytes": 2_048},
}
EXPECTED = {"config": 5_000, "streams": 4_000, "inventory": 3_000, "cloudwatch": 2_048, "default": None}
ORDER = ("config", "streams", "inventory", "cloudwatch", "default")


def _facts(sources: tuple[str, ...]) -> tuple[AnalysisConfig, dict[Any, TableProfile]]:
    config = AnalysisConfig(item_size_bytes={"Orders": 5_000}) if "config" in sources else AnalysisConfig()
    fields: dict[str, Any] = {}
    for source in sources:
        if source != "config":
            fields |= SIZES[source]
    return config, {REF: TableProfile(name="Orders", account=REF[0], region=REF[1], **fields)}


@pytest.mark.parametrize("winner", ORDER)
def test_each_source_wins_over_the_ones_after_it(winner: str) -> None:
    # the winner and every source after it are known: the winner is used
    known = ORDER[ORDER.index(winner) : -1]
    config, profiles = _facts(known)
    calls = [call("PutItem", key={"pk": "HOT"}, at=i / 40) for i in range(4_000)]
    calls += [call("GetItem", key={"pk": f"K{i}"}, at=i * 0.5) for i in range(200)]  # a hot key by its share
    agg = span(calls)
    apply_table_facts(agg, config, profiles)
    assert (agg.item_size_bytes, agg.item_size_source or "default") == (EXPECTED[winner], winner)
    [finding] = [f for f in hot_key.detect(agg, hot_key.HotKeyConfig()) if f.evidence["key"] == {"pk": "HOT"}]
    assert finding.evidence["item_size_source"] == winner
    assert finding.evidence["item_size_bytes"] == EXPECTED[winner]
    [item] = [i for i in key_limits(agg) if i.key == {"pk": "HOT"}]
    assert item.to_dict(2.0)["item_size_source"] == winner
    if winner == "cloudwatch":
        assert "a lower bound" in finding.evidence["assumption"]
    if winner == "streams":
        assert "exact sizes the stream watcher measured" in finding.evidence["assumption"]


def test_the_hot_key_finding_says_where_its_partition_limits_come_from() -> None:
    calls = [call("PutItem", key={"pk": "HOT"}, at=i / 40) for i in range(4_000)]
    calls += [call("GetItem", key={"pk": f"K{i}"}, at=i * 0.5) for i in range(200)]
    agg = span(calls)
    for cfg, source in (
        (hot_key.HotKeyConfig(), "default"),
        (hot_key.HotKeyConfig(partition_write_units_per_second=2_000), "config"),
    ):
        [finding] = [f for f in hot_key.detect(agg, cfg) if f.evidence["key"] == {"pk": "HOT"}]
        assert finding.evidence["limit_source"] == source

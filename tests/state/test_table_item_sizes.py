"""The stream watcher's per-table item sizes in the state table (moto server): the watcher adds what it sized, the
evaluator reads this week's and last week's mean as the table's ``streams`` item size."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.models.dynamodb_size import item_size
from auditor.models.inventory import TableProfile
from auditor.service.stream_item_size import StreamItemSizeBatch
from auditor.state.table_item_sizes import PendingSizes, TableItemSizes, with_stream_sizes
from tests.moto_server import client, create_state_table

#: Stream records shaped as the DynamoDB Streams API reference's Record (the watcher's own test events).
EVENTS = Path(__file__).resolve().parents[2] / "events"
ACCOUNT, REGION = "123456789012", "eu-west-1"


@pytest.fixture
def sizes(aws_reset: str) -> TableItemSizes:
    ddb = client("dynamodb", aws_reset)
    return TableItemSizes(ddb, create_state_table(ddb))


def test_the_watcher_adds_the_sizes_it_measured_and_the_evaluator_reads_their_mean(sizes: TableItemSizes) -> None:
    records = json.loads((EVENTS / "stream_item_size_new_and_old.json").read_text())["Records"]
    pending = PendingSizes(max_items=3)  # stored once three items wait
    for _ in range(2):  # two batches add up
        batch = StreamItemSizeBatch(None, sizes=sizes, pending=pending)
        for record in records:
            batch.process_record(record)
        batch.finish()
    images = {
        table: [
            item_size(r["dynamodb"]["NewImage"])
            for r in records
            if r["eventSourceARN"].split("/")[1] == table and "NewImage" in r["dynamodb"]
        ]
        for table in ("Orders", "Timelines")
    }
    when = datetime.fromtimestamp(records[0]["dynamodb"]["ApproximateCreationDateTime"], UTC)
    means = sizes.means([(ACCOUNT, REGION, "Orders"), (ACCOUNT, REGION, "Timelines"), (ACCOUNT, REGION, "X")], when)
    assert means == {(ACCOUNT, REGION, table): round(sum(found) / len(found)) for table, found in images.items()}
    # the week after still reads them (this week and the one before); three weeks after, nothing
    assert sizes.means([(ACCOUNT, REGION, "Orders")], when + timedelta(days=7))
    assert sizes.means([(ACCOUNT, REGION, "Orders")], when + timedelta(days=21)) == {}


def test_the_evaluators_descriptions_carry_the_stream_sizes(sizes: TableItemSizes) -> None:
    now = datetime(2026, 12, 3, tzinfo=UTC)
    sizes.add({((ACCOUNT, REGION, "Orders"), "2026-W49"): (4, 12_000), ((None, None, "Carts"), "2026-W48"): (1, 900)})
    described = TableProfile(name="Orders", account=ACCOUNT, region=REGION, partition_key="orderId")

    def describe(tables: set[Any]) -> dict[Any, TableProfile]:
        return {(ACCOUNT, REGION, "Orders"): described} if (ACCOUNT, REGION, "Orders") in tables else {}

    profiles = with_stream_sizes(describe, sizes, now)({(ACCOUNT, REGION, "Orders"), (None, None, "Carts")})
    orders = profiles[(ACCOUNT, REGION, "Orders")]
    assert (orders.partition_key, orders.stream_item_size_bytes) == ("orderId", 3_000)
    # a table the watcher measured but DescribeTable did not answer for still gets its size
    assert profiles[(None, None, "Carts")].stream_item_size_bytes == 900


def test_sizes_wait_for_a_thousand_items_or_fifteen_minutes_of_stream_time() -> None:
    pending = PendingSizes()
    ref = (ACCOUNT, REGION, "Orders")
    for n in range(999):
        pending.add(ref, 1_796_029_926 + n * 0.1, 100)
    assert not pending.due
    pending.add(ref, 1_796_029_926, 100)
    assert pending.due and pending.take() == {(ref, "2026-W49"): (1_000, 100_000)}
    assert not pending.due and pending.take() == {}
    pending.add(ref, 1_796_029_926, 10)
    pending.add(ref, 1_796_029_926 + 900, 30)
    assert pending.due
    sums = pending.take()
    pending.put_back(sums)  # not stored: they wait for the next time
    assert pending.take() == sums == {(ref, "2026-W49"): (2, 40)}


def test_the_metrics_audits_cloudwatch_estimate_reaches_the_evaluator(sizes: TableItemSizes) -> None:
    now = datetime(2026, 12, 3, tzinfo=UTC)
    ref = (ACCOUNT, REGION, "Orders")
    sizes.put_cloudwatch(ref, 1_024, now - timedelta(days=7))
    sizes.put_cloudwatch(ref, 3_072, now)  # the latest week's estimate wins
    assert sizes.read([ref], now) == {ref: (None, 3_072)}
    sizes.add({(ref, "2026-W49"): (2, 5_000)})
    profiles = with_stream_sizes(lambda tables: {}, sizes, now)({ref})
    assert (profiles[ref].stream_item_size_bytes, profiles[ref].cloudwatch_item_size_bytes) == (2_500, 3_072)

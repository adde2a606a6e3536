from __future__ import annotations

import random

import orjson
import pytest

from auditor.kernel.aggregates.bounds import SECONDS_PER_KEY
from auditor.kernel.aggregates.failures import GENERIC_ON_DEMAND, throttle_cause
from auditor.kernel.aggregates.keys import decode_key, encode_key, partition_attr
from auditor.kernel.aggregates.window import MAX_SERIALIZED_BYTES, SERIALIZED_PEAK_KEYS, AggregateSet, TableWindow
from tests.factories import call


def _traffic(seed: int, n: int = 3000) -> list:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        at = rng.uniform(0, 3600)
        r = rng.random()
        if r < 0.3:
            out.append(call("PutItem", key={"pk": "CUSTOMER#42", "sk": f"ORDER#{i}"}, at=at))
        elif r < 0.35:
            out.append(call("Scan", at=at, principal="arn:aws:iam::1:role/cleaner", segment=i % 4, total_segments=4))
        elif r < 0.38:
            out.append(
                call(
                    "UpdateItem",
                    key={"pk": "DOC#7"},
                    at=at,
                    error="ValidationException",
                    message="Item size has exceeded the maximum allowed size",
                )
            )
        elif r < 0.4:
            out.append(
                call(
                    "PutItem",
                    key={"pk": "CUSTOMER#42"},
                    at=at,
                    error="ProvisionedThroughputExceededException",
                    message="The level of configured provisioned throughput for the table was exceeded.",
                )
            )
        else:
            out.append(call("GetItem", key={"pk": f"CUSTOMER#{rng.randrange(300)}", "sk": "PROFILE"}, at=at))
    return out


def _agg(calls: list, window: int = 900) -> AggregateSet:
    a = AggregateSet(window)
    for c in calls:
        a.add(c)
    return a


def _canon(aggs: AggregateSet) -> dict:
    return {str(k): v.to_dict() for k, v in sorted(aggs.windows.items(), key=lambda kv: str(kv[0]))}


def test_merge_is_associative_and_matches_one_pass() -> None:
    calls = _traffic(1)
    parts = [calls[:1000], calls[1000:2200], calls[2200:]]
    one_pass = _agg(calls)
    left = _agg(parts[0])
    left.merge(_agg(parts[1]))
    left.merge(_agg(parts[2]))
    inner = _agg(parts[1])
    inner.merge(_agg(parts[2]))
    right = _agg(parts[0])
    right.merge(inner)
    reordered = _agg(parts[2])
    reordered.merge(_agg(parts[0]))
    reordered.merge(_agg(parts[1]))
    assert _canon(left) == _canon(right) == _canon(one_pass)
    # Scan segments, counters and sketches do not depend on merge order either.
    for k, tw in one_pass.windows.items():
        other = reordered.windows[k]
        assert other.scans.keys() == tw.scans.keys()
        assert other.hot.counts == tw.hot.counts
        assert other.operations == tw.operations


def test_merge_leaves_source_unchanged_unless_taken() -> None:
    a = _agg(_traffic(2, 200))
    b = _agg(_traffic(3, 200))
    before = _canon(b)
    a.merge(b)
    assert _canon(b) == before


def test_span_adds_window_seconds_once_per_window() -> None:
    calls = [call("GetItem", key={"pk": "A"}, at=t) for t in (10, 950, 1900, 1910)]
    aggs = _agg(calls)
    assert len(aggs.windows) == 3
    [span] = aggs.spans()
    assert span.window_seconds == 2700
    assert span.calls == 4
    # Merging the same window twice (two files of one window) does not add seconds.
    again = _agg(calls)
    again.merge(_agg(calls))
    [span2] = again.spans()
    assert span2.window_seconds == 2700
    assert span2.calls == 8


def test_merge_rejects_other_table() -> None:
    a = TableWindow("1", "us-east-1", "A", 0, 900)
    b = TableWindow("1", "us-east-1", "B", 0, 900)
    with pytest.raises(ValueError, match="different tables"):
        a.merge(b)


def test_serialisation_roundtrip() -> None:
    aggs = _agg(_traffic(4))
    for tw in aggs.windows.values():
        back = TableWindow.from_dict(orjson.loads(tw.to_json()))
        assert back.to_dict() == tw.to_dict()


def test_serialised_size_is_bounded_under_adversarial_traffic() -> None:
    """Huge keys, many principals, many patterns and errors: the item still fits DynamoDB."""
    aggs = AggregateSet(3600)
    for i in range(20_000):
        big = f"USER#{i}#" + "x" * 1800  # partition keys up to 2 KB
        aggs.add(call("GetItem", key={"pk": big, "sk": f"S{i}" + "y" * 900}, at=i % 3000))
        aggs.add(call("Scan", at=i % 3000, principal=f"arn:aws:iam::1:role/r{i}"))
        aggs.add(call("PutItem", key={"pk": big}, at=1, error=f"Err{i}"))
        aggs.add(
            call(
                "PutItem",
                key={"pk": big},
                at=1,
                error="ValidationException",
                message="Item size has exceeded the maximum allowed size",
            )
        )
    [tw] = aggs.windows.values()
    size = len(tw.to_json())
    assert size < MAX_SERIALIZED_BYTES
    assert len(tw.scans) <= 101
    assert tw.size_exceeded == 20_000


def test_batch_call_counts_each_table_separately() -> None:
    from auditor.kernel.calls import Access, ApiCall, ItemAccess
    from tests.factories import T0

    items = (
        ItemAccess("A", "BatchWriteItem:Put", Access.WRITE, key={"pk": "1"}),
        ItemAccess("A", "BatchWriteItem:Put", Access.WRITE, key={"pk": "2"}),
        ItemAccess("B", "BatchWriteItem:Delete", Access.WRITE, key={"id": 9}),
    )
    c = ApiCall("e1", T0, "BatchWriteItem", Access.WRITE, "1", "r", ("A", "B"), items)
    aggs = _agg([c])
    by_table = {k[2]: v for k, v in aggs.windows.items()}
    assert by_table["A"].item_writes == 2 and by_table["B"].item_writes == 1
    assert by_table["A"].calls == 1 and by_table["B"].calls == 1
    assert decode_key(by_table["B"].hot.top(1)[0][0]) == {"id": 9}


@pytest.mark.parametrize(
    ("key", "hint", "expected"),
    [
        ({"id": 1}, None, "id"),
        ({"Artist": "a", "SongTitle": "b"}, None, "Artist"),
        ({"sk": "x", "pk": "y"}, None, "pk"),
        ({"SK": "x", "tenant": "y"}, None, "tenant"),
        ({"a": 1, "b": 2}, "b", "b"),
        ({"a": 1, "b": 2}, "missing", "a"),
    ],
)
def test_partition_attr(key: dict, hint: str | None, expected: str) -> None:
    assert partition_attr(key, hint) == expected


@pytest.mark.parametrize("value", ["USER#1", 12, 1.5, True, None, "a\x1fb"])
def test_key_encoding_roundtrip(value: object) -> None:
    assert decode_key(encode_key("pk", value)) == {"pk": value}


def test_string_and_number_keys_differ() -> None:
    assert encode_key("pk", "1") != encode_key("pk", 1)


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (
            "ThrottlingException",
            "Throughput exceeds ... ThrottlingReasons: [TableReadKeyRangeThroughputExceeded]",
            ("key_range", None),
        ),
        (
            "ProvisionedThroughputExceededException",
            "reason TableWriteProvisionedThroughputExceeded",
            ("provisioned", None),
        ),
        ("ThrottlingException", "TableReadMaxOnDemandThroughputExceeded", ("on_demand_max", None)),
        (
            "ThrottlingException",
            "IndexWriteAccountLimitExceeded resource arn:aws:dynamodb:us-east-1:1:table/T/index/ByStatus",
            ("gsi_backpressure", "ByStatus"),
        ),
        (
            "ThrottlingException",
            "IndexReadKeyRangeThroughputExceeded arn:aws:dynamodb:us-east-1:1:table/T/index/G1",
            ("key_range", "G1"),
        ),
        (
            "RequestLimitExceeded",
            "Throughput exceeds the current throughput limit for your account.",
            ("account_limit", None),
        ),
        (
            "ProvisionedThroughputExceededException",
            "The level of configured provisioned throughput for the table was exceeded.",
            ("provisioned_or_key_range", None),
        ),
        # no reasons: decided by the throttling detector from the keys' spread
        ("ThrottlingException", "Rate of requests exceeds the allowed throughput.", (GENERIC_ON_DEMAND, None)),
        ("ThrottlingException", None, (GENERIC_ON_DEMAND, None)),
    ],
)
def test_throttle_cause(code: str, message: str | None, expected: tuple) -> None:
    assert throttle_cause(code, message) == expected


def test_batched_key_counting_is_invisible_and_exact_while_small() -> None:
    """Key accesses are batched (PENDING_LIMIT); every read of a sketch sees them all, mid-batch or not."""
    from auditor.kernel.aggregates.bounds import PENDING_LIMIT

    tw = TableWindow("1", "us-east-1", "Orders", 0, 900)
    calls = [call("GetItem", key={"pk": f"CUSTOMER#{i % 50}"}, at=i % 900) for i in range(PENDING_LIMIT + 500)]
    calls += [call("PutItem", key={"pk": "CUSTOMER#7"}, at=10) for _ in range(30)]
    for c in calls[:100]:
        tw.add(c, c.items, c.time.timestamp())
    # Read before any flush: the pending accesses are folded in by the property.
    assert tw.hot.total == 100 and tw.distinct.estimate() == 50
    for c in calls[100:]:
        tw.add(c, c.items, c.time.timestamp())
    expected = {encode_key("pk", f"CUSTOMER#{k}"): 0 for k in range(50)}
    for i in range(PENDING_LIMIT + 500):
        expected[encode_key("pk", f"CUSTOMER#{i % 50}")] += 1
    expected[encode_key("pk", "CUSTOMER#7")] += 30
    assert dict(tw.hot.counts) == expected and tw.hot.error == 0
    assert dict(tw.hot_writes.counts) == {encode_key("pk", "CUSTOMER#7"): 30}
    assert tw.key_attrs == {"pk": PENDING_LIMIT + 530}
    # Per-minute sketches: minute 0 holds the 30 writes (at=10) and the reads of seconds 0..59.
    reads_minute0 = sum(1 for i in range(PENDING_LIMIT + 500) if i % 900 < 60 and i % 50 == 7)
    minute0 = int(calls[-1].time.timestamp()) // 60 * 60
    assert tw.peak_minute(encode_key("pk", "CUSTOMER#7")) == (minute0, reads_minute0 + 30, 30)
    # A copy and a round trip carry everything, pending accesses included.
    tw.add(calls[0], calls[0].items, calls[0].time.timestamp())
    copied = tw.copy()
    assert copied.hot.total == tw.hot.total == PENDING_LIMIT + 531
    assert TableWindow.from_dict(orjson.loads(tw.to_json())).hot.counts == tw.hot.counts


def _stored(tw: TableWindow) -> TableWindow:
    return TableWindow.from_dict(orjson.loads(tw.to_json()))


def test_stored_parts_within_the_detail_budget_merge_as_the_parts_held_in_memory() -> None:
    """The service stores one contribution per trail object and merges them; analyze-trail merges the same parts in
    memory: the busiest second and minute of every key come out the same (a second split between two objects adds)."""
    calls = _traffic(5)
    parts = [_agg(calls[i::3]) for i in range(3)]  # every second and minute split between the three parts
    in_memory, stored = _agg([]), _agg([])
    for aggs in parts:
        for tw in aggs.windows.values():
            tw.flush()
            assert len(tw.to_json()) < MAX_SERIALIZED_BYTES
        for key, tw in aggs.windows.items():
            copy = _stored(tw)
            if key in stored.windows:
                stored.windows[key].merge(copy)
            else:
                stored.windows[key] = copy
        in_memory.merge(aggs)
    assert in_memory.windows.keys() == stored.windows.keys()
    for key, tw in in_memory.windows.items():
        other = stored.windows[key]
        assert other.second_peaks() == tw.second_peaks() and tw.second_peaks()
        assert other.minute_peaks() == tw.minute_peaks()
        assert other.to_dict() == tw.to_dict()


def test_per_second_counts_beyond_the_detail_budget_keep_each_busy_keys_busiest_seconds() -> None:
    tw = TableWindow("1", "us-east-1", "Orders", 0, 900)
    tw.seconds = {(f"k{i:04d}" + "x" * 200, s * 2): 100 - s for i in range(300) for s in range(20)}
    kept = TableWindow.from_dict(orjson.loads(tw.to_json())).seconds
    assert len(kept) <= SERIALIZED_PEAK_KEYS * SECONDS_PER_KEY < len(tw.seconds)
    assert all(n >= 100 - SECONDS_PER_KEY for n in kept.values())  # each key's busiest seconds
    tw.seconds = dict(list(tw.seconds.items())[:100])  # within the budget: all of them
    assert TableWindow.from_dict(orjson.loads(tw.to_json())).seconds == tw.seconds

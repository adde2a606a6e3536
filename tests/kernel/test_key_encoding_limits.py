"""encode_key on hostile key values: bounded size, exact big integers, no recursion errors."""

from __future__ import annotations

from typing import Any

from auditor.kernel.aggregates.keys import MAX_KEY_BYTES, decode_key, encode_key


def test_keys_over_the_dynamodb_limit_are_stored_as_a_fixed_size_digest() -> None:
    keys = {encode_key("pk", "x" * 1_000_000 + str(n)) for n in range(50)}
    assert len(keys) == 50  # distinct values stay distinct
    assert all(len(k) < 100 for k in keys)
    assert encode_key("pk", "x" * MAX_KEY_BYTES) == 'pk\x1f"' + "x" * MAX_KEY_BYTES  # at the limit: kept as is
    assert decode_key(encode_key("pk", "y" * 5000))["pk"].startswith("(over 2 KB, sha256 ")


def test_integers_beyond_64_bits_round_trip_exactly() -> None:
    for value in (99999999999999999999999, -(10**30), 2**64):
        assert decode_key(encode_key("pk", value)) == {"pk": value}
    assert decode_key(encode_key("pk", 42)) == {"pk": 42}
    assert len(encode_key("pk", 10**5000)) < 100


def test_deeply_nested_values_are_digested_not_fatal() -> None:
    value: Any = "x"
    for _ in range(300):
        value = {"M": {"a": value}}
    key = encode_key("pk", value)
    assert key.startswith('pk\x1f"(not a key value, sha256 ')
    assert encode_key("pk", value) == key  # deterministic


def test_aggregates_keep_digests_of_oversized_keys_not_the_keys() -> None:
    from auditor.kernel.aggregates.window import AggregateSet
    from tests.factories import call

    aggs = AggregateSet()
    for n in range(20):
        aggs.add(call(key={"pk": f"{n}-" + "k" * 100_000}, at=n, event_id=f"e{n}"))
    aggs.flush()
    [window] = aggs.windows.values()
    keys = [k for k, _ in window.hot.top(50)]
    assert len(keys) == 20
    assert all(len(str(k)) < 200 for k in keys)

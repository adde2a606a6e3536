from __future__ import annotations

import hashlib
import random
from collections import Counter

import orjson
import pytest

from auditor.kernel.aggregates.sketch import DistinctCounter, HeavyHitters, _hash64


def _stream(n: int, distinct: int, heavy: dict[str, float], seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r = rng.random()
        acc = 0.0
        for k, p in heavy.items():
            acc += p
            if r < acc:
                out.append(k)
                break
        else:
            out.append(f"k{rng.randrange(distinct)}")
    return out


def _hh(values: list[str], capacity: int = 64) -> HeavyHitters:
    hh = HeavyHitters(capacity)
    for v in values:
        hh.add(v)
    return hh


def test_heavy_hitters_exact_while_small() -> None:
    values = _stream(5000, 100, {"hot": 0.3})
    hh = _hh(values, capacity=64)  # 101 distinct <= 2 * 64: exact
    assert hh.error == 0
    assert hh.counts == dict(Counter(values))
    assert hh.total == 5000


def test_heavy_hitters_bounded_lower_bounds_with_many_keys() -> None:
    values = _stream(50_000, 20_000, {"hot": 0.2, "warm": 0.05})
    truth = Counter(values)
    hh = _hh(values, capacity=64)
    assert len(hh.counts) <= 128
    assert hh.error > 0
    for key, est in hh.counts.items():
        assert est <= truth[key] <= est + hh.error
    top = [k for k, _ in hh.top(2)]
    assert top == ["hot", "warm"]
    # Misra-Gries guarantee: undercount at most N / (k + 1).
    assert truth["hot"] - hh.counts["hot"] <= 50_000 / 65


def test_heavy_hitters_merge_is_associative_and_commutative_when_exact() -> None:
    parts = [_stream(2000, 50, {"hot": 0.3}, seed=s) for s in range(3)]
    a, b, c = (_hh(p) for p in parts)
    left = _hh(parts[0])
    left.merge(b)
    left.merge(c)
    right_inner = _hh(parts[1])
    right_inner.merge(c)
    right = _hh(parts[0])
    right.merge(right_inner)
    swapped = _hh(parts[2])
    swapped.merge(a)
    swapped.merge(b)
    one_pass = _hh(parts[0] + parts[1] + parts[2])
    assert left.counts == right.counts == swapped.counts == one_pass.counts
    assert left.total == one_pass.total == 6000


def test_heavy_hitters_merge_keeps_heavy_keys_when_lossy() -> None:
    parts = [_stream(20_000, 10_000, {"hot": 0.25}, seed=s) for s in range(4)]
    merged = _hh(parts[0], 32)
    for p in parts[1:]:
        merged.merge(_hh(p, 32))
    truth = Counter(v for p in parts for v in p)
    assert merged.top(1)[0][0] == "hot"
    est = merged.counts["hot"]
    assert est <= truth["hot"] <= est + merged.error


def test_heavy_hitters_roundtrip_and_limit() -> None:
    hh = _hh(_stream(3000, 200, {"hot": 0.4}), capacity=128)
    back = HeavyHitters.from_dict(orjson.loads(orjson.dumps(hh.to_dict())))
    assert back.counts == hh.counts and back.total == hh.total and back.error == hh.error
    cut = HeavyHitters.from_dict(hh.to_dict(limit=5))
    assert len(cut.counts) <= 5
    assert cut.top(1)[0][0] == "hot"
    assert cut.error > 0  # truncation is accounted for as error


def test_heavy_hitters_rejects_bad_capacity() -> None:
    with pytest.raises(ValueError, match="capacity"):
        HeavyHitters(0)


def test_distinct_counter_exact_when_small() -> None:
    dc = DistinctCounter()
    for v in ["PENDING", "DONE", "PENDING", "RUNNING"] * 100:
        dc.add(v)
    assert dc.estimate() == 3
    assert dc.exact is not None


@pytest.mark.parametrize("n", [2000, 100_000])
def test_distinct_counter_hll_accuracy(n: int) -> None:
    dc = DistinctCounter()
    for i in range(n):
        dc.add(f"USER#{i}")
    assert dc.exact is None
    assert abs(dc.estimate() - n) / n < 0.05


def test_distinct_counter_merge_is_order_independent() -> None:
    chunks = [[f"k{i}" for i in range(s * 900, s * 900 + 1500)] for s in range(3)]  # overlapping
    counters = []
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        acc = DistinctCounter()
        for idx in order:
            part = DistinctCounter()
            for v in chunks[idx]:
                part.add(v)
            acc.merge(part)
        counters.append(acc)
    one = DistinctCounter()
    for ch in chunks:
        for v in ch:
            one.add(v)
    assert counters[0].registers == counters[1].registers == counters[2].registers == one.registers
    assert abs(one.estimate() - 3300) / 3300 < 0.05


def test_distinct_counter_exact_union_stays_exact() -> None:
    a, b = DistinctCounter(), DistinctCounter()
    for v in "abc":
        a.add(v)
    for v in "cde":
        b.add(v)
    a.merge(b)
    assert a.estimate() == 5


def test_distinct_counter_roundtrip_and_size_bound() -> None:
    dc = DistinctCounter()
    for i in range(1000):
        dc.add("X" * 100 + str(i))  # exact, but too large to store as a set
    data = dc.to_dict()
    assert "hll" in data
    assert len(orjson.dumps(data)) < 6000
    back = DistinctCounter.from_dict(data)
    assert abs(back.estimate() - 1000) < 50
    small = DistinctCounter()
    small.add("a")
    assert DistinctCounter.from_dict(small.to_dict()).estimate() == 1
    with pytest.raises(ValueError, match="register"):
        DistinctCounter.from_dict({"hll": "AAAA"})


def _reference_prune(counts: dict[str, int], capacity: int) -> tuple[dict[str, int], int]:
    """Misra-Gries pruning as the textbook states it: sort by count, keep the top ``capacity`` minus the next."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    cut = items[capacity][1]
    return {k: c - cut for k, c in items[:capacity] if c > cut}, cut


@pytest.mark.parametrize("seed", range(5))
def test_prune_matches_the_sorting_reference_including_ties(seed: int) -> None:
    rng = random.Random(seed)
    hh = HeavyHitters(16)
    # Few distinct counts, so many keys tie at the cut.
    hh.counts = Counter({f"k{i}": rng.choice([1, 2, 2, 3, 3, 3, 7]) for i in range(40)})
    expected, cut = _reference_prune(dict(hh.counts), 16)
    hh._prune()
    assert dict(hh.counts) == expected
    assert hh.error == cut
    assert len(hh.counts) <= 16


def test_add_many_equals_merging_the_batch_counts() -> None:
    values = _stream(20_000, 5_000, {"hot": 0.2, "warm": 0.05}, seed=3)
    batched = HeavyHitters(64)
    for start in range(0, len(values), 4096):
        batched.add_many(values[start : start + 4096])
    merged = HeavyHitters(64)
    for start in range(0, len(values), 4096):
        batch = HeavyHitters(10**6)
        for v in values[start : start + 4096]:
            batch.add(v)
        merged.merge(batch)
    assert batched.counts == merged.counts and batched.total == merged.total == 20_000
    assert batched.error == merged.error > 0
    truth = Counter(values)
    assert truth["hot"] - batched.counts["hot"] <= batched.error  # a lower bound within the error


def test_add_many_is_exact_while_small() -> None:
    values = _stream(5_000, 100, {"hot": 0.5})
    hh = HeavyHitters(64)
    hh.add_many(values[:2000])
    hh.add_many(values[2000:])
    assert hh.counts == Counter(values) and hh.error == 0


def test_distinct_counter_update_equals_adding_one_by_one() -> None:
    values = [f"USER#{i}" for i in range(5_000)]
    one = DistinctCounter()
    for v in values:
        one.add(v)
    many = DistinctCounter()
    many.update(values[:100])  # exact
    many.update(values[100:])  # crosses into HyperLogLog, then hashes in bulk
    many.update(values[:10])  # repeats change nothing
    assert many.exact is None and one.exact is None
    assert many.registers == one.registers


def test_distinct_counter_registers_are_those_of_blake2b_64() -> None:
    """Registers are stored and merged across processes and versions: each value's place is fixed by the 64-bit
    blake2b of its UTF-8 bytes (lone surrogates passed through), whatever way the counter computes it."""
    pinned = {"USER#1": 15735367750001169478, "clé": 2938443246599626316, "\ud800x": 5638114156032066728}
    for value, h in pinned.items():
        assert _hash64(value) == h
    values = [*pinned, "", "€" * 40, *(f"USER#{i}" for i in range(3_000))]
    expected = bytearray(4096)
    for value in values:
        digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        h = int.from_bytes(digest, "big")
        rank = 52 - (h & ((1 << 52) - 1)).bit_length() + 1
        expected[h >> 52] = max(expected[h >> 52], rank)
    dc = DistinctCounter()
    dc.update(values[:5])  # exact, then every value hashed on the way to HyperLogLog
    dc.update(values[5:])
    assert dc.registers == expected
    other = DistinctCounter()
    other.update(values[:1_500])
    small = DistinctCounter()
    small.update(values[1_500:1_800])  # merged in while exact
    other.merge(small)
    other.update(values[1_800:])
    assert other.registers == expected

"""Event fingerprints (what each trail object counted) and the grouping of objects that share events."""

from __future__ import annotations

import random
import uuid

import pytest

from auditor.kernel.aggregates.fingerprints import EventFingerprints, fingerprint
from auditor.service.dedupe import group_overlaps

EPOCH = 1_764_583_200.0  # 2025-12-01T10:00:00Z, a window start


def test_fingerprint_is_the_event_id() -> None:
    a = fingerprint("11111111-2222-3333-4444-555555555555")
    assert a == fingerprint("11111111-2222-3333-4444-555555555555")
    assert a != fingerprint("11111111-2222-3333-4444-555555555556")
    assert 0 <= a < 2**64
    assert fingerprint("\ud800-lone-surrogate") >= 0  # any str an input can hold
    # 200,000 random UUIDs (a busy window's events) give 200,000 fingerprints: no false overlap to re-read
    ids = [str(uuid.UUID(int=random.Random(7).getrandbits(128) ^ i, version=4)) for i in range(200_000)]
    assert len({fingerprint(i) for i in ids}) == len(set(ids))


def test_round_trip_by_window() -> None:
    prints = EventFingerprints(900)
    prints.add("a", EPOCH + 1)
    prints.add("b", EPOCH + 899.5)
    prints.add("c", EPOCH + 900)
    back = EventFingerprints.from_bytes(prints.to_bytes())
    assert back.window_seconds == 900 and back.starts() == [int(EPOCH), int(EPOCH) + 900]
    assert list(back.window(int(EPOCH))) == [fingerprint("a"), fingerprint("b")]
    assert list(back.window(int(EPOCH) + 900)) == [fingerprint("c")]
    assert list(back.window(0)) == [] and len(back) == 3
    assert EventFingerprints.from_bytes(EventFingerprints(60).to_bytes()).starts() == []


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"something else\n",
        b"ddb-audit-fingerprints/2\n",
        b'ddb-audit-fingerprints/2\n{"window_seconds": 900, "windows": [[0, 2]]}\n' + b"\0" * 15,
        b'ddb-audit-fingerprints/2\n{"window_seconds": 900, "windows": [[0, -1]]}\n',
        b'ddb-audit-fingerprints/2\n{"window_seconds": 0, "windows": []}\n',
        b"ddb-audit-fingerprints/2\n[1, 2]\n",
    ],
)
def test_anything_else_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        EventFingerprints.from_bytes(data)


def test_groups_are_transitive_and_only_of_sharing_sources() -> None:
    groups, shared = group_overlaps({"s3://b/1": [1, 2, 3], "s3://b/2": [3, 4], "s3://b/3": [4, 5], "s3://b/4": [6, 7]})
    assert groups == [["s3://b/1", "s3://b/2", "s3://b/3"]]
    assert shared == 2
    assert group_overlaps({"s3://b/1": [1], "s3://b/2": [2]}) == ([], 0)
    assert group_overlaps({}) == ([], 0)
    groups, shared = group_overlaps({"s3://b/9": [5, 5], "s3://b/1": [5]})  # repeated inside one object too
    assert groups == [["s3://b/1", "s3://b/9"]] and shared == 1

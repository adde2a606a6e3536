"""benchmarks.cost's throttling recall: a planted episode goes through the real detectors, CloudWatch for the cause
(whatever the capture) and the captured throttled calls for the key."""

from __future__ import annotations

import random
from typing import Any

import pytest

from benchmarks.cost import Throttle, build_account, throttling_found

ALL = [
    {
        "Name": "all",
        "FieldSelectors": [
            {"Field": "eventCategory", "Equals": ["Data"]},
            {"Field": "resources.type", "Equals": ["AWS::DynamoDB::Table"]},
        ],
    }
]


def _full(i: int, minute: int) -> list[dict[str, Any]]:
    return ALL


def _nothing(i: int, minute: int) -> list[dict[str, Any]]:
    return []


@pytest.mark.parametrize("cause_metrics", [True, False])
@pytest.mark.parametrize("cause", ["key_range", "provisioned", "on_demand_max"])
def test_each_cause_is_found_from_cloudwatch_without_any_capture(cause: str, cause_metrics: bool) -> None:
    acct = build_account(16)
    mode = "PROVISIONED" if cause == "provisioned" else "PAY_PER_REQUEST"
    table = next(i for i, t in enumerate(acct.tables) if t.mode == mode and t.avg_rate >= 1.0)
    th = Throttle(table, 600, 20, cause, True, 200, cause_metrics, "THROTTLED#x")
    found, named = throttling_found(acct, th, _nothing, random.Random(1))
    assert found is True
    assert named is False  # nothing captured: no key


def test_a_hot_partitions_key_is_named_only_from_captured_calls() -> None:
    acct = build_account(16)
    table = next(i for i, t in enumerate(acct.tables) if t.mode == "PAY_PER_REQUEST" and t.avg_rate >= 1.0)
    th = Throttle(table, 600, 20, "key_range", True, 200, False, "THROTTLED#x")
    assert throttling_found(acct, th, _full, random.Random(1)) == (True, True)
    # Captured only from minute 615 on: still within the episode, still named.
    assert throttling_found(acct, th, lambda i, m: ALL if m >= 615 else [], random.Random(1)) == (True, True)
    # Captured only after the episode: the cause (CloudWatch) but not the key.
    assert throttling_found(acct, th, lambda i, m: ALL if m >= 620 else [], random.Random(1)) == (True, False)

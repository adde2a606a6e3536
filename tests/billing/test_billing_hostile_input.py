"""Billing input from a hostile or broken producer: one-line errors naming series and position, loops bounded
by the input's length (never by a value in it), and a window CloudWatch could have produced."""

from __future__ import annotations

import math
import random
import time
from typing import Any

import orjson
import pytest

from auditor.billing.decide import _best_reserved_units
from auditor.exceptions import InputError
from auditor.models.billing import BillingInput


def doc(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "table": "Orders",
        "billing_mode": "PAY_PER_REQUEST",
        "start": "2026-11-01T00:00:00Z",
        "period_seconds": 60,
        "series": [{"index": None, "consumed_read": [1.0, 2.0, 3.0], "consumed_write": [1.0, 1.0, 1.0]}],
    }
    base.update(over)
    return base


@pytest.mark.parametrize(
    ("value", "expect"),
    [
        (True, "valid number"),
        ("5", "valid number"),
        ({"n": 1}, "valid number"),
        (-1.0, "finite number from 0"),
        (1.7e308, "finite number from 0"),
    ],
)
def test_bad_capacity_values_are_one_line_errors_naming_the_position(value: Any, expect: str) -> None:
    d = doc()
    d["series"][0]["consumed_write"][2] = value
    with pytest.raises(InputError) as err:
        BillingInput.from_json(orjson.dumps(d), "in.json")
    message = str(err.value)
    assert "\n" not in message and expect in message
    assert message.startswith(("in.json: series[0].consumed_write[2]", "in.json: series[0]: consumed_write[2]"))


@pytest.mark.parametrize("text", [b"1e400", b"NaN", b"Infinity", b"-Infinity"])
def test_non_finite_json_numbers_are_input_errors(text: bytes) -> None:
    raw = orjson.dumps(doc()).replace(b"[1.0,2.0,3.0]", b"[1.0," + text + b",3.0]")
    with pytest.raises(InputError):
        BillingInput.from_json(raw, "in.json")


def test_a_window_longer_than_cloudwatch_keeps_is_refused_before_any_simulation() -> None:
    values = [1.0] * 20_000  # 20,000 one-day periods: 55 years
    d = doc(period_seconds=86_400, series=[{"consumed_read": values, "consumed_write": values}])
    with pytest.raises(InputError, match="at most 455 days"):
        BillingInput.from_json(orjson.dumps(d), "in.json")


def _brute(usage: list[float], rc: float, rate: float) -> tuple[float, int, float]:
    def cost(units: int) -> float:
        return math.fsum(units * rc + max(u - units, 0.0) * rate for u in usage)

    best_units, best_cost = 0, cost(0)
    for units in range(100, 100 * (math.ceil(max(usage) / 100) + 1), 100):
        c = cost(units)
        if c < best_cost:
            best_units, best_cost = units, c
    return cost(0), best_units, best_cost


def test_reserved_units_match_the_exhaustive_search() -> None:
    rng = random.Random(15)
    for _ in range(300):
        n = rng.randint(1, 60)
        usage = [rng.choice([0.0, rng.uniform(0, 3000), rng.uniform(0, 300)]) for _ in range(n)]
        rc, rate = rng.uniform(0.001, 0.02), rng.uniform(0.005, 0.03)
        got, want = _best_reserved_units(usage, rc, rate), _brute(usage, rc, rate)
        assert got[1] == want[1], (usage, rc, rate)
        assert got[0] == want[0] and got[2] == pytest.approx(want[2])


def test_a_huge_spike_does_not_loop_over_its_value() -> None:
    usage = [5.0] * 335 + [1e12]
    t0 = time.process_time()
    _, units, _ = _best_reserved_units(usage, 0.0025, 0.00065 * 5)
    assert time.process_time() - t0 < 2  # 1e10 iterations before; O(n log n) now
    assert units % 100 == 0


@pytest.mark.parametrize(
    "start", ["9999-12-31T23:59:00-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:00Z", "1900-01-01T00:00:00Z"]
)
def test_start_at_the_edge_of_the_date_range_is_an_input_error(start: str) -> None:
    with pytest.raises(InputError, match="start"):
        BillingInput.from_json(orjson.dumps(doc(start=start)), "in.json")

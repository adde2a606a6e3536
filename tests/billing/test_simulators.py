"""The two auto-scaling simulators, against hand-computed traces of every rule.

Conventions: consumed values are CloudWatch ``Sum`` per minute (units per minute), so a load of ``L`` units per
second is ``60 * L``. With the default target of 70 %, the evaluator's ``f(L) = L / 70 * 100`` (``f(70) = 100``,
``f(140) = 200``) and the aws simulation's capacity is ``ceil(L / 0.7)``.
"""

from __future__ import annotations

import math
import random
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.billing.aws_scaling import simulate_aws
from auditor.billing.decide import evaluator_label
from auditor.billing.evaluator_scaling import simulate_evaluator
from auditor.billing.simulate import (
    AwsBehaviour,
    DimensionRun,
    EvaluatorParams,
    ScalingPolicy,
)
from tests import billing_reference as reference

DAY = 1440
START = 20_000 * DAY  # an epoch minute at 00:00 UTC


def per_minute(rate_per_second: float, minutes: int) -> list[float]:
    return [rate_per_second * 60.0] * minutes


def changes(capacity: list[float] | None) -> list[tuple[int, float]]:
    assert capacity is not None
    return [(i, capacity[i]) for i in range(1, len(capacity)) if capacity[i] != capacity[i - 1]]


def piecewise(n: int, first: float, steps: list[tuple[int, float]]) -> list[float]:
    """A capacity trace: ``first`` from minute 0, then each (minute, value) from that minute on."""
    out = [first] * n
    for at, value in steps:
        out[at:] = [value] * (n - at)
    return out


def sawtooth(minutes: int, high: float = 140, low: float = 70, period: int = 30, burst: int = 5) -> list[float]:
    """``high`` units/s for the first ``burst`` minutes of every ``period``, ``low`` otherwise."""
    return [(high if i % period < burst else low) * 60.0 for i in range(minutes)]


# ======================================================================================= evaluator (archived)


def test_evaluator_steady_load_is_tracked_at_target_and_costed_by_hourly_means() -> None:
    run = simulate_evaluator(per_minute(70, 120), per_minute(35, 120), start_minute=START, trace=True)
    assert set(run.read.capacity or []) == {100.0}  # f(70) = 70 / 70 * 100
    assert set(run.write.capacity or []) == {50.0}
    assert run.read.unit_hours == 200.0  # two clock hours at a mean of 100 units
    assert run.write.unit_hours == 100.0
    assert run.read.consumed_units == 70 * 60 * 120
    assert run.read.hours == [START // 60, START // 60 + 1]
    assert run.decrease_events == 0


def test_evaluator_scale_out_fires_after_one_minute_when_equal_and_two_otherwise() -> None:
    # 70/s sets p = 100 exactly; at minute 10 the load doubles. At minute 11 the lower of minutes 9 and 10 is 70,
    # and f(70) == p: equality counts, so p = f(max) = f(140) = 200 after a single elevated minute.
    reads = per_minute(70, 10) + per_minute(140, 10)
    run = simulate_evaluator(reads, per_minute(1, 20), start_minute=START, trace=True)
    assert changes(run.read.capacity) == [(11, 200.0)]
    # Start at 80/s instead: p = f(80) = 114.28..., so 70/s is below p and the scale-out needs both previous
    # minutes elevated: it fires at minute 12.
    reads = per_minute(80, 1) + per_minute(70, 9) + per_minute(140, 10)
    run = simulate_evaluator(reads, per_minute(1, 20), start_minute=START, trace=True)
    assert run.read.capacity is not None
    assert run.read.capacity[0] == pytest.approx(80 / 70 * 100)
    assert changes(run.read.capacity) == [(12, 200.0)]


def test_evaluator_scale_out_is_sized_from_the_larger_minute_and_not_clamped_to_the_maximum() -> None:
    params = EvaluatorParams(read=ScalingPolicy(70, 1, 150))
    reads = [*per_minute(70, 10), 140 * 60.0, 210 * 60.0, *per_minute(210, 5)]
    run = simulate_evaluator(reads, per_minute(1, len(reads)), params, start_minute=START, trace=True)
    # minute 11: min(r9, r10) = 70 -> f = 100 == p -> p = f(max) = f(140) = 200 > M (not clamped);
    # minute 12: f(min(r10, r11)) = 200 > M = 150 -> p = M.
    assert run.read.capacity is not None
    assert run.read.capacity[11] == 200.0
    assert run.read.capacity[12] == 150.0


def test_evaluator_scale_in_happens_below_target_over_1_2_and_not_above() -> None:
    # 140/s sets p = 200. At 100/s, f = 142.86 and 200 > 1.2 * 142.86 = 171.4: scale-in once the last
    # 15 datapoints are all 100/s, i.e. at minute 30 + 15 = 45, to exactly f(100).
    reads = per_minute(140, 30) + per_minute(100, 60)
    run = simulate_evaluator(reads, per_minute(70, 90), start_minute=START, trace=True)
    assert changes(run.read.capacity) == [(45, (100 / 70) * 100)]
    assert run.decrease_events == 1
    # At 120/s, f = 171.4 and 1.2 * 171.4 = 205.7 > 200: it never qualifies.
    reads = per_minute(140, 30) + per_minute(120, 90)
    run = simulate_evaluator(reads, per_minute(70, 120), start_minute=START, trace=True)
    assert changes(run.read.capacity) == []
    # The factor is a parameter (an earlier version of the archived tool used 1.10).
    run = simulate_evaluator(
        reads, per_minute(70, 120), EvaluatorParams(scale_in_factor=1.1), start_minute=START, trace=True
    )
    assert changes(run.read.capacity) == [(45, (120 / 70) * 100)]


def test_evaluator_no_scale_in_in_the_first_15_datapoints() -> None:
    reads = per_minute(140, 1) + per_minute(1, 40)
    run = simulate_evaluator(reads, per_minute(1, 41), start_minute=START, trace=True)
    # The window of minutes i-15..i-1 first excludes minute 0 at i = 16.
    assert changes(run.read.capacity) == [(16, (1 / 70) * 100)]


def test_evaluator_sawtooth_exhausts_four_decreases_then_one_per_decrease_free_hour() -> None:
    # Reads: 140/s for 5 minutes, 70/s for 25, repeated; writes steady. Worked by hand:
    # scale-out to 200 at the 2nd high minute (equality), scale-in to 100 once 15 low minutes have passed
    # (minutes 20, 50, 80, 110: k = 4). Then a decrease needs no decrease in the previous 60 datapoints of either
    # dimension: 140 is blocked (last at 110), 170 is allowed, then 230, 290.
    n = 300
    run = simulate_evaluator(sawtooth(n), per_minute(70, n), start_minute=START, trace=True)
    expected = piecewise(
        n,
        200.0,
        [
            (20, 100.0),
            (31, 200.0),
            (50, 100.0),
            (61, 200.0),
            (80, 100.0),
            (91, 200.0),
            (110, 100.0),
            (121, 200.0),
            (170, 100.0),
            (181, 200.0),
            (230, 100.0),
            (241, 200.0),
            (290, 100.0),
        ],
    )
    assert run.read.capacity == expected
    assert set(run.write.capacity or []) == {100.0}
    assert run.decrease_events == 4  # the counter stops counting after the fourth
    # Hourly-mean costing: sum over the 5 clock hours of the mean capacity in each.
    hourly = [sum(expected[h * 60 : h * 60 + 60]) / 60 for h in range(5)]
    assert run.read.unit_hours == pytest.approx(sum(hourly), rel=1e-12)
    assert run.read.hourly_capacity == pytest.approx(hourly, rel=1e-12)


def test_evaluator_shared_counter_read_and_write_decreases_cost_two_and_ties_alternate_write_first() -> None:
    n = 300
    run = simulate_evaluator(sawtooth(n), sawtooth(n), start_minute=START, trace=True)
    # Minute 20: read and write both decrease (k = 2); minute 50: both again (k = 4). From then on one
    # decrease per decrease-free hour of BOTH dimensions; when both qualify they alternate, write first:
    # write at 110, read at 170, write at 230, read at 290.
    assert [i for i, v in changes(run.read.capacity) if v == 100.0] == [20, 50, 170, 290]
    assert [i for i, v in changes(run.write.capacity) if v == 100.0] == [20, 50, 110, 230]
    assert run.decrease_events == 4


def test_evaluator_counter_resets_at_midnight_utc() -> None:
    n = 300
    start = START - 60  # datapoint 60 is 00:00:00 UTC
    run = simulate_evaluator(sawtooth(n), sawtooth(n), start_minute=start, trace=True)
    # k = 4 after minute 50; the reset at minute 60 allows two more at 80 (read and write), then 110 ...
    assert [i for i, v in changes(run.read.capacity) if v == 100.0][:4] == [20, 50, 80, 110]
    assert run.decrease_events == 8


def test_evaluator_windows_are_positional_and_gap_hours_cost_nothing() -> None:
    # Datapoints only every other minute in the second hour, none in the third, 70/s throughout.
    minutes = list(range(START, START + 60)) + list(range(START + 60, START + 120, 2)) + [START + 180]
    values = per_minute(70, len(minutes))
    run = simulate_evaluator(values, values, read_minutes=minutes, write_minutes=minutes, trace=True)
    assert run.read.hours == [START // 60, START // 60 + 1, START // 60 + 3]
    # Hour 1 has 30 datapoints, hour 2 none (costs nothing), hour 3 one: 100 + 100 + 100.
    assert run.read.unit_hours == 300.0
    # Reads and writes aligned by position, truncated to the shorter list.
    run = simulate_evaluator(per_minute(70, 100), per_minute(70, 40), start_minute=START)
    assert run.minutes == 40
    assert run.read.consumed_units == 70 * 60 * 40
    assert run.notes


def test_evaluator_minimum_capacity_floors_the_scale_in() -> None:
    params = EvaluatorParams(read=ScalingPolicy(70, 10, 80_000))
    run = simulate_evaluator(per_minute(140, 5) + per_minute(0, 40), per_minute(0, 45), params, trace=True)
    assert run.read.capacity is not None
    assert run.read.capacity[-1] == 10.0
    assert run.read.min_capacity_seen == 10.0


@pytest.mark.parametrize(
    ("est", "cur", "od", "label"),
    [
        (84.0, 100.0, 200.0, "Provisioned_Modify"),  # (100 - 84) / 100 = 16 % > 15 %
        (86.0, 100.0, 200.0, "Provisioned"),  # 14 %: rule 2, current below on-demand
        (85.0, 100.0, 200.0, "Provisioned"),  # exactly 15 % is not above the threshold
        (50.0, 0.0, 60.0, "Provisioned"),  # on-demand table, simulated cheaper
        (60.0, 0.0, 60.0, "Ondemand"),  # strict: a tie stays on-demand
        (90.0, 100.0, 95.0, "Provisioned"),  # EST < OD <= CUR and <= 15 %: rule 3, labelled Provisioned
        (120.0, 100.0, 95.0, "Ondemand"),  # on-demand below both
    ],
)
def test_evaluator_labels_and_the_15_percent_modify_threshold(est: float, cur: float, od: float, label: str) -> None:
    assert evaluator_label(est, cur, od) == label


# ============================================================================================= aws (faithful)


def test_aws_scale_in_uses_the_absolute_threshold_20_points_below_target() -> None:
    # p = ceil(70 / 0.7) = 100. 55/s is 55 % (above 50 %): no scale-in, although the evaluator scales in at
    # 55/s (f(55) * 1.2 = 94.3 < 100). 45/s (45 %) for 15 minutes: decided at 90 + 15 = 105, in force 2 minutes
    # later, at ceil(45 / 0.7) = 65.
    reads = per_minute(70, 30) + per_minute(55, 60) + per_minute(45, 60)
    run = simulate_aws(reads, per_minute(1, 150), start_minute=START, trace=True)
    assert changes(run.read.capacity) == [(107, 65.0)]
    evaluator = simulate_evaluator(reads, per_minute(1, 150), start_minute=START, trace=True)
    assert changes(evaluator.read.capacity)[0] == (45, (55 / 70) * 100)


def test_aws_reaction_delay_burst_and_throttled_units_by_hand() -> None:
    # Both dimensions: 140/s for 5 minutes, 40/s for 25, repeated. p0 = ceil(140 / 0.7) = 200.
    # Minute 20: the last 15 minutes were below 50 % -> reads and writes (two scalable targets, two UpdateTable
    # requests, two decreases of the table's quota) lower to ceil(40 / 0.7) = 58, in force at 22; the burst bank
    # is capped at 300 s x 58 = 17,400 units.
    # Minute 30 (high): demand 8,400/min, capacity 3,480/min: 4,920 from the bank (12,480 left); minute 31 the
    # same (7,560 left); the alarm sees minutes 30 and 31 above 70 % and at 32 asks for ceil(140 / 0.7) = 200,
    # in force at 34; minute 32 leaves 2,640 in the bank; minute 33 serves 3,480 + 2,640 = 6,120 and throttles
    # 2,280 units.
    n = 300
    run = simulate_aws(sawtooth(n, low=40), sawtooth(n, low=40), start_minute=START, trace=True)
    assert changes(run.read.capacity)[:4] == [(22, 58.0), (34, 200.0), (52, 58.0), (64, 200.0)]
    # The table's quota: 4 decreases within the hour from its first one (20): read and write at 20 and at 50.
    # Then one decrease whenever the previous hour had none: 110 (read; the write request of the same minute
    # finds the reads' decrease in the preceding hour and is refused), 170, 230, 290 (read each time).
    decreased = {d: [i - 2 for i, v in changes(getattr(run, d).capacity) if v == 58.0] for d in ("read", "write")}
    assert decreased == {"read": [20, 50, 110, 170, 230, 290], "write": [20, 50]}
    assert run.decrease_events == 8
    # Each high period that starts at 58 units throttles 2,280 units: reads at 30, 60, 120, 180 and 240; writes,
    # which stay at 200 from minute 64, only at 30 and 60.
    assert run.read.throttled_units == 5 * 2280.0
    assert run.read.throttled_minutes == 5
    assert run.write.throttled_units == 2 * 2280.0
    assert run.read.throttled_share == pytest.approx(5 * 2280.0 / run.read.consumed_units)


def test_aws_decrease_quota_per_dimension_when_configured_apart() -> None:
    # One counter per scalable target: each dimension decreases at 20 and 50, but not at 80 (the day's first
    # decrease was at 20, so the "four within one hour" window closed at 80 and the last decrease, at 50, is
    # less than an hour back); then hourly: 110, 170, 230, 290, for both.
    n = 300
    run = simulate_aws(
        sawtooth(n, low=40),
        sawtooth(n, low=40),
        behaviour=AwsBehaviour(shared_decrease_quota=False),
        start_minute=START,
        trace=True,
    )
    for dim in (run.read, run.write):
        assert [i - 2 for i, v in changes(dim.capacity) if v == 58.0] == [20, 50, 110, 170, 230, 290]
    assert run.decrease_events == 12


def test_aws_four_free_decreases_must_fall_within_an_hour_of_the_first() -> None:
    # Writes idle at 1 unit; reads fall in steps of 30 minutes: 1,000/s, then 600, 300, 150, 75, 37.5/s.
    # Each step is more than 20 points below target, so the low alarm asks for a decrease 15 minutes into it.
    # The first decrease is at 45 (30 + 15); the second at 75 (< 45 + 60); the third would be at 105, after the
    # hour: it needs an hour without decreases (from 75): 135; then 195.
    steps = [1000, 600, 300, 150, 75, 37.5, 37.5, 37.5]
    reads = [v * 60.0 for v in steps for _ in range(30)]
    policy = ScalingPolicy(70, 1, 40_000)
    run = simulate_aws(reads, [0.0] * len(reads), policy, policy, start_minute=START, trace=True)
    assert [i - 2 for i, _ in changes(run.read.capacity)] == [45, 75, 135, 195]
    assert [v for _, v in changes(run.read.capacity)] == [
        float(math.ceil(600 / 0.7)),
        float(math.ceil(300 / 0.7)),
        float(math.ceil(75 / 0.7)),  # the window at 135 is [120, 135): 75/s
        float(math.ceil(37.5 / 0.7)),
    ]


def test_aws_does_not_scale_in_while_consumed_capacity_is_zero() -> None:
    # 700/s for an hour (capacity ceil(700 / 0.7) = 1,000), then nothing. AWS: "auto scaling does not scale down
    # your provisioned capacity if your table's consumed capacity becomes zero": the capacity stays at 1,000 for
    # the rest of the day, and every minute of it is billed.
    reads = per_minute(700, 60) + per_minute(0, 600)
    run = simulate_aws(reads, per_minute(0, 660), start_minute=START, trace=True)
    assert set(run.read.capacity or []) == {1000.0}
    assert run.read.unit_hours == 11 * 1000.0
    # With the rule switched off (the previous behaviour), the low alarm fires 15 minutes after traffic stops and
    # lowers reads to the minimum within 20 minutes.
    run = simulate_aws(reads, per_minute(0, 660), behaviour=AwsBehaviour(scale_in_at_zero=True), trace=True)
    assert changes(run.read.capacity) == [(77, 1.0)]
    # One request in the quiet hours is consumed capacity again: the window holding it scales in (to
    # ceil(1 / (0.7 * 60)) = 1 unit), 15 minutes after traffic stopped and while that minute is in the window.
    reads[300] = 1.0
    run = simulate_aws(reads, per_minute(0, 660), start_minute=START, trace=True)
    assert changes(run.read.capacity) == [(303, 1.0)]


def test_aws_hourly_billing_bound_bills_each_clock_hour_at_its_highest_capacity() -> None:
    # Capacity 200 until the decrease at 20 takes effect at 22, then 58, back to 200 at 34 and so on: the first
    # clock hour averages below 200, but its highest capacity is 200, as is every hour's.
    n = 180
    run = simulate_aws(sawtooth(n, low=40), sawtooth(n, low=40), start_minute=START, trace=True)
    assert run.read.peak_hour_unit_hours == 3 * 200.0
    assert run.read.unit_hours == sum(run.read.capacity or []) / 60 < 600
    # A window that starts mid-hour: the cut hour is billed pro rata.
    run = simulate_aws(per_minute(70, 90), per_minute(70, 90), start_minute=START + 30, trace=True)
    assert run.read.peak_hour_unit_hours == 100 * (30 + 60) / 60


def test_aws_reaction_delay_is_a_parameter() -> None:
    reads = per_minute(70, 10) + per_minute(140, 20)
    # The alarm needs minutes 10 and 11 above target: decided at 12, in force after the reaction delay.
    for delay in (0, 2, 5):
        run = simulate_aws(reads, per_minute(1, 30), behaviour=AwsBehaviour(reaction_minutes=delay), trace=True)
        assert changes(run.read.capacity) == [(12 + delay, 200.0)]
        assert run.read.throttled_units == 0.0  # the burst bank (300 s x 100) covers the wait


def test_aws_burst_bank_is_300_seconds_of_capacity_then_requests_throttle() -> None:
    # Capacity pinned at 100 (min = max): 10 idle minutes cannot bank more than 300 s x 100 = 30,000 units.
    # Then 200/s: 6,000 units over capacity per minute, the bank covers 5 minutes, the next 5 throttle 6,000 each.
    pinned = ScalingPolicy(70, 100, 100)
    reads = per_minute(0, 10) + per_minute(200, 10)
    run = simulate_aws(reads, per_minute(0, 20), pinned, pinned, trace=True)
    assert set(run.read.capacity or []) == {100.0}
    assert run.read.throttled_units == 30_000.0
    assert run.read.throttled_minutes == 5
    # Without burst capacity, all ten minutes throttle.
    run = simulate_aws(reads, per_minute(0, 20), pinned, pinned, AwsBehaviour(burst_seconds=0))
    assert run.read.throttled_units == 60_000.0


def test_aws_throttled_table_scales_from_what_it_served() -> None:
    # From idle at the minimum of 1 unit, a 1,000/s load arrives at minute 30. Auto scaling sees consumed
    # (served) units, never the throttled demand. Minute 30 serves 60 + the 300-unit bank = 360, minute 31 serves
    # 60; the alarm at 32 sizes from 360: ceil(360 / (0.7 * 60)) = 9, in force at 34. From then on each step
    # serves exactly the capacity, so it grows by ceil(p / 0.7) every 4 minutes (2 alarm minutes + 2 reaction),
    # until the capacity serves the whole load: ceil(1000 / 0.7) = 1,429.
    reads = per_minute(0, 30) + per_minute(1000, 120)
    run = simulate_aws(reads, per_minute(0, 150), trace=True)
    steps = changes(run.read.capacity)
    assert steps[0] == (34, 9.0)
    for (at_a, a), (at_b, b) in pairwise(steps[:-1]):
        assert (at_b - at_a, b) == (4, math.ceil(a / 0.7 - 1e-9))
    assert steps[-1] == (90, float(math.ceil(1000 / 0.7)))
    # Throttled: the demand of minutes 30..85 (56 x 60,000) minus what was served: 360, three minutes at 1 unit
    # (60), then four minutes at each capacity step from 9 to 712 units.
    served = 360 + 3 * 60 + 4 * 60 * sum(v for _, v in steps[:-2])
    assert steps[-2][1] == 1018.0  # from minute 86 the capacity serves all 60,000 units per minute
    assert run.read.throttled_units == 56 * 60_000 - served == 2_797_860
    assert run.read.throttled_minutes == 56


def test_aws_bills_every_minute_at_least_at_the_minimum_capacity() -> None:
    policy = ScalingPolicy(70, 5, 100)
    run = simulate_aws([0.0] * 180, [0.0] * 180, policy, policy, start_minute=START)
    assert run.read.unit_hours == 15.0  # 3 hours x 5 units
    assert run.read.hourly_capacity == [5.0, 5.0, 5.0]
    assert run.read.throttled_units == 0.0


def test_aws_daily_quota_resets_at_midnight_utc() -> None:
    n = 300
    run = simulate_aws(sawtooth(n, low=40), sawtooth(n, low=40), start_minute=START - 60, trace=True)
    decreased_at = [i - 2 for i, v in changes(run.read.capacity) if v == 58.0]
    # 20 and 50 (reads and writes: four) on the first day; at minute 60 the quota resets: 80 and 110 (four more,
    # within the hour from 80), then hourly, reads first: 170, 230, 290.
    assert decreased_at == [20, 50, 80, 110, 170, 230, 290]
    assert [i - 2 for i, v in changes(run.write.capacity) if v == 58.0] == [20, 50, 80, 110]


def test_aws_rejects_misaligned_dimensions() -> None:
    with pytest.raises(ValueError, match="one grid"):
        simulate_aws([1.0] * 3, [1.0] * 2)


# ================================================================================ fast == reference, O(n)

series_values = st.lists(
    st.one_of(st.just(0.0), st.floats(0, 3e6, allow_nan=False), st.sampled_from([60.0, 4200.0, 8400.0, 42000.0])),
    min_size=1,
    max_size=400,
)
#: Runs of one value (often 0): idle stretches, where the "no scale-in at zero consumption" rule decides.
run_values = st.lists(
    st.tuples(st.sampled_from([0.0, 0.0, 1.0, 60.0, 4200.0, 42000.0]), st.integers(1, 40)), min_size=1, max_size=30
).map(lambda runs: [v for v, k in runs for _ in range(k)])


@settings(max_examples=150, deadline=None)
@given(
    reads=series_values,
    writes=series_values,
    target=st.sampled_from([50.0, 70.0, 90.0]),
    minimum=st.sampled_from([1.0, 5.0]),
    maximum=st.sampled_from([100.0, 80_000.0]),
    factor=st.sampled_from([1.2, 1.1]),
    offset=st.integers(0, DAY - 1),
)
def test_evaluator_matches_the_window_rescanning_reference(
    reads: list[float],
    writes: list[float],
    target: float,
    minimum: float,
    maximum: float,
    factor: float,
    offset: int,
) -> None:
    params = EvaluatorParams(
        read=ScalingPolicy(target, minimum, maximum), write=ScalingPolicy(70, 1, maximum), scale_in_factor=factor
    )
    fast = simulate_evaluator(reads, writes, params, start_minute=START - offset, trace=True)
    slow = reference.evaluator_naive(reads, writes, params, start_minute=START - offset)
    assert fast.read.capacity == slow.read.capacity
    assert fast.write.capacity == slow.write.capacity
    assert fast.decrease_events == slow.decrease_events
    for a, b in ((fast.read, slow.read), (fast.write, slow.write)):
        assert a.unit_hours == pytest.approx(b.unit_hours, rel=1e-12)
        assert (a.increases, a.decreases) == (b.increases, b.decreases)
        assert_same_summary(a, b)


def assert_same_summary(fast: DimensionRun, slow: DimensionRun) -> None:
    """The per-dimension figures besides the trace: tracked or computed in bulk by the fast versions."""
    assert (fast.min_capacity_seen, fast.max_capacity_seen) == (slow.min_capacity_seen, slow.max_capacity_seen)
    assert fast.peak_per_second == slow.peak_per_second
    assert fast.consumed_units == slow.consumed_units
    assert fast.hours == slow.hours
    assert fast.hourly_capacity == slow.hourly_capacity


@settings(max_examples=150, deadline=None)
@given(
    reads=st.one_of(series_values, run_values),
    writes=st.one_of(series_values, run_values),
    target=st.sampled_from([50.0, 70.0, 90.0]),
    minimum=st.sampled_from([1.0, 5.0, 100.0]),
    delay=st.sampled_from([0, 2, 5]),
    burst=st.sampled_from([0, 300]),
    offset=st.integers(0, DAY - 1),
)
def test_aws_matches_the_window_rescanning_reference(
    reads: list[float],
    writes: list[float],
    target: float,
    minimum: float,
    delay: int,
    burst: int,
    offset: int,
) -> None:
    writes = (writes * (len(reads) // len(writes) + 1))[: len(reads)]
    rp, wp = ScalingPolicy(target, minimum, 40_000), ScalingPolicy(70, 1, 500)
    behaviour = AwsBehaviour(reaction_minutes=delay, burst_seconds=burst)
    fast = simulate_aws(reads, writes, rp, wp, behaviour, start_minute=START - offset, trace=True)
    slow = reference.aws_naive(reads, writes, rp, wp, behaviour, start_minute=START - offset)
    assert fast.decrease_events == slow.decrease_events
    for a, b in ((fast.read, slow.read), (fast.write, slow.write)):
        assert a.capacity == b.capacity
        assert a.peak_hour_unit_hours == b.peak_hour_unit_hours
        assert a.throttled_units == pytest.approx(b.throttled_units, rel=1e-9, abs=1e-6)
        assert a.throttled == pytest.approx(b.throttled, rel=1e-9, abs=1e-6)  # the per-minute trace
        assert a.throttled_minutes == b.throttled_minutes
        assert a.unit_hours == b.unit_hours  # whole units: the sums are exact
        assert (a.increases, a.decreases) == (b.increases, b.decreases)
        assert_same_summary(a, b)


@settings(max_examples=200, deadline=None)
@given(
    reads=st.one_of(series_values, run_values),
    writes=st.one_of(series_values, run_values),
    out_minutes=st.sampled_from([1, 2, 3]),
    in_minutes=st.sampled_from([1, 2, 5, 15]),
    gap=st.sampled_from([0.0, 20.0, 40.0]),
    free=st.sampled_from([0, 1, 4]),
    free_window=st.sampled_from([0, 60, DAY]),
    interval=st.sampled_from([1, 60]),
    shared=st.booleans(),
    at_zero=st.booleans(),
    maximum=st.sampled_from([3.0, 40_000.0]),
    offset=st.integers(0, DAY - 1),
)
def test_aws_matches_the_reference_under_other_alarm_and_quota_settings(
    reads: list[float],
    writes: list[float],
    out_minutes: int,
    in_minutes: int,
    gap: float,
    free: int,
    free_window: int,
    interval: int,
    shared: bool,
    at_zero: bool,
    maximum: float,
    offset: int,
) -> None:
    writes = (writes * (len(reads) // len(writes) + 1))[: len(reads)]
    rp, wp = ScalingPolicy(70, 1, maximum), ScalingPolicy(50, 2, 40_000)
    behaviour = AwsBehaviour(
        scale_out_minutes=out_minutes,
        scale_in_minutes=in_minutes,
        scale_in_gap=gap,
        free_decreases_per_day=free,
        free_decrease_window_minutes=free_window,
        decrease_interval_minutes=interval,
        shared_decrease_quota=shared,
        scale_in_at_zero=at_zero,
    )
    fast = simulate_aws(reads, writes, rp, wp, behaviour, start_minute=START - offset, trace=True)
    slow = reference.aws_naive(reads, writes, rp, wp, behaviour, start_minute=START - offset)
    assert fast.decrease_events == slow.decrease_events
    for a, b in ((fast.read, slow.read), (fast.write, slow.write)):
        assert a.capacity == b.capacity
        assert (a.increases, a.decreases) == (b.increases, b.decreases)
        assert a.throttled_minutes == b.throttled_minutes


@settings(max_examples=150, deadline=None)
@given(
    reads=series_values,
    writes=series_values,
    factor=st.sampled_from([0.9, 1.0, 1.2]),
    maximum=st.sampled_from([2.0, 100.0]),
    free=st.sampled_from([0, 1, 4]),
    offset=st.integers(0, DAY - 1),
)
def test_evaluator_matches_the_reference_under_other_factors_and_quotas(
    reads: list[float], writes: list[float], factor: float, maximum: float, free: int, offset: int
) -> None:
    params = EvaluatorParams(
        read=ScalingPolicy(70, 1, maximum),
        write=ScalingPolicy(90, 0.5, 80_000),
        scale_in_factor=factor,
        free_decreases=free,
    )
    fast = simulate_evaluator(reads, writes, params, start_minute=START - offset, trace=True)
    slow = reference.evaluator_naive(reads, writes, params, start_minute=START - offset)
    assert fast.read.capacity == slow.read.capacity
    assert fast.write.capacity == slow.write.capacity
    assert fast.decrease_events == slow.decrease_events


class CountingList(list):  # type: ignore[type-arg]
    """A list that counts the values the simulators read from it by index or slice (all their scans go that way)."""

    reads = 0

    def __getitem__(self, key: int | slice) -> object:  # type: ignore[override]
        got = super().__getitem__(key)
        CountingList.reads += len(got) if isinstance(key, slice) else 1
        return got


def _week(kind: str, n: int, seed: int = 3) -> list[float]:
    rng = random.Random(seed)
    if kind == "rising":  # every minute pops everything: the worst case for the back of the deque
        return [float(i) for i in range(n)]
    if kind == "falling":  # the deque holds a full window and expires one per minute
        return [float(n - i) for i in range(n)]
    return [rng.choice([0.0, 60.0, 600.0, 6000.0, 60000.0]) * rng.random() for _ in range(n)]


@pytest.mark.parametrize("kind", ["rising", "falling", "random"])
def test_both_simulators_read_each_minute_a_bounded_number_of_times(kind: str) -> None:
    week = 7 * DAY
    for sim in ("evaluator", "aws"):
        totals = {}
        for n in (week, 2 * week):
            values = _week(kind, n)
            reads, writes = CountingList(values), CountingList(values[::-1])
            CountingList.reads = 0
            if sim == "evaluator":
                simulate_evaluator(reads, writes, start_minute=START)
            else:
                simulate_aws(reads, writes, start_minute=START)
            # Two dimensions. The per-window rescans of the reference would read 2 + 15 values of each dimension
            # per minute (34 in all); the searches read each value a few times at most, and a minute's rules read
            # their 15-minute window only when a scale-in is possible.
            totals[n] = CountingList.reads
            assert totals[n] <= 20 * n, (sim, totals)
        assert 1.6 < totals[2 * week] / totals[week] < 2.4, (sim, totals)

"""The load-test profile states the numbers ``analyze-trail`` states for the same input: a hot key's count summed
over the analysis windows (as the ``hot_key`` finding counts it, with the error bound), and the access patterns'
key templates (one template function for both)."""

from __future__ import annotations

from auditor.detectors.trail.hot_key import HotKeyConfig, key_rates
from auditor.engine import access_patterns
from auditor.kernel.aggregates.window import AggregateSet
from auditor.whatif.loadtest import load_profile
from tests.factories import call


def _three_windows() -> AggregateSet:
    """A hot key written 50 times in each of three 15-minute windows, beside 10 new keys a window: each window's
    sketch (capacity 8, exact up to 16 keys) is exact, the span that merges them is pruned."""
    aggs = AggregateSet(900, sketch_capacity=8)
    for w in range(3):
        for i in range(50):
            aggs.add(call("PutItem", table="Events", key={"deviceId": "DEV#HOT"}, at=w * 900 + i * 10))
        for i in range(10):
            aggs.add(call("PutItem", table="Events", key={"deviceId": f"DEV#{w}-{i}"}, at=w * 900 + 600 + i))
    return aggs


def test_a_hot_keys_profile_count_is_the_findings_count_over_the_windows() -> None:
    aggs = _three_windows()
    [span] = aggs.spans()
    assert span.hot.counts['deviceId\x1f"DEV#HOT'] < 150  # the merged sketch lost some: the profile must not use it
    per_window = [
        k.requests
        for tw in aggs.windows.values()
        for k in key_rates(tw, HotKeyConfig(min_key_requests=10, skew_factor=1.0))
        if k.encoded == 'deviceId\x1f"DEV#HOT'
    ]
    [table] = load_profile([span], 1.0, aggs.windows.values())["tables"]
    hot = table["hot_keys"][0]
    assert hot["key"] == {"deviceId": "DEV#HOT"}
    assert (hot["writes"], hot["estimate_error"]) == (sum(per_window), 0) == (150, 0)


def test_the_profile_names_key_templates_as_the_access_patterns_do() -> None:
    aggs = AggregateSet(900)
    # one id generator: some values all digits, some with letters (the tester's "DEV#00042" and "DEV#`x`")
    for i in range(20):
        aggs.add(call("PutItem", table="Events", key={"deviceId": f"DEV#{i:05d}", "ts": str(i)}, at=i))
        aggs.add(call("PutItem", table="Events", key={"deviceId": "DEV#abc-def", "ts": str(i)}, at=i))
    spans = aggs.spans()
    [pattern] = access_patterns(spans)
    [table] = load_profile(spans, 1.0)["tables"]
    [operation] = table["operations"]
    assert [t["template"] for t in operation["key_templates"]] == [pattern.key_template]
    assert operation["key_templates"][0]["weight"] == 1.0

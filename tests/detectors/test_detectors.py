from __future__ import annotations

import random

import pytest

from auditor.config import AnalysisConfig
from auditor.detectors.base import DetectorInput
from auditor.detectors.registry import all_detectors, get
from auditor.detectors.trail import hot_key, item_size_exceeded, low_cardinality_key, scan, throttling
from auditor.models.finding import FindingKind, Severity
from tests.factories import call, span

CLEANER = "arn:aws:iam::111122223333:role/session-cleaner"
ALICE = "arn:aws:iam::111122223333:user/alice"


# ----------------------------------------------------------------------------- registry


def test_registry_declares_every_detector_with_metadata() -> None:
    ids = [d.metadata.id for d in all_detectors(DetectorInput.TRAIL_WINDOW)]
    assert ids == sorted(ids) == ["hot_key", "item_size_exceeded", "low_cardinality_key", "scan", "throttling"]
    for det in all_detectors():
        meta = det.metadata
        assert meta.risk and meta.remediation and str(meta.docs_url).startswith("https://docs.aws.amazon.com/")
        assert meta.kind in FindingKind
        assert det.config_model().enabled is True


def test_disabled_detector_returns_nothing() -> None:
    agg = span([call("Scan", at=i * 5, principal=CLEANER) for i in range(50)])
    det = get("scan")
    assert det.run(agg) != []
    assert det.run(agg, scan.ScanConfig(enabled=False)) == []


def test_detector_failure_is_isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    agg = span([call("Scan", at=i * 5, principal=CLEANER) for i in range(50)])

    def boom(_agg: object, _cfg: object) -> list:
        raise RuntimeError("bug")

    det = get("hot_key")
    from auditor.detectors import registry  # the Detector is frozen: replace the registry entry

    monkeypatch.setitem(registry._REGISTRY, "hot_key", registry.Detector(det.metadata, det.config_model, boom))
    from auditor.engine import evaluate

    findings, errors = evaluate([agg], AnalysisConfig())
    assert [f.kind for f in findings] == [FindingKind.SCAN]
    assert errors and "hot_key" in errors[0] and "RuntimeError" in errors[0]


# ----------------------------------------------------------------------------- scan


def test_scan_every_five_seconds_is_high() -> None:
    agg = span(
        [call("Scan", at=i * 5, principal=CLEANER, segment=i % 4, total_segments=4) for i in range(720)],
        window_seconds=3600,
    )
    [f] = scan.detect(agg, scan.ScanConfig())
    assert f.severity is Severity.HIGH
    assert f.evidence["principal"] == CLEANER
    # each page starts one segment of a 4-segment parallel scan (no exclusiveStartKey): 180 parallel scans
    assert f.evidence["count"] == 180
    assert f.evidence["operation"] == "Scan"
    assert f.evidence["source"] == "cloudtrail"
    assert f.evidence["total_segments"] == 4 and f.evidence["segments_seen"] == [0, 1, 2, 3]
    assert "Query" in f.recommendation
    assert not f.missing_evidence()


def test_person_scanning_twice_is_info() -> None:
    agg = span([call("Scan", at=t, principal=ALICE) for t in (100, 700)])
    [f] = scan.detect(agg, scan.ScanConfig())
    assert f.severity is Severity.INFO
    assert "allow_principals" in f.recommendation


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (2, Severity.INFO),
        (3, Severity.LOW),
        (4, Severity.LOW),
        (5, Severity.MEDIUM),
        (9, Severity.MEDIUM),
        (10, Severity.HIGH),
    ],
)
def test_scan_severity_thresholds(count: int, expected: Severity) -> None:
    # One 15-minute window: 4/h per scan, so 10 scans = 40/h... use a 60 s window budget via config instead.
    # scans 30 s apart: each one its own logical scan
    agg = span([call("Scan", at=i * 30, principal=CLEANER) for i in range(count)], window_seconds=600)
    cfg = scan.ScanConfig(high_per_hour=60, medium_per_hour=4)
    [f] = scan.detect(agg, cfg)
    assert f.severity is expected


def test_scan_allowlist_and_no_scans() -> None:
    agg = span([call("Scan", at=i * 5, principal=CLEANER) for i in range(100)])
    assert scan.detect(agg, scan.ScanConfig(allow_principals=["arn:aws:iam::111122223333:role/session-*"])) == []
    quiet = span([call("GetItem", key={"pk": "A"}, at=1)])
    assert scan.detect(quiet, scan.ScanConfig()) == []


def test_full_scan_partiql_is_reported_as_execute_statement() -> None:
    agg = span([call("ExecuteStatement:SELECT", full_scan=True, at=i * 10, principal=CLEANER) for i in range(20)])
    [f] = scan.detect(agg, scan.ScanConfig())
    assert f.evidence["operation"] == "ExecuteStatement"
    assert "PartiQL" in f.recommendation


def test_scan_id_is_stable_and_distinguishes_principals() -> None:
    a = span([call("Scan", at=1, principal=CLEANER), call("Scan", at=2, principal=ALICE)])
    b = span([call("Scan", at=500, principal=CLEANER)] * 3)
    ids_a = {f.evidence["principal"]: f.id for f in scan.detect(a, scan.ScanConfig())}
    ids_b = {f.evidence["principal"]: f.id for f in scan.detect(b, scan.ScanConfig())}
    assert ids_a[CLEANER] == ids_b[CLEANER]
    assert ids_a[CLEANER] != ids_a[ALICE]


# ----------------------------------------------------------------------------- hot_key


def _keyed(n: int, distinct: int, hot_share: float = 0.0, seed: int = 1, op: str = "GetItem") -> list:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if rng.random() < hot_share:
            k = "CUSTOMER#42"
        else:
            k = f"CUSTOMER#{rng.randrange(1000, 1000 + distinct)}"
        out.append(call(op, key={"pk": k, "sk": f"ORDER#{i}"}, at=(i * 900) / n))
    return out


def test_uniform_traffic_over_many_keys_never_yields_a_hot_key() -> None:
    for distinct in (50, 500, 5000):
        agg = span(_keyed(20_000, distinct))
        assert hot_key.detect(agg, hot_key.HotKeyConfig()) == []


def test_uniform_traffic_over_few_keys_is_not_a_hot_key() -> None:
    agg = span(_keyed(5000, 4))
    assert hot_key.detect(agg, hot_key.HotKeyConfig()) == []


def test_skewed_key_is_found_with_evidence() -> None:
    agg = span(_keyed(20_000, 2000, hot_share=0.35))
    [f] = hot_key.detect(agg, hot_key.HotKeyConfig())
    ev = f.evidence
    assert ev["key"] == {"pk": "CUSTOMER#42"}
    assert 0.33 < ev["share"] < 0.37
    assert ev["requests"] == round(ev["share"] * 20_000) or abs(ev["requests"] - ev["share"] * 20000) < 2
    assert ev["window_seconds"] == 900
    assert ev["source"] == "cloudtrail"
    # ~7,000 reads in 900 s = ~7.8 reads/s -> 3000 / 7.8 = ~385x headroom: skew that is harmless today.
    assert 300 < ev["headroom_factor"] < 450
    assert f.severity is Severity.LOW
    assert not f.missing_evidence()


@pytest.mark.parametrize(
    ("writes_per_second", "expected"),
    [(1200, Severity.CRITICAL), (600, Severity.HIGH), (150, Severity.MEDIUM), (50, Severity.LOW)],
)
def test_hot_key_severity_follows_headroom(writes_per_second: int, expected: Severity) -> None:
    window = 60
    n = writes_per_second * window
    calls = [call("PutItem", key={"pk": "HOT"}, at=i * window / n) for i in range(n)]
    calls += [call("PutItem", key={"pk": f"K{i % 100}"}, at=i * window / n) for i in range(n)]
    agg = span(calls, window_seconds=60)
    [f] = hot_key.detect(agg, hot_key.HotKeyConfig())
    assert f.severity is expected
    assert f.evidence["headroom_factor"] == pytest.approx(1000 / writes_per_second, rel=0.01)
    assert f.evidence["writes"] == n and f.evidence["reads"] == 0


def test_hot_key_threshold_share() -> None:
    below = span(_keyed(20_000, 2000, hot_share=0.05))
    assert hot_key.detect(below, hot_key.HotKeyConfig()) == []
    assert hot_key.detect(below, hot_key.HotKeyConfig(min_share=0.03))


def test_hot_key_needs_enough_requests() -> None:
    agg = span(_keyed(150, 100, hot_share=0.5))
    assert hot_key.detect(agg, hot_key.HotKeyConfig()) == []
    assert hot_key.detect(agg, hot_key.HotKeyConfig(min_key_requests=100))


# ----------------------------------------------------------------------------- low_cardinality_key


def _status_traffic(n: int, values: list[str]) -> list:
    return [
        call("Query" if i % 3 else "PutItem", key={"status": values[i % len(values)], "id": f"JOB#{i}"}, at=i * 900 / n)
        for i in range(n)
    ]


def test_low_cardinality_key_found() -> None:
    agg = span(_status_traffic(4000, ["PENDING", "RUNNING", "DONE", "FAILED"]))
    [f] = low_cardinality_key.detect(agg, low_cardinality_key.LowCardinalityConfig())
    assert f.kind is FindingKind.LOW_CARDINALITY_KEY
    assert f.evidence["distinct_partition_keys"] == 4
    assert f.evidence["key_attribute"] == "status"
    assert {v["value"] for v in f.evidence["values"]} == {"PENDING", "RUNNING", "DONE", "FAILED"}
    # ~1 request/s per value: far below a partition's limits, so at most low, and it says so
    assert f.severity is Severity.LOW
    assert f.evidence["busiest_value_headroom_factor"] > 100
    assert "at most low" in f.summary
    assert not f.missing_evidence()
    [medium] = low_cardinality_key.detect(agg, low_cardinality_key.LowCardinalityConfig(huge_headroom=1e9))
    assert medium.severity is Severity.MEDIUM


def test_low_cardinality_thresholds() -> None:
    few_requests = span(_status_traffic(999, ["A", "B"]))
    assert low_cardinality_key.detect(few_requests, low_cardinality_key.LowCardinalityConfig()) == []
    many_values = span(_status_traffic(5000, [f"V{i}" for i in range(11)]))
    assert low_cardinality_key.detect(many_values, low_cardinality_key.LowCardinalityConfig()) == []
    ten = span(_status_traffic(5000, [f"V{i}" for i in range(10)]))
    assert low_cardinality_key.detect(ten, low_cardinality_key.LowCardinalityConfig())


def test_low_cardinality_high_when_a_value_nears_partition_limit() -> None:
    n = 60 * 1200  # 600 writes/s per value in one minute: headroom 1000/600 = 1.7
    agg = span(
        [call("PutItem", key={"status": "PENDING" if i % 2 else "DONE"}, at=i * 60 / n) for i in range(n)],
        window_seconds=60,
    )
    [f] = low_cardinality_key.detect(agg, low_cardinality_key.LowCardinalityConfig())
    assert f.severity is Severity.HIGH


# ----------------------------------------------------------------------------- throttling

PTE = "ProvisionedThroughputExceededException"


def test_throttling_by_cause_with_counts() -> None:
    calls = [
        call(
            "PutItem",
            key={"pk": "CUSTOMER#42"},
            at=i,
            error=PTE,
            message="The level of configured provisioned throughput for the table was exceeded.",
        )
        for i in range(12)
    ]
    calls += [
        call(
            "GetItem",
            key={"pk": "CUSTOMER#42"},
            at=i,
            error="ThrottlingException",
            message="Throughput exceeds the current capacity. TableReadKeyRangeThroughputExceeded",
        )
        for i in range(3)
    ]
    calls += [call("GetItem", key={"pk": "A"}, at=5)]
    agg = span(calls)
    found = {f.evidence["cause"]: f for f in throttling.detect(agg, throttling.ThrottlingConfig())}
    assert set(found) == {"provisioned", "key_range"}
    prov = found["provisioned"]
    assert (prov.evidence["write_throttle_events"], prov.evidence["read_throttle_events"]) == (12, 0)
    assert prov.severity is Severity.MEDIUM
    kr = found["key_range"]
    assert (kr.evidence["read_throttle_events"], kr.severity) == (3, Severity.LOW)
    assert "hot" in kr.recommendation
    assert kr.evidence["top_keys"][0] == {"key": {"pk": "CUSTOMER#42"}, "throttled_calls": 15}
    assert not prov.missing_evidence()


def test_throttling_gsi_backpressure_names_the_index() -> None:
    msg = "IndexWriteProvisionedThroughputExceeded arn:aws:dynamodb:us-east-1:111122223333:table/Orders/index/ByStatus"
    agg = span([call("PutItem", key={"pk": "X"}, at=i, error=PTE, message=msg) for i in range(150)])
    [f] = throttling.detect(agg, throttling.ThrottlingConfig())
    assert (f.evidence["cause"], f.index, f.severity) == ("gsi_backpressure", "ByStatus", Severity.HIGH)


def test_throttling_unknown_cause_and_min_events() -> None:
    agg = span([call("PutItem", key={"pk": "X"}, at=1, error="ThrottlingException")])
    [f] = throttling.detect(agg, throttling.ThrottlingConfig())
    assert f.evidence["cause"] == "unknown"
    assert throttling.detect(agg, throttling.ThrottlingConfig(min_events=2)) == []


def test_other_errors_are_not_throttling() -> None:
    agg = span(
        [
            call(
                "UpdateItem",
                key={"pk": "X"},
                at=1,
                error="ConditionalCheckFailedException",
                message="The conditional request failed",
            )
        ]
    )
    assert throttling.detect(agg, throttling.ThrottlingConfig()) == []
    assert item_size_exceeded.detect(agg, item_size_exceeded.ItemSizeExceededConfig()) == []


# ----------------------------------------------------------------------------- item_size_exceeded


@pytest.mark.parametrize(
    "message",
    ["Item size has exceeded the maximum allowed size", "Item size to update has exceeded the maximum allowed size"],
)
def test_item_size_exceeded_per_key(message: str) -> None:
    calls = [
        call("UpdateItem", key={"pk": "DOC#7"}, at=i, error="ValidationException", message=message) for i in range(4)
    ]
    calls.append(call("PutItem", key={"pk": "DOC#9"}, at=9, error="ValidationException", message=message))
    agg = span(calls)
    found = {
        f.evidence["key"]["pk"]: f for f in item_size_exceeded.detect(agg, item_size_exceeded.ItemSizeExceededConfig())
    }
    assert found["DOC#7"].evidence["count"] == 4
    assert found["DOC#9"].evidence["count"] == 1
    assert found["DOC#7"].severity is Severity.HIGH
    assert "S3" in found["DOC#7"].recommendation
    assert not found["DOC#7"].missing_evidence()


def test_item_size_exceeded_rest_and_critical() -> None:
    msg = "Item size has exceeded the maximum allowed size"
    calls = [call("PutItem", key={"pk": f"DOC#{i}"}, at=i, error="ValidationException", message=msg) for i in range(3)]
    calls += [call("PutItem", key={"pk": "BIG"}, at=1, error="ValidationException", message=msg) for _ in range(50)]
    calls.append(call("PutItem", key=None, at=1, error="ValidationException", message=msg))
    agg = span(calls)
    findings = item_size_exceeded.detect(agg, item_size_exceeded.ItemSizeExceededConfig(max_keys=2))
    by_key = {None if f.evidence["key"] is None else f.evidence["key"]["pk"]: f for f in findings}
    assert by_key["BIG"].severity is Severity.CRITICAL
    assert set(by_key) == {"BIG", "DOC#0", None}
    assert by_key[None].evidence["count"] == 3  # 1 unidentified + 2 beyond max_keys
    assert sum(f.evidence["count"] for f in findings) == 54


def test_other_validation_errors_are_ignored() -> None:
    agg = span(
        [
            call(
                "PutItem",
                key={"pk": "X"},
                at=1,
                error="ValidationException",
                message="One or more parameter values were invalid",
            )
        ]
    )
    assert item_size_exceeded.detect(agg, item_size_exceeded.ItemSizeExceededConfig()) == []


def test_hot_key_burst_uses_the_peak_minute() -> None:
    """600 writes/s for one minute inside a quiet 15-minute window is high, not averaged away."""
    calls = [call("PutItem", key={"pk": "HOT"}, at=300 + i / 600) for i in range(36_000)]
    calls += [call("GetItem", key={"pk": f"K{i % 200}"}, at=i * 0.2) for i in range(4500)]
    agg = span(calls)
    [f] = hot_key.detect(agg, hot_key.HotKeyConfig())
    ev = f.evidence
    assert ev["writes_per_second"] == pytest.approx(40, rel=0.01)  # window average
    assert ev["peak_writes_per_second"] == pytest.approx(600, rel=0.01)
    assert ev["peak_minute"] == "2026-12-01T10:05:00Z"
    assert ev["headroom_factor"] == pytest.approx(1000 / 600, rel=0.01)
    assert f.severity is Severity.HIGH


GENERIC_PTE = "The level of configured provisioned throughput for the table was exceeded."


def test_classic_pte_concentrated_on_one_key_is_a_hot_partition() -> None:
    calls = [call("GetItem", key={"pk": f"K{i % 500}"}, at=i * 0.1) for i in range(5000)]
    calls += [call("PutItem", key={"pk": "HOT"}, at=i * 0.1) for i in range(500)]
    calls += [call("PutItem", key={"pk": "HOT"}, at=i, error=PTE, message=GENERIC_PTE) for i in range(40)]
    calls += [call("PutItem", key={"pk": "K1"}, at=i, error=PTE, message=GENERIC_PTE) for i in range(2)]
    [f] = throttling.detect(span(calls), throttling.ThrottlingConfig())
    assert f.evidence["cause"] == "key_range"
    assert f.evidence["cause_source"] == "concentrated_on_keys"
    assert f.evidence["write_throttle_events"] == 42


def test_classic_pte_spread_over_keys_is_provisioned_capacity() -> None:
    calls = [call("GetItem", key={"pk": f"K{i % 500}"}, at=i * 0.1) for i in range(5000)]
    calls += [call("PutItem", key={"pk": f"K{i}"}, at=i, error=PTE, message=GENERIC_PTE) for i in range(40)]
    [f] = throttling.detect(span(calls), throttling.ThrottlingConfig())
    assert (f.evidence["cause"], f.evidence["cause_source"]) == ("provisioned", "spread_over_keys")

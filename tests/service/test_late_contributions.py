"""A contribution stored after its window was evaluated is evaluated again, and the findings' totals come out as
``analyze-trail`` states them on the same files: never lost, never counted twice (moto server).

The fault: one GetObject fails once, SQS shows the message again after the queue's visibility timeout, and by then
the evaluator has evaluated the window and moved its cursor past it (``auditor.service.late``).
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError

from auditor.config import AnalysisConfig
from auditor.engine import analyze_trail
from auditor.models.finding import FindingKind, Totals
from auditor.service import evaluate as evaluate_module
from auditor.service.evaluate import EvaluationParams, EvaluationResult, run_evaluation
from auditor.service.ingest import process_events, process_trail_object
from auditor.service.late import Reevaluation
from auditor.state.findings_store import FindingsStore
from auditor.state.window_store import SightingStore, WindowStore
from tests.factories import planted_workload, write_log_file, write_trail
from tests.handlers.test_events_ingest import eventbridge
from tests.moto_server import client, create_state_table

BUCKET = "aws-cloudtrail-logs-111122223333-late"
TABLE = "auditor-state"
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # the window 10:00-10:15
#: The evaluator's schedule: the window's end plus EvaluationDelaySeconds (1,200 s), then a quarter hour later.
FIRST_RUN = T0 + timedelta(minutes=15, seconds=1200)
NEXT_RUN = FIRST_RUN + timedelta(minutes=15)
#: The retry: the queue's visibility timeout (1,800 s) after the failed receive, between the two runs.
RETRY = T0 + timedelta(minutes=6 + 30)
#: The kinds compared with analyze-trail: the hot key's requests, the throttled calls and the scans.
KINDS = (FindingKind.HOT_KEY, FindingKind.THROTTLING, FindingKind.SCAN)


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three CloudTrail log files of the 10:00 window (the trail's small fourth file is left out)."""
    out = tmp_path_factory.mktemp("trail")
    paths = write_trail(planted_workload(T0, hours=0.25, seed=3), out, duplicates=0)
    logs = [p for p in paths if "CloudTrail-Digest" not in p.parts]
    return logs[:3]


@pytest.fixture
def env(aws_reset: str) -> tuple[Any, Any, str]:
    s3, ddb = client("s3", aws_reset), client("dynamodb", aws_reset)
    create_state_table(ddb, TABLE)
    s3.create_bucket(Bucket=BUCKET)
    return s3, ddb, aws_reset


def _key(path: Path) -> str:
    return "AWSLogs/" + path.as_posix().split("/AWSLogs/", 1)[1]


def _failing(s3: Any, key: str) -> list[str]:
    """Every GetObject of ``key`` answers 500 InternalError until the returned list is cleared (the fault outlasts
    the client's retries); each faulty answer's URL is appended to it."""
    faults = ["on"]

    def answer(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        if not faults or request.method != "GET" or not request.url.split("?")[0].endswith(key):
            return None
        faults.append(request.url)
        body = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>x</Message></Error>'
        return AWSResponse(request.url, 500, {}, _Raw(body))

    s3.meta.events.register("before-send.s3.GetObject", answer)
    return faults


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def _evaluator(ddb: Any, sns: Any) -> Callable[[datetime], EvaluationResult]:
    store, findings = WindowStore(ddb, TABLE), FindingsStore(ddb, TABLE, sleep=lambda _s: None)
    params = EvaluationParams(
        analysis=AnalysisConfig(),
        topic_arn=sns.create_topic(Name="findings")["TopicArn"],
        max_windows_per_run=200,
        initial_lookback_seconds=3600,
    )
    late = Reevaluation(store, SightingStore(ddb, TABLE))
    return lambda now: run_evaluation(store, findings, sns, params, now, late=late)


def _stored_totals(ddb: Any) -> dict[str, tuple[FindingKind, Totals]]:
    """Each stored finding of the compared kinds with its totals over every week (as the replay sums them)."""
    out: dict[str, tuple[FindingKind, Totals]] = {}
    for state in FindingsStore(ddb, TABLE).week_findings(T0):
        if state.finding.kind not in KINDS:
            continue
        total: Totals | None = None
        for week in sorted(state.weekly_totals):
            t = state.weekly_totals[week]
            total = t if total is None else total.merged(t)
        assert total is not None
        out[state.id] = (state.finding.kind, total)
    return out


def _expected(paths: list[Path]) -> dict[str, tuple[FindingKind, Totals]]:
    found = analyze_trail([str(p) for p in paths], AnalysisConfig(), processes=1).findings
    return {f.id: (f.kind, f.totals) for f in found if f.kind in KINDS and f.totals is not None}


def _assert_as_analyze_trail(ddb: Any, paths: list[Path]) -> None:
    stored, expected = _stored_totals(ddb), _expected(paths)
    assert set(stored) == set(expected)
    assert {kind for kind, _ in expected.values()} == set(KINDS)
    for fid, (kind, want) in expected.items():
        got = stored[fid][1]
        if kind is FindingKind.HOT_KEY:  # a heavy-hitter sketch estimate, merged in another order: within 0.1 %
            assert abs(got.count - want.count) <= max(2, want.count // 1000), fid
        else:
            assert got.count == want.count, (kind, fid)
        assert (got.windows, got.peak_severity) == (want.windows, want.peak_severity), (kind, fid)


def _severities(ddb: Any) -> dict[str, int]:
    """Each stored finding's published severity (its rank)."""
    states = FindingsStore(ddb, TABLE).week_findings(T0)
    return {s.id: s.published_severity.rank for s in states if s.published_severity is not None}


def _late_items(ddb: Any) -> list[dict[str, Any]]:
    return [i for i in ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"] if i["pk"]["S"] == "LATE"]


def test_a_trail_object_retried_after_its_window_was_evaluated_is_counted_as_analyze_trail(
    env: tuple[Any, Any, str], trail: list[Path]
) -> None:
    s3, ddb, endpoint = env
    ingest_s3 = client("s3", endpoint, Config(retries={"mode": "standard", "max_attempts": 1}))
    store = WindowStore(ddb, TABLE)
    keys = [_key(p) for p in trail]
    for path, key in zip(trail, keys, strict=True):
        s3.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
    faults = _failing(ingest_s3, keys[1])
    # the three notifications as they arrive; the second object's GetObject fails (the message fails, once)
    process_trail_object(ingest_s3, store, BUCKET, keys[0], AnalysisConfig(), T0 + timedelta(minutes=6))
    with pytest.raises(ClientError, match="InternalError"):
        process_trail_object(ingest_s3, store, BUCKET, keys[1], AnalysisConfig(), T0 + timedelta(minutes=11))
    assert len(faults) > 1
    faults.clear()  # the fault is over
    process_trail_object(ingest_s3, store, BUCKET, keys[2], AnalysisConfig(), T0 + timedelta(minutes=16))

    evaluate = _evaluator(ddb, client("sns", endpoint))
    first = evaluate(FIRST_RUN)
    assert first.cursor_advanced and int(T0.timestamp()) in first.window_starts
    before = _stored_totals(ddb)
    expected = _expected(trail)
    assert all(before[fid][1].count < want.count for fid, (_, want) in expected.items())  # one file short

    retried = process_trail_object(ingest_s3, store, BUCKET, keys[1], AnalysisConfig(), RETRY)
    assert retried.status == "ingested" and retried.late == retried.windows > 0
    assert len(_late_items(ddb)) == retried.late

    announced = _severities(ddb)
    second = evaluate(NEXT_RUN)
    assert second.late_windows == retried.late and second.late_corrected >= len(expected)
    # announced again only when the late file makes it worse (or shows a finding the first run did not see)
    now = _severities(ddb)
    assert second.new == len(set(now) - set(announced))
    assert second.worsened == sum(1 for fid, rank in announced.items() if now[fid] > rank)
    _assert_as_analyze_trail(ddb, trail)
    assert _late_items(ddb) == []

    again = evaluate(NEXT_RUN + timedelta(minutes=15))  # nothing late left: nothing changes
    assert (again.late_windows, again.late_corrected) == (0, 0)
    _assert_as_analyze_trail(ddb, trail)


def test_a_crash_between_the_correction_and_clearing_the_flag_counts_once(
    env: tuple[Any, Any, str], trail: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, ddb, endpoint = env
    store = WindowStore(ddb, TABLE)
    keys = [_key(p) for p in trail]
    for path, key in zip(trail, keys, strict=True):
        s3.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
    for key in (keys[0], keys[2]):
        process_trail_object(s3, store, BUCKET, key, AnalysisConfig(), T0 + timedelta(minutes=16))
    evaluate = _evaluator(ddb, client("sns", endpoint))
    evaluate(FIRST_RUN)
    assert process_trail_object(s3, store, BUCKET, keys[1], AnalysisConfig(), RETRY).late > 0

    def crash(self: WindowStore, late: Any) -> bool:
        raise RuntimeError("the evaluator stops here")

    with monkeypatch.context() as patch:
        patch.setattr(WindowStore, "clear_late", crash)
        with pytest.raises(RuntimeError, match="stops here"):
            evaluate(NEXT_RUN)
    _assert_as_analyze_trail(ddb, trail)  # corrected before the crash
    assert _late_items(ddb) != []

    retried = evaluate(NEXT_RUN + timedelta(minutes=15))  # the same late windows again: nothing counted twice
    assert retried.late_windows > 0 and retried.late_corrected == 0
    _assert_as_analyze_trail(ddb, trail)
    assert _late_items(ddb) == []


@pytest.fixture(scope="module")
def sampled(trail: list[Path], tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Every 20th record of each of the three files (the events pipeline commits an event at a time: a smaller
    input keeps the test quick, and still has a hot key, throttling and scans)."""
    out = tmp_path_factory.mktemp("sampled")
    files = []
    for n, path in enumerate(trail):
        records = orjson.loads(gzip.decompress(path.read_bytes()))["Records"][::20]
        write_log_file(records, out / f"{n}.json.gz")
        files.append(out / f"{n}.json.gz")
    return files


def test_events_redelivered_after_their_window_was_evaluated_are_counted_as_analyze_trail(
    env: tuple[Any, Any, str], sampled: list[Path]
) -> None:
    _, ddb, endpoint = env
    store = WindowStore(ddb, TABLE)
    records = [orjson.loads(gzip.decompress(p.read_bytes()))["Records"] for p in sampled]
    batches = [[(f"msg-{n}-{i}", eventbridge(r, i)) for i, r in enumerate(recs)] for n, recs in enumerate(records)]
    # the events of the first and third file arrive; the second file's batch fails and comes back late
    for batch in (batches[0], batches[2]):
        assert process_events(store, batch, AnalysisConfig(), T0 + timedelta(minutes=16)).failed_message_ids == []
    evaluate = _evaluator(ddb, client("sns", endpoint))
    evaluate(FIRST_RUN)

    late = process_events(store, batches[1], AnalysisConfig(), RETRY)
    assert late.failed_message_ids == [] and late.late > 0
    again = process_events(store, batches[1], AnalysisConfig(), RETRY)  # redelivered once more: counts once
    assert again.stats.duplicates_dropped == len(batches[1]) and again.late == 0

    second = evaluate(NEXT_RUN)
    assert second.late_windows > 0
    _assert_as_analyze_trail(ddb, sampled)
    assert _late_items(ddb) == []


def test_a_crash_after_the_sightings_are_replaced_but_before_the_findings_counts_once(
    env: tuple[Any, Any, str], trail: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, ddb, endpoint = env
    store = WindowStore(ddb, TABLE)
    keys = [_key(p) for p in trail]
    for path, key in zip(trail, keys, strict=True):
        s3.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
    for key in (keys[0], keys[2]):
        process_trail_object(s3, store, BUCKET, key, AnalysisConfig(), T0 + timedelta(minutes=16))
    evaluate = _evaluator(ddb, client("sns", endpoint))
    evaluate(FIRST_RUN)
    assert process_trail_object(s3, store, BUCKET, keys[1], AnalysisConfig(), RETRY).late > 0

    def crash(*_: Any, **__: Any) -> None:
        raise RuntimeError("the evaluator stops here")

    with monkeypatch.context() as patch:
        patch.setattr(evaluate_module, "apply_corrections", crash)
        with pytest.raises(RuntimeError, match="stops here"):
            evaluate(NEXT_RUN)
    assert _late_items(ddb) != []  # the windows' sightings were replaced, the findings not yet
    evaluate(NEXT_RUN + timedelta(minutes=15))
    _assert_as_analyze_trail(ddb, trail)
    assert _late_items(ddb) == []

"""An event delivered in two CloudTrail objects counts once in the service, as in ``analyze-trail`` (moto server).

Trail ingest writes each object's event fingerprints to S3; the evaluator's check reads the objects that share
events again, together, before it merges a window (``auditor.service.dedupe``).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.config import Config

from auditor.config import AnalysisConfig
from auditor.engine import analyze_trail
from auditor.service.dedupe import Deduplication
from auditor.service.evaluate import EvaluationParams, run_evaluation
from auditor.service.ingest import process_trail_object, reread_objects
from auditor.sources.s3_objects import ObjectReadInterruptedError
from auditor.state import fingerprint_store
from auditor.state.findings_store import FindingsStore
from auditor.state.fingerprint_store import FingerprintStore, FingerprintStoreError
from auditor.state.window_store import WindowStore
from tests.factories import planted_workload, write_trail
from tests.moto_server import client, create_state_table

BUCKET = "aws-cloudtrail-logs-111122223333-dedupe"
REPORTS = "auditor-reports-dedupe"
TABLE = "auditor-state"
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Half an hour of traffic with planted problems, 25 records delivered again in a neighbouring file."""
    out = tmp_path_factory.mktemp("trail")
    write_trail(planted_workload(T0, hours=0.5, seed=5), out, seed=5, duplicates=25)
    return out


def _logs(trail: Path) -> list[Path]:
    return sorted(p for p in trail.rglob("*.json.gz") if "CloudTrail-Digest" not in p.parts)


def _shared(trail: Path) -> int:
    """Events (eventID, eventName, eventTime) found in more than one file, counted once each."""
    files: dict[tuple[str, str, str], set[Path]] = {}
    for path in _logs(trail):
        for r in orjson.loads(gzip.decompress(path.read_bytes()))["Records"]:
            files.setdefault((r["eventID"], r["eventName"], r["eventTime"]), set()).add(path)
    return sum(1 for paths in files.values() if len(paths) > 1)


def _ingest(env: tuple[Any, Any], trail: Path) -> tuple[WindowStore, FingerprintStore, list[int]]:
    s3, ddb = env
    store = WindowStore(ddb, TABLE)
    prints = FingerprintStore(s3, REPORTS)
    config = AnalysisConfig()
    starts: set[int] = set()
    for path in _logs(trail):
        key = path.relative_to(trail).as_posix()
        s3.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
        result = process_trail_object(s3, store, BUCKET, key, config, NOW, fingerprints=prints)
        assert result.status == "ingested"
    for parts in store.load_window_parts(range(int(T0.timestamp()) - 3600, int(NOW.timestamp()), 900)):
        starts.add(parts[0][1].window_start)
    return store, prints, sorted(starts)


@pytest.fixture
def env(aws_reset: str) -> tuple[Any, Any]:
    s3, ddb = client("s3", aws_reset), client("dynamodb", aws_reset)
    create_state_table(ddb, TABLE)
    s3.create_bucket(Bucket=BUCKET)
    s3.create_bucket(Bucket=REPORTS)
    return s3, ddb


def _counts(windows: list[Any]) -> dict[tuple[str, int], tuple[int, int, int, dict[str, int]]]:
    return {
        (w.table, w.window_start): (w.calls, w.key_requests, w.item_writes, dict(sorted(w.operations.items())))
        for w in windows
    }


def test_an_event_in_two_objects_counts_once_as_in_analyze_trail(env: tuple[Any, Any], trail: Path) -> None:
    s3, _ = env
    shared = _shared(trail)
    assert shared >= 10  # the trail really repeats events across files
    store, prints, starts = _ingest(env, trail)
    config = AnalysisConfig()

    analysis = analyze_trail([str(trail)], config, processes=1)
    assert analysis.stats.duplicates_dropped == shared
    expected = analysis.aggregates
    reference = _counts(sorted(expected.windows.values(), key=lambda w: (w.table, w.window_start)))

    merged_as_they_are = _counts(store.load_windows(starts))
    checked, result = Deduplication(prints.get, reread_objects(s3, config)).load(store, starts)

    assert _counts(checked) == reference
    assert merged_as_they_are != reference  # without the check, the repeated events count twice
    extra = sum(v[0] for v in merged_as_they_are.values()) - sum(v[0] for v in reference.values())
    assert extra == shared
    assert result.events_shared == shared
    assert result.objects_reread >= 2 and result.groups >= 1
    assert result.unchecked == []


def test_objects_without_fingerprints_are_merged_unchecked(env: tuple[Any, Any], trail: Path) -> None:
    s3, _ = env
    store, prints, starts = _ingest(env, trail)
    for key in s3.list_objects_v2(Bucket=REPORTS)["Contents"]:  # fingerprints expired, or written by no version
        s3.delete_object(Bucket=REPORTS, Key=key["Key"])
    checked, result = Deduplication(prints.get, reread_objects(s3, AnalysisConfig())).load(store, starts)
    assert _counts(checked) == _counts(store.load_windows(starts))
    assert result.unchecked and result.objects_reread == 0


def test_a_group_that_cannot_be_read_again_keeps_its_contributions(env: tuple[Any, Any], trail: Path) -> None:
    s3, _ = env
    store, prints, starts = _ingest(env, trail)
    for key in s3.list_objects_v2(Bucket=BUCKET)["Contents"]:  # the trail's objects are gone (bucket lifecycle)
        s3.delete_object(Bucket=BUCKET, Key=key["Key"])
    checked, result = Deduplication(prints.get, reread_objects(s3, AnalysisConfig())).load(store, starts)
    assert _counts(checked) == _counts(store.load_windows(starts))
    assert result.objects_reread == 0


class _Ledger:
    """The evaluator's data events per (table, window start), as the cost ledger gets them."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, int], int] = {}

    def put_window(
        self, day: date, account: str | None, region: str | None, table: str, window_start: int, data_events: int
    ) -> None:
        self.calls[(table, window_start)] = data_events


class _Raw:
    """The raw body of a canned HTTP response."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


def _failing_fingerprint_reads(s3: Any, status: int, code: str) -> list[str]:
    """Make every GetObject of a fingerprints object answer ``status`` (``code``) until the returned list is
    cleared; each faulty answer's key is appended to it."""
    faults = ["on"]

    def answer(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        if not faults or request.method != "GET" or f"/{fingerprint_store.PREFIX}" not in request.url:
            return None
        faults.append(request.url)
        body = f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>x</Message></Error>'
        return AWSResponse(request.url, status, {}, _Raw(body.encode()))

    s3.meta.events.register("before-send.s3.GetObject", answer)
    return faults


@pytest.mark.parametrize(("status", "code"), [(500, "InternalError"), (503, "SlowDown")])
def test_a_failed_fingerprints_read_fails_the_evaluation_and_a_retry_counts_as_analyze_trail(
    env: tuple[Any, Any], trail: Path, aws_reset: str, status: int, code: str
) -> None:
    s3, ddb = env
    store, _, starts = _ingest(env, trail)
    config = AnalysisConfig()
    findings = FindingsStore(ddb, TABLE, sleep=lambda _s: None)
    sns = client("sns", aws_reset)
    params = EvaluationParams(
        analysis=config, topic_arn=sns.create_topic(Name="f")["TopicArn"], max_windows_per_run=200
    )
    # the evaluator's own S3 client, without retries: the fault outlasts them
    evaluator_s3 = client("s3", aws_reset, Config(retries={"mode": "standard", "max_attempts": 1}))
    faults = _failing_fingerprint_reads(evaluator_s3, status, code)
    dedupe = Deduplication(FingerprintStore(evaluator_s3, REPORTS).get, reread_objects(s3, config))

    ledger = _Ledger()
    with pytest.raises(FingerprintStoreError, match=code):
        run_evaluation(store, findings, sns, params, NOW, ledger=ledger, dedupe=dedupe)
    assert len(faults) > 1  # the fault was met
    assert findings.get_cursor() is None  # the cursor did not move: the next run evaluates the same windows
    assert ledger.calls == {}  # nothing was counted from unchecked contributions

    faults.clear()  # the fault is over
    result = run_evaluation(store, findings, sns, params, NOW, ledger=ledger, dedupe=dedupe)
    assert result.cursor_advanced and set(starts) <= set(result.window_starts)
    assert result.events_shared == _shared(trail)
    analysis = analyze_trail([str(trail)], config, processes=1)
    expected = {(w.table, w.window_start): w.calls for w in analysis.aggregates.windows.values()}
    assert {k: v for k, v in ledger.calls.items() if v} == expected


class _CutShort:
    """A raw body that ends before its Content-Length: the stream broke off (botocore raises IncompleteReadError)."""

    def __init__(self, body: bytes) -> None:
        self._body = body[: len(body) // 2]

    def read(self, amt: int | None = None) -> bytes:
        size = len(self._body) if amt is None else amt
        chunk, self._body = self._body[:size], self._body[size:]
        return chunk

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.read()

    def close(self) -> None:
        self._body = b""


def test_a_trail_object_whose_stream_breaks_off_fails_the_check_instead_of_merging_unchecked(
    env: tuple[Any, Any], trail: Path
) -> None:
    s3, _ = env
    store, prints, starts = _ingest(env, trail)
    bodies = {p.relative_to(trail).as_posix(): p.read_bytes() for p in _logs(trail)}

    def cut_short(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        key = next((k for k in bodies if request.url.endswith(k)), None)
        if key is None or f"/{fingerprint_store.PREFIX}" in request.url:
            return None
        headers = {"Content-Length": str(len(bodies[key])), "ETag": '"x"'}
        return AWSResponse(request.url, 200, headers, _CutShort(bodies[key]))

    s3.meta.events.register("before-send.s3.GetObject", cut_short)
    with pytest.raises(ObjectReadInterruptedError):
        Deduplication(prints.get, reread_objects(s3, AnalysisConfig())).load(store, starts)

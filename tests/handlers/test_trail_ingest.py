"""Trail ingest end to end: S3 notifications in SQS events (events/ samples) -> handler -> state table (moto server)."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import orjson
import pytest
import structlog
from structlog.testing import capture_logs

from auditor.config import AnalysisConfig, get_settings
from auditor.engine import ingest_source
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.reader import Deduper, InputSource
from auditor.kernel.stats import IngestStats
from auditor.service.ingest import ObjectUnreadableError, process_trail_object
from auditor.state import keys
from auditor.state.window_store import WindowStore
from handlers import runtime, trail_ingest
from tests.emf import emitted
from tests.factories import planted_workload, write_log_file, write_trail
from tests.lambda_context import FakeLambdaContext, lambda_context
from tests.moto_server import client, create_state_table

EVENTS = Path(__file__).resolve().parents[2] / "events"
BUCKET = "aws-cloudtrail-logs-111122223333-test"
TABLE = "auditor-state"
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
NOW = datetime(2026, 12, 1, 11, 0, tzinfo=UTC)

CONTEXT = lambda_context("trail-ingest", account="111122223333", remaining_ms=60_000)


# ---------------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def trail_files(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, bytes]]:
    """(S3 key, gzip bytes) of a generated trail: 3 log files in the 10:00 window, a small one after, a digest."""
    out = tmp_path_factory.mktemp("trail")
    paths = write_trail(planted_workload(T0, hours=0.25, seed=3), out, duplicates=0)
    return [(p.relative_to(out).as_posix(), p.read_bytes()) for p in paths]


@pytest.fixture
def env(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """State table, trail bucket and the handler's environment; yields (s3, dynamodb) clients."""
    monkeypatch.setenv("STATE_TABLE_NAME", TABLE)
    monkeypatch.setenv("STATE_RETENTION_DAYS", "5")
    get_settings.cache_clear()
    runtime.reset()
    s3, ddb = client("s3", aws_reset), client("dynamodb", aws_reset)
    create_state_table(ddb, TABLE)
    s3.create_bucket(Bucket=BUCKET)
    runtime.prepare()  # the cold start (it configures logging: tests capture logs after it)
    yield s3, ddb
    get_settings.cache_clear()
    runtime.reset()
    structlog.contextvars.clear_contextvars()


def sqs_event(*bodies: str) -> dict[str, Any]:
    """An SQS event as Lambda delivers it, built from events/trail_ingest_sqs_s3.json (one record per body)."""
    template = json.loads((EVENTS / "trail_ingest_sqs_s3.json").read_text())["Records"][0]
    records = []
    for n, body in enumerate(bodies):
        rec = copy.deepcopy(template)
        rec["messageId"] = f"msg-{n}"
        rec["receiptHandle"] = f"{template['receiptHandle']}{n}"
        rec["body"] = body
        rec["md5OfBody"] = hashlib.md5(body.encode()).hexdigest()
        records.append(rec)
    return {"Records": records}


def notification(
    key: str, *, bucket: str = BUCKET, encoded: str | None = None, event: str = "ObjectCreated:Put"
) -> str:
    """The S3 notification of the sample event, pointing at ``bucket``/``key`` (URL-encoded the way S3 does)."""
    template = json.loads((EVENTS / "trail_ingest_sqs_s3.json").read_text())["Records"][0]
    note = json.loads(template["body"])
    rec = note["Records"][0]
    rec["eventName"] = event
    rec["s3"]["bucket"]["name"] = bucket
    rec["s3"]["bucket"]["arn"] = f"arn:aws:s3:::{bucket}"
    rec["s3"]["object"]["key"] = encoded if encoded is not None else quote_plus(key, safe="/")
    return json.dumps(note)


def invoke(event: dict[str, Any]) -> list[str]:
    """Run the handler; returns the failed message ids."""
    response = trail_ingest.lambda_handler(event, CONTEXT)
    return [f["itemIdentifier"] for f in response["batchItemFailures"]]


def local_aggregate(*bodies: bytes) -> tuple[AggregateSet, IngestStats]:
    """What the engine makes of the same files, each read on its own (as the service does)."""
    total = AggregateSet()
    stats = IngestStats()
    for n, body in enumerate(bodies):
        aggs = ingest_source(
            InputSource(f"local-{n}", lambda b=body: io.BytesIO(b)), AnalysisConfig(), Deduper(), stats
        )
        assert aggs is not None
        total.merge(aggs)
    return total, stats


def items(ddb: Any, prefix: str) -> list[dict[str, Any]]:
    found = ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    return [i for i in found if i["pk"]["S"].startswith(prefix)]


def store(ddb: Any) -> WindowStore:
    return WindowStore(ddb, TABLE)


def starts(aggs: AggregateSet) -> list[int]:
    return sorted({wk[3] for wk in aggs.windows})


# ---------------------------------------------------------------------------------------------------------- tests


def test_object_ingested_equals_local_analysis(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]]) -> None:
    s3, ddb = env
    key, body = trail_files[0]
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    # When the notification of the new object arrives
    with capture_logs() as logs:
        assert invoke(sqs_event(notification(key))) == []
    # Then the stored windows are exactly the local analysis of the same file
    local, stats = local_aggregate(body)
    loaded = store(ddb).load_windows(starts(local))
    assert len(loaded) == len(local.windows) >= 6
    for window in loaded:
        expected = local.windows[(window.account, window.region, window.table, window.window_start)]
        assert window.to_dict() == TableWindow.from_dict(expected.to_dict()).to_dict()
    assert sum(w.calls for w in loaded) == stats.data_events > 1000
    # And the object is marked processed with its stats and ETag
    [mark] = items(ddb, "OBJ#")
    assert mark["pk"]["S"] == keys.object_pk(BUCKET, key)
    assert mark["stats"]["M"]["data_events"] == {"N": str(stats.data_events)}
    assert mark["etag"]["S"] == s3.head_object(Bucket=BUCKET, Key=key)["ETag"]
    assert int(mark["expires_at"]["N"]) > int(datetime.now(UTC).timestamp()) + 4 * 86_400
    # And one structured line was logged for the object, with its stats and the invocation context
    [line] = [e for e in logs if e["event"].startswith("trail_object")]
    assert line["event"] == "trail_object_ingested"
    assert (line["key"], line["data_events"], line["windows"]) == (key, stats.data_events, len(local.windows))
    assert structlog.contextvars.get_contextvars() == {
        "function_request_id": FakeLambdaContext.aws_request_id,
        "function_name": "trail-ingest",
        "cold_start": True,
        "message_id": "msg-0",
    }


def test_two_files_in_the_same_window_merge(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]]) -> None:
    s3, ddb = env
    (k1, b1), (k2, b2) = trail_files[0], trail_files[1]
    for k, b in ((k1, b1), (k2, b2)):
        s3.put_object(Bucket=BUCKET, Key=k, Body=b)
    assert invoke(sqs_event(notification(k1), notification(k2))) == []
    local, stats = local_aggregate(b1, b2)
    loaded = store(ddb).load_windows(starts(local))
    by_key = {(w.table, w.window_start): w for w in loaded}
    orders = by_key[("Orders", int(T0.timestamp()))]
    expected = local.windows[("111122223333", "us-east-1", "Orders", int(T0.timestamp()))]
    assert (orders.calls, orders.key_requests, orders.operations) == (
        expected.calls,
        expected.key_requests,
        expected.operations,
    )
    assert orders.window_seconds == 900  # the same window from two files counts its seconds once
    assert orders.hot.top(1) == expected.hot.top(1)
    assert sum(w.calls for w in loaded) == stats.data_events
    assert len(items(ddb, "OBJ#")) == 2


def test_same_object_twice_counts_once(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]]) -> None:
    s3, ddb = env
    key, body = trail_files[3]
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    local, stats = local_aggregate(body)
    # Twice in one batch, then again in a later batch
    with capture_logs() as logs:
        assert invoke(sqs_event(notification(key), notification(key))) == []
        contributions = items(ddb, "WIN#")
        assert invoke(sqs_event(notification(key))) == []
    loaded = store(ddb).load_windows(starts(local))
    assert sum(w.calls for w in loaded) == stats.data_events > 0
    assert items(ddb, "WIN#") == contributions
    assert len(items(ddb, "OBJ#")) == 1
    events = [e["event"] for e in logs if e["event"].startswith("trail_object")]
    assert events == ["trail_object_ingested", "trail_object_duplicate", "trail_object_duplicate"]


def test_s3_test_event_is_skipped(env: tuple[Any, Any]) -> None:
    _, ddb = env
    event = json.loads((EVENTS / "trail_ingest_sqs_test_event.json").read_text())
    assert invoke(event) == []
    assert ddb.scan(TableName=TABLE)["Items"] == []


@pytest.mark.parametrize("encode", [lambda k: quote_plus(k, safe="/"), quote_plus, lambda k: quote(k, safe="/")])
def test_url_encoded_keys_are_decoded(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]], encode: Any) -> None:
    s3, ddb = env
    # A key with a space, a plus and an equals sign; S3 (and moto, which also encodes "/") encode it
    key = "AWSLogs/111122223333/CloudTrail/us-east-1/2026/12/01/my trail+copy=1.json.gz"
    body = trail_files[3][1]
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    encoded = encode(key)
    assert " " not in encoded and "=" not in encoded
    assert invoke(sqs_event(notification(key, encoded=encoded))) == []
    assert store(ddb).is_processed(BUCKET, key)
    assert sum(w.calls for w in store(ddb).load_windows(starts(local_aggregate(body)[0]))) > 0


def test_missing_object_fails_only_its_message(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]]) -> None:
    s3, ddb = env
    key, body = trail_files[3]
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    gone = key.replace(".json.gz", "-gone.json.gz")
    with capture_logs() as logs:
        failed = invoke(sqs_event(notification(gone), notification(key)))
    assert failed == ["msg-0"]
    assert store(ddb).is_processed(BUCKET, key)
    assert not store(ddb).is_processed(BUCKET, gone)
    [line] = [e for e in logs if e["event"] == "trail_object_failed"]
    assert "object not found (NoSuchKey)" in line["error"]


def test_corrupt_gzip_fails_and_stores_nothing(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]]) -> None:
    s3, ddb = env
    body = trail_files[0][1]
    corrupt = bytearray(body)
    corrupt[len(corrupt) // 2 : len(corrupt) // 2 + 64] = b"\x00" * 64  # records before the damage parse fine
    truncated = body[: len(body) // 2]
    s3.put_object(Bucket=BUCKET, Key="a/corrupt.json.gz", Body=bytes(corrupt))
    s3.put_object(Bucket=BUCKET, Key="a/truncated.json.gz", Body=truncated)
    s3.put_object(Bucket=BUCKET, Key="a/not-cloudtrail.json", Body=b'{"hello": "world"}')
    event = sqs_event(
        notification("a/corrupt.json.gz"), notification("a/truncated.json.gz"), notification("a/not-cloudtrail.json")
    )
    assert invoke(event) == ["msg-0", "msg-1", "msg-2"]
    # no partial window, no index, no mark (only the records of the unreadable objects)
    assert [i for i in ddb.scan(TableName=TABLE)["Items"] if not i["pk"]["S"].startswith("UNREADABLE#")] == []
    # The error names the object and the reason
    with pytest.raises(ObjectUnreadableError, match=r"s3://.*/a/truncated.json.gz.*gzip"):
        process_trail_object(s3, store(ddb), BUCKET, "a/truncated.json.gz", AnalysisConfig(), NOW)


def test_malformed_body_fails_only_its_message(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]]) -> None:
    s3, ddb = env
    key, body = trail_files[3]
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    with capture_logs() as logs:
        failed = invoke(sqs_event("not json", notification(key), '{"Records": [{"eventSource": "aws:s3"}]}'))
    assert failed == ["msg-0", "msg-2"]
    assert store(ddb).is_processed(BUCKET, key)
    errors = [e["error"] for e in logs if e["event"] == "trail_message_invalid"]
    assert errors[0].startswith("message body is not JSON")
    assert errors[1].startswith("not an S3 event notification: Records.0.eventName")


def test_digest_and_other_objects_are_skipped(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]]) -> None:
    s3, ddb = env
    digest_key, digest = trail_files[-1]
    assert "/CloudTrail-Digest/" in digest_key
    s3.put_object(Bucket=BUCKET, Key=digest_key, Body=digest)
    key = trail_files[3][0]
    event = sqs_event(
        notification(digest_key),
        notification("AWSLogs/111122223333/CloudTrail/us-east-1/2026/12/01/"),
        notification(key, event="ObjectRemoved:Delete"),
    )
    with capture_logs() as logs:
        assert invoke(event) == []
    assert ddb.scan(TableName=TABLE)["Items"] == []
    assert [e["reason"] for e in logs if e["event"] == "trail_object_skipped"] == [
        "not a CloudTrail log file",
        "not a CloudTrail log file",
        "event ObjectRemoved:Delete",
    ]


def test_malformed_records_are_counted_and_the_rest_counts(env: tuple[Any, Any], tmp_path: Path) -> None:
    s3, ddb = env
    good = json.loads((Path(__file__).parents[1] / "fixtures/cloudtrail/shape_get_item.json").read_text())["Records"][0]
    no_time = {k: v for k, v in good.items() if k != "eventTime"} | {"eventID": "no-time"}
    path = tmp_path / "x.json.gz"
    write_log_file([good, no_time, "not an object"], path)
    s3.put_object(Bucket=BUCKET, Key="AWSLogs/x.json.gz", Body=path.read_bytes())
    assert invoke(sqs_event(notification("AWSLogs/x.json.gz"))) == []
    [mark] = items(ddb, "OBJ#")
    assert {k: int(v["N"]) for k, v in mark["stats"]["M"].items()} == {
        "files_read": 1,
        "files_failed": 0,
        "records_read": 3,
        "records_skipped": 2,
        "data_events": 1,
        "duplicates_dropped": 0,
    }
    [window] = store(ddb).load_windows([int(datetime(2024, 5, 1, 10, 0, tzinfo=UTC).timestamp())])
    assert (window.table, window.calls) == ("Orders", 1)


def test_mark_conflict_is_a_duplicate_not_a_crash(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]]) -> None:
    s3, ddb = env
    key, body = trail_files[3]
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)

    class RacingStore(WindowStore):
        """Another invocation finishes the same object while this one is writing its contributions."""

        def put_contributions(self, source_id: str, aggregates: AggregateSet, now: datetime) -> int:
            written = super().put_contributions(source_id, aggregates, now)
            assert WindowStore(ddb, TABLE).mark_processed(BUCKET, key, etag=None, stats={"by": 1}, now=now)
            return written

    result = process_trail_object(s3, RacingStore(ddb, TABLE), BUCKET, key, AnalysisConfig(), NOW)
    assert (result.status, result.reason) == ("duplicate", "processed concurrently")
    [mark] = items(ddb, "OBJ#")
    assert mark["stats"]["M"] == {"by": {"N": "1"}}  # the other invocation's mark stands
    local, stats = local_aggregate(body)
    assert sum(w.calls for w in store(ddb).load_windows(starts(local))) == stats.data_events


def test_sample_event_runs_against_its_own_bucket(env: tuple[Any, Any], trail_files: list[tuple[str, bytes]]) -> None:
    """events/trail_ingest_sqs_s3.json as `sam local invoke -e` would send it (bucket and key as in the file)."""
    s3, ddb = env
    event = json.loads((EVENTS / "trail_ingest_sqs_s3.json").read_text())
    rec = orjson.loads(event["Records"][0]["body"])["Records"][0]["s3"]
    s3.create_bucket(Bucket=rec["bucket"]["name"])
    s3.put_object(Bucket=rec["bucket"]["name"], Key=rec["object"]["key"], Body=trail_files[3][1])
    assert invoke(event) == []
    assert store(ddb).is_processed(rec["bucket"]["name"], rec["object"]["key"])


def test_health_metrics_count_files_records_duplicates_and_failures(
    env: tuple[Any, Any], trail_files: list[tuple[str, bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    s3, _ = env
    key, body = trail_files[3]
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    _, stats = local_aggregate(body)
    gone = key.replace(".json.gz", "-gone.json.gz")
    capsys.readouterr()
    # One object read, the same object again (a duplicate), and a missing one (its message fails)
    assert invoke(sqs_event(notification(key), notification(key), notification(gone))) == ["msg-2"]
    [metrics] = emitted(capsys.readouterr().out)
    assert metrics == {
        "FilesIngested": 1,
        "RecordsIngested": stats.data_events,
        "RecordsFailed": 0,
        "DuplicatesDropped": 1,
        "FilesFailed": 1,
    }


def test_a_truncated_object_is_counted_recorded_and_its_message_still_fails(
    env: tuple[Any, Any], trail_files: list[tuple[str, bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    s3, ddb = env
    key, body = trail_files[0]  # written at 10:05Z: its events lie in the 09:45 and 10:00 windows
    cut = key.replace(".json.gz", "-cut.json.gz")
    s3.put_object(Bucket=BUCKET, Key=cut, Body=body[: len(body) // 2])
    capsys.readouterr()
    # Two deliveries of the same truncated object (SQS retries it), plus a missing object
    assert invoke(sqs_event(notification(cut))) == ["msg-0"]
    [first] = emitted(capsys.readouterr().out)
    gone = key.replace(".json.gz", "-gone.json.gz")
    assert invoke(sqs_event(notification(cut), notification(gone))) == ["msg-0", "msg-1"]
    [second] = emitted(capsys.readouterr().out)
    # Each failed read of its content is one UnreadableObjects (a missing object is not one), and the message fails
    assert first == {"UnreadableObjects": 1, "FilesFailed": 1}
    assert second == {"UnreadableObjects": 1, "FilesFailed": 2}
    # One record of the object, with the reason, both attempts, when, and the windows its key's time names
    [item] = items(ddb, "UNREADABLE#")
    assert item["pk"]["S"] == f"UNREADABLE#{keys.week_of(T0)}"
    assert item["key"]["S"] == cut and item["bucket"]["S"] == BUCKET
    assert "gzip" in item["reason"]["S"] and item["attempts"]["N"] == "2"
    assert item["first_seen"]["S"] <= item["last_seen"]["S"]
    [stamp] = re.findall(r"_(\d{8}T\d{4}Z)_", cut)
    written = int(datetime.strptime(stamp, "%Y%m%dT%H%MZ").replace(tzinfo=UTC).timestamp())
    assert [int(w["N"]) for w in item["windows"]["L"]] == [(written - 900) // 900 * 900, written // 900 * 900]
    assert int(item[keys.TTL_ATTR]["N"]) > int(datetime.now(UTC).timestamp())  # bounded by TTL
    assert not store(ddb).is_processed(BUCKET, cut)


def test_an_object_ingested_after_its_windows_were_evaluated_is_flagged_and_counted(
    env: tuple[Any, Any], trail_files: list[tuple[str, bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    s3, ddb = env
    key, body = trail_files[1]  # retried after the evaluator passed its window (the queue's visibility timeout)
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    local, _ = local_aggregate(body)
    store(ddb).seal(int(T0.timestamp()), NOW)  # the evaluator evaluated the windows up to 10:00
    sealed = sorted((w[2], w[3]) for w in local.windows if w[3] <= int(T0.timestamp()))
    assert sealed
    capsys.readouterr()
    assert invoke(sqs_event(notification(key))) == []
    [metrics] = emitted(capsys.readouterr().out)
    assert metrics["LateContributions"] == len(sealed) and metrics["FilesIngested"] == 1
    assert sorted((w.table, w.window_start) for w in store(ddb).late_windows()) == sealed
    capsys.readouterr()
    assert invoke(sqs_event(notification(key))) == []  # redelivered: a duplicate, not late again
    [again] = emitted(capsys.readouterr().out)
    assert "LateContributions" not in again

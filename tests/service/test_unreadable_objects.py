"""An unreadable trail object is visible (moto server): trail ingest records it in the state table on every failed
read, and the weekly report of its week names it once, with the windows its key's time names."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.config import AnalysisConfig
from auditor.report.model import IsoWeek
from auditor.service.ingest import ObjectContentError, ObjectUnreadableError, process_trail_message
from auditor.service.weekly_report import WeeklyReportParams, report_keys, run_weekly_report
from auditor.state.findings_store import FindingsStore
from auditor.state.report_store import ReportAnnouncements
from auditor.state.unreadable_store import UnreadableObjectStore, object_windows
from auditor.state.window_store import WindowStore
from tests.factories import planted_workload, write_trail
from tests.moto_server import TopicInbox, client, create_state_table

STATE, TRAIL, REPORTS = "auditor-state", "trail-bucket", "audit-reports"
T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)  # Wednesday of 2026-W49
WEEK = IsoWeek(year=2026, week=49)
REPORT_TIME = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)  # the Monday after: the report of 2026-W49


def _notification(key: str) -> str:
    s3 = {"bucket": {"name": TRAIL}, "object": {"key": key}}
    return json.dumps({"Records": [{"eventSource": "aws:s3", "eventName": "ObjectCreated:Put", "s3": s3}]})


@pytest.fixture
def env(aws_reset: str, tmp_path: Path) -> dict[str, Any]:
    ddb, s3 = client("dynamodb", aws_reset), client("s3", aws_reset)
    create_state_table(ddb, STATE)
    s3.create_bucket(Bucket=TRAIL)
    s3.create_bucket(Bucket=REPORTS)
    [path, *_] = write_trail(planted_workload(T0, hours=0.25, seed=5), tmp_path, duplicates=0)
    key = path.relative_to(tmp_path).as_posix().replace(".json.gz", "-cut.json.gz")
    body = path.read_bytes()
    s3.put_object(Bucket=TRAIL, Key=key, Body=body[: len(body) // 2])
    return {"ddb": ddb, "s3": s3, "key": key, "inbox": TopicInbox(aws_reset)}


def _ingest(env: dict[str, Any], now: datetime) -> None:
    store, unreadable = WindowStore(env["ddb"], STATE), UnreadableObjectStore(env["ddb"], STATE)
    with pytest.raises(ObjectContentError):
        process_trail_message(env["s3"], store, _notification(env["key"]), AnalysisConfig(), now, unreadable=unreadable)


def test_the_weekly_report_names_the_unreadable_object_once_with_its_windows(env: dict[str, Any]) -> None:
    # Given a truncated object whose message SQS delivered three times during the week
    for minutes in (20, 25, 60):
        _ingest(env, T0 + timedelta(minutes=minutes))
    # When the report of that week is built
    params = WeeklyReportParams(bucket=REPORTS, topic_arn=env["inbox"].topic_arn, link_expiry_seconds=3600)
    result = run_weekly_report(
        FindingsStore(env["ddb"], STATE),
        env["s3"],
        env["inbox"].sns,
        ReportAnnouncements(env["ddb"], STATE),
        params,
        REPORT_TIME,
        unreadable=UnreadableObjectStore(env["ddb"], STATE),
    )
    # Then it names the object once, with its windows, the reason and the three failed reads
    assert result.unreadable_objects == 1
    _, windows = object_windows(env["key"], T0, 900)
    first, last = (datetime.fromtimestamp(w, UTC) for w in (windows[0], windows[-1]))
    line = f"s3://{TRAIL}/{env['key']} (windows {first:%Y-%m-%dT%H:%MZ} to {last:%Y-%m-%dT%H:%MZ}): "
    html_key, md_key = report_keys(WEEK)
    markdown = env["s3"].get_object(Bucket=REPORTS, Key=md_key)["Body"].read().decode()
    html = env["s3"].get_object(Bucket=REPORTS, Key=html_key)["Body"].read().decode()
    for text in (markdown, html):
        assert text.count(env["key"].rsplit("/", 1)[1]) == 1, "listed once"
    assert "3 failed reads, last 2026-12-02T11:00:00Z" in markdown and "gzip" in markdown
    assert line in html
    # and the announcement says an object could not be read
    (envelope,) = env["inbox"].envelopes()
    assert "Not read:          1 CloudTrail object could not be read" in envelope["Message"]


def test_the_object_belongs_to_its_windows_week_not_to_the_next_one(env: dict[str, Any]) -> None:
    _ingest(env, T0 + timedelta(days=6))  # still retried on Tuesday of the next week
    store = UnreadableObjectStore(env["ddb"], STATE)
    [stored] = store.week_objects(T0)
    assert stored.key == env["key"] and stored.attempts == 1
    assert store.week_objects(T0 + timedelta(days=7)) == []


def test_a_missing_object_is_not_recorded_as_unreadable(env: dict[str, Any]) -> None:
    store, unreadable = WindowStore(env["ddb"], STATE), UnreadableObjectStore(env["ddb"], STATE)
    gone = env["key"].replace("-cut", "-gone")
    with pytest.raises(ObjectUnreadableError, match="not found"):
        process_trail_message(env["s3"], store, _notification(gone), AnalysisConfig(), T0, unreadable=unreadable)
    assert unreadable.week_objects(T0) == []

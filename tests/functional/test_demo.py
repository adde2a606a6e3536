"""`ddb-audit demo`: the deployed service end to end on a local endpoint, with real handlers and a Slack catcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.demo.service import DemoResult, run_service_demo, summary_text

NARRATIVE: list[str] = []


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    return run_service_demo(tmp_path_factory.mktemp("demo"), announce=NARRATIVE.append)


def test_first_run_alerts_every_planted_problem_once(demo: DemoResult) -> None:
    first = demo.runs[0]
    kinds = {f["kind"] for f in demo.findings}
    assert {"scan", "hot_key", "low_cardinality_key", "throttling", "item_size_exceeded"} <= kinds
    assert first.failed_messages == 0
    assert first.evaluation["published"] == len(demo.findings) == first.sns_messages == first.slack_posts
    tables = {f["table"] for f in demo.findings}
    assert "Users" not in tables  # the healthy table stays clean


def test_second_run_realerts_nothing(demo: DemoResult) -> None:
    second = demo.runs[1]
    assert second.evaluation["findings_seen"] > 0  # the problems are still there...
    assert second.evaluation["new"] == second.evaluation["published"] == 0  # ...and nobody is told twice
    assert second.sns_messages == second.slack_posts == 0
    assert {f["status"] for f in demo.findings} == {"ongoing"}


def test_slack_posts_are_block_kit_and_redacted(demo: DemoResult) -> None:
    assert demo.slack_posts
    for post in demo.slack_posts:
        assert post["text"] and 0 < len(post["blocks"]) <= 50
    hot = [p for p in demo.slack_posts if "Hot partition key" in p["text"]]
    assert hot
    raw = json.dumps(demo.slack_posts, ensure_ascii=False)
    assert "CUSTOMER#42" not in raw  # the hot key's value left the account only as CUSTOMER#…hash
    assert "CUSTOMER#…" in raw


def test_the_redelivered_notification_counted_once(demo: DemoResult) -> None:
    # Run 1 re-sends one S3 notification; the object is marked processed, so its records count once: the
    # stored findings match a plain analysis of the same files (the hot key's request count included).
    first = demo.runs[0]
    assert first.messages == first.objects + 2  # + the redelivered message + S3's test event


def test_outputs_and_time(demo: DemoResult) -> None:
    data = json.loads((demo.out / "findings.json").read_text())
    assert len(data["findings"]) == len(demo.findings)
    assert demo.seconds < 60
    text = summary_text(demo)
    assert "run 2 published 0" in text
    assert any(line.startswith("run 2") for line in NARRATIVE)


def test_cli_demo_writes_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from auditor.cli import main

    assert main(["demo", "--out", str(tmp_path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["findings"]
    assert (tmp_path / "findings.json").exists()

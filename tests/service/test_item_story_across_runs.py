"""One item, one stored finding across the service's runs (moto server): the stream watcher's size of an item and
the window evaluator's rejected writes on it are one story, whichever run comes first (auditor.service.record's
carry_over, auditor.detectors.findings.item_story)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest

from auditor.detectors.base import ObservationInput
from auditor.detectors.findings.item_story import story_id
from auditor.detectors.stream import large_item
from auditor.lifecycle import FindingStatus
from auditor.models.finding import FindingKind, Severity
from auditor.models.stream import TableRef
from auditor.service.record import LifecycleParams
from auditor.service.stream_item_size import record_stream_findings
from tests import factories as f
from tests.detectors.test_stream_detectors import obs
from tests.handlers.test_evaluator import Env, at

ACCOUNT, REGION = "111122223333", "us-east-1"  # the factories' calls
KEY = {"docId": "DOC#7"}
MSG = "Item size to update has exceeded the maximum allowed size"


@pytest.fixture
def env(aws_reset: str) -> Env:
    return Env(aws_reset)


def stream_run(env: Env, when: datetime) -> None:
    """The stream watcher records the item measured at 96% of the limit (critical on its own)."""
    seen = obs(393_000, key={"docId": {"S": "DOC#7"}}, at=when.timestamp(), ref=TableRef(ACCOUNT, REGION, "Documents"))
    findings = large_item.detect(ObservationInput(seen))
    record_stream_findings(env.findings, env.sns, LifecycleParams(env.topic_arn), findings, now=when)


def trail_run(env: Env) -> None:
    """The window evaluator sees five UpdateItems on the item rejected for item size in the 10:00 window."""
    calls = [
        f.call("UpdateItem", "Documents", KEY, at=60 + i, error="ValidationException", message=MSG, event_id=f"u{i}")
        for i in range(5)
    ]
    env.put(calls)
    env.run(at(35))


@pytest.mark.parametrize(
    "first, second",
    [
        (lambda env: stream_run(env, at(5)), trail_run),
        (trail_run, lambda env: stream_run(env, at(40))),
    ],
    ids=["stream-then-trail", "trail-then-stream"],
)
def test_the_item_is_one_stored_finding_whichever_run_comes_first(
    env: Env, first: Callable[[Env], None], second: Callable[[Env], None]
) -> None:
    first(env)
    (before,) = env.findings.get_many([story_id(ACCOUNT, REGION, "Documents", KEY)]).values()
    env.published()
    second(env)
    states = env.findings.get_many([story_id(ACCOUNT, REGION, "Documents", KEY)])
    (state,) = states.values()
    assert state.id == before.id
    story = state.finding
    assert (story.kind, story.severity) == (FindingKind.ITEM_SIZE_EXCEEDED, Severity.CRITICAL)
    assert {(x["kind"], x["source"]) for x in story.evidence["facts"]} == {
        ("item_size_exceeded", "cloudtrail"),
        ("large_item", "dynamodb_streams"),
    }
    assert "5 writes rejected for item size" in story.title and "at 96% of 400 KB" in story.title
    assert f"{story.evidence['count']} writes rejected" in story.title  # the title states the stored evidence's count
    assert state.status.is_open
    # and no other finding on the item: the store holds this one story only
    scanned = env.ddb.scan(TableName="auditor-state", ConsistentRead=True)["Items"]
    finding_ids = {i["id"]["S"] for i in scanned if i["pk"]["S"].startswith("FINDING#")}
    assert finding_ids == {state.id}
    # announced when it became critical, once
    if before.finding.severity is not Severity.CRITICAL:
        assert state.status is FindingStatus.WORSENED
        assert [m["status"] for m in env.published()] == ["worsened"]


def test_the_stored_story_states_the_weeks_rejected_writes(env: Env) -> None:
    # Given the item's size stored by the watcher, then rejected writes in two windows, evaluated one run each
    stream_run(env, at(5))
    for window, now in ((0, 35), (15, 50)):
        calls = [
            f.call("UpdateItem", "Documents", KEY, at=window * 60 + 60 + i, error="ValidationException", message=MSG,
                   event_id=f"w{window}-{i}")
            for i in range(5)
        ]  # fmt: skip
        env.put(calls)
        env.run(at(now))
    # Then the one stored story counts both windows, in its evidence, its facts and its title alike
    (state,) = env.findings.get_many([story_id(ACCOUNT, REGION, "Documents", KEY)]).values()
    story = state.finding
    assert story.totals is not None and story.totals.count == 10
    assert story.evidence["count"] == story.evidence["facts"][0]["count"] == 10
    assert story.title.startswith("Item docId=DOC#7 of Documents: 10 writes rejected for item size")

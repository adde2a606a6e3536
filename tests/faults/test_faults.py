"""The fault-injection suite: every AWS call of trail ingest, the evaluator and the notifier failing once, and a
Lambda timeout after each step, on the moto server with the real handlers (``tests/faults/pipeline.py``).

Each case runs the whole pipeline over the same trail files with one fault and asserts that the stored totals equal
``analyze-trail`` on those files, that Slack received each finding once (or, for the cases docs/faults.md names, a
repeat that is counted), and that every repeated e-mail is counted in ``RepeatedPublishes``. A case that no longer
meets its call (the code changed the calls it makes) fails, and so does a clean run that makes a call no case covers.
``python -m tests.faults`` prints the table of docs/faults.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from auditor.demo.stack import SlackCatcher
from tests.faults.pipeline import INJECTOR, Fault, Outcome, Pipeline, Trail, make_trail, reset_moto
from tests.faults.table import CASES, OPERATIONS, Row, row_of


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Trail:
    return make_trail(tmp_path_factory.mktemp("fault-trail"))


@pytest.fixture(scope="module")
def catcher() -> Iterator[SlackCatcher]:
    slack = SlackCatcher().start()
    INJECTOR.install()
    yield slack
    INJECTOR.uninstall()
    slack.stop()


def _run(endpoint: str, catcher: SlackCatcher, trail: Trail, fault: Fault | None) -> Outcome:
    INJECTOR.reset(fault)
    return Pipeline(endpoint, catcher, trail).run()


@pytest.fixture(scope="module")
def clean(moto_endpoint: str, catcher: SlackCatcher, trail: Trail) -> Outcome:
    """The run without a fault (its calls say where each case's fault lands)."""
    reset_moto(moto_endpoint)
    return _run(moto_endpoint, catcher, trail, None)


def test_the_clean_run_equals_analyze_trail_and_tells_slack_each_finding_once(clean: Outcome, trail: Trail) -> None:
    assert sorted(clean.findings) == sorted(trail.expected)
    for fid, mine in clean.findings.items():
        assert mine["totals"] == trail.expected[fid]["totals"], fid
    assert clean.slack_ids and set(clean.slack_ids.values()) == {1}
    assert clean.mails and set(clean.mails.values()) == {1}
    assert clean.parked == 0 and clean.health["RepeatedPublishes"] == 0


def test_every_call_of_the_clean_run_has_its_cases(clean: Outcome) -> None:
    made = {(handler, op) for handler, op in clean.calls}
    assert made == {(handler, op) for handler, ops in OPERATIONS.items() for op in ops}


@pytest.mark.parametrize("fault", CASES, ids=[f.id for f in CASES])
def test_a_fault_loses_and_repeats_nothing_uncounted(
    fault: Fault, moto_endpoint: str, catcher: SlackCatcher, trail: Trail, clean: Outcome, tmp_path: Path
) -> None:
    reset_moto(moto_endpoint)
    placed = fault.placed(clean.calls)
    outcome = _run(moto_endpoint, catcher, trail, placed)
    assert INJECTOR.fired, f"{placed.id}: the run never made that call"
    row: Row = row_of(fault, outcome, clean, trail)
    assert row.counts_equal, row
    assert outcome.parked == 0, row
    assert row.slack_repeats == row.allowed_slack_repeats, row
    assert row.uncounted == 0, row


def test_docs_faults_md_has_a_row_for_every_case() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "faults.md").read_text()
    rows = {line.split(" | ")[0].strip("| ") for line in doc.splitlines() if line.startswith("| ") and ":" in line}
    assert {f.id for f in CASES} <= rows, "run python -m tests.faults and paste its table into docs/faults.md"

"""The scheduled organisation audit across invocations: the cycle cursor and the coverage gaps in the state table
(moto server). The per-pair audit is replaced by a recorder (its own behaviour is tested in
test_metrics_audit_handler.py): these tests are about which pairs each invocation audits, with which window."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from auditor.service import metrics_audit
from auditor.service.metrics_audit import MetricsAuditParams, MetricsAuditResult, run_org_metrics_audit
from auditor.service.record import LifecycleParams, RecordResult
from auditor.sources.org import SessionFactory, TargetError
from auditor.state.audit_cycle import AuditCycleStore
from auditor.state.findings_store import FindingsStore
from tests.moto_server import TopicInbox, client, create_state_table

STATE = "auditor-state"
LIMIT_SECONDS = 900.0  # the Lambda limit the metrics audit runs under
PAIR_SECONDS = 3.0  # modelled invocation time one pair costs
NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


@dataclass
class Recorder:
    """Stands in for one pair's metrics audit: records who was audited over which window, costs PAIR_SECONDS."""

    fail: set[tuple[str, str]] = field(default_factory=set)
    calls: list[tuple[str | None, str, datetime]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    elapsed: float = 0.0

    def time_left(self) -> float:
        return LIMIT_SECONDS - self.elapsed

    def audit(self, clients: Any, store: Any, sns: Any, params: Any, now: datetime, **_: Any) -> MetricsAuditResult:
        account, region = clients
        with self.lock:
            self.elapsed += PAIR_SECONDS
            self.calls.append((account, region, now))
        if (account, region) in self.fail:
            raise TargetError("dynamodb:ListTables", "AccessDeniedException", "not authorized")
        return MetricsAuditResult(0, 0, 0, [], 0, 0, 0, [], 1, 0, 0.0, 0, RecordResult())


@dataclass
class Org:
    store: FindingsStore
    cycles: AuditCycleStore
    inbox: TopicInbox
    recorder: Recorder

    def invoke(self, accounts: list[str], regions: list[str], now: datetime = NOW, **kw: Any) -> dict[str, Any]:
        """One invocation with a fresh time budget."""
        self.recorder.elapsed = 0.0
        return self.run(accounts, regions, now, **kw).as_dict()

    def run(self, accounts: list[str], regions: list[str], now: datetime, **kw: Any) -> Any:
        params = MetricsAuditParams(lifecycle=LifecycleParams(topic_arn=self.inbox.topic_arn))
        return run_org_metrics_audit(
            SessionFactory(boto3.Session(region_name="us-east-1"), None),
            lambda: (accounts, regions),
            self.store,
            self.inbox.sns,
            params,
            now,
            cycles=self.cycles,
            concurrency=kw.pop("concurrency", 8),
            time_left=kw.pop("time_left", self.recorder.time_left),
        )


@pytest.fixture
def org(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Org]:
    ddb = client("dynamodb", aws_reset)
    create_state_table(ddb, STATE)
    recorder = Recorder()
    # the recorder replaces the pair's audit; its clients are (account, Region) instead of boto3 clients
    monkeypatch.setattr(metrics_audit, "run_metrics_audit", recorder.audit)
    monkeypatch.setattr(
        "auditor.sources.audit_clients.clients_for",
        lambda session, region: (getattr(session, "_account", None), region),
    )
    real_session = SessionFactory.session

    def tagged(self: SessionFactory, account: str | None) -> Any:
        session = real_session(self, account)
        return _Tagged(session, account)

    monkeypatch.setattr(SessionFactory, "session", tagged)
    yield Org(FindingsStore(ddb, STATE), AuditCycleStore(ddb, STATE), TopicInbox(aws_reset), recorder)


class _Tagged:
    """A session labelled with the account it stands for (the recorder reads it)."""

    def __init__(self, session: Any, account: str | None) -> None:
        self._session, self._account = session, account


def accounts(n: int) -> list[str]:
    return [f"{100000000000 + i:012d}" for i in range(n)]


def test_500_accounts_continue_across_invocations_each_pair_once_over_the_cycles_window(org: Org) -> None:
    ids = accounts(500)
    pairs = {(a, "us-east-1") for a in ids}
    # When the first invocation runs out of time before the 500th account
    first = org.invoke(ids, ["us-east-1"])
    done_first = len(org.recorder.calls)
    # Then it stopped starting pairs before the limit (time reserve), and left a cursor for the rest
    assert 0 < done_first < 500
    assert done_first * PAIR_SECONDS <= LIMIT_SECONDS
    assert first["cycle"]["next"] == done_first and first["cycle"]["remaining"] == 500 - done_first
    assert first["cycle"]["resumed"] is False and first["coverage_gaps"] == []  # not-yet-audited is no gap
    stored = org.cycles.load()
    assert stored is not None and stored.next == done_first and stored.total == 500
    # When the next invocation (an hour later) runs
    second = org.invoke(ids, ["us-east-1"], NOW + timedelta(hours=1))
    # Then it continued the same cycle where the first stopped, and finished it
    assert second["cycle"]["resumed"] is True
    assert (second["cycle"]["first"], second["cycle"]["next"], second["cycle"]["remaining"]) == (done_first, 500, 0)
    audited = [(a, r) for a, r, _ in org.recorder.calls]
    assert len(audited) == len(set(audited)) == 500  # nothing twice in the cycle...
    assert set(audited) == pairs  # ...and nothing skipped
    assert {now for _, _, now in org.recorder.calls} == {NOW}  # every pair over the cycle's window
    # When the hour after that runs, a new cycle begins at its own time
    org.recorder.calls.clear()
    third = org.invoke(ids[:10], ["us-east-1"], NOW + timedelta(hours=2))
    assert third["cycle"]["resumed"] is False and third["cycle"]["pairs"] == 10
    assert {now for _, _, now in org.recorder.calls} == {NOW + timedelta(hours=2)}


def test_a_retried_schedule_event_after_its_cycle_finished_audits_nothing_again(org: Org) -> None:
    org.invoke(accounts(3), ["us-east-1", "eu-west-1"])
    assert len(org.recorder.calls) == 6
    again = org.invoke(accounts(3), ["us-east-1", "eu-west-1"])  # same schedule time
    assert len(org.recorder.calls) == 6 and again["targets"] == 0
    # (the stored cycle keeps whole seconds: a schedule time with a fraction of a second is the same cycle)
    again = org.invoke(accounts(3), ["us-east-1", "eu-west-1"], NOW.replace(microsecond=250_000))
    assert len(org.recorder.calls) == 6 and again["targets"] == 0


def test_two_invocations_at_once_share_a_cycle_without_auditing_a_pair_twice(org: Org) -> None:
    ids = accounts(60)
    results: list[Any] = []

    def invoke() -> None:
        results.append(org.run(ids, ["us-east-1", "eu-west-1"], NOW, time_left=lambda: LIMIT_SECONDS, concurrency=4))

    threads = [threading.Thread(target=invoke) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    audited = [(a, r) for a, r, _ in org.recorder.calls]
    assert len(audited) == len(set(audited)) == 120
    assert sum(len(r.runs) for r in results) == 120
    assert {r.cycle.id for r in results} == {"2026-12-02T10:00:00Z"}


def test_coverage_gaps_are_counted_per_week_in_the_state_table(org: Org) -> None:
    ids = accounts(4)
    org.recorder.fail = {(ids[1], "eu-west-1")}
    first = org.invoke(ids, ["eu-west-1"])
    assert [(g["account"], g["reason"]) for g in first["coverage_gaps"]] == [(ids[1], "access_denied")]
    org.invoke(ids, ["eu-west-1"], NOW + timedelta(hours=1))  # the next cycle, same ISO week
    gaps = org.cycles.week_gaps(NOW)
    assert [(g.account, g.region, g.reason, g.error_code, g.cycles) for g in gaps] == [
        (ids[1], "eu-west-1", "access_denied", "AccessDeniedException", 2)
    ]
    assert gaps[0].first_seen <= gaps[0].last_seen
    assert org.cycles.week_gaps(NOW + timedelta(days=7)) == []  # the week after has none

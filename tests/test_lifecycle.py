"""The finding lifecycle: transitions, thresholds, suppress/snooze rules (pure, no AWS)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from auditor.exceptions import ConfigurationError
from auditor.lifecycle import (
    EventKind,
    FindingState,
    FindingStatus,
    StateChange,
    SuppressRule,
    merge_sightings,
    parse_suppress_rules,
    reconcile,
    transition,
)
from auditor.models.finding import Finding, FindingKind, Severity, fingerprint

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
HOUR = 3600
ALICE = "arn:aws:iam::111122223333:user/alice"
CLEANER = "arn:aws:iam::111122223333:role/session-cleaner"
SESSIONS = ("111122223333", "us-east-1", "Sessions")


def scan(
    severity: Severity = Severity.MEDIUM,
    *,
    at: float = 0,
    span: float = 600,
    principal: str | None = ALICE,
    table: str = "Sessions",
) -> Finding:
    """A scan finding seen from ``T0 + at`` for ``span`` seconds (the id depends on table and principal only)."""
    return Finding(
        id=fingerprint(FindingKind.SCAN, "111122223333", "us-east-1", table, None, [principal, "Scan"]),
        kind=FindingKind.SCAN,
        severity=severity,
        account="111122223333",
        region="us-east-1",
        table=table,
        title=f"Scans on {table}",
        summary="summary",
        recommendation="fix",
        evidence={"principal": principal, "operation": "Scan", "count": 3, "source": "cloudtrail"},
        first_seen=T0 + timedelta(seconds=at),
        last_seen=T0 + timedelta(seconds=at + span),
    )


def step(
    previous: FindingState | None,
    seen: Finding | None,
    *,
    now: datetime,
    horizon: datetime | None = None,
    rules: tuple[SuppressRule, ...] = (),
    resolve_after: int = 4 * HOUR,
) -> StateChange | None:
    return transition(previous, seen, now=now, rules=rules, resolve_after_seconds=resolve_after, horizon=horizon)


def opened(finding: Finding | None = None, now: datetime = T0 + timedelta(minutes=30)) -> FindingState:
    change = step(None, finding or scan(), now=now)
    assert change is not None
    return change.state


# ---------------------------------------------------------------------------------------------------- new


def test_first_sighting_is_new_and_published() -> None:
    f = scan(Severity.HIGH)
    now = T0 + timedelta(minutes=40)

    change = step(None, f, now=now)

    assert change is not None and change.previous is None
    assert change.state.status is FindingStatus.NEW
    assert change.state.published_severity is Severity.HIGH
    assert change.state.opened_at == now and change.state.resolved_at is None
    assert (change.state.first_seen, change.state.last_seen) == (f.first_seen, f.last_seen)
    assert change.event is not None and change.event.kind is EventKind.NEW
    assert change.event.finding.model_copy(update={"totals": None}) == f and change.event.at == now
    assert change.event.finding.totals == f.sighting_totals()  # a sighting without totals counts its own evidence
    assert change.muted_event is None


def test_unseen_and_unknown_is_nothing() -> None:
    assert step(None, None, now=T0, horizon=T0) is None


# ---------------------------------------------------------------------------------------------------- ongoing


def test_seen_again_is_ongoing_without_event_and_extends_last_seen() -> None:
    prev = opened(scan(at=0))
    later = scan(at=900)

    change = step(prev, later, now=T0 + timedelta(minutes=50))

    assert change is not None
    assert change.state.status is FindingStatus.ONGOING
    assert change.event is None and change.muted_event is None
    assert change.state.first_seen == prev.first_seen
    assert change.state.last_seen == later.last_seen
    assert change.state.opened_at == prev.opened_at


def test_replayed_window_gives_no_second_new_event() -> None:
    # A crash after storing but before moving the cursor: the same window is evaluated again.
    f = scan()
    prev = opened(f)

    change = step(prev, f, now=T0 + timedelta(hours=1))

    assert change is not None and change.event is None
    assert change.state.status is FindingStatus.ONGOING
    # Evaluated a third time: nothing changes at all, nothing to write.
    assert step(change.state, f, now=T0 + timedelta(hours=2)) is None


def test_earlier_sighting_moves_first_seen_back() -> None:
    prev = opened(scan(at=900))
    change = step(prev, scan(at=0), now=T0 + timedelta(hours=1))
    assert change is not None
    assert change.state.first_seen == T0
    assert change.state.last_seen == prev.last_seen


# ---------------------------------------------------------------------------------------------------- worsened


def test_higher_severity_is_worsened_and_published() -> None:
    prev = opened(scan(Severity.LOW))

    change = step(prev, scan(Severity.HIGH, at=900), now=T0 + timedelta(hours=1))

    assert change is not None
    assert change.state.status is FindingStatus.WORSENED
    assert change.state.published_severity is Severity.HIGH
    assert change.event is not None and change.event.kind is EventKind.WORSENED
    assert change.event.previous_severity is Severity.LOW
    assert change.event.finding.severity is Severity.HIGH


def test_severity_drop_is_not_worsened_and_keeps_the_published_level() -> None:
    prev = opened(scan(Severity.HIGH))

    drop = step(prev, scan(Severity.LOW, at=900), now=T0 + timedelta(hours=1))
    assert drop is not None and drop.event is None
    assert drop.state.status is FindingStatus.ONGOING
    assert drop.state.published_severity is Severity.HIGH
    assert drop.state.finding.severity is Severity.LOW

    # Back up to the level already announced: not news.
    back = step(drop.state, scan(Severity.HIGH, at=1800), now=T0 + timedelta(hours=2))
    assert back is not None and back.event is None
    assert back.state.status is FindingStatus.ONGOING

    # Above it: worsened.
    above = step(back.state, scan(Severity.CRITICAL, at=2700), now=T0 + timedelta(hours=3))
    assert above is not None and above.event is not None
    assert above.event.kind is EventKind.WORSENED and above.event.previous_severity is Severity.HIGH


def test_worsened_then_same_severity_is_ongoing() -> None:
    prev = opened(scan(Severity.LOW))
    worse = step(prev, scan(Severity.MEDIUM, at=900), now=T0 + timedelta(hours=1))
    assert worse is not None
    again = step(worse.state, scan(Severity.MEDIUM, at=1800), now=T0 + timedelta(hours=2))
    assert again is not None and again.event is None
    assert again.state.status is FindingStatus.ONGOING


# ---------------------------------------------------------------------------------------------------- resolved


def test_absent_past_resolve_after_is_resolved_exactly_at_the_threshold() -> None:
    prev = opened(scan(at=0, span=600))  # last seen T0 + 10 min
    resolve_after = 2 * HOUR
    now = T0 + timedelta(hours=5)
    just_before = prev.last_seen + timedelta(seconds=resolve_after - 1)
    at_threshold = prev.last_seen + timedelta(seconds=resolve_after)

    assert step(prev, None, now=now, horizon=just_before, resolve_after=resolve_after) is None

    change = step(prev, None, now=now, horizon=at_threshold, resolve_after=resolve_after)
    assert change is not None
    assert change.state.status is FindingStatus.RESOLVED
    assert change.state.resolved_at == now
    assert change.state.last_seen == prev.last_seen
    assert change.event is not None and change.event.kind is EventKind.RESOLVED
    assert change.event.finding.id == prev.id


def test_table_not_evaluated_does_not_resolve() -> None:
    prev = opened()
    assert step(prev, None, now=T0 + timedelta(days=30), horizon=None) is None


def test_resolution_is_measured_to_the_horizon_not_the_clock() -> None:
    # Catching up on a backlog: the clock is far ahead, but the evaluated windows are not.
    prev = opened(scan(at=0, span=600))
    change = step(prev, None, now=T0 + timedelta(days=3), horizon=T0 + timedelta(hours=1), resolve_after=4 * HOUR)
    assert change is None


def test_resolved_finding_stays_resolved_when_unseen() -> None:
    prev = opened()
    resolved = step(prev, None, now=T0 + timedelta(hours=6), horizon=T0 + timedelta(hours=6))
    assert resolved is not None
    assert step(resolved.state, None, now=T0 + timedelta(hours=9), horizon=T0 + timedelta(hours=9)) is None


def test_seen_again_after_resolution_is_new_again() -> None:
    first = scan(Severity.HIGH, at=0)
    prev = opened(first)
    resolved = step(prev, None, now=T0 + timedelta(hours=6), horizon=T0 + timedelta(hours=6))
    assert resolved is not None
    now = T0 + timedelta(hours=10)

    reopened = step(resolved.state, scan(Severity.LOW, at=9 * HOUR), now=now)

    assert reopened is not None
    assert reopened.state.status is FindingStatus.NEW
    assert reopened.state.opened_at == now and reopened.state.resolved_at is None
    assert reopened.state.first_seen == first.first_seen  # earliest ever
    assert reopened.state.last_seen == T0 + timedelta(hours=9, seconds=600)
    assert reopened.state.published_severity is Severity.LOW  # a new episode
    assert reopened.event is not None and reopened.event.kind is EventKind.NEW


def test_old_evidence_does_not_reopen_a_resolved_finding() -> None:
    f = scan(at=0)
    prev = opened(f)
    resolved = step(prev, None, now=T0 + timedelta(hours=6), horizon=T0 + timedelta(hours=6))
    assert resolved is not None
    assert step(resolved.state, f, now=T0 + timedelta(hours=7)) is None


# ---------------------------------------------------------------------------------------------------- rules


def test_suppressed_finding_is_stored_with_the_reason_but_not_published() -> None:
    rule = SuppressRule(kind=FindingKind.SCAN, table="Sess*", reason="known export job")

    change = step(None, scan(Severity.HIGH), now=T0 + timedelta(hours=1), rules=(rule,))

    assert change is not None
    assert change.state.status is FindingStatus.NEW
    assert change.state.muted_reason == "known export job" and change.state.muted_until is None
    assert change.state.published_severity is None
    assert change.event is None and change.muted_event is EventKind.NEW


def test_suppressed_finding_worsening_is_not_published() -> None:
    rule = SuppressRule(principal=ALICE, reason="alice is allowed")
    prev = step(None, scan(Severity.LOW), now=T0, rules=(rule,))
    assert prev is not None
    change = step(prev.state, scan(Severity.HIGH, at=900), now=T0 + timedelta(hours=1), rules=(rule,))
    assert change is not None
    assert change.state.status is FindingStatus.WORSENED
    assert change.event is None and change.muted_event is EventKind.WORSENED


def test_suppressed_finding_resolves_silently() -> None:
    rule = SuppressRule(table="Sessions", reason="r")
    prev = step(None, scan(), now=T0, rules=(rule,))
    assert prev is not None
    change = step(prev.state, None, now=T0 + timedelta(hours=6), horizon=T0 + timedelta(hours=6), rules=(rule,))
    assert change is not None and change.state.status is FindingStatus.RESOLVED
    assert change.event is None


def test_snooze_mutes_until_its_end_then_the_finding_is_announced() -> None:
    until = T0 + timedelta(hours=2)
    rule = SuppressRule(table="Sessions", until=until, reason="migrating to a GSI this sprint")

    during = step(None, scan(Severity.MEDIUM), now=T0 + timedelta(minutes=30), rules=(rule,))
    assert during is not None and during.event is None
    assert during.state.muted_until == until

    # Still seen once the snooze ended: announced for the first time, as new.
    after = step(during.state, scan(Severity.MEDIUM, at=HOUR), now=until, rules=(rule,))
    assert after is not None
    assert after.event is not None and after.event.kind is EventKind.NEW
    assert after.state.status is FindingStatus.NEW
    assert after.state.muted_reason is None
    assert after.state.published_severity is Severity.MEDIUM


def test_snoozed_then_published_finding_is_not_announced_twice() -> None:
    rule = SuppressRule(table="Sessions", until=T0 + timedelta(minutes=45), reason="r")
    during = step(None, scan(), now=T0 + timedelta(minutes=30), rules=(rule,))
    assert during is not None
    after = step(during.state, scan(at=HOUR), now=T0 + timedelta(hours=1), rules=(rule,))
    assert after is not None and after.event is not None
    later = step(after.state, scan(at=2 * HOUR), now=T0 + timedelta(hours=2), rules=(rule,))
    assert later is not None and later.event is None


@pytest.mark.parametrize(
    ("rule", "finding", "matches"),
    [
        (SuppressRule(table="Sess*", reason="r"), scan(), True),
        (SuppressRule(table="Sess*", reason="r"), scan(table="Orders"), False),
        (SuppressRule(table="sessions", reason="r"), scan(), False),  # case-sensitive, like table names
        (SuppressRule(table="*", kind=FindingKind.HOT_KEY, reason="r"), scan(), False),
        (SuppressRule(kind=FindingKind.SCAN, reason="r"), scan(), True),
        (SuppressRule(principal="arn:aws:iam::*:role/session-*", reason="r"), scan(principal=CLEANER), True),
        (SuppressRule(principal="arn:aws:iam::*:role/session-*", reason="r"), scan(principal=ALICE), False),
        (SuppressRule(principal="*", reason="r"), scan(principal=None), False),  # no principal evidence
        (SuppressRule(table="Sessions", principal=ALICE, reason="r"), scan(table="Orders"), False),
        (SuppressRule(table="Sessions", until=T0, reason="r"), scan(), False),  # snooze over at T0
        (SuppressRule(table="Sessions", until=T0 + timedelta(seconds=1), reason="r"), scan(), True),
    ],
)
def test_rule_matching(rule: SuppressRule, finding: Finding, matches: bool) -> None:
    assert rule.matches(finding, T0) is matches


# ---------------------------------------------------------------------------------------------------- rule parsing


def test_parse_rules() -> None:
    rules = parse_suppress_rules(
        '[{"table": "Sessions", "kind": "scan", "principal": "arn:*", "until": "2026-12-31T00:00:00Z", "reason": "a"},'
        ' {"kind": "hot_key", "reason": "b"}]'
    )
    assert len(rules) == 2
    assert rules[0].until == datetime(2026, 12, 31, tzinfo=UTC)
    assert rules[1].kind is FindingKind.HOT_KEY and rules[1].until is None
    assert parse_suppress_rules(None) == ()
    assert parse_suppress_rules("  ") == ()
    assert parse_suppress_rules("[]") == ()


def test_naive_until_is_utc() -> None:
    (rule,) = parse_suppress_rules('[{"table": "T", "until": "2026-12-31T00:00:00", "reason": "r"}]')
    assert rule.until == datetime(2026, 12, 31, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[{", "SUPPRESS_RULES_JSON is not valid JSON"),
        ('{"table": "T", "reason": "r"}', "SUPPRESS_RULES_JSON is invalid at (root)"),
        ('[{"table": "T"}]', "invalid at [0].reason: Field required"),
        ('[{"table": "T", "reason": ""}]', "invalid at [0].reason"),
        ('[{"table": "T", "reason": "r"}, {"kind": "scans", "reason": "r"}]', "invalid at [1].kind"),
        ('[{"table": "T", "reason": "r", "tabel": "x"}]', "invalid at [0].tabel: Extra inputs are not permitted"),
        ('[{"table": "T", "until": "next week", "reason": "r"}]', "invalid at [0].until"),
        ('[{"reason": "everything"}]', "at least one of table, kind, principal or key"),
    ],
)
def test_invalid_rules_are_configuration_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        parse_suppress_rules(text)


# ---------------------------------------------------------------------------------------------------- reconcile


def test_sightings_of_one_id_in_several_windows_merge() -> None:
    a = scan(Severity.LOW, at=0)
    b = scan(Severity.HIGH, at=900)
    c = scan(Severity.MEDIUM, at=1800)
    merged = merge_sightings([a, b, c])
    assert list(merged) == [a.id]
    m = merged[a.id]
    assert m.severity is Severity.HIGH
    assert (m.first_seen, m.last_seen) == (a.first_seen, c.last_seen)


def test_reconcile_over_tables_and_ids_stable() -> None:
    now = T0 + timedelta(hours=6)
    seen_again = opened(scan(principal=ALICE, at=0))
    stale_evaluated = opened(scan(principal=CLEANER, at=0))
    stale_elsewhere = opened(scan(table="Orders", at=0))
    brand_new = scan(table="Catalog", at=5 * HOUR)
    previous = {s.id: s for s in (seen_again, stale_evaluated, stale_elsewhere)}

    rec = reconcile(
        previous,
        [scan(principal=ALICE, at=5 * HOUR), brand_new],
        now,
        (),
        4 * HOUR,
        {SESSIONS: T0 + timedelta(hours=5, minutes=15), ("111122223333", "us-east-1", "Catalog"): now},
    )

    states = rec.states
    assert set(states) == {seen_again.id, stale_evaluated.id, brand_new.id}  # Orders was not evaluated
    assert states[seen_again.id].status is FindingStatus.ONGOING
    assert states[stale_evaluated.id].status is FindingStatus.RESOLVED
    assert states[brand_new.id].status is FindingStatus.NEW
    assert [c.id for c in rec.changes] == sorted(states)
    assert {(e.kind, e.finding.id) for e in rec.events} == {
        (EventKind.RESOLVED, stale_evaluated.id),
        (EventKind.NEW, brand_new.id),
    }
    assert rec.count(EventKind.NEW) == 1 and rec.count(EventKind.WORSENED) == 0
    # The id never changes through the lifecycle: the state, its finding and its events all carry it.
    for change in rec.changes:
        assert change.state.id == change.state.finding.id == (change.previous or change.state).id


def test_state_round_trips_through_json() -> None:
    state = opened(scan(Severity.HIGH))
    again = FindingState.model_validate_json(state.model_dump_json())
    assert again == state


def test_sightings_are_kept_to_the_second_as_stored() -> None:
    # Detectors give sub-second times; the stored JSON keeps seconds. A replay must compare equal to the store.
    f = scan(at=0.75, span=600.5)
    (merged,) = merge_sightings([f]).values()
    assert merged.first_seen == T0 and merged.last_seen == T0 + timedelta(seconds=601)
    change = step(None, merged, now=T0 + timedelta(hours=1))
    assert change is not None
    stored = FindingState.model_validate_json(change.state.model_dump_json())
    resolved = step(stored, None, now=T0 + timedelta(hours=6), horizon=T0 + timedelta(hours=6))
    assert resolved is not None
    replay = merge_sightings([f])[f.id]
    assert (
        step(FindingState.model_validate_json(resolved.state.model_dump_json()), replay, now=T0 + timedelta(hours=7))
        is None
    )

"""The evaluator's stored findings state their evidence for the week (moto server): the counts and shares of every
window evaluated so far, a late window evaluated again included once, as analyze-trail states them for the same
records (its input's)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config

from auditor.config import AnalysisConfig
from auditor.engine import analyze_trail, hot_key_id, key_request_counts, window_keys
from auditor.models.finding import FindingKind
from auditor.report.model import IsoWeek
from auditor.service.ingest import process_trail_object
from auditor.service.weekly_report import load_key_requests, week_totals
from auditor.state.findings_store import FindingsStore
from auditor.state.window_store import SightingStore, WindowStore
from tests.factories import planted_workload, write_trail
from tests.moto_server import client
from tests.service.test_late_contributions import (
    BUCKET,
    FIRST_RUN,
    NEXT_RUN,
    RETRY,
    T0,
    TABLE,
    _evaluator,
    _key,
    env,
    trail,
)

__all__ = ["env", "trail"]  # the fixtures, shared with the late-contribution tests

#: Evidence counts and shares compared with analyze-trail's, by kind (a hot key's requests are a heavy-hitter
#: estimate merged in another order: within 0.1 %).
COMPARED = {
    FindingKind.HOT_KEY: ("requests", "key_requests", "share", "writes", "reads"),
    FindingKind.SCAN: ("count", "pages", "logical_scans", "estimated_read_units"),
    FindingKind.THROTTLING: ("read_throttle_events", "write_throttle_events"),
}


def _stored(ddb: Any) -> dict[str, dict[str, Any]]:
    """The stored findings' evidence as the service's outputs state it for the week (the weekly report's
    :func:`week_totals`), a hot key's share of its table's key-identified requests in every window of the week."""
    states = FindingsStore(ddb, TABLE).week_findings(T0)
    week = IsoWeek.of(T0)
    keyed = load_key_requests(SightingStore(ddb, TABLE), states, week)
    return {s.id: week_totals(s, week, keyed).finding.evidence for s in states if s.finding.kind in COMPARED}


def _assert_evidence_as_analyze_trail(ddb: Any, paths: list[Path]) -> None:
    analysis = analyze_trail([str(p) for p in paths], AnalysisConfig(), processes=1)
    found = analysis.findings
    expected = {f.id: f for f in found if f.kind in COMPARED}
    # every table's key-identified requests kept by the evaluated windows: each window once (a late window evaluated
    # again replaced its count), exactly the input's
    bases: dict[Any, dict[str, int]] = {}
    for window in analysis.aggregates.windows.values():
        into = bases.setdefault((window.account, window.region, window.table), {})
        for space, n in key_request_counts(window).items():
            into[space] = into.get(space, 0) + n
    states = FindingsStore(ddb, TABLE).week_findings(T0)
    kept = _keyed(ddb, states)
    assert kept and {t: dict(kept[t].bases) for t in kept} == {t: bases[t] for t in kept}
    # and each window's top keys, once (a late window evaluated again replaced its item); the heavy-hitter counts are
    # merged in another order, so the heaviest key is compared, and each space's key-identified requests
    for t in kept:
        ours = [w for w in analysis.aggregates.windows.values() if (w.account, w.region, w.table) == t]
        want = [window_keys(w) for w in sorted(ours, key=lambda w: w.window_start)]
        got = [spaces or {} for spaces, _ in kept[t].windows]
        assert [{s: (k.requests, next(iter(k.top))) for s, k in w.items()} for w in got] == [
            {s: (k.requests, next(iter(k.top))) for s, k in w.items()} for w in want
        ]
    stored = _stored(ddb)
    assert set(stored) == set(expected)
    for fid, f in expected.items():
        for field in COMPARED[f.kind]:
            got, want = stored[fid].get(field), f.evidence.get(field)
            if f.kind is FindingKind.HOT_KEY and isinstance(want, int):
                assert isinstance(got, int) and abs(got - want) <= max(2, want // 1000), (f.kind, field)
            elif f.kind is FindingKind.HOT_KEY and isinstance(want, float):
                assert isinstance(got, float) and abs(got - want) <= 0.001, (f.kind, field)
            else:
                assert got == want, (f.kind, field, got, want)


def _keyed(ddb: Any, states: list[Any]) -> Any:
    return load_key_requests(SightingStore(ddb, TABLE), states, IsoWeek.of(T0))


def test_stored_evidence_is_the_weeks_late_windows_included_once(env: tuple[Any, Any, str], trail: list[Path]) -> None:
    s3, ddb, endpoint = env
    ingest_s3 = client("s3", endpoint, Config(retries={"mode": "standard", "max_attempts": 1}))
    store = WindowStore(ddb, TABLE)
    keys = [_key(p) for p in trail]
    for path, key in zip(trail, keys, strict=True):
        s3.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
    process_trail_object(ingest_s3, store, BUCKET, keys[0], AnalysisConfig(), T0)
    process_trail_object(ingest_s3, store, BUCKET, keys[2], AnalysisConfig(), T0)
    evaluate = _evaluator(ddb, client("sns", endpoint))
    assert evaluate(FIRST_RUN).cursor_advanced
    _assert_evidence_as_analyze_trail(ddb, [trail[0], trail[2]])  # the files the evaluated window had

    late = process_trail_object(ingest_s3, store, BUCKET, keys[1], AnalysisConfig(), RETRY)
    assert late.late == late.windows > 0
    assert evaluate(NEXT_RUN).late_windows == late.late
    _assert_evidence_as_analyze_trail(ddb, trail)  # the late file's records counted once
    evaluate(NEXT_RUN + timedelta(minutes=15))  # an evaluation with nothing new changes nothing
    _assert_evidence_as_analyze_trail(ddb, trail)


def test_stored_evidence_sums_every_window_of_the_week(
    env: tuple[Any, Any, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Two windows evaluated in one run: the stored evidence is both windows', not the later one's."""
    s3, ddb, endpoint = env
    out = tmp_path_factory.mktemp("two-windows")
    paths = write_trail(planted_workload(T0, hours=0.5, seed=5), out, duplicates=0)
    logs = [p for p in paths if "CloudTrail-Digest" not in p.parts]
    store = WindowStore(ddb, TABLE)
    for path in logs:
        s3.put_object(Bucket=BUCKET, Key=_key(path), Body=path.read_bytes())
        process_trail_object(s3, store, BUCKET, _key(path), AnalysisConfig(), T0 + timedelta(minutes=40))
    evaluate = _evaluator(ddb, client("sns", endpoint))
    assert len(evaluate(FIRST_RUN + timedelta(minutes=15)).window_starts) >= 2
    _assert_evidence_as_analyze_trail(ddb, logs)
    states = FindingsStore(ddb, TABLE).week_findings(T0)
    totals = [s.finding.totals for s in states if s.finding.kind in COMPARED]
    assert any(t is not None and t.windows >= 2 for t in totals)  # a finding of both windows, stated for both
    # a key hot in some of the windows only: its share is of every window's key-identified requests (the period's),
    # as analyze-trail's, and its sentence says so
    stated = {s.id: s.finding for s in (week_totals(s, IsoWeek.of(T0), _keyed(ddb, states)) for s in states)}
    partly = [f for f in stated.values() if f.kind is FindingKind.HOT_KEY and f.totals and f.totals.windows == 1]
    assert partly
    for f in partly:
        assert f.totals is not None and f.totals.share_base == f.evidence["key_requests"] > f.totals.count
        assert "share" not in f.evidence.get("sub_periods", {}) and " requests in the week." in f.summary
    # its requests are its own in both windows (hot in one, among the window's top keys below the threshold in the
    # other), the same in the evaluator's week and analyze-trail's input: one function states both
    analysis = analyze_trail([str(p) for p in logs], AnalysisConfig(), processes=1)
    theirs = {f.id: f for f in analysis.findings}
    hot_windows = {s.id: s.totals_for(IsoWeek.of(T0).label) for s in states}
    for f in partly:
        key, space = hot_key_id(f), f.index or ""
        windows = [w for w in analysis.aggregates.windows.values() if w.table == f.table]
        counts = [window_keys(w)[space].top.get(key or "", (0, 0))[0] for w in windows if space in window_keys(w)]
        seen = hot_windows[f.id]
        assert seen is not None and len([n for n in counts if n]) == 2 and seen.count < sum(counts)
        assert f.evidence["requests"] == sum(counts) == f.totals.count and "lower_bound" not in f.evidence
        assert "requests" not in f.evidence.get("sub_periods", {})
        for field in ("requests", "reads", "writes", "share", "key_requests"):
            assert f.evidence[field] == theirs[f.id].evidence[field], field

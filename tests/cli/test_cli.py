"""End-to-end tests of ``ddb-audit analyze-trail`` and the engine, on generated CloudTrail files."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from auditor.cli import main
from auditor.config import AnalysisConfig
from auditor.engine import access_patterns, analyze_trail, evaluate, ingest_source, new_aggregate_set, period_totals
from auditor.kernel.inputs import discover
from auditor.kernel.reader import Deduper
from auditor.kernel.stats import IngestStats
from auditor.models.finding import REQUIRED_EVIDENCE, Finding, FindingKind
from tests.factories import planted_workload, write_log_file, write_trail

PATTERN_FIELDS = {
    "account",
    "region",
    "table",
    "index",
    "operation",
    "key_template",
    "requests",
    "share",
    "efficient",
    "errors",
}
START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return planted_workload(START, hours=0.5, seed=11)


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory, records: list[dict]) -> Path:
    out = tmp_path_factory.mktemp("trail")
    write_trail(records, out, seed=11)
    return out


def run_cli(
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    stdin: bytes | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _kinds(findings: list[dict]) -> set[tuple[str, str]]:
    return {(f["table"], f["kind"]) for f in findings}


def test_json_output_matches_the_contract(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["analyze-trail", str(trail), "--format", "json"], capsys)
    assert code == 0, err
    doc = orjson.loads(out)
    assert set(doc) == {"findings", "access_patterns", "stats", "summary"}
    assert set(doc["stats"]) == {
        "files_read",
        "files_failed",
        "records_read",
        "records_skipped",
        "data_events",
        "duplicates_dropped",
    }
    stats = doc["stats"]
    assert stats["files_failed"] == 0 and stats["records_skipped"] == 0
    assert stats["duplicates_dropped"] > 0  # the generator repeats some events across files
    assert stats["records_read"] == stats["data_events"] + stats["duplicates_dropped"]
    for f in doc["findings"]:
        Finding.model_validate(f)  # exactly the SPEC shape, no extra fields
        assert set(REQUIRED_EVIDENCE[FindingKind(f["kind"])]) <= set(f["evidence"])
        assert f["first_seen"].endswith("Z") and f["last_seen"].endswith("Z")
    for p in doc["access_patterns"]:
        assert set(p) == {*PATTERN_FIELDS, "items"}
    # Planted problems are found; the healthy table stays clean.
    kinds = _kinds(doc["findings"])
    assert {
        ("Sessions", "scan"),
        ("Catalog", "scan"),
        ("Jobs", "low_cardinality_key"),
        ("Documents", "item_size_exceeded"),
        ("Orders", "hot_key"),
        ("Orders", "throttling"),
    } <= kinds
    assert not [f for f in doc["findings"] if f["table"] == "Users"]
    scans = {f["evidence"]["principal"]: f for f in doc["findings"] if f["kind"] == "scan"}
    assert scans["arn:aws:iam::111122223333:role/session-cleaner"]["severity"] == "high"
    assert scans["arn:aws:iam::111122223333:user/alice"]["severity"] in ("low", "info")
    catalog_full = [p for p in doc["access_patterns"] if p["table"] == "Catalog" and not p["efficient"]]
    assert catalog_full and catalog_full[0]["operation"] == "ExecuteStatement:SELECT"


def test_ids_are_stable_across_runs(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, first, _ = run_cli(["analyze-trail", str(trail), "--format", "json"], capsys)
    _, second, _ = run_cli(["analyze-trail", str(trail), "--format", "json"], capsys)
    assert orjson.loads(first) == orjson.loads(second)


def _split_and_merge(tmp_path: Path, records: list[dict], cfg: AnalysisConfig) -> tuple[list, list, object]:
    unique = list({r["eventID"]: r for r in records}.values())
    one = tmp_path / "one.json.gz"
    write_log_file(unique, one)
    parts = [unique[i::3] for i in range(3)]
    paths = []
    for i, part in enumerate(parts):
        p = tmp_path / f"part{i}.json.gz"
        write_log_file(part, p)
        paths.append(p)
    single = analyze_trail([str(one)], cfg)

    merged = new_aggregate_set(cfg)
    stats = IngestStats()
    for src in discover([str(p) for p in reversed(paths)]):
        part_aggs = ingest_source(src, cfg, Deduper(), stats)
        assert part_aggs is not None
        merged.merge(part_aggs)
    spans = merged.spans()
    findings, errors = evaluate(spans, cfg)
    findings = period_totals(findings, merged, cfg)
    assert not errors
    assert access_patterns(spans) == single.access_patterns
    return findings, single.findings, single


def test_files_separately_merged_give_the_same_findings_as_one_pass(tmp_path: Path, records: list[dict]) -> None:
    """In the sketches' exact regime, merged per-file aggregates give exactly the one-pass findings."""
    merged, single, _ = _split_and_merge(tmp_path, records, AnalysisConfig(sketch_capacity=4096))
    assert [f.model_dump(mode="json") for f in merged] == [f.model_dump(mode="json") for f in single]


def test_merge_keeps_the_same_findings_when_sketches_are_lossy(tmp_path: Path, records: list[dict]) -> None:
    """With small sketches counts become lower bounds, but the same problems are found with the same ids."""
    merged, single, _ = _split_and_merge(tmp_path, records, AnalysisConfig(sketch_capacity=16))
    assert [(f.id, f.kind, f.severity) for f in merged] == [(f.id, f.kind, f.severity) for f in single]


def test_table_and_markdown_formats(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["analyze-trail", str(trail)], capsys)
    assert code == 0
    assert out.startswith("Findings\n") and "SEVERITY" in out and "Access patterns" in out and "Fix:" in out
    code, md, _ = run_cli(["analyze-trail", str(trail), "--format", "markdown"], capsys)
    assert code == 0
    assert md.startswith("# DynamoDB traffic audit") and "| Severity | Kind | Table | Finding |" in md


def test_fail_on(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["analyze-trail", str(trail), "--format", "json", "--fail-on", "high"], capsys)
    assert code == 1 and orjson.loads(out)["findings"]  # output is still complete
    code, _, _ = run_cli(["analyze-trail", str(trail), "--format", "json", "--fail-on", "critical"], capsys)
    assert code == (1 if any(f["severity"] == "critical" for f in orjson.loads(out)["findings"]) else 0)


def test_stdin_and_eventbridge_input(
    records: list[dict], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sample = [r for r in records if r["eventName"] == "Scan"][:30]
    body = gzip.compress(orjson.dumps({"Records": sample}))
    code, out, _ = run_cli(["analyze-trail", "-", "--format", "json"], capsys, stdin=body, monkeypatch=monkeypatch)
    assert code == 0
    assert orjson.loads(out)["stats"]["data_events"] == 30
    events = [
        {
            "version": "0",
            "id": f"id-{i}",
            "detail-type": "AWS API Call via CloudTrail",
            "source": "aws.dynamodb",
            "time": r["eventTime"],
            "region": "us-east-1",
            "resources": [],
            "detail": r,
        }
        for i, r in enumerate(sample)
    ]
    lines = tmp_path / "events.jsonl"
    lines.write_bytes(b"\n".join(orjson.dumps(e) for e in events) + b"\n")
    array = tmp_path / "events.json"
    array.write_bytes(orjson.dumps(events))
    for path in (lines, array):
        code, out, _ = run_cli(["analyze-trail", str(path), "--format", "json"], capsys)
        assert code == 0
        assert orjson.loads(out)["stats"]["data_events"] == 30


def test_bad_files_are_counted_and_the_rest_still_runs(
    tmp_path: Path, records: list[dict], capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json.gz"
    write_log_file(records[:500], good)
    full = gzip.compress(orjson.dumps({"Records": records[500:1500]}))
    (tmp_path / "truncated.json.gz").write_bytes(full[: len(full) // 2])
    (tmp_path / "notjson.json").write_bytes(b"this is not json")
    (tmp_path / "norecords.json").write_bytes(b'{"foo": []}')
    bad_records = [*records[1500:1510], 42, {"eventSource": "dynamodb.amazonaws.com"}, "x"]
    (tmp_path / "mixed.json").write_bytes(orjson.dumps({"Records": bad_records}))
    code, out, err = run_cli(["analyze-trail", str(tmp_path), "--format", "json"], capsys)
    assert code == 0
    stats = orjson.loads(out)["stats"]
    assert stats["files_failed"] == 3
    assert stats["files_read"] == 2
    assert stats["records_skipped"] == 3
    # Nothing partial from the truncated file: only good.json.gz and the 10 valid records of mixed.json count.
    assert stats["data_events"] == 510
    assert "Traceback" not in err
    assert "truncated.json.gz" in err and "notjson.json" in err and "record 11" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze-trail", "/nonexistent/x.json.gz"], "no such file"),
        (["analyze-trail", "--format", "xml", "x"], "invalid choice"),
        (["nope"], "invalid choice"),
    ],
)
def test_usage_and_input_errors_exit_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = None
    try:
        code = main(args)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 3


def test_nothing_readable_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.json.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    code, out, err = run_cli(["analyze-trail", str(tmp_path / "bad.json.gz"), "--format", "json"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("ddb-audit: error: nothing could be read:") and "bad.json.gz" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run_cli(["analyze-trail", str(empty)], capsys)
    assert code == 2 and out == "" and "no CloudTrail log files" in err


def test_config_file(tmp_path: Path, trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text('{"detectors": {"scan": {"allow_principals": ["arn:aws:iam::111122223333:role/session-*"]}}}')
    code, out, _ = run_cli(["analyze-trail", str(trail), "--format", "json", "--config", str(cfg)], capsys)
    assert code == 0
    principals = {f["evidence"]["principal"] for f in orjson.loads(out)["findings"] if f["kind"] == "scan"}
    assert "arn:aws:iam::111122223333:role/session-cleaner" not in principals
    assert "arn:aws:iam::111122223333:user/alice" in principals
    for body, msg in [
        ("{", "not valid JSON"),
        ('{"detectors": {"nope": {}}}', "unknown detector"),
        ('{"detectors": {"scan": {"bogus": 1}}}', "Extra inputs"),
        ('{"window_seconds": 5}', "window"),
    ]:
        cfg.write_text(body)
        code, out, err = run_cli(["analyze-trail", str(trail), "--config", str(cfg)], capsys)
        assert code == 2 and out == "" and msg in err, (body, err)


def test_python_dash_m_entry_point(trail: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "analyze-trail", str(trail), "--format", "json"],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout)["findings"]


def test_item_size_command(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    items = [
        {"shirt-color": {"S": "R"}, "shirt-size": {"S": "M"}},
        {"pk": {"S": "DOC#7"}, "body": {"S": "x" * 300_000}},
        {"n": {"N": "12345"}},
    ]
    path = tmp_path / "items.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(i) for i in items))
    code, out, _ = run_cli(["item-size", str(path), "--format", "json"], capsys)
    assert code == 0
    doc = orjson.loads(out)
    assert [r["size_bytes"] for r in doc] == [23, 2 + 5 + 4 + 300_000, 1 + 4]
    assert doc[1] == {"size_bytes": 300_011, "limit_bytes": 409600, "percent_of_limit": 73.24}
    code, out, _ = run_cli(
        ["item-size", "--format", "json"], capsys, stdin=orjson.dumps(items), monkeypatch=monkeypatch
    )
    assert code == 0 and [r["size_bytes"] for r in orjson.loads(out)] == [23, 300_011, 5]
    code, out, _ = run_cli(["item-size", str(path)], capsys)
    assert code == 0 and "73.24%" in out


def test_item_size_bad_input_prints_nothing_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "items.json"
    path.write_bytes(orjson.dumps([{"a": {"S": "ok"}}, {"b": {"B": "not base64!"}}]))
    code, out, err = run_cli(["item-size", str(path), "--format", "json"], capsys)
    assert code == 2 and out == ""
    assert "item 2" in err and "Traceback" not in err
    code, out, err = run_cli(["item-size", str(tmp_path / "missing.json")], capsys)
    assert code == 2 and out == "" and "missing.json" in err

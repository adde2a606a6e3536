"""Hostile input to the CLI: a bad input is one line on stderr and exit 2; a hostile value inside good input (a key
nested hundreds of levels deep) is handled and the run reports the rest. Never an internal error (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor import cli
from tests.whatif.test_whatif import _record

TRACE_HEADER = "timestamp,index,consumed_read,provisioned_read,throttled_read,consumed_write,provisioned_write,"
TRACE_HEADER += "throttled_write\n"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_input_error(code: int, err: str) -> None:
    assert code == cli.EXIT_INPUT, err
    assert err.count("\n") == 1 and err.startswith("ddb-audit: error: "), err


@pytest.fixture
def trail(tmp_path: Path) -> Path:
    path = tmp_path / "trail.json"
    records = [_record(n, n * 2.0, "Orders", "GetItem", {"pk": {"S": f"K{n % 3}"}}) for n in range(10)]
    path.write_bytes(orjson.dumps({"Records": records}))
    return path


@pytest.mark.parametrize("evidence", [["a", "b"], "text", 7])
def test_what_if_audit_finding_evidence_not_an_object(
    tmp_path: Path, trail: Path, capsys: pytest.CaptureFixture[str], evidence: Any
) -> None:
    audit = tmp_path / "audit.json"
    finding = {"kind": "hot_key", "table": "Orders", "evidence": evidence}
    audit.write_bytes(orjson.dumps({"tables": [], "findings": [finding]}))
    code, out, err = _run(["what-if", str(trail), "--audit", str(audit)], capsys)
    _one_line_input_error(code, err)
    assert out == "" and "findings[0].evidence must be an object" in err


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("2026-11-01T00:00:00Z,,nan,10,,1,10,\n", "not a finite number"),
        ("2026-11-01T00:00:00Z,,1,inf,,1,10,\n", "not a finite number"),
        ("2026-11-01T00:00:00Z,,-1,10,,1,10,\n", "negative"),
        ("9999-12-31T23:59:00Z,,1,10,,1,10,\n", "years 1970 to 2999"),
        ("0001-01-01T00:00:00Z,,1,10,,1,10,\n", "years 1970 to 2999"),
        ("2026-11-01T00:00:00+14:00,,1,10,,1,10,\n", "whole minute in UTC"),
        ("2026-11-01T00:00:30Z,,1,10,,1,10,\n", "whole minute in UTC"),
    ],
)
def test_report_trace_bad_values(tmp_path: Path, capsys: pytest.CaptureFixture[str], row: str, message: str) -> None:
    findings = tmp_path / "findings.json"
    findings.write_text('{"findings": []}')
    trace = tmp_path / "Orders.csv"
    trace.write_text(TRACE_HEADER + row)
    code, out, err = _run(
        ["report", "--findings", str(findings), "--out", str(tmp_path / "r"), "--trace", str(trace)], capsys
    )
    _one_line_input_error(code, err)
    assert out == "" and f"{trace}:2" in err and message in err


_ATHENA = ["athena", "--bucket", "trail-bucket", "--accounts", "111122223333", "--regions", "us-east-1"]


@pytest.mark.parametrize(
    ("times", "message"),
    [
        (["--end", "0001-01-01T00:00:00Z"], "years 1970 to 2999"),
        (["--end", "9999-12-31T23:59:59Z"], "years 1970 to 2999"),
        (["--start", "0001-01-01T00:00:00Z", "--end", "2026-01-01T00:00:00Z"], "years 1970 to 2999"),
        (["--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T10:00:00+14:00"], "--start must be before --end"),
        (["--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:00:00Z"], "--start must be before --end"),
        (["--start", "2020-01-01T00:00:00Z", "--end", "2026-01-01T00:00:00Z"], "at most 400 days"),
        (["--end", "yesterday"], "not an ISO 8601 time"),
        # --start computed from --hours before --end
        (["--end", "1970-01-01T05:00:00Z"], "years 1970 to 2999"),
        (["--end", "1970-01-02T00:00:00Z", "--hours", "9600"], "years 1970 to 2999"),
        # --end defaults to now
        (["--start", "1970-01-01T00:00:00Z"], "at most 400 days"),
        (["--start", "2999-12-31T00:00:00Z"], "--start must be before --end"),
        (["--hours", "9601"], "--hours must be more than 0 and at most 9600"),
        (["--hours", "nan"], "--hours must be more than 0 and at most 9600"),
        (["--hours", "0"], "--hours must be more than 0 and at most 9600"),
    ],
)
def test_athena_time_range_is_checked_before_any_aws_call(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], times: list[str], message: str
) -> None:
    import boto3

    def no_aws(*args: object, **kwargs: object) -> None:
        raise AssertionError("an AWS session was created before the time range was checked")

    monkeypatch.setattr(boto3, "Session", no_aws)
    code, out, err = _run([*_ATHENA, *times], capsys)
    _one_line_input_error(code, err)
    assert out == "" and message in err


def _nested(depth: int, shape: str) -> Any:
    value: Any = {"S": "x"}
    for _ in range(depth):
        value = [value] if shape == "list" else {"M": {"a": value}}
    return value


@pytest.mark.parametrize(("depth", "shape"), [(40, "list"), (250, "list"), (125, "dict"), (300, "dict")])
@pytest.mark.parametrize("fmt", ["json", "sarif", "table"])
def test_a_deeply_nested_key_of_throttled_calls_is_one_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int, shape: str, fmt: str
) -> None:
    records = [_record(n, n * 2.0, "Orders", "GetItem", {"pk": {"S": f"K{n % 3}"}}) for n in range(10)]
    for n in range(100, 130):
        throttled = _record(n, 5.0 + n / 100, "Orders", "PutItem", {"pk": _nested(depth, shape)})
        throttled["errorCode"] = "ProvisionedThroughputExceededException"
        throttled["errorMessage"] = "The level of configured provisioned throughput for the table was exceeded."
        records.append(throttled)
    trail = tmp_path / "trail.json"
    trail.write_text(json.dumps({"Records": records}))  # orjson does not write nesting this deep
    code, out, err = _run(["analyze-trail", str(trail), "--format", fmt], capsys)
    assert code == cli.EXIT_OK, err
    if fmt == "json":
        doc = orjson.loads(out)
        assert doc["stats"]["records_read"] == 40 and doc["stats"]["records_skipped"] == 0
        throttling = [f for f in doc["findings"] if f["kind"] == "throttling"]
        assert throttling and "not a key value" in out
    elif fmt == "table":
        assert "Throttling on Orders" in out and "records_read=40" in out


@pytest.mark.parametrize(("depth", "shape"), [(300, "dict"), (600, "list")])
def test_a_deeply_nested_key_of_a_write_rejected_as_too_large_is_counted_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int, shape: str
) -> None:
    records = [_record(n, n * 2.0, "Orders", "GetItem", {"pk": {"S": f"K{n % 3}"}}) for n in range(10)]
    for n in range(100, 105):
        rejected = _record(n, 5.0 + n / 100, "Orders", "PutItem", {"pk": _nested(depth, shape)})
        rejected["errorCode"] = "ValidationException"
        rejected["errorMessage"] = "Item size has exceeded the maximum allowed size"
        records.append(rejected)
    trail = tmp_path / "trail.json"
    trail.write_text(json.dumps({"Records": records}))  # orjson does not write nesting this deep
    code, out, err = _run(["analyze-trail", str(trail), "--format", "json"], capsys)
    assert code == cli.EXIT_OK, err
    doc = orjson.loads(out)
    assert doc["stats"]["records_read"] == 15 and doc["stats"]["data_events"] == 15
    assert any(f["kind"] == "item_size_exceeded" for f in doc["findings"])


@pytest.mark.parametrize("account", ["12x", "1234567890123", "١٢٣٤٥٦٧٨٩٠١٢", ""])
def test_a_bad_asff_account_is_refused_before_any_work(
    trail: Path, account: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["analyze-trail", str(trail), "--format", "asff", "--account", account])
    assert exited.value.code == cli.EXIT_INPUT
    _, err = capsys.readouterr()
    assert "--account must be a 12-digit AWS account id" in err


def test_findings_asff_cannot_carry_are_each_one_warning_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A throttled table in a record whose account is not an AWS account id: the finding is left out, and said so.
    path = tmp_path / "trail.json"
    records = [_record(n, n * 0.01, "Orders", "PutItem", {"pk": {"S": "HOT"}}) for n in range(400)]
    for record in records:
        record["recipientAccountId"] = "not-an-account"
        record["errorCode"] = "ProvisionedThroughputExceededException"
        record["errorMessage"] = "The level of configured provisioned throughput for the table was exceeded."
    path.write_bytes(orjson.dumps({"Records": records}))
    code, out, err = _run(["analyze-trail", str(path), "--format", "asff", "--account", "111122223333"], capsys)
    assert code in (cli.EXIT_OK, cli.EXIT_FINDINGS), err
    findings = json.loads(out)["Findings"]
    assert all(f["AwsAccountId"].isascii() and f["AwsAccountId"].isdigit() for f in findings)
    warnings = [line for line in err.splitlines() if line.startswith("ddb-audit: warning:")]
    assert warnings and all("'not-an-account' is not a 12-digit AWS account id" in line for line in warnings)


def _commands_with_mutelist() -> set[str]:
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    assert isinstance(sub.choices, dict)
    return {name for name, p in sub.choices.items() if any("--mutelist" in a.option_strings for a in p._actions)}


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze-trail", "{missing}"],  # the trail does not exist either: the mute list is reported first
        _ATHENA,
        ["audit", "--tables", "Orders"],
        ["billing", "--input", "{missing}"],
        ["demo", "--out", "{tmp}"],
    ],
)
def test_a_bad_mute_list_is_refused_before_any_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    import boto3

    def no_aws(*args: object, **kwargs: object) -> None:
        raise AssertionError("an AWS session was created before the mute list was read")

    monkeypatch.setattr(boto3, "Session", no_aws)
    mutelist = tmp_path / "mute.json"
    mutelist.write_text('[{"kind": "nope"}]')
    args = [a.format(missing=tmp_path / "missing.json", tmp=tmp_path / "out") for a in argv]
    code, out, err = _run([*args, "--mutelist", str(mutelist)], capsys)
    _one_line_input_error(code, err)
    assert out == "" and f"{mutelist}: mute list rule[0].kind" in err
    assert not (tmp_path / "out").exists()


def test_every_command_that_takes_a_mute_list_is_covered() -> None:
    assert _commands_with_mutelist() == {"analyze-trail", "athena", "audit", "billing", "demo"}


def test_a_missing_mute_list_is_reported_before_the_trail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["analyze-trail", str(tmp_path / "t.json"), "--mutelist", str(tmp_path / "m.json")], capsys)
    _one_line_input_error(code, err)
    assert out == "" and "m.json: cannot read the mute list" in err


def test_a_mute_list_with_a_utf8_byte_order_mark_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trail = tmp_path / "trail.json"
    records = [_record(n, n * 0.01, "Orders", "PutItem", {"pk": {"S": "HOT"}}) for n in range(400)]
    for record in records:
        record["errorCode"] = "ProvisionedThroughputExceededException"
    trail.write_bytes(orjson.dumps({"Records": records}))
    code, out, _ = _run(["analyze-trail", str(trail), "--format", "json"], capsys)
    findings = orjson.loads(out)["findings"]
    assert code == 0 and findings
    mutelist = tmp_path / "mute.json"
    mutelist.write_bytes(b"\xef\xbb\xbf" + orjson.dumps([{"table": "Orders", "reason": "accepted"}]))
    code, out, err = _run(["analyze-trail", str(trail), "--format", "json", "--mutelist", str(mutelist)], capsys)
    doc = orjson.loads(out)
    assert code == 0 and err == "" and doc["findings"] == []
    assert {m["id"] for m in doc["muted"]} == {f["id"] for f in findings}
    assert all(m["muted_by"]["reason"] == "accepted" for m in doc["muted"])

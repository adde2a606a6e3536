"""CLI habits (issue 32): ``--version``, ``--quiet``, ``--output`` for ``--format``, ``--asff-account`` (and the
deprecated ``--account``), ``--profile``/``--region``/``--pricing-region``, unknown ``--tables`` and expired mute
rules; the progress display has its own tests (test_progress.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor import cli
from auditor.cli import common
from tests.cli.test_cli_billing import steady_doc, write_input
from tests.cw_support import aws, create_table
from tests.factories import planted_workload, write_trail

START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
DEPRECATED = "ddb-audit: deprecated: --account is now --asff-account (the old name still works)"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # a usage error
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trail")
    write_trail(planted_workload(START, hours=0.5, seed=11), out, seed=11)
    return out


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"ddb-audit {version('ddb-traffic-auditor')}\n"


def test_version_without_the_installed_distribution_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import PackageNotFoundError

    def not_installed(name: str) -> str:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(common, "package_version", not_installed)
    assert common.tool_version() == "unknown"


@pytest.mark.parametrize("fmt", ["json", "markdown", "csv"])
def test_output_is_accepted_for_format(trail: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    by_format = _run(["analyze-trail", str(trail), "--format", fmt], capsys)
    by_output = _run(["analyze-trail", str(trail), "--output", fmt], capsys)
    assert by_output[0] == by_format[0] == 0
    if fmt == "json":  # the same findings (the stats and patterns too)
        assert json.loads(by_output[1]) == json.loads(by_format[1])
    else:
        assert by_output[1] == by_format[1]


def test_output_on_the_commands_with_their_own_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    item = tmp_path / "item.json"
    item.write_text('{"pk": {"S": "a"}}')
    code, out, _ = _run(["item-size", str(item), "--output", "json"], capsys)
    assert code == 0 and json.loads(out)[0]["size_bytes"] == 3
    code, out, err = _run(["item-size", str(item), "--output", "sarif"], capsys)  # the same choices as --format
    assert (code, out) == (2, "") and "invalid choice: 'sarif'" in err


def test_asff_account_and_its_deprecated_old_name(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = _run(["analyze-trail", str(trail), "--format", "asff", "--asff-account", "111122223333"], capsys)
    old = _run(["analyze-trail", str(trail), "--format", "asff", "--account", "111122223333"], capsys)
    assert new[0] == old[0] == 0
    assert DEPRECATED not in new[2]
    assert old[2].splitlines().count(DEPRECATED) == 1
    new_findings, old_findings = json.loads(new[1])["Findings"], json.loads(old[1])["Findings"]
    assert [f["Id"] for f in new_findings] == [f["Id"] for f in old_findings] != []
    assert {f["AwsAccountId"] for f in new_findings + old_findings} == {"111122223333"}
    # the old name is still checked when the command line is read, and is not listed by --help
    code, out, err = _run(["analyze-trail", str(trail), "--format", "asff", "--account", "12"], capsys)
    assert (code, out) == (2, "") and "--account: " in err
    with pytest.raises(SystemExit):
        cli.main(["analyze-trail", "--help"])
    help_text = capsys.readouterr().out
    assert "--asff-account" in help_text and "--account " not in help_text


def test_quiet_leaves_only_errors(tmp_path: Path, trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    loud = _run(["analyze-trail", str(trail), str(bad), "--format", "json"], capsys)
    assert "ddb-audit: warning: " in loud[2]
    for argv in (["--quiet", "analyze-trail"], ["-q", "analyze-trail"], ["analyze-trail", "--quiet"]):
        code, out, err = _run([*argv, str(trail), str(bad), "--format", "json"], capsys)
        assert (code, err) == (0, "")
        assert json.loads(out) == json.loads(loud[1])
    code, out, err = _run(["-q", "analyze-trail", str(tmp_path / "none.json")], capsys)
    assert (code, out) == (2, "") and err.startswith("ddb-audit: error: ") and err.count("\n") == 1


def _mute_list(tmp_path: Path, rules: list[dict[str, Any]]) -> str:
    path = tmp_path / "mute.json"
    path.write_text(json.dumps(rules))
    return str(path)


def test_expired_mute_rules_are_each_one_warning_line(
    trail: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = datetime.now(UTC)
    mutelist = _mute_list(
        tmp_path,
        [
            {"kind": "scan", "until": (now - timedelta(days=3)).isoformat(), "reason": "migration done"},
            {"table": "Orders*", "until": (now + timedelta(days=3)).isoformat()},
            {"table": "Old*", "kind": "hot_key", "until": "2026-01-31T00:00:00Z"},
        ],
    )
    code, out, err = _run(["analyze-trail", str(trail), "--format", "json", "--mutelist", mutelist], capsys)
    assert code == 0
    warnings = [line for line in err.splitlines() if "mute rule" in line]
    assert len(warnings) == 2, err
    assert warnings[0].startswith(f"ddb-audit: warning: {mutelist}: mute rule [0] (kind=scan) expired at ")
    assert warnings[1] == (
        f"ddb-audit: warning: {mutelist}: mute rule [2] (table=Old*, kind=hot_key) expired at 2026-01-31T00:00:00Z: "
        "it mutes nothing"
    )
    assert not any(m["kind"] == "scan" for m in json.loads(out)["muted"])  # the expired rule mutes nothing
    assert _run(["-q", "analyze-trail", str(trail), "--mutelist", mutelist], capsys)[2] == ""


# --- AWS options ----------------------------------------------------------------------------------------------


def _profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = "audit") -> None:
    (tmp_path / "config").write_text(f"[profile {name}]\nregion = us-east-1\n")
    (tmp_path / "credentials").write_text(f"[{name}]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))


def test_unknown_tables_are_an_input_error_before_the_audit(
    aws_reset: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from auditor.service import audit as audit_service

    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    create_table(aws("dynamodb", aws_reset), "Orders")
    audited: list[object] = []
    monkeypatch.setattr(audit_service, "run_audit", lambda *a, **k: audited.append(a))
    code, out, err = _run(["audit", "--tables", "Orders,NoSuchTable,Gone", "--format", "json"], capsys)
    assert (code, out, audited) == (2, "", [])
    assert err.splitlines() == ["ddb-audit: error: no such table: Gone, NoSuchTable"]


def test_unknown_tables_in_every_audited_account_are_an_input_error(
    aws_reset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    _profile(tmp_path, monkeypatch)
    create_table(aws("dynamodb", aws_reset), "Orders")
    argv = ["audit", "--profile", "audit", "--days", "0.1", "--billing-days", "0", "--idle-days", "0"]
    code, out, err = _run([*argv, "--tables", "Orders,NoSuchTable", "--format", "json"], capsys)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == "ddb-audit: error: no such table in any audited account and Region: NoSuchTable"
    code, out, err = _run([*argv, "--tables", "Orders", "--format", "json"], capsys)
    assert code == 0, err
    assert [t["table"] for t in json.loads(out)["tables"]] == ["Orders"]


def test_an_unknown_profile_is_an_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _profile(tmp_path, monkeypatch)
    path = str(write_input(tmp_path, steady_doc(days=1)))
    athena = ["athena", "--bucket", "trail-bucket", "--accounts", "111122223333", "--regions", "us-east-1"]
    for argv in (["billing", "--input", path], athena):
        code, out, err = _run([*argv, "--profile", "nope"], capsys)
        assert (code, out) == (2, ""), err
        assert err.startswith("ddb-audit: error: AWS credentials or configuration") and "nope" in err


class _FakePricing:
    """What billing takes from the standard chain's Pricing client: its settings (the call fails later)."""

    class meta:  # noqa: N801 - the boto3 attribute's name
        config = None


def test_billing_pricing_region_names_the_endpoint_and_region_the_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from botocore.exceptions import NoCredentialsError

    from auditor.sources import pricing_api

    asked: list[str] = []

    def no_credentials(api_region: str) -> Any:
        asked.append(api_region)
        raise NoCredentialsError()

    monkeypatch.setattr(pricing_api, "pricing_client", no_credentials)
    path = str(write_input(tmp_path, steady_doc(days=1)))
    code, out, _ = _run(["billing", "--input", path, "--format", "json", "--region", "eu-west-1"], capsys)
    assert code == 0 and asked == ["eu-central-1"]  # the endpoint nearest to the priced Region
    asked.clear()
    argv = ["billing", "--input", path, "--format", "json", "--region", "eu-west-1", "--pricing-region", "us-east-1"]
    code, out, err = _run(argv, capsys)
    assert code == 0 and asked == ["us-east-1"]
    assert orjson.loads(out)["billing"]["pricing"]["region"] == "eu-west-1"
    assert "the AWS Pricing API did not answer for eu-west-1" in err
    asked.clear()
    code, out, _ = _run(["billing", "--input", path, "--format", "json", "--pricing-region", "ap-south-1"], capsys)
    assert code == 0 and asked == ["ap-south-1"]
    assert orjson.loads(out)["billing"]["pricing"]["region"] == "us-east-1"  # the input's region


def test_billing_profile_asks_the_pricing_api_with_its_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import boto3

    from auditor.sources import pricing_api

    _profile(tmp_path, monkeypatch, "prices")
    monkeypatch.setattr(pricing_api, "pricing_client", lambda api_region: _FakePricing())
    made: list[tuple[str | None, str]] = []
    real_client = boto3.Session.client

    def client(self: boto3.Session, service: str, *args: Any, **kwargs: Any) -> Any:
        made.append((self.profile_name, service))
        return real_client(self, service, *args, **{**kwargs, "endpoint_url": "http://127.0.0.1:9"})

    monkeypatch.setattr(boto3.Session, "client", client)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    path = str(write_input(tmp_path, steady_doc(days=1)))
    code, out, err = _run(["billing", "--input", path, "--format", "json", "--profile", "prices"], capsys)
    assert code == 0, err
    assert made == [("prices", "pricing")]
    source = orjson.loads(out)["billing"]["pricing"]["source"]
    assert "the AWS Pricing API was not used (EndpointConnectionError" in source

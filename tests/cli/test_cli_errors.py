"""CLI errors a user can act on: credential/profile problems exit 2 with one line; internal errors print one
line with a short id, and only ``--debug`` logs the traceback, never with local variables."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from auditor import cli


def _boom(args: object) -> int:
    secret_record_text = "PK=CUSTOMER#4242 secret"  # a local variable that must never reach the output
    raise RuntimeError(f"bad state near {secret_record_text}")


@pytest.fixture
def crashing_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.COMMANDS, "item-size", _boom)


def test_internal_error_is_one_line_with_an_id(crashing_command: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["item-size", "-"]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert re.fullmatch(r"ddb-audit: internal error [0-9a-f]{8}: RuntimeError; run again with --debug.*\n", err)
    assert "CUSTOMER#4242" not in err


@pytest.mark.parametrize("argv", [["--debug", "item-size", "-"], ["item-size", "-", "--debug"]])
def test_debug_logs_the_traceback_without_locals(
    crashing_command: None, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert cli.main(argv) == cli.EXIT_INTERNAL
    lines = capsys.readouterr().err.strip().splitlines()
    event = orjson.loads(next(line for line in lines if line.startswith("{")))
    assert event["event"] == "internal_error"
    frames = event["exception"][0]["frames"]
    assert any(f["name"] == "_boom" for f in frames)
    assert all("locals" not in f for f in frames)
    assert "secret_record_text" not in "\n".join(lines)
    error_id = event["error_id"]
    assert lines[-1].startswith(f"ddb-audit: internal error {error_id}: RuntimeError")


def test_unknown_profile_is_an_input_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config").write_text("[profile real]\nregion = us-east-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_PROFILE", "does-not-exist")
    assert cli.main(["audit", "--region", "us-east-1"]) == cli.EXIT_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "does-not-exist" in err and err.startswith("ddb-audit: error: AWS credentials or configuration")


def test_missing_credentials_is_an_input_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    import boto3

    # boto3's default session caches the credentials it found first (earlier tests' environment): start afresh
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    assert cli.main(["audit", "--region", "us-east-1"]) == cli.EXIT_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "credentials" in err


def test_rejected_credentials_client_error_is_an_input_error() -> None:
    from botocore.exceptions import ClientError

    exc = ClientError({"Error": {"Code": "ExpiredToken", "Message": "The security token\nhas expired"}}, "ListTables")
    message = cli.environment_error(exc)
    assert message is not None and "ExpiredToken" in message and "\n" not in message
    other = ClientError({"Error": {"Code": "ValidationException", "Message": "x"}}, "Query")
    assert cli.environment_error(other) is None
    assert cli.environment_error(RuntimeError("x")) is None

"""The progress display (auditor.cli.progress): on stderr only when it is a terminal and ``--quiet`` is not given;
stdout keeps the same complete output either way."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path
from typing import Any

import pytest

from auditor import cli
from auditor.cli import common, progress
from auditor.kernel.inputs import discover
from tests.cli.test_cli_billing import steady_doc, write_input
from tests.cli.test_cli_habits import START, _profile
from tests.cw_support import aws, create_table
from tests.factories import planted_workload, write_trail


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trail")
    write_trail(planted_workload(START, hours=0.5, seed=11), out, seed=11)
    return out


def _terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stderr (pytest's capture, set only when the test runs) says it is a terminal."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


class _Recorder:
    """A bar that records what it is told."""

    def __init__(self) -> None:
        self.n = 0
        self.postfix: list[str] = []

    def update(self, n: float | None = 1) -> bool | None:
        self.n += int(n or 0)
        return None

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix.append(s)


def test_progress_only_on_a_terminal_and_never_with_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not progress.enabled()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert progress.enabled()
    monkeypatch.setattr(common, "_QUIET", [True])
    assert not progress.enabled()
    with progress.progress("work", total=3) as bar:
        bar.update(1)
    assert sys.stderr.getvalue() == ""


def test_analyze_trail_shows_its_files_on_a_terminal_and_stdout_is_unchanged(
    trail: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _terminal(monkeypatch)
    files = len(discover([str(trail)]))
    code, out, err = _run(["analyze-trail", str(trail), "--format", "json"], capsys)
    assert code == 0
    assert "\ranalyze-trail:   0%" in err and f"0/{files}" in err and " files" in err
    quiet = _run(["analyze-trail", str(trail), "--format", "json", "--quiet"], capsys)
    assert quiet[2] == "" and json.loads(quiet[1]) == json.loads(out)


def test_no_progress_when_stderr_is_not_a_terminal(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["analyze-trail", str(trail), "--format", "json"], capsys)
    assert code == 0 and err == ""


def test_progress_on_a_real_terminal_leaves_stdout_clean(trail: Path) -> None:
    controller, terminal_end = pty.openpty()
    fcntl.ioctl(terminal_end, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a new pty is 0 x 0
    shown: list[bytes] = []

    def read_terminal() -> None:
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's other end is closed: all read
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "auditor", "analyze-trail", str(trail), "--format", "json"],
            stdout=subprocess.PIPE,
            stderr=terminal_end,
            timeout=120,
            check=False,
        )
    finally:
        os.close(terminal_end)
        reader.join(timeout=10)
        os.close(controller)
    assert proc.returncode == 0
    assert "findings" in json.loads(proc.stdout)
    assert b"analyze-trail:" in b"".join(shown) and b" files" in b"".join(shown)


def test_count_calls_counts_each_aws_call_and_names_the_table(aws_reset: str) -> None:
    ddb = aws("dynamodb", aws_reset)
    create_table(ddb, "Orders")
    bar = _Recorder()
    progress.count_calls(ddb, bar)
    ddb.list_tables()
    ddb.describe_table(TableName="Orders")
    assert bar.n == 2
    assert bar.postfix == ["ListTables", "DescribeTable Orders"]


def test_counted_sources_count_each_file_once(trail: Path) -> None:
    bar = _Recorder()
    sources = progress.counted_sources(discover([str(trail)]), bar)
    for source in [*sources, *sources]:  # read again (shards that disagree): still one step per file
        source.open().close()
    assert bar.n == len(sources) > 0


def test_audit_shows_its_aws_calls(
    aws_reset: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    create_table(aws("dynamodb", aws_reset), "Orders")
    _terminal(monkeypatch)
    argv = ["audit", "--days", "0.1", "--billing-days", "0", "--idle-days", "0", "--format", "json"]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    assert [t["table"] for t in json.loads(out)["tables"]] == ["Orders"]
    assert "\raudit: " in err and " calls" in err
    code, _, err = _run([*argv, "--quiet"], capsys)
    assert code == 0 and err == ""


def test_an_org_audit_shows_the_accounts_and_regions_done(
    aws_reset: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    _profile(tmp_path, monkeypatch)
    create_table(aws("dynamodb", aws_reset), "Orders")
    _terminal(monkeypatch)
    argv = ["audit", "--profile", "audit", "--regions", "us-east-1,eu-west-1", "--days", "0.1", "--format", "json"]
    code, out, err = _run([*argv, "--billing-days", "0", "--idle-days", "0"], capsys)
    assert code == 0, err
    assert json.loads(out)["findings"] == []
    assert "\raudit:   0%" in err and "0/2" in err and " account/Region" in err


def test_billing_shows_its_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(write_input(tmp_path, steady_doc(days=1)))
    _terminal(monkeypatch)
    code, out, err = _run(["billing", "--input", path, "--format", "json"], capsys)
    assert code == 0
    assert "\rbilling:   0%" in err and "0/2" in err and " steps" in err
    assert "billing" in json.loads(out)


def test_hidden_bars_accept_every_call() -> None:
    client: Any = object()  # a hidden bar never touches the client
    with progress.progress("nothing") as bar:
        progress.count_calls(client, bar)
        assert progress.counted_sources([], bar) == []
        bar.set_postfix_str("x")
        assert bar.update(1) is None

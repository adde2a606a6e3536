"""Fuzz figures in issue 15's table form: ``python -m tests.fuzz.measure [--cases N] [--code DIR]``.

Runs the CLI in a child process per case (so a hang is a timeout and peak memory is the child's own), on
Hypothesis-generated hostile inputs (tests/fuzz/test_fuzz_cli.py's strategy), the stored corpus and the resource
cases, and prints: cases tried, crashes (exit 3), hangs (timeouts), wrong exit codes, lost valid records, and
--jobs 1/2 mismatches; then each resource case's exit code, seconds and peak memory. ``--code DIR`` runs another
checkout's ``auditor`` package (a tree holding ``auditor/``), for before/after figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import orjson

from tests.fuzz.repros import CORPUS, valid_record

TIMEOUT = 60.0


def run(argv: list[str], code: str | None, stdin: Any = None) -> tuple[int | None, str, float, int]:
    """(exit code or None on timeout, stdout, seconds, peak RSS in MB) of ``python -m auditor argv``."""
    env = dict(os.environ)
    if code:
        env["PYTHONPATH"] = code
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "auditor", *argv],
            stdout=out,
            stderr=subprocess.DEVNULL,
            stdin=stdin,
            env=env,
            cwd=code or None,  # "python -m" puts the working directory first on sys.path
        )
        rc: int | None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - t0 > TIMEOUT:
                proc.kill()
                _, _, usage = os.wait4(proc.pid, 0)
                rc = None
                break
            time.sleep(0.01)
        proc.returncode = rc if rc is not None else -9
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return rc, text, time.monotonic() - t0, usage.ru_maxrss // 1024


def fuzz_cases(n: int) -> list[tuple[bytes, int, str]]:
    from hypothesis.errors import NonInteractiveExampleWarning

    from tests.fuzz.test_fuzz_cli import hostile_input

    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        strategy = hostile_input()
        for _ in range(n):
            data, valid, _, name = strategy.example()
            cases.append((data, valid, name))
    manifest = orjson.loads((CORPUS / "manifest.json").read_bytes())
    for name, want in sorted(manifest.items()):
        cases.append(((CORPUS / name).read_bytes(), want["data_events"], name))
    return cases


def measure_fuzz(n: int, code: str | None, tmp: Path) -> dict[str, int]:
    figures = {"cases": 0, "crashes": 0, "hangs": 0, "wrong_exit": 0, "lost_valid": 0, "jobs_mismatch": 0}
    for k, (data, valid, name) in enumerate(fuzz_cases(n)):
        path = tmp / f"{k}-{name}"
        path.write_bytes(data)
        outs = []
        for jobs in ("1", "2"):
            rc, out, _, _ = run(["analyze-trail", str(path), "--format", "json", "--jobs", jobs], code)
            figures["cases"] += 1
            if rc is None:
                figures["hangs"] += 1
            elif rc == 3:
                figures["crashes"] += 1
            elif rc != 0 and valid:
                figures["wrong_exit"] += 1
            got = 0
            if rc in (0, 1):
                got = json.loads(out)["stats"]["data_events"]
            figures["lost_valid"] += max(0, valid - got)
            outs.append(out)
        if outs[0] != outs[1]:
            figures["jobs_mismatch"] += 1
    return figures


def _billing(values: list[Any], period: int = 60) -> bytes:
    return orjson.dumps(
        {
            "table": "T",
            "billing_mode": "PAY_PER_REQUEST",
            "start": "2026-11-01T00:00:00Z",
            "period_seconds": period,
            "series": [{"consumed_read": values, "consumed_write": [1.0] * len(values)}],
        }
    )


def measure_resources(code: str | None, tmp: Path) -> list[tuple[str, int | None, float, int]]:
    rows = []
    nul = tmp / "nul.json"
    with nul.open("wb") as fh:
        for _ in range(300):
            fh.write(b"\0" * (1 << 20))
    rc, _, secs, mb = run(["analyze-trail", str(nul), "--format", "json"], code)
    rows.append(("300 MB of NUL bytes", rc, secs, mb))
    rc, _, secs, mb = run(["analyze-trail", "/dev/zero", "--format", "json"], code)
    rows.append(("/dev/zero", rc, secs, mb))
    small = tmp / "small.json"
    small.write_bytes(orjson.dumps({"Records": [valid_record(n) for n in range(50)]}))
    rc, _, secs, mb = run(["analyze-trail", str(small), "--format", "json", "--jobs", "100000"], code)
    rows.append(("--jobs 100000", rc, secs, mb))
    fifo_dir = tmp / "fifo"
    fifo_dir.mkdir()
    (fifo_dir / "a.json").write_bytes(small.read_bytes())
    os.mkfifo(fifo_dir / "b.json")
    rc, _, secs, mb = run(["analyze-trail", str(fifo_dir), "--format", "json"], code)
    rows.append(("FIFO inside a directory", rc, secs, mb))
    keys = tmp / "keys.json"
    with keys.open("wb") as fh:
        fh.write(b'{"Records":[')
        for n in range(300):
            rec = valid_record(n)
            rec["requestParameters"]["key"] = {"pk": f"{n}-" + "k" * (1 << 20)}
            fh.write((b"," if n else b"") + orjson.dumps(rec))
        fh.write(b"]}")
    rc, _, secs, mb = run(["analyze-trail", str(keys), "--format", "json"], code)
    rows.append(("300 distinct 1 MB keys", rc, secs, mb))
    for label, data in (
        ("billing: 1e12 spike", _billing([5.0] * 1439 + [1e12])),
        ("billing: 1.7e308", _billing([5.0] * 10 + [1.7e308])),
        ("billing: true as capacity", _billing([5.0, True, 5.0])),
        ("billing: 92 KB of 1-day periods", _billing([1.0] * 9000, period=86_400)),
    ):
        path = tmp / "billing.json"
        path.write_bytes(data)
        rc, _, secs, mb = run(["billing", "--input", str(path), "--format", "json"], code)
        rows.append((label, rc, secs, mb))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--code", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        figures = measure_fuzz(args.cases, args.code, tmp)
        print(
            "| runs (cases x --jobs 1/2) | crashes | hangs | wrong exit codes | lost valid records | jobs 1/2 differ |"
        )
        print("|---|---|---|---|---|---|")
        keys = ("cases", "crashes", "hangs", "wrong_exit", "lost_valid", "jobs_mismatch")
        print("| " + " | ".join(str(figures[k]) for k in keys) + " |")
        print()
        print("| resource case | exit | seconds | peak memory (MB) |")
        print("|---|---|---|---|")
        for label, rc, secs, mb in measure_resources(args.code, tmp):
            print(f"| {label} | {'timeout' if rc is None else rc} | {secs:.1f} | {mb} |")


if __name__ == "__main__":
    main()

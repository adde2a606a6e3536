"""The stored repro corpus of issue 15 (tests/fuzz/corpus, built by tests/fuzz/repros.py): each file plants valid
records next to one hostile record. The CLI exits 0 (2 only when the whole input is unusable), counts every
valid record, skips the hostile one with a reason, and ``--jobs 1`` and ``--jobs 2`` print the same output."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import orjson
import pytest

from auditor import cli
from tests.fuzz.repros import CORPUS, build

MANIFEST: dict[str, dict[str, int]] = orjson.loads((CORPUS / "manifest.json").read_bytes())


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def test_the_stored_corpus_is_what_the_builders_make() -> None:
    built = build()
    assert sorted(built) == sorted(MANIFEST)
    for name, (data, valid, skipped) in built.items():
        assert (CORPUS / name).read_bytes() == data, name
        assert MANIFEST[name] == {"data_events": valid, "records_skipped": skipped}


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_repro_keeps_every_valid_record(name: str) -> None:
    want = MANIFEST[name]
    outputs = []
    for jobs in ("1", "2"):
        code, out, err = run_cli(["analyze-trail", str(CORPUS / name), "--format", "json", "--jobs", jobs])
        assert "Traceback" not in err and "internal error" not in err, err
        if want["data_events"] == 0:  # the whole input is unusable (corrupt gzip): an input error
            assert code == cli.EXIT_INPUT and "gzip" in err
            continue
        assert code == cli.EXIT_OK, err
        stats = orjson.loads(out)["stats"]
        assert stats["data_events"] == want["data_events"]
        assert stats["records_skipped"] == want["records_skipped"]
        assert stats["files_failed"] == 0
        outputs.append(out)
    assert len(set(outputs)) <= 1  # --jobs 2 prints exactly what one process prints


def test_a_lone_scalar_is_still_not_a_log_file(tmp_path: Path) -> None:
    for text in (b"5", b"null", b'""', b"1e400"):
        path = tmp_path / "x.json"
        path.write_bytes(text)
        code, _, err = run_cli(["analyze-trail", str(path), "--format", "json"])
        assert code == cli.EXIT_INPUT, (text, err)

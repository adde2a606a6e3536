"""``ddb-audit model-review``: the command over a planted trail and an audit document, every format, stdin, errors."""

from __future__ import annotations

import io
from pathlib import Path
from typing import BinaryIO

import orjson
import pytest

from auditor.cli import main
from benchmarks.workloads_review import AUDIT, EXPECTED, HEALTHY, build


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    here = tmp_path_factory.mktemp("model-review")
    (here / "trail.json").write_bytes(orjson.dumps({"Records": build(0.1)}))
    (here / "audit.json").write_bytes(orjson.dumps(AUDIT))
    return here / "trail.json", here / "audit.json"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["model-review", *argv]) == 0
    return capsys.readouterr().out


def test_json_has_every_planted_kind_priced_and_nothing_on_healthy_tables(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    trail, audit = files
    doc = orjson.loads(_run(capsys, str(trail), "--audit", str(audit), "--format", "json", "--replay"))
    got = {(p["kind"], p["table"]) for p in doc["proposals"]}
    assert got == EXPECTED
    assert not {p["table"] for p in doc["proposals"]} & HEALTHY
    for p in doc["proposals"]:
        priced = p["before"]["monthly_cost"] != p["after"]["monthly_cost"]
        assert priced or p["before"]["headroom"] is not None, p
        assert p["id"].startswith("rv-") and p["confidence"] in ("high", "medium") and p["assumptions"]
    sharded = next(p for p in doc["proposals"] if p["kind"] == "shard_partition_key")
    assert sharded["principals"] == ["arn:aws:iam::111122223333:role/events-ingest"]
    shard = next(r for r in doc["replay"] if r["kind"] == "shard_partition_key" and r["level"] == "peak")
    assert shard["throttles_before"] and not shard["throttles_after"] and shard["headroom_after"] > 1
    events = next(w for w in doc["what_if"] if w["table"] == "Events")
    assert events["key"] == {"day": "2026-12-03"} and events["headroom_after"] > 4 * events["headroom_before"]


def test_table_and_markdown(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    trail, _ = files
    table = _run(capsys, str(trail))
    assert "proposals, monthly " in table and "add_gsi" in table and "assumes:" in table
    markdown = _run(capsys, str(trail), "--format", "markdown", "--replay")
    assert markdown.startswith("## Model review") and "### Replay" in markdown


def test_stdin_is_read_once_for_both_passes(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trail, _ = files
    stdin = io.TextIOWrapper(io.BytesIO(trail.read_bytes()))
    monkeypatch.setattr("sys.stdin", stdin)
    doc = orjson.loads(_run(capsys, "-", "--format", "json"))
    assert ("add_gsi", "Users") in {(p["kind"], p["table"]) for p in doc["proposals"]}


def test_nothing_readable_and_a_bad_audit_are_input_errors(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["model-review", str(tmp_path)]) == 2
    bad = tmp_path / "audit.json"
    bad.write_text("[1]")
    assert main(["model-review", str(files[0]), "--audit", str(bad)]) == 2
    assert "not the JSON output" in capsys.readouterr().err


def test_config_item_sizes_price_the_reads_and_drop_the_default_assumption(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trail, _ = files
    config = tmp_path / "config.json"
    config.write_text('{"item_size_bytes": {"Orders": 6000}}')

    def orders(*argv: str) -> dict:
        doc = orjson.loads(_run(capsys, str(trail), "--format", "json", *argv))
        return next(p for p in doc["proposals"] if p["kind"] == "query_instead_of_gets")

    default, sized = orders(), orders("--config", str(config))
    assert any("the default" in a for a in default["assumptions"])
    assert not any("the default" in a for a in sized["assumptions"])
    assert sized["before"]["monthly_cost"] > default["before"]["monthly_cost"]


def test_thresholds_from_the_config_document_change_the_outcome(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trail, _ = files
    config = tmp_path / "thresholds.json"
    # fewer N+1 bursts than required now, and a filter on a third of a template's Queries is enough
    config.write_text('{"model_review": {"burst": {"min_bursts": 100000}, "filter": {"min_share": 0.3}}}')

    def kinds(*argv: str) -> set[tuple[str, str]]:
        doc = orjson.loads(_run(capsys, str(trail), "--format", "json", *argv))
        return {(p["kind"], p["table"]) for p in doc["proposals"]}

    default, tuned = kinds(), kinds("--config", str(config))
    assert ("query_instead_of_gets", "Orders") in default and ("composite_sort_key", "Catalog") not in default
    assert ("query_instead_of_gets", "Orders") not in tuned and ("composite_sort_key", "Catalog") in tuned
    assert default - {("query_instead_of_gets", "Orders")} <= tuned


def test_an_unknown_or_out_of_range_threshold_is_an_input_error(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.json"
    for doc, where in (
        ('{"model_review": {"scan": {"min_scanz": 3}}}', "model_review.scan.min_scanz"),
        ('{"model_review": {"burst": {"min_share": 2}}}', "model_review.burst.min_share"),
    ):
        config.write_text(doc)
        assert main(["model-review", str(files[0]), "--config", str(config)]) == 2
        assert where in capsys.readouterr().err


def test_the_input_is_read_once(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import auditor.kernel.inputs as inputs

    opened: list[str] = []
    real = inputs._file_source

    def counted(path: str) -> inputs.InputSource:
        source = real(path)
        opener = source.open

        def open_() -> BinaryIO:
            opened.append(path)
            return opener()

        return inputs.InputSource(source.name, open_)

    monkeypatch.setattr(inputs, "_file_source", counted)
    doc = orjson.loads(_run(capsys, str(files[0]), "--format", "json"))
    assert ("add_gsi", "Users") in {(p["kind"], p["table"]) for p in doc["proposals"]}
    assert opened == [str(files[0])]

"""``analyze-trail`` shows the calls AWS services made on their own behalf (kept apart from user traffic) in its
summary: the JSON ``summary`` and the text's input line."""

from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest

from auditor.cli import main
from tests.kernel.test_capacity import APP_IDENTITY, REPLICATION_IDENTITY, TTL_IDENTITY, _delete


def _trail(tmp_path: Path) -> Path:
    records = []
    for n, identity in enumerate([TTL_IDENTITY] * 3 + [REPLICATION_IDENTITY] + [APP_IDENTITY] * 2):
        record = copy.deepcopy(_delete(identity))
        record["eventID"] = f"00000000-0000-4000-8000-{n:012d}"
        record["requestParameters"]["key"] = {"cartId": f"CART#{n}"}
        records.append(record)
    path = tmp_path / "trail.json"
    path.write_bytes(orjson.dumps({"Records": records}))
    return path


def test_the_summary_counts_aws_services_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _trail(tmp_path)
    assert main(["analyze-trail", str(path), "--format", "json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    replication = REPLICATION_IDENTITY["sessionContext"]["sessionIssuer"]["arn"]  # type: ignore[index]
    assert doc["summary"] == {
        "service_calls": 4,
        "service_calls_by_service": {"dynamodb.amazonaws.com": 3, replication: 1},
    }
    assert doc["stats"]["data_events"] == 6
    assert main(["analyze-trail", str(path)]) == 0
    assert "service_calls=4" in capsys.readouterr().out

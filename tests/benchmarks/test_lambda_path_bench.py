"""benchmarks.lambda_path: its invocation counts what the real handler writes, and its cost model is Lambda's.

The benchmark itself (CPU and dollars per million records) is run by hand, never timed in tests; these tests check
that what it reports is true: the records ingested, and write units equal to the state table's items sized by the
documented DynamoDB rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.demo.benchmark import write_large_log_file
from auditor.models.dynamodb_size import item_size, write_capacity_units
from benchmarks import lambda_path
from handlers import runtime
from tests.moto_server import client
from tests.template.variants import load_template

RECORDS = 3_000


@pytest.fixture
def handler_env(aws_reset: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("STATE_TABLE_NAME", lambda_path.TABLE)
    monkeypatch.setenv("FINGERPRINTS_BUCKET", lambda_path.REPORTS)
    runtime.reset()
    yield aws_reset
    runtime.reset()


def _items(endpoint: str) -> list[dict[str, Any]]:
    ddb = client("dynamodb", endpoint)
    pages = ddb.get_paginator("scan").paginate(TableName=lambda_path.TABLE, ConsistentRead=True)
    return [item for page in pages for item in page["Items"]]


def test_invocation_reports_the_records_and_the_write_units_the_table_holds(
    handler_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trail.json.gz"
    write_large_log_file(path, RECORDS, RECORDS // 4, seed=5)
    key = "AWSLogs/111122223333/CloudTrail/us-east-1/2026/12/01/111122223333_CloudTrail_us-east-1_t.json.gz"
    lambda_path._setup(str(path), key)
    capsys.readouterr()

    lambda_path._invoke(key, path.stat().st_size)

    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["failures"] == 0
    assert out["stats"]["records_read"] == RECORDS
    assert out["stats"]["data_events"] + out["stats"]["records_skipped"] <= RECORDS
    assert out["cpu_s"] > 0 and out["main_cpu_s"] > 0 and out["peak_mb"] > 0
    # A fresh table and one object: every item in it was written once, by this invocation.
    items = _items(handler_env)
    assert out["writes"]["items"] == len(items) > 2
    assert out["writes"]["units"] == sum(write_capacity_units(item_size(item)) for item in items)
    # One PUT: the object's event fingerprints, as the deployed function writes them (FINGERPRINTS_BUCKET).
    stored = client("s3", handler_env).list_objects_v2(Bucket=lambda_path.REPORTS).get("Contents", [])
    assert out["s3_puts"] == len(stored) == 1 and stored[0]["Key"].startswith("fingerprints/")


def test_cost_model_follows_lambda_cpu_allocation() -> None:
    # One vCPU at 1,769 MB: a CPU-bound invocation lasts its CPU time there, longer in proportion below.
    assert lambda_path.lambda_cost(10.0, 9.0, 1769)[0] == pytest.approx(10.0)
    assert lambda_path.lambda_cost(10.0, 9.0, 1024)[0] == pytest.approx(10.0 * 1769 / 1024)
    # Below one vCPU the GB-seconds of CPU-bound work do not depend on the memory setting.
    assert lambda_path.lambda_cost(10.0, 9.0, 512)[1] == pytest.approx(lambda_path.lambda_cost(10.0, 9.0, 1024)[1])
    # Above it, the main thread's CPU time bounds the duration (more vCPUs do not split one thread).
    assert lambda_path.lambda_cost(10.0, 9.0, 3538)[0] == pytest.approx(9.0)


def test_memory_setting_is_read_from_the_template() -> None:
    function = load_template()["Resources"]["TrailIngestFunction"]["Properties"]
    assert lambda_path.template_memory_mb() == function["MemorySize"]

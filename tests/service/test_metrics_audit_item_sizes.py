"""The metrics audit stores each audited table's CloudWatch item size (consumed write units per item write) for the
evaluator, and goes on when it cannot."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from botocore.exceptions import ClientError

from auditor.models.inventory import TableProfile
from auditor.service.metrics_audit import store_cloudwatch_item_sizes
from tests.whatif.test_item_size_from_audit import _metrics

NOW = datetime(2026, 12, 3, 10, tzinfo=UTC)


class Sizes:
    def __init__(self, fail: bool = False) -> None:
        self.put: list[tuple[Any, int]] = []
        self.fail = fail

    def put_cloudwatch(self, ref: Any, size: int, now: datetime) -> None:
        if self.fail:
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "UpdateItem")
        self.put.append((ref, size))


def _audit() -> Any:
    profiles = [
        TableProfile(name="Orders", account="1", region="r"),
        TableProfile(name="Quiet", account="1", region="r"),
    ]
    metrics = {"Orders": _metrics(600.0, {"PutItem": 100, "BatchWriteItem": 4})}  # Quiet: no metrics read
    return SimpleNamespace(inventory=SimpleNamespace(tables=profiles), metrics=SimpleNamespace(tables=metrics))


def test_each_tables_cloudwatch_item_size_is_stored() -> None:
    sizes = Sizes()
    store_cloudwatch_item_sizes(_audit(), sizes, NOW)  # type: ignore[arg-type]
    assert sizes.put == [(("1", "r", "Orders"), 3 * 1024)]


def test_a_failed_write_does_not_fail_the_audit() -> None:
    store_cloudwatch_item_sizes(_audit(), Sizes(fail=True), NOW)  # type: ignore[arg-type]

"""Helpers shared by the CloudWatch-side detectors (``cw_throttling``, ``cw_scan``, ``unused_index``, ``idle_table``,
``ttl_not_expiring``) and the audit: epoch formatting, runs of consecutive periods, and the list prices the cost
detectors' configs carry."""

from __future__ import annotations

from datetime import UTC, datetime

from auditor.detectors.base import Amount, DetectorConfig
from auditor.models.inventory import TableProfile

#: Bytes in a GiB, the unit of the storage price.
GIB = 1024**3


class StoragePrices(DetectorConfig):
    """The storage price a detector's cost is computed with: us-east-1 list prices (USD per GB-month; ``_ia``: the
    Standard-IA table class), set in the config for other Regions."""

    storage_gb_month_price: Amount = 0.25
    storage_gb_month_price_ia: Amount = 0.10

    def storage_gb_month(self, ia: bool) -> float:
        return self.storage_gb_month_price_ia if ia else self.storage_gb_month_price

    def storage_month(self, size_bytes: float, ia: bool) -> float:
        """What storing ``size_bytes`` costs a month (USD)."""
        return size_bytes / GIB * self.storage_gb_month(ia)


class CapacityPrices(StoragePrices):
    """The storage and provisioned capacity prices (USD per read or write capacity unit-hour), as
    :class:`StoragePrices`."""

    provisioned_rcu_hour_price: Amount = 0.00013
    provisioned_rcu_hour_price_ia: Amount = 0.00016
    provisioned_wcu_hour_price: Amount = 0.00065
    provisioned_wcu_hour_price_ia: Amount = 0.00081

    def rcu_hour(self, ia: bool) -> float:
        return self.provisioned_rcu_hour_price_ia if ia else self.provisioned_rcu_hour_price

    def wcu_hour(self, ia: bool) -> float:
        return self.provisioned_wcu_hour_price_ia if ia else self.provisioned_wcu_hour_price


def to_dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def created_epoch(profile: TableProfile) -> float | None:
    """The table's creation time (epoch seconds) from DescribeTable, or None when unknown."""
    if not profile.created:
        return None
    try:
        return datetime.fromisoformat(profile.created).timestamp()
    except ValueError:
        return None


def iso(epoch: float) -> str:
    return to_dt(epoch).strftime("%Y-%m-%dT%H:%M:%SZ")


def longest_run(times: list[int], period: int) -> int:
    """The longest run of consecutive periods in sorted ``times`` (in periods)."""
    best = run = 0
    prev: int | None = None
    for t in times:
        run = run + 1 if prev is not None and t - prev == period else 1
        best = max(best, run)
        prev = t
    return best

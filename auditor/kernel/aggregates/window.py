"""Mergeable per-(table, window) traffic aggregates: where the rest of the code takes them from.

A :class:`~.table_window.TableWindow` holds everything the traffic detectors need about one table in one time window,
in bounded memory; an :class:`~.aggregate_set.AggregateSet` maps (account, region, table, window start) to its
``TableWindow``. ``merge`` is associative and commutative, which lets one aggregate per CloudTrail file (one Lambda
invocation each) feed one evaluation, and lets the CLI process a directory file by file. The serialised form
(:func:`window_to_dict`) stays well under DynamoDB's 400 KB item limit whatever the traffic.
"""

from __future__ import annotations

from auditor.kernel.aggregates.aggregate_set import AggregateSet, WindowKey
from auditor.kernel.aggregates.table_window import (
    DETAIL_BUDGET,
    MAX_SERIALIZED_BYTES,
    MINUTE_SERIALIZED_KEYS,
    SERIALIZED_PEAK_KEYS,
    Pattern,
    TableWindow,
    sketch_limit,
    window_from_dict,
    window_to_dict,
)

__all__ = [
    "DETAIL_BUDGET",
    "MAX_SERIALIZED_BYTES",
    "MINUTE_SERIALIZED_KEYS",
    "SERIALIZED_PEAK_KEYS",
    "AggregateSet",
    "Pattern",
    "TableWindow",
    "WindowKey",
    "sketch_limit",
    "window_from_dict",
    "window_to_dict",
]

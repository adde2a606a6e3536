"""Mergeable aggregates: heavy-hitter sketch, distinct counter, key templates, table windows."""

from auditor.kernel.aggregates.failures import throttle_cause
from auditor.kernel.aggregates.keys import decode_key, partition_attr
from auditor.kernel.aggregates.sketch import DistinctCounter, HeavyHitters
from auditor.kernel.aggregates.templates import key_template, value_template
from auditor.kernel.aggregates.window import AggregateSet, TableWindow

__all__ = [
    "AggregateSet",
    "DistinctCounter",
    "HeavyHitters",
    "TableWindow",
    "decode_key",
    "key_template",
    "partition_attr",
    "throttle_cause",
    "value_template",
]

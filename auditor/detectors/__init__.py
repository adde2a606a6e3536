"""Pure detectors, grouped by what they read. Importing this package registers every detector below in the one
catalogue (:mod:`auditor.detectors.registry`).

==============  ===================================================================================
sub-package     input
==============  ===================================================================================
``trail/``      CloudTrail traffic windows (``hot_key``, ``item_size_exceeded``, ``low_cardinality_key``,
                ``scan``, ``throttling``)
``metrics/``    a table's CloudWatch metrics and profile (``cw_scan``, ``cw_throttling``, ``unused_index``),
                and its daily activity (``idle_table``, ``ttl_not_expiring``)
``insights/``   Contributor Insights reports (``ci_hot_key``)
``stream/``     DynamoDB Streams observations and item size histories (``large_item``, ``item_growth``)
``billing/``    billing simulation results (``billing_mode``, ``table_class``)
``findings/``   findings already made (``correlate``; the item-size story link)
==============  ===================================================================================
"""

from auditor.detectors.billing import billing_mode, table_class
from auditor.detectors.findings import correlate
from auditor.detectors.insights import hot_key as ci_hot_key
from auditor.detectors.metrics import idle_table, ttl_not_expiring, unused_index
from auditor.detectors.metrics import scan as cw_scan
from auditor.detectors.metrics import throttling as cw_throttling
from auditor.detectors.stream import item_growth, large_item
from auditor.detectors.trail import hot_key, item_size_exceeded, low_cardinality_key, scan, throttling

__all__ = [
    "billing_mode",
    "ci_hot_key",
    "correlate",
    "cw_scan",
    "cw_throttling",
    "hot_key",
    "idle_table",
    "item_growth",
    "item_size_exceeded",
    "large_item",
    "low_cardinality_key",
    "scan",
    "table_class",
    "throttling",
    "ttl_not_expiring",
    "unused_index",
]

"""Pure detectors, grouped by what they read. Importing this package registers every detector below in the one
catalogue (:mod:`auditor.detectors.registry`).

Sub-packages: ``trail/`` (CloudTrail traffic windows), ``metrics/`` (a table's CloudWatch metrics and profile, and
its daily activity), ``insights/`` (Contributor Insights reports), ``stream/`` (DynamoDB Streams observations and item
size histories), ``billing/`` (billing simulation results), ``findings/`` (findings already made), ``capture/``
(the capture plan). docs/architecture.md lists every detector with its input and file; docs/detectors.md keeps the
longer rules.
"""

from auditor.detectors.billing import billing_mode, table_class
from auditor.detectors.capture import capture_cap
from auditor.detectors.findings import correlate
from auditor.detectors.insights import hot_key as ci_hot_key
from auditor.detectors.metrics import idle_table, ttl_not_expiring, unused_index
from auditor.detectors.metrics import scan as cw_scan
from auditor.detectors.metrics import throttling as cw_throttling
from auditor.detectors.stream import item_growth, large_item
from auditor.detectors.trail import hot_key, item_size_exceeded, low_cardinality_key, scan, throttling

__all__ = [
    "billing_mode",
    "capture_cap",
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

"""Pure detectors. Importing this package registers every detector module below."""

from auditor.detectors.trail import hot_key, item_size_exceeded, low_cardinality_key, scan, throttling

__all__ = ["hot_key", "item_size_exceeded", "low_cardinality_key", "scan", "throttling"]

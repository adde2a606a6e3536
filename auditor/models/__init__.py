"""Typed records that flow between sources, aggregates, detectors and sinks."""

from auditor.models.access_pattern import AccessPattern
from auditor.models.api_call import Access, ApiCall, ItemAccess, KeyValues, Statement
from auditor.models.finding import REQUIRED_EVIDENCE, Finding, FindingKind, Severity, fingerprint

__all__ = [
    "REQUIRED_EVIDENCE",
    "Access",
    "AccessPattern",
    "ApiCall",
    "Finding",
    "FindingKind",
    "ItemAccess",
    "KeyValues",
    "Severity",
    "Statement",
    "fingerprint",
]

"""``item_size_exceeded``: writes rejected because the item would exceed 400 KB."""

from __future__ import annotations

from typing import Any

import orjson

from auditor.detectors.base import Count, DetectorConfig, DetectorMetadata, make_finding
from auditor.detectors.registry import register
from auditor.kernel.aggregates.bounds import OTHER
from auditor.kernel.aggregates.failures import WHOLE_CALL
from auditor.kernel.aggregates.window import TableWindow
from auditor.models.finding import Finding, FindingKind, Severity

METADATA = DetectorMetadata(
    id="item_size_exceeded",
    kind=FindingKind.ITEM_SIZE_EXCEEDED,
    default_severity=Severity.HIGH,
    title="Writes rejected: item over 400 KB",
    risk=(
        "DynamoDB rejects any write that would make an item larger than 400 KB. The data in the rejected "
        "write is lost unless the caller handles the ValidationException, and the item can no longer grow."
    ),
    remediation=(
        "Stop appending to one item: split the growing attribute into separate items under the same "
        "partition key (an item collection, one item per element or per time bucket), or store the large "
        "value in S3 and keep a pointer in the item."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-use-s3-too.html",
)

#: The fix (shared with the item story, :mod:`auditor.detectors.findings.item_story`, when no size is known).
RECOMMENDATION = (
    "Split the item: move the list or map that keeps growing into separate items under the same "
    "partition key (one item per element or per period, read back with a Query), or store the "
    "large attribute in S3 and keep only its key in DynamoDB. Watch the table's items with the "
    "stream item-size watcher to catch the next one before it fails."
)


class ItemSizeExceededConfig(DetectorConfig):
    """Per-key findings for the keys with the most rejected writes."""

    max_keys: Count = 10
    critical_count: Count = 50


@register(METADATA, ItemSizeExceededConfig)
def detect(agg: TableWindow, cfg: ItemSizeExceededConfig) -> list[Finding]:
    """One finding per rejected key (the busiest ``max_keys``), plus one with ``key: null`` for the rest."""
    if agg.size_exceeded == 0:
        return []
    unnamed = (OTHER, WHOLE_CALL)
    ranked = sorted(agg.size_exceeded_keys.items(), key=lambda kv: (kv[0] in unnamed, -kv[1], kv[0]))
    groups: list[tuple[dict[str, Any] | None, int]] = []
    rest = 0
    for encoded, n in ranked:
        if encoded not in unnamed and len(groups) < cfg.max_keys:
            groups.append((orjson.loads(encoded), n))
        else:
            rest += n
    if rest:
        groups.append((None, rest))
    # A batch or transaction rejected as a whole is charged once to the call: its error does not say which item.
    whole_calls = agg.size_exceeded_keys.get(WHOLE_CALL, 0)
    findings = []
    for key, n in groups:
        label = ", ".join(f"{a}={v}" for a, v in key.items()) if key else "unidentified keys"
        if key is None and whole_calls:
            label = f"{whole_calls} batch or transaction call{'s' if whole_calls != 1 else ''}, item not named"
            if n > whole_calls:
                label += f", and {n - whole_calls} other writes"
        findings.append(
            make_finding(
                METADATA,
                agg,
                severity=Severity.CRITICAL if n >= cfg.critical_count else Severity.HIGH,
                discriminator=key,
                title=f"Writes to {agg.table} rejected for item size ({label:.80})",
                summary=(
                    f"{n} write{'s' if n != 1 else ''} to {agg.table} ({label:.120}) failed with a ValidationException "
                    "for item size: the item would exceed the 400 KB limit, and these writes were not applied."
                ),
                recommendation=RECOMMENDATION,
                evidence={
                    "count": n,
                    "key": key,
                    "whole_calls": whole_calls if key is None else 0,
                    "limit_bytes": 409600,
                    "source": "cloudtrail",
                    "window_seconds": agg.window_seconds,
                },
            )
        )
    return findings

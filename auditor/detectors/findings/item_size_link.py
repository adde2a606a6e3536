"""The item-size story told by two sources: CloudTrail (writes rejected) and Streams (the item's measured size).

:func:`link_item_size_findings` joins the two sources of one story: an ``item_size_exceeded`` finding (CloudTrail:
writes already rejected) and a ``large_item``/``item_growth`` finding (Streams: the item's measured size) on the same
table and key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auditor.models.finding import Finding, FindingKind
from auditor.models.stream import canonical_key

__all__ = ["RELATED_IDS", "link_item_size_findings"]

#: Evidence field listing the ids of the findings that tell the same story.
RELATED_IDS = "related_finding_ids"

_STREAM_KINDS = frozenset({FindingKind.LARGE_ITEM, FindingKind.ITEM_GROWTH})


def _key_of(finding: Finding) -> str | None:
    key = finding.evidence.get("key")
    return canonical_key(key) if isinstance(key, dict) and key else None


def _same_place(a: Finding, b: Finding) -> bool:
    """Same table; account and region equal where both are known (EventBridge events may lack the account)."""
    return (
        a.table == b.table
        and (a.account is None or b.account is None or a.account == b.account)
        and (a.region is None or b.region is None or a.region == b.region)
    )


def link_item_size_findings(findings: Sequence[Finding]) -> list[Finding]:
    """Link ``item_size_exceeded`` findings with ``large_item``/``item_growth`` findings on the same table and key.

    Each linked finding gets ``evidence.related_finding_ids`` (sorted ids of the others in the story) and each
    stream finding's severity is raised one step (:meth:`Severity.raised`): the item is not only large or growing,
    writes to it are already being rejected. Keys are compared as :func:`canonical_key` text (the CloudTrail key
    as logged, the stream key from DynamoDB JSON). Findings without a key (``key: null``) are never linked. The
    result has the same order and length as the input; unlinked findings are returned unchanged.

    Idempotent: a stream finding that already lists a related id is not raised again.
    """
    exceeded: dict[tuple[str, str], list[int]] = {}
    streamed: dict[tuple[str, str], list[int]] = {}
    for index, finding in enumerate(findings):
        key = _key_of(finding)
        if key is None:
            continue
        if finding.kind == FindingKind.ITEM_SIZE_EXCEEDED:
            exceeded.setdefault((finding.table, key), []).append(index)
        elif finding.kind in _STREAM_KINDS:
            streamed.setdefault((finding.table, key), []).append(index)

    related: dict[int, set[str]] = {}
    for group, stream_indexes in streamed.items():
        for s in stream_indexes:
            partners = [e for e in exceeded.get(group, []) if _same_place(findings[s], findings[e])]
            if not partners:
                continue
            story = {s, *partners, *(o for o in stream_indexes if o != s and _same_place(findings[s], findings[o]))}
            for member in story:
                related.setdefault(member, set()).update(findings[o].id for o in story if o != member)

    out: list[Finding] = []
    for index, finding in enumerate(findings):
        ids = related.get(index)
        if not ids:
            out.append(finding)
            continue
        before = finding.evidence.get(RELATED_IDS)
        already = set(before) if isinstance(before, list) else set()
        evidence: dict[str, Any] = {**finding.evidence, RELATED_IDS: sorted(already | ids)}
        update: dict[str, Any] = {"evidence": evidence}
        if finding.kind in _STREAM_KINDS and not already:
            update["severity"] = finding.severity.raised()
        out.append(finding.model_copy(update=update))
    return out

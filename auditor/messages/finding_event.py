"""The finding event: one message per ``new``, ``worsened`` or ``resolved`` finding (sent by
:mod:`auditor.sinks.sns`; read by the Slack notifier and the Security Hub sink).

``Subject`` ``[HIGH] new: Hot key on Orders`` (ASCII, at most 99 characters); ``Message`` readable text for people;
the attributes of :class:`FindingEventAttributes`, the finding itself in ``finding_json`` (docs/contract.md "Finding
(JSON)", with the lifecycle's ``first_seen`` and ``last_seen``).
"""

from __future__ import annotations

import orjson
from pydantic import ValidationError

from auditor.messages.topic import TopicAttributes
from auditor.models.finding import REQUIRED_EVIDENCE, Finding, FindingKind, Severity

__all__ = ["FindingEventAttributes", "encode_finding", "parse_finding"]


class FindingEventAttributes(TopicAttributes):
    """The message attributes of a finding event, usable in subscription filter policies."""

    #: The finding kind (``scan``, ``hot_key``, ...), never a :class:`auditor.messages.MessageKind`.
    kind: FindingKind
    #: The current severity.
    severity: Severity
    #: The audited table name.
    table: str
    #: What happened: ``new`` | ``worsened`` | ``resolved`` (:class:`auditor.lifecycle.EventKind`).
    status: str
    #: The stable finding id.
    finding_id: str
    #: A stable id of this publish: the same on a retried publish (deduplicate on it).
    event_id: str
    #: Only on ``worsened``: the severity published before.
    previous_severity: Severity | None = None
    #: The finding as JSON (:func:`encode_finding`); left out when even its required evidence would not fit.
    finding_json: str | None = None


def encode_finding(finding: Finding, *, trimmed: bool = False) -> str:
    """The ``finding_json`` attribute. ``trimmed`` (the whole message would exceed SNS's 256 KB): the ``evidence``
    cut to the fields docs/contract.md requires, with ``"evidence_truncated": true`` added to it."""
    data = finding.model_dump(mode="json")
    if trimmed:
        required = REQUIRED_EVIDENCE.get(finding.kind, ())
        data["evidence"] = {k: v for k, v in finding.evidence.items() if k in required} | {"evidence_truncated": True}
    return orjson.dumps(data).decode()


def parse_finding(raw: str | None) -> tuple[Finding | None, str | None]:
    """(the typed finding, None) for a valid ``finding_json`` attribute, else (None, why it is unusable).

    Unknown top-level fields are ignored, so a publisher adding fields does not turn messages into fallbacks.
    """
    if not raw:
        return None, "finding_json attribute missing"
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return None, f"finding_json is not JSON: {exc}"
    if not isinstance(data, dict):
        return None, "finding_json is not a JSON object"
    try:
        finding = Finding.model_validate({k: v for k, v in data.items() if k in Finding.model_fields})
    except ValidationError as exc:
        err = exc.errors()[0]
        return None, f"finding_json is not a Finding: {'.'.join(str(x) for x in err['loc'])}: {err['msg']}"
    return finding, None

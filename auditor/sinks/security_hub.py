"""AWS Security Hub sink: finding events from the findings topic imported as ASFF findings (optional, opt-in).

Each finding event becomes one ``BatchImportFindings`` entry with the finding's stable id as ``Id``; other messages,
and findings with a malformed account or region, are skipped. Rejected entries raise :class:`SecurityHubImportError`
after the whole batch was tried, so Lambda retries the event and then parks it in the dead-letter queue. The
mapping is in docs/sinks.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from pydantic import ValidationError

from auditor.formats import asff_finding
from auditor.lifecycle import EventKind
from auditor.messages import AttributeName, MessageKind, message_kind
from auditor.models.finding import Finding
from auditor.redact import redact_finding

if TYPE_CHECKING:
    from mypy_boto3_securityhub import SecurityHubClient

log = structlog.get_logger(__name__)

#: BatchImportFindings accepts at most 100 findings per request.
MAX_BATCH = 100
#: Workflow status and record state per event.
_STATES = {
    EventKind.NEW: ("NEW", "ACTIVE"),
    EventKind.WORSENED: ("NEW", "ACTIVE"),
    EventKind.RESOLVED: ("RESOLVED", "ARCHIVED"),
}


class SecurityHubImportError(RuntimeError):
    """Security Hub did not take every finding of the batch."""


@dataclass(slots=True)
class ImportResult:
    """What one run sent to Security Hub."""

    imported: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"imported": self.imported, "skipped": self.skipped, "failed": len(self.failed)}


def asff_from_event(
    attributes: Mapping[str, str], *, account: str, region: str, now: datetime, redact: bool = True
) -> dict[str, Any] | None:
    """The ASFF entry of one SNS finding event, or None for a message that is not a finding event or a finding
    whose account is not 12 digits or whose region is not a region name (logged with the reason, counted skipped).

    ``account`` and ``region`` stand in for a finding that does not carry its own (the function's account). With
    ``redact`` (``REDACT_KEYS``, the default) key values are redacted as for Slack: Security Hub findings can be
    aggregated into another account (a delegated administrator).
    """
    if message_kind(attributes) is not MessageKind.FINDING:
        return None
    try:
        status = EventKind(attributes.get(AttributeName.STATUS, ""))
        doc = orjson.loads(attributes.get(AttributeName.FINDING_JSON, ""))
        finding = Finding.model_validate(redact_finding(doc) if redact and isinstance(doc, dict) else doc)
    except (ValueError, ValidationError):  # not a finding event (orjson's decode error is a ValueError)
        return None
    workflow, record_state = _STATES[status]
    try:
        return asff_finding(
            finding, account=account, region=region, now=now, workflow=workflow, record_state=record_state
        )
    except ValueError as exc:  # the finding's own account or region is malformed: Security Hub would refuse it
        log.warning("security_hub_finding_refused", finding_id=finding.id, reason=str(exc))
        return None


def import_findings(client: SecurityHubClient, entries: Sequence[dict[str, Any]]) -> ImportResult:
    """``BatchImportFindings`` in batches of 100.

    Raises:
        SecurityHubImportError: after every batch was tried, when some entry was not imported.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    result = ImportResult()
    for at in range(0, len(entries), MAX_BATCH):
        batch = list(entries[at : at + MAX_BATCH])
        try:
            answer = client.batch_import_findings(Findings=batch)  # type: ignore[arg-type]
        except (BotoCoreError, ClientError) as exc:
            result.failed += [f"{e['Id']}: {type(exc).__name__}: {exc}" for e in batch]
            continue
        failed = answer.get("FailedFindings", [])
        result.imported += answer.get("SuccessCount", len(batch) - len(failed))
        result.failed += [f"{f.get('Id')}: {f.get('ErrorCode')}: {f.get('ErrorMessage')}" for f in failed]
    if result.failed:
        log.error("security_hub_import_failed", failed=result.failed[:10], count=len(result.failed))
        raise SecurityHubImportError(f"{len(result.failed)} finding(s) not imported: {result.failed[0]}")
    return result

"""Publishing finding events and run digests to the findings topic (SNS), from the outbox.

The message contract is :mod:`auditor.messages`; this module renders the messages within SNS's limits and
:func:`publish_pending` drains the outbox oldest first: an entry is deleted only after the message carrying it (its
own, or for new and worsened events the run digest) was accepted, and a failed publish or removal stays pending for
the next run. The size limits and delivery rules are in docs/sinks.md.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from botocore.exceptions import BotoCoreError, ClientError, ConnectionClosedError, ReadTimeoutError

from auditor.findings_text import shorten
from auditor.lifecycle import EventKind, FindingEvent
from auditor.messages import Digest, DigestAttributes, DigestItem, FindingEventAttributes, encode_finding
from auditor.models.finding import REQUIRED_EVIDENCE, Finding, isoformat_z, utc
from auditor.state.findings_store import FindingsStore, OutboxEntry

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sns.type_defs import MessageAttributeValueTypeDef

__all__ = ["MAX_MESSAGE_BYTES", "MAX_SUBJECT_CHARS", "PublishResult", "SnsMessage", "publish_pending", "render"]

log = structlog.get_logger(__name__)

#: SNS's limit on a whole message (body plus attribute names, types and values).
MAX_MESSAGE_BYTES = 262_144
#: SNS subjects must be shorter than 100 characters.
MAX_SUBJECT_CHARS = 99
#: Room kept below :data:`MAX_MESSAGE_BYTES` for anything SNS counts that we do not.
_SAFETY_BYTES = 2_048
#: Longest rendered evidence value in the text, and most evidence lines.
_MAX_VALUE_CHARS = 200
_MAX_EVIDENCE_LINES = 15
_MAX_TEXT_CHARS = 32_000


@dataclass(frozen=True, slots=True)
class SnsMessage:
    """One rendered message: subject, text and string attributes."""

    subject: str
    text: str
    attributes: dict[str, str]

    def size(self) -> int:
        """Bytes SNS counts towards its 256 KB limit."""
        attrs = sum(len(k.encode()) + len(b"String") + len(v.encode()) for k, v in self.attributes.items())
        return len(self.text.encode()) + attrs

    def message_attributes(self) -> dict[str, MessageAttributeValueTypeDef]:
        """The ``MessageAttributes`` parameter of ``Publish``."""
        return {k: {"DataType": "String", "StringValue": v} for k, v in self.attributes.items()}


@dataclass(slots=True)
class PublishResult:
    """What one drain of the outbox did."""

    sent: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    #: Digest messages published (0 or 1 per drain) and refused.
    digests: int = 0
    digest_failed: int = 0
    #: Entries still pending after the drain (counted up to ``limit``) and the age of the oldest, in seconds.
    left: int = 0
    oldest_left_seconds: float = 0.0
    #: Publishes of an entry a crashed run may already have published (SNS's at-least-once: a repeated e-mail).
    repeated: int = 0
    #: Outbox writes after an accepted publish that failed (the entry is kept and finished by the next run).
    bookkeeping_failed: int = 0
    #: Digests listing findings that an earlier crashed run's digest may already have carried to Slack (also in
    #: ``repeated``).
    repeated_digests: int = 0


#: Most findings listed in a digest's ``digest_json`` (the rest are counted in ``more``).
DIGEST_MAX_ITEMS = 100
_FIX_CHARS = 160


def _one_line(text: str, limit: int) -> str:
    """The first sentence of ``text`` on one line, cut to ``limit`` at a word boundary (never inside a number:
    :func:`auditor.findings_text.shorten`, the one cut of every output)."""
    line = " ".join(text.split())
    first = line.split(". ")[0]
    first = first if first.endswith(".") else first + ("." if first != line else "")
    return shorten(first, limit)


def render_digest(events: list[FindingEvent], event_id: str) -> SnsMessage | None:
    """The run digest of the ``new`` and ``worsened`` events (None when there is none)."""
    shown = [e for e in events if e.kind in (EventKind.NEW, EventKind.WORSENED)]
    if not shown:
        return None
    shown.sort(key=lambda e: (-e.finding.severity.rank, e.finding.table, e.finding.kind.value, e.finding.id))
    worst = shown[0].finding.severity
    items = [
        DigestItem(
            id=e.finding.id,
            severity=e.finding.severity.value,
            status=e.kind.value,
            kind=e.finding.kind.value,
            table=e.finding.table,
            index=e.finding.index,
            account=e.finding.account,
            region=e.finding.region,
            title=e.finding.title,
            fix=_one_line(e.finding.recommendation, _FIX_CHARS),
            previous_severity=e.previous_severity.value if e.previous_severity else None,
            key=e.finding.evidence.get("key"),  # lets the Slack notifier redact the key in title and fix
        )
        for e in shown[:DIGEST_MAX_ITEMS]
    ]
    more = len(shown) - len(items)
    n = len(shown)
    subj = _ascii(f"[{worst.value.upper()}] {n} new or worsened DynamoDB finding{'s' if n != 1 else ''}")
    lines = [f"{n} new or worsened finding{'s' if n != 1 else ''} in this run:", ""]
    lines += [
        f"- [{e.finding.severity.value.upper()}] {e.finding.table}: {e.finding.title} ({e.finding.id})"
        for e in shown[:DIGEST_MAX_ITEMS]
    ]
    if more:
        lines.append(f"... and {more} more")
    digest = Digest(findings=items, more=more)
    attributes = DigestAttributes(severity=worst, event_id=event_id, digest_json=digest.to_json())
    return SnsMessage(subj[:MAX_SUBJECT_CHARS], "\n".join(lines)[:_MAX_TEXT_CHARS], attributes.to_strings())


def _ascii(text: str) -> str:
    """ASCII-only, one line (accents folded, anything else dropped, whitespace collapsed)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return " ".join(folded.split())


def subject(event: FindingEvent) -> str:
    """``[SEVERITY] status: title``, ASCII, at most :data:`MAX_SUBJECT_CHARS`."""
    f = event.finding
    text = _ascii(f"[{f.severity.value.upper()}] {event.kind.value}: {f.title}")
    if len(text) > MAX_SUBJECT_CHARS:
        text = text[: MAX_SUBJECT_CHARS - 3].rstrip() + "..."
    return text


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


def _evidence_lines(f: Finding) -> list[str]:
    required = REQUIRED_EVIDENCE.get(f.kind, ())
    names = [n for n in required if n in f.evidence] + sorted(n for n in f.evidence if n not in required)
    lines = [f"  {name}: {_value(f.evidence[name])}" for name in names[:_MAX_EVIDENCE_LINES]]
    if len(names) > _MAX_EVIDENCE_LINES:
        lines.append(f"  ... and {len(names) - _MAX_EVIDENCE_LINES} more in the finding JSON")
    return lines


def text(event: FindingEvent) -> str:
    """The readable message body."""
    f = event.finding
    where = f.table + (f" (index {f.index})" if f.index else "")
    if event.kind is EventKind.RESOLVED:
        headline = f"RESOLVED: {f.title}"
        status = f"resolved (not seen since {isoformat_z(f.last_seen)})"
    elif event.kind is EventKind.WORSENED:
        headline = f"WORSENED: {f.title}"
        before = event.previous_severity.value if event.previous_severity else "lower"
        status = f"worsened (severity {before} -> {f.severity.value})"
    else:
        headline = f"NEW: {f.title}"
        status = "new"
    lines = [
        headline,
        "",
        f"Status:     {status}",
        f"Severity:   {f.severity.value}",
        f"Kind:       {f.kind.value}",
        f"Table:      {where}",
        f"Account:    {f.account or '-'}  Region: {f.region or '-'}",
        f"First seen: {isoformat_z(f.first_seen)}",
        f"Last seen:  {isoformat_z(f.last_seen)}",
        "",
        f.summary,
        "",
        "Evidence:",
        *_evidence_lines(f),
        "",
        "Recommendation:",
        f.recommendation,
        "",
        f"Finding id: {f.id}",
    ]
    body = "\n".join(lines)
    return body if len(body) <= _MAX_TEXT_CHARS else body[: _MAX_TEXT_CHARS - 3] + "..."


def render(event: FindingEvent, event_id: str) -> SnsMessage:
    """The SNS message of one event (see the module docstring for the contract)."""
    f = event.finding
    attributes = FindingEventAttributes(
        kind=f.kind,
        severity=f.severity,
        table=f.table,
        status=event.kind.value,
        finding_id=f.id,
        event_id=event_id,
        previous_severity=event.previous_severity if event.kind is EventKind.WORSENED else None,
    )
    head, body = subject(event), text(event)
    for finding_json in (encode_finding(f), encode_finding(f, trimmed=True)):
        msg = SnsMessage(head, body, attributes.model_copy(update={"finding_json": finding_json}).to_strings())
        if msg.size() <= MAX_MESSAGE_BYTES - _SAFETY_BYTES:
            return msg
    return SnsMessage(head, body, attributes.to_strings())  # even the required evidence is huge: text only


def publish_one(sns: SNSClient, topic_arn: str, entry: OutboxEntry) -> str:
    """Publish one outbox entry; returns the SNS message id (errors propagate)."""
    return _publish(sns, topic_arn, render(entry.event, entry.event_id))[0]


def _publish(sns: SNSClient, topic_arn: str, msg: SnsMessage) -> tuple[str, bool]:
    """(message id, whether the client sent it more than once: an earlier attempt may have been accepted too)."""
    resp = sns.publish(
        TopicArn=topic_arn, Subject=msg.subject, Message=msg.text, MessageAttributes=msg.message_attributes()
    )
    return resp["MessageId"], int(resp.get("ResponseMetadata", {}).get("RetryAttempts", 0)) > 0


#: Errors after which the request may have been carried out: only the answer is missing.
_MAYBE_SENT = (ReadTimeoutError, ConnectionClosedError)


def publish_pending(
    store: FindingsStore, sns: SNSClient, topic_arn: str, limit: int = 100, *, now: datetime | None = None
) -> PublishResult:
    """Publish up to ``limit`` pending outbox entries, oldest first, then the run digest of the published ones.

    An entry is removed only once the message carrying it was accepted: a ``resolved`` event after its own publish,
    a ``new`` or ``worsened`` one after the run digest that lists it (until then it is kept, marked published, so
    a refused digest is published again, with it, by the next run). The digest's entries are marked with its id
    before it is sent and its acceptance is recorded in one write, so after a crash the next run only removes the
    entries of an accepted digest. A failed publish stays pending with ``attempts`` + 1; a failed removal is handled
    per entry and retried by the next run. ``now`` stamps the entries (default: the clock).
    """
    stamp = utc(now) if now is not None else datetime.now(UTC)
    result = PublishResult()
    kept: list[OutboxEntry] = []
    members: list[OutboxEntry] = []
    accepted: dict[str, bool] = {}
    drained = store.pending(limit)
    for entry in drained:
        settled = entry.digested or _digest_recorded(store, entry, accepted, result)
        if settled is None:  # whether its digest was accepted cannot be read now: the next run decides
            kept.append(entry)
            continue
        if settled:  # an accepted digest carried it; only its removal is left
            if not _remove(store, entry, stamp, result, digested=True):
                kept.append(entry)
            continue
        sent_before = entry.published or entry.digest_id is not None  # a digest is only started for sent entries
        if not sent_before and not _publish_entry(store, sns, topic_arn, entry, stamp, result):
            kept.append(entry)
            continue
        if entry.event.kind in _DIGESTED:
            members.append(entry)
        elif not _remove(store, entry, stamp, result, digested=False):
            kept.append(entry)
    if members:
        kept += _send_digest(store, sns, topic_arn, members, stamp, result)
    # A drain shorter than the limit emptied the outbox but for what it kept; a full one may have left more behind.
    left = store.pending(limit) if limit > 0 and len(drained) == limit else kept
    result.left = len(left)
    if left:
        oldest = min(datetime.fromisoformat(e.created) for e in left)
        result.oldest_left_seconds = max(0.0, (stamp - oldest).total_seconds())
    return result


#: The events a run digest lists: their entries stay until the digest is accepted.
_DIGESTED = (EventKind.NEW, EventKind.WORSENED)


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _publish_entry(
    store: FindingsStore, sns: SNSClient, topic_arn: str, entry: OutboxEntry, stamp: datetime, result: PublishResult
) -> bool:
    """Publish one entry's own message and record it; False when it was not published (it stays pending)."""
    if entry.publishing:  # a run published it, maybe accepted, and stopped before recording it
        _may_repeat(result, "publish_may_repeat", finding_id=entry.finding_id, status=entry.event.kind.value)
    try:
        if not entry.publishing:
            store.mark_publishing(entry, stamp)
        message_id, retried = _publish(sns, topic_arn, render(entry.event, entry.event_id))
    except (ClientError, BotoCoreError) as exc:
        result.failed += 1
        result.errors.append(_error(exc))
        log.warning(
            "publish_failed", finding_id=entry.finding_id, status=entry.event.kind.value, attempts=entry.attempts + 1
        )
        try:
            store.mark_failed(entry, _error(exc), stamp, maybe_sent=isinstance(exc, _MAYBE_SENT))
        except (ClientError, BotoCoreError) as mark_exc:
            log.warning("outbox_mark_failed_failed", finding_id=entry.finding_id, error=_error(mark_exc))
        return False
    result.sent += 1
    log.info("published", finding_id=entry.finding_id, status=entry.event.kind.value, message_id=message_id)
    if retried and not entry.publishing:
        _may_repeat(result, "publish_retried_may_repeat", finding_id=entry.finding_id)
    if entry.event.kind in _DIGESTED:
        try:
            store.mark_published(entry, stamp)
        except (ClientError, BotoCoreError) as exc:
            # Still listed in this run's digest; unless removed after it, the next run publishes it again once.
            result.bookkeeping_failed += 1
            log.warning("outbox_mark_published_failed", finding_id=entry.finding_id, error=_error(exc))
    return True


def _remove(
    store: FindingsStore, entry: OutboxEntry, stamp: datetime, result: PublishResult, *, digested: bool
) -> bool:
    """Delete an entry whose message was accepted; on failure mark it (published, or carried by a digest) so the
    next run only removes it. False when it is still there."""
    try:
        store.mark_sent(entry)
        return True
    except (ClientError, BotoCoreError) as exc:
        result.bookkeeping_failed += 1
        log.warning("outbox_delete_failed", finding_id=entry.finding_id, error=_error(exc))
    if digested and entry.digested:
        return False
    try:
        (store.mark_digested if digested else store.mark_published)(entry, stamp)
    except (ClientError, BotoCoreError) as exc:
        log.warning("outbox_mark_failed", finding_id=entry.finding_id, error=_error(exc))
    return False


def _digest_recorded(
    store: FindingsStore, entry: OutboxEntry, accepted: dict[str, bool], result: PublishResult
) -> bool | None:
    """Whether the digest an earlier run started to send with ``entry`` was accepted (False: none was started, or
    it was not recorded as accepted); None when that cannot be read now."""
    if entry.digest_id is None:
        return False
    if entry.digest_id not in accepted:
        try:
            accepted[entry.digest_id] = store.digest_accepted(entry.digest_id)
        except (ClientError, BotoCoreError) as exc:
            result.bookkeeping_failed += 1
            log.warning("digest_record_read_failed", digest_id=entry.digest_id, error=_error(exc))
            return None
    return accepted[entry.digest_id]


def _send_digest(
    store: FindingsStore,
    sns: SNSClient,
    topic_arn: str,
    members: list[OutboxEntry],
    stamp: datetime,
    result: PublishResult,
) -> list[OutboxEntry]:
    """Send the run digest of the published entries in two phases; returns the entries still pending.

    Each entry is marked with the digest's id before the publish (an entry that cannot be marked waits for the next
    digest), and the accepted digest is recorded in one write before its entries are removed. A digest listing an
    entry that an earlier run's digest (never recorded as accepted) listed may repeat it in Slack: counted once per
    digest in ``repeated`` and ``repeated_digests``.
    """
    digest_id = "digest-" + hashlib.sha256("|".join(sorted(e.event_id for e in members)).encode()).hexdigest()[:20]
    marked: list[OutboxEntry] = []
    waiting: list[OutboxEntry] = []
    for entry in members:
        try:
            store.mark_digesting(entry, digest_id, stamp)
            marked.append(entry)
        except (ClientError, BotoCoreError) as exc:
            result.bookkeeping_failed += 1
            log.warning("outbox_mark_digesting_failed", finding_id=entry.finding_id, error=_error(exc))
            waiting.append(entry)
    if not marked:
        return waiting
    again = sum(1 for e in marked if e.digest_id is not None)
    if again:  # an earlier run started a digest with these and stopped before recording whether it was accepted
        result.repeated_digests += 1
        _may_repeat(result, "digest_may_repeat", digest_id=digest_id, findings=str(again))
    accepted = _publish_digest(sns, topic_arn, digest_id, marked, result)
    if accepted is None:  # it may have been accepted: the marks stay, so the next digest counts a possible repeat
        return waiting + marked
    if not accepted:
        for entry in marked:
            try:
                store.clear_digesting(entry)
            except (ClientError, BotoCoreError) as exc:
                log.warning("outbox_clear_digesting_failed", finding_id=entry.finding_id, error=_error(exc))
        return waiting + marked
    try:
        store.record_digest(digest_id, len(marked), stamp)
    except (ClientError, BotoCoreError) as exc:
        # Its entries are still removed (or marked digested) one by one; one left behind is sent again, counted.
        result.bookkeeping_failed += 1
        log.warning("digest_record_failed", digest_id=digest_id, error=_error(exc))
    return waiting + [e for e in marked if not _remove(store, e, stamp, result, digested=True)]


def _publish_digest(
    sns: SNSClient, topic_arn: str, digest_id: str, members: list[OutboxEntry], result: PublishResult
) -> bool | None:
    """Publish the digest of the published entries: True when it was accepted (or there is nothing to list), False
    when it was refused, None when it may have been accepted (the answer was lost)."""
    msg = render_digest([e.event for e in members], digest_id)
    if msg is None:
        return True
    try:
        _message_id, retried = _publish(sns, topic_arn, msg)
    except (ClientError, BotoCoreError) as exc:
        result.digest_failed += 1
        log.warning("digest_publish_failed", error=_error(exc), findings=len(members))
        return None if isinstance(exc, _MAYBE_SENT) else False
    result.digests += 1
    log.info("digest_published", findings=len(members), event_id=digest_id)
    if retried:
        result.repeated_digests += 1
        _may_repeat(result, "digest_retried_may_repeat", digest_id=digest_id)
    return True


def _may_repeat(result: PublishResult, event: str, **fields: str) -> None:
    """Count a publish that may repeat one an earlier attempt or run made (SNS's at-least-once)."""
    result.repeated += 1
    log.warning(event, **fields)

"""Slack sink: delivery of the Block Kit messages :mod:`auditor.sinks.slack_blocks` builds, to an incoming webhook.

:func:`post_webhook` retries 429, 5xx and timeouts with backoff within a time budget, and raises
:class:`SlackDeliveryError` otherwise; :func:`notify_slack` falls back to plain text when Slack rejects the blocks.
The webhook URL comes from Secrets Manager, cached per container, never logged. The rules are in docs/sinks.md.
"""

from __future__ import annotations

import email.utils
import http.client
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson
import structlog
from botocore.exceptions import BotoCoreError, ClientError

from auditor.config import Settings
from auditor.exceptions import AuditorError, ConfigurationError
from auditor.messages import AttributeName, FindingNotification
from auditor.sinks.slack_blocks import build_message, text_only
from auditor.state.slack_deliveries import Claim, DeliveryLog

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

log = structlog.get_logger(__name__)

# ----------------------------------------------------------------------------- the webhook secret


@dataclass(frozen=True, slots=True)
class SlackSecret:
    """The webhook URL and the optional redaction salt (kept out of ``repr`` so they never reach a log)."""

    webhook_url: str = field(repr=False)
    redaction_salt: str = field(default="", repr=False)


#: Seconds a container keeps the secret before reading it again.
SECRET_MAX_AGE_SECONDS = 900.0
_SECRET_CACHE: dict[str, tuple[float, SlackSecret]] = {}


def parse_slack_secret(secret_string: str) -> SlackSecret:
    """``{"webhook_url": ..., "redaction_salt": ...}`` or a bare URL; errors never quote the secret."""
    text = secret_string.strip()
    if text.startswith("{"):
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise ConfigurationError("the Slack secret is neither a JSON object nor a URL") from None
        url = data.get("webhook_url") if isinstance(data, dict) else None
        if not isinstance(url, str) or not url.strip():
            raise ConfigurationError('the Slack secret JSON has no "webhook_url" string')
        salt = data.get("redaction_salt") or ""
        if not isinstance(salt, str):
            raise ConfigurationError('the Slack secret\'s "redaction_salt" must be a string')
        secret = SlackSecret(url.strip(), salt)
    else:
        secret = SlackSecret(text)
    check_webhook_url(secret.webhook_url)
    return secret


def check_webhook_url(url: str) -> None:
    """Only ``https`` URLs (``http`` only to the loopback interface, for local runs); never quotes the URL."""
    parts = urlsplit(url)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if not parts.hostname or not (parts.scheme == "https" or (parts.scheme == "http" and loopback)):
        raise ConfigurationError("the Slack webhook URL must be an https:// URL")


def get_slack_secret(
    client: SecretsManagerClient,
    secret_arn: str,
    *,
    max_age_seconds: float = SECRET_MAX_AGE_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> SlackSecret:
    """The Slack secret, read from Secrets Manager once per container (and again after ``max_age_seconds``)."""
    now = clock()
    cached = _SECRET_CACHE.get(secret_arn)
    if cached is not None and now - cached[0] < max_age_seconds:
        return cached[1]
    try:
        response = client.get_secret_value(SecretId=secret_arn)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "error")
        raise ConfigurationError(f"cannot read the Slack secret {secret_arn}: {code}") from exc
    except BotoCoreError as exc:
        raise ConfigurationError(f"cannot read the Slack secret {secret_arn}: {type(exc).__name__}") from exc
    secret_string = response.get("SecretString")
    if not secret_string:
        raise ConfigurationError(f"the Slack secret {secret_arn} has no SecretString")
    secret = parse_slack_secret(secret_string)
    _SECRET_CACHE[secret_arn] = (now, secret)
    return secret


def forget_slack_secret(secret_arn: str | None = None) -> None:
    """Drop the cached secret (all of them when ``secret_arn`` is None)."""
    if secret_arn is None:
        _SECRET_CACHE.clear()
    else:
        _SECRET_CACHE.pop(secret_arn, None)


# ----------------------------------------------------------------------------- posting


class SlackDeliveryError(AuditorError):
    """Slack did not accept the message (``retryable``: a later retry may succeed)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None,
        attempts: int,
        retryable: bool,
        body: str = "",
        result: NotifyResult | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        self.retryable = retryable
        self.body = body
        #: What the whole batch did (set on the error :func:`notify_slack` raises at the end).
        self.result = result


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message Slack accepted: its HTTP status and the attempts it took."""

    status: int
    attempts: int


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A webhook never redirects; following one could send the message elsewhere. 3xx becomes an error."""

    def redirect_request(self, *_args: Any, **_kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)
USER_AGENT = "ddb-traffic-auditor-notifier"


def _body_text(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return "".join(c if c.isprintable() else " " for c in text)[:200]


def retry_after_seconds(value: str | None, *, now: Callable[[], float] = time.time) -> float | None:
    """A ``Retry-After`` header in seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - now()
    return max(0.0, seconds) if seconds == seconds else None  # NaN is unreadable


def post_webhook(
    url: str,
    payload: Mapping[str, Any],
    *,
    timeout: float,
    max_attempts: int,
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
    clock: Callable[[], float] = time.monotonic,
    budget_seconds: float | None = None,
    base_delay: float = 0.5,
    max_delay: float = 8.0,
    max_retry_after: float = 30.0,
) -> Delivery:
    """POST ``payload`` as JSON to the webhook, retrying transient failures; raises :class:`SlackDeliveryError`.

    The wait before attempt ``n + 1`` is ``Retry-After`` for a 429 (capped at ``max_retry_after``), else an
    exponential backoff ``min(max_delay, base_delay * 2**(n-1))`` with jitter (between half and all of it).
    With ``budget_seconds``, no attempt starts that could not finish (wait plus timeout) within the budget.
    """
    check_webhook_url(url)
    body = orjson.dumps(payload)
    started = clock()
    attempt = 0
    while True:
        attempt += 1
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT},
        )
        retry_after: float | None = None
        last_status: int | None = None
        text = ""
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                status = int(response.status)
                response.read(1024)
            log.info("slack_posted", status=status, attempts=attempt)
            return Delivery(status=status, attempts=attempt)
        except urllib.error.HTTPError as exc:
            status, text = exc.code, _body_text(exc.read(1024) if exc.fp is not None else b"")
            exc.close()
            if status != 429 and status < 500:
                raise SlackDeliveryError(
                    f"Slack rejected the message: HTTP {status} {text or exc.reason} (not retried)",
                    status=status,
                    attempts=attempt,
                    retryable=False,
                    body=text,
                ) from None
            if status == 429:
                retry_after = retry_after_seconds(exc.headers.get("Retry-After"))
            problem = f"HTTP {status} {text}".strip()
            last_status = status
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            # URLError is an OSError; its reason (never the URL) says what failed: refused, timed out, reset...
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            problem = f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__
        if attempt >= max_attempts:
            raise SlackDeliveryError(
                f"Slack webhook failed after {attempt} attempt{'s' if attempt != 1 else ''}: {problem}",
                status=last_status,
                attempts=attempt,
                retryable=True,
                body=text,
            )
        if retry_after is not None:
            delay = min(retry_after, max_retry_after)
        else:
            backoff = min(max_delay, base_delay * 2 ** (attempt - 1))
            delay = backoff / 2 + rng() * backoff / 2
        if budget_seconds is not None and clock() - started + delay + timeout > budget_seconds:
            raise SlackDeliveryError(
                f"Slack webhook failed after {attempt} attempt{'s' if attempt != 1 else ''} and no time is left "
                f"for another: {problem}",
                status=last_status,
                attempts=attempt,
                retryable=True,
                body=text,
            )
        log.warning("slack_post_retry", attempt=attempt, problem=problem, retry_in=round(delay, 3))
        sleep(delay)


# ----------------------------------------------------------------------------- the notifier


@dataclass(slots=True)
class NotifyResult:
    """What happened to a batch of finding events."""

    #: Digests with no finding at the minimum severity (nothing posted).
    skipped: int = 0
    delivered: int = 0
    #: Delivered as plain text after Slack rejected the blocks (400).
    text_only: int = 0
    #: Delivered from the readable message because ``finding_json`` was missing or invalid.
    from_message: int = 0
    failed: int = 0
    #: Messages Slack had accepted already (a duplicate SNS delivery, a retry after the ``posted`` mark): not posted.
    already_posted: int = 0
    #: Posts of messages an earlier delivery marked ``posting`` and never ``posted``: Slack may have had them.
    repeated: int = 0
    #: Posts whose ``posted`` mark could not be written (a later delivery of the message counts a possible repeat).
    bookkeeping_failed: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counts; the delivery records' counts only when not zero."""
        counts = asdict(self)
        return {name: n for name, n in counts.items() if n or name not in _RECORD_COUNTS}


_RECORD_COUNTS = frozenset({"already_posted", "repeated", "bookkeeping_failed"})


#: Statuses meaning the webhook itself is gone or forbidden (revoked, channel archived): re-read the secret.
_STALE_WEBHOOK = frozenset({403, 404, 410})


def notify_slack(
    events: Sequence[FindingNotification],
    *,
    secrets_client: SecretsManagerClient,
    settings: Settings,
    sleep: Callable[[float], None] = time.sleep,
    budget_seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    deliveries: DeliveryLog | None = None,
) -> NotifyResult:
    """Render and post every event; raise :class:`SlackDeliveryError` at the end if any could not be delivered.

    Every event is attempted even if an earlier one failed; the error raised names how many failed, so the
    caller (the Lambda) fails and the event is retried, then dead-lettered, never dropped silently. With
    ``deliveries`` each post is recorded (:mod:`auditor.state.slack_deliveries`): a message Slack accepted already
    is not posted again, one that may have reached it is posted again and counted in ``repeated``.
    """
    secret_arn = settings.require("slack_secret_arn")
    secret = get_slack_secret(secrets_client, secret_arn)
    result = NotifyResult()
    errors: list[SlackDeliveryError] = []
    started = clock()
    for event in events:
        bound = log.bind(message_id=event.message_id)
        payload, structured = build_message(
            event, redact=settings.redact_keys, salt=secret.redaction_salt, min_severity=settings.slack_min_severity
        )
        if not payload:
            result.skipped += 1
            continue
        record = _Record.begin(deliveries, event, result, errors)
        if record is None:
            continue
        remaining = None if budget_seconds is None else budget_seconds - (clock() - started)
        post = _poster(secret.webhook_url, settings, sleep=sleep, clock=clock, budget_seconds=remaining)
        try:
            try:
                post(payload)
            except SlackDeliveryError as exc:
                if exc.status != 400 or "blocks" not in payload:
                    raise
                bound.warning("slack_blocks_rejected", slack_error=exc.body)
                post(text_only(payload))
                result.text_only += 1
        except SlackDeliveryError as exc:
            if exc.status in _STALE_WEBHOOK:
                forget_slack_secret(secret_arn)
            bound.error("slack_delivery_failed", error=str(exc), status=exc.status, attempts=exc.attempts)
            errors.append(exc)
            result.failed += 1
            record.refused(exc)
            continue
        record.posted(result)
        result.delivered += 1
        result.from_message += 0 if structured else 1
    if errors:
        first = errors[0]
        raise SlackDeliveryError(
            f"{len(errors)} of {len(events)} Slack message{'s' if len(events) != 1 else ''} not delivered: {first}",
            status=first.status,
            attempts=first.attempts,
            retryable=any(e.retryable for e in errors),
            body=first.body,
            result=result,
        )
    return result


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class _Record:
    """One message's delivery record around its post (nothing when the notifier keeps none)."""

    deliveries: DeliveryLog | None
    key: str
    token: str
    log: Any

    @classmethod
    def begin(
        cls,
        deliveries: DeliveryLog | None,
        event: FindingNotification,
        result: NotifyResult,
        errors: list[SlackDeliveryError],
    ) -> _Record | None:
        """Mark the message ``posting``; None when it must not be posted now (accepted already, or not marked)."""
        key = event.attributes.get(AttributeName.EVENT_ID) or event.message_id
        bound = log.bind(message_id=event.message_id, message_key=key)
        if deliveries is None:
            return cls(None, key, "", bound)
        try:
            claim, token = deliveries.begin(key, _now())
        except (ClientError, BotoCoreError) as exc:  # not posted: the message fails, Lambda retries it (delayed)
            bound.error("slack_delivery_record_failed", error=f"{type(exc).__name__}: {exc}")
            errors.append(SlackDeliveryError(f"cannot record the delivery: {exc}", status=None, attempts=0,
                                             retryable=True))  # fmt: skip
            result.failed += 1
            return None
        if claim is Claim.POSTED:
            bound.info("slack_already_posted")
            result.already_posted += 1
            return None
        if claim is Claim.UNSURE:  # an earlier delivery stopped between its post and the mark, or lost the answer
            bound.warning("slack_post_may_repeat")
            result.repeated += 1
        return cls(deliveries, key, token, bound)

    def posted(self, result: NotifyResult) -> None:
        """Slack accepted the post: mark it (a failed mark makes a later delivery a counted repeat, never a loss)."""
        if self.deliveries is None:
            return
        try:
            self.deliveries.posted(self.key, self.token, _now())
        except (ClientError, BotoCoreError) as exc:
            result.bookkeeping_failed += 1
            self.log.warning("slack_posted_mark_failed", error=f"{type(exc).__name__}: {exc}")

    def refused(self, exc: SlackDeliveryError) -> None:
        """Slack answered with a refusal: nothing was posted, the next delivery is a first post. Without an answer
        (a timeout, a lost connection) the ``posting`` mark stays: Slack may have accepted it."""
        if self.deliveries is None or exc.status is None:
            return
        try:
            self.deliveries.refused(self.key, self.token, _now())
        except (ClientError, BotoCoreError) as error:
            self.log.warning("slack_refused_mark_failed", error=f"{type(error).__name__}: {error}")


def _poster(
    url: str,
    settings: Settings,
    *,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    budget_seconds: float | None,
) -> Callable[[Mapping[str, Any]], Delivery]:
    def post(payload: Mapping[str, Any]) -> Delivery:
        return post_webhook(
            url,
            payload,
            timeout=settings.slack_timeout_seconds,
            max_attempts=settings.slack_max_attempts,
            sleep=sleep,
            clock=clock,
            budget_seconds=budget_seconds,
        )

    return post

"""Many accounts and regions: which ones to audit, a session per account, and a bounded fan-out over them.

:func:`parse_regions`, :func:`organization_accounts`, :class:`SessionFactory` (the member role assumed once per
account) and :func:`fan_out`, where a target that fails becomes a :class:`CoverageGap` and never stops the others.
Details are in docs/sources.md.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import structlog
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from auditor.exceptions import InputError
from auditor.sources.aws_calls import ACCESS_DENIED, CLIENT_CONFIG, THROTTLING, error_code, error_message

if TYPE_CHECKING:
    import boto3
    from mypy_boto3_organizations import OrganizationsClient
    from mypy_boto3_sts import STSClient

__all__ = [
    "CoverageGap",
    "GapReason",
    "SessionFactory",
    "Target",
    "TargetOutcome",
    "classify_failure",
    "fan_out",
    "organization_accounts",
    "parse_accounts",
    "parse_regions",
    "targets",
]

log = structlog.get_logger(__name__)

R = TypeVar("R")

GapReason = Literal["role_missing", "access_denied", "region_not_enabled", "throttled", "deferred", "error"]

#: What AWS answers in a Region the account has not enabled (opt-in Regions): the credentials are not valid there.
REGION_NOT_ENABLED = frozenset({"UnrecognizedClientException", "InvalidClientTokenId", "AuthFailure", "OptInRequired"})
#: Default number of (account, region) targets audited at once.
DEFAULT_CONCURRENCY = 8
#: Upper bound of ``--max-concurrency`` (each target runs its own small thread pool too).
MAX_CONCURRENCY = 64
_ACCOUNT_ID_LEN = 12


@dataclass(frozen=True, slots=True, order=True)
class Target:
    """One account and Region to audit; ``account`` None means the caller's own credentials, unnamed."""

    account: str | None
    region: str

    def describe(self) -> str:
        return f"{self.account or 'own account'}/{self.region}"


@dataclass(frozen=True, slots=True)
class CoverageGap:
    """An account/Region the audit could not (fully) read: what is unknown there, and why."""

    account: str | None
    region: str | None
    reason: GapReason
    call: str
    error_code: str
    message: str

    def describe(self) -> str:
        where = f"{self.account or 'own account'}/{self.region or '-'}"
        return f"{where}: {self.reason.replace('_', ' ')} ({self.call}: {self.error_code}) {self.message}".rstrip()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class TargetOutcome(Generic[R]):
    """What one target gave: its result, or the gap that replaced it."""

    target: Target
    result: R | None = None
    gap: CoverageGap | None = None


class TargetError(Exception):
    """A target's audit found nothing readable (e.g. ``ListTables`` denied): carries the call and error code."""

    def __init__(self, call: str, code: str, message: str) -> None:
        super().__init__(f"{call}: {code}: {message}")
        self.call, self.code, self.message = call, code, message


def parse_regions(text: str | None, session: boto3.Session) -> list[str]:
    """``a,b`` or ``all`` as a sorted list of Region names; None or empty: the session's Region (a one-item list)."""
    if text is None or not text.strip():
        if not session.region_name:
            raise InputError("no AWS Region: pass --regions (or --region) or set AWS_REGION / AWS_DEFAULT_REGION")
        return [session.region_name]
    if text.strip() == "all":
        partition = session.get_partition_for_region(session.region_name or "us-east-1")
        regions = session.get_available_regions("dynamodb", partition_name=partition)
        if not regions:
            raise InputError(f"--regions all: no DynamoDB Regions known for partition {partition}")
        return sorted(regions)
    names = sorted({r.strip() for r in text.split(",") if r.strip()})
    bad = [r for r in names if not _looks_like_region(r)]
    if bad:
        raise InputError(f"--regions: not a Region name: {bad[0]!r} (expected e.g. us-east-1,eu-west-1 or all)")
    return names


def _looks_like_region(name: str) -> bool:
    parts = name.split("-")
    return 3 <= len(parts) <= 4 and parts[-1].isdigit() and all(p.isalnum() and p.islower() for p in parts[:-1])


def parse_accounts(text: str) -> list[str]:
    """``--accounts 111122223333,444455556666`` as a sorted list of 12-digit ids (an input error otherwise)."""
    ids = sorted({a.strip() for a in text.split(",") if a.strip()})
    bad = [a for a in ids if len(a) != _ACCOUNT_ID_LEN or not a.isdigit()]
    if bad:
        raise InputError(f"--accounts: not a 12-digit account id: {bad[0]!r}")
    if not ids:
        raise InputError("--accounts: no account id given")
    return ids


def organization_accounts(client: OrganizationsClient) -> list[str]:
    """The ids of the Organization's ACTIVE accounts (every page of ``ListAccounts``), sorted."""
    ids: set[str] = set()
    for page in client.get_paginator("list_accounts").paginate():
        for account in page.get("Accounts", []):
            # ``State`` replaces the deprecated ``Status``; older answers carry only ``Status``.
            state = account.get("State") or account.get("Status")
            if state == "ACTIVE":
                ids.add(account["Id"])
    return sorted(ids)


def caller_account(session: boto3.Session) -> str:
    """The account of ``session``'s credentials (``sts:GetCallerIdentity``)."""
    from auditor.sources.aws_calls import CLIENT_CONFIG

    return session.client("sts", config=CLIENT_CONFIG).get_caller_identity()["Account"]


def session_organization_accounts(session: boto3.Session) -> list[str]:
    """:func:`organization_accounts` with ``session``'s Organizations client."""
    from auditor.sources.aws_calls import CLIENT_CONFIG

    return organization_accounts(session.client("organizations", config=CLIENT_CONFIG))


def targets(accounts: Sequence[str | None], regions: Sequence[str]) -> list[Target]:
    """Every (account, Region) pair, account-major (one account's Regions run close together)."""
    return [Target(a, r) for a in accounts for r in regions]


class SessionFactory:
    """One boto3 session per account: the member role assumed there, or the base session.

    ``role_name`` None uses the base session for every account (``--accounts`` without ``--role-name`` is refused by
    the CLI, so that only happens for the caller's own account). The base session's own account (``own_account``) is
    read with the base credentials, no role needed. Sessions are cached: one AssumeRole per account per run.
    """

    def __init__(
        self,
        base: boto3.Session,
        role_name: str | None,
        *,
        own_account: str | None = None,
        external_id: str | None = None,
        session_name: str = "ddb-traffic-auditor",
        partition: str = "aws",
        sts: STSClient | None = None,
    ) -> None:
        self.base = base
        self.role_name = role_name
        self.own_account = own_account
        self.external_id = external_id
        self.session_name = session_name
        self.partition = partition
        self._sts = sts
        self._lock = threading.Lock()
        self._sessions: dict[str, boto3.Session] = {}
        #: AssumeRole calls made (one per account at most).
        self.assume_calls = 0

    def role_arn(self, account: str) -> str:
        return f"arn:{self.partition}:iam::{account}:role/{self.role_name}"

    def _sts_client(self) -> STSClient:
        if self._sts is None:
            self._sts = self.base.client("sts", config=CLIENT_CONFIG)
        return self._sts

    def session(self, account: str | None) -> boto3.Session:
        """The session for ``account`` (raises ClientError from AssumeRole when the role cannot be assumed)."""
        if account is None or self.role_name is None or account == self.own_account:
            return self.base
        with self._lock:
            cached = self._sessions.get(account)
            if cached is not None:
                return cached
            kwargs: dict[str, Any] = {"RoleArn": self.role_arn(account), "RoleSessionName": self.session_name}
            if self.external_id:
                kwargs["ExternalId"] = self.external_id
            self.assume_calls += 1
            creds = self._sts_client().assume_role(**kwargs)["Credentials"]
            import boto3

            session = boto3.Session(
                aws_access_key_id=creds["AccessKeyId"],
                aws_secret_access_key=creds["SecretAccessKey"],
                aws_session_token=creds["SessionToken"],
                region_name=self.base.region_name,
            )
            self._sessions[account] = session
            return session


def classify_failure(target: Target, exc: BaseException, call: str) -> CoverageGap:
    """The coverage gap a failed target leaves: why it could not be read."""
    code = exc.code if isinstance(exc, TargetError) else error_code(exc)
    message = exc.message if isinstance(exc, TargetError) else error_message(exc)
    call = exc.call if isinstance(exc, TargetError) else call
    reason: GapReason
    if call == "sts:AssumeRole" and (code in ACCESS_DENIED or code == "NoSuchEntity"):
        # AWS answers AccessDenied both when the role does not exist and when its trust policy does not name us.
        reason = "role_missing"
    elif code in REGION_NOT_ENABLED or isinstance(exc, EndpointConnectionError):
        reason = "region_not_enabled"
    elif code in ACCESS_DENIED:
        reason = "access_denied"
    elif code in THROTTLING:
        reason = "throttled"
    else:
        reason = "error"
    return CoverageGap(target.account, target.region, reason, call, code, message)


def fan_out(
    items: Iterable[Target],
    factory: SessionFactory,
    work: Callable[[Target, boto3.Session], R],
    *,
    max_workers: int = DEFAULT_CONCURRENCY,
    should_start: Callable[[], bool] | None = None,
    on_done: Callable[[TargetOutcome[R]], None] | None = None,
    claim: Callable[[int], bool] | None = None,
) -> list[TargetOutcome[R]]:
    """Run ``work(target, session)`` for every target, at most ``max_workers`` at once; outcomes in input order.

    A failure (AssumeRole, a client error, an unreachable endpoint, or a :class:`TargetError` the work raises) is the
    target's coverage gap. Targets start strictly in input order, one decision at a time: before each start
    ``should_start`` (time left in a Lambda invocation) and then ``claim(index)`` (a stored cursor) are asked; once
    either says no, no further target starts, so the started targets are always a prefix of ``items``. The rest
    are ``deferred`` gaps (not started, nothing known). ``on_done`` sees each outcome as it finishes (progress).
    An exception from ``should_start`` or ``claim`` stops the starts and is raised once the started targets end.
    """
    todo = list(items)
    if not 1 <= max_workers <= MAX_CONCURRENCY:
        raise InputError(f"concurrency must be 1..{MAX_CONCURRENCY}, got {max_workers}")
    outcomes: list[TargetOutcome[R] | None] = [None] * len(todo)
    lock = threading.Lock()
    state = {"next": 0, "stopped": False}

    def take() -> int | None:
        with lock:
            index = state["next"]
            if state["stopped"] or index >= len(todo):
                return None
            try:
                go = (should_start is None or should_start()) and (claim is None or claim(index))
            except BaseException:
                state["stopped"] = True
                raise
            if not go:
                state["stopped"] = True
                return None
            state["next"] = index + 1
            return index

    def run(index: int) -> None:
        target = todo[index]
        call = "sts:AssumeRole"
        try:
            session = factory.session(target.account)
            call = "audit"
            outcome: TargetOutcome[R] = TargetOutcome(target, result=work(target, session))
        except (ClientError, BotoCoreError, TargetError) as exc:
            gap = classify_failure(target, exc, call)
            log.warning("target_not_covered", **gap.to_dict())
            outcome = TargetOutcome(target, gap=gap)
        outcomes[index] = outcome
        if on_done is not None:
            on_done(outcome)

    def worker() -> None:
        while (index := take()) is not None:
            run(index)

    workers = min(max_workers, len(todo))
    if workers <= 1:
        worker()
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="target") as pool:
            futures = [pool.submit(worker) for _ in range(workers)]
        for future in futures:
            future.result()
    done: list[TargetOutcome[R]] = []
    for index, outcome in enumerate(outcomes):
        if outcome is None:
            target = todo[index]
            gap = CoverageGap(target.account, target.region, "deferred", "-", "TimeBudget", "not started: time budget")
            outcome = TargetOutcome(target, gap=gap)
            if on_done is not None:
                on_done(outcome)
        done.append(outcome)
    return done

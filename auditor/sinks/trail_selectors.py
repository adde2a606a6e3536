"""The capture controller's one write to CloudTrail: PutEventSelectors on the stack's own trail.

One attempt per call; the controller (:mod:`auditor.service.capture`) decides about retries, backoff and the
fallback. CloudTrail allows one PutEventSelectors per second per account and Region.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_cloudtrail import CloudTrailClient

__all__ = ["THROTTLING_CODES", "PutOutcome", "put_selectors"]

THROTTLING_CODES = frozenset({"ThrottlingException", "TooManyRequestsException", "Throttling"})


@dataclass(frozen=True, slots=True)
class PutOutcome:
    ok: bool
    code: str = ""
    message: str = ""

    @property
    def throttled(self) -> bool:
        return self.code in THROTTLING_CODES

    @property
    def detail(self) -> str:
        return f"{self.code}: {self.message}" if self.code else ""


def put_selectors(ct: CloudTrailClient, trail: str, selectors: list[dict[str, Any]]) -> PutOutcome:
    """Replace the trail's advanced event selectors with ``selectors`` (one call; an AWS error is returned)."""
    try:
        ct.put_event_selectors(TrailName=trail, AdvancedEventSelectors=selectors)  # type: ignore[arg-type]
    except ClientError as exc:
        err = exc.response.get("Error", {})
        return PutOutcome(False, str(err.get("Code", "")), str(err.get("Message", "")))
    return PutOutcome(True)

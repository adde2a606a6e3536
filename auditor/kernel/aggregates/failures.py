"""Failed calls a table window counts apart: throttling (which error codes, and the cause a message names) and
writes rejected for an item over 400 KB.

:func:`throttle_cause` reads ``ThrottlingReasons`` (or the classic messages) into the causes the throttling detector
reports; the two generic causes are left for the detector to decide from how the throttled calls spread over keys.
"""

from __future__ import annotations

import re
from typing import Final

#: Internal cause of a classic ProvisionedThroughputExceededException message (see :func:`throttle_cause`).
GENERIC_PROVISIONED: Final = "provisioned_or_key_range"
#: Internal cause of a ThrottlingException on a data-plane call without ``ThrottlingReasons`` (on-demand tables).
GENERIC_ON_DEMAND: Final = "on_demand_or_key_range"

#: Error codes of a throttled call.
THROTTLE_CODES: Final = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
#: How the message of a write rejected for its item's size starts (a ValidationException).
SIZE_EXCEEDED_PREFIXES: Final = ("Item size has exceeded", "Item size to update has exceeded")

_REASON: Final = re.compile(
    r"(Table|Index)(Read|Write)(KeyRangeThroughput|ProvisionedThroughput|AccountLimit|MaxOnDemandThroughput)Exceeded"
)
_INDEX_ARN: Final = re.compile(r":table/[^/\s]+/index/([A-Za-z0-9_.-]+)")
_LIMIT_CAUSE: Final = {
    "KeyRangeThroughput": "key_range",
    "ProvisionedThroughput": "provisioned",
    "AccountLimit": "account_limit",
    "MaxOnDemandThroughput": "on_demand_max",
}


def throttle_cause(error_code: str, message: str | None) -> tuple[str, str | None]:
    """The cause of a throttled call and the index it names, from ``ThrottlingReasons`` or the message.

    Returns (cause, index): cause is ``key_range``, ``provisioned``, ``account_limit``, ``on_demand_max``,
    ``gsi_backpressure`` (an index write limit that throttled a base-table write), ``unknown``,
    :data:`GENERIC_PROVISIONED` for the classic ProvisionedThroughputExceededException message without
    ``ThrottlingReasons`` (the same for exhausted table capacity and for a hot partition), or
    :data:`GENERIC_ON_DEMAND` for a ThrottlingException without reasons (an on-demand table: a hot partition or
    the table's maximum). The throttling detector decides these two from how the throttled calls spread over keys.
    """
    text = message or ""
    m = _REASON.search(text)
    if m:
        resource, op, limit = m.groups()
        index_match = _INDEX_ARN.search(text)
        index = index_match.group(1) if index_match else None
        if resource == "Index" and op == "Write":
            return "gsi_backpressure", index
        return _LIMIT_CAUSE[limit], index
    if error_code == "RequestLimitExceeded":
        return "account_limit", None
    if "level of configured provisioned throughput" in text:
        return GENERIC_PROVISIONED, None
    if error_code == "ThrottlingException":
        return GENERIC_ON_DEMAND, None
    return "unknown", None

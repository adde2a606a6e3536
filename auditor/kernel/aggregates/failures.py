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
#: Prefix of a cause read from a classic message (no ``ThrottlingReasons``): the detector reports it as decided by
#: the error message.
FROM_MESSAGE: Final = "message:"

# The classic messages DynamoDB answers a throttled call with (docs/capacity.md lists them with their sources: the
# DynamoDB API Reference, TransactWriteItems/TransactGetItems "Errors", and the botocore exception pages), each matched
# on a distinctive part, so a message cut at CloudTrail's 1 KB or with a reason appended still matches:
# - provisioned GSI: "The level of configured provisioned throughput for one or more global secondary indexes of the
#   table was exceeded. Consider increasing your provisioning level for the under-provisioned global secondary
#   indexes with the UpdateTable API.";
# - on-demand GSI: "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is
#   automatically scaling your index so please try again shortly.";
# - provisioned table: "The level of configured provisioned throughput for the table was exceeded. Consider
#   increasing your provisioning level with the UpdateTable API.";
# - on-demand table (logged with ProvisionedThroughputExceededException as with ThrottlingException): "Throughput
#   exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so
#   please try again shortly. If exceptions persist, check if you have a hot key: ...";
# - account quota (RequestLimitExceeded): "Throughput exceeds the current throughput quota for your account." (older
#   SDKs: "... limit for your account").
_GSI_PROVISIONED, _GSI_ON_DEMAND, _TABLE_PROVISIONED, _ON_DEMAND, _ACCOUNT = (
    "provisioned throughput for one or more global secondary indexes",
    "current capacity for one or more global secondary indexes",
    "level of configured provisioned throughput",
    "current capacity of your table or index",
    "for your account",
)


def throttle_cause(
    error_code: str, message: str | None, write: bool = True, index: str | None = None
) -> tuple[str, str | None]:
    """The cause of a throttled call and the index it names, from ``ThrottlingReasons`` or the classic message.

    ``write``: whether the call writes; ``index``: the index a read used (a GSI message on a read names it).
    Returns (cause, index): cause is ``key_range``, ``provisioned``, ``account_limit``, ``on_demand_max``,
    ``gsi_backpressure`` (an index write limit that throttled a base-table write), ``unknown`` (a
    ProvisionedThroughputExceededException with no message DynamoDB words), the same prefixed with
    :data:`FROM_MESSAGE` when a classic message (not ``ThrottlingReasons``) names it, :data:`GENERIC_PROVISIONED` for
    the provisioned-table message (the same for exhausted table capacity and for a hot partition), or
    :data:`GENERIC_ON_DEMAND` for the on-demand message or a ThrottlingException without reasons (a hot partition or
    the table's maximum). The throttling detector decides these two from how the throttled calls spread over keys.
    """
    text = message or ""
    m = _REASON.search(text)
    if m:
        resource, op, limit = m.groups()
        index_match = _INDEX_ARN.search(text)
        named = index_match.group(1) if index_match else None
        if resource == "Index" and op == "Write":
            return "gsi_backpressure", named
        return _LIMIT_CAUSE[limit], named
    gsi_provisioned = _GSI_PROVISIONED in text
    if gsi_provisioned or _GSI_ON_DEMAND in text:
        if write:  # a GSI that cannot absorb its share of a base-table write throttles the write
            return FROM_MESSAGE + "gsi_backpressure", None
        return (FROM_MESSAGE + "provisioned" if gsi_provisioned else GENERIC_ON_DEMAND), index
    if error_code == "RequestLimitExceeded" or _ACCOUNT in text:
        return "account_limit", None
    if _TABLE_PROVISIONED in text:
        return GENERIC_PROVISIONED, None
    if _ON_DEMAND in text or error_code == "ThrottlingException":
        return GENERIC_ON_DEMAND, None
    return "unknown", None


#: Error code of a transaction DynamoDB cancelled; its message lists a reason per item, in the order of the items.
TRANSACTION_CANCELED: Final = "TransactionCanceledException"
#: The key under which writes rejected as too large are counted when the call was a batch or transaction rejected as
#: a whole (the error does not say which of its items was too large).
WHOLE_CALL: Final = "(batch or transaction call)"
_REASONS_LIST: Final = re.compile(r"\[([A-Za-z, ]*)\]\s*$")
#: Cancellation reason codes of a throttled transaction item (API Reference, TransactWriteItems "Errors").
_THROTTLED_REASONS: Final = {
    "ProvisionedThroughputExceeded": GENERIC_PROVISIONED,
    "ThrottlingError": GENERIC_ON_DEMAND,
}


def transaction_reasons(message: str | None) -> list[str | None]:
    """Per item of a cancelled transaction, the throttling cause its cancellation reason names (None for any other
    reason), from the message CloudTrail logs: "Transaction cancelled, please refer cancellation reasons for specific
    reasons [ConditionalCheckFailed, None]" (the TransactWriteItems sample in the DynamoDB developer guide's
    CloudTrail page). Empty when the message lists no reasons."""
    m = _REASONS_LIST.search(message or "")
    if m is None:
        return []
    return [_THROTTLED_REASONS.get(reason.strip()) for reason in m.group(1).split(",")]

"""What one key access costs in the units the table windows count (one read of an item up to 4 KB, one write up to
1 KB): one, or more for a transaction's item and for a Query page that was not the last (:func:`extra_units`)."""

from __future__ import annotations

from typing import Final

from auditor.kernel.calls import ApiCall

#: Operations whose items DynamoDB meters at twice the units of a plain read or write ("Transactional read/write
#: requests": https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling);
#: the key counts (``key_requests`` and the key sketches) count such an item twice, so they are in single-item units.
TRANSACTIONAL: Final = frozenset({"TransactWriteItems", "TransactGetItems", "ExecuteTransaction"})

#: The operations whose key accesses may cost more than one unit each (see :func:`extra_units`).
METERED_OPERATIONS: Final = TRANSACTIONAL | {"Query"}
#: A 1 MB page in reads of a 4 KB item: what a Query page that was not the last reads (a page stops at 1 MB).
PAGE_READS: Final = 256


def extra_units(call: ApiCall) -> int:
    """How many reads or writes of one item a key access of ``call`` costs beyond one, in the units the key counts
    use (one read of an item up to 4 KB, one write up to 1 KB; the detectors scale them by the table's item size).

    A transactional item costs two (:data:`TRANSACTIONAL`). A Query page that logs ``exclusiveStartKey`` continues a
    Query, so the page before it was not the last: it read 1 MB (:data:`PAGE_READS`), or ``limit`` items of up to
    4 KB when the Query was bounded, where one read of the key had been counted for it.
    """
    operation = call.operation
    if operation in TRANSACTIONAL:
        return 1
    if operation == "Query" and call.scan_continuation:
        limit = call.scan_limit
        return (min(limit, PAGE_READS) if limit is not None and limit > 0 else PAGE_READS) - 1
    return 0

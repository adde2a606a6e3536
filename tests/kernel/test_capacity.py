"""Issue 29 in the kernel: throttling causes from every classic message, AWS services' own calls kept apart, errors
charged where they belong, logical scans from what is logged, transactions metered at twice the units.

The messages are DynamoDB's own, word for word: the API Reference (TransactWriteItems, "Errors",
TransactionCanceledException) lists the ProvisionedThroughputExceeded and ThrottlingError messages of tables and
GSIs; the TransactWriteItems cancellation message is the sample of the developer guide's CloudTrail page.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from auditor.kernel.aggregates.failures import (
    FROM_MESSAGE,
    GENERIC_ON_DEMAND,
    GENERIC_PROVISIONED,
    WHOLE_CALL,
    throttle_cause,
    transaction_reasons,
)
from auditor.kernel.aggregates.scans import SCAN_SPAN_SECONDS, ScanStats
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.calls import Access, ApiCall, ItemAccess
from auditor.kernel.decode import light_record
from auditor.kernel.general import SERVICE, _normalize_general
from auditor.kernel.normalize import light_item, normalize_record, single_item
from tests.factories import T0, call, span

TABLE_PROVISIONED = (
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning "
    "level with the UpdateTable API."
)
GSI_PROVISIONED = (
    "The level of configured provisioned throughput for one or more global secondary indexes of the table was "
    "exceeded. Consider increasing your provisioning level for the under-provisioned global secondary indexes with "
    "the UpdateTable API."
)
ON_DEMAND = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or "
    "index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
GSI_ON_DEMAND = (
    "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically "
    "scaling your index so please try again shortly."
)
#: botocore's RequestLimitExceeded page.
ACCOUNT_QUOTA = "Throughput exceeds the current throughput quota for your account."
PTE = "ProvisionedThroughputExceededException"


# ----------------------------------------------------------------------------- throttling causes


@pytest.mark.parametrize(
    ("code", "message", "write", "index", "expected"),
    [
        (PTE, TABLE_PROVISIONED, True, None, (GENERIC_PROVISIONED, None)),
        # the GSI messages are not the table's: a write is throttled by the index's back-pressure
        (PTE, GSI_PROVISIONED, True, None, (FROM_MESSAGE + "gsi_backpressure", None)),
        ("ThrottlingException", GSI_ON_DEMAND, True, None, (FROM_MESSAGE + "gsi_backpressure", None)),
        # ... and a read of the index by its own capacity
        (PTE, GSI_PROVISIONED, False, "ByStatus", (FROM_MESSAGE + "provisioned", "ByStatus")),
        ("ThrottlingException", GSI_ON_DEMAND, False, "ByStatus", (GENERIC_ON_DEMAND, "ByStatus")),
        # the on-demand text decides whatever the exception's name
        (PTE, ON_DEMAND, True, None, (GENERIC_ON_DEMAND, None)),
        ("ThrottlingException", ON_DEMAND, False, None, (GENERIC_ON_DEMAND, None)),
        ("RequestLimitExceeded", ACCOUNT_QUOTA, True, None, ("account_limit", None)),
        (PTE, None, True, None, ("unknown", None)),
        # ThrottlingReasons win over the words around them
        (PTE, GSI_PROVISIONED + " TableWriteKeyRangeThroughputExceeded", True, None, ("key_range", None)),
    ],
)
def test_every_classic_message_has_its_cause(
    code: str, message: str | None, write: bool, index: str | None, expected: tuple[str, str | None]
) -> None:
    assert throttle_cause(code, message, write, index) == expected


def test_transaction_reasons_are_positional() -> None:
    assert transaction_reasons(
        "Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None]"
    ) == [None, None]
    assert transaction_reasons(
        "Transaction cancelled, please refer cancellation reasons for specific reasons "
        "[None, ThrottlingError, ProvisionedThroughputExceeded]"
    ) == [None, GENERIC_ON_DEMAND, GENERIC_PROVISIONED]
    assert transaction_reasons(None) == []


def _transaction(keys: list[str], message: str) -> ApiCall:
    items = tuple(ItemAccess("Wallets", "TransactWriteItems:Update", Access.WRITE, None, {"id": k}) for k in keys)
    return ApiCall(
        "tx-1", T0, "TransactWriteItems", Access.WRITE, "111122223333", "us-east-1", ("Wallets",), items,
        error_code="TransactionCanceledException", error_message=message,
    )  # fmt: skip


def test_a_throttled_transaction_item_is_charged_to_its_own_key() -> None:
    message = "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError]"
    agg = span([_transaction(["A", "B"], message)])
    assert agg.throttles == {(GENERIC_ON_DEMAND, "write", ""): 1}
    assert agg.throttle_keys == {'id\x1f"B': 1}


# ----------------------------------------------------------------------------- errors charged where they belong


def _batch_write(n: int, error: tuple[str, str] | None) -> ApiCall:
    items = tuple(ItemAccess("Uploads", "BatchWriteItem:Put", Access.WRITE, None, {"id": f"U{i}"}) for i in range(n))
    code, message = error or (None, None)
    return ApiCall(
        f"bw-{n}", T0, "BatchWriteItem", Access.WRITE, "111122223333", "us-east-1", ("Uploads",), items,
        error_code=code, error_message=message,
    )  # fmt: skip


def test_a_batch_rejected_for_item_size_is_charged_once_to_the_call() -> None:
    agg = span([_batch_write(10, ("ValidationException", "Item size has exceeded the maximum allowed size"))])
    assert agg.size_exceeded == 1
    assert agg.size_exceeded_keys == {WHOLE_CALL: 1}


def test_a_single_write_rejected_for_item_size_is_charged_to_its_key() -> None:
    agg = span(
        [call("PutItem", "Uploads", {"id": "U1"}, error="ValidationException", message="Item size has exceeded")]
    )
    assert agg.size_exceeded_keys == {orjson.dumps({"id": "U1"}).decode(): 1}


# ----------------------------------------------------------------------------- transactions metered twice


def test_a_transactional_write_counts_twice_in_the_key_units() -> None:
    items = (ItemAccess("Wallets", "TransactWriteItems:Update", Access.WRITE, None, {"id": "W"}),)
    tx = ApiCall("tx", T0, "TransactWriteItems", Access.WRITE, "111122223333", "us-east-1", ("Wallets",), items)
    agg = span([tx, call("PutItem", "Wallets", {"id": "W"}, at=1.0)])
    assert (agg.key_requests, agg.key_writes, agg.item_writes) == (3, 3, 2)
    assert agg.hot.counts['id\x1f"W'] == 3


# ----------------------------------------------------------------------------- AWS services' own calls

#: CloudTrail userIdentity element: ``type`` AWSService, the service in ``invokedBy``.
TTL_IDENTITY = {"type": "AWSService", "invokedBy": "dynamodb.amazonaws.com"}
REPLICATION_IDENTITY = {
    "type": "AssumedRole",
    "principalId": "AROAEXAMPLE:replication",
    "arn": "arn:aws:sts::111122223333:assumed-role/AWSServiceRoleForDynamoDBReplication/replication",
    "accountId": "111122223333",
    "sessionContext": {
        "sessionIssuer": {
            "type": "Role",
            "arn": "arn:aws:iam::111122223333:role/aws-service-role/replication.dynamodb.amazonaws.com/"
            "AWSServiceRoleForDynamoDBReplication",
            "accountId": "111122223333",
            "userName": "AWSServiceRoleForDynamoDBReplication",
        }
    },
}
APP_IDENTITY = {
    "type": "AssumedRole",
    "principalId": "AROAEXAMPLE:app",
    "arn": "arn:aws:sts::111122223333:assumed-role/app/app-session",
    "accountId": "111122223333",
    "sessionContext": {"sessionIssuer": {"type": "Role", "arn": "arn:aws:iam::111122223333:role/app"}},
}


def _delete(identity: dict[str, Any]) -> dict[str, Any]:
    """A DeleteItem in the envelope of the developer guide's PutItem sample."""
    return {
        "eventVersion": "1.08",
        "userIdentity": identity,
        "eventTime": "2026-12-03T00:00:00Z",
        "eventSource": "dynamodb.amazonaws.com",
        "eventName": "DeleteItem",
        "awsRegion": "us-east-1",
        "sourceIPAddress": "dynamodb.amazonaws.com",
        "userAgent": "dynamodb.amazonaws.com",
        "requestParameters": {"tableName": "Carts", "key": {"cartId": "CART#1"}},
        "responseElements": None,
        "requestID": "R1",
        "eventID": "e1",
        "readOnly": False,
        "eventType": "AwsApiCall",
        "managementEvent": False,
        "recipientAccountId": "111122223333",
        "eventCategory": "Data",
    }


@pytest.mark.parametrize(
    ("identity", "principal"),
    [
        (TTL_IDENTITY, "dynamodb.amazonaws.com"),
        # the identity DynamoDB's own Time to Live stream records carry (developer guide, time-to-live-ttl-streams)
        ({"type": "Service", "principalId": "dynamodb.amazonaws.com"}, "dynamodb.amazonaws.com"),
        (REPLICATION_IDENTITY, REPLICATION_IDENTITY["sessionContext"]["sessionIssuer"]["arn"]),  # type: ignore[index]
    ],
)
def test_an_aws_services_call_is_kept_apart(identity: dict[str, Any], principal: str) -> None:
    record = _delete(identity)
    parsed = normalize_record(record)
    assert parsed is not None and (parsed.principal, parsed.principal_type) == (principal, SERVICE)
    # the light readers skip the caller, so they hand such a record back to the full path
    assert single_item(copy.deepcopy(record)) is None
    data = orjson.dumps(record)
    light = light_record(data, 0, len(data))
    assert light is None or light_item(light) is None
    agg = span([parsed])
    assert agg.service_calls == {principal: 1}
    assert (agg.calls, agg.key_requests, agg.hot.counts) == (0, 0, {})
    back = TableWindow.from_dict(orjson.loads(orjson.dumps(agg.to_dict())))
    assert back.service_calls == {principal: 1}


@pytest.mark.parametrize("invoked_by", [None, "appsync.amazonaws.com"])
def test_an_application_role_stays_a_users(invoked_by: str | None) -> None:
    # a role the application gives a service (AppSync resolvers) carries the service in invokedBy: still the app's
    record = _delete(APP_IDENTITY if invoked_by is None else {**APP_IDENTITY, "invokedBy": invoked_by})
    parsed = normalize_record(record)
    assert parsed is not None and parsed.principal_type == "AssumedRole"
    assert single_item(copy.deepcopy(record)) is not None
    data = orjson.dumps(record)
    light = light_record(data, 0, len(data))
    assert light is not None and light_item(light) is not None


# ----------------------------------------------------------------------------- logical scans


def _page(at: float, *, continuation: bool = False, segment: int | None = None, total: int | None = None,
          truncated: bool = False) -> ApiCall:  # fmt: skip
    page = call("Scan", "Users", at=at, segment=segment, total_segments=total)
    page.scan_continuation = continuation
    page.truncated = truncated
    return page


def test_every_start_is_a_scan_however_close_in_time() -> None:
    agg = span([_page(i * 0.5) for i in range(7200)], window_seconds=3600)
    [(_, stats)] = agg.scans.items()
    assert stats.logical() == 7200


def test_continuations_do_not_start_scans() -> None:
    pages = [_page(m * 60 + p * 0.4, continuation=p > 0) for m in range(10) for p in range(4)]
    [(_, stats)] = span(pages).scans.items()
    assert (stats.logical(), stats.count, stats.continuations) == (10, 40, 30)


def test_parallel_segments_are_one_scan() -> None:
    pages = [
        _page(run * 600 + seg * 0.05 + p, continuation=p > 0, segment=seg, total=8)
        for run in range(2)
        for seg in range(8)
        for p in range(5)
    ]
    [(_, stats)] = span(pages).scans.items()
    assert stats.logical() == 2


def test_time_grouping_is_for_undecided_pages_only_and_never_chains() -> None:
    # truncated pages every second for five minutes: grouped, but a group never spans more than one scan's time
    stats = ScanStats()
    for second in range(300):
        stats.add_page(_page(second, truncated=True), None, float(second), True)
    assert stats.inferred() == 300 // (SCAN_SPAN_SECONDS + 1) + 1
    assert stats.logical() == stats.inferred()


def test_scan_counts_merge_in_any_order_and_survive_serialisation() -> None:
    pages = [_page(i * 7.0, continuation=i % 3 == 1, truncated=i % 5 == 0) for i in range(60)]
    pages += [_page(1000 + s * 0.1, segment=s, total=4) for s in range(4)]
    whole = ScanStats()
    for p in pages:
        whole.add_page(p, None, p.time.timestamp(), True)
    halves = ScanStats(), ScanStats()
    for i, p in enumerate(pages):
        halves[i % 2].add_page(p, None, p.time.timestamp(), True)
    merged = ScanStats()
    merged.merge(halves[1])
    merged.merge(halves[0])
    assert merged.logical() == whole.logical()
    assert ScanStats.from_list(orjson.loads(orjson.dumps(whole.to_list()))).logical() == whole.logical()


def _by_window(pages: list[ApiCall], window: float = 900.0) -> list[ScanStats]:
    """The pages' scan counters, one per window of ``window`` seconds, in time order."""
    out: dict[int, ScanStats] = {}
    for p in pages:
        at = p.time.timestamp()
        out.setdefault(int(at // window), ScanStats()).add_page(p, None, at, True)
    return [out[w] for w in sorted(out)]


@pytest.mark.parametrize("segments", [None, 4])
def test_a_scan_across_a_window_boundary_is_one_scan_in_each_window_and_once_merged(segments: int | None) -> None:
    # one paginated (or parallel) scan from 14:30 into the next window, every page after a segment's first continuing
    start = (T0.timestamp() // 900 + 1) * 900 - 30 - T0.timestamp()
    pages = [
        _page(start + p * 2.0, continuation=p > 0, segment=s, total=segments)
        for s in range(segments or 1)
        for p in range(40)
    ]
    first, second = _by_window(pages)
    assert (first.logical(), first.opened_by_continuation) == (1, False)
    assert (second.started(), second.logical(), second.opened_by_continuation) == (0, 1, True)
    for a, b in ((first, second), (second, first)):
        merged = ScanStats()
        merged.merge(a)
        merged.merge(b)
        assert (merged.logical(), merged.opened_by_continuation) == (1, False)
    stored = ScanStats.from_list(orjson.loads(orjson.dumps(second.to_list())))
    assert (stored.logical(), stored.opened_by_continuation) == (1, True)
    # stored before the flag was kept (15 fields): pages that began no scan continued one
    assert ScanStats.from_list(second.to_list()[:15]).opened_by_continuation
    assert not ScanStats.from_list(first.to_list()[:15]).opened_by_continuation


def test_a_window_that_opens_mid_scan_and_starts_another_runs_two() -> None:
    pages = [_page(p * 2.0, continuation=True) for p in range(5)] + [_page(100.0), _page(102.0, continuation=True)]
    [stats] = _by_window(pages, 3600.0)
    assert (stats.started(), stats.logical()) == (1, 2)


def test_a_scan_stored_when_starts_were_grouped_by_time_keeps_its_count() -> None:
    stored = [30, [], 0, 1.0, 90.0, [], [[0, 4], [60, 61], [88, 90]], 12, 30, 0, 3840.0, 0, []]
    assert ScanStats.from_list(stored).logical() == 3


# ----------------------------------------------------------------------------- Query pages


def _query(continuation: bool, limit: int | None = None) -> dict[str, Any]:
    """A Query as the real captures log it (the partition-key value in ``key``, next to the expression)."""
    record = _delete(APP_IDENTITY)
    record["eventName"] = "Query"
    params: dict[str, Any] = {
        "tableName": "Tickets",
        "key": {"status": "OPEN"},
        "keyConditionExpression": "#s = :s",
        "expressionAttributeNames": {"#s": "status"},
    }
    if continuation:
        params["exclusiveStartKey"] = {"status": "OPEN", "ticketId": "T#9"}
    if limit is not None:
        params["limit"] = limit
    record["requestParameters"] = params
    return record


@pytest.mark.parametrize(("limit", "units"), [(None, 256), (25, 25), (5000, 256)])
def test_a_query_page_that_continues_meters_the_full_page_before_it(limit: int | None, units: int) -> None:
    first, then = _query(False, limit), _query(True, limit)
    assert normalize_record(first) is not None  # (single_item reads event times the full path has seen)
    assert single_item(copy.deepcopy(first)) is not None
    assert single_item(copy.deepcopy(then)) is None  # the full path reads the page's pagination
    parsed = normalize_record(then)
    assert parsed is not None and parsed.scan_continuation and parsed.scan_limit == limit
    agg = span([parsed])
    # this page (one read) and the rest of the page before it: 1 MB, or ``limit`` items of up to 4 KB
    assert (agg.key_requests, agg.key_reads, agg.item_reads) == (units, units, 1)
    assert agg.hot.counts['status\x1f"OPEN'] == units
    assert sum(n for (k, _), n in agg.seconds.items() if k == 'status\x1f"OPEN') == units
    assert agg.key_attrs == {"status": units}


# ----------------------------------------------------------------------------- BatchGetItem: consistency per table


def _batch_get(orders: bool | None, customers: bool | None) -> dict[str, Any]:
    """A BatchGetItem over two tables, each entry with its own ``consistentRead`` (``None``: not logged).

    The request is the API Reference's (BatchGetItem, Request Syntax: ``RequestItems`` maps each table to its
    ``KeysAndAttributes``, whose ``ConsistentRead`` applies to that table's keys only:
    https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html), with the lower-camel
    names CloudTrail gives request parameters (``requestItems`` as in the developer guide's TransactWriteItems
    sample, ``keys`` and ``consistentRead`` as the API's members) and the clear key values it logs, in the envelope
    of the developer guide's PutItem sample.
    """
    entries: dict[str, Any] = {}
    for table, attr, consistent in (("Orders", "orderId", orders), ("Customers", "customerId", customers)):
        entry: dict[str, Any] = {"keys": [{attr: f"{table[0]}#1"}, {attr: f"{table[0]}#2"}, {attr: f"{table[0]}#3"}]}
        if consistent is not None:
            entry["consistentRead"] = consistent
        entries[table] = entry
    record = _delete(APP_IDENTITY)
    record |= {"eventName": "BatchGetItem", "readOnly": True, "requestParameters": {"requestItems": entries}}
    return record


@pytest.mark.parametrize(
    ("orders", "customers"),
    [(False, True), (False, None), (True, False), (None, False), (False, False), (True, None), (None, None)],
)
def test_a_batch_get_meters_each_tables_logged_consistency(orders: bool | None, customers: bool | None) -> None:
    record = _batch_get(orders, customers)
    parsed = normalize_record(record)
    assert parsed is not None and parsed.consistent_read is None  # the call logs none of its own
    assert parsed.items == _normalize_general(copy.deepcopy(record)).items  # the general path reads it the same
    assert {(i.table, i.eventual) for i in parsed.items} == {
        ("Orders", orders is False),
        ("Customers", customers is False),
    }
    aggs = AggregateSet()
    aggs.add(parsed)
    windows = {w.table: w for w in aggs.windows.values()}
    # a table whose entry logs consistentRead false: its 3 reads are half a unit each; true or not logged: a full unit
    for table, consistent in (("Orders", orders), ("Customers", customers)):
        window = windows[table]
        assert (window.key_reads, window.key_reads_eventual) == (3, 3 if consistent is False else 0)
        back = TableWindow.from_dict(orjson.loads(orjson.dumps(window.to_dict())))
        assert back.key_reads_eventual == window.key_reads_eventual


def test_a_get_items_logged_consistency_is_still_the_calls() -> None:
    record = _delete(APP_IDENTITY)
    params = {"tableName": "Orders", "key": {"orderId": "O#1"}, "consistentRead": False}
    record |= {"eventName": "GetItem", "readOnly": True, "requestParameters": params}
    parsed = normalize_record(record)
    assert parsed is not None and parsed.consistent_read is False and not parsed.items[0].eventual
    assert span([parsed]).key_reads_eventual == 1

"""``ApiCall``: one normalised DynamoDB data-plane call taken from a CloudTrail record.

These are built once per record on the hot path, so they are slotted dataclasses, not pydantic models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

#: A primary key as CloudTrail logs it: attribute name -> plain JSON scalar.
KeyValues = dict[str, Any]


class Access(StrEnum):
    """Whether a call reads or writes items (decided from the operation or statement verb)."""

    READ = "read"
    WRITE = "write"


#: The commonest calls, read without building an ``ApiCall`` (see ``auditor.kernel.normalize.single_item``): a
#: successful GetItem, PutItem, UpdateItem, DeleteItem or Query as (event id, operation, event time in UTC, its POSIX
#: timestamp, account, region, table, index, key, a Query's key condition, whether it writes, whether it is a read
#: made eventually consistent on request, a write's shape). The key is None only for a Query that does not log one.
SingleItem = tuple[
    str,
    str,
    datetime,
    float,
    str,
    str,
    str,
    str | None,
    KeyValues | None,
    tuple[str, str] | None,
    bool,
    bool,
    str | None,
]


@dataclass(slots=True)
class Statement:
    """What a PartiQL statement tells us. ``***(Redacted)`` literals are opaque and never used as keys."""

    verb: str  # SELECT, INSERT, UPDATE, DELETE, EXISTS or UNKNOWN
    table: str | None
    index: str | None = None
    #: Equality literals in the WHERE clause (attribute -> literal value), redacted ones excluded.
    key_equalities: KeyValues = field(default_factory=dict)
    #: Attributes compared with ``= ***(Redacted)`` or ``= ?`` (value hidden). CloudTrail redacts only non-key
    #: values, so a ``***(Redacted)`` equality is on a non-key attribute.
    redacted_equalities: tuple[str, ...] = ()
    #: True when a SELECT/UPDATE/DELETE reads the whole table or index (no partition-key equality).
    full_scan: bool = False
    #: Attributes that may select a partition: visible equalities, ``IN`` lists and ``= ?`` parameters (sorted).
    constrained: tuple[str, ...] = ()
    #: The attribute names an INSERT states in its ``VALUE {...}`` (their values are redacted in CloudTrail).
    insert_names: tuple[str, ...] = ()


@dataclass(slots=True, init=False)
class ItemAccess:
    """One logical access inside a call. Batch and transact calls carry one per item.

    Its ``__init__`` is written out (the dataclass's generated one would stay interpreted in the compiled kernel).
    """

    table: str
    operation: str  # e.g. GetItem, Query, Scan, BatchWriteItem:Put, TransactWriteItems:Update, ExecuteStatement:SELECT
    access: Access
    index: str | None = None
    key: KeyValues | None = None
    statement: Statement | None = None
    full_scan: bool = False
    #: A Query's key condition, generalised: (partition-key attribute, the sort-key condition or ""), from
    #: ``keyConditionExpression`` + ``expressionAttributeNames`` (or the legacy ``keyConditions``).
    condition: tuple[str, str] | None = None
    #: A write's shape (what it may touch, for metering its index writes: :mod:`.aggregates.index_writes`), None
    #: when not read (then decided from the operation alone).
    shape: str | None = None
    #: A BatchGetItem item of a table whose entry in ``requestItems`` logs ``consistentRead: false`` (a read made
    #: eventually consistent on request; the batch sets consistency per table, the call has none of its own). Every
    #: other access leaves it False: its consistency is the call's (:attr:`ApiCall.consistent_read`).
    eventual: bool = False

    # fmt: off
    def __init__(
        self, table: str, operation: str, access: Access, index: str | None = None, key: KeyValues | None = None,
        statement: Statement | None = None, full_scan: bool = False, condition: tuple[str, str] | None = None,
        shape: str | None = None, eventual: bool = False,
    ) -> None:
        # (at most three names an assignment: interpreted, more would build and unpack a tuple)
        self.table, self.operation, self.access = table, operation, access
        self.index, self.key, self.statement = index, key, statement
        self.full_scan, self.condition, self.shape = full_scan, condition, shape
        self.eventual = eventual
    # fmt: on


@dataclass(slots=True, init=False)
class ApiCall:
    """A normalised DynamoDB data-plane call.

    ``principal`` is the caller's stable identity: for an assumed role it is the role ARN from
    ``sessionContext.sessionIssuer`` (``session_name`` keeps the session), otherwise the identity ARN,
    or the AWS service name for service-invoked calls. Its ``__init__`` is written out, as :class:`ItemAccess`'s.
    """

    event_id: str
    time: datetime
    operation: str  # the CloudTrail eventName
    access: Access
    account: str | None
    region: str | None
    tables: tuple[str, ...]
    items: tuple[ItemAccess, ...]
    principal: str | None = None
    principal_type: str | None = None
    session_name: str | None = None
    user_agent: str | None = None
    source_ip: str | None = None
    index: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    scan_segment: int | None = None
    scan_total_segments: int | None = None
    statement: Statement | None = None
    #: True when CloudTrail truncated requestParameters (over 100 KB) and items may be missing.
    truncated: bool = False
    #: Scan pages: the logged ``limit``, whether the page continues a scan (``exclusiveStartKey`` logged), and the
    #: shape of its filter (expression with attribute names resolved; no values are logged).
    scan_limit: int | None = None
    scan_continuation: bool = False
    scan_filter: str | None = None
    #: True when a data-plane operation's record says ``eventCategory: Management`` (analysed all the same).
    management_labelled: bool = False
    #: A read's logged ``consistentRead`` (GetItem, Query, Scan); None when the record does not log it (a BatchGetItem
    #: logs it per table: :attr:`ItemAccess.eventual`).
    consistent_read: bool | None = None

    # fmt: off
    def __init__(
        self, event_id: str, time: datetime, operation: str, access: Access, account: str | None,
        region: str | None, tables: tuple[str, ...], items: tuple[ItemAccess, ...], principal: str | None = None,
        principal_type: str | None = None, session_name: str | None = None, user_agent: str | None = None,
        source_ip: str | None = None, index: str | None = None, error_code: str | None = None,
        error_message: str | None = None, scan_segment: int | None = None, scan_total_segments: int | None = None,
        statement: Statement | None = None, truncated: bool = False, scan_limit: int | None = None,
        scan_continuation: bool = False, scan_filter: str | None = None, management_labelled: bool = False,
        consistent_read: bool | None = None,
    ) -> None:
        self.event_id, self.time, self.operation = event_id, time, operation
        self.access, self.account, self.region = access, account, region
        self.tables, self.items, self.principal = tables, items, principal
        self.principal_type, self.session_name, self.user_agent = principal_type, session_name, user_agent
        self.source_ip, self.index, self.error_code = source_ip, index, error_code
        self.error_message, self.scan_segment = error_message, scan_segment
        self.scan_total_segments, self.statement, self.truncated = scan_total_segments, statement, truncated
        self.scan_limit, self.scan_continuation, self.scan_filter = scan_limit, scan_continuation, scan_filter
        self.management_labelled, self.consistent_read = management_labelled, consistent_read
    # fmt: on

    @property
    def table(self) -> str | None:
        """The first table the call touched."""
        return self.tables[0] if self.tables else None

    @property
    def is_scan(self) -> bool:
        """A Scan, or a PartiQL statement that reads the whole table."""
        return any(i.full_scan for i in self.items)


#: What the kernel hands out: batches of calls in input order, each an ``ApiCall`` or, for the commonest calls, their
#: ``SingleItem`` (:func:`auditor.kernel.reader.read_calls`; :meth:`AggregateSet.add_batch
#: <auditor.kernel.aggregates.window.AggregateSet.add_batch>` counts one).
CallBatch = list[ApiCall | SingleItem]

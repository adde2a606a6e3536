"""Review signals the window aggregates do not keep: bounded, pure, read from the records of the same input.

Per Query template, how many Queries logged a ``filterExpression`` and which attributes it names; per principal
and Scan, the attributes its filters compare for equality or by range and the ones it projects; per principal and
GetItem key template, bursts of reads of distinct items of one partition within a few seconds (an N+1 read).
:meth:`ReviewSignals.normalizer` observes each record in the same pass as the engine's analysis.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from auditor.kernel.aggregates.keys import encode_key, partition_attr
from auditor.kernel.aggregates.sketch import HeavyHitters
from auditor.kernel.aggregates.templates import key_template, query_template
from auditor.kernel.calls import ApiCall
from auditor.kernel.normalize import normalize_record
from auditor.review.model import ReviewConfig

K = TypeVar("K")
V = TypeVar("V")

#: Open burst buckets kept before the old ones are folded into the summaries.
MAX_OPEN_BUCKETS: Final = 50_000
#: Distinct items remembered per burst bucket (enough to tell a burst of distinct items from one item re-read).
MAX_BUCKET_ITEMS: Final = 64
#: Single-item calls whose key names the partition the caller reads or writes.
_KEYED: Final = frozenset({"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query"})
#: Rows kept per summary map; more are not counted (bounded memory whatever the traffic).
MAX_ROWS: Final = 2_000

_WORDS: Final = frozenset(
    {
        "and",
        "or",
        "not",
        "between",
        "in",
        "attribute_exists",
        "attribute_not_exists",
        "attribute_type",
        "begins_with",
        "contains",
        "size",
    }
)
_TOKEN = re.compile(r"(:[A-Za-z0-9_]+)|(#[A-Za-z0-9_]+)|([A-Za-z_][A-Za-z0-9_.\-]*)|(<>|<=|>=|=|<|>|\()")


def expression_attributes(expression: str, names: Mapping[str, Any] | None = None) -> tuple[set[str], set[str]]:
    """(attributes compared for equality, attributes compared by range or function) in a condition expression."""
    equal: set[str] = set()
    other: set[str] = set()
    last: str | None = None
    func: str | None = None
    for value, placeholder, word, op in _TOKEN.findall(expression):
        if value:
            continue
        if op:
            if last is not None and op in ("=", "<>", "<", ">", "<=", ">="):
                (equal if op == "=" else other).add(last)
                last = None
            continue
        if word and word.lower() in _WORDS:
            func = word.lower()
            if func in ("between", "in") and last is not None:
                (equal if func == "in" else other).add(last)
                last = None
            continue
        attr = str((names or {}).get(placeholder, placeholder)) if placeholder else word
        if func in ("begins_with", "contains", "attribute_exists", "attribute_not_exists", "size"):
            other.add(attr)
            func = None
            continue
        last = attr
    return equal, other - equal


def _count(row: dict[str, int], names: set[str]) -> None:
    for name in names:
        if name in row or len(row) < 32:
            row[name] = row.get(name, 0) + 1


@dataclass(slots=True)
class QueryFilters:
    """Queries of one key template: how many, how many logged a filter, and each filtered attribute's count."""

    queries: int = 0
    filtered: int = 0
    attrs: dict[str, int] = field(default_factory=dict)
    principals: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class ScanFilters:
    """Scan pages of one principal: equality and range filter attributes and projected attributes, by pages."""

    pages: int = 0
    equal: dict[str, int] = field(default_factory=dict)
    ranges: dict[str, int] = field(default_factory=dict)
    projected: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class GetBursts:
    """GetItems of one key template by one principal, and the bursts among them (distinct items of one partition)."""

    #: GetItems, those that logged ``consistentRead: false``, the bursts by size (items -> bursts), the partitions
    #: that had a burst (at most 4,096), and the partition-key attribute
    gets: int = 0
    eventual: int = 0
    sizes: dict[int, int] = field(default_factory=dict)
    partitions: set[str] = field(default_factory=set)
    partition_attr: str = ""

    @property
    def bursts(self) -> int:
        return sum(self.sizes.values())

    @property
    def burst_gets(self) -> int:
        return sum(size * n for size, n in self.sizes.items())

    @property
    def largest(self) -> int:
        return max(self.sizes, default=0)


TableKey = tuple[str | None, str | None, str]


@dataclass(slots=True)
class ReviewSignals:
    """The review's own bounded counters of one input (see the module docstring)."""

    #: Distinct items of one partition that make a burst, and the seconds a burst lasts at most
    #: (:class:`~auditor.review.model.BurstRule`).
    burst_min: int = 5
    burst_seconds: int = 2
    queries: dict[tuple[TableKey, str, str], QueryFilters] = field(default_factory=dict)
    scans: dict[tuple[TableKey, str, str], ScanFilters] = field(default_factory=dict)
    gets: dict[tuple[TableKey, str, str], GetBursts] = field(default_factory=dict)
    #: Per table, heavy hitters of (partition key, principal): who reads and writes its busiest keys.
    callers: dict[TableKey, HeavyHitters] = field(default_factory=dict)
    _open: dict[tuple[TableKey, str, str, str, int], set[str]] = field(default_factory=dict)
    _latest: int = 0

    @classmethod
    def of(cls, config: ReviewConfig) -> ReviewSignals:
        """Empty signals counting bursts as ``config`` defines them."""
        return cls(burst_min=config.burst.min_items, burst_seconds=config.burst.window_seconds)

    def normalizer(self) -> Callable[[Mapping[str, Any]], ApiCall | None]:
        """The kernel's full normaliser, observing each record and its call here on the way (the engine's reader
        takes it: :func:`auditor.engine.analyze_sources`); the light path reads neither filters nor callers."""
        observe = self.observe

        def normalize(record: Mapping[str, Any]) -> ApiCall | None:
            call = normalize_record(record)
            observe(record, call)
            return call

        return normalize

    def observe(self, record: Mapping[str, Any], call: ApiCall | None) -> None:
        """Count one record's call (None: not a DynamoDB data event). Errors and AWS services' calls are skipped."""
        if call is None or call.error_code is not None or call.principal_type == "AWSService" or not call.items:
            return
        params = record.get("requestParameters")
        params = params if isinstance(params, Mapping) else {}
        tk: TableKey = (call.account, call.region, call.items[0].table)
        principal = call.principal or "(unknown)"
        item = call.items[0]
        if call.operation in _KEYED and item.key and not item.index and len(call.items) == 1:
            attr = partition_attr(item.key, None)
            callers = self.callers.get(tk)
            if callers is None and len(self.callers) < MAX_ROWS:
                callers = self.callers[tk] = HeavyHitters(1024)
            if callers is not None:
                callers.add(f"{encode_key(attr, item.key[attr])}\x1e{principal}")
        if call.operation == "Query":
            self._query(tk, principal, call, params)
        elif call.operation == "Scan":
            self._scan(tk, principal, params)
        elif call.operation == "ExecuteStatement" and call.items[0].statement is not None:
            # a SELECT's WHERE equalities: the filter when the statement turns out to be a full scan (the scan
            # detector decides it with the key schema); the partition key is left out by the rule
            statement = call.items[0].statement
            row = (
                _row(self.scans, (tk, principal, "ExecuteStatement"), ScanFilters)
                if statement.verb == "SELECT"
                else None
            )
            if row is not None:
                row.pages += 1
                _count(row.equal, {*statement.redacted_equalities, *statement.key_equalities, *statement.constrained})
        elif call.operation in ("GetItem", "BatchGetItem"):
            self._gets(call, principal)

    def key_principals(self, tk: TableKey, key: Mapping[str, Any], most: int = 3) -> list[str]:
        """The principals that called one partition key of a table most (at most ``most``), busiest first."""
        callers = self.callers.get(tk)
        if callers is None or not key:
            return []
        attr, value = next(iter(key.items()))
        prefix = encode_key(str(attr), value) + "\x1e"
        found = sorted((-n, k[len(prefix) :]) for k, n in callers.counts.items() if k.startswith(prefix))
        return [principal for _, principal in found[:most]]

    def _query(self, tk: TableKey, principal: str, call: ApiCall, params: Mapping[str, Any]) -> None:
        item = call.items[0]
        template = query_template(item.condition, item.key) if item.condition else key_template(item.key) or ""
        qk = (tk, item.index or "", template)
        row = _row(self.queries, qk, QueryFilters)
        if row is None:
            return
        row.queries += 1
        _count(row.principals, {principal})
        attrs = _filter_attrs(params, "queryFilter")
        if attrs:
            row.filtered += 1
            _count(row.attrs, attrs[0] | attrs[1])

    def _scan(self, tk: TableKey, principal: str, params: Mapping[str, Any]) -> None:
        row = _row(self.scans, (tk, principal, "Scan"), ScanFilters)
        if row is None:
            return
        row.pages += 1
        attrs = _filter_attrs(params, "scanFilter")
        if attrs:
            _count(row.equal, attrs[0])
            _count(row.ranges, attrs[1])
        projection = params.get("projectionExpression")
        if isinstance(projection, str):
            names = params.get("expressionAttributeNames")
            names = names if isinstance(names, Mapping) else {}
            _count(row.projected, {str(names.get(p.strip(), p.strip())) for p in projection.split(",") if p.strip()})

    def _gets(self, call: ApiCall, principal: str) -> None:
        second = int(call.time.timestamp()) // self.burst_seconds
        for item in call.items:
            key = item.key
            if not key or len(key) < 2 or item.index:
                continue
            tk: TableKey = (call.account, call.region, item.table)
            gk = (tk, principal, key_template(key) or "")
            row = _row(self.gets, gk, GetBursts)
            if row is None:
                continue
            row.gets += 1
            row.eventual += call.consistent_read is False or item.eventual  # a BatchGetItem table's own flag
            attr = partition_attr(key, None)
            row.partition_attr = attr
            bucket = self._open.setdefault((tk, principal, gk[2], str(key[attr]), second), set())
            if len(bucket) < MAX_BUCKET_ITEMS:
                bucket.add(repr(sorted((k, str(v)) for k, v in key.items() if k != attr)))
        self._latest = max(self._latest, second)
        if len(self._open) > MAX_OPEN_BUCKETS:
            self.fold(before=self._latest - 2)

    def fold(self, before: int | None = None) -> None:
        """Count the open burst buckets older than ``before`` (all when None) into the summaries."""
        for bk in [b for b in self._open if before is None or b[4] < before]:
            items = self._open.pop(bk)
            if len(items) < self.burst_min:
                continue
            row = self.gets.get((bk[0], bk[1], bk[2]))
            if row is None:
                continue
            row.sizes[len(items)] = row.sizes.get(len(items), 0) + 1
            if len(row.partitions) < 4096:
                row.partitions.add(bk[3])


def _row(rows: dict[K, V], key: K, new: Callable[[], V]) -> V | None:
    """``rows[key]``, made with ``new`` when absent and there is room (None when there is none: not counted)."""
    row = rows.get(key)
    if row is None and len(rows) < MAX_ROWS:
        row = rows[key] = new()
    return row


def _filter_attrs(params: Mapping[str, Any], legacy: str) -> tuple[set[str], set[str]] | None:
    """The (equality, range) attributes of a request's ``filterExpression`` (or legacy filter map), None without."""
    expression = params.get("filterExpression")
    if isinstance(expression, str) and expression:
        names = params.get("expressionAttributeNames")
        return expression_attributes(expression, names if isinstance(names, Mapping) else None)
    old = params.get(legacy)
    if isinstance(old, Mapping) and old:
        equal = {str(k) for k, v in old.items() if isinstance(v, Mapping) and v.get("comparisonOperator") == "EQ"}
        return equal, {str(k) for k in old} - equal
    return None

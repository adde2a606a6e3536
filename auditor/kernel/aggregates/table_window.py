"""``TableWindow``: the mergeable traffic aggregate of one table in one time window, and its serialised form.

A ``TableWindow`` holds everything the traffic detectors need about one table in one time window, in bounded memory
(:mod:`.window` re-exports it with the ``AggregateSet`` of an ingest, :mod:`.aggregate_set`). ``merge`` is
associative and commutative, which lets one aggregate per CloudTrail file (one Lambda invocation each) feed one
evaluation, and lets the CLI process a directory file by file.

Serialised with :meth:`TableWindow.to_dict` (:func:`window_to_dict`) an aggregate stays well under DynamoDB's 400 KB
item limit whatever the traffic: every map is capped (:mod:`.bounds`) and overflow is counted. Beside it: partition
keys (:mod:`.keys`), scans and PartiQL statements (:mod:`.scans`), failed calls (:mod:`.failures`).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from auditor.kernel.aggregates.bounds import (
    MAX_ERROR_CODES,
    MAX_PATTERNS,
    MAX_PEAK_KEYS,
    MAX_ROW_ERRORS,
    MAX_SCANNERS,
    MAX_SECOND_ENTRIES,
    MAX_SERVICES,
    MAX_SIZE_KEYS,
    MAX_STATEMENTS,
    MAX_THROTTLE_KEYS,
    OTHER,
    PEAK_MIN_PER_MINUTE,
    PENDING_LIMIT,
    SECONDS_PER_KEY,
    add_capped,
    add_capped_names,
    prune_seconds,
)
from auditor.kernel.aggregates.failures import (
    SIZE_EXCEEDED_PREFIXES,
    THROTTLE_CODES,
    TRANSACTION_CANCELED,
    WHOLE_CALL,
    throttle_cause,
    transaction_reasons,
)
from auditor.kernel.aggregates.index_writes import (
    WriteShapes,
    count_write,
    merge_writes,
    writes_from_list,
    writes_to_list,
)
from auditor.kernel.aggregates.keys import IndexKeys, count_distinct, encode_key, index_key, index_space, partition_attr
from auditor.kernel.aggregates.scans import ScanStats, StatementStats
from auditor.kernel.aggregates.sketch import DistinctCounter, HeavyHitters
from auditor.kernel.aggregates.templates import key_template, query_template, statement_template
from auditor.kernel.aggregates.units import METERED_OPERATIONS, extra_units
from auditor.kernel.calls import Access, ApiCall, ItemAccess
from auditor.kernel.general import SERVICE
from auditor.kernel.write_shapes import statement_shape, write_shape

_WRITE: Final = Access.WRITE
#: An access pattern: (index or "", operation, template or "", efficient)
Pattern = tuple[str, str, str, bool]


@dataclass(slots=True)
class TableWindow:
    """Traffic of one table in one window (or in several windows merged: ``window_seconds`` adds up)."""

    account: str | None
    region: str | None
    table: str
    window_start: int
    window_seconds: int
    sketch_capacity: int = 512
    first_time: float = float("inf")
    last_time: float = 0.0
    calls: int = 0
    operations: dict[str, int] = field(default_factory=dict)
    item_reads: int = 0
    item_writes: int = 0
    key_requests: int = 0
    key_reads: int = 0
    key_writes: int = 0
    #: key-identified reads whose record logs ``consistentRead: false`` (half a read unit each); reads without the
    #: field are taken as strongly consistent (a full unit), the conservative reading
    key_reads_eventual: int = 0
    # The key sketches are read through properties (``hot``, ``hot_writes``, ``minutes``, ``distinct``,
    # ``key_attrs``) that first fold the pending batch in (see :meth:`flush`).
    _hot: HeavyHitters = field(init=False, repr=False)
    _hot_writes: HeavyHitters = field(init=False, repr=False)
    _minutes: dict[int, tuple[HeavyHitters, HeavyHitters]] = field(init=False, repr=False)
    _distinct: DistinctCounter = field(init=False, repr=False)
    _key_attrs: dict[str, int] = field(init=False, repr=False)
    #: Pending key accesses not yet in the sketches: minute -> (encoded keys, encoded write keys, second * 2 +
    #: is_write of each key); attribute names ("" for PartiQL keys, which do not tell the schema).
    _pending: dict[int, tuple[list[str], list[str], list[int]]] = field(init=False, repr=False, compare=False)
    _pending_attrs: list[str] = field(init=False, repr=False, compare=False)
    #: The minute of the last access and its lists in ``_pending`` (records mostly arrive in time order).
    _pending_minute: int | None = field(init=False, repr=False, compare=False)
    _pending_bufs: tuple[list[str], list[str], list[int]] = field(init=False, repr=False, compare=False)
    scans: dict[tuple[str, str], ScanStats] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    #: (cause, access, index or "") -> count of throttled calls
    throttles: dict[tuple[str, str, str], int] = field(default_factory=dict)
    throttle_keys: dict[str, int] = field(default_factory=dict)
    throttle_messages: list[str] = field(default_factory=list)
    size_exceeded: int = 0
    size_exceeded_keys: dict[str, int] = field(default_factory=dict)
    #: (index or "", operation, template or "", efficient) -> [calls, items, {error code: calls}]
    patterns: dict[Pattern, list[Any]] = field(default_factory=dict)
    #: (principal, verb, index or "", constrained attributes joined by ",") -> statements (see :class:`StatementStats`)
    statements: dict[tuple[str, str, str, str], StatementStats] = field(default_factory=dict)
    #: (encoded key, second * 2 + is_write) -> requests, for the busiest seconds of candidate keys
    seconds: dict[tuple[str, int], int] = field(default_factory=dict)
    #: The partition-key attribute from the analysis config or the table's description (not serialised; set by the
    #: engine before detection), where it came from (``config`` or ``inventory``), and the indexes' partition keys
    #: from the description (index name -> attribute).
    schema_hint: str | None = field(default=None, compare=False)
    #: Seconds of the window in which the trail logged *all* of the table's data events, from the capture plans
    #: (not serialised; set by the evaluator). None: no capture plan, the trail logs everything. Scans and PartiQL
    #: are logged all the time whatever the plan (the always-on selector).
    captured_seconds: float | None = field(default=None, compare=False)
    schema_source: str | None = field(default=None, compare=False)
    index_schema: dict[str, str] = field(default_factory=dict, compare=False)
    #: The table's typical item size in bytes and where it comes from (``config``, or ``inventory``: the table's
    #: size over its item count); not serialised, set by the engine before detection. None: unknown.
    item_size_bytes: int | None = field(default=None, compare=False)
    item_size_source: str | None = field(default=None, compare=False)
    #: windows merged into this one (for span aggregates: distinct window starts)
    windows: set[int] = field(default_factory=set)
    #: Calls AWS services made on their own behalf (Time to Live deletes, global-table replication, ...: principal
    #: type ``AWSService``, see :data:`auditor.kernel.general.SERVICE`), per service: kept apart from the users'
    #: traffic, never a user's hot key or scan.
    service_calls: dict[str, int] = field(default_factory=dict)
    #: Each index's own partition space (index name -> :class:`.keys.IndexKeys`): the keys of an index Query or a
    #: PartiQL statement on an index are counted there, and in the sketches under the index's prefix
    #: (:func:`.keys.index_key`), never in the table's ``key_requests``, ``distinct`` or ``key_attrs``.
    index_keys: dict[str, IndexKeys] = field(default_factory=dict)
    #: Successful base-table writes by shape and minute, to meter each global secondary index's writes
    #: (:func:`.index_writes.index_writes`).
    write_shapes: WriteShapes = field(default_factory=dict)

    @property
    def observed_seconds(self) -> float:
        """The seconds whose key traffic this window holds: the captured ones, or the whole window."""
        if self.captured_seconds is None:
            return float(self.window_seconds)
        return max(0.0, min(float(self.window_seconds), self.captured_seconds))

    @property
    def captured_fraction(self) -> float:
        """The fraction of the window's (non-scan) traffic the trail logged: 1.0 without a capture plan."""
        return self.observed_seconds / self.window_seconds if self.window_seconds > 0 else 1.0

    def __post_init__(self) -> None:
        self._hot = HeavyHitters(self.sketch_capacity)
        self._hot_writes = HeavyHitters(self.sketch_capacity)
        self._minutes = {}
        self._distinct = DistinctCounter()
        self._key_attrs = {}
        self._clear_pending()
        self.windows.add(self.window_start)

    def _clear_pending(self) -> None:
        self._pending = {}
        self._pending_attrs = []
        self._pending_minute = None
        self._pending_bufs = ([], [], [])

    # ---------------------------------------------------------------- key sketches

    @property
    def hot(self) -> HeavyHitters:
        """Heavy hitters of the partition keys of all key-identified requests."""
        self.flush()
        return self._hot

    @property
    def hot_writes(self) -> HeavyHitters:
        """Heavy hitters of the partition keys of key-identified writes."""
        self.flush()
        return self._hot_writes

    @property
    def minutes(self) -> dict[int, tuple[HeavyHitters, HeavyHitters]]:
        """Per-minute heavy hitters (all requests, writes) to find a key's peak rate inside the window."""
        self.flush()
        return self._minutes

    @property
    def distinct(self) -> DistinctCounter:
        """Distinct partition-key values."""
        self.flush()
        return self._distinct

    @property
    def key_attrs(self) -> dict[str, int]:
        """How often each attribute name was taken as the partition key (at most 8 names)."""
        self.flush()
        return self._key_attrs

    def flush(self) -> None:
        """Fold the pending key accesses into the sketches.

        :meth:`add` only appends each access's encoded key to a per-minute list; this counts a whole batch with
        ``Counter.update`` (C speed) and prunes each sketch once. A batch is an exact summary, and folding it in is a
        Misra-Gries merge, so the sketch guarantees are those of :meth:`HeavyHitters.merge`. Reads of the sketches
        flush first, so the batching is invisible outside this class.
        """
        pending = self._pending
        if not pending:
            return
        attrs = self._pending_attrs
        self._clear_pending()
        hot = self._hot
        distinct = self._distinct
        minutes = self._minutes
        minute_capacity = self.minute_capacity
        seconds = self.seconds
        for minute, (keys, writes, secs) in pending.items():
            if not keys:
                continue
            # Keys the window sketch does not hold (new, or pruned) go to the distinct counter (idempotent).
            new = set(keys).difference(hot.counts)
            if new:
                count_distinct(new, distinct, self.index_keys)
            hot.add_many(keys)
            per_minute = minutes.get(minute)
            if per_minute is None:
                per_minute = minutes[minute] = (HeavyHitters(minute_capacity), HeavyHitters(minute_capacity))
            per_minute[0].add_many(keys)
            if writes:
                self._hot_writes.add_many(writes)
                per_minute[1].add_many(writes)
            # Per-second counts: every key while the minute's sketch is exact (few keys: the counts do not depend on
            # how the input was split), else only the keys already busy in this minute (a lower bound). Bounded by
            # :func:`.bounds.prune_seconds`, and additive, so they merge.
            if per_minute[0].error == 0:
                pairs = list(zip(keys, secs, strict=True))
            else:
                candidates = {k for k, n in per_minute[0].counts.items() if n >= PEAK_MIN_PER_MINUTE}
                pairs = [(k, s) for k, s in zip(keys, secs, strict=True) if k in candidates] if candidates else []
            if pairs:
                for ks, n in Counter(pairs).items():
                    seconds[ks] = seconds.get(ks, 0) + n
        if len(seconds) > MAX_SECOND_ENTRIES:
            self.seconds = prune_seconds(seconds, SECONDS_PER_KEY, MAX_PEAK_KEYS)
        ka = self._key_attrs
        for attr, n in Counter(attrs).items():
            if attr:
                add_capped_names(ka, attr, n)

    # ---------------------------------------------------------------- ingest

    def add(self, call: ApiCall, items: Sequence[ItemAccess], epoch: float, pk_hint: str | None = None) -> None:
        """Count one call's accesses to this table (``items`` are the call's accesses to this table).

        The general code, the reference of the ingest's fast paths (:meth:`AggregateSet.add_batch` for a
        ``SingleItem``, :func:`.aggregate_set.add_call` for a call that did not fail): key accesses are only appended
        to the pending batch, which :meth:`flush` folds into the sketches every :data:`.bounds.PENDING_LIMIT` accesses.
        """
        if call.principal_type == SERVICE:
            add_capped(self.service_calls, call.principal or SERVICE, 1, MAX_SERVICES, OTHER)
            return
        self._count_call(call.operation, epoch)
        error = call.error_code
        if error is not None:
            self._add_error(call, items, error, pk_hint)
        per_call: dict[Pattern, int] = {}
        extra = extra_units(call) if call.operation in METERED_OPERATIONS else 0
        eventual = call.consistent_read is False
        writes = 0
        for item in items:
            writes += self._add_item(call, item, epoch, pk_hint, error, eventual, extra, per_call)
        self.item_writes += writes
        self.item_reads += len(items) - writes
        for pattern, n in per_call.items():
            self._count_pattern(pattern, n, error)
        if len(self._pending_attrs) >= PENDING_LIMIT:
            self.flush()

    def _add_item(
        self, call: ApiCall, item: ItemAccess, epoch: float, pk_hint: str | None, error: str | None, eventual: bool,
        extra: int, per_call: dict[Pattern, int],
    ) -> int:  # fmt: skip
        """One access of :meth:`add` (its access pattern counted in ``per_call``): 1 if it writes, else 0."""
        is_write = item.access is _WRITE
        statement = item.statement
        if is_write and error is None:
            shape = item.shape or statement_shape(statement) or write_shape(item.operation, None)
            if shape:
                count_write(self.write_shapes, shape, int(epoch // 60))
        key = item.key
        full_scan = item.full_scan
        index = item.index
        if full_scan:
            self._add_scan(call, item, epoch)
            template = ""
        elif key:
            schema = statement is None
            read_eventual = eventual or item.eventual  # a BatchGetItem logs consistentRead per table: per item
            self._add_key(key, is_write, read_eventual, epoch, pk_hint, schema, index)
            if extra:  # metered above one read or write of the item (see ``extra_units``)
                self._add_units(extra, key, is_write, read_eventual, epoch, pk_hint, schema, index)
            template = key_template(key) or ""
        else:
            template = ""
        if item.condition is not None:
            template = query_template(item.condition, key)
        elif statement is not None:
            template = statement_template(statement)
            if not full_scan and statement.verb != "INSERT" and statement.constrained:
                self._add_statement(call, item, epoch)
        pattern = (index or "", item.operation, template, not full_scan)
        per_call[pattern] = per_call.get(pattern, 0) + 1
        return 1 if is_write else 0

    def _count_call(self, operation: str, epoch: float) -> None:
        self.calls += 1
        if epoch < self.first_time:
            self.first_time = epoch
        if epoch > self.last_time:
            self.last_time = epoch
        ops = self.operations
        ops[operation] = ops.get(operation, 0) + 1

    def _add_key(
        self,
        key: dict[str, Any],
        is_write: bool,
        eventual: bool,
        epoch: float,
        pk_hint: str | None,
        schema: bool,
        index: str | None = None,
    ) -> None:
        """One access to a logged (non-empty) key, into the pending batch. ``eventual``: a read made eventually
        consistent on request; ``schema``: the key's attribute names tell the table's key schema (not PartiQL's);
        ``index``: the key is one of that index's (its own partition space, see :attr:`index_keys`)."""
        if len(key) == 1:
            attr, value = next(iter(key.items()))
        else:
            attr = partition_attr(key, pk_hint if index is None else None)
            value = key[attr]
        # inline for short strings (at most 512 characters are at most 2 KB of UTF-8); encode_key caps the rest
        encoded = f'{attr}\x1f"{value}' if type(value) is str and len(value) <= 512 else encode_key(attr, value)
        if index is not None:
            self._add_index_key(index, attr if schema else "", encoded, is_write, eventual, epoch)
            return
        self.key_requests += 1
        minute = int(epoch // 60)
        if minute == self._pending_minute:
            bufs = self._pending_bufs
        else:
            found = self._pending.get(minute)
            if found is None:
                found = self._pending[minute] = ([], [], [])
            bufs = self._pending_bufs = found
            self._pending_minute = minute
        bufs[0].append(encoded)
        if is_write:
            self.key_writes += 1
            bufs[1].append(encoded)
            bufs[2].append(int(epoch) * 2 + 1)
        else:
            self.key_reads += 1
            if eventual:
                self.key_reads_eventual += 1
            bufs[2].append(int(epoch) * 2)
        self._pending_attrs.append(attr if schema else "")

    def _add_index_key(self, index: str, attr: str, encoded: str, is_write: bool, eventual: bool, epoch: float) -> None:
        """:meth:`_add_key` for a key of ``index``: counted in the index's space, not in the table's."""
        index, space = index_space(self.index_keys, index)
        space.add(attr, is_write, eventual)
        encoded = index_key(index, encoded)
        minute = int(epoch // 60)
        bufs = self._pending.get(minute)
        if bufs is None:
            bufs = self._pending[minute] = ([], [], [])
        bufs[0].append(encoded)
        if is_write:
            bufs[1].append(encoded)
        bufs[2].append(int(epoch) * 2 + is_write)
        self._pending_attrs.append("")

    def _add_units(
        self, extra: int, key: dict[str, Any], is_write: bool, eventual: bool, epoch: float, pk_hint: str | None,
        schema: bool, index: str | None,
    ) -> None:  # fmt: skip
        """``extra`` more units of the key access :meth:`_add_key` just counted (a transaction's second unit, the rest
        of a full Query page): a table key's pending entries and counts repeated, without encoding it again."""
        if index is not None or extra == 1:
            for _ in range(extra):
                self._add_key(key, is_write, eventual, epoch, pk_hint, schema, index)
            return
        self._repeat_last(extra, is_write, eventual)

    def _repeat_last(self, extra: int, is_write: bool, eventual: bool) -> None:
        """Repeat the table-key access :meth:`_add_key` appended last (to ``_pending_bufs``) ``extra`` times."""
        bufs = self._pending_bufs
        bufs[0].extend([bufs[0][-1]] * extra)
        bufs[2].extend([bufs[2][-1]] * extra)
        self._pending_attrs.extend([self._pending_attrs[-1]] * extra)
        self.key_requests += extra
        if is_write:
            bufs[1].extend([bufs[1][-1]] * extra)
            self.key_writes += extra
        else:
            self.key_reads += extra
            if eventual:
                self.key_reads_eventual += extra

    def _count_pattern(self, pattern: Pattern, items: int, error: str | None) -> None:
        """One call (with ``items`` accesses) of an access pattern; its error code, if it failed."""
        patterns = self.patterns
        row = patterns.get(pattern)
        if row is None:
            if len(patterns) >= MAX_PATTERNS:
                pattern = ("", OTHER, "", pattern[3])
                row = patterns.get(pattern)
            if row is None:
                row = patterns[pattern] = [0, 0, {}]
        row[0] += 1
        row[1] += items
        if error is not None:
            errors = row[2]
            if error in errors or len(errors) < MAX_ROW_ERRORS:
                errors[error] = errors.get(error, 0) + 1

    def _add_statement(self, call: ApiCall, item: ItemAccess, epoch: float) -> None:
        statement = item.statement
        assert statement is not None
        sk = (call.principal or "(unknown)", statement.verb, item.index or "", ",".join(statement.constrained))
        stats = self.statements.get(sk)
        if stats is None:
            if len(self.statements) >= MAX_STATEMENTS:
                return
            stats = self.statements[sk] = StatementStats()
        stats.count += 1
        stats.first = min(stats.first, epoch)
        stats.last = max(stats.last, epoch)

    def _add_scan(self, call: ApiCall, item: ItemAccess, epoch: float) -> None:
        principal = call.principal or "(unknown)"
        op = "Scan" if item.operation == "Scan" else "ExecuteStatement"
        sk = (principal, op)
        stats = self.scans.get(sk)
        if stats is None:
            if len(self.scans) >= MAX_SCANNERS:
                sk = (OTHER, op)
                stats = self.scans.get(sk)
            if stats is None:
                stats = self.scans[sk] = ScanStats()
        stats.add_page(call, item.index, epoch, op == "Scan")

    def _add_error(self, call: ApiCall, items: Sequence[ItemAccess], error: str, pk_hint: str | None) -> None:
        """One failed call, charged where the error belongs: a call-level error (a single-item call's, or a batch's or
        transaction's as a whole) once to the call, an item-level one (a transaction's cancellation reason) to its
        item."""
        add_capped(self.errors, error, 1, MAX_ERROR_CODES, OTHER)
        message = call.error_message
        if error in THROTTLE_CODES:
            write = call.access is Access.WRITE
            cause, index = throttle_cause(error, message, write, call.index)
            # A batch rejected with a throttling error had every item throttled (DynamoDB answers it only when no
            # item could be processed), so each item's key counts.
            self._add_throttle(cause, write, index, [i for i in items if i.key], pk_hint, message)
        elif error == TRANSACTION_CANCELED:
            # The reasons are listed in the order of the call's items; a throttled item is charged to its key.
            throttled = [
                (item, cause)
                for item, cause in zip(call.items, transaction_reasons(message), strict=False)
                if cause is not None and item.table == self.table
            ]
            for item, cause in throttled:
                write = item.access is Access.WRITE
                self._add_throttle(cause, write, None, [item] if item.key else [], pk_hint, message)
        elif error == "ValidationException" and (message or "").startswith(SIZE_EXCEEDED_PREFIXES):
            self.size_exceeded += 1
            keyed = [i.key for i in items if i.key]
            if len(call.items) > 1:  # a batch or transaction rejected as a whole: which item was too large is not said
                add_capped(self.size_exceeded_keys, WHOLE_CALL, 1, MAX_SIZE_KEYS, OTHER)
                return
            if not keyed:
                add_capped(self.size_exceeded_keys, OTHER, 1, MAX_SIZE_KEYS, OTHER)
            for key in keyed:
                try:
                    encoded = orjson.dumps(key).decode()
                except (TypeError, orjson.JSONEncodeError):  # nested past orjson's limit, or a number it cannot write
                    encoded = OTHER
                add_capped(self.size_exceeded_keys, encoded, 1, MAX_SIZE_KEYS, OTHER)

    def _add_throttle(
        self,
        cause: str,
        write: bool,
        index: str | None,
        keyed: Sequence[ItemAccess],
        pk_hint: str | None,
        message: str | None,
    ) -> None:
        """One throttled call (or transaction item) and the keys it throttled."""
        tk = (cause, "write" if write else "read", index or "")
        self.throttles[tk] = self.throttles.get(tk, 0) + 1
        if cause.endswith("gsi_backpressure"):  # an index's capacity ran out, not the keys' partitions: no key blamed
            keyed = ()
        for item in keyed:
            key = item.key
            assert key
            attr = partition_attr(key, pk_hint if item.index is None else None)
            encoded = index_key(item.index, encode_key(attr, key[attr]))
            add_capped(self.throttle_keys, encoded, 1, MAX_THROTTLE_KEYS, OTHER)
        if message and len(self.throttle_messages) < 3 and message[:300] not in self.throttle_messages:
            self.throttle_messages.append(message[:300])

    # ---------------------------------------------------------------- merge

    def merge(self, other: TableWindow) -> None:
        """Add ``other`` (same table) into this aggregate.

        Merging the same window from two files counts its seconds once; merging different windows
        (a span) adds their seconds.
        """
        if (other.account, other.region, other.table) != (self.account, self.region, self.table):
            raise ValueError("cannot merge aggregates of different tables")
        new_windows = other.windows - self.windows
        if new_windows:
            per_window = other.window_seconds // max(1, len(other.windows))
            self.window_seconds += per_window * len(new_windows)
            self.windows |= new_windows
        self.window_start = min(self.window_start, other.window_start)
        self.first_time = min(self.first_time, other.first_time)
        self.last_time = max(self.last_time, other.last_time)
        self.calls += other.calls
        for k, n in other.operations.items():
            self.operations[k] = self.operations.get(k, 0) + n
        self.item_reads += other.item_reads
        self.item_writes += other.item_writes
        self.key_requests += other.key_requests
        self.key_reads += other.key_reads
        self.key_writes += other.key_writes
        self.key_reads_eventual += other.key_reads_eventual
        self.hot.merge(other.hot)
        self.hot_writes.merge(other.hot_writes)
        for minute, (m_all, m_writes) in other.minutes.items():
            mine_m = self.minutes.get(minute)
            if mine_m is None:
                mine_m = self.minutes[minute] = (HeavyHitters(self.minute_capacity), HeavyHitters(self.minute_capacity))
            mine_m[0].merge(m_all)
            mine_m[1].merge(m_writes)
        self.distinct.merge(other.distinct)
        for k, n in other.key_attrs.items():
            add_capped(self.key_attrs, k, n, 8, OTHER)
        for sk, st in other.scans.items():
            mine = self.scans.get(sk)
            if mine is None and len(self.scans) >= MAX_SCANNERS:
                sk = (OTHER, sk[1])
                mine = self.scans.get(sk)
            if mine is None:
                mine = self.scans[sk] = ScanStats()
            mine.merge(st)
        for k, n in other.errors.items():
            add_capped(self.errors, k, n, MAX_ERROR_CODES, OTHER)
        for tk, n in other.throttles.items():
            self.throttles[tk] = self.throttles.get(tk, 0) + n
        for k, n in other.throttle_keys.items():
            add_capped(self.throttle_keys, k, n, MAX_THROTTLE_KEYS, OTHER)
        for k, n in other.service_calls.items():
            add_capped(self.service_calls, k, n, MAX_SERVICES, OTHER)
        for name, space in other.index_keys.items():
            index_space(self.index_keys, name)[1].merge(space)
        merge_writes(self.write_shapes, other.write_shapes)
        for m in other.throttle_messages:
            if len(self.throttle_messages) < 3 and m not in self.throttle_messages:
                self.throttle_messages.append(m)
        self.size_exceeded += other.size_exceeded
        for k, n in other.size_exceeded_keys.items():
            add_capped(self.size_exceeded_keys, k, n, MAX_SIZE_KEYS, OTHER)
        for pk, (calls, items, errors) in other.patterns.items():
            row = self.patterns.get(pk)
            if row is None:
                if len(self.patterns) >= MAX_PATTERNS:
                    pk = ("", OTHER, "", pk[3])
                    row = self.patterns.get(pk)
                if row is None:
                    row = self.patterns[pk] = [0, 0, {}]
            row[0] += calls
            row[1] += items
            for code, n in errors.items():
                if code in row[2] or len(row[2]) < MAX_ROW_ERRORS:
                    row[2][code] = row[2].get(code, 0) + n
        for stk, ss in other.statements.items():
            mine_s = self.statements.get(stk)
            if mine_s is None:
                if len(self.statements) >= MAX_STATEMENTS:
                    continue
                mine_s = self.statements[stk] = StatementStats()
            mine_s.merge(ss)
        seconds = self.seconds
        for ks, n in other.seconds.items():
            seconds[ks] = seconds.get(ks, 0) + n
        if len(seconds) > MAX_SECOND_ENTRIES:
            self.seconds = prune_seconds(seconds, SECONDS_PER_KEY, MAX_PEAK_KEYS)

    def copy(self) -> TableWindow:
        """A lossless deep copy (the serialised form is bounded, so it is not used here)."""
        self.flush()
        return copy.deepcopy(self)

    # ---------------------------------------------------------------- views

    @property
    def minute_capacity(self) -> int:
        """Per-minute sketches only need the few heaviest keys of a minute: 1/8 of the window's capacity."""
        return max(16, self.sketch_capacity // 8)

    @property
    def requests(self) -> int:
        """Item accesses (batch and transact items count one each)."""
        return self.item_reads + self.item_writes

    def peak_minute(self, encoded: str) -> tuple[int, int, int] | None:
        """The minute in which a sketch key had the most requests: (minute start epoch, requests, writes).

        Counts are lower bounds (per-minute Misra-Gries summaries); None when the key was never counted.
        """
        best: tuple[int, int, int] | None = None
        for minute, (m_all, m_writes) in self.minutes.items():
            n = m_all.counts.get(encoded, 0)
            if n and (best is None or n > best[1] or (n == best[1] and minute * 60 < best[0])):
                best = (minute * 60, n, min(n, m_writes.counts.get(encoded, 0)))
        return best

    def second_peaks(self) -> dict[str, tuple[int, int, int, int]]:
        """Per candidate key: (peak reads in one second, its epoch second, peak writes in one second, its second)."""
        self.flush()
        peaks: dict[str, list[int]] = {}
        for (encoded, sw), n in self.seconds.items():
            entry = peaks.get(encoded)
            if entry is None:
                entry = peaks[encoded] = [0, 0, 0, 0]
            sec, is_write = divmod(sw, 2)
            slot = 2 if is_write else 0
            if n > entry[slot] or (n == entry[slot] and sec < entry[slot + 1]):
                entry[slot], entry[slot + 1] = n, sec
        return {k: (v[0], v[1], v[2], v[3]) for k, v in peaks.items()}

    def minute_peaks(self, min_requests: int = 1) -> dict[str, tuple[int, int, int, int]]:
        """Per key in a minute sketch: (peak reads in one minute, its minute start, peak writes, its minute start).

        Only keys with at least ``min_requests`` in some minute. Counts are lower bounds (Misra-Gries summaries).
        """
        peaks: dict[str, list[int]] = {}
        for minute, (m_all, m_writes) in self.minutes.items():
            w_counts = m_writes.counts
            for encoded, n in m_all.counts.items():
                if n < min_requests:
                    continue
                writes = min(n, w_counts.get(encoded, 0))
                reads = n - writes
                entry = peaks.get(encoded)
                if entry is None:
                    entry = peaks[encoded] = [0, 0, 0, 0]
                start = minute * 60
                if reads > entry[0] or (reads == entry[0] and reads and start < entry[1]):
                    entry[0], entry[1] = reads, start
                if writes > entry[2] or (writes == entry[2] and writes and start < entry[3]):
                    entry[2], entry[3] = writes, start
        return {k: (v[0], v[1], v[2], v[3]) for k, v in peaks.items()}

    @property
    def partition_key_attr(self) -> str | None:
        """The attribute most often taken as the partition key."""
        if not self.key_attrs:
            return None
        return max(sorted(self.key_attrs), key=lambda k: self.key_attrs[k])

    # ---------------------------------------------------------------- (de)serialisation

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, bounded form (see :func:`window_to_dict`)."""
        return window_to_dict(self)

    def to_json(self) -> bytes:
        """Serialised form as JSON bytes."""
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TableWindow:
        """Inverse of :meth:`to_dict`."""
        return window_from_dict(cls, d)


# -- the serialised form: what the state table stores for each contribution -----------------------------------
#
# Stored windows are read back by later versions: change the form only in ways window_from_dict still reads (new
# fields with a default, as ``statements``).

#: Upper bound of one serialised aggregate (DynamoDB items are limited to 400 KB).
MAX_SERIALIZED_BYTES: Final = 300_000
#: Keys of each per-minute sketch kept in the serialised form when the sketches do not fit :data:`DETAIL_BUDGET`.
MINUTE_SERIALIZED_KEYS: Final = 8
#: Keys whose per-second counts are kept in the serialised form (at most ``SECONDS_PER_KEY`` seconds each) when
#: they do not fit :data:`DETAIL_BUDGET`.
SERIALIZED_PEAK_KEYS: Final = 64
#: Bytes (about, as JSON) the per-minute sketches, and apart from them the per-second counts, may take whole in the
#: serialised form. Within it a stored window reads back as it was held, so windows merged from stored contributions
#: (the service, one per CloudTrail object) count what windows merged in memory (``analyze-trail``) count; a bigger
#: one is cut to the heaviest keys (lower bounds).
DETAIL_BUDGET: Final = 48_000


def window_to_dict(tw: TableWindow) -> dict[str, Any]:
    """The JSON-ready, bounded form of ``tw`` (see :data:`MAX_SERIALIZED_BYTES`)."""
    return {
        "v": 1,
        "account": tw.account,
        "region": tw.region,
        "table": tw.table,
        "window_start": tw.window_start,
        "window_seconds": tw.window_seconds,
        "windows": sorted(tw.windows),
        "sketch_capacity": tw.sketch_capacity,
        "first_time": tw.first_time if tw.calls else None,
        "last_time": tw.last_time if tw.calls else None,
        "calls": tw.calls,
        "operations": tw.operations,
        "item_reads": tw.item_reads,
        "item_writes": tw.item_writes,
        "key_requests": tw.key_requests,
        "key_reads": tw.key_reads,
        "key_writes": tw.key_writes,
        "key_reads_eventual": tw.key_reads_eventual,
        "hot": tw.hot.to_dict(limit=sketch_limit(tw.hot)),
        "hot_writes": tw.hot_writes.to_dict(limit=sketch_limit(tw.hot_writes)),
        "minutes": _minutes_to_list(tw),
        "distinct": tw.distinct.to_dict(),
        "key_attrs": tw.key_attrs,
        "scans": [[p, op, st.to_list()] for (p, op), st in tw.scans.items()],
        "errors": tw.errors,
        "throttles": [[c, a, i, n] for (c, a, i), n in tw.throttles.items()],
        "throttle_keys": tw.throttle_keys,
        "throttle_messages": tw.throttle_messages,
        "size_exceeded": tw.size_exceeded,
        "size_exceeded_keys": tw.size_exceeded_keys,
        "service_calls": tw.service_calls,
        "index_keys": {name: space.to_dict() for name, space in tw.index_keys.items()},
        "write_shapes": writes_to_list(tw.write_shapes),
        "patterns": [[i, o, t, e, c, n, errs] for (i, o, t, e), (c, n, errs) in tw.patterns.items()],
        "statements": [[p, v, i, c, st.count, st.first, st.last] for (p, v, i, c), st in tw.statements.items()],
        "seconds": [[k, sw, n] for (k, sw), n in sorted(_seconds_kept(tw.seconds).items())],
    }


def _minutes_to_list(tw: TableWindow) -> list[list[Any]]:
    """The per-minute sketches, whole when they fit :data:`DETAIL_BUDGET`, else each cut to its heaviest keys."""
    size = sum(len(k) + 12 for a, w in tw.minutes.values() for k in (*a.counts, *w.counts)) + 80 * len(tw.minutes)
    limit = None if size <= DETAIL_BUDGET else MINUTE_SERIALIZED_KEYS
    return [[m, a.to_dict(limit=limit), w.to_dict(limit=limit)] for m, (a, w) in sorted(tw.minutes.items())]


def _seconds_kept(seconds: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """The per-second counts, all when they fit :data:`DETAIL_BUDGET`, else the busiest of the busiest keys."""
    if sum(len(k) + 20 for k, _ in seconds) <= DETAIL_BUDGET:
        return seconds
    return prune_seconds(seconds, SECONDS_PER_KEY, SERIALIZED_PEAK_KEYS)


def window_from_dict(cls: type[TableWindow], d: dict[str, Any]) -> TableWindow:
    """Inverse of :func:`window_to_dict`: a ``cls`` (a :class:`TableWindow`) from its serialised form."""
    tw = cls(d["account"], d["region"], d["table"], int(d["window_start"]), int(d["window_seconds"]))
    tw.sketch_capacity = int(d["sketch_capacity"])
    tw.windows = {int(w) for w in d["windows"]}
    tw.first_time = float(d["first_time"]) if d["first_time"] is not None else float("inf")
    tw.last_time = float(d["last_time"]) if d["last_time"] is not None else 0.0
    tw.calls = int(d["calls"])
    tw.operations = {str(k): int(v) for k, v in d["operations"].items()}
    tw.item_reads = int(d["item_reads"])
    tw.item_writes = int(d["item_writes"])
    tw.key_requests = int(d["key_requests"])
    tw.key_reads = int(d["key_reads"])
    tw.key_writes = int(d["key_writes"])
    tw.key_reads_eventual = int(d.get("key_reads_eventual", 0))  # absent in contributions stored before it
    tw._hot = HeavyHitters.from_dict(d["hot"])
    tw._hot_writes = HeavyHitters.from_dict(d["hot_writes"])
    tw._minutes = {int(m): (HeavyHitters.from_dict(a), HeavyHitters.from_dict(w)) for m, a, w in d.get("minutes", [])}
    tw._distinct = DistinctCounter.from_dict(d["distinct"])
    tw._key_attrs = {str(k): int(v) for k, v in d["key_attrs"].items()}
    tw.scans = {(p, op): ScanStats.from_list(st) for p, op, st in d["scans"]}
    tw.errors = {str(k): int(v) for k, v in d["errors"].items()}
    tw.throttles = {(c, a, i): int(n) for c, a, i, n in d["throttles"]}
    tw.throttle_keys = {str(k): int(v) for k, v in d["throttle_keys"].items()}
    tw.throttle_messages = [str(m) for m in d["throttle_messages"]]
    tw.size_exceeded = int(d["size_exceeded"])
    tw.size_exceeded_keys = {str(k): int(v) for k, v in d["size_exceeded_keys"].items()}
    tw.service_calls = {str(k): int(v) for k, v in d.get("service_calls", {}).items()}  # absent before it was kept
    tw.index_keys = {str(k): IndexKeys.from_dict(v) for k, v in d.get("index_keys", {}).items()}  # absent before
    tw.write_shapes = writes_from_list(d.get("write_shapes", []))  # absent before it was kept
    tw.patterns = {}
    for row in d["patterns"]:
        i, o, t, e = row[:4]
        if len(row) >= 7:  # [.., calls, items, errors]
            errors = {str(k): int(v) for k, v in row[6].items()}
            tw.patterns[(i, o, t, bool(e))] = [int(row[4]), int(row[5]), errors]
        else:  # stored before calls and items were told apart: one count
            tw.patterns[(i, o, t, bool(e))] = [int(row[4]), int(row[4]), {}]
    tw.statements = {
        (str(p), str(v), str(i), str(c)): StatementStats(int(n), float(f), float(la))
        for p, v, i, c, n, f, la in d.get("statements", [])
    }
    tw.seconds = {(str(k), int(sw)): int(n) for k, sw, n in d.get("seconds", [])}
    return tw


def sketch_limit(hh: HeavyHitters) -> int | None:
    """How many sketch keys fit the serialised budget (about 60 KB per sketch)."""
    size = 0
    for n, (k, _) in enumerate(hh.top(len(hh.counts))):
        size += len(k) + 16
        if size > 60_000:
            return n
    return None

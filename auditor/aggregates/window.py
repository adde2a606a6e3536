"""Mergeable per-(table, window) traffic aggregates.

A ``TableWindow`` holds everything the traffic detectors need about one table in one time window, in
bounded memory. ``AggregateSet`` maps (account, region, table, window start) to its ``TableWindow``.
``merge`` is associative and commutative, which lets one aggregate per CloudTrail file (one Lambda
invocation each) feed one evaluation, and lets the CLI process a directory file by file.

Serialised with :meth:`TableWindow.to_dict` an aggregate stays well under DynamoDB's 400 KB item limit
(:data:`MAX_SERIALIZED_BYTES`), whatever the traffic: every map is capped and overflow is counted.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from auditor.aggregates.sketch import DistinctCounter, HeavyHitters
from auditor.aggregates.templates import key_template
from auditor.models.api_call import Access, ApiCall, ItemAccess

#: Upper bound of one serialised aggregate (DynamoDB items are limited to 400 KB).
MAX_SERIALIZED_BYTES = 300_000

#: Internal cause of a classic ProvisionedThroughputExceededException message (see :func:`throttle_cause`).
GENERIC_PROVISIONED = "provisioned_or_key_range"

THROTTLE_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})
SIZE_EXCEEDED_PREFIXES = ("Item size has exceeded", "Item size to update has exceeded")

#: Partition-key and sort-key attribute names recognised when the key schema is not configured.
_PK_NAMES = frozenset({"pk", "partitionkey", "partition_key", "hashkey", "hash_key", "pk1", "gsi1pk"})
_SK_NAMES = frozenset({"sk", "sortkey", "sort_key", "rangekey", "range_key", "sk1", "gsi1sk"})

_REASON = re.compile(
    r"(Table|Index)(Read|Write)(KeyRangeThroughput|ProvisionedThroughput|AccountLimit|MaxOnDemandThroughput)Exceeded"
)
_INDEX_ARN = re.compile(r":table/[^/\s]+/index/([A-Za-z0-9_.-]+)")
_LIMIT_CAUSE = {
    "KeyRangeThroughput": "key_range",
    "ProvisionedThroughput": "provisioned",
    "AccountLimit": "account_limit",
    "MaxOnDemandThroughput": "on_demand_max",
}

MINUTE_SERIALIZED_KEYS = 3
MAX_SCANNERS = 100
MAX_SEGMENTS = 64
MAX_PATTERNS = 200
MAX_ERROR_CODES = 50
MAX_THROTTLE_KEYS = 20
MAX_SIZE_KEYS = 50
OTHER = "(other)"
#: Key accesses a window batches before folding them into its sketches (:meth:`TableWindow.flush`).
PENDING_LIMIT = 4096
#: Partition-key attribute names a window tracks.
MAX_KEY_ATTRS = 8


def throttle_cause(error_code: str, message: str | None) -> tuple[str, str | None]:
    """The cause of a throttled call and the index it names, from ``ThrottlingReasons`` or the message.

    Returns (cause, index): cause is ``key_range``, ``provisioned``, ``account_limit``, ``on_demand_max``,
    ``gsi_backpressure`` (an index write limit that throttled a base-table write), ``unknown``, or
    :data:`GENERIC_PROVISIONED` for the classic ProvisionedThroughputExceededException message without
    ``ThrottlingReasons``: that message is the same for exhausted table capacity and for a hot partition, so the
    throttling detector decides from how the throttled calls spread over keys.
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
    return "unknown", None


#: DynamoDB's limit on a partition key value (2,048 bytes): a longer logged value is not a real key, and is kept as
#: a fixed-size digest so a flood of huge distinct values cannot grow the sketches' memory.
MAX_KEY_BYTES = 2048


def _hashed(attr: str, raw: bytes, why: str) -> str:
    return f'{attr}\x1f"({why}, sha256 {hashlib.sha256(raw).hexdigest()[:32]})'


def encode_key(attr: str, value: Any) -> str:
    """Sketch key for one partition-key value: attribute name and a JSON literal, so numbers and strings differ.

    A value longer than :data:`MAX_KEY_BYTES` is stored as a digest; an integer beyond 64 bits as its digits; a
    value JSON cannot write (nesting deeper than 255 levels) as a digest of its ``repr``-free shape.
    """
    if isinstance(value, str):
        if len(value) > MAX_KEY_BYTES // 4 and len(value.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
            return _hashed(attr, value.encode("utf-8", "surrogatepass"), "over 2 KB")
        return f'{attr}\x1f"{value}'
    if type(value) is int and not -(2**63) <= value < 2**64:
        digits = str(value) if value.bit_length() < 6800 else ""  # str() of a huge int is quadratic
        if digits and len(digits) <= MAX_KEY_BYTES:
            return f"{attr}\x1f{digits}"
        return _hashed(attr, value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True), "over 2 KB")
    try:
        literal = orjson.dumps(value).decode()
    except TypeError:  # nesting deeper than orjson writes, or a type it does not know
        return _hashed(attr, _shape_bytes(value), "not a key value")
    if len(literal) > MAX_KEY_BYTES:
        return _hashed(attr, literal.encode(), "over 2 KB")
    return f"{attr}\x1f{literal}"


def _shape_bytes(value: Any) -> bytes:
    """A deterministic byte form of any nested value, iteratively (no recursion limit), bounded by its size."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack and len(out) < 1 << 16:
        v = stack.pop()
        if isinstance(v, dict):
            out.append("{")
            for k in sorted(v, key=str):
                out.append(str(k))
                stack.append(v[k])
        elif isinstance(v, list):
            out.append("[")
            stack.extend(reversed(v))
        else:
            out.append(type(v).__name__ + ":" + (v if isinstance(v, str) else str(v)[:64]))
    return "\x1e".join(out).encode("utf-8", "surrogatepass")


def decode_key(encoded: str) -> dict[str, Any]:
    """Inverse of :func:`encode_key`: the key as CloudTrail logged it (attribute name -> value)."""
    attr, _, lit = encoded.partition("\x1f")
    if lit.startswith('"'):
        return {attr: lit[1:]}
    if lit.lstrip("-").isdigit():
        return {attr: int(lit)}  # exact, also beyond 64 bits
    return {attr: orjson.loads(lit)}


@dataclass(slots=True)
class ScanStats:
    """Scans by one principal with one operation (Scan, or a full-scan ExecuteStatement)."""

    count: int = 0
    segments: set[int] = field(default_factory=set)
    total_segments: int = 0
    first: float = float("inf")
    last: float = 0.0
    indexes: set[str] = field(default_factory=set)

    def merge(self, other: ScanStats) -> None:
        """Add another principal's counters (same principal and operation)."""
        self.count += other.count
        if len(self.segments) < MAX_SEGMENTS:
            self.segments.update(sorted(other.segments)[: MAX_SEGMENTS - len(self.segments)])
        self.total_segments = max(self.total_segments, other.total_segments)
        self.first = min(self.first, other.first)
        self.last = max(self.last, other.last)
        if len(self.indexes) < 10:
            self.indexes.update(sorted(other.indexes)[: 10 - len(self.indexes)])

    def to_list(self) -> list[Any]:
        return [self.count, sorted(self.segments), self.total_segments, self.first, self.last, sorted(self.indexes)]

    @classmethod
    def from_list(cls, d: list[Any]) -> ScanStats:
        return cls(int(d[0]), set(d[1]), int(d[2]), float(d[3]), float(d[4]), set(d[5]))


def _add_capped(counter: dict[Any, int], key: Any, n: int, cap: int, other_key: Any) -> None:
    if key in counter or len(counter) < cap:
        counter[key] = counter.get(key, 0) + n
    else:
        counter[other_key] = counter.get(other_key, 0) + n


def _add_capped_names(counter: dict[str, int], name: str, n: int) -> None:
    """Key attribute names: the first :data:`MAX_KEY_ATTRS` names are tracked, later ones dropped."""
    if name in counter:
        counter[name] += n
    elif len(counter) < MAX_KEY_ATTRS:
        counter[name] = n


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
    # The key sketches are read through properties (``hot``, ``hot_writes``, ``minutes``, ``distinct``,
    # ``key_attrs``) that first fold the pending batch in (see :meth:`flush`).
    _hot: HeavyHitters = field(init=False, repr=False)
    _hot_writes: HeavyHitters = field(init=False, repr=False)
    _minutes: dict[int, tuple[HeavyHitters, HeavyHitters]] = field(init=False, repr=False)
    _distinct: DistinctCounter = field(init=False, repr=False)
    _key_attrs: dict[str, int] = field(init=False, repr=False)
    #: Pending key accesses not yet in the sketches: minute -> (encoded keys, encoded write keys); attribute names.
    _pending: dict[int, tuple[list[str], list[str]]] = field(init=False, repr=False, compare=False)
    _pending_attrs: list[str] = field(init=False, repr=False, compare=False)
    #: The minute of the last access and its lists in ``_pending`` (records mostly arrive in time order).
    _pending_minute: int | None = field(init=False, repr=False, compare=False)
    _pending_bufs: tuple[list[str], list[str]] = field(init=False, repr=False, compare=False)
    scans: dict[tuple[str, str], ScanStats] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    #: (cause, access, index or "") -> count of throttled calls
    throttles: dict[tuple[str, str, str], int] = field(default_factory=dict)
    throttle_keys: dict[str, int] = field(default_factory=dict)
    throttle_messages: list[str] = field(default_factory=list)
    size_exceeded: int = 0
    size_exceeded_keys: dict[str, int] = field(default_factory=dict)
    #: (index or "", operation, template or "", efficient) -> requests
    patterns: dict[tuple[str, str, str, bool], int] = field(default_factory=dict)
    #: windows merged into this one (for span aggregates: distinct window starts)
    windows: set[int] = field(default_factory=set)

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
        self._pending_bufs = ([], [])

    # ---------------------------------------------------------------- key sketches

    @property
    def hot(self) -> HeavyHitters:
        """Heavy hitters of the partition keys of all key-identified requests."""
        self.flush()
        return self._hot

    @hot.setter
    def hot(self, value: HeavyHitters) -> None:
        self.flush()
        self._hot = value

    @property
    def hot_writes(self) -> HeavyHitters:
        """Heavy hitters of the partition keys of key-identified writes."""
        self.flush()
        return self._hot_writes

    @hot_writes.setter
    def hot_writes(self, value: HeavyHitters) -> None:
        self.flush()
        self._hot_writes = value

    @property
    def minutes(self) -> dict[int, tuple[HeavyHitters, HeavyHitters]]:
        """Per-minute heavy hitters (all requests, writes) to find a key's peak rate inside the window."""
        self.flush()
        return self._minutes

    @minutes.setter
    def minutes(self, value: dict[int, tuple[HeavyHitters, HeavyHitters]]) -> None:
        self.flush()
        self._minutes = value

    @property
    def distinct(self) -> DistinctCounter:
        """Distinct partition-key values."""
        self.flush()
        return self._distinct

    @distinct.setter
    def distinct(self, value: DistinctCounter) -> None:
        self.flush()
        self._distinct = value

    @property
    def key_attrs(self) -> dict[str, int]:
        """How often each attribute name was taken as the partition key (at most 8 names)."""
        self.flush()
        return self._key_attrs

    @key_attrs.setter
    def key_attrs(self, value: dict[str, int]) -> None:
        self.flush()
        self._key_attrs = value

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
        for minute, (keys, writes) in pending.items():
            if not keys:
                continue
            # Keys the window sketch does not hold (new, or pruned) go to the distinct counter (idempotent).
            new = set(keys).difference(hot.counts)
            if new:
                distinct.update(new)
            hot.add_many(keys)
            per_minute = minutes.get(minute)
            if per_minute is None:
                per_minute = minutes[minute] = (HeavyHitters(minute_capacity), HeavyHitters(minute_capacity))
            per_minute[0].add_many(keys)
            if writes:
                self._hot_writes.add_many(writes)
                per_minute[1].add_many(writes)
        ka = self._key_attrs
        for attr, n in Counter(attrs).items():
            _add_capped_names(ka, attr, n)

    # ---------------------------------------------------------------- ingest

    def add(self, call: ApiCall, items: Sequence[ItemAccess], epoch: float, pk_hint: str | None = None) -> None:
        """Count one call's accesses to this table (``items`` are the call's accesses to this table).

        This is the hot path of every ingest (one call per CloudTrail record): key accesses are only appended to
        the pending batch, which :meth:`flush` folds into the sketches every :data:`PENDING_LIMIT` accesses.
        """
        self.calls += 1
        if epoch < self.first_time:
            self.first_time = epoch
        if epoch > self.last_time:
            self.last_time = epoch
        ops = self.operations
        op_name = call.operation
        ops[op_name] = ops.get(op_name, 0) + 1
        error = call.error_code
        if error is not None:
            self._add_error(call, items, error, pk_hint)
        patterns = self.patterns
        bufs: tuple[list[str], list[str]] | None = None
        for item in items:
            is_write = item.access is Access.WRITE
            if is_write:
                self.item_writes += 1
            else:
                self.item_reads += 1
            key = item.key
            full_scan = item.full_scan
            if full_scan:
                self._add_scan(call, item, epoch)
                template = ""
            elif key:
                if len(key) == 1:
                    attr, value = next(iter(key.items()))
                else:
                    attr = partition_attr(key, pk_hint)
                    value = key[attr]
                # inline for short strings (at most 512 characters are at most 2 KB of UTF-8); encode_key caps the rest
                encoded = f'{attr}\x1f"{value}' if type(value) is str and len(value) <= 512 else encode_key(attr, value)
                self.key_requests += 1
                if bufs is None:
                    minute = int(epoch // 60)
                    if minute == self._pending_minute:
                        bufs = self._pending_bufs
                    else:
                        bufs = self._pending.get(minute)
                        if bufs is None:
                            bufs = self._pending[minute] = ([], [])
                        self._pending_minute = minute
                        self._pending_bufs = bufs
                bufs[0].append(encoded)
                if is_write:
                    self.key_writes += 1
                    bufs[1].append(encoded)
                else:
                    self.key_reads += 1
                self._pending_attrs.append(attr)
                template = key_template(key) or ""
            else:
                template = ""
            pattern = (item.index or "", item.operation, template, not full_scan)
            n = patterns.get(pattern)
            if n is not None:
                patterns[pattern] = n + 1
            else:
                _add_capped(patterns, pattern, 1, MAX_PATTERNS, ("", OTHER, "", not full_scan))
        if len(self._pending_attrs) >= PENDING_LIMIT:
            self.flush()

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
        stats.count += 1
        if epoch < stats.first:
            stats.first = epoch
        if epoch > stats.last:
            stats.last = epoch
        if call.scan_segment is not None and len(stats.segments) < MAX_SEGMENTS:
            stats.segments.add(call.scan_segment)
        if call.scan_total_segments and call.scan_total_segments > stats.total_segments:
            stats.total_segments = call.scan_total_segments
        if item.index and len(stats.indexes) < 10:
            stats.indexes.add(item.index)

    def _add_error(self, call: ApiCall, items: Sequence[ItemAccess], error: str, pk_hint: str | None) -> None:
        _add_capped(self.errors, error, 1, MAX_ERROR_CODES, OTHER)
        if error in THROTTLE_CODES:
            cause, index = throttle_cause(error, call.error_message)
            access = "write" if call.access is Access.WRITE else "read"
            tk = (cause, access, index or "")
            self.throttles[tk] = self.throttles.get(tk, 0) + 1
            for item in items:
                if item.key:
                    attr = partition_attr(item.key, pk_hint)
                    _add_capped(self.throttle_keys, encode_key(attr, item.key[attr]), 1, MAX_THROTTLE_KEYS, OTHER)
            if (
                call.error_message
                and len(self.throttle_messages) < 3
                and call.error_message not in self.throttle_messages
            ):
                self.throttle_messages.append(call.error_message[:300])
        elif error == "ValidationException" and (call.error_message or "").startswith(SIZE_EXCEEDED_PREFIXES):
            self.size_exceeded += 1
            keyed = [i.key for i in items if i.key]
            if not keyed:
                _add_capped(self.size_exceeded_keys, OTHER, 1, MAX_SIZE_KEYS, OTHER)
            for key in keyed:
                encoded = orjson.dumps(key).decode()
                _add_capped(self.size_exceeded_keys, encoded, 1, MAX_SIZE_KEYS, OTHER)

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
            _add_capped(self.key_attrs, k, n, 8, OTHER)
        for sk, st in other.scans.items():
            mine = self.scans.get(sk)
            if mine is None and len(self.scans) >= MAX_SCANNERS:
                sk = (OTHER, sk[1])
                mine = self.scans.get(sk)
            if mine is None:
                mine = self.scans[sk] = ScanStats()
            mine.merge(st)
        for k, n in other.errors.items():
            _add_capped(self.errors, k, n, MAX_ERROR_CODES, OTHER)
        for tk, n in other.throttles.items():
            self.throttles[tk] = self.throttles.get(tk, 0) + n
        for k, n in other.throttle_keys.items():
            _add_capped(self.throttle_keys, k, n, MAX_THROTTLE_KEYS, OTHER)
        for m in other.throttle_messages:
            if len(self.throttle_messages) < 3 and m not in self.throttle_messages:
                self.throttle_messages.append(m)
        self.size_exceeded += other.size_exceeded
        for k, n in other.size_exceeded_keys.items():
            _add_capped(self.size_exceeded_keys, k, n, MAX_SIZE_KEYS, OTHER)
        for pk, n in other.patterns.items():
            _add_capped(self.patterns, pk, n, MAX_PATTERNS, ("", OTHER, "", pk[3]))

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

    @property
    def partition_key_attr(self) -> str | None:
        """The attribute most often taken as the partition key."""
        if not self.key_attrs:
            return None
        return max(sorted(self.key_attrs), key=lambda k: self.key_attrs[k])

    # ---------------------------------------------------------------- (de)serialisation

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, bounded form (see :data:`MAX_SERIALIZED_BYTES`)."""
        return {
            "v": 1,
            "account": self.account,
            "region": self.region,
            "table": self.table,
            "window_start": self.window_start,
            "window_seconds": self.window_seconds,
            "windows": sorted(self.windows),
            "sketch_capacity": self.sketch_capacity,
            "first_time": self.first_time if self.calls else None,
            "last_time": self.last_time if self.calls else None,
            "calls": self.calls,
            "operations": self.operations,
            "item_reads": self.item_reads,
            "item_writes": self.item_writes,
            "key_requests": self.key_requests,
            "key_reads": self.key_reads,
            "key_writes": self.key_writes,
            "hot": self.hot.to_dict(limit=_sketch_limit(self.hot)),
            "hot_writes": self.hot_writes.to_dict(limit=_sketch_limit(self.hot_writes)),
            "minutes": [
                [m, a.to_dict(limit=MINUTE_SERIALIZED_KEYS), w.to_dict(limit=MINUTE_SERIALIZED_KEYS)]
                for m, (a, w) in sorted(self.minutes.items())
            ],
            "distinct": self.distinct.to_dict(),
            "key_attrs": self.key_attrs,
            "scans": [[p, op, st.to_list()] for (p, op), st in self.scans.items()],
            "errors": self.errors,
            "throttles": [[c, a, i, n] for (c, a, i), n in self.throttles.items()],
            "throttle_keys": self.throttle_keys,
            "throttle_messages": self.throttle_messages,
            "size_exceeded": self.size_exceeded,
            "size_exceeded_keys": self.size_exceeded_keys,
            "patterns": [[i, o, t, e, n] for (i, o, t, e), n in self.patterns.items()],
        }

    def to_json(self) -> bytes:
        """Serialised form as JSON bytes."""
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TableWindow:
        """Inverse of :meth:`to_dict`."""
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
        tw.hot = HeavyHitters.from_dict(d["hot"])
        tw.hot_writes = HeavyHitters.from_dict(d["hot_writes"])
        tw.minutes = {
            int(m): (HeavyHitters.from_dict(a), HeavyHitters.from_dict(w)) for m, a, w in d.get("minutes", [])
        }
        tw.distinct = DistinctCounter.from_dict(d["distinct"])
        tw.key_attrs = {str(k): int(v) for k, v in d["key_attrs"].items()}
        tw.scans = {(p, op): ScanStats.from_list(st) for p, op, st in d["scans"]}
        tw.errors = {str(k): int(v) for k, v in d["errors"].items()}
        tw.throttles = {(c, a, i): int(n) for c, a, i, n in d["throttles"]}
        tw.throttle_keys = {str(k): int(v) for k, v in d["throttle_keys"].items()}
        tw.throttle_messages = [str(m) for m in d["throttle_messages"]]
        tw.size_exceeded = int(d["size_exceeded"])
        tw.size_exceeded_keys = {str(k): int(v) for k, v in d["size_exceeded_keys"].items()}
        tw.patterns = {(i, o, t, bool(e)): int(n) for i, o, t, e, n in d["patterns"]}
        return tw


def _sketch_limit(hh: HeavyHitters) -> int | None:
    """How many sketch keys fit the serialised budget (about 60 KB per sketch)."""
    size = 0
    for n, (k, _) in enumerate(hh.top(len(hh.counts))):
        size += len(k) + 16
        if size > 60_000:
            return n
    return None


def partition_attr(key: dict[str, Any], hint: str | None) -> str:
    """Which attribute of a logged key is the partition key.

    CloudTrail logs the key map without saying which attribute is the partition key. In order: the
    configured key schema (``hint``); the only attribute; an attribute named like a partition key
    (``pk``, ``PK``, ``partitionKey``...); the attribute that is not named like a sort key; else the first
    attribute as logged (SDKs keep the order the caller used, which is partition key first by
    convention, as in the AWS samples).
    """
    if hint is not None and hint in key:
        return hint
    if len(key) == 1:
        return next(iter(key))
    names = tuple(key)
    found = _PK_CACHE.get(names)
    if found is None:
        if len(_PK_CACHE) > 4096:
            _PK_CACHE.clear()
        found = _PK_CACHE[names] = _guess_partition_attr(names)
    return found


_PK_CACHE: dict[tuple[str, ...], str] = {}


def _guess_partition_attr(key: tuple[str, ...]) -> str:
    first = key[0]
    for name in key:
        if name.lower() in _PK_NAMES:
            return name
    for name in key:
        if name.lower() not in _SK_NAMES:
            return name
    return first


WindowKey = tuple[str | None, str | None, str, int]


class AggregateSet:
    """All table windows of one ingest unit (a file, an invocation, a CLI run)."""

    def __init__(
        self,
        window_seconds: int = 900,
        sketch_capacity: int = 512,
        key_schema: dict[str, str] | None = None,
    ) -> None:
        if window_seconds < 60:
            raise ValueError("window_seconds must be >= 60")
        self.window_seconds = window_seconds
        self.sketch_capacity = sketch_capacity
        self.key_schema = key_schema or {}
        self.windows: dict[WindowKey, TableWindow] = {}

    def add(self, call: ApiCall) -> None:
        """Count one call in the window of each table it touched."""
        epoch = call.time.timestamp()
        start = int(epoch // self.window_seconds) * self.window_seconds
        items = call.items
        if len(call.tables) == 1:
            table = call.tables[0]
            self._window(call.account, call.region, table, start).add(call, items, epoch, self.key_schema.get(table))
            return
        for table in call.tables:
            mine = [i for i in items if i.table == table]
            self._window(call.account, call.region, table, start).add(call, mine, epoch, self.key_schema.get(table))

    def _window(self, account: str | None, region: str | None, table: str, start: int) -> TableWindow:
        wk = (account, region, table, start)
        tw = self.windows.get(wk)
        if tw is None:
            tw = self.windows[wk] = TableWindow(
                account, region, table, start, self.window_seconds, self.sketch_capacity
            )
        return tw

    def merge(self, other: AggregateSet, *, take: bool = False) -> None:
        """Add another set's windows into this one.

        ``other`` is left unchanged unless ``take`` is true, in which case its windows may be adopted
        without a copy (use it when ``other`` is discarded afterwards).
        """
        for wk, tw in other.windows.items():
            mine = self.windows.get(wk)
            if mine is None:
                self.windows[wk] = tw if take else tw.copy()
            else:
                mine.merge(tw)

    def flush(self) -> None:
        """Fold every window's pending key accesses into its sketches (:meth:`TableWindow.flush`)."""
        for tw in self.windows.values():
            tw.flush()

    def spans(self) -> list[TableWindow]:
        """One aggregate per table, merging all its windows (``window_seconds`` = the windows covered)."""
        by_table: dict[tuple[str | None, str | None, str], TableWindow] = {}
        for wk in sorted(self.windows, key=lambda w: (w[0] or "", w[1] or "", w[2], w[3])):
            tw = self.windows[wk]
            tk = (wk[0], wk[1], wk[2])
            span = by_table.get(tk)
            if span is None:
                by_table[tk] = tw.copy()
            else:
                span.merge(tw)
        return list(by_table.values())

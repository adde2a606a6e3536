"""``AggregateSet``: the table windows of one ingest unit, and the ingest's fast paths that fill them.

``AggregateSet`` maps (account, region, table, window start) to its :class:`~.table_window.TableWindow`. Its
``add_batch`` (:func:`add_batch`) counts a ``SingleItem`` in its loop over a batch, its ``add`` (:func:`add_call`) a
call that did not fail and is not an AWS service's own (a batch, a transaction, a PartiQL statement, a Scan page): the
window, minute and second worked out once, the items of a call spanning tables shared out in one pass, the common
accesses (a logged key or a PartiQL statement; no index, no key condition, not a scan) counted inline, any other access
by ``TableWindow._add_item``. Both count what ``TableWindow.add``, the general code, counts (tests hold them equal).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final, cast

from auditor.kernel.aggregates.bounds import PENDING_LIMIT
from auditor.kernel.aggregates.index_writes import count_write
from auditor.kernel.aggregates.keys import _PK_CACHE, encode_key, partition_attr
from auditor.kernel.aggregates.table_window import Pattern, TableWindow
from auditor.kernel.aggregates.templates import (
    _VALUE_CACHE,
    _new_value,
    key_template,
    query_template,
    statement_template,
    value_template,
)
from auditor.kernel.aggregates.units import METERED_OPERATIONS, extra_units
from auditor.kernel.calls import Access, ApiCall, CallBatch, ItemAccess, SingleItem
from auditor.kernel.general import SERVICE
from auditor.kernel.write_shapes import statement_shape, write_shape

_WRITE: Final = Access.WRITE


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
        """Count one call in the window of each table it touched (one that did not fail and is not an AWS service's
        with :func:`add_call`, the same counts written out)."""
        if not add_call(self, call):
            self._add_general(call)

    def _add_general(self, call: ApiCall) -> None:
        """:meth:`add` by :meth:`TableWindow.add`, table by table."""
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

    def add_item(self, item: SingleItem) -> None:
        """:meth:`add` for a single-item call read by :func:`auditor.kernel.normalize.single_item`."""
        self.add_batch([item])

    def add_batch(self, batch: CallBatch) -> None:
        """Count a batch of calls as :func:`auditor.kernel.reader.read_calls` hands them out, in order: each
        ``ApiCall`` as :meth:`add` does, each ``SingleItem`` (a successful GetItem, PutItem, UpdateItem, DeleteItem or
        Query) with the same counts as ``add`` of its call's ``ApiCall`` (a test holds the two equal).

        The ingest hot path, one loop for the whole batch: :func:`add_batch`.
        """
        add_batch(self, batch)

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


def add_batch(aggs: AggregateSet, batch: CallBatch) -> None:
    """:meth:`AggregateSet.add_batch`: a ``SingleItem``
    counted here, what :meth:`TableWindow.add` does for one item written out, with the window, minute and second of
    a time worked out once for the records of the same time; an ``ApiCall`` with :func:`add_call`, else the general
    code."""
    windows = aggs.windows
    ws = aggs.window_seconds
    schema = aggs.key_schema
    values = _VALUE_CACHE  # key_template's and partition_attr's caches, read in the loop
    new_value = _new_value
    pk_cache = _PK_CACHE
    when = math.nan
    start = minute = second = 0
    # This batch's windows of one account, region and window start, by table: their keys compared to the previous
    # item's, a window is found hashing one fresh string (its table), not three and a tuple. With each, its pattern
    # rows by (operation, attribute, value template, ...) of a plain key: a known pattern's row is found without
    # building its template (the strings of that key are the caches' own, their hashes kept).
    by_table: dict[str, tuple[TableWindow, dict[tuple[str, ...], list[Any]]]] = {}
    last_account = last_region = ""
    last_start = -1
    for call in batch:
        if type(call) is not tuple:
            api_call = cast("ApiCall", call)
            if not add_call(aggs, api_call):
                aggs._add_general(api_call)
            continue
        _, operation, _, epoch, account, region, table, index, key, condition, is_write, eventual, shape = call
        if epoch != when:
            when = epoch
            start = int(epoch // ws) * ws
            minute = int(epoch // 60)
            second = int(epoch) * 2
        if start != last_start or account != last_account or region != last_region:
            by_table = {}
            last_start = start
            last_account = account
            last_region = region
        mine = by_table.get(table)
        if mine is None:
            tw = windows.get((account, region, table, start))
            if tw is None:
                tw = aggs._window(account, region, table, start)
            mine = by_table[table] = (tw, {})
        tw, rows = mine
        tw.calls += 1
        if epoch < tw.first_time:
            tw.first_time = epoch
        if epoch > tw.last_time:
            tw.last_time = epoch
        ops = tw.operations
        ops[operation] = ops.get(operation, 0) + 1
        if is_write:
            tw.item_writes += 1
            if shape:
                per_minute = tw.write_shapes.get(shape)
                if per_minute is None:
                    count_write(tw.write_shapes, shape, minute)
                else:  # count_write of a known shape
                    per_minute[minute] = per_minute.get(minute, 0) + 1
        else:
            tw.item_reads += 1
        template = ""
        plain: tuple[str, ...] | None = None  # a pattern row's key in rows (a plain key's, a key condition's)
        if not key:
            if condition is not None:  # a Query that logs no key
                plain = (operation, condition[0], condition[1], "?")
        else:  # TableWindow._add_key of a table's key, partition_attr and key_template, written out
            if len(key) == 1:
                attr, value = next(iter(key.items()))
                if condition is not None:
                    template = query_template(condition, key)
                elif type(value) is str:  # key_template's exact-value cache, read here
                    t1 = values.get(value)
                    plain = (operation, attr, t1 if t1 is not None else new_value(value))
                else:
                    template = f"{attr}={value_template(value)}"
            elif len(key) == 2:
                (a1, v1), (a2, v2) = key.items()
                hint = schema.get(table) if index is None and schema else None
                if hint is not None and hint in (a1, a2):
                    attr = hint
                else:
                    cached = pk_cache.get((a1, a2))
                    attr = cached if cached is not None else partition_attr(key, None)
                value = v1 if attr == a1 else v2
                if condition is not None:
                    template = query_template(condition, key)
                elif type(v1) is str and type(v2) is str:
                    t1 = values.get(v1)
                    if t1 is None:
                        t1 = new_value(v1)
                    t2 = values.get(v2)
                    plain = (operation, a1, t1, a2, t2 if t2 is not None else new_value(v2))
                else:
                    template = key_template(key) or ""
            else:
                attr = partition_attr(key, schema.get(table) if index is None and schema else None)
                value = key[attr]
                template = (key_template(key) or "") if condition is None else query_template(condition, key)
            encoded = f'{attr}\x1f"{value}' if type(value) is str and len(value) <= 512 else encode_key(attr, value)
            if index is not None:
                tw._add_index_key(index, attr, encoded, is_write, eventual, epoch)
            else:
                tw.key_requests += 1
                if minute == tw._pending_minute:
                    bufs = tw._pending_bufs
                else:
                    found_bufs = tw._pending.get(minute)
                    if found_bufs is None:
                        found_bufs = tw._pending[minute] = ([], [], [])
                    bufs = tw._pending_bufs = found_bufs
                    tw._pending_minute = minute
                bufs[0].append(encoded)
                if is_write:
                    tw.key_writes += 1
                    bufs[1].append(encoded)
                    bufs[2].append(second + 1)
                else:
                    tw.key_reads += 1
                    if eventual:
                        tw.key_reads_eventual += 1
                    bufs[2].append(second)
                tw._pending_attrs.append(attr)
        row = rows.get(plain) if plain is not None and index is None else None
        if row is not None:
            row[0] += 1
            row[1] += 1
        else:
            if plain is not None and len(plain) == 4:
                template = query_template((plain[1], plain[2]), None)
            elif plain is not None:  # key_template's template of the key
                template = f"{plain[1]}={plain[2]}"
                if len(plain) == 5:
                    template = f"{template}, {plain[3]}={plain[4]}"
            pattern = (index or "", operation, template, True)
            row = tw.patterns.get(pattern)
            if row is None:
                tw._count_pattern(pattern, 1, None)
            else:  # what _count_pattern counts for a known pattern without an error (the row stays the pattern's)
                row[0] += 1
                row[1] += 1
                if plain is not None and index is None:
                    rows[plain] = row
        if len(tw._pending_attrs) >= PENDING_LIMIT:
            tw.flush()


def add_call(aggs: AggregateSet, call: ApiCall) -> bool:
    """Count ``call`` in its windows of ``aggs`` if it did not fail and is not an AWS service's; False, counting
    nothing, if it did or was, or when it names a table twice (the general code counts those)."""
    if call.error_code is not None or call.principal_type == SERVICE:
        return False
    tables = call.tables
    account = call.account
    region = call.region
    schema = aggs.key_schema
    windows = aggs.windows
    epoch = call.time.timestamp()
    ws = aggs.window_seconds
    start = int(epoch // ws) * ws
    minute = int(epoch // 60)
    second = int(epoch) * 2
    extra = extra_units(call) if call.operation in METERED_OPERATIONS else 0
    if len(tables) == 1:
        table = tables[0]
        tw = windows.get((account, region, table, start))
        if tw is None:
            tw = aggs._window(account, region, table, start)
        add_items(tw, call, call.items, epoch, minute, second, extra, schema.get(table) if schema else None)
        return True
    groups: dict[str, list[ItemAccess]] = {table: [] for table in tables}
    if len(groups) != len(tables):
        return False
    for item in call.items:  # an item of a table the call does not name is not counted (as by the general code)
        mine = groups.get(item.table)
        if mine is not None:
            mine.append(item)
    for table, items in groups.items():
        tw = windows.get((account, region, table, start))
        if tw is None:
            tw = aggs._window(account, region, table, start)
        add_items(tw, call, items, epoch, minute, second, extra, schema.get(table) if schema else None)
    return True


def add_items(
    tw: TableWindow, call: ApiCall, items: Sequence[ItemAccess], epoch: float, minute: int, second: int, extra: int,
    pk_hint: str | None,
) -> None:  # fmt: skip
    """:meth:`TableWindow.add` of a call without an error, not an AWS service's (``minute``: of ``epoch``,
    ``second``: ``int(epoch) * 2``, ``extra``: its :func:`.units.extra_units`)."""
    operation = call.operation
    tw.calls += 1
    if epoch < tw.first_time:
        tw.first_time = epoch
    if epoch > tw.last_time:
        tw.last_time = epoch
    ops = tw.operations
    ops[operation] = ops.get(operation, 0) + 1
    eventual = call.consistent_read is False
    # a call's accesses of one pattern count one call of it (a single access needs no tally)
    per_call: dict[Pattern, int] | None = None if len(items) == 1 else {}
    values = _VALUE_CACHE
    bufs: tuple[list[str], list[str], list[int]] | None = None
    for item in items:
        if item.index is not None or item.condition is not None or item.full_scan:
            if per_call is None:
                per_call = {}
            if tw._add_item(call, item, epoch, pk_hint, None, eventual, extra, per_call):
                tw.item_writes += 1
            else:
                tw.item_reads += 1
            continue
        is_write = item.access is _WRITE
        statement = item.statement
        if is_write:
            tw.item_writes += 1
            shape = item.shape
            if not shape:
                shape = (statement_shape(statement) if statement is not None else None) or write_shape(
                    item.operation, None
                )
            if shape:
                per_minute = tw.write_shapes.get(shape)
                if per_minute is None:
                    count_write(tw.write_shapes, shape, minute)
                else:
                    per_minute[minute] = per_minute.get(minute, 0) + 1
        else:
            tw.item_reads += 1
        key = item.key
        # whether the key's template is the access's (a PartiQL statement's is, when it shows only key values)
        plain = statement is None or (
            key is statement.key_equalities and statement.verb != "INSERT" and not statement.redacted_equalities
        )
        template = ""
        if key:  # TableWindow._add_key, partition_attr and key_template, written out
            if len(key) == 1:
                attr, value = next(iter(key.items()))
                if plain:
                    if type(value) is str:
                        found = values.get(value)
                        template = f"{attr}={found if found is not None else _new_value(value)}"
                    else:
                        template = f"{attr}={value_template(value)}"
            elif len(key) == 2:
                (a1, v1), (a2, v2) = key.items()
                if pk_hint is not None and pk_hint in (a1, a2):
                    attr = pk_hint
                else:
                    cached = _PK_CACHE.get((a1, a2))
                    attr = cached if cached is not None else partition_attr(key, None)
                value = v1 if attr == a1 else v2
                if plain:
                    if type(v1) is str and type(v2) is str:
                        t1 = values.get(v1)
                        if t1 is None:
                            t1 = _new_value(v1)
                        t2 = values.get(v2)
                        if t2 is None:
                            t2 = _new_value(v2)
                        template = f"{a1}={t1}, {a2}={t2}"
                    else:
                        template = key_template(key) or ""
            else:
                attr = partition_attr(key, pk_hint)
                value = key[attr]
                if statement is None:
                    template = key_template(key) or ""
                else:
                    plain = False  # a statement's template names at most 8 attributes
            encoded = f'{attr}\x1f"{value}' if type(value) is str and len(value) <= 512 else encode_key(attr, value)
            if bufs is None:
                if minute == tw._pending_minute:
                    bufs = tw._pending_bufs
                else:
                    bufs = tw._pending.get(minute)
                    if bufs is None:
                        bufs = tw._pending[minute] = ([], [], [])
                    tw._pending_bufs = bufs
                    tw._pending_minute = minute
            read_eventual = eventual or item.eventual  # a BatchGetItem logs consistentRead per table: per item
            # one unit, or more when metered above one read or write of the item (see ``extra_units``)
            _add_units(tw, bufs, 1 + extra, encoded, attr if statement is None else "", is_write, read_eventual, second)
        if statement is not None:
            if not plain:
                template = statement_template(statement)
            if statement.verb != "INSERT" and statement.constrained:  # TableWindow._add_statement, written out
                sk = (call.principal or "(unknown)", statement.verb, "", ",".join(statement.constrained))
                stats = tw.statements.get(sk)
                if stats is None:
                    tw._add_statement(call, item, epoch)
                else:
                    stats.count += 1
                    if epoch < stats.first:
                        stats.first = epoch
                    if epoch > stats.last:
                        stats.last = epoch
        pattern = ("", item.operation, template, True)
        if per_call is None:
            row = tw.patterns.get(pattern)
            if row is None:
                tw._count_pattern(pattern, 1, None)
            else:  # what _count_pattern counts for a known pattern without an error
                row[0] += 1
                row[1] += 1
        else:
            per_call[pattern] = per_call.get(pattern, 0) + 1
    if per_call:
        patterns = tw.patterns
        for pattern, n in per_call.items():
            row = patterns.get(pattern)
            if row is None:
                tw._count_pattern(pattern, n, None)
            else:
                row[0] += 1
                row[1] += n
    if len(tw._pending_attrs) >= PENDING_LIMIT:
        tw.flush()


def _add_units(
    tw: TableWindow, bufs: tuple[list[str], list[str], list[int]], units: int, encoded: str, attr: str, is_write: bool,
    eventual: bool, second: int,
) -> None:  # fmt: skip
    """``units`` key accesses of one item (see :func:`.units.extra_units`) into the pending batch."""
    tw.key_requests += units
    bufs[0].extend([encoded] * units)
    if is_write:
        tw.key_writes += units
        bufs[1].extend([encoded] * units)
        bufs[2].extend([second + 1] * units)
    else:
        tw.key_reads += units
        if eventual:
            tw.key_reads_eventual += units
        bufs[2].extend([second] * units)
    tw._pending_attrs.extend([attr] * units)

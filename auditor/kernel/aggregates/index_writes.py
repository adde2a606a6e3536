"""Base-table writes by what they may touch, per minute, to meter each global secondary index's writes.

A table window counts its successful writes per shape (:mod:`auditor.kernel.write_shapes`) and minute
(:func:`count_write`); :func:`index_writes` meters them per index with
:func:`auditor.models.capacity.index_write_units`, against the index's key attributes (docs/capacity.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol

from auditor.kernel.aggregates.failures import _GSI_ON_DEMAND, _GSI_PROVISIONED, FROM_MESSAGE
from auditor.kernel.aggregates.keys import IndexKeys
from auditor.models.capacity import index_write_units

#: Distinct write shapes a window keeps (later ones count as :data:`OVERFLOW`, an unknown write), and the (shape,
#: minute) counts its serialised form keeps.
MAX_WRITE_SHAPES: Final = 32
MAX_SERIALIZED_MINUTES: Final = 2048
OVERFLOW: Final = "*"

#: shape -> minute -> writes
WriteShapes = dict[str, dict[int, int]]


def count_write(shapes: WriteShapes, shape: str, minute: int, n: int = 1) -> None:
    """``n`` successful writes of ``shape`` in ``minute`` (past :data:`MAX_WRITE_SHAPES` shapes: :data:`OVERFLOW`)."""
    minutes = shapes.get(shape)
    if minutes is None:
        if len(shapes) >= MAX_WRITE_SHAPES:
            shape = OVERFLOW
        minutes = shapes.setdefault(shape, {})
    minutes[minute] = minutes.get(minute, 0) + n


def merge_writes(into: WriteShapes, other: WriteShapes) -> None:
    """Add ``other``'s counts into ``into``."""
    for shape, minutes in other.items():
        for minute, n in minutes.items():
            count_write(into, shape, minute, n)


def writes_to_list(shapes: WriteShapes) -> list[list[Any]]:
    """The serialised form, ``[[shape, minute, writes], ...]``: the :data:`MAX_SERIALIZED_MINUTES` largest counts."""
    rows = [(shape, minute, n) for shape, minutes in shapes.items() for minute, n in minutes.items()]
    if len(rows) > MAX_SERIALIZED_MINUTES:
        rows = sorted(rows, key=lambda r: (-r[2], r[0], r[1]))[:MAX_SERIALIZED_MINUTES]
    return [list(r) for r in rows]


def writes_from_list(rows: list[list[Any]]) -> WriteShapes:
    """Inverse of :func:`writes_to_list`."""
    shapes: WriteShapes = {}
    for shape, minute, n in rows:
        count_write(shapes, str(shape), int(minute), int(n))
    return shapes


class _Window(Protocol):
    """What :func:`index_writes` reads of a table window (:class:`~auditor.kernel.aggregates.window.TableWindow`)."""

    write_shapes: WriteShapes
    index_schema: dict[str, str]
    index_keys: dict[str, IndexKeys]
    throttles: dict[tuple[str, str, str], int]
    throttle_messages: list[str]
    schema_hint: str | None

    @property
    def partition_key_attr(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class IndexWrites:
    """The writes the base table's writes cost one global secondary index, in writes of one index item."""

    index: str
    #: the index's key attributes the metering used (empty: not known, every put and delete charged)
    key_attrs: tuple[str, ...]
    writes: int
    #: the base-table writes that reached the index (an update that changes its key costs it two)
    base_writes: int
    #: the busiest minute (its start, epoch seconds) and its index writes
    peak_minute: int | None
    peak_writes: int


def amplified_writes(shapes: WriteShapes, key_attrs: tuple[str, ...]) -> tuple[dict[int, int], int]:
    """(index writes per minute, base-table writes that reached the index) of an index keyed on ``key_attrs``
    (empty: not known), metered with :func:`auditor.models.capacity.index_write_units`."""
    per_minute: dict[int, int] = {}
    base = 0
    for shape, minutes in shapes.items():
        units = index_write_units(shape, key_attrs)
        if not units:
            continue
        for minute, n in minutes.items():
            per_minute[minute] = per_minute.get(minute, 0) + n * units
            base += n
    return per_minute, base


def index_writes(agg: _Window) -> list[IndexWrites]:
    """Each known global secondary index's metered writes (by name): the indexes the table's description names,
    those its Queries use, and those its throttle reasons name. An index's key attribute is the described partition
    key, else the one its Queries' key conditions name. An index keyed on the table's own partition key is taken for
    a local secondary index (its writes are the table's own capacity) and left out."""
    names = set(agg.index_schema) | set(agg.index_keys) | {i for (_, _, i) in agg.throttles if i}
    table_key = agg.schema_hint or agg.partition_key_attr
    out = []
    for name in sorted(names):
        space = agg.index_keys.get(name)
        attr = agg.index_schema.get(name) or (space.partition_key_attr if space is not None else None)
        if attr is not None and attr == table_key:
            continue
        key_attrs = (attr,) if attr else ()
        per_minute, base = amplified_writes(agg.write_shapes, key_attrs)
        writes = sum(per_minute.values())
        peak = max(per_minute.items(), key=lambda kv: (kv[1], -kv[0]), default=None)
        out.append(IndexWrites(name, key_attrs, writes, base, peak[0] * 60 if peak else None, peak[1] if peak else 0))
    return out


def amplified_index(writes: list[IndexWrites]) -> IndexWrites | None:
    """The index the table's writes amplify into most (the one a GSI back-pressure message that names no index is
    about, on a table with one index taking writes), ties by name; None when no known index takes writes."""
    taking = [w for w in writes if w.writes > 0]
    return min(taking, key=lambda w: (-w.writes, w.index)) if taking else None


def gsi_throttles(agg: _Window, writes: list[IndexWrites] | None = None) -> dict[str, int]:
    """Base-table writes throttled by GSI back-pressure, per index: to the index its ``ThrottlingReasons`` name, else
    (the classic GSI messages name none) to :func:`amplified_index`; ``""`` when no index is known."""
    out: dict[str, int] = {}
    unnamed = 0
    for (cause, _, index), n in agg.throttles.items():
        if cause.removeprefix(FROM_MESSAGE) != "gsi_backpressure":
            continue
        if index:
            out[index] = out.get(index, 0) + n
        else:
            unnamed += n
    if unnamed:
        target = amplified_index(index_writes(agg) if writes is None else writes)
        name = target.index if target is not None else ""
        out[name] = out.get(name, 0) + unnamed
    return out


def gsi_provisioned(agg: _Window) -> bool | None:
    """What the GSI throttle messages say of the indexes' capacity mode: True for the provisioned GSI message, False
    for the on-demand one, None when neither was logged (:mod:`.failures` quotes both)."""
    messages = agg.throttle_messages
    if any(_GSI_PROVISIONED in m for m in messages):
        return True
    return False if any(_GSI_ON_DEMAND in m for m in messages) else None

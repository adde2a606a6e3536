"""Runs: consecutive records of a ``Records`` array, cut, decoded (typed where the light path reads them) and turned
into calls in one loop each, for the reader's hot path (:func:`auditor.kernel.reader.read_calls`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from auditor.exceptions import MalformedRecordError
from auditor.kernel.calls import ApiCall, CallBatch, SingleItem
from auditor.kernel.decode import (
    DECODE,
    DECODE_ERRORS,
    LIGHT_OPERATIONS,
    Bytes,
    FullRecord,
    LightRecord,
    call_record,
)
from auditor.kernel.dedupe import Deduper
from auditor.kernel.normalize import light_item, normalize_record, normalize_typed, single_item
from auditor.kernel.shards import SKIPPED, Shard, raw_owned
from auditor.kernel.stats import IngestStats

#: The most records of one run (a batch of small records: bounded memory whatever the input).
RUN_MOST: Final = 1024

#: Whether :func:`light_run` looks for the records of other operations before the typed decoder (compiled only:
#: interpreted, the look costs the other records more than it saves).
HINTED: Final = not __file__.endswith(".py")
#: Where the value of ``eventName`` began in records of other operations, from the record's first byte (a record's
#: ``userIdentity`` is as long as its caller's, so a few callers give a few offsets); bounded, cleared when full.
_OTHER_AT: Final[list[int]] = []
_OTHER_AT_MOST: Final = 16
_EVENT_NAME: Final = b'"eventName":"'
_EVENT_NAME_LEN: Final = len(_EVENT_NAME)
_QUOTE: Final = 34
_COLON: Final = 58
#: The first letters of the operations :class:`~auditor.kernel.decode.LightRecord` reads (GetItem, PutItem,
#: UpdateItem, DeleteItem, Query).
_LIGHT_INITIALS: Final = frozenset(b"GPUDQ")


def light_run(
    buf: bytes,
    start: int,
    limit: int,
    sep: bytes,
    advance: int,
    most: int,
    ascii: bool = False,
    shard: Shard | None = None,
) -> tuple[list[Any], int]:
    """The consecutive records of a ``Records`` array from ``start``, cut at the separator ``sep`` (``}`` + the gap
    between two records + the next record's first key; the next record starts ``advance`` bytes after the cut).
    ``ascii`` says that the caller found every byte of ``buf`` to be ASCII (one check of the whole buffer instead of
    one per record, see rule 1 of the typed decoder).

    With ``shard``, a record that :func:`~auditor.kernel.shards.raw_owned` gives to another shard is not decoded:
    :data:`~auditor.kernel.shards.SKIPPED` stands in its place (record numbers stay those of the whole input).

    Gives ``([record, ...], where the next record starts)``: each record as
    :func:`~auditor.kernel.decode.light_record` reads it, else (another operation's) as
    :func:`~auditor.kernel.decode.call_record` reads it, else decoded in full by orjson (a dict, or whatever JSON
    value the element is). At most ``most`` records; it stops at the first one whose separator is not found before
    ``limit``, or whose slice is not one JSON value (the reader's slower paths take it from there). Each step moves
    forward by at least one byte, and a search that finds nothing ends the run, so the work is bounded by the
    buffer's length.
    """
    if advance < 1 or most < 1 or not sep:
        raise ValueError("light_run() needs a separator, a positive advance and count")
    done: list[Any] = []
    find = buf.find
    view = memoryview(buf)  # each record is a view of the buffer, not a copy of its bytes (msgspec reads either)
    decode = DECODE
    loads = orjson.loads
    hinted = HINTED
    pos = start
    for _ in range(most):
        cut = find(sep, pos, limit)
        if cut < 0:
            break
        if shard is not None and not raw_owned(buf, pos, cut + 1, shard):
            done.append(SKIPPED)
            pos = cut + advance
            continue
        data = view[pos : cut + 1]
        if ascii or buf[pos : cut + 1].isascii():
            # Another operation's record is read by call_record (typed but for its parameters and caller). One whose
            # eventName stands where another's did goes there first: the typed decoder would fail on it only after
            # decoding its first fields (and raising costs as much again). Only a hint: where call_record reads
            # another operation, so does the last eventName of the record, on which the typed decoder fails.
            tried = hinted and _names_other(buf, pos, cut)
            if tried:
                full = call_record(data)
                if full is not None and full.record.operation not in LIGHT_OPERATIONS:
                    done.append(full)
                    pos = cut + advance
                    continue
            try:
                record = decode(data)
            except DECODE_ERRORS:
                full = None if tried else call_record(data)
                if full is not None and full.record.operation not in LIGHT_OPERATIONS:
                    if hinted:
                        _learn(buf, pos, cut)
                    done.append(full)
                    pos = cut + advance
                    continue
            else:
                record.data = data
                done.append(record)
                pos = cut + advance
                continue
        try:
            done.append(loads(data))
        except orjson.JSONDecodeError:
            break
        pos = cut + advance
    return done, pos


def _names_other(buf: bytes, start: int, end: int) -> bool:
    """Whether the record ``buf[start:end]`` holds ``"eventName":"`` where another operation's record held it
    (:data:`_OTHER_AT`), followed by a letter that no operation the typed decoder reads begins with."""
    for offset in _OTHER_AT:
        at = start + offset
        # Byte by byte first (compiled, each is a native read): most offsets stop at the first or second byte.
        if (
            at < end
            and buf[at - 1] == _QUOTE
            and buf[at - 2] == _COLON
            and buf[at - 3] == _QUOTE
            and buf[at] not in _LIGHT_INITIALS
            and buf.startswith(_EVENT_NAME, at - _EVENT_NAME_LEN)
        ):
            return True
    return False


def _learn(buf: bytes, start: int, end: int) -> None:
    """Note where the value of ``eventName`` begins in the record ``buf[start:end]``, another operation's."""
    at = buf.find(_EVENT_NAME, start, end)
    if at >= 0:
        offset = at + _EVENT_NAME_LEN - start
        if offset not in _OTHER_AT:
            if len(_OTHER_AT) >= _OTHER_AT_MOST:
                _OTHER_AT.clear()
            _OTHER_AT.append(offset)


def read_run(
    records: list[Any],
    index: int,
    stats: IngestStats,
    deduper: Deduper,
    name: str,
    normalize: Callable[[Mapping[str, Any]], ApiCall | None],
    shard: Shard | None = None,
) -> CallBatch:
    """The calls of a run's ``records`` (numbered from ``index + 1``), in input order, counted into ``stats``; with
    ``shard``, only those of its records that shard owns (:meth:`~auditor.kernel.shards.Shard.owns`).

    A successful single-item call comes as its ``SingleItem``, any other record as what :func:`full_call` gives (its
    ``ApiCall``, or nothing: not a data-plane call, a duplicate or a bad record). A typed record
    :func:`~auditor.kernel.normalize.light_item` hands back is decoded in full first. ``deduper`` drops repeated
    events, as the reader does for every call (called directly: compiled, a native call).
    """
    seen = deduper.seen
    out: CallBatch = []
    duplicates = calls = others = 0
    for record in records:
        index += 1
        if shard is not None and (record is SKIPPED or not shard.owns(record)):
            others += 1
            continue
        item: SingleItem | None
        if type(record) is LightRecord:
            item = light_item(record)
            if item is None:
                record = reparse(record.data)
        elif type(record) is dict:
            item = single_item(record)
        else:
            item = None
        if item is not None:
            if deduper.seen((item[0], item[1], item[2])):
                duplicates += 1
            else:
                out.append(item)
            continue
        call = full_call(record, index, name, stats, seen, normalize)
        if call is not None:
            out.append(call)
            calls += 1
    stats.records_read += len(records) - others
    stats.duplicates_dropped += duplicates
    stats.data_events += len(out) - calls  # full_call counts its own
    return out


def full_call(
    record: Any,
    index: int,
    name: str,
    stats: IngestStats,
    seen: Callable[[Hashable], bool],
    normalize: Callable[[Mapping[str, Any]], ApiCall | None],
) -> ApiCall | None:
    """The call of record number ``index`` of source ``name``, decoded in full, by ``normalize``; None: not a
    data-plane call, a duplicate (``seen``) or a bad record (counted and noted in ``stats``). A
    :class:`~auditor.kernel.decode.FullRecord` is read by :func:`~auditor.kernel.normalize.normalize_typed` where that
    reads it, else decoded by orjson first."""
    call: ApiCall | None = None
    if type(record) is FullRecord:
        if normalize is normalize_record:
            try:
                call = normalize_typed(record)
            except Exception:  # an unforeseen value: the full path below decides, as for the record decoded in full
                call = None
        if call is None:
            record = _loads(record.data)
    if call is None:
        call = _normalized(record, index, name, stats, normalize)
        if call is None:
            return None
    # One event is (eventID, eventName, eventTime): CloudTrail repeats all three when it delivers an event twice,
    # while records that only share an id (as the AWS documentation samples do) are distinct.
    if call.event_id and seen((call.event_id, call.operation, call.time)):
        stats.duplicates_dropped += 1
        return None
    if call.management_labelled:
        stats.note(
            f"{name}: record {index}: data-plane {call.operation} labelled eventCategory Management "
            "(analysed as a data event)"
        )
    stats.data_events += 1
    return call


def _normalized(
    record: Any, index: int, name: str, stats: IngestStats, normalize: Callable[[Mapping[str, Any]], ApiCall | None]
) -> ApiCall | None:
    """``normalize`` of a record decoded in full; None: not a data-plane call, or a bad record (counted and noted)."""
    if type(record) is not dict:
        stats.records_skipped += 1
        why = record.reason if type(record) is Malformed else "not a JSON object"
        stats.note(f"{name}: record {index}: {why}")
        return None
    try:
        return normalize(record)
    except MalformedRecordError as exc:
        stats.records_skipped += 1
        stats.note(f"{name}: record {index}: {exc}")
    except (ValueError, TypeError, OverflowError, RecursionError, KeyError, AttributeError) as exc:
        # A value the normaliser cannot handle (a date at the edge of the range, an integer beyond what a key can
        # hold, nesting too deep): one bad record. Only the type is noted, not the value.
        stats.records_skipped += 1
        stats.note(f"{name}: record {index}: unusable value ({type(exc).__name__})")
    return None


@dataclass(frozen=True, slots=True)
class Malformed:
    """Stands for one record whose extent is known but whose value cannot be read: a number or string the parser
    cannot represent (``1e400``, a 5,000-digit integer, a lone ``\\ud800``), nesting deeper than the parser allows,
    a record over the size limit. The reader counts it as a skipped record; the rest of the input is kept."""

    reason: str


def reparse(data: Bytes) -> Any:
    """A typed record decoded in full: a :class:`~auditor.kernel.decode.FullRecord` where
    :func:`~auditor.kernel.decode.call_record` reads it, else by orjson; one that orjson cannot read (rule 3 of the
    typed decoder) stands as one malformed record."""
    full = call_record(data)
    return full if full is not None else _loads(data)


def _loads(data: Bytes) -> Any:
    """``data`` decoded by orjson, or one malformed record."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return Malformed(f"invalid JSON ({exc})")

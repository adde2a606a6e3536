"""Sharded reading: which of several processes reading the same input owns a record (:class:`Shard`), decided from the
parsed record or, where that is safe, from its raw bytes without parsing it (:func:`raw_owned`).

:func:`auditor.engine.ingest_parallel` forks the processes; :mod:`auditor.kernel.framing` and
:mod:`auditor.kernel.runs` skip the records of other shards.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Final

from auditor.kernel.decode import FullRecord, LightRecord

__all__ = ["EVENT_ID_KEY", "SKIPPED", "Shard", "raw_owned", "skippable"]

#: What precedes a record's eventID value in its raw bytes (CloudTrail's compact JSON).
EVENT_ID_KEY: Final = b'"eventID":"'


@dataclass(frozen=True, slots=True)
class Shard:
    """This process's share of the records when several processes read the same input (``index`` of ``count``).

    A record belongs to shard ``crc32(eventID) % count``; a record without a string ``eventID`` (or that is not a
    JSON object) belongs to shard 0. All copies of one event therefore land in one shard, so deduplication stays
    exact, and every record is counted by exactly one shard.
    """

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError("shard index must be in [0, count)")

    def owns(self, record: object) -> bool:
        """Whether a parsed record belongs to this shard."""
        eid: object = None
        if isinstance(record, LightRecord):
            eid = record.event_id
        elif type(record) is dict:
            eid = record.get("eventID")
        elif type(record) is FullRecord:
            eid = record.record.event_id
        if type(eid) is not str:
            return self.index == 0
        return zlib.crc32(eid.encode("utf-8", "surrogatepass")) % self.count == self.index


class _Skipped:
    """Stands for a record another shard owns (yielded so record numbering stays global)."""

    __slots__ = ()


#: Yielded by :func:`iter_records` (with a shard) in place of a record another shard owns.
SKIPPED: Final = _Skipped()


def raw_owned(buf: bytes, start: int, end: int, shard: Shard) -> bool:
    """Whether the record ``buf[start:end]`` may belong to ``shard``, decided without parsing it when that is safe.

    Returns False only when the slice holds exactly one ``"eventID":"`` with a plain (escape-free) value that hashes
    to another shard: then, if the slice is one whole record, it is this eventID's record, exactly as
    :meth:`Shard.owns` decides after parsing. Anything less clear returns True, so the record is parsed and the
    caller decides with :meth:`Shard.owns`. The cheap checks come first: a record whose eventID hashes to this shard
    is parsed without the others, and the key is searched from the end (CloudTrail writes eventID near the end of a
    record, so such a record is found without scanning the rest).

    The slice is a whole record unless the record separator also occurs inside a record (an adversarial nested
    array of record-like objects). That is not checked here (a brace count costs as much as parsing): the shard
    whose hash the slice's eventID matches parses it, finds the cut wrong and reads the record structurally, so its
    count of records in the input differs from that of the shard that skipped the pieces, and
    :func:`auditor.engine.ingest_parallel` redoes the input in one process.
    """
    p = buf.rfind(EVENT_ID_KEY, start, end)
    if p < 0:
        return True
    value = p + len(EVENT_ID_KEY)
    q = buf.find(b'"', value, end)
    if q < 0 or zlib.crc32(buf[value:q]) % shard.count == shard.index:
        return True
    return not _sole_and_plain(buf, start, p, value, q)


def skippable(buf: bytes, start: int, end: int) -> bool:
    """Whether some shard's :func:`raw_owned` may skip ``buf[start:end]`` unparsed: it holds exactly one
    ``"eventID":"`` with a plain (escape-free) value."""
    p = buf.rfind(EVENT_ID_KEY, start, end)
    if p < 0:
        return False
    value = p + len(EVENT_ID_KEY)
    q = buf.find(b'"', value, end)
    return q >= 0 and _sole_and_plain(buf, start, p, value, q)


def _sole_and_plain(buf: bytes, start: int, p: int, value: int, q: int) -> bool:
    """Whether the key found last, at ``p``, is the slice's only one (none starts before it, overlapping ones
    included) and its value ``buf[value:q]`` holds no escape."""
    return buf.find(b"\\", value, q) < 0 and buf.find(EVENT_ID_KEY, start, p + len(EVENT_ID_KEY) - 1) < 0

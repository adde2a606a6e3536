"""Streaming CloudTrail reader: one input source -> its raw records (:func:`iter_records`) -> its DynamoDB data-plane
calls (:func:`read_calls`), counted into the ingest statistics.

Where the bytes come from is :mod:`auditor.kernel.inputs`, how they are cut into records :mod:`auditor.kernel.framing`;
the reader's design (measured by ``make bench``) is described in ``docs/kernel.md``.
"""

# mypyc: interpreted
# (its tests replace the typed decoder it passes to the framing; the work is done in the modules it calls)

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO

import structlog

from auditor.exceptions import SourceReadError
from auditor.kernel.calls import ApiCall, CallBatch
from auditor.kernel.decode import LightRecord, light_record
from auditor.kernel.dedupe import Deduper
from auditor.kernel.framing import SKIPPED, WRONG_CUT, LightRun, Shard, _Parser
from auditor.kernel.inputs import DEFAULT_CHUNK_SIZE, InputSource, _chunks, _regular_file
from auditor.kernel.normalize import light_item, normalize_record, single_item
from auditor.kernel.runs import full_call, light_run, read_run, reparse
from auditor.kernel.stats import IngestStats

__all__ = ["SKIPPED", "Deduper", "InputSource", "Shard", "iter_records", "read_calls"]

log = structlog.get_logger(__name__)


def iter_records(
    stream: BinaryIO,
    name: str,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    shard: Shard | None = None,
    light: bool = False,
) -> Iterator[Any]:
    """Yield the raw records of one input, streaming with bounded memory.

    ``stream`` is any binary file-like object with ``read(n)`` (a file, stdin, an S3 ``StreamingBody``); it is not
    closed. Gzip is detected by its magic bytes (multi-member files are fine), then the format is auto-detected (see
    :mod:`auditor.kernel.framing`). Records are normally dicts, but an element of ``Records`` (or of a top-level
    array) that is not a JSON object is yielded as it is, for the caller to count as malformed.

    A ``stream`` that is not a regular file is read by a background thread (without ``shard``); while the generator is
    alive the GIL switch interval is then lowered (see ``docs/kernel.md``), and restored when the generator
    finishes or is closed.

    Raises ``SourceReadError(name, reason)`` when the input cannot be read: corrupt or truncated gzip data, invalid
    JSON or UTF-8 (the reason gives the byte offset in the decompressed data), a JSON document of another shape, or
    a read error. Records before the failure point may already have been yielded: the caller must discard them.

    With ``shard``, records that clearly belong to another shard are not parsed: :data:`SKIPPED` is yielded in
    their place. Other records are yielded as usual, whoever owns them: the caller checks :meth:`Shard.owns`.

    With ``light``, the records of a ``Records`` array come through the typed decoder
    (:func:`auditor.kernel.decode.light_record`: the fields of the commonest calls, typed, with the record's bytes),
    consecutive records together as one :class:`LightRun` (a typed record where it read one, else the record decoded
    in full; with ``shard``, :data:`SKIPPED` for a record another shard clearly owns), else each record on its own.
    Only :func:`read_calls` asks for them.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    # A sharded reader runs beside the other shards' readers, which keep every CPU busy, and a regular file never
    # makes the reader wait: a reader thread would only add GIL hand-overs there, so those inflate in line.
    chunks = _chunks(stream, name, chunk_size, threaded=shard is None and not _regular_file(stream))
    try:
        reader = light_record if light else None
        yield from _Parser(chunks, name, shard, reader, light_run if light else None).records()
    finally:
        chunks.close()


def read_calls(
    source: InputSource,
    stats: IngestStats,
    deduper: Deduper,
    normalize: Callable[[Mapping[str, Any]], ApiCall | None] = normalize_record,
    shard: Shard | None = None,
    *,
    light: bool = False,
) -> Iterator[CallBatch]:
    """Yield the DynamoDB data-plane calls of one source as batches (one shape: a list of calls, in input order),
    counting into ``stats``. Each call is an ``ApiCall``, unless ``light``.

    With ``light``, the commonest calls (successful single-item calls, see
    :func:`auditor.kernel.normalize.single_item`) come as ``SingleItem`` tuples instead of ``ApiCall`` objects:
    the same call, read in a fraction of the time, for a consumer that only aggregates
    (:meth:`auditor.kernel.aggregates.window.AggregateSet.add_batch`). Only with the default ``normalize``: another
    one sees every record. A batch holds the calls of a run of consecutive records (up to 1,024) or of one record.

    Counts ``records_read`` for every record, ``records_skipped`` (with a ``stats.note``) for malformed ones (not
    a JSON object, or ``MalformedRecordError`` from ``normalize``), ``duplicates_dropped`` for DynamoDB data events
    whose ``eventID`` the ``deduper`` has seen, and ``data_events`` for each call yielded. Records that are not
    DynamoDB data events (``normalize`` returns None) count in ``records_read`` only.

    Contract with the caller: a source that cannot be opened or read raises ``SourceReadError`` (never
    swallowed here: one raised after the first record names the record reached, ``record N: reason``, N counted in
    the whole input), possibly after some calls were yielded. The caller must therefore aggregate each source
    separately, with its own ``stats``, and on ``SourceReadError`` discard that aggregate and those stats, call
    ``deduper.rollback()`` and count ``files_failed``; on success merge them, call ``deduper.commit()`` and count
    ``files_read``. This function does not touch ``files_read``/``files_failed``.

    With ``shard``, only the records that shard owns are read and counted (see :class:`Shard`); the record numbers in
    problem notes stay those of the whole input. After a complete read, ``stats.records_seen`` has grown by the
    number of records in the input (every shard's), which sharded readers compare
    (:func:`auditor.engine.ingest_parallel`).
    """
    name = source.name
    light = light and normalize is normalize_record
    seen = deduper.seen

    try:
        stream = source.open()
    except OSError as exc:
        raise SourceReadError(name, f"cannot open: {exc.strerror or exc}") from exc
    try:
        index = 0
        for record in iter_records(stream, name, shard=shard, light=light):
            kind = type(record)
            if kind is LightRun:  # consecutive records of a Records array, typed where they could be
                batch = read_run(record.records, index, stats, deduper, name, normalize, shard)
                index += len(record.records)
                if batch:
                    yield batch
                continue
            if record is WRONG_CUT:  # not a record: the input must be read again in one process (framing)
                stats.wrong_cuts += 1
                continue
            index += 1
            if kind is LightRecord:  # the typed fields the light path reads, then the whole record if need be
                if shard is not None and not shard.owns(record):
                    continue
                stats.records_read += 1
                item = light_item(record)
                if item is None:
                    record = reparse(record.data)
            else:
                if shard is not None and (record is SKIPPED or not shard.owns(record)):
                    continue
                stats.records_read += 1
                item = single_item(record) if light and kind is dict else None
            if item is not None:
                if seen((item[0], item[1], item[2])):
                    stats.duplicates_dropped += 1
                else:
                    stats.data_events += 1
                    yield [item]
                continue
            call = full_call(record, index, name, stats, seen, normalize)
            if call is not None:
                yield [call]
        stats.records_seen += index
    except SourceReadError as exc:
        if not index:
            raise
        # Where in the input: the record the reader had reached, as well as the byte offset the reason may give.
        raise SourceReadError(name, f"record {index + 1}: {exc.reason}") from exc
    finally:
        try:
            stream.close()
        except OSError:  # pragma: no cover - closing a read-only stream
            log.debug("close_failed", source=name)

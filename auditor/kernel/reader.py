"""Streaming CloudTrail reader: files, directories, stdin and S3 bodies -> raw records -> ``ApiCall`` s.

Input formats (auto-detected after gzip detection by magic bytes, never by file extension):

- a CloudTrail log file ``{"Records": [...]}`` (the S3 delivery format), compact or pretty-printed;
- a CloudTrail digest file (``logFiles`` and no ``Records``): yields nothing;
- an EventBridge "AWS API Call via CloudTrail" event (``detail-type`` + ``detail``): yields ``detail``;
- a JSON array of EventBridge events or of raw CloudTrail records;
- JSON lines (one event, record or log file per line; blank lines ignored), or any concatenation of these;
- a single CloudTrail record object (it has ``eventSource``).

Performance design (measured by ``make bench``, see README "Development"). A 50 MB ``.json.gz`` expands to
~250 MB: it is never materialised as one object tree, and reading it must beat "gunzip + one ``orjson.loads``" of
the whole file.

- A stream that may wait on the network or another process (an S3 body, a pipe) is read and gunzipped by a
  background thread in chunks of a few MB, handed over through a bounded queue: reads and zlib release the GIL, so
  waiting and decompression overlap with parsing. While such a reader runs, the interpreter's GIL switch interval is
  lowered to 0.5 ms (and restored afterwards): with the default 5 ms the reader thread mostly waits for the GIL (see
  ``_SwitchInterval``). A regular file is inflated in line: there is no wait to hide, and the GIL hand-overs cost
  more than the overlap gains (measured on 200,000 records: about 0.2 s more CPU with the thread, and no less wall
  time, with ISA-L or zlib). A sharded reader (one of several processes reading the same input, see ``Shard``)
  inflates in line too: the other shards keep every core busy.
- The parser cuts the ``Records`` array into per-record byte slices and ``orjson.loads`` each one: small, short-lived
  trees are much cheaper than one huge tree (no full GC passes over millions of live objects, cache-friendly).
  Cut points come from ``bytes.find`` of a separator learnt from the data: ``}`` + the comma and whitespace between
  two records + the first key of the next record, i.e. ``},{"eventVersion":`` in files CloudTrail writes. A
  candidate is accepted only if the slice parses: the slice starts at a record start, so if it is valid JSON it is
  exactly that record, while a cut inside a nested object leaves it unbalanced (the separator cannot occur inside a
  string: its ``"`` would be escaped there).
- A record that runs into the next chunk is completed from the head of that chunk without copying the chunk.
- Whatever the fast path cannot place goes to a slow path, one element at a time: when the candidate ran past the
  record (the next record has another first key), orjson's "content after document" error position gives the end;
  when it stopped inside (a nested object starting with the same key), a few further candidates are tried; else an
  incremental structural scanner (bracket matching that skips strings with a possessive regex) finds the end. The
  separator is then relearnt. Searches are bounded by a window sized from the records seen, scans resume where they
  stopped when data arrives, and the buffer grows geometrically, so the total work stays linear in the input.

Memory is bounded by a few chunks plus the largest single record (or, for a top-level object that is not a
``Records``-first log file, the object itself up to ``_MAX_DOCUMENT`` bytes; larger ones are walked member by member).
"""

# mypyc: interpreted
# (the JSON framing: mostly calls into C already (bytes.find, orjson, msgspec), and its tests change its limits)

from __future__ import annotations

import contextlib
import os
import queue
import re
import stat
import sys
import threading
import zlib
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal, overload

import orjson
import structlog

from auditor.exceptions import InputError, MalformedRecordError, SourceReadError
from auditor.kernel.calls import ApiCall, SingleItem
from auditor.kernel.decode import LightRecord, light_record
from auditor.kernel.dedupe import Deduper
from auditor.kernel.normalize import light_item, normalize_record, single_item
from auditor.kernel.runs import RUN_MOST, Malformed, light_run, read_run, reparse
from auditor.kernel.stats import IngestStats

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "Deduper",
    "InputSource",
    "Shard",
    "discover",
    "iter_records",
    "read_calls",
]

log = structlog.get_logger(__name__)


def _inflater() -> tuple[Callable[..., Any], tuple[type[Exception], ...]]:
    """``decompressobj`` and its errors: ISA-L's (about 5x faster than zlib) where installed, else zlib's."""
    try:
        from isal import isal_zlib
    except ImportError:  # pragma: no cover - platforms without an isal wheel
        return zlib.decompressobj, (zlib.error,)
    isal_error: type[Exception] = isal_zlib.error  # type: ignore[assignment]  # typed as an instance in its stub
    return isal_zlib.decompressobj, (zlib.error, isal_error)


_decompressobj, _INFLATE_ERRORS = _inflater()

#: Size of the decompressed chunks handed from the reader thread to the parser. Big chunks mean fewer GIL
#: hand-overs between the two threads (each can cost a switch interval); see the module docstring.
DEFAULT_CHUNK_SIZE: Final = 2 << 20
#: Compressed bytes read per ``stream.read`` call.
_READ_SIZE: Final = 1 << 20
#: Chunks buffered between the reader thread and the parser.
_QUEUE_DEPTH: Final = 2
#: GIL switch interval while reading (see ``_SwitchInterval``).
_SWITCH_INTERVAL: Final = 0.0005
#: A top-level object that is not a ``Records``-first log file is parsed whole only up to this size.
_MAX_DOCUMENT: Final = 16 << 20
#: Largest single record (array element) accepted; CloudTrail's own limit is 256 KB.
_MAX_ELEMENT: Final = 64 << 20
#: How far past an element's start candidate ends are searched for (larger elements use the scanner).
_WINDOW: Final = 1 << 20
#: Longest bare value (number, literal, or non-JSON text) kept while looking for its end; JSON numbers and
#: literals are far shorter (a 5,000-digit integer is 5 KB), so a longer run is not JSON.
_MAX_SCALAR: Final = 1 << 20
#: Failed fast-path candidates tried for one element before the structural scanner takes over.
_MAX_TRIES: Final = 4
#: Longest whitespace run kept in the buffer while skipping whitespace.
_MAX_WS_RUN: Final = 1 << 16

_GZIP_MAGIC: Final = b"\x1f\x8b"
_BOM: Final = b"\xef\xbb\xbf"
_DIR_SKIP: Final = frozenset({"CloudTrail-Digest", "CloudTrail-Insight"})
_DIR_SUFFIXES: Final = (".json", ".json.gz", ".jsonl", ".ndjson", ".gz")

_WS_BYTES: Final = b" \t\r\n"
_WS_RE: Final = re.compile(rb"[ \t\r\n]*")
_RECORDS_HEADER_RE: Final = re.compile(rb'\{[ \t\r\n]*"Records"[ \t\r\n]*:[ \t\r\n]*\[')
#: ``{`` + the first key + ``:`` of a record, used to learn the record separator.
_FIRST_KEY_RE: Final = re.compile(rb'\{[ \t\r\n]*"[^"\\\x00-\x1f]{1,1024}"[ \t\r\n]*:')
#: Everything up to the next bracket, complete strings included (it stops before a string left unterminated at
#: the end of the buffer). Unrolled-loop form with possessive quantifiers: linear, never backtracks.
_SKIP_TO_BRACKET_RE: Final = re.compile(rb'[^"{}\[\]]*+(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"[^"{}\[\]]*+)*+', re.DOTALL)
#: The body of a JSON string up to (not including) its closing quote, escape pairs included.
_STRING_BODY_RE: Final = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)
#: A scalar (number, true, false, null, or garbage) runs until a delimiter.
_SCALAR_RE: Final = re.compile(rb'[^ \t\r\n,\]\}\[\{"]*')

_LBRACE: Final = 0x7B
_RBRACE: Final = 0x7D
_LBRACKET: Final = 0x5B
_RBRACKET: Final = 0x5D
_QUOTE: Final = 0x22
_COMMA: Final = 0x2C
_COLON: Final = 0x3A

_loads: Final = orjson.loads
_JSONDecodeError: Final = orjson.JSONDecodeError


@dataclass(slots=True)
class LightRun:
    """Consecutive records of a ``Records`` array (``iter_records(light=True)`` without a shard), in input order:
    each a :class:`~auditor.kernel.decode.LightRecord` where the typed decoder read it, else the record decoded in
    full (see :func:`auditor.kernel.runs.light_run`)."""

    records: list[Any]


_EVENT_ID_KEY: Final = b'"eventID":"'


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
        if type(eid) is not str:
            return self.index == 0
        return zlib.crc32(eid.encode("utf-8", "surrogatepass")) % self.count == self.index


class _Skipped:
    """Stands for a record another shard owns (yielded so record numbering stays global)."""

    __slots__ = ()


#: Yielded by :func:`iter_records` (with a shard) in place of a record another shard owns.
SKIPPED: Final = _Skipped()


# --------------------------------------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class InputSource:
    """One input: ``name`` is shown in errors (a path, ``<stdin>`` or ``s3://bucket/key``); ``open`` opens it."""

    name: str
    open: Callable[[], BinaryIO]


def _stream_source(name: str, stream: BinaryIO) -> InputSource:
    def opener() -> BinaryIO:
        return stream

    return InputSource(name=name, open=opener)


def _file_source(path: str) -> InputSource:
    def opener() -> BinaryIO:
        return Path(path).open("rb")

    return InputSource(name=path, open=opener)


def _failed_source(name: str, reason: str) -> InputSource:
    """A source that fails when opened: counted in ``files_failed`` with ``reason``, like an unreadable file."""

    def opener() -> BinaryIO:
        raise OSError(reason)

    return InputSource(name=name, open=opener)


def _walk(root: str) -> list[InputSource]:
    """The log files under ``root``, recursively, in sorted order, digest and insight folders excluded.

    A sub-directory that cannot be listed, and a FIFO, device or socket with a log file's name (opening one could
    block for ever or read without end), become failing sources: a warning and a ``files_failed`` each.
    """
    found: list[tuple[tuple[str, ...], InputSource]] = []

    def key(path: str) -> tuple[str, ...]:
        rel = os.path.relpath(path, root)
        return () if rel == os.curdir else tuple(Path(rel).parts)

    def unreadable(err: OSError) -> None:
        where = err.filename if isinstance(err.filename, str) else root
        found.append((key(where), _failed_source(where, f"cannot read directory: {err.strerror or err}")))

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        dirnames[:] = sorted(d for d in dirnames if d not in _DIR_SKIP)
        parts = key(dirpath)
        for fname in filenames:
            if not fname.lower().endswith(_DIR_SUFFIXES):
                continue
            full = str(Path(dirpath, fname))
            try:
                mode = Path(full).stat().st_mode
            except OSError as exc:
                found.append(((*parts, fname), _failed_source(full, f"cannot open: {exc.strerror or exc}")))
                continue
            if stat.S_ISREG(mode):
                found.append(((*parts, fname), _file_source(full)))
            else:
                kind = "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device"
                found.append(((*parts, fname), _failed_source(full, f"not a regular file ({kind}), not read")))
    found.sort(key=lambda item: item[0])
    return [source for _, source in found]


def discover(paths: Sequence[str], stdin: BinaryIO | None = None) -> list[InputSource]:
    """Expand command-line paths into input sources.

    A file is taken as given (any name; gzip is detected from its content). A directory is searched recursively in
    sorted order for ``.json``, ``.json.gz``, ``.jsonl``, ``.ndjson`` and ``.gz`` files, skipping anything below a
    ``CloudTrail-Digest`` or ``CloudTrail-Insight`` folder. ``-`` is stdin (``stdin``, or ``sys.stdin.buffer``),
    listed once however often it is given. Raises ``InputError`` for a path that does not exist. Inside a
    directory, FIFOs, devices, sockets and sub-directories that cannot be listed are sources that fail when read
    (a warning and ``files_failed`` each), never opened.
    """
    sources: list[InputSource] = []
    stdin_added = False
    for path in paths:
        if path == "-":
            if not stdin_added:
                sources.append(_stream_source("<stdin>", stdin if stdin is not None else sys.stdin.buffer))
                stdin_added = True
            continue
        p = Path(path)
        if p.is_dir():
            sources.extend(_walk(path))
        elif p.exists():
            sources.append(_file_source(path))
        else:
            raise InputError(f"{path}: no such file or directory")
    return sources


# --------------------------------------------------------------------------------------------------------------------
# Decompressed chunks from a background thread
# --------------------------------------------------------------------------------------------------------------------


class _ReadFailureError(Exception):
    """Raised in the reader thread with the one-line reason for ``SourceReadError``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Failure:
    """An exception travelling from the reader thread to the consumer."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_END: Final = object()


def _read_error(exc: OSError) -> str:
    return f"read error: {exc.strerror or exc}"


def _member_header(data: bytes, read: Callable[[int], bytes]) -> bytes:
    """``data`` (starting at a gzip member) with at least its first 4 bytes, checked as zlib checks them: method 8
    (deflate) and no reserved flag bits (RFC 1952 2.3.1: "must give an error"; ISA-L ignores them)."""
    try:
        while len(data) < 4:
            more = read(_READ_SIZE)
            if not more:
                break
            data += more
    except OSError as exc:
        raise _ReadFailureError(_read_error(exc)) from exc
    if len(data) >= 4 and (data[2] != 8 or data[3] & 0xE0):
        raise _ReadFailureError("corrupt gzip header (unknown method or reserved flag bits)")
    return data


def _inflate(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Read ``stream``, gunzip it if it starts with the gzip magic, and yield chunks of at most ``chunk_size``.

    Handles multi-member gzip (and zero padding after the last member). Raises ``_ReadFailureError``.
    """
    read = stream.read
    try:
        head = read(_READ_SIZE)
        while 0 < len(head) < 2:
            more = read(_READ_SIZE)
            if not more:
                break
            head += more
    except OSError as exc:
        raise _ReadFailureError(_read_error(exc)) from exc
    if not head:
        return
    if not head.startswith(_GZIP_MAGIC):
        data = head
        while data:
            yield data
            try:
                data = read(chunk_size)
            except OSError as exc:
                raise _ReadFailureError(_read_error(exc)) from exc
        return

    data = _member_header(head, read)
    decomp: Any = _decompressobj(31)  # zlib._Decompress is not exported for annotations
    try:
        while True:
            while data:
                if decomp is None:  # between two gzip members
                    stripped = data.lstrip(b"\0")
                    if not stripped:
                        data = b""
                        break
                    if len(stripped) < 2:
                        more = read(_READ_SIZE)
                        if more:
                            data = stripped + more
                            continue
                    if not stripped.startswith(_GZIP_MAGIC):
                        raise _ReadFailureError("trailing garbage after gzip data")
                    data = _member_header(stripped, read)
                    decomp = _decompressobj(31)
                out = decomp.decompress(data, chunk_size)
                if out:
                    yield out
                if decomp.eof:
                    data = decomp.unused_data
                    decomp = None
                    continue
                # Output still pending inside zlib (the output limit was hit) comes out with the next call; a
                # stream cut at that point is truncated anyway (its trailer is still missing).
                data = decomp.unconsumed_tail
            data = read(_READ_SIZE)
            if not data:
                break
    except _INFLATE_ERRORS as exc:
        raise _ReadFailureError("corrupt or truncated gzip data") from exc
    except OSError as exc:
        raise _ReadFailureError(_read_error(exc)) from exc
    if decomp is not None:
        raise _ReadFailureError("corrupt or truncated gzip data")


class _SwitchInterval:
    """Lowers ``sys.setswitchinterval`` while at least one reader runs, and restores it after the last one.

    The reader thread needs the GIL back after every ``inflate`` call (CPython's zlib inflates into a chain of
    growing output blocks: about five calls per 4 MB chunk) and after every read. While the parser thread runs pure
    Python, each of those waits up to the switch interval (5 ms by default), which starves the reader: measured on
    the 2-core target, a zlib thread overlapped only 15-40% with a busy Python thread at 5 ms, ~75% at 0.5 ms. The
    parser itself only gives up the GIL when the reader asks for it, a handful of times per chunk.
    """

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._lock = threading.Lock()
        self._users = 0
        self._saved = 0.0

    @contextlib.contextmanager
    def lowered(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                self._saved = sys.getswitchinterval()
                if self._interval < self._saved:
                    sys.setswitchinterval(self._interval)
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    sys.setswitchinterval(self._saved)


_switch_interval: Final = _SwitchInterval(_SWITCH_INTERVAL)


def _regular_file(stream: BinaryIO) -> bool:
    """Whether ``stream`` reads a regular file (so a read never waits on the network or on another process)."""
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # no file descriptor (io.UnsupportedOperation is an OSError)
        return False


def _chunks(stream: BinaryIO, name: str, chunk_size: int, threaded: bool = True) -> Generator[bytes, None, None]:
    """The decompressed content of ``stream`` in chunks, produced by a background thread unless not ``threaded``."""
    if not threaded:
        try:
            yield from _inflate(stream, chunk_size)
        except _ReadFailureError as exc:
            raise SourceReadError(name, exc.reason) from exc
        return
    with _switch_interval.lowered():
        yield from _threaded_chunks(stream, name, chunk_size)


def _threaded_chunks(stream: BinaryIO, name: str, chunk_size: int) -> Generator[bytes, None, None]:
    q: queue.Queue[object] = queue.Queue(maxsize=_QUEUE_DEPTH)
    stop = threading.Event()

    def emit(item: object) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
            except queue.Full:
                continue
            return True
        return False

    def run() -> None:
        try:
            for chunk in _inflate(stream, chunk_size):
                if not emit(chunk):
                    return
        except BaseException as exc:  # handed over to the consumer, which re-raises it
            emit(_Failure(exc))
        else:
            emit(_END)

    thread = threading.Thread(target=run, name=f"cloudtrail-reader:{name}", daemon=True)
    thread.start()
    get = q.get
    try:
        while True:
            item = get()
            if type(item) is bytes:
                yield item
            elif item is _END:
                return
            else:
                assert isinstance(item, _Failure)
                exc = item.exc
                if isinstance(exc, _ReadFailureError):
                    raise SourceReadError(name, exc.reason) from exc
                raise exc
    finally:
        stop.set()
        while True:  # unblock a producer waiting on a full queue
            try:
                q.get_nowait()
            except queue.Empty:
                break
        thread.join(timeout=1.0)


# --------------------------------------------------------------------------------------------------------------------
# The streaming parser
# --------------------------------------------------------------------------------------------------------------------


class _TooLargeError(Exception):
    """A retained value grew past its size limit."""


class _UndecodableError(Exception):
    """A value whose extent (up to ``end``) is known could not be decoded (``error`` says why and where)."""

    def __init__(self, error: SourceReadError, end: int) -> None:
        super().__init__(error.reason)
        self.error = error
        self.end = end


def _unwrap(obj: Any, single: bool) -> Iterator[Any]:
    """The records one top-level value (or one element of a top-level array) stands for."""
    if type(obj) is not dict:
        if single:
            raise _NotCloudTrailError
        yield obj
        return
    if "Records" in obj:
        records = obj["Records"]
        if type(records) is not list:
            raise _NotCloudTrailError
        yield from records
    elif "logFiles" in obj:  # a digest file
        return
    elif "detail-type" in obj and "detail" in obj:  # an EventBridge event
        yield obj["detail"]
    elif "eventSource" in obj or not single:  # a record (or, in a stream of values, whatever it is)
        yield obj
    else:
        raise _NotCloudTrailError


def _raw_owned(buf: bytes, start: int, end: int, shard: Shard) -> bool:
    """Whether the record ``buf[start:end]`` may belong to ``shard``, decided without parsing it when that is safe.

    Returns False only when the slice holds exactly one ``"eventID":"`` with a plain (escape-free) value that hashes
    to another shard: then, if the slice is one whole record, it is this eventID's record, exactly as
    :meth:`Shard.owns` decides after parsing. Anything less clear returns True, so the record is parsed and the
    caller decides with :meth:`Shard.owns`. The cheap checks come first: a record whose eventID hashes to this shard
    is parsed without the others.

    The slice is a whole record unless the record separator also occurs inside a record (an adversarial nested
    array of record-like objects). That is not checked here (a brace count costs as much as parsing): the shard
    whose hash the slice's eventID matches parses it, finds the cut wrong and reads the record structurally, so its
    count of records in the input differs from that of the shard that skipped the pieces, and
    :func:`auditor.engine.ingest_parallel` redoes the input in one process.
    """
    p = buf.find(_EVENT_ID_KEY, start, end)
    if p < 0:
        return True
    p += len(_EVENT_ID_KEY)
    q = buf.find(b'"', p, end)
    if q < 0 or zlib.crc32(buf[p:q]) % shard.count == shard.index:
        return True
    return buf.find(b"\\", p, q) >= 0 or buf.find(_EVENT_ID_KEY, q, end) >= 0


class _NotCloudTrailError(Exception):
    """The input is JSON but has none of the supported shapes."""


class _Parser:
    """Incremental JSON reader over a chunk iterator.

    ``buf`` holds the data not consumed yet from ``pos`` on (everything before ``pos`` may be dropped when more
    data arrives); ``base`` is the absolute offset of ``buf[0]`` in the decompressed input. Methods that may pull
    data take and return indices into the *current* ``buf``: after any call that can pull data, re-read ``buf``.
    """

    def __init__(
        self,
        chunks: Iterator[bytes],
        name: str,
        shard: Shard | None = None,
        light: Callable[[bytes, int, int], LightRecord | None] | None = None,
        run: Callable[[bytes, int, int, bytes, int, int], tuple[list[Any], int]] | None = None,
    ) -> None:
        self._chunks = chunks
        self.name = name
        self.shard = shard
        self.light = light
        self.run = run if light is not None and shard is None else None
        self.buf = b""
        self.pos = 0
        self.base = 0
        self.eof = False
        #: A chunk pulled by ``_straddle`` but not used yet: ``_more`` takes it first.
        self._held: bytes | None = None

    # -- buffer management -------------------------------------------------------------------------------------------

    def _more(self) -> int | None:
        """Append more data, dropping ``buf[:pos]``. Returns the shift of all indices, or None at the end of input.

        When the retained tail is large (a huge value being scanned), at least as much new data is gathered
        before the copy, so the copying stays linear overall.
        """
        if self.eof:
            return None
        shift = self.pos
        tail_len = len(self.buf) - shift
        parts: list[bytes] = []
        got = 0
        if self._held is not None:
            parts.append(self._held)
            got = len(self._held)
            self._held = None
        if got < tail_len or not parts:
            for chunk in self._chunks:
                parts.append(chunk)
                got += len(chunk)
                if got >= tail_len:
                    break
            else:
                self.eof = True
        if not parts:
            return None
        new = parts[0] if len(parts) == 1 else b"".join(parts)
        self.buf = self.buf[shift:] + new if tail_len else new
        self.base += shift
        self.pos = 0
        return shift

    def _straddle(self, sep: bytes, window: int) -> tuple[Any, int] | None:
        """Complete the element at ``pos`` (``buf[pos:]`` holds no separator) from the next chunk without copying
        the chunk: on success the chunk becomes ``buf`` and this returns the element and the index of the
        separator in it. Otherwise (end of input, no separator or one across the boundary, a failed parse) the
        chunk is held for ``_more`` and this returns None."""
        if self.eof or self._held is not None or len(self.buf) - self.pos >= window:
            return None
        chunk = next(self._chunks, None)
        if chunk is None:
            self.eof = True
            return None
        tail = self.buf[self.pos :]
        k = chunk.find(sep)
        n = len(sep) - 1
        if k >= 0 and sep not in tail[-n:] + chunk[:n]:
            try:
                obj = _loads(tail + chunk[: k + 1])
            except _JSONDecodeError:
                pass
            else:
                self.base += len(self.buf)
                self.buf = chunk
                self.pos = 0
                return obj, k
        self._held = chunk
        return None

    def _fail(self, at: int, reason: str) -> SourceReadError:
        return SourceReadError(self.name, f"{reason} at byte {self.base + at}")

    def _truncated(self) -> SourceReadError:
        return self._fail(len(self.buf), "invalid JSON: unexpected end of data")

    def _decode_error(self, exc: orjson.JSONDecodeError, start: int) -> SourceReadError:
        msg = exc.msg
        offset = exc.pos
        with contextlib.suppress(TypeError, UnicodeError, AttributeError):
            # orjson reports a character offset into the decoded text
            offset = len(exc.doc[: exc.pos].encode("utf-8"))
        if "UTF-8" in msg or "utf-8" in msg:
            return self._fail(start + offset, "invalid UTF-8")
        short = msg.split(":", 1)[0]
        return self._fail(start + offset, f"invalid JSON ({short})")

    def _skip_ws(self, i: int) -> int:
        """Index of the first non-whitespace byte at or after ``i`` (``len(buf)`` at the end of input)."""
        while True:
            i = _WS_RE.match(self.buf, i).end()  # type: ignore[union-attr]  # always matches
            if i < len(self.buf):
                return i
            if i - self.pos > _MAX_WS_RUN:
                self.pos = i
            shift = self._more()
            if shift is None:
                return i
            i -= shift

    def _ensure(self, i: int, n: int) -> int:
        """Make ``n`` bytes available from ``i`` if the input has them; returns ``i`` (shifted)."""
        while len(self.buf) - i < n:
            shift = self._more()
            if shift is None:
                break
            i -= shift
        return i

    def _loads(self, start: int, end: int) -> Any:
        try:
            return _loads(self.buf[start:end])
        except _JSONDecodeError as exc:
            raise self._decode_error(exc, start) from None

    # -- structural scanning -----------------------------------------------------------------------------------------

    def _string_end(self, i: int, retain: bool, limit: int) -> int:
        """End (after the closing quote) of the string whose opening quote is at ``i`` (see ``_value_end``)."""
        i += 1
        while True:
            buf = self.buf
            i = _STRING_BODY_RE.match(buf, i).end()  # type: ignore[union-attr]  # always matches
            if i < len(buf) and buf[i] == _QUOTE:
                return i + 1
            # The body runs to the end of the buffer (possibly stopping before a lone trailing backslash).
            i = self._resume(i, retain, limit)

    def _resume(self, i: int, retain: bool, limit: int) -> int:
        """Read more data while scanning at ``i``; returns ``i`` in the (possibly shifted) new buffer.

        Without ``retain`` the data before ``i`` is dropped; with it, the value being scanned (from ``self.pos``) may
        not exceed ``limit`` bytes.
        """
        if not retain:
            self.pos = i
        elif i - self.pos > limit:
            raise _TooLargeError
        shift = self._more()
        if shift is None:
            raise self._truncated()
        return i - shift

    def _value_end(self, i: int, *, retain: bool = True, limit: int | None = None) -> int:
        """End of the JSON value starting at ``i`` (non-whitespace). With ``retain`` the value is kept in ``buf``
        (it starts at ``self.pos``) and may not exceed ``limit`` bytes (default ``_MAX_ELEMENT``); without, consumed
        data is dropped."""
        if limit is None:
            limit = _MAX_ELEMENT
        c = self.buf[i]
        if c == _QUOTE:
            return self._string_end(i, retain, limit)
        if c != _LBRACE and c != _LBRACKET:
            while True:
                end = _SCALAR_RE.match(self.buf, i).end()  # type: ignore[union-attr]  # always matches
                if end < len(self.buf) or self.eof:
                    if end == i:
                        raise self._fail(i, "invalid JSON (unexpected character)")
                    return end
                if end - i > _MAX_SCALAR:  # a run of NUL bytes, /dev/zero: fail before buffering it
                    raise self._fail(i, f"invalid JSON (a bare value longer than {_MAX_SCALAR >> 10} KiB)")
                i = self._ensure(i, len(self.buf) - i + 1)
        depth = 0
        skip = _SKIP_TO_BRACKET_RE.match
        while True:
            buf = self.buf
            j = skip(buf, i).end()  # type: ignore[union-attr]  # always matches
            if j < len(buf):
                c = buf[j]
                if c in (_LBRACE, _LBRACKET):
                    depth += 1
                    i = j + 1
                    continue
                if c != _QUOTE:
                    depth -= 1
                    i = j + 1
                    if depth == 0:
                        return i
                    continue
            # The end of the buffer, or a string it cuts: resume there with more data.
            i = self._resume(j, retain, limit)

    def _value(self, i: int, limit: int | None = None) -> tuple[Any, int]:
        """Parse the value starting at ``i`` (which becomes ``self.pos``); returns it and its end."""
        if limit is None:
            limit = _MAX_ELEMENT
        self.pos = i
        end = self._value_end(i, limit=limit)
        if end - self.pos > limit:
            raise _TooLargeError
        try:
            return _loads(self.buf[self.pos : end]), end
        except _JSONDecodeError as exc:
            raise _UndecodableError(self._decode_error(exc, self.pos), end) from None

    # -- arrays --------------------------------------------------------------------------------------------------------

    def _end_from_error(self, exc: orjson.JSONDecodeError, pos: int) -> int:
        """The end of the element at ``pos`` when parsing ``buf[pos:x]`` failed only because more JSON follows it
        (orjson reports where the trailing content starts), else -1."""
        doc = exc.doc
        if not exc.msg.startswith("unexpected content after document") or type(doc) is not str:
            return -1
        p = exc.pos
        end = pos + (p if doc.isascii() else len(doc[:p].encode("utf-8")))
        buf = self.buf
        while end > pos and buf[end - 1] in _WS_BYTES:
            end -= 1
        return end

    def _slow_element(
        self, sep: bytes | None, window: int, failed: orjson.JSONDecodeError | None, sep_from: int
    ) -> tuple[Any, int]:
        """The element starting at ``self.pos`` when the fast path could not cut it.

        If the fast path's candidate ran past the element (``failed`` says where the element ends: the next record
        has another first key), that end is used. If it stopped inside the element (a nested object starting with
        the same key), a few more candidates within ``window`` are tried. Otherwise the structural scanner finds
        the end.
        """
        pos = self.pos
        buf = self.buf
        if failed is not None:
            end = self._end_from_error(failed, pos)
            if end > pos:
                with contextlib.suppress(_JSONDecodeError):
                    return _loads(buf[pos:end]), end
            elif sep is not None:
                limit = min(len(buf), pos + window)
                tries = 1
                idx = buf.find(sep, sep_from, limit)
                while idx >= 0 and tries < _MAX_TRIES:
                    try:
                        return _loads(buf[pos : idx + 1]), idx + 1
                    except _JSONDecodeError as exc:
                        end = self._end_from_error(exc, pos)
                        if end > pos:
                            with contextlib.suppress(_JSONDecodeError):
                                return _loads(buf[pos:end]), end
                            break
                    tries += 1
                    idx = buf.find(sep, idx + 1, limit)
        return self._lenient_value(pos)

    def _lenient_value(self, i: int, limit: int | None = None) -> tuple[Any, int]:
        """Like ``_value``, but a value whose extent is known and that cannot be decoded (or is over ``limit``
        bytes) comes back as :class:`Malformed` with its end: one bad record, not a failed input. Truncation and
        structural errors still fail the input (where the record ends is then unknown)."""
        if limit is None:
            limit = _MAX_ELEMENT
        self.pos = i
        try:
            end = self._value_end(i, limit=limit)
        except _TooLargeError:
            end = limit + 1
        if end - self.pos > limit:
            # Walk the rest without keeping it (bounded memory), from the value's start.
            end = self._value_end(self.pos, retain=False)
            return Malformed(f"record too large (over {limit >> 20} MiB)"), end
        start = self.pos
        try:
            return _loads(self.buf[start:end]), end
        except _JSONDecodeError as exc:
            if self.buf[start] not in (_LBRACE, _LBRACKET):  # a bare token that is not JSON: not a record at all
                raise self._decode_error(exc, start) from None
            return Malformed(self._decode_error(exc, start).reason), end

    def _array(self, unwrap: bool) -> Iterator[Any]:
        """Yield the elements of the array whose ``[`` was just consumed (``self.pos`` is after it), leaving
        ``self.pos`` after the closing ``]``. With ``unwrap`` (top-level arrays), each element goes through
        ``_unwrap`` (EventBridge envelopes -> ``detail``)."""
        i = self._skip_ws(self.pos)
        if i >= len(self.buf):
            raise self._truncated()
        if self.buf[i] == _RBRACKET:
            self.pos = i + 1
            return
        self.pos = i
        sep: bytes | None = None
        adv = 0
        loads = _loads
        decode_error = _JSONDecodeError
        window = _WINDOW
        shard = self.shard
        light = None if unwrap else self.light
        run = None if unwrap else self.run
        failed: orjson.JSONDecodeError | None = None
        failed_at = -1
        while True:
            if sep is not None:
                # Fast path: cut consecutive records at the learnt separator.
                buf = self.buf
                find = buf.find
                pos = self.pos
                try:
                    while True:
                        if run is not None:
                            # Records the typed decoder reads, as many as it can in one call (see
                            # decode.light_run); the first one it does not read takes the paths below.
                            done, pos = run(buf, pos, len(buf), sep, adv, RUN_MOST)
                            if done:
                                yield LightRun(done)
                                if len(done) == RUN_MOST:
                                    continue
                        idx = find(sep, pos, pos + window)
                        if idx >= 0:
                            if shard is not None:
                                if not _raw_owned(buf, pos, idx + 1, shard):
                                    pos = idx + adv
                                    yield SKIPPED
                                    continue
                                typed = None if light is None else light(buf, pos, idx + 1)
                                if typed is not None:
                                    yield typed
                                    pos = idx + adv
                                    continue
                            try:
                                obj = loads(buf[pos : idx + 1])
                            except decode_error as exc:
                                failed = exc
                                failed_at = idx + 1
                                break
                        else:  # the element runs into the next chunk
                            self.pos = pos
                            got = self._straddle(sep, window)
                            if got is None:
                                break
                            obj, idx = got
                            buf = self.buf
                            find = buf.find
                        pos = idx + adv
                        if unwrap and (type(obj) is not dict or "eventSource" not in obj):
                            yield from _unwrap(obj, False)
                        else:
                            yield obj
                finally:
                    self.pos = pos
            start = self.pos
            obj, end = self._slow_element(sep, window, failed, failed_at)
            failed = None
            # Search candidates no further than a few times the size of this element.
            window = min(_WINDOW, max(16 << 10, (end - start) * 8))
            if unwrap:
                yield from _unwrap(obj, False)
            else:
                yield obj
            # After the element: "," or "]", then relearn the separator from the gap and the next element.
            self.pos = end
            gap_abs = self.base + end
            i = self._skip_ws(end)
            buf = self.buf
            if i >= len(buf):
                raise self._truncated()
            c = buf[i]
            if c == _RBRACKET:
                self.pos = i + 1
                return
            if c != _COMMA:
                raise self._fail(i, "invalid JSON (expected ',' or ']')")
            i = self._skip_ws(i + 1)
            buf = self.buf
            if i >= len(buf):
                raise self._truncated()
            sep = None
            gap_start = gap_abs - self.base
            if buf[i] == _LBRACE and gap_start >= 0 and i - gap_start <= 64:
                gap = buf[gap_start:i]
                self.pos = i
                i = self._ensure(i, 1100)
                m = _FIRST_KEY_RE.match(self.buf, i)
                if m is not None:
                    sep = b"}" + gap + m.group()
                    adv = 1 + len(gap)
            self.pos = i

    # -- objects -------------------------------------------------------------------------------------------------------

    def _members(self, i: int, expect_member: bool) -> Iterator[Any]:
        """Walk the members of an object from ``i`` (after ``{`` when ``expect_member``, else after a member
        value), streaming a ``Records`` array and skipping other values without keeping them. Leaves
        ``self.pos`` after the closing ``}``. Raises ``_NotCloudTrailError`` if there is neither ``Records`` nor
        ``logFiles``."""
        saw = not expect_member  # called after a Records array
        first = expect_member
        while True:
            i = self._skip_ws(i)
            buf = self.buf
            if i >= len(buf):
                raise self._truncated()
            c = buf[i]
            if expect_member:
                if c == _RBRACE and first:
                    self.pos = i + 1
                    break
                if c != _QUOTE:
                    raise self._fail(i, "invalid JSON (expected a key)")
                self.pos = i
                end = self._string_end(i, True, _MAX_ELEMENT)
                key = self._loads(self.pos, end)
                i = self._skip_ws(end)
                if i >= len(self.buf) or self.buf[i] != _COLON:
                    raise self._fail(i, "invalid JSON (expected ':')")
                i = self._skip_ws(i + 1)
                if i >= len(self.buf):
                    raise self._truncated()
                if key == "Records" and self.buf[i] == _LBRACKET:
                    self.pos = i + 1
                    yield from self._array(False)
                    i = self.pos
                    saw = True
                else:
                    saw = saw or key == "logFiles"
                    self.pos = i
                    i = self._value_end(i, retain=False)
                self.pos = i
                expect_member = False
                first = False
            elif c == _COMMA:
                i += 1
                expect_member = True
            elif c == _RBRACE:
                self.pos = i + 1
                break
            else:
                raise self._fail(i, "invalid JSON (expected ',' or '}')")
        if not saw:
            raise _NotCloudTrailError

    def _object(self, first_value: bool) -> Iterator[Any]:
        """A top-level object at ``self.pos``."""
        start = self._ensure(self.pos, 256)
        self.pos = start
        m = _RECORDS_HEADER_RE.match(self.buf, start)
        if m is not None:  # the usual log file: stream the Records array
            self.pos = m.end()
            yield from self._array(False)
            yield from self._members(self.pos, False)
            return
        obj: Any = None
        end = -1
        # JSON lines: a line that parses on its own is one whole value.
        nl_from = start
        while True:
            buf = self.buf
            nl = buf.find(b"\n", nl_from)
            if nl >= 0:
                try:
                    obj = _loads(buf[self.pos : nl])
                    end = nl
                except _JSONDecodeError:
                    pass
                break
            nl_from = len(buf)
            if len(buf) - self.pos > _MAX_DOCUMENT:
                break
            shift = self._more()
            if shift is None:
                break
            nl_from -= shift
        if end < 0:
            try:
                obj, end = self._value(self.pos, limit=_MAX_DOCUMENT)
            except _TooLargeError:
                # Too big to be an event or a record: walk it, streaming a Records array that is not first.
                yield from self._members(self.pos + 1, True)
                return
            except _UndecodableError as exc:
                # One object the parser cannot represent: a bad record, unless it is the whole input.
                self.pos = exc.end
                if first_value and self._skip_ws(self.pos) >= len(self.buf):
                    raise exc.error from None
                yield Malformed(exc.error.reason)
                return
        self.pos = end
        single = first_value and self._skip_ws(self.pos) >= len(self.buf)
        yield from _unwrap(obj, single)

    def records(self) -> Iterator[Any]:
        """Every record of the input (see the module docstring for the formats)."""
        i = self._ensure(0, 3)
        if self.buf.startswith(_BOM, i):
            i += 3
        count = 0
        try:
            while True:
                i = self._skip_ws(i)
                if i >= len(self.buf):
                    break
                self.pos = i
                c = self.buf[i]
                if c == _LBRACE:
                    yield from self._object(count == 0)
                elif c == _LBRACKET:
                    self.pos = i + 1
                    yield from self._array(True)
                else:
                    # A scalar: the whole input if it is alone ("not a CloudTrail log file"), else one bad line
                    # of JSON lines. One that does not even decode (text that is not JSON) fails the input.
                    try:
                        obj, end = self._value(i)
                    except _UndecodableError as exc:
                        raise exc.error from None
                    self.pos = end
                    single = count == 0 and self._skip_ws(self.pos) >= len(self.buf)
                    yield from _unwrap(obj, single)
                count += 1
                i = self.pos
        except _NotCloudTrailError:
            raise SourceReadError(self.name, "not a CloudTrail log file: no Records array") from None
        except _TooLargeError:
            raise self._fail(self.pos, "JSON value too large") from None
        if count == 0:
            raise SourceReadError(self.name, "empty input: no JSON data")


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
    the module docstring). Records are normally dicts, but an element of ``Records`` (or of a top-level array) that is
    not a JSON object is yielded as it is, for the caller to count as malformed.

    A ``stream`` that is not a regular file is read by a background thread (without ``shard``); while the generator is
    alive the GIL switch interval is then lowered (see the module docstring), and restored when the generator
    finishes or is closed.

    Raises ``SourceReadError(name, reason)`` when the input cannot be read: corrupt or truncated gzip data, invalid
    JSON or UTF-8 (the reason gives the byte offset in the decompressed data), a JSON document of another shape, or
    a read error. Records before the failure point may already have been yielded: the caller must discard them.

    With ``shard``, records that clearly belong to another shard are not parsed: :data:`SKIPPED` is yielded in
    their place. Other records are yielded as usual, whoever owns them: the caller checks :meth:`Shard.owns`.

    With ``light``, the records of a ``Records`` array come through the typed decoder
    (:func:`auditor.kernel.decode.light_record`: the fields of the commonest calls, typed, with the record's bytes):
    without ``shard``, consecutive records together as one :class:`LightRun` (a typed record where it read one, else
    the record decoded in full); with ``shard``, each typed record on its own. Only :func:`read_calls` asks for
    them.
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


# --------------------------------------------------------------------------------------------------------------------
# Records -> ApiCalls
# --------------------------------------------------------------------------------------------------------------------


@overload
def read_calls(
    source: InputSource,
    stats: IngestStats,
    deduper: Deduper,
    normalize: Callable[[Mapping[str, Any]], ApiCall | None] = ...,
    shard: Shard | None = ...,
    *,
    light: Literal[False] = ...,
) -> Iterator[ApiCall]: ...


@overload
def read_calls(
    source: InputSource,
    stats: IngestStats,
    deduper: Deduper,
    normalize: Callable[[Mapping[str, Any]], ApiCall | None] = ...,
    shard: Shard | None = ...,
    *,
    light: Literal[True],
    runs: Literal[False] = ...,
) -> Iterator[ApiCall | SingleItem]: ...


@overload
def read_calls(
    source: InputSource,
    stats: IngestStats,
    deduper: Deduper,
    normalize: Callable[[Mapping[str, Any]], ApiCall | None] = ...,
    shard: Shard | None = ...,
    *,
    light: Literal[True],
    runs: Literal[True],
) -> Iterator[ApiCall | SingleItem | list[SingleItem]]: ...


def read_calls(
    source: InputSource,
    stats: IngestStats,
    deduper: Deduper,
    normalize: Callable[[Mapping[str, Any]], ApiCall | None] = normalize_record,
    shard: Shard | None = None,
    *,
    light: bool = False,
    runs: bool = False,
) -> Iterator[ApiCall] | Iterator[ApiCall | SingleItem] | Iterator[ApiCall | SingleItem | list[SingleItem]]:
    """Yield the DynamoDB data-plane calls of one source, counting into ``stats``.

    With ``light``, the commonest calls (successful single-item calls, see
    :func:`auditor.kernel.normalize.single_item`) come as ``SingleItem`` tuples instead of ``ApiCall`` objects:
    the same call, read in a fraction of the time, for a consumer that only aggregates
    (:meth:`auditor.kernel.aggregates.window.AggregateSet.add_item`). Only with the default ``normalize``: another one
    sees every record. With ``runs`` too, consecutive ``SingleItem`` calls may come together in a list (in input
    order, like everything else), which saves a generator step per call on the ingest hot path.

    Counts ``records_read`` for every record, ``records_skipped`` (with a ``stats.note``) for malformed ones (not
    a JSON object, or ``MalformedRecordError`` from ``normalize``), ``duplicates_dropped`` for DynamoDB data events
    whose ``eventID`` the ``deduper`` has seen, and ``data_events`` for each call yielded. Records that are not
    DynamoDB data events (``normalize`` returns None) count in ``records_read`` only.

    Contract with the caller: a source that cannot be opened or read raises ``SourceReadError`` (it is never
    caught here), possibly after some calls were yielded. The caller must therefore aggregate each source
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

    def full(record: Any, index: int) -> ApiCall | None:
        """The call of one record decoded in full (None: not a data-plane call, a duplicate or a bad record)."""
        if type(record) is not dict:
            stats.records_skipped += 1
            why = record.reason if type(record) is Malformed else "not a JSON object"
            stats.note(f"{name}: record {index}: {why}")
            return None
        try:
            call = normalize(record)
        except MalformedRecordError as exc:
            stats.records_skipped += 1
            stats.note(f"{name}: record {index}: {exc}")
            return None
        except (ValueError, TypeError, OverflowError, RecursionError, KeyError, AttributeError) as exc:
            # A value the normaliser cannot handle (a date at the edge of the range, an integer beyond what
            # a key can hold, nesting too deep): one bad record. Only the type is noted, not the value.
            stats.records_skipped += 1
            stats.note(f"{name}: record {index}: unusable value ({type(exc).__name__})")
            return None
        if call is None:
            return None
        # One event is (eventID, eventName, eventTime): CloudTrail repeats all three when it delivers an event
        # twice, while records that only share an id (as the AWS documentation samples do) are distinct.
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

    try:
        stream = source.open()
    except OSError as exc:
        raise SourceReadError(name, f"cannot open: {exc.strerror or exc}") from exc
    try:
        index = 0
        for record in iter_records(stream, name, shard=shard, light=light):
            kind = type(record)
            if kind is LightRun:  # consecutive records of a Records array (no shard), typed where they could be
                yield from read_run(record.records, index, stats, seen, full, runs)
                index += len(record.records)
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
                    yield item
                continue
            call = full(record, index)
            if call is not None:
                yield call
        stats.records_seen += index
    finally:
        try:
            stream.close()
        except OSError:  # pragma: no cover - closing a read-only stream
            log.debug("close_failed", source=name)

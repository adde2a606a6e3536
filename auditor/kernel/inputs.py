"""CloudTrail input: where the bytes come from and how they are inflated.

Input sources (files, directories searched for log files, stdin, S3 bodies) and the decompressed chunks of one of
them: gunzipped in line, or by a background thread for a stream that may wait on the network or another process (see
``docs/kernel.md``). :mod:`auditor.kernel.framing` cuts the chunks into records.
"""

# mypyc: interpreted
# (its tests count the reader threads by patching _threaded_chunks; reads and zlib run in C already)

from __future__ import annotations

import contextlib
import os
import queue
import stat
import sys
import threading
import zlib
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

from auditor.exceptions import InputError, SourceReadError

__all__ = ["DEFAULT_CHUNK_SIZE", "InputSource", "discover", "source_order"]


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
#: hand-overs between the two threads (each can cost a switch interval); see ``docs/kernel.md``.
DEFAULT_CHUNK_SIZE: Final = 2 << 20
#: Compressed bytes read per ``stream.read`` call.
_READ_SIZE: Final = 1 << 20
#: Chunks buffered between the reader thread and the parser.
_QUEUE_DEPTH: Final = 2
#: GIL switch interval while reading (see ``_SwitchInterval``).
_SWITCH_INTERVAL: Final = 0.0005

_GZIP_MAGIC: Final = b"\x1f\x8b"
_DIR_SKIP: Final = frozenset({"CloudTrail-Digest", "CloudTrail-Insight"})
_DIR_SUFFIXES: Final = (".json", ".json.gz", ".jsonl", ".ndjson", ".gz")


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
    (a warning and ``files_failed`` each), never opened. Sources come in :func:`source_order`.
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
    return sorted(sources, key=lambda source: source_order(source.name))


def source_order(name: str) -> tuple[str, str]:
    """The order in which the aggregates of several sources merge, the same wherever they merge (here, and the
    service's contributions of one window, one per CloudTrail object): by file name (a CloudTrail object's starts
    with its account, Region and delivery time), then by the whole name. The heavy-hitter sketches merge in that
    order, so the same files give the same counts in ``analyze-trail`` and in the service."""
    return name.replace("\\", "/").rsplit("/", 1)[-1], name


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


def _read_at_least(data: bytes, read: Callable[[int], bytes], size: int) -> bytes:
    """``data`` and what further reads give until it holds ``size`` bytes (fewer at the end of the input)."""
    try:
        while len(data) < size:
            more = read(_READ_SIZE)
            if not more:
                break
            data += more
    except OSError as exc:
        raise _ReadFailureError(_read_error(exc)) from exc
    return data


def _member_header(data: bytes, read: Callable[[int], bytes]) -> bytes:
    """``data`` (starting at a gzip member) with at least its first 4 bytes, checked as zlib checks them: method 8
    (deflate) and no reserved flag bits (RFC 1952 2.3.1: "must give an error"; ISA-L ignores them)."""
    data = _read_at_least(data, read, 4)
    if len(data) >= 4 and (data[2] != 8 or data[3] & 0xE0):
        raise _ReadFailureError("corrupt gzip header (unknown method or reserved flag bits)")
    return data


def _inflate(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Read ``stream``, gunzip it if it starts with the gzip magic, and yield chunks of at most ``chunk_size``.

    Handles multi-member gzip (and zero padding after the last member). Raises ``_ReadFailureError``.
    """
    read = stream.read
    head = _read_at_least(b"", read, 2)
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

"""Incremental JSON framing: the decompressed chunks of one input -> its raw CloudTrail records, with bounded memory.

The formats, auto-detected: a CloudTrail log file ``{"Records": [...]}``, a digest file (no records), an EventBridge
"AWS API Call via CloudTrail" event (its ``detail``), a JSON array of events or records, JSON lines (or any
concatenation of these), a single record. The formats and how records are cut: ``docs/kernel.md``.
"""

# mypyc: interpreted
# (mostly calls into C already (bytes.find, orjson, msgspec), and its tests change its limits)

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import orjson

from auditor.exceptions import SourceReadError
from auditor.kernel.decode import LightRecord
from auditor.kernel.runs import RUN_MOST, Malformed
from auditor.kernel.shards import SKIPPED, Shard, raw_owned, skippable

__all__ = ["SKIPPED", "LightRun", "Shard"]

#: A top-level object that is not a ``Records``-first log file nor one line of JSON lines is parsed whole only up to
#: this size (larger ones are walked member by member).
_MAX_DOCUMENT: Final = 16 << 20
#: Largest single record (array element, or line of JSON lines) accepted; CloudTrail's own limit is 256 KB.
_MAX_ELEMENT: Final = 64 << 20
#: How far past an element's start candidate ends are searched for (larger elements use the scanner).
_WINDOW: Final = 1 << 20
#: Longest bare value (number, literal, or non-JSON text) kept while looking for its end; JSON numbers and
#: literals are far shorter (a 5,000-digit integer is 5 KB), so a longer run is not JSON.
_MAX_SCALAR: Final = 1 << 20
#: Failed fast-path candidates tried for one element before the structural scanner takes over.
_MAX_TRIES: Final = 4
#: How far the first two lines are looked at to tell JSON lines whose first line is bad (``_bad_first_line``).
_FIRST_LINES: Final = 2 << 20
#: Longest whitespace run kept in the buffer while skipping whitespace.
_MAX_WS_RUN: Final = 1 << 16

_BOM: Final = b"\xef\xbb\xbf"
#: The top-level keys that give an object too large to parse whole its shape (see ``_unwrap``).
_SHAPE_KEYS: Final = frozenset(("Records", "eventSource", "detail-type", "detail"))

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
    """Consecutive records of a ``Records`` array (``iter_records(light=True)``), in input order: each a
    :class:`~auditor.kernel.decode.LightRecord` where the typed decoder read it, else the record decoded in full, or
    :data:`SKIPPED` for a record another shard clearly owns (see :func:`auditor.kernel.runs.light_run`)."""

    records: list[Any]


class _WrongCut:
    """Stands for a cut that held more than one record where other shards may have skipped it as one."""

    __slots__ = ()


#: Yielded by :func:`iter_records` (with a shard, not a record) when the record separator cut a slice that another
#: shard may have skipped as one record (:func:`auditor.kernel.shards.raw_owned`) but that does not parse as one: the
#: records it hides may be nobody's, so the caller must read the input again in one process.
WRONG_CUT: Final = _WrongCut()


# --------------------------------------------------------------------------------------------------------------------
# The streaming parser
# --------------------------------------------------------------------------------------------------------------------


class _TooLargeError(Exception):
    """A retained value grew past its size limit."""


class _ParseError(SourceReadError):
    """The parser's own failure (invalid JSON at a known place), as opposed to one of the input (corrupt gzip data, a
    read error): inside an array the reader resynchronises at the next record instead (``_Parser._resync``)."""


#: The reason of a skipped record that the end of the input cut short.
TRUNCATED: Final = "the file ends inside a record (truncated)"
#: The first key of a record CloudTrail writes (its records start ``{"eventVersion":``): where the reader resumes
#: after a stretch that is not one JSON value, until it has learnt the first key from the data.
_RECORD_KEY: Final = b"eventVersion"


def _record_start(key: bytes) -> re.Pattern[bytes]:
    """``,`` + ``{`` + the first key ``key`` + ``:``: where a record of a ``Records`` array starts. It is never inside
    a string (its ``"`` would be escaped there), so outside a broken stretch it only starts an array element."""
    return re.compile(rb',[ \t\r\n]*+(?=\{[ \t\r\n]*"' + re.escape(key) + rb'"[ \t\r\n]*:)')


_RECORD_START: Final = _record_start(_RECORD_KEY)


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
        run: Callable[[bytes, int, int, bytes, int, int, bool, Shard | None], tuple[list[Any], int]] | None = None,
    ) -> None:
        self._chunks = chunks
        self.name = name
        self.shard = shard
        self.light = light
        self.run = run if light is not None else None
        self.buf = b""
        self.pos = 0
        self.base = 0
        self.eof = False
        #: A chunk pulled by ``_straddle`` but not used yet: ``_more`` takes it first.
        self._held: bytes | None = None
        #: Whether a line of JSON lines was read whole: then a line that is not one JSON value is one bad record.
        self.lines = False
        #: Whether the input ended inside a record or an array (nothing more to read).
        self.truncated = False
        #: The next record start found (``_bounded_element``, an absolute offset; -1: none) and how far the input
        #: was searched for one: each byte is searched once.
        self._next_start = -1
        self._searched = 0
        #: Where the scan of a retained value stopped when it grew past its limit (``_resume``).
        self._scanned = 0

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
        return _ParseError(self.name, f"{reason} at byte {self.base + at}")

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

    def _next_value(self, i: int) -> int:
        """Index of the first non-whitespace byte at or after ``i``, where the input must go on."""
        i = self._skip_ws(i)
        if i >= len(self.buf):
            raise self._truncated()
        return i

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
            self._scanned = i
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
        bytes) comes back as :class:`Malformed` with its end: one bad record, not a failed input; so does a value
        over ``limit`` that never closes before the next record start (it ends there). Truncation and structural
        errors raise (``_ParseError``: the array resynchronises at the next record start)."""
        if limit is None:
            limit = _MAX_ELEMENT
        at = self.base + i
        self.pos = i
        try:
            end = self._value_end(i, limit=limit)
        except _TooLargeError:
            end = self._scanned
        if end - self.pos > limit:
            m = _RECORD_START.search(self.buf, self.pos + 1, end)
            if m is not None:  # not a record too large but a value that never closes: it ends at the next record
                return Malformed(f"invalid JSON (not closed before the next record) at byte {at}"), m.start()
            # Walk the rest without keeping it (bounded memory), from the value's start.
            end = self._value_end(self.pos, retain=False)
            return Malformed(f"record too large (over {limit >> 20} MiB)"), end
        start = self.pos
        try:
            return _loads(self.buf[start:end]), end
        except _JSONDecodeError as exc:
            # A record the typed decoder reads is read as it is in the middle of the array (rule 3 of docs/kernel.md:
            # a number beyond a double in a part nothing reads), whether it comes first, last or after a broken one.
            typed = self.light(self.buf, start, end) if self.light is not None else None
            if typed is not None:
                return typed, end
            if self.buf[start] not in (_LBRACE, _LBRACKET):  # a bare token that is not JSON: not a record at all
                raise self._decode_error(exc, start) from None
            return Malformed(self._decode_error(exc, start).reason), end

    def _resync(
        self, start: int, error: SourceReadError, pattern: re.Pattern[bytes], first: int, inside: bool = True
    ) -> tuple[Any, int]:
        """After a stretch of an array from ``start`` (an absolute offset) that is not one JSON value: one bad record
        (:class:`Malformed`, with ``error``'s reason) and the index of the ``,`` before the next record's start
        (``pattern``), where reading resumes. The search only moves forward and keeps a few bytes of the stretch.

        With no record after it, a stretch ``inside`` an element that the end of the input cut short (not the
        array's ``first`` element) is one truncated record and the end of the input (``self.truncated``); anything
        else (nothing of the array readable, text after an element, an array never closed) fails the input."""
        i = max(start - self.base, 0)
        search = pattern.search
        truncation = error.reason.startswith("invalid JSON: unexpected end of data")
        while True:
            m = search(self.buf, i)
            if m is not None:
                reason = error.reason
                if truncation:  # the scan ran on to the end of the input
                    reason = f"invalid JSON: cut short by the next record (at byte {self.base + m.start()})"
                return Malformed(reason), m.start()
            i = max(i, len(self.buf) - 1100)  # a record start cut by the end of the buffer is found again
            self.pos = i
            shift = self._more()
            if shift is None:
                break
            i -= shift
        if start <= first or not truncation or not inside:
            raise error
        self.truncated = True
        self.pos = len(self.buf)
        return Malformed(TRUNCATED), self.pos

    def _bounded_element(self, pattern: re.Pattern[bytes]) -> tuple[Any, int] | None:
        """The element at ``self.pos`` read as the stretch up to the next record's start (``pattern``): its value, or
        one bad record if that stretch is not one JSON value. None where the usual path decides: a value that ends
        before that start, no start within the largest record. Used once the array held a broken stretch, so that a
        stretch that never closes is not scanned to the end of the input again."""
        start = self.pos
        base = self.base
        if self._next_start <= base + start:
            i = max(start, self._searched - base)  # a stretch may be empty (",,"): the start may be at ``start``
            while True:
                m = pattern.search(self.buf, i)
                if m is not None:
                    self._next_start = self._searched = self.base + m.start()
                    break
                i = max(i, len(self.buf) - 1100)  # a record start cut by the end of the buffer is found again
                self._searched = self.base + i
                if i - self.pos > _MAX_ELEMENT:
                    return None
                shift = self._more()
                if shift is None:
                    return None
                i -= shift
        start = self.pos
        end = self._next_start - self.base
        try:
            return _loads(self.buf[start:end]), end
        except _JSONDecodeError as exc:
            if exc.msg.startswith("unexpected content after document"):
                return None
            return Malformed(self._decode_error(exc, start).reason), end

    def _array(self, unwrap: bool) -> Iterator[Any]:
        """Yield the elements of the array whose ``[`` was just consumed (``self.pos`` is after it), leaving
        ``self.pos`` after the closing ``]``. With ``unwrap`` (top-level arrays), each element goes through
        ``_unwrap`` (EventBridge envelopes -> ``detail``)."""
        i = self._next_value(self.pos)
        if self.buf[i] == _RBRACKET:
            self.pos = i + 1
            return
        self.pos = i
        first = self.base + i
        pattern = _RECORD_START
        bounded = False  # whether a broken stretch was found: see _bounded_element
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
        # Whether every byte of ``ascii_of`` (the buffer last checked) is ASCII: one check per buffer, not per record.
        ascii_of: bytes | None = None
        ascii = False
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
                            # runs.light_run); the first one it does not read takes the paths below.
                            if buf is not ascii_of:
                                ascii_of = buf
                                ascii = buf.isascii()
                            done, pos = run(buf, pos, len(buf), sep, adv, RUN_MOST, ascii, shard)
                            if done:
                                yield LightRun(done)
                                if len(done) == RUN_MOST:
                                    continue
                        idx = find(sep, pos, pos + window)
                        if idx >= 0:
                            if shard is not None:
                                if not raw_owned(buf, pos, idx + 1, shard):
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
                                if shard is not None and skippable(buf, pos, idx + 1):
                                    yield WRONG_CUT
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
            at = self.pos
            start = self.base + at
            got = self._bounded_element(pattern) if bounded else None
            try:
                obj, end = self._slow_element(sep, window, failed, failed_at) if got is None else got
            except _ParseError as exc:  # not one JSON value: one bad record, up to the next record's start
                obj, end = self._resync(start, exc, pattern, first)
                bounded = True
            else:
                if type(obj) is Malformed and got is None and start >= self.base:
                    # A stretch holding a record start is cut there; one the input ends after was cut short.
                    m = pattern.search(self.buf, start - self.base + 1, end + 1)
                    if m is not None:
                        end = m.start()
                        bounded = True
                    elif start > first:
                        self.pos = end
                        end = self._skip_ws(end)
                        if end >= len(self.buf):
                            obj = Malformed(TRUNCATED)
                            self.truncated = True
            failed = None
            # Search candidates no further than a few times the size of this element.
            window = min(_WINDOW, max(16 << 10, (end - at) * 8))
            if unwrap:
                yield from _unwrap(obj, False)
            else:
                yield obj
            if self.truncated:
                return
            # After the element: "," or "]" (else a bad stretch up to the next record's start), then relearn the
            # separator from the gap and the next element.
            while True:
                self.pos = end
                gap_abs = self.base + end
                i = self._skip_ws(end)
                if i >= len(self.buf):
                    break
                c = self.buf[i]
                if c == _RBRACKET:
                    self.pos = i + 1
                    return
                if c == _COMMA:
                    i = self._skip_ws(i + 1)
                    break
                bad, end = self._resync(
                    self.base + i, self._fail(i, "invalid JSON (expected ',' or ']')"), pattern, first, False
                )
                yield bad
            if i >= len(self.buf):  # the input ends inside the array
                raise self._truncated()
            buf = self.buf
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

    def _members(self, i: int, expect_member: bool, shape: set[str] | None = None) -> Iterator[Any]:
        """Walk the members of an object from ``i`` (after ``{`` when ``expect_member``, else after a member
        value), streaming a ``Records`` array and skipping other values without keeping them. Leaves
        ``self.pos`` after the closing ``}``. Raises ``_NotCloudTrailError`` if there is neither ``Records`` nor
        ``logFiles``. ``shape`` collects the keys of ``_SHAPE_KEYS`` the object has."""
        saw = not expect_member  # called after a Records array
        first = expect_member
        while True:
            i = self._next_value(i)
            c = self.buf[i]
            if expect_member:
                if c == _RBRACE and first:
                    self.pos = i + 1
                    break
                if c != _QUOTE:
                    raise self._fail(i, "invalid JSON (expected a key)")
                self.pos = i
                end = self._string_end(i, True, _MAX_ELEMENT)
                key = self._loads(self.pos, end)
                if shape is not None and key in _SHAPE_KEYS:
                    shape.add(key)
                i = self._skip_ws(end)
                if i >= len(self.buf) or self.buf[i] != _COLON:
                    raise self._fail(i, "invalid JSON (expected ':')")
                i = self._next_value(i + 1)
                if key == "Records" and self.buf[i] == _LBRACKET:
                    self.pos = i + 1
                    yield from self._array(False)
                    if self.truncated:
                        return
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

    def _bad_line(self, exc: orjson.JSONDecodeError, nl: int) -> Malformed:
        """A line of JSON lines (from ``self.pos`` to ``nl``) that is not one JSON value: one bad record; reading
        resumes at the next line."""
        if nl >= len(self.buf) and self.eof and exc.msg.startswith("unexpected end of data"):
            reason = TRUNCATED
        else:
            reason = self._decode_error(exc, self.pos).reason
        self.pos = min(nl + 1, len(self.buf))
        return Malformed(reason)

    def _line(self, i: int) -> Any:
        """The value of the line of JSON lines at ``i`` (or one bad record: :meth:`_bad_line`), with ``self.pos``
        after it; None if the line is longer than the largest record, or holds several values."""
        self.pos = i
        nl_from = i
        while True:
            nl = self.buf.find(b"\n", nl_from)
            if nl >= 0 or self.eof:
                break
            nl_from = len(self.buf)
            if nl_from - self.pos > _MAX_ELEMENT:
                return None
            shift = self._more()
            if shift is None:
                break
            nl_from -= shift
        if nl < 0:
            nl = len(self.buf)
        try:
            obj = _loads(self.buf[self.pos : nl])
        except _JSONDecodeError as exc:
            if exc.msg.startswith("unexpected content after document"):
                return None
            return self._bad_line(exc, nl)
        self.pos = nl
        return obj

    def _bad_first_line(self) -> Malformed | None:
        """The first line (at ``self.pos``) when it is not one JSON value while the next line is an object: JSON lines
        whose first record is bad, one skipped record (``self.pos`` after it). Else None, ``self.pos`` where it was
        (a log file, a pretty-printed document, a first line that reads)."""
        self.pos = self._ensure(self.pos, 256)
        if _RECORDS_HEADER_RE.match(self.buf, self.pos):
            return None
        while True:  # the first two lines, up to a few MB
            nl1 = self.buf.find(b"\n", self.pos)
            nl2 = -1 if nl1 < 0 else self.buf.find(b"\n", nl1 + 1)
            if nl2 >= 0 or self.eof or len(self.buf) - self.pos > _FIRST_LINES or self._more() is None:
                break
        if nl1 < 0:
            return None
        buf = self.buf
        try:
            _loads(buf[self.pos : nl1])
        except _JSONDecodeError as exc:
            if exc.msg.startswith("unexpected content after document"):
                return None
            error = exc
        else:
            return None
        try:
            after = _loads(buf[nl1 + 1 : nl2 if nl2 >= 0 else len(buf)])
        except _JSONDecodeError:
            return None
        if type(after) is not dict:
            return None
        self.lines = True
        return self._bad_line(error, nl1)

    def _object(self, first_value: bool) -> Iterator[Any]:
        """A top-level object at ``self.pos``."""
        start = self._ensure(self.pos, 256)
        self.pos = start
        m = _RECORDS_HEADER_RE.match(self.buf, start)
        if m is not None:  # the usual log file: stream the Records array
            self.pos = m.end()
            yield from self._array(False)
            if not self.truncated:
                yield from self._members(self.pos, False)
            return
        obj: Any = None
        end = -1
        # JSON lines: a line (up to the largest record) that parses on its own is one whole value.
        limit = _MAX_ELEMENT
        long_line = False
        nl_from = start
        while True:
            buf = self.buf
            nl = buf.find(b"\n", nl_from)
            if nl < 0 and self.eof and self.lines:
                nl = len(buf)  # the last line of JSON lines, without its newline
            if nl >= 0:
                long_line = nl - self.pos > limit
                if not long_line:
                    try:
                        obj = _loads(buf[self.pos : nl])
                        end = nl
                    except _JSONDecodeError as exc:
                        if self.lines and not exc.msg.startswith("unexpected content after document"):
                            yield self._bad_line(exc, nl)
                            return
                    else:
                        self.lines = True
                break
            nl_from = len(buf)
            if len(buf) - self.pos > limit:
                long_line = True
                break
            shift = self._more()
            if shift is None:
                break
            nl_from -= shift
        if end < 0:
            try:
                obj, end = self._value(self.pos, limit=min(_MAX_DOCUMENT, limit))
            except _TooLargeError:
                # Too big to parse whole: walk it, streaming a Records array that is not first.
                yield from self._large_object(first_value, limit if long_line else min(_MAX_DOCUMENT, limit))
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

    def _large_object(self, first_value: bool, limit: int) -> Iterator[Any]:
        """A top-level object at ``self.pos`` over ``limit`` bytes (the size it could be read whole up to), walked
        without keeping it.

        A log file whose ``Records`` array is not first is streamed. An object with neither ``Records`` nor
        ``logFiles`` is one record too large to read (one :class:`Malformed` record, like an oversized element of a
        ``Records`` array: the values around it are read), unless it is the whole input and has no record or event
        shape (then the input is not a CloudTrail log file, as for a small object).
        """
        shape: set[str] = set()
        try:
            yield from self._members(self.pos + 1, True, shape)
        except _NotCloudTrailError:
            # Nothing was yielded: a Records array, the only thing streamed, would have made the walk succeed.
            single = first_value and self._skip_ws(self.pos) >= len(self.buf)
            if "Records" in shape or (
                single and "eventSource" not in shape and not ("detail-type" in shape and "detail" in shape)
            ):
                raise
            yield Malformed(f"record too large (over {limit >> 20} MiB)")

    def records(self) -> Iterator[Any]:
        """Every record of the input (in any of the formats the module docstring names)."""
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
                if count == 0 and c != _LBRACKET and (bad := self._bad_first_line()) is not None:
                    yield bad
                elif c == _LBRACE:
                    yield from self._object(count == 0)
                elif c == _LBRACKET:
                    self.pos = i + 1
                    yield from self._array(True)
                elif self.lines and (line := self._line(i)) is not None:
                    # JSON lines: a line is a record, one that is not one JSON value a bad one.
                    yield from _unwrap(line, False)
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

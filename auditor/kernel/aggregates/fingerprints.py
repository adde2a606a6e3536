"""Event fingerprints: which events an ingest counted, per window, so that two inputs can be checked for overlap.

A fingerprint is a 64-bit hash of the event's ``eventID``, kept per window start for each trail object; a shared
fingerprint only costs an unnecessary re-read, never a wrong count. Why, and how the evaluator uses them, is in
docs/kernel.md.
"""

from __future__ import annotations

import sys
import zlib
from array import array

import orjson

__all__ = ["EventFingerprints", "fingerprint"]

_MAGIC = b"ddb-audit-fingerprints/2\n"
_LITTLE = sys.byteorder == "little"


def fingerprint(event_id: str) -> int:
    """The event's 64-bit fingerprint: CRC-32 and Adler-32 of its ``eventID`` (stable across processes and Python
    versions, and cheap: the ingest path computes one per record)."""
    data = event_id.encode("utf-8", "surrogatepass")
    return zlib.crc32(data) << 32 | zlib.adler32(data)


class EventFingerprints:
    """The fingerprints of the events one input counted, by window start."""

    __slots__ = ("_windows", "window_seconds")

    def __init__(self, window_seconds: int) -> None:
        if window_seconds <= 0:
            raise ValueError("window_seconds must be positive")
        self.window_seconds = window_seconds
        self._windows: dict[int, array[int]] = {}

    def add(self, event_id: str, epoch: float) -> None:
        """One counted event (its ``eventID``, and its time as a POSIX timestamp)."""
        ws = self.window_seconds
        start = int(epoch // ws) * ws
        found = self._windows.get(start)
        if found is None:
            found = self._windows[start] = array("Q")
        found.append(fingerprint(event_id))

    def window(self, start: int) -> array[int]:
        """The fingerprints of the events in the window starting at ``start`` (empty when none)."""
        return self._windows.get(start, array("Q"))

    def starts(self) -> list[int]:
        return sorted(self._windows)

    def __len__(self) -> int:
        return sum(len(a) for a in self._windows.values())

    def to_bytes(self) -> bytes:
        """A header line (JSON: window seconds, then each window start with its count) and the fingerprints as
        little-endian unsigned 64-bit integers, window by window in that order."""
        starts = self.starts()
        header = orjson.dumps(
            {"window_seconds": self.window_seconds, "windows": [[s, len(self._windows[s])] for s in starts]}
        )
        body = bytearray(_MAGIC + header + b"\n")
        for s in starts:
            values = self._windows[s]
            if not _LITTLE:  # pragma: no cover - big-endian hosts
                values = array("Q", values)
                values.byteswap()
            body += values.tobytes()
        return bytes(body)

    @classmethod
    def from_bytes(cls, data: bytes) -> EventFingerprints:
        """Read :meth:`to_bytes`'s output; ``ValueError`` for anything else (wrong header, wrong length)."""
        if not data.startswith(_MAGIC):
            raise ValueError("not an event fingerprint file")
        end = data.find(b"\n", len(_MAGIC))
        if end < 0:
            raise ValueError("fingerprint file without a header")
        try:
            header = orjson.loads(data[len(_MAGIC) : end])
            seconds = int(header["window_seconds"])
            windows = [(int(s), int(n)) for s, n in header["windows"]]
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad fingerprint header: {exc}") from None
        out = cls(seconds)
        pos = end + 1
        if any(n < 0 for _, n in windows) or pos + 8 * sum(n for _, n in windows) != len(data):
            raise ValueError("fingerprint file length does not match its header")
        for start, n in windows:
            values = array("Q")
            values.frombytes(data[pos : pos + 8 * n])
            if not _LITTLE:  # pragma: no cover - big-endian hosts
                values.byteswap()
            out._windows[start] = values
            pos += 8 * n
        return out

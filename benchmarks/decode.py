"""Per-record decoders on the ingest benchmark's file: what the reader's typed decoder costs against orjson.

Run from the repository root::

    python -m benchmarks.decode [--records N] [--repeat R]

The reader cuts the ``Records`` array into one byte slice per record and decodes each on its own, so that a record
that does not decode is one skipped record (``docs/kernel.md``). This benchmark cuts the file the same way (once,
outside the timings) and prints, per decoder, the CPU seconds to decode every slice (GC off, best of ``R``) and the
ratio to the first row, measured in the same run:

- ``orjson.loads``: the whole record into dicts (the full path);
- ``msgspec`` without a type: the whole record into dicts;
- the typed decoder (``auditor.kernel.decode.light_record``), with ``orjson.loads`` for the records it hands back,
  as the reader runs it.

Then the typed decoder alone against ``orjson.loads`` on the records it reads.
"""

import argparse
import gc
import gzip
import sys
import time
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from auditor.kernel.decode import light_record
from benchmarks.ingest import ensure_file


def _slices(path: str) -> list[bytes]:
    raw = gzip.decompress(open(path, "rb").read())  # noqa: SIM115, PTH123 - read once, outside the timings
    body = raw[raw.index(b"[") + 1 : raw.rindex(b"]")]
    parts = body.split(b'},{"eventVersion":')
    head = b'{"eventVersion":'
    return [parts[0] + b"}", *(head + p + b"}" for p in parts[1:-1]), head + parts[-1]]


def _typed(data: bytes) -> Any:
    record = light_record(data, 0, len(data))
    return orjson.loads(data) if record is None else record


DECODERS: dict[str, Callable[[bytes], Any]] = {
    "orjson.loads (whole record)": orjson.loads,
    "msgspec, no type (whole record)": msgspec.json.Decoder().decode,
    "typed decoder, else orjson (the reader)": _typed,
}


def _best(decode: Callable[[bytes], Any], slices: list[bytes], repeat: int) -> tuple[float, int]:
    best, rejected = float("inf"), 0
    for _ in range(repeat):
        rejected = 0
        began = time.process_time()
        for data in slices:
            try:
                decode(data)
            except Exception:
                rejected += 1
        best = min(best, time.process_time() - began)
    return best, rejected


def run(args: argparse.Namespace) -> None:
    path, _ = ensure_file(args.records, max(1, args.records // 4), 1)
    slices = _slices(str(path))
    print(f"{len(slices):,} records, {sum(map(len, slices)) / len(slices):,.0f} bytes each on average")
    gc.disable()
    base = 0.0
    for name, decode in DECODERS.items():
        best, rejected = _best(decode, slices, args.repeat)
        base = base or best
        print(f"{name:<42} {best:6.3f} s CPU  {best / base:5.2f} x  rejected {rejected}")
    read = [data for data in slices if light_record(data, 0, len(data)) is not None]
    typed, _ = _best(lambda d: light_record(d, 0, len(d)), read, args.repeat)
    full, _ = _best(orjson.loads, read, args.repeat)
    print(
        f"on the {len(read):,} records the typed decoder reads: {typed:.3f} s CPU against {full:.3f} s for "
        f"orjson.loads ({typed / full:.2f} x)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.decode", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000, help="records in the file (default 200000)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per decoder, best kept (default 3)")
    args = parser.parse_args(argv)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

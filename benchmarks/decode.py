"""Per-record decoders measured on the ingest benchmark's file: which one the CloudTrail reader should use.

Run from the repository root (the msgspec rows need ``msgspec``, which is not a dependency of the project:
``pip install msgspec``)::

    python -m benchmarks.decode [--records N] [--repeat R]

The reader cuts the ``Records`` array into one byte slice per record and decodes each slice on its own, so that a
record that does not decode is one skipped record (``auditor.kernel.reader``). This benchmark cuts the
benchmark file the same way (once, outside the timings) and times, per decoder, the CPU seconds to decode every
slice (GC off, best of ``R``):

- ``orjson.loads``: the whole record into dicts (what the reader does);
- ``msgspec`` without a type: the whole record into dicts;
- ``msgspec`` typed, skipping: a ``Struct`` with only the fields the normaliser reads (unknown fields skipped,
  ``requestParameters`` kept raw and decoded with orjson). Not exact: msgspec skips unknown fields without checking
  their numbers or UTF-8, so a record orjson rejects (``"eventVersion":1e400``, a 5,000-digit integer, invalid
  UTF-8 in a field nobody reads) would be accepted and counted instead of skipped;
- ``msgspec`` typed, exact: every field a CloudTrail data event carries declared and typed (``forbid_unknown_fields``
  everywhere, so nothing is skipped unchecked; ASCII-only slices, everything else falls back to orjson), the open
  fields (``requestParameters``, ``responseElements``) raw and checked with orjson. This is what keeping per-record
  isolation exactly as it is costs with msgspec.

- the project's own partial decoder (``auditor.kernel._fastrecord.light``, where ``pip install`` built it): the
  whole slice checked as JSON, only the fields the light path reads built, and everything outside its strict subset
  handed back (then decoded with ``orjson.loads``, as the reader does). Exact by construction.

It prints one line per decoder with the seconds and the ratio to orjson, then the records each decoder rejected
(the file is clean: all must read 0). Without ``msgspec``, its three rows are left out (and said so).
"""

import argparse
import gc
import gzip
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from benchmarks.ingest import ensure_file


def _slices(path: str) -> list[bytes]:
    raw = gzip.decompress(open(path, "rb").read())  # noqa: SIM115, PTH123 - read once, outside the timings
    body = raw[raw.index(b"[") + 1 : raw.rindex(b"]")]
    parts = body.split(b'},{"eventVersion":')
    head = b'{"eventVersion":'
    return [parts[0] + b"}", *(head + p + b"}" for p in parts[1:-1]), head + parts[-1]]


def _decoders() -> dict[str, Callable[[bytes], Any]]:
    loads = orjson.loads
    found: dict[str, Callable[[bytes], Any]] = {"orjson.loads (whole record)": loads}
    from auditor.kernel.reader import _LIGHT

    if _LIGHT is not None:
        light = _LIGHT

        def partial(data: bytes) -> Any:
            got = light(data, 0, len(data))
            return loads(data) if got is None else got

        found["_fastrecord.light (fields read, exact)"] = partial
    else:
        print("the C decoder is not built (pure-Python install): its row is left out")
    try:
        found.update(_msgspec_decoders())
    except ImportError as exc:
        print(f"msgspec rows left out: {exc} (pip install msgspec)")
    return found


def _msgspec_decoders() -> dict[str, Callable[[bytes], Any]]:
    import msgspec
    from msgspec import UNSET, Raw, Struct, UnsetType

    s = str | None | UnsetType
    b = bool | None | UnsetType

    class Identity(Struct, gc=False):
        type: s = UNSET
        arn: s = UNSET
        accountId: s = UNSET  # noqa: N815 - CloudTrail's field names
        invokedBy: s = UNSET  # noqa: N815

    class Skipping(Struct, gc=False):
        eventSource: s = UNSET  # noqa: N815
        eventCategory: s = UNSET  # noqa: N815
        managementEvent: b = UNSET  # noqa: N815
        eventName: s = UNSET  # noqa: N815
        eventID: s = UNSET  # noqa: N815
        eventTime: s = UNSET  # noqa: N815
        requestParameters: Raw = Raw(b"null")  # noqa: N815
        userIdentity: Identity | UnsetType | None = UNSET  # noqa: N815
        recipientAccountId: s = UNSET  # noqa: N815
        awsRegion: s = UNSET  # noqa: N815
        userAgent: s = UNSET  # noqa: N815
        sourceIPAddress: s = UNSET  # noqa: N815
        errorCode: s = UNSET  # noqa: N815
        errorMessage: s = UNSET  # noqa: N815

    class Issuer(Struct, forbid_unknown_fields=True, gc=False):
        type: s = UNSET
        principalId: s = UNSET  # noqa: N815
        arn: s = UNSET
        accountId: s = UNSET  # noqa: N815
        userName: s = UNSET  # noqa: N815

    class Attributes(Struct, forbid_unknown_fields=True, gc=False):
        creationDate: s = UNSET  # noqa: N815
        mfaAuthenticated: s = UNSET  # noqa: N815

    class Context(Struct, forbid_unknown_fields=True, gc=False):
        sessionIssuer: Issuer | UnsetType | None = UNSET  # noqa: N815
        attributes: Attributes | UnsetType | None = UNSET

    class FullIdentity(Struct, forbid_unknown_fields=True, gc=False):
        type: s = UNSET
        principalId: s = UNSET  # noqa: N815
        arn: s = UNSET
        accountId: s = UNSET  # noqa: N815
        accessKeyId: s = UNSET  # noqa: N815
        userName: s = UNSET  # noqa: N815
        invokedBy: s = UNSET  # noqa: N815
        sessionContext: Context | UnsetType | None = UNSET  # noqa: N815

    class Resource(Struct, forbid_unknown_fields=True, gc=False):
        accountId: s = UNSET  # noqa: N815
        type: s = UNSET
        ARN: s = UNSET

    class Tls(Struct, forbid_unknown_fields=True, gc=False):
        tlsVersion: s = UNSET  # noqa: N815
        cipherSuite: s = UNSET  # noqa: N815
        clientProvidedHostHeader: s = UNSET  # noqa: N815

    class Exact(Struct, forbid_unknown_fields=True, gc=False):
        eventVersion: s = UNSET  # noqa: N815
        userIdentity: FullIdentity | UnsetType | None = UNSET  # noqa: N815
        eventTime: s = UNSET  # noqa: N815
        eventSource: s = UNSET  # noqa: N815
        eventName: s = UNSET  # noqa: N815
        awsRegion: s = UNSET  # noqa: N815
        sourceIPAddress: s = UNSET  # noqa: N815
        userAgent: s = UNSET  # noqa: N815
        errorCode: s = UNSET  # noqa: N815
        errorMessage: s = UNSET  # noqa: N815
        requestParameters: Raw = Raw(b"null")  # noqa: N815
        responseElements: Raw = Raw(b"null")  # noqa: N815
        requestID: s = UNSET  # noqa: N815
        eventID: s = UNSET  # noqa: N815
        readOnly: b = UNSET  # noqa: N815
        resources: list[Resource] | UnsetType | None = UNSET
        eventType: s = UNSET  # noqa: N815
        apiVersion: s = UNSET  # noqa: N815
        managementEvent: b = UNSET  # noqa: N815
        recipientAccountId: s = UNSET  # noqa: N815
        eventCategory: s = UNSET  # noqa: N815
        tlsDetails: Tls | UnsetType | None = UNSET  # noqa: N815

    loads = orjson.loads
    skipping = msgspec.json.Decoder(Skipping).decode
    exact = msgspec.json.Decoder(Exact).decode
    untyped = msgspec.json.Decoder().decode

    def typed_skipping(data: bytes) -> Any:
        rec = skipping(data)
        return rec, loads(memoryview(rec.requestParameters))

    def typed_exact(data: bytes) -> Any:
        if not data.isascii():
            return loads(data)
        try:
            rec = exact(data)
        except msgspec.DecodeError:
            return loads(data)
        params = loads(memoryview(rec.requestParameters))
        if bytes(rec.responseElements) != b"null":
            loads(memoryview(rec.responseElements))
        return rec, params

    return {
        "msgspec, no type (whole record)": untyped,
        "msgspec typed, skipping (not exact)": typed_skipping,
        "msgspec typed, exact": typed_exact,
    }


def run(args: argparse.Namespace) -> None:
    path, _ = ensure_file(args.records, max(1, args.records // 4), 1)
    slices = _slices(str(path))
    print(f"{len(slices):,} records, {sum(map(len, slices)) / len(slices):,.0f} bytes each on average")
    gc.disable()
    base = 0.0
    for name, decode in _decoders().items():
        best = float("inf")
        rejected = 0
        for _ in range(args.repeat):
            rejected = 0
            began = time.process_time()
            for data in slices:
                try:
                    decode(data)
                except Exception:
                    rejected += 1
            best = min(best, time.process_time() - began)
        base = base or best
        print(f"{name:<38} {best:6.3f} s CPU  {best / base:5.2f} x orjson  rejected {rejected}")
    _decoder_alone(slices, args.repeat)


def _decoder_alone(slices: list[bytes], repeat: int) -> None:
    """The C decoder against orjson on the records it reads (the others cost a partial read plus orjson)."""
    from auditor.kernel.reader import _LIGHT

    if _LIGHT is None:
        return
    light = _LIGHT
    read = [data for data in slices if light(data, 0, len(data)) is not None]
    timings = {}
    for name, decode in (("orjson.loads", orjson.loads), ("_fastrecord.light", lambda d: light(d, 0, len(d)))):
        best = float("inf")
        for _ in range(repeat):
            began = time.process_time()
            for data in read:
                decode(data)
            best = min(best, time.process_time() - began)
        timings[name] = best
    print(
        f"on the {len(read):,} records the C decoder reads: {timings['_fastrecord.light']:.3f} s CPU against "
        f"{timings['orjson.loads']:.3f} s for orjson.loads "
        f"({timings['_fastrecord.light'] / timings['orjson.loads']:.2f} x)"
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

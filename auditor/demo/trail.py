"""CloudTrail log files and the S3 layout of a trail, as CloudTrail delivers them, for the generator's records.

:func:`write_trail` writes gzipped log files (slightly out of order, a few duplicates in a neighbouring file) and an
hourly digest file under ``AWSLogs/``; the same records and arguments always give the same bytes. The layout is in
docs/demo.md.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from pathlib import Path
from typing import Any, Final

import orjson

from auditor.demo.records import ALNUM, DEFAULT_ACCOUNT, DEFAULT_REGION, Record, iso_time, rand_str

_FLUSH_EVERY: Final = 1024


def _open_out(path: Path, gz: bool) -> io.BufferedIOBase:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        # GzipFile rather than gzip.open so that mtime=0 makes the bytes reproducible.
        return gzip.GzipFile(filename=str(path), mode="wb", compresslevel=6, mtime=0)
    return path.open("wb")


def _write_records(records: Iterable[Record], path: Path, gz: bool) -> tuple[int, str]:
    """Stream ``{"Records":[...]}`` to ``path``; returns (records written, SHA-256 of the uncompressed bytes)."""
    digest = hashlib.sha256()
    dumps = orjson.dumps
    count = 0
    with _open_out(path, gz) as out:
        buf: list[bytes] = [b'{"Records":[']
        for rec in records:
            if count:
                buf.append(b",")
            buf.append(dumps(rec))
            count += 1
            if len(buf) >= _FLUSH_EVERY:
                chunk = b"".join(buf)
                digest.update(chunk)
                out.write(chunk)
                buf.clear()
        buf.append(b"]}")
        chunk = b"".join(buf)
        digest.update(chunk)
        out.write(chunk)
    return count, digest.hexdigest()


def write_log_file(records: Iterable[Record], path: Path, gz: bool = True) -> int:
    """Write one CloudTrail log file ``{"Records":[...]}`` (gzip when ``gz``), streaming; returns the count."""
    return _write_records(records, Path(path), gz)[0]


def _event_ts(record: Record) -> float:
    value = record.get("eventTime")
    if not isinstance(value, str):
        raise ValueError("record without eventTime")
    return datetime.fromisoformat(value).timestamp()


def _stamp(ts: float, fmt: str) -> str:
    return time.strftime(fmt, time.gmtime(ts))


@dataclass(slots=True)
class _LogFile:
    publish: float
    records: list[tuple[float, Record]]
    path: Path | None = None
    key: str = ""
    sha256: str = ""


def write_trail(
    records: Iterable[Record],
    out_dir: Path,
    account: str = DEFAULT_ACCOUNT,
    region: str = DEFAULT_REGION,
    *,
    seed: int = 7,
    file_minutes: float = 5,
    duplicates: int = 5,
    trail_name: str = "ddb-data-events",
    bucket: str | None = None,
    late_fraction: float = 0.005,
) -> list[Path]:
    """Write ``records`` as a CloudTrail trail would deliver them to S3, under ``out_dir``.

    Returns the log files in delivery order, followed by the digest files (their paths contain
    ``/CloudTrail-Digest/``). See the module docstring for the layout and the imperfections it reproduces.
    """
    out_dir = Path(out_dir)
    rng = random.Random(f"trail:{seed}")
    period = max(1.0, file_minutes * 60.0)
    bucket = bucket or f"aws-cloudtrail-logs-{account}-{rng.getrandbits(32):08x}"

    buckets: dict[int, list[tuple[float, Record]]] = {}
    for rec in records:
        ts = _event_ts(rec)
        slot = int(ts // period)
        if rng.random() < late_fraction:
            slot += 1  # delivered in the next file
        # A jittered sort key: the records of a file end up only roughly in time order.
        buckets.setdefault(slot, []).append((ts + rng.uniform(0.0, 40.0), rec))

    files: list[_LogFile] = []
    for slot in sorted(buckets):
        entries = buckets[slot]
        entries.sort(key=itemgetter(0))
        files.append(_LogFile(publish=(slot + 1) * period + rng.uniform(20.0, 240.0), records=entries))
    if duplicates > 0 and len(files) == 1 and len(files[0].records) > 1:
        # CloudTrail splits busy periods into several files: split so duplicates can cross files.
        only = files[0]
        half = len(only.records) // 2
        files = [
            _LogFile(only.publish, only.records[:half]),
            _LogFile(only.publish + rng.uniform(1.0, 30.0), only.records[half:]),
        ]
    if duplicates > 0 and len(files) > 1:
        chosen: set[int] = set()  # each duplicated record appears exactly twice
        for _ in range(duplicates * 20):
            if len(chosen) == duplicates:
                break
            i = rng.randrange(len(files))
            source = files[i].records
            if not source:
                continue
            entry = source[rng.randrange(len(source))]
            if id(entry[1]) in chosen:
                continue
            chosen.add(id(entry[1]))
            target = files[i + 1 if i + 1 < len(files) else i - 1].records
            target.insert(rng.randrange(len(target) + 1), entry)

    prefix = f"AWSLogs/{account}/CloudTrail/{region}"
    written: list[Path] = []
    for lf in files:
        name = f"{account}_CloudTrail_{region}_{_stamp(lf.publish, '%Y%m%dT%H%MZ')}_{rand_str(rng, ALNUM, 16)}"
        lf.key = f"{prefix}/{_stamp(lf.publish, '%Y/%m/%d')}/{name}.json.gz"
        lf.path = out_dir / lf.key
        _, lf.sha256 = _write_records((rec for _, rec in lf.records), lf.path, gz=True)
        written.append(lf.path)
    written.extend(_write_digests(files, out_dir, account, region, trail_name, bucket, rng))
    return written


def _write_digests(
    files: Sequence[_LogFile],
    out_dir: Path,
    account: str,
    region: str,
    trail_name: str,
    bucket: str,
    rng: random.Random,
) -> list[Path]:
    """Hourly digest files (the digest file structure of the CloudTrail User Guide) listing the log files."""
    if not files:
        return []
    offset = rng.uniform(0.0, 3600.0)
    by_hour: dict[int, list[_LogFile]] = {}
    for lf in files:
        by_hour.setdefault(int((lf.publish - offset) // 3600.0), []).append(lf)
    fingerprint = format(rng.getrandbits(128), "032x")
    previous: tuple[str, str, str] | None = None  # (object key, sha256, signature)
    paths: list[Path] = []
    for hour in range(min(by_hour), max(by_hour) + 1):
        start = hour * 3600.0 + offset
        end = start + 3600.0
        members = by_hour.get(hour, [])
        key = (
            f"AWSLogs/{account}/CloudTrail-Digest/{region}/{_stamp(end, '%Y/%m/%d')}/"
            f"{account}_CloudTrail-Digest_{region}_{trail_name}_{region}_{_stamp(end, '%Y%m%dT%H%M%SZ')}.json.gz"
        )
        log_entries = []
        for lf in members:
            times = [_event_ts(rec) for _, rec in lf.records]
            log_entries.append(
                {
                    "s3Bucket": bucket,
                    "s3Object": lf.key,
                    "hashValue": lf.sha256,
                    "hashAlgorithm": "SHA-256",
                    "newestEventTime": iso_time(max(times)) if times else None,
                    "oldestEventTime": iso_time(min(times)) if times else None,
                }
            )
        newest = [e["newestEventTime"] for e in log_entries if e["newestEventTime"]]
        oldest = [e["oldestEventTime"] for e in log_entries if e["oldestEventTime"]]
        digest: dict[str, Any] = {
            "awsAccountId": account,
            "digestStartTime": iso_time(start),
            "digestEndTime": iso_time(end),
            "digestS3Bucket": bucket,
            "digestS3Object": key,
            "digestPublicKeyFingerprint": fingerprint,
            "digestSignatureAlgorithm": "SHA256withRSA",
            "newestEventTime": max(newest) if newest else None,
            "oldestEventTime": min(oldest) if oldest else None,
            "previousDigestS3Bucket": bucket if previous else None,
            "previousDigestS3Object": previous[0] if previous else None,
            "previousDigestHashValue": previous[1] if previous else None,
            "previousDigestHashAlgorithm": "SHA-256" if previous else None,
            "previousDigestSignature": previous[2] if previous else None,
            "logFiles": log_entries,
        }
        body = orjson.dumps(digest)
        path = out_dir / key
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(filename=str(path), mode="wb", compresslevel=6, mtime=0) as out:
            out.write(body)
        previous = (key, hashlib.sha256(body).hexdigest(), format(rng.getrandbits(2048), "0512x"))
        paths.append(path)
    return paths

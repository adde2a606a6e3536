"""The per-minute trace of a billing simulation (``ddb-audit billing --trace-out FILE.csv``) and reading it back.

One row per minute and table or GSI, in this column order::

    timestamp,index,consumed_read,provisioned_read,throttled_read,consumed_write,provisioned_write,throttled_write

``timestamp`` is the minute's start (ISO-8601 UTC, ``Z``); ``index`` is empty for the table and the GSI's name
otherwise (escaped for spreadsheets); ``consumed_*`` are the CloudWatch ``Sum`` of consumed units in the minute
(a longer period's sum spread evenly over its minutes; empty where the input has no datapoint); ``provisioned_*``
the simulated capacity in force (units per second); ``throttled_*`` the request units the simulated capacity could
not serve (empty with ``--simulation evaluator``, which does not model throttling).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from auditor.escaping import csv_safe
from auditor.exceptions import InputError

TRACE_HEADER = (
    "timestamp",
    "index",
    "consumed_read",
    "provisioned_read",
    "throttled_read",
    "consumed_write",
    "provisioned_write",
    "throttled_write",
)


@dataclass(frozen=True, slots=True)
class SeriesTrace:
    """One table's (``index`` None) or GSI's simulated minutes."""

    index: str | None
    start_minute: int
    consumed_read: Sequence[float | None]
    provisioned_read: Sequence[float | None]
    throttled_read: Sequence[float] | None
    consumed_write: Sequence[float | None]
    provisioned_write: Sequence[float | None]
    throttled_write: Sequence[float] | None


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.10g}"


def trace_csv(traces: Iterable[SeriesTrace]) -> str:
    """The whole CSV document (header first), series after series."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(TRACE_HEADER)
    for t in traces:
        index = csv_safe(t.index) if t.index is not None else ""
        for i in range(len(t.provisioned_read)):
            stamp = datetime.fromtimestamp((t.start_minute + i) * 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            writer.writerow(
                (
                    stamp,
                    index,
                    _number(t.consumed_read[i]),
                    _number(t.provisioned_read[i]),
                    _number(t.throttled_read[i]) if t.throttled_read is not None else "",
                    _number(t.consumed_write[i]),
                    _number(t.provisioned_write[i]),
                    _number(t.throttled_write[i]) if t.throttled_write is not None else "",
                )
            )
    return out.getvalue()


def write_trace(path: str, traces: Iterable[SeriesTrace]) -> None:
    """Write the trace CSV in one piece.

    Raises:
        InputError: the file cannot be written.
    """
    text = trace_csv(traces)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write the trace: {exc.strerror or exc}") from exc


def _float(text: str, where: str) -> float | None:
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: not a number: {text[:40]!r}") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: not a finite number: {text[:40]!r}")
    if value < 0:
        raise InputError(f"{where}: negative value {text[:40]!r}")
    return value


def _minute(text: str, where: str) -> datetime:
    """A row's timestamp: a whole minute in UTC, years 1970 to 2999 (the report's arithmetic stays in range)."""
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where}: bad timestamp {text[:40]!r}") from None
    if not 1970 <= stamp.year <= 2999:
        raise InputError(f"{where}: timestamp {text[:40]!r} is out of range (years 1970 to 2999)")
    if stamp.utcoffset() != timedelta(0) or stamp.second or stamp.microsecond:
        raise InputError(f"{where}: timestamp {text[:40]!r} is not a whole minute in UTC")
    return stamp


def read_trace(path: str, table: str) -> dict[str, Any]:
    """A trace CSV as a capacity history of ``table`` (the ``ddb-audit billing`` input shape ``report`` charts).

    The simulated capacity stands in for the provisioned capacity (a minute without one keeps the previous value);
    a minute without a consumed value counts 0.

    Raises:
        InputError: the file cannot be read, lacks the header, or a row is malformed (file and line named): a
            value that is not a finite number >= 0, a timestamp that is not a whole UTC minute in 1970 to 2999.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the trace: {exc}") from exc
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if header is None or tuple(header) != TRACE_HEADER:
        raise InputError(f"{path}: not a billing trace (expected the header {','.join(TRACE_HEADER)})")
    series: dict[str, dict[str, Any]] = {}
    for line, row in enumerate(rows, start=2):
        where = f"{path}:{line}"
        if len(row) != len(TRACE_HEADER):
            raise InputError(f"{where}: expected {len(TRACE_HEADER)} columns, got {len(row)}")
        stamp = _minute(row[0], where)
        index = row[1].removeprefix("'") if row[1] else ""
        s = series.get(index)
        if s is None:
            s = series[index] = {
                "table": table,
                "index": index or None,
                "start": stamp,
                "period_seconds": 60,
                "consumed_read": [],
                "consumed_write": [],
                "provisioned_read": [],
                "provisioned_write": [],
            }
        expected = s["start"] + timedelta(minutes=len(s["consumed_read"]))
        if stamp != expected:
            raise InputError(f"{where}: minute {row[0]} out of order (expected {expected:%Y-%m-%dT%H:%M:%SZ})")
        s["consumed_read"].append(_float(row[2], where) or 0.0)
        s["consumed_write"].append(_float(row[5], where) or 0.0)
        for dim, column in (("read", 3), ("write", 6)):
            values = s[f"provisioned_{dim}"]
            value = _float(row[column], where)
            values.append(value if value is not None else (values[-1] if values else 0.0))
    if not series:
        raise InputError(f"{path}: the trace has no rows")
    first = next(iter(series.values()))
    for s in series.values():
        if s["start"] != first["start"] or len(s["consumed_read"]) != len(first["consumed_read"]):
            raise InputError(f"{path}: series {s['index'] or '(table)'} covers other minutes than the first")
    return {
        "table": table,
        "start": first["start"].strftime("%Y-%m-%dT%H:%M:%SZ"),
        "period_seconds": 60,
        "series": [
            {k: v for k, v in s.items() if k not in ("table", "start", "period_seconds")} for s in series.values()
        ],
    }

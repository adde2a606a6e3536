"""A finding's evidence over its period: each window's figures kept in its totals, merged window by window like the
counts (:class:`auditor.models.finding.Totals` ``figures``), and the evidence stated from them (docs/contract.md
"Finding (JSON)", the period rule).

Counts add, peaks keep the busiest window's value (with the times that go with it), headrooms the tightest one's, lists
of seen things their union; shares and rates are derived from the period's sums. A figure of a sub-period (a busiest
second, minute or window) is named so in ``evidence.sub_periods``. Pure: no clock, no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CONTINUED_FIRST",
    "PERIOD_BASE",
    "TOP_KEYS",
    "Figures",
    "KeyCount",
    "PeriodKeys",
    "SpaceKeys",
    "figures_of",
    "key_id",
    "merge_figures",
    "period_evidence",
    "repeated_scans",
    "same_window_figures",
    "with_period_base",
    "with_period_key",
]

#: The figures kept for one finding over some windows (JSON-ready: stored with the totals).
Figures = dict[str, Any]

HOUR = 3600


@dataclass(frozen=True, slots=True)
class _Spec:
    """How one kind's evidence fields combine over windows."""

    #: Counts over the windows: they add.
    sums: tuple[str, ...] = ()
    #: Peaks: the highest window's value, with the fields that go with it (when it happened).
    maxes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Headrooms: the tightest window's value, with the fields of the same model.
    mins: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Lists of things seen (segments, indexes, filters): their union.
    unions: tuple[str, ...] = ()
    #: Lists of ``{name: ..., count: n}`` rows: counts added by name, the top rows kept (field -> (name, count, how
    #: many rows the detector lists; None: all)).
    tallies: Mapping[str, tuple[str, str, int | None]] = field(default_factory=dict)
    #: Maps of counts (error codes): added key by key.
    counters: tuple[str, ...] = ()
    #: Counts of the window that every finding of one source in it shares (the window's calls): they add over
    #: windows, not over the findings of one window.
    shared: tuple[str, ...] = ()
    #: The field whose value keeps its own ``sums`` (a throttling finding's cause): ``figures["by"][value]``.
    by: str | None = None


_MODEL = ("assumed_utilisation", "throttles_now", "contradicted_assumption", "to_confirm")

SPECS: dict[str, _Spec] = {
    "hot_key": _Spec(
        # a key's period count sums its windows' counts, each a lower bound short by at most its window's sketch
        # error: the period's bound is the sum of those errors, not the largest
        sums=("requests", "reads", "writes", "throttled_calls", "key_requests", "estimate_error"),
        maxes={
            "peak_reads_per_second": (),
            "peak_writes_per_second": ("peak_window",),
            "peak_read_units_per_second": (),
            "peak_write_units_per_second": (),
            "peak_second_reads": ("peak_second_reads_at",),
            "peak_second_writes": ("peak_second_writes_at",),
            "peak_minute_reads": (),
            "peak_minute_writes": (),
            "suggested_shards": (),
            "distinct_partition_keys": (),
            "hot_keys": (),
        },
        mins={"headroom_factor": (*_MODEL, "partition_utilisation")},
    ),
    "low_cardinality_key": _Spec(
        sums=("requests", "throttled_calls"),
        maxes={"distinct_partition_keys": ()},
        mins={"busiest_value_headroom_factor": ("headroom_factor", *_MODEL)},
        tallies={"values": ("value", "requests", None)},
    ),
    "scan": _Spec(
        sums=("count", "pages", "logical_scans", "inferred_scans", "continued_scans", "estimated_read_units"),
        maxes={"total_segments": (), "page_limit": ()},
        unions=("segments_seen", "indexes", "filters"),
    ),
    "throttling": _Spec(
        sums=("read_throttle_events", "write_throttle_events"),
        tallies={"top_keys": ("key", "throttled_calls", 5)},  # the throttling detector's five
        counters=("error_codes",),
        shared=("calls",),
        by="cause",
    ),
    "item_size_exceeded": _Spec(sums=("count", "whole_calls")),
}

#: The figures of a key that count only the windows the key was found in (hot, or keyed on few values there): the
#: other windows' requests to the key, and the table's, are not in them.
SEEN_ONLY: dict[str, tuple[str, ...]] = {
    "hot_key": ("share", "requests", "reads", "writes", "key_requests", "throttled_calls"),
    "low_cardinality_key": ("requests", "values", "throttled_calls"),
}

#: The rates of those figures (over the same windows).
_SEEN_RATES = ("reads_per_second", "writes_per_second", "requests_per_second")

#: The busiest minute's time goes with the larger of its reads and writes.
_PEAK_MINUTE = ("peak_minute", ("peak_minute_reads", "peak_minute_writes"))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _tally_name(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def figures_of(kind: str, evidence: Mapping[str, Any]) -> Figures | None:
    """One window's figures from its finding's evidence (None: a kind whose evidence is not a rate of a period)."""
    spec = SPECS.get(kind)
    if spec is None:
        return None
    out: Figures = {"sum": {f: evidence[f] for f in spec.sums if _number(evidence.get(f)) is not None}}
    if spec.shared:
        out["shared"] = {f: evidence[f] for f in spec.shared if _number(evidence.get(f)) is not None}
    if spec.by is not None and evidence.get(spec.by) is not None:
        out["by"] = {str(evidence[spec.by]): dict(out["sum"])}
    for name, ranked in (("max", spec.maxes), ("min", spec.mins)):
        out[name] = {
            f: {"value": evidence[f], "with": {c: evidence.get(c) for c in companions if c in evidence}}
            for f, companions in ranked.items()
            if _number(evidence.get(f)) is not None
        }
    stamp, over = _PEAK_MINUTE
    minute = [n for f in over if (n := _number(evidence.get(f))) is not None]
    if kind == "hot_key" and stamp in evidence and minute:
        out["max"][stamp] = {"value": max(minute), "with": {stamp: evidence[stamp]}}
    out["union"] = {f: sorted(evidence[f], key=_tally_name) for f in spec.unions if isinstance(evidence.get(f), list)}
    tallies: dict[str, dict[str, float]] = {}
    for f, (name, count, _) in spec.tallies.items():
        rows = evidence.get(f)
        if isinstance(rows, list):
            tallies[f] = {}
            for row in rows:
                n = row.get(count) if isinstance(row, dict) else None
                if isinstance(row, dict) and isinstance(n, int | float) and not isinstance(n, bool):
                    key = _tally_name(row.get(name))
                    tallies[f][key] = _add(tallies[f][key], n) if key in tallies[f] else n
    for f in spec.counters:
        counts = evidence.get(f)
        if isinstance(counts, dict):
            tallies[f] = {str(k): v for k, v in counts.items() if _number(v) is not None}
    out["tally"] = tallies
    seconds = _number(evidence.get("window_seconds"))
    if seconds is not None:
        out["window_seconds"] = int(seconds)
    if kind == "scan" and _number(evidence.get("continued_scans")) is not None:
        out[CONTINUED_FIRST] = int(evidence["continued_scans"])
    return out


#: In a scan's figures: 1 when the earliest of its windows began with a page that continued a scan begun before it.
#: A later window that begins so continues the scan an earlier window counted (a paginated or parallel scan across a
#: window boundary): each window counts the scan it continues (``continued_scans``), the period counts it once.
CONTINUED_FIRST = "continued_first"


#: The longest pause between two pages of one paginated scan taken to continue it (a window): a later set of windows
#: whose first page continues a scan more than this after the earlier set's last page continues one that the earlier
#: windows did not see begin.
SCAN_PAUSE_SECONDS = 900


def repeated_scans(a: Figures | None, b: Figures | None, b_first: bool, pause: float) -> int:
    """Scans both of two sets of windows count: the one the later set's first window continued, when it came at most
    :data:`SCAN_PAUSE_SECONDS` (``pause``) after the earlier set's last page (0 when either set's figures do not
    say, as stored before this was kept)."""
    if a is None or b is None or CONTINUED_FIRST not in a or CONTINUED_FIRST not in b or pause > SCAN_PAUSE_SECONDS:
        return 0
    return int((a if b_first else b)[CONTINUED_FIRST])


def _add(a: float, b: float) -> float:
    """Two counts added (floats, such as estimated read units, kept to a thousandth)."""
    total = a + b
    return total if isinstance(total, int) else round(total, 3)


def _added(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Two maps of counts added key by key."""
    out = dict(a)
    for f, n in b.items():
        out[f] = _add(out[f], n) if f in out else n
    return out


def _by(a: Figures, b: Figures) -> dict[str, dict[str, Any]]:
    """Two figures' counts by group (:attr:`_Spec.by`) added group by group."""
    mine: dict[str, dict[str, Any]] = a.get("by", {})
    theirs: dict[str, dict[str, Any]] = b.get("by", {})
    return {g: _added(mine.get(g, {}), theirs.get(g, {})) for g in sorted(set(mine) | set(theirs))}


#: The most rows a tally (throttled keys, a key's values) or a union keeps over a period: a week of windows each naming
#: its top five throttled keys must not outgrow a stored item; the largest counts are kept (the rows shown are fewer).
KEPT = 50


def _kept(counts: dict[str, Any]) -> dict[str, Any]:
    """The :data:`KEPT` largest counts (all when there are fewer)."""
    if len(counts) <= KEPT:
        return counts
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:KEPT])


def _busier(entry: Mapping[str, Any]) -> float:
    """How much of its limit the window of a headroom entry used (its ``assumed_utilisation``; 0 when not stated)."""
    used = _number(entry.get("with", {}).get("assumed_utilisation"))
    return used if used is not None else 0.0


def _ahead(entry: Mapping[str, Any], kept: Mapping[str, Any], sign: float) -> bool:
    """Whether ``entry`` replaces ``kept``: a higher peak (``sign`` 1) or a tighter headroom (``sign`` -1); of two
    equal headrooms, the busier window's (a headroom capped at 1.0 by throttling in two windows is stated with the
    utilisation of the one nearer its limit, the one the input's peak is in)."""
    mine, theirs = sign * float(entry["value"]), sign * float(kept["value"])
    if mine != theirs or sign > 0:
        return mine > theirs
    return _busier(entry) > _busier(kept)


def merge_figures(
    a: Figures | None, b: Figures | None, b_first: bool = False, pause: float = float("inf")
) -> Figures | None:
    """The figures of two sets of windows that do not overlap (None when either is unknown: a part stored before
    figures existed would make the sums wrong); ``b_first``: ``b``'s windows began before ``a``'s, ``pause``: the
    seconds from the earlier set's last sighting to the later set's first (:func:`repeated_scans`)."""
    if a is None or b is None:
        return None
    out: Figures = {"sum": _added(a.get("sum", {}), b.get("sum", {}))}
    repeated = repeated_scans(a, b, b_first, pause)
    if CONTINUED_FIRST in a and CONTINUED_FIRST in b:
        out[CONTINUED_FIRST] = (b if b_first else a)[CONTINUED_FIRST]
    if repeated:  # the scan the later windows continued is counted once, by the windows it began in
        out["sum"] = {f: (n - repeated if f in _SCAN_COUNTS else n) for f, n in out["sum"].items()}
    if "shared" in a or "shared" in b:
        out["shared"] = _added(a.get("shared", {}), b.get("shared", {}))
    if "by" in a or "by" in b:
        out["by"] = _by(a, b)
    for name, sign in (("max", 1.0), ("min", -1.0)):
        kept = dict(a.get(name, {}))
        for f, entry in b.get(name, {}).items():
            if f not in kept or _ahead(entry, kept[f], sign):
                kept[f] = entry
        out[name] = kept
    unions = {f: list(v) for f, v in a.get("union", {}).items()}
    for f, items in b.get("union", {}).items():
        merged = {_tally_name(x): x for x in [*unions.get(f, []), *items]}
        unions[f] = [merged[k] for k in sorted(merged)][:KEPT]
    out["union"] = unions
    mine, theirs = a.get("tally", {}), b.get("tally", {})
    out["tally"] = {f: _kept(_added(mine.get(f, {}), theirs.get(f, {}))) for f in sorted(set(mine) | set(theirs))}
    seconds = [s for s in (a.get("window_seconds"), b.get("window_seconds")) if s is not None]
    if seconds:
        out["window_seconds"] = max(seconds)
    return out


#: A scan's counts of logical scans (each window counts the scan its first page continued: see :data:`CONTINUED_FIRST`).
_SCAN_COUNTS = ("count", "logical_scans", "continued_scans")


def _sub_period(name: str, window_seconds: int | None) -> str:
    """What part of the period a peak or headroom figure is of."""
    if name.startswith("peak_second_"):
        return "busiest second"
    if name.startswith("peak_minute"):
        return "busiest minute"
    if name.startswith("peak_") and name.endswith("_per_second"):
        return "busiest minute (or second, when busier)"
    if not window_seconds:
        return "busiest window"
    minutes = max(1, round(window_seconds / 60))
    return f"busiest {minutes} minute{'s' if minutes != 1 else ''}"


def _rows(figures: Figures, f: str, spec: _Spec, total: float | None) -> list[dict[str, Any]]:
    name, count, limit = spec.tallies[f]
    counts: dict[str, float] = figures.get("tally", {}).get(f, {})
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    out: list[dict[str, Any]] = []
    for key, n in ranked:
        row: dict[str, Any] = {name: json.loads(key), count: n}
        if f == "values" and total:
            row["share"] = round(n / total, 4)
        out.append(row)
    return out


def period_evidence(
    kind: str, evidence: Mapping[str, Any], figures: Figures | None, seconds: float, windows: int = 0
) -> dict[str, Any]:
    """``evidence`` stated for a period of ``seconds`` from its ``figures`` (unchanged without them), summed over
    the ``windows`` that saw the finding.

    Sums replace the window's counts; peaks and headrooms are the busiest (tightest) window's, named in
    ``sub_periods``; shares and rates are of the period's sums (``share``: of the key-identified requests,
    ``*_per_second``/``per_hour``: over ``seconds``); ``window_seconds`` is the period's length. A key's requests
    and share count only the windows it was found in (:data:`SEEN_ONLY`): when they are less than the period,
    ``sub_periods`` names them (``the 30 minutes it was found in``); a hot key's share and ``key_requests`` are the
    period's when its figures have the period's base (:func:`with_period_base`), and its requests, reads and writes
    (and their rates) too when they have the key's counts of the other windows (:func:`with_period_key`; a lower bound
    named in ``lower_bound`` when some window did not list the key)."""
    spec = SPECS.get(kind)
    if spec is None or figures is None:
        return dict(evidence)
    out = dict(evidence)
    sums: dict[str, float] = figures.get("sum", {})
    out.update(sums)
    labels: dict[str, str] = {}
    window = figures.get("window_seconds")
    for name in ("max", "min"):
        for f, entry in figures.get(name, {}).items():
            if f != _PEAK_MINUTE[0]:
                out[f] = entry["value"]
                labels[f] = _sub_period(f, window)
            for c, v in entry["with"].items():
                out[c] = v
                labels[c] = _sub_period(c if c.startswith("peak_") else f, window)
    if isinstance(out.get("peak_window"), str):  # what the peak rates were measured over (a second or a minute)
        labels.update({f: out["peak_window"] for f in labels if f.startswith("peak_") and f.endswith("_per_second")})
        labels["peak_window"] = out["peak_window"]
    if kind == "hot_key" and isinstance(out.get("keys"), list):  # many hot keys: each one's figures as last listed
        labels["keys"] = "the latest window it was found in"
    seen = windows * (window or 0)
    rate_seconds = seconds
    if kind in SEEN_ONLY and 0 < seen < seconds:
        minutes = max(1, round(seen / 60))
        based = _BASED if figures.get(PERIOD_BASE) else ()
        if figures.get(PERIOD_KEY):
            based = (*based, *_KEYED)
        labelled = tuple(f for f in (*SEEN_ONLY[kind], *_SEEN_RATES) if f not in based)
        labels.update(dict.fromkeys((f for f in labelled if f in out), f"the {minutes} minutes it was found in"))
        if not figures.get(PERIOD_KEY):
            rate_seconds = seen  # its rates are of the time its counts are of
    bound = figures.get(PERIOD_KEY)
    if kind == "hot_key" and isinstance(bound, dict) and bound.get("uncounted_at_most"):
        out["lower_bound"] = {"fields": ["requests", "reads", "writes", "share"], **bound}
    out.update(figures.get("union", {}))
    for f in spec.tallies:
        if f in figures.get("tally", {}):
            out[f] = _rows(figures, f, spec, _number(sums.get("requests")))
    for f in spec.counters:
        if f in figures.get("tally", {}):
            out[f] = dict(sorted(figures["tally"][f].items()))
    if seconds > 0:
        derived: dict[str, Any] = {"window_seconds": round(seconds)}
        _rates(kind, derived, sums, rate_seconds)
        out.update({f: v for f, v in derived.items() if f in evidence})  # a field the evidence states, no other
    if labels:
        out["sub_periods"] = dict(sorted(labels.items()))
    return out


def _rates(kind: str, out: dict[str, Any], sums: Mapping[str, float], seconds: float) -> None:
    """The shares and rates of the period's sums."""
    if kind == "hot_key":
        base = _number(sums.get("key_requests"))
        if base and _number(sums.get("requests")) is not None:
            out["share"] = round(min(1.0, float(sums["requests"]) / base), 4)
        for f in ("reads", "writes"):
            if _number(sums.get(f)) is not None:
                out[f"{f}_per_second"] = round(float(sums[f]) / seconds, 3)
    elif kind == "low_cardinality_key" and _number(sums.get("requests")) is not None:
        out["requests_per_second"] = round(float(sums["requests"]) / seconds, 3)
    elif kind == "scan" and _number(sums.get("count")) is not None:
        count = float(sums["count"])
        out["per_hour"] = round(count * HOUR / seconds, 3)
        out["mean_interval_seconds"] = round(seconds / count, 3) if count else None
        if "inferred_scans" in sums:
            out["grouping"] = "inferred_from_time" if sums["inferred_scans"] else "logged"


#: Set in a hot key's figures whose ``key_requests`` are its table's (or index's) over every window of the period
#: (:func:`with_period_base`), not only over the windows the key was hot in.
PERIOD_BASE = "period_base"

#: The figures such a base makes the period's (no longer labelled as of the windows it was found in).
_BASED = ("share", "key_requests")


def with_period_base(figures: Figures, key_requests: int) -> Figures:
    """A hot key's ``figures`` with its table's (or index's) key-identified requests over every window of the period:
    its share is then of the period's key-identified requests (docs/contract.md, hot_key ``share``); its own
    requests are still those of the windows it was hot in."""
    return {**figures, "sum": {**figures.get("sum", {}), "key_requests": key_requests}, PERIOD_BASE: True}


#: Set in a hot key's figures whose requests, reads and writes are the key's over every window of the period
#: (:func:`with_period_key`): ``{"uncounted_at_most": n, "windows": m}``, the ``m`` windows that did not list the key
#: (it had fewer requests there than the window's listed keys) holding at most ``n`` more of its requests.
PERIOD_KEY = "period_key"

#: The figures the key's counts make the period's.
_KEYED = ("share", "requests", "reads", "writes", *_SEEN_RATES)

#: How many keys of each partition space an evaluated window keeps with their counts (its heaviest, whatever the
#: detectors found): a hot key's requests over a period are summed from them. A bound of the item, not of the input.
TOP_KEYS = 20

#: A key longer than this written as JSON (bytes, escapes included) is kept as its digest (a key may be up to 2 KB:
#: twenty of them in each of a table's partition spaces would outgrow the stored item).
_KEY_BYTES = 200


def key_id(encoded: str) -> str:
    """The id a window keeps a sketch key under: the key itself, or the digest of a long one (or of one JSON cannot
    write as UTF-8: a lone surrogate)."""
    if _writable(encoded, _KEY_BYTES):
        return encoded
    return "\x1fsha256:" + hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _writable(text: str, limit: int) -> bool:
    """Whether ``text`` can be written as UTF-8 and is at most ``limit`` bytes as ASCII JSON (a bound of its UTF-8
    JSON's bytes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return len(json.dumps(text)) <= limit


@dataclass(frozen=True, slots=True)
class SpaceKeys:
    """One partition space's keys in one window: its key-identified requests, its :data:`TOP_KEYS` heaviest keys
    (id -> requests, writes) and ``below``: an unlisted key had at most that many requests there (0: none)."""

    requests: int
    top: Mapping[str, tuple[int, int]]
    below: int

    def to_json(self) -> list[Any]:
        """``[requests, below, [[id, requests, writes], ...]]``."""
        return [self.requests, self.below, [[k, r, w] for k, (r, w) in self.top.items()]]

    @classmethod
    def from_json(cls, doc: list[Any]) -> SpaceKeys:
        """The inverse of :meth:`to_json`."""
        requests, below, rows = doc
        return cls(int(requests), {str(k): (int(r), int(w)) for k, r, w in rows}, int(below))


@dataclass(frozen=True, slots=True)
class KeyCount:
    """A key's requests and writes in the windows of a period it was not found in, and at most how many more of its
    requests the ``windows`` that did not list it held."""

    requests: int
    writes: int
    uncounted_at_most: int
    windows: int


@dataclass(slots=True)
class PeriodKeys:
    """A table's keys over the evaluated windows of a period, each window once: its key-identified requests by
    partition space (``""`` the table's, else an index's name) and each window's :class:`SpaceKeys` with the
    finding ids sighted there (``None``: a window kept before its keys were)."""

    bases: dict[str, int] = field(default_factory=dict)
    windows: list[tuple[Mapping[str, SpaceKeys] | None, frozenset[str]]] = field(default_factory=list)

    def add(self, requests: Mapping[str, int], spaces: Mapping[str, SpaceKeys] | None, sighted: Iterable[str]) -> None:
        """One window: its key-identified requests by space, its keys and the finding ids it sighted."""
        for space, n in requests.items():
            self.bases[space] = self.bases.get(space, 0) + int(n)
        self.windows.append((spaces, frozenset(sighted)))

    def extend(self, other: PeriodKeys) -> None:
        """Another period's windows (none of them among these)."""
        for space, n in other.bases.items():
            self.bases[space] = self.bases.get(space, 0) + n
        self.windows.extend(other.windows)

    def key_count(self, space: str, key: str, finding_id: str) -> KeyCount | None:
        """Key ``key`` (a :func:`key_id`) of ``space`` in the windows that did not sight ``finding_id`` (its own
        sightings count the others); None when a window's keys are unknown."""
        requests = writes = below = short = 0
        for spaces, sighted in self.windows:
            if finding_id in sighted:
                continue
            if spaces is None:
                return None
            keys = spaces.get(space)
            if keys is None:  # no key-identified request in that space
                continue
            got = keys.top.get(key)
            if got is not None:
                requests, writes = requests + got[0], writes + got[1]
            elif keys.below:
                below, short = below + keys.below, short + 1
        return KeyCount(requests, writes, below, short)


def with_period_key(figures: Figures, count: KeyCount) -> Figures:
    """A hot key's ``figures`` (of the windows it was found in) with its ``count`` in the period's other windows:
    its requests, reads and writes are then the period's (a lower bound when some window did not list the key)."""
    sums = dict(figures.get("sum", {}))
    added = {"requests": count.requests, "writes": count.writes, "reads": count.requests - count.writes}
    for f, n in added.items():
        if _number(sums.get(f)) is not None:
            sums[f] = _add(sums[f], n)
    bound = {"uncounted_at_most": count.uncounted_at_most, "windows": count.windows}
    return {**figures, "sum": sums, PERIOD_KEY: bound}


def same_window_figures(parts: list[Figures | None]) -> Figures | None:
    """The figures of several findings of one source in the same window (a throttling story's causes): their counts
    add; what they all describe alike (the window's throttled keys, its error codes) is the first one's."""
    if not parts or any(p is None for p in parts):
        return None
    first = dict(parts[0] or {})
    for p in parts[1:]:
        first["sum"] = _added(first.get("sum", {}), (p or {}).get("sum", {}))
        if "by" in first or "by" in (p or {}):
            first["by"] = _by(first, p or {})
    return first

"""The hot-partition what-if: at which traffic multiple each key, index and table reaches a DynamoDB limit.

Pure functions of aggregates and capacity records (no boto3, no clock). A resource's *headroom* is
``limit per second / peak per second``; at a growth ``G`` it throttles when ``headroom <= G``. The limits (partition,
provisioned, auto scaling, on-demand, per-table and account quotas) and what the numbers mean are in
docs/commands/what-if.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from auditor.kernel.aggregates.bounds import OTHER
from auditor.kernel.aggregates.failures import FROM_MESSAGE
from auditor.kernel.aggregates.index_writes import gsi_provisioned, gsi_throttles, index_writes
from auditor.kernel.aggregates.keys import decode_key, key_index
from auditor.kernel.aggregates.window import TableWindow
from auditor.models.base import FrozenModel
from auditor.models.capacity import Headroom, reconcile, unit_costs

__all__ = [
    "LIMIT_NAMES",
    "MIN_PEAK_SECOND_REQUESTS",
    "KeyPeak",
    "LimitItem",
    "PartitionCapacity",
    "PeakOf",
    "ResourceCapacity",
    "WhatIfConfig",
    "WhatIfResult",
    "capacity_limits",
    "contributor_insights_limits",
    "headroom_sentence",
    "index_limits_from_trail",
    "key_limits",
    "key_peak",
    "key_peaks",
    "table_is_provisioned",
    "table_limits_from_trail",
    "throttle_tally",
    "throttled_access",
    "throttled_keys",
    "trail_notes",
    "what_if",
]

Access = Literal["read", "write"]
ACCESSES: tuple[Access, Access] = ("read", "write")

#: Every ``limit`` value an item can carry.
LIMIT_NAMES = (
    "partition_read",
    "partition_write",
    "partition",
    "provisioned",
    "autoscaling_max",
    "on_demand_max",
    "on_demand_doubling",
    "table_max",
    "account_quota",
)


class WhatIfConfig(FrozenModel):
    """The limits (defaults: AWS's documented defaults; raise them to your account's adjusted quotas)."""

    partition_read_units: float = Field(default=3000.0, gt=0)
    partition_write_units: float = Field(default=1000.0, gt=0)
    table_quota_read_units: float = Field(default=40_000.0, gt=0)
    table_quota_write_units: float = Field(default=40_000.0, gt=0)
    account_quota_read_units: float = Field(default=80_000.0, gt=0)
    account_quota_write_units: float = Field(default=80_000.0, gt=0)
    #: What a new on-demand table serves at once (when DescribeTable reports no warm throughput).
    on_demand_initial_read_units: float = Field(default=12_000.0, gt=0)
    on_demand_initial_write_units: float = Field(default=4_000.0, gt=0)
    #: Keys listed per table (the closest to their partition's limit).
    max_keys_per_table: int = Field(default=10, ge=1, le=1000)

    @classmethod
    def of_partition_settings(cls, settings: BaseModel) -> WhatIfConfig:
        """The partition limits of detector settings (``partition_read_units_per_second``,
        ``partition_write_units_per_second`` of ``hot_key``), given only where the settings set them: a limit the
        configuration does not set stays AWS's default (``limit_source`` ``default``, as the ``hot_key`` finding
        says), never ``config``."""
        given = settings.model_fields_set
        names = {f"partition_{a}_units": f"partition_{a}_units_per_second" for a in ACCESSES}
        return cls(**{mine: getattr(settings, theirs) for mine, theirs in names.items() if theirs in given})

    def partition_units(self, access: Access) -> float:
        return self.partition_read_units if access == "read" else self.partition_write_units

    def table_quota(self, access: Access) -> float:
        return self.table_quota_read_units if access == "read" else self.table_quota_write_units

    def account_quota(self, access: Access) -> float:
        return self.account_quota_read_units if access == "read" else self.account_quota_write_units

    def on_demand_initial(self, access: Access) -> float:
        return self.on_demand_initial_read_units if access == "read" else self.on_demand_initial_write_units

    def source(self, limit: str, access: Access) -> str:
        """Where this configuration's ``limit`` (``partition``, ``table_quota``, ``account_quota``) of ``access``
        comes from: ``config`` when it was given, else ``default`` (AWS's documented value)."""
        return "config" if f"{limit}_{access}_units" in self.model_fields_set else "default"


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: A key's busiest second is its peak only when it holds at least this many requests (a handful of calls in one
#: second is no rate); the hot-key detector's ``min_peak_second_requests`` default.
MIN_PEAK_SECOND_REQUESTS = 50
BUSIEST_SECOND = "busiest second"
BUSIEST_MINUTE = "busiest minute"


@dataclass(frozen=True, slots=True)
class KeyPeak:
    """A key's peak reads and writes per second, each over the period that gave it (:func:`key_peak`)."""

    reads: float = 0.0
    writes: float = 0.0
    #: ``busiest second`` or ``busiest minute`` (its average).
    reads_over: str = BUSIEST_MINUTE
    writes_over: str = BUSIEST_MINUTE
    #: Start of that period (epoch seconds; 0 when unknown).
    reads_at: int = 0
    writes_at: int = 0

    @property
    def label(self) -> str:
        """Where the peak was measured: ``busiest second``, or ``reads: busiest minute, writes: busiest second``."""
        if not self.reads or self.reads_over == self.writes_over:
            return self.writes_over if self.writes else self.reads_over
        if not self.writes:
            return self.reads_over
        return f"reads: {self.reads_over}, writes: {self.writes_over}"


def _busier(minute_count: int, second_count: int, min_second_requests: int) -> tuple[float, bool]:
    """(requests per second, True when the busiest second gave it)."""
    if second_count >= min_second_requests and second_count > minute_count / 60:
        return float(second_count), True
    return minute_count / 60, False


def key_peak(
    minute: tuple[int, int, int, int] | None,
    second: tuple[int, int, int, int] | None,
    min_second_requests: int = MIN_PEAK_SECOND_REQUESTS,
) -> KeyPeak:
    """The one definition of a key's peak, read by the ``hot_key`` finding and ``what-if`` alike: per access, its
    busiest minute's average, or its busiest second when that is busier and holds at least
    ``min_second_requests`` requests. ``minute`` and ``second`` are the key's (reads, their start, writes, their
    start) of :meth:`TableWindow.minute_peaks` and :meth:`TableWindow.second_peaks`."""
    m_reads, m_reads_at, m_writes, m_writes_at = minute or (0, 0, 0, 0)
    s_reads, s_reads_at, s_writes, s_writes_at = second or (0, 0, 0, 0)
    reads, reads_second = _busier(m_reads, s_reads, min_second_requests)
    writes, writes_second = _busier(m_writes, s_writes, min_second_requests)
    return KeyPeak(
        reads,
        writes,
        BUSIEST_SECOND if reads_second else BUSIEST_MINUTE,
        BUSIEST_SECOND if writes_second else BUSIEST_MINUTE,
        s_reads_at if reads_second else m_reads_at,
        s_writes_at if writes_second else m_writes_at,
    )


def key_peaks(agg: TableWindow, min_second_requests: int = MIN_PEAK_SECOND_REQUESTS) -> dict[str, KeyPeak]:
    """:func:`key_peak` of every key the aggregate's minute sketches hold."""
    seconds = agg.second_peaks()
    return {
        encoded: key_peak(minute, seconds.get(encoded), min_second_requests)
        for encoded, minute in agg.minute_peaks().items()
    }


@dataclass(frozen=True, slots=True)
class LimitItem:
    """One key, index or table with the limit it reaches first and at which traffic multiple."""

    table: str
    index: str | None
    key: dict[str, Any] | None
    limit: str
    #: ``read``, ``write``, or None when the limit combines both (a partition seen by Contributor Insights).
    access: Access | None
    #: Today's peak, in units per second of the limit's kind.
    peak_per_second: float
    limit_per_second: float
    #: ``cloudtrail``, ``cloudwatch`` or ``contributor_insights``.
    source: str
    account: str | None = None
    region: str | None = None
    #: Start of the period in which the peak was seen (ISO-8601 UTC), when known.
    peak_at: str | None = None
    #: Calls on the resource the trail saw throttled (for a table: by its capacity, not by a hot key).
    throttled: int = 0
    #: Where the item size behind the peak comes from (None: the 1 KB / 4 KB default, an assumption).
    item_size_source: str | None = None
    #: True on a provisioned table, False on an on-demand one, None when unknown.
    provisioned: bool | None = None
    #: The period the peak was measured over (a key's: :attr:`KeyPeak.label`; a table's: ``busiest minute``).
    peak_window: str | None = None
    #: Where the limit comes from (``provisioned``, ``application_autoscaling``, ``service_quotas``, ``default``...).
    limit_source: str | None = None

    @property
    def model(self) -> Headroom:
        """The headroom of :func:`auditor.models.capacity.reconcile`: limit over peak, at most 1 when throttled."""
        return reconcile(
            self.limit_per_second,
            self.peak_per_second,
            self.throttled,
            resource="key" if self.key else "index" if self.index else "table",
            item_size_source=self.item_size_source if self.source == "cloudtrail" else "cloudwatch",
            provisioned=self.provisioned,
        )

    @property
    def headroom(self) -> float:
        """The traffic multiple at which this resource reaches its limit (at most 1 when it throttles now)."""
        h = self.model.value
        return h if h is not None else self.limit_per_second / self.peak_per_second

    def throttles_at(self, growth: float) -> bool:
        return self.headroom <= growth

    def sort_key(self) -> tuple[float, int, str, str, str, str, str]:
        return (
            self.headroom,
            -self.throttled,
            self.table,
            self.index or "",
            str(sorted(self.key.items())) if self.key else "",
            self.limit,
            self.access or "",
        )

    def to_dict(self, growth: float) -> dict[str, Any]:
        """The contract's item (docs/contract.md ``what-if``), with the peak, the limit and where they come from."""
        return {
            "table": self.table,
            "index": self.index,
            "key": self.key,
            "limit": self.limit,
            "headroom": round(self.headroom, 3),
            "throttles_at_growth": self.throttles_at(growth),
            "access": self.access,
            "peak_per_second": round(self.peak_per_second, 3),
            "limit_per_second": round(self.limit_per_second, 3),
            "peak_at": self.peak_at,
            "peak_window": self.peak_window,
            "limit_source": self.limit_source,
            "source": self.source,
            "account": self.account,
            "region": self.region,
            **self._reconciled(),
        }

    def _reconciled(self) -> dict[str, Any]:
        """What the headroom rests on: the throttles observed, the assumption they contradict, the item size."""
        model = self.model
        return {
            "throttled_calls": self.throttled,
            "throttles_now": model.throttles_now,
            "assumed_utilisation": round(1 / model.assumed, 4) if model.assumed else None,
            "contradicted_assumption": model.contradicted,
            "to_confirm": model.confirm,
            "item_size_source": (self.item_size_source or "default") if self.source == "cloudtrail" else None,
        }


def headroom_sentence(headroom: float | None) -> str:
    """The sentence findings carry: `` Headroom 1.8x: throttles at 1.8 times today's peak.`` (empty when unknown)."""
    if headroom is None:
        return ""
    return f" Headroom {headroom:.1f}x: throttles at {headroom:.1f} times today's peak."


@dataclass(frozen=True, slots=True)
class PartitionCapacity:
    """What one partition delivers to a key, in read and write units per second, as the evidence leaves it: the
    documented (or configured) limits, or, for a key throttled at a peak below them, those limits scaled down until
    that peak used all of it (the capacity at which :func:`~auditor.models.capacity.reconcile` puts its headroom at
    1.0: the rate it throttled at bounds what its partition delivered). A key is measured against the nearer of the
    two limits, as ``hot_key`` and :func:`key_limits` measure it; its shards are sized against the same capacity."""

    read: float
    write: float
    #: True when the throttling observed scaled the documented limits down (the assumption they rest on failed).
    observed: bool = False

    @classmethod
    def of(
        cls, read_units: float, write_units: float, read_limit: float, write_limit: float, throttled: int = 0
    ) -> PartitionCapacity:
        """The capacity of a key whose peak is ``read_units`` and ``write_units`` per second, on which ``throttled``
        calls were observed, against one partition's ``read_limit`` and ``write_limit``."""
        used = max(read_units / read_limit, write_units / write_limit)
        model = reconcile(1.0, used or None, throttled)
        if model.value is None or model.assumed is None or model.assumed <= model.value:
            return cls(read_limit, write_limit)
        scale = model.value / model.assumed
        return cls(read_limit * scale, write_limit * scale, observed=True)

    def headroom(self, read_units: float, write_units: float) -> float | None:
        """The traffic multiple of this peak the partition serves: the nearer of its read and write limits."""
        used = max(read_units / self.read, write_units / self.write)
        return 1.0 / used if used > 0 else None

    def shards(self, read_units: float, write_units: float, utilisation: float = 0.5) -> int:
        """Write shards (at least 2) that keep each at most ``utilisation`` of this capacity at this peak."""
        used = max(read_units / self.read, write_units / self.write)
        return max(2, math.ceil(round(used / utilisation, 9)))


def _partition_item(
    agg: TableWindow,
    key: dict[str, Any],
    peak: KeyPeak,
    units: tuple[float, float],
    cfg: WhatIfConfig,
    throttled: int,
    throttled_access: Access | None = None,
    index: str | None = None,
) -> LimitItem | None:
    """A key's partition limit from its :func:`key_peak` weighed in units: the nearer of its read and write limits,
    as the ``hot_key`` finding measures it (the two peaks may be in different periods). A throttled key's limit is
    the direction its throttled calls took (``throttled_access``, when they all took one), and it is listed even
    without a peak (every call on it throttled). None without traffic."""
    used = {"read": peak.reads * units[0], "write": peak.writes * units[1]}
    if not any(used.values()) and not throttled:
        return None
    access: Access = max(ACCESSES, key=lambda a: (used[a] / cfg.partition_units(a), a == "write"))
    if throttled_access is not None:
        access = throttled_access
    limit = cfg.partition_units(access)
    at = peak.writes_at if access == "write" else peak.reads_at
    return LimitItem(
        table=agg.table,
        index=index,
        key=key,
        limit=f"partition_{access}",
        access=access,
        peak_per_second=used[access],
        limit_per_second=limit,
        source="cloudtrail",
        account=agg.account,
        region=agg.region,
        peak_at=_iso(at) if at else None,
        throttled=throttled,
        item_size_source=agg.item_size_source if agg.item_size_bytes else None,
        provisioned=table_is_provisioned(agg),
        peak_window=peak.label,
        limit_source=cfg.source("partition", access),
    )


def throttled_keys(agg: TableWindow) -> dict[str, int]:
    """The throttled calls the aggregate names a key for, by encoded key (calls on keys it did not keep, past its
    bound, are under :data:`~auditor.kernel.aggregates.bounds.OTHER`, not here)."""
    return {k: n for k, n in agg.throttle_keys.items() if k != OTHER}


def throttled_access(agg: TableWindow) -> Access | None:
    """The direction the table's keys were throttled in: ``read`` or ``write`` when every throttled call on the
    table's keys (not an index's back-pressure) was one, else None (both: each key's busier direction stands)."""
    calls = dict.fromkeys(ACCESSES, 0)
    for (cause, access, index), n in agg.throttles.items():
        if not index and not cause.endswith("gsi_backpressure") and access in calls:
            calls[access] += n
    found = [a for a in ACCESSES if calls[a]]
    return found[0] if len(found) == 1 else None


#: A key's peak as the detectors measure it (``auditor.whatif.key_rates.finding_peaks``): the aggregate, the encoded
#: key.
PeakOf = Callable[[TableWindow, str], KeyPeak]


def key_limits(
    agg: TableWindow,
    cfg: WhatIfConfig | None = None,
    min_second_requests: int = MIN_PEAK_SECOND_REQUESTS,
    peak_of: PeakOf | None = None,
) -> list[LimitItem]:
    """The partition limit of every throttled key and of the other keys closest to it, from the per-minute and
    per-second key counts of a CloudTrail aggregate.

    Each key's peak is :func:`key_peak` (its busiest minute's average, or its busiest second when busier), the same
    number the ``hot_key`` finding shows (counts are lower bounds of the true counts, see
    :class:`~auditor.kernel.aggregates.sketch.HeavyHitters`). Requests are weighed in units at the table's item size
    (:func:`~auditor.models.capacity.unit_costs`, as the hot-key detector does); a key the trail saw throttled
    throttles now (:func:`~auditor.models.capacity.reconcile`) at the limit of the direction its calls were
    throttled in (:func:`throttled_access`), and every one is listed, first; ``max_keys_per_table`` bounds only the
    others. ``min_second_requests``: the requests a busiest second needs to be a key's peak (:func:`key_peak`).
    ``peak_of``: each listed key's peak as the ``hot_key`` and ``low_cardinality_key`` findings measure it, so the
    what-if states their headroom (the ranking stays :func:`key_peaks`').
    """
    cfg = cfg or WhatIfConfig()
    units = unit_costs(agg.item_size_bytes, agg.key_reads, agg.key_reads_eventual)
    r_unit, w_unit = cfg.partition_read_units / units[0], cfg.partition_write_units / units[1]
    peaks = key_peaks(agg, min_second_requests)
    throttled = throttled_keys(agg)

    def pressure(kv: tuple[str, KeyPeak]) -> tuple[float, str]:
        return (-max(kv[1].reads / r_unit, kv[1].writes / w_unit), kv[0])

    calm = sorted(((k, p) for k, p in peaks.items() if k not in throttled), key=pressure)[: cfg.max_keys_per_table]
    listed = [(k, peaks.get(k, KeyPeak())) for k in sorted(throttled)] + calm
    if peak_of is not None:
        listed = [(k, peak_of(agg, k)) for k, _ in listed]
    direction = throttled_access(agg)
    items = []
    for encoded, peak in listed:
        n = throttled.get(encoded, 0)
        index = key_index(encoded)
        costs = units if index is None else space_units(agg, index)
        item = _partition_item(agg, decode_key(encoded), peak, costs, cfg, n, direction if n else None, index)
        if item is not None:
            items.append(item)
    return items


def space_units(agg: TableWindow, index: str) -> tuple[float, float]:
    """The unit costs of a read and a write in ``index``'s partition space: its own share of reads logged eventually
    consistent, never the table's (an index is its own partition space), at the table's item size (as the
    ``hot_key`` detector weighs an index's keys)."""
    space = agg.index_keys.get(index)
    reads, eventual = (space.counts[1], space.counts[2]) if space is not None else (0, 0)
    return unit_costs(agg.item_size_bytes, reads, eventual)


def table_limits_from_trail(agg: TableWindow, cfg: WhatIfConfig | None = None) -> list[LimitItem]:
    """The per-table quota against the table's busiest minute of key-identified requests in CloudTrail.

    Used when no CloudWatch capacity is given for the table. Requests without a key (Scan, full-scan PartiQL) are not
    in the per-minute counts, and requests count in units at the table's item size, so the peak is a lower bound.
    A table the trail shows provisioned (its throttles carry the provisioned-capacity message) is measured against
    its provisioned capacity, which the trail does not give: it is listed only when calls were throttled for its
    capacity (it throttles now), and :func:`trail_notes` asks for ``--audit``; never against the on-demand maximum.
    """
    cfg = cfg or WhatIfConfig()
    peaks: dict[Access, tuple[int, int]] = {}
    for minute, (m_all, m_writes) in agg.minutes.items():
        for access, n in _by_access(m_all.total - m_writes.total, m_writes.total):
            prev = peaks.get(access)
            if n > 0 and (prev is None or n > prev[1] or (n == prev[1] and minute < prev[0])):
                peaks[access] = (minute, n)
    units = dict(zip(ACCESSES, unit_costs(agg.item_size_bytes, agg.key_reads, agg.key_reads_eventual), strict=True))
    provisioned = table_is_provisioned(agg)
    items = []
    for access, (minute, n) in sorted(peaks.items()):
        throttled = _capacity_throttles(agg, access)
        if provisioned and not throttled:
            continue
        peak = n * units[access] / 60
        items.append(
            LimitItem(
                table=agg.table,
                index=None,
                key=None,
                limit="provisioned" if provisioned else "table_max",
                access=access,
                peak_per_second=peak,
                # a provisioned table throttled for its capacity had at most its peak
                limit_per_second=peak if provisioned else cfg.table_quota(access),
                limit_source="observed_throttling" if provisioned else cfg.source("table_quota", access),
                source="cloudtrail",
                account=agg.account,
                region=agg.region,
                peak_at=_iso(minute * 60),
                throttled=throttled,
                item_size_source=agg.item_size_source if agg.item_size_bytes else None,
                provisioned=provisioned,
                peak_window=BUSIEST_MINUTE,
            )
        )
    return items


def _causes(agg: TableWindow, access: Access | None = None) -> list[tuple[str, int]]:
    """The table's own throttle causes (not its indexes'), without the message marker, with their counts."""
    return [
        (cause.removeprefix(FROM_MESSAGE), n)
        for (cause, acc, index), n in agg.throttles.items()
        if not index and (access is None or acc == access)
    ]


def table_is_provisioned(agg: TableWindow) -> bool | None:
    """What the trail's throttle messages say of the table's capacity mode (None: no throttle says it)."""
    causes = {c for c, _ in _causes(agg)}
    if any(c.startswith("provisioned") for c in causes):
        return True
    if any(c.startswith("on_demand") for c in causes):
        return False
    return gsi_provisioned(agg)  # the billing mode is the table's: its indexes' GSI messages say it too


def _capacity_throttles(agg: TableWindow, access: Access) -> int:
    """Calls throttled for the table's capacity (provisioned or on-demand maximum), not for a hot key."""
    return sum(n for c, n in _causes(agg, access) if c in ("provisioned", "on_demand_max"))


def index_limits_from_trail(agg: TableWindow, cfg: WhatIfConfig | None = None) -> list[LimitItem]:
    """Each global secondary index's writes, metered from the table's writes (write amplification,
    :func:`~auditor.kernel.aggregates.index_writes.index_writes`), at its busiest minute: an index whose
    back-pressure throttled the table's writes throttles now; another is measured against the per-table quota, or
    not at all when the GSI messages say it is provisioned (its capacity is not in the trail)."""
    cfg = cfg or WhatIfConfig()
    writes = index_writes(agg)
    throttled = gsi_throttles(agg, writes)
    provisioned = table_is_provisioned(agg)
    unit = unit_costs(agg.item_size_bytes)[1]
    items = []
    for found in writes:
        n = throttled.get(found.index, 0)
        if not found.peak_writes or (provisioned and not n) or found.peak_minute is None:
            continue
        peak = found.peak_writes * unit / 60
        items.append(
            LimitItem(
                table=agg.table,
                index=found.index,
                key=None,
                limit="provisioned" if provisioned else "table_max",
                access="write",
                peak_per_second=peak,
                # a provisioned index throttled for its capacity had at most its peak
                limit_per_second=peak if provisioned else cfg.table_quota("write"),
                source="cloudtrail",
                account=agg.account,
                region=agg.region,
                peak_at=_iso(found.peak_minute),
                throttled=n,
                item_size_source=agg.item_size_source if agg.item_size_bytes else None,
                provisioned=provisioned,
            )
        )
    return items


def trail_notes(spans: Sequence[TableWindow], capacity: Sequence[ResourceCapacity] = ()) -> list[str]:
    """What the trail-only what-if cannot measure: provisioned tables without CloudWatch capacity, and tables whose
    item size is the 1 KB / 4 KB default assumption."""
    notes = []
    for agg in spans:
        if any(_same_table(c, agg) for c in capacity):
            continue
        if table_is_provisioned(agg):
            notes.append(
                f"{agg.table} is provisioned: its capacity is not in the trail, so its table limit is not measured "
                "(pass --audit with the audit's CloudWatch capacity)."
            )
    notes += [_throttled_note(throttle_tally(agg)) for agg in spans if agg.throttle_keys]
    if any(not agg.item_size_bytes for agg in spans):
        names = ", ".join(sorted({agg.table for agg in spans if not agg.item_size_bytes})[:5])
        notes.append(
            f"Item sizes of {names} are the default assumption (1 KB written, 4 KB read): set item_size_bytes in "
            "--config."
        )
    return notes


def throttle_tally(agg: TableWindow) -> dict[str, Any]:
    """How many keys of the table throttled in all: the keys the aggregate names (each one listed) with their calls,
    and the throttled calls on keys past its bound (``calls_on_unkept_keys``: each may be another key)."""
    named = throttled_keys(agg)
    return {
        "table": agg.table,
        "account": agg.account,
        "region": agg.region,
        "keys": len(named),
        "calls": sum(named.values()),
        "calls_on_unkept_keys": agg.throttle_keys.get(OTHER, 0),
    }


def _throttled_note(tally: dict[str, Any]) -> str:
    text = f"{tally['table']}: {tally['keys']:,} keys throttled ({tally['calls']:,} calls), each listed"
    unkept = tally["calls_on_unkept_keys"]
    if unkept:
        text += (
            f"; {unkept:,} more throttled calls fell on keys the trail's summary did not keep (up to {unkept:,} "
            "more keys)"
        )
    return text + "."


def _by_access(reads: int, writes: int) -> tuple[tuple[Access, int], tuple[Access, int]]:
    return (("read", reads), ("write", writes))


@dataclass(frozen=True, slots=True)
class ResourceCapacity:
    """A table or GSI as CloudWatch and the inventory saw it: peak consumption and capacity settings."""

    table: str
    index: str | None
    billing_mode: str
    #: Peak consumed units per second (the largest period ``Sum`` divided by the period), 0 without traffic.
    peak_read: float
    peak_write: float
    period_seconds: int = 60
    account: str | None = None
    region: str | None = None
    peak_read_at: str | None = None
    peak_write_at: str | None = None
    provisioned_read: int = 0
    provisioned_write: int = 0
    autoscaling_max_read: int | None = None
    autoscaling_max_write: int | None = None
    on_demand_max_read: int | None = None
    on_demand_max_write: int | None = None
    warm_read: int | None = None
    warm_write: int | None = None
    #: The account's per-table and account quotas (Service Quotas), None where not read (``WhatIfConfig``'s apply).
    table_max_read: float | None = None
    table_max_write: float | None = None
    account_max_read: float | None = None
    account_max_write: float | None = None

    def peak(self, access: Access) -> float:
        return self.peak_read if access == "read" else self.peak_write

    def peak_at(self, access: Access) -> str | None:
        return self.peak_read_at if access == "read" else self.peak_write_at

    def provisioned(self, access: Access) -> int:
        return self.provisioned_read if access == "read" else self.provisioned_write

    def autoscaling_max(self, access: Access) -> int | None:
        return self.autoscaling_max_read if access == "read" else self.autoscaling_max_write

    def on_demand_max(self, access: Access) -> int | None:
        value = self.on_demand_max_read if access == "read" else self.on_demand_max_write
        return value if value is not None and value > 0 else None

    def warm(self, access: Access) -> int | None:
        return self.warm_read if access == "read" else self.warm_write

    def table_max(self, access: Access) -> float | None:
        return self.table_max_read if access == "read" else self.table_max_write

    def account_max(self, access: Access) -> float | None:
        return self.account_max_read if access == "read" else self.account_max_write

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "billing_mode": self.billing_mode,
            "period_seconds": self.period_seconds,
            "peak_read_per_second": round(self.peak_read, 3),
            "peak_write_per_second": round(self.peak_write, 3),
            "peak_read_at": self.peak_read_at,
            "peak_write_at": self.peak_write_at,
            "provisioned_read": self.provisioned_read,
            "provisioned_write": self.provisioned_write,
            "autoscaling_max_read": self.autoscaling_max_read,
            "autoscaling_max_write": self.autoscaling_max_write,
            "on_demand_max_read": self.on_demand_max_read,
            "on_demand_max_write": self.on_demand_max_write,
            "warm_read": self.warm_read,
            "warm_write": self.warm_write,
            "table_max_read": self.table_max_read,
            "table_max_write": self.table_max_write,
            "account_max_read": self.account_max_read,
            "account_max_write": self.account_max_write,
        }


#: Where each CloudWatch-side limit comes from (``limit_source``): the table's description (DescribeTable), the
#: scalable target (Application Auto Scaling's DescribeScalableTargets), the peak CloudWatch measured.
_LIMIT_SOURCES = {
    "provisioned": "describe_table",
    "autoscaling_max": "application_autoscaling",
    "on_demand_max": "describe_table",
    "on_demand_doubling": "observed_peak",
}


def _quota(given: float | None, cfg: WhatIfConfig, limit: str, access: Access) -> tuple[float, str]:
    """(the quota, ``service_quotas``) where the account's value was read, else the configuration's ``limit`` (the
    documented default unless given) with its source."""
    if given:
        return float(given), "service_quotas"
    value = cfg.table_quota(access) if limit == "table_quota" else cfg.account_quota(access)
    return value, cfg.source(limit, access)


def _capacity_item(
    res: ResourceCapacity, limit: str, access: Access, limit_units: float, source: str | None = None
) -> LimitItem:
    return LimitItem(
        table=res.table,
        index=res.index,
        key=None,
        limit=limit,
        access=access,
        peak_per_second=res.peak(access),
        limit_per_second=limit_units,
        source="cloudwatch",
        account=res.account,
        region=res.region,
        peak_at=res.peak_at(access),
        limit_source=source or _LIMIT_SOURCES.get(limit),
    )


def capacity_limits(resources: Iterable[ResourceCapacity], cfg: WhatIfConfig | None = None) -> list[LimitItem]:
    """Table, GSI and account limits against the peak consumed capacity CloudWatch reported; each item says where
    its limit comes from (``limit_source``): the account's quotas where Service Quotas gave them, else the
    configuration's (the documented defaults)."""
    cfg = cfg or WhatIfConfig()
    items: list[LimitItem] = []
    account_peaks: dict[tuple[str | None, str | None, Access], float] = {}
    account_quotas: dict[tuple[str | None, str | None, Access], tuple[float, str]] = {}
    for res in resources:
        for acc in ACCESSES:
            peak = res.peak(acc)
            if peak <= 0:
                continue
            if res.billing_mode == "PROVISIONED":
                scaling_max = res.autoscaling_max(acc)
                if scaling_max:
                    items.append(_capacity_item(res, "autoscaling_max", acc, float(scaling_max)))
                elif res.provisioned(acc) > 0:
                    items.append(_capacity_item(res, "provisioned", acc, float(res.provisioned(acc))))
                slot = (res.account, res.region, acc)
                account_peaks[slot] = account_peaks.get(slot, 0.0) + peak
                account_quotas.setdefault(slot, _quota(res.account_max(acc), cfg, "account_quota", acc))
            elif res.billing_mode == "PAY_PER_REQUEST":
                on_demand_max = res.on_demand_max(acc)
                if on_demand_max:
                    items.append(_capacity_item(res, "on_demand_max", acc, float(on_demand_max)))
                instant = max(2.0 * peak, float(res.warm(acc) or cfg.on_demand_initial(acc)))
                source = "observed_peak" if instant == 2.0 * peak else "describe_table" if res.warm(acc) else "default"
                items.append(_capacity_item(res, "on_demand_doubling", acc, instant, source))
            items.append(_capacity_item(res, "table_max", acc, *_quota(res.table_max(acc), cfg, "table_quota", acc)))
    for (account, region, acc), peak in sorted(account_peaks.items(), key=lambda kv: (str(kv[0]), kv[1])):
        items.append(
            LimitItem(
                table="*",
                index=None,
                key=None,
                limit="account_quota",
                access=acc,
                peak_per_second=peak,
                limit_per_second=account_quotas[(account, region, acc)][0],
                source="cloudwatch",
                account=account,
                region=region,
                limit_source=account_quotas[(account, region, acc)][1],
            )
        )
    return items


def contributor_insights_limits(findings: Iterable[dict[str, Any]]) -> list[LimitItem]:
    """Partition limits of the keys Contributor Insights reported (``hot_key`` findings from ``ddb-audit audit``).

    Their ``headroom_factor`` is the detector's saturation of one partition's combined throughput at the key's peak.
    """
    items = []
    for f in findings:
        ev = f.get("evidence")
        if not isinstance(ev, dict) or f.get("kind") != "hot_key" or ev.get("source") != "contributor_insights":
            continue
        h = ev.get("headroom_factor")
        key = ev.get("key")
        if not isinstance(h, int | float) or isinstance(h, bool) or h <= 0 or not isinstance(key, dict):
            continue
        items.append(
            LimitItem(
                table=str(f.get("table")),
                index=f.get("index") if isinstance(f.get("index"), str) else None,
                key=key,
                limit="partition",
                access=None,
                peak_per_second=1.0 / float(h),
                limit_per_second=1.0,
                source="contributor_insights",
                account=f.get("account") if isinstance(f.get("account"), str) else None,
                region=f.get("region") if isinstance(f.get("region"), str) else None,
            )
        )
    return items


#: Throttling causes that say a table or index ran out of its capacity (not a hot key's partition), and the limits
#: that capacity is.
CAPACITY_CAUSES = {
    "provisioned": ("provisioned", "autoscaling_max"),
    "on_demand_max": ("on_demand_max",),
    # an index whose back-pressure throttled the table's writes ran out of its own capacity
    "gsi_backpressure": ("provisioned", "autoscaling_max", "on_demand_max"),
}


def capacity_throttled(items: Sequence[LimitItem], findings: Iterable[dict[str, Any]]) -> list[LimitItem]:
    """The CloudWatch items with the throttle events the audit's ``throttling`` findings counted for their capacity
    (causes :data:`CAPACITY_CAUSES`, the same table, index and access): such a table or index throttles now
    (:func:`auditor.models.capacity.reconcile`)."""
    events: dict[tuple[str, str | None, str, str], int] = {}
    for f in findings:
        ev = f.get("evidence")
        if f.get("kind") != "throttling" or not isinstance(ev, dict) or ev.get("cause") not in CAPACITY_CAUSES:
            continue
        index = f.get("index") if isinstance(f.get("index"), str) else None
        if index is None and ev["cause"] == "gsi_backpressure":
            continue  # an index's capacity, not the table's: which index is not known
        for access in ACCESSES:
            n = ev.get(f"{access}_throttle_events")
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                for limit in CAPACITY_CAUSES[ev["cause"]]:
                    slot = (str(f.get("table")), index, access, limit)
                    events[slot] = max(events.get(slot, 0), n)
    out = []
    for item in items:
        n = events.get((item.table, item.index, item.access or "", item.limit))
        provisioned = item.limit != "on_demand_max"
        out.append(replace(item, throttled=n, provisioned=provisioned) if n else item)
    return out


def _same_table(res: ResourceCapacity, agg: TableWindow) -> bool:
    """The same table, unless both name their account and the accounts differ."""
    return res.table == agg.table and (res.account is None or agg.account is None or res.account == agg.account)


@dataclass(frozen=True, slots=True)
class WhatIfResult:
    """Every limit found, nearest first, at one growth factor."""

    growth: float
    items: list[LimitItem]
    #: What the input could not measure (provisioned capacity unknown, item sizes assumed), in the text output.
    notes: tuple[str, ...] = ()
    #: Per table with throttled keys, how many throttled in all (:func:`throttle_tally`).
    throttled_keys: tuple[dict[str, Any], ...] = ()

    @property
    def throttling(self) -> list[LimitItem]:
        return [i for i in self.items if i.throttles_at(self.growth)]

    def to_dict(self) -> dict[str, Any]:
        """The ``what-if`` JSON document (docs/contract.md)."""
        doc: dict[str, Any] = {"growth": self.growth, "items": [i.to_dict(self.growth) for i in self.items]}
        if self.throttled_keys:  # only where keys throttled: a trail without throttles keeps the two fields
            doc["throttled_keys"] = list(self.throttled_keys)
        return doc


def what_if(
    spans: Sequence[TableWindow],
    growth: float,
    *,
    capacity: Sequence[ResourceCapacity] = (),
    insight_findings: Sequence[dict[str, Any]] = (),
    config: WhatIfConfig | None = None,
    peak_of: PeakOf | None = None,
) -> WhatIfResult:
    """The limits of every key, index and table, nearest first.

    ``spans`` are CloudTrail aggregates (one per table). Tables with CloudWatch ``capacity`` take their table and
    index limits from it (consumed units are exact); the others from CloudTrail's busiest minute. ``peak_of``: a
    key's peak as the findings measure it (:func:`key_limits`).
    """
    if not growth > 0:
        raise ValueError("growth must be more than 0")
    cfg = config or WhatIfConfig()
    items: list[LimitItem] = []
    for agg in spans:
        items += key_limits(agg, cfg, peak_of=peak_of)
        if not any(_same_table(c, agg) for c in capacity):
            items += table_limits_from_trail(agg, cfg) + index_limits_from_trail(agg, cfg)
    items += capacity_throttled(capacity_limits(capacity, cfg), insight_findings)
    items += contributor_insights_limits(insight_findings)
    items.sort(key=LimitItem.sort_key)
    tallies = tuple(throttle_tally(agg) for agg in spans if agg.throttle_keys)
    return WhatIfResult(float(growth), items, tuple(trail_notes(spans, capacity)), tallies)

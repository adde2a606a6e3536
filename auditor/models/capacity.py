"""One model of a resource's headroom, reconciled with the throttling observed on it (docs/capacity.md).

A key, index or table's headroom on paper is ``limit / metered peak``; the peak rests on assumptions (the item size,
the capacity available, one key per partition). Throttling observed on the resource bounds what was available: a
resource throttled at its peak has no headroom there, whatever the assumptions say. :func:`reconcile` is the only
place that decides it; the hot-key finding, ``what-if``, the report and Slack read its value. :func:`item_size` picks
a table's item size from its sources in their order of trust; :func:`index_write_units` meters what a base-table write
costs a global secondary index (write amplification). Pure: no boto3, no clock, no environment.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "ITEM_SIZE_SOURCES",
    "NAME_SEP",
    "REMOVED_SEP",
    "WRITE_DELETE",
    "WRITE_PUT",
    "WRITE_UPDATE",
    "Headroom",
    "index_write_units",
    "item_size",
    "reconcile",
    "unit_costs",
]

Resource = Literal["key", "table", "index"]

#: The sources of an item size, most trusted first; ``default`` (1 KB written, 4 KB read) is an assumption.
ITEM_SIZE_SOURCES = ("config", "streams", "inventory", "cloudwatch", "default")

#: Item size sources that are measured or given, not assumed (an item larger than assumed is then not the suspect).
_KNOWN_SIZES = ("config", "streams")


@dataclass(frozen=True, slots=True)
class Headroom:
    """A resource's headroom: the traffic multiple at which it throttles, reconciled with what was observed."""

    #: The reconciled headroom (None: no traffic to measure); at most 1.0 when the resource throttled.
    value: float | None
    #: ``limit / metered peak`` from the assumptions alone.
    assumed: float | None
    throttled: int = 0
    #: Which assumption the throttling contradicts (None when it does not contradict any).
    contradicted: str | None = None
    #: What would confirm it.
    confirm: str | None = None

    @property
    def throttles_now(self) -> bool:
        """The resource throttled at today's peak: it throttles at any growth."""
        return self.value is not None and self.value <= 1.0 and self.throttled > 0

    def limit_clause(self) -> str:
        """The share of its limit a key's first sentence states: ``: 24% of the limit (headroom 4.1x).``, or, when
        the throttling contradicts the assumptions, the share they put it at (``: 17% of the limit on the
        assumptions.``)."""
        if self.value and not self.contradicted:
            return f": {1 / self.value:.0%} of the limit (headroom {self.value:.1f}x)."
        return f": {1 / self.assumed:.0%} of the limit on the assumptions." if self.assumed else "."

    def sentence(self) -> str:
        """`` It throttled N times: no headroom at today's peak (...).`` (empty when it did not throttle)."""
        if not self.throttled:
            return ""
        text = f" {self.throttled:,} calls on it were throttled: no headroom at today's peak, it throttles now."
        if self.contradicted and self.assumed:
            text += (
                f" The throttling contradicts the assumptions, which put the peak at {_share(1 / self.assumed)} of "
                f"the limit: {self.contradicted}."
            )
        if self.confirm:
            text += f" To confirm: {self.confirm}."
        return text

    def evidence(self) -> dict[str, object]:
        """The fields a finding's evidence carries (``headroom_factor`` is :attr:`value`)."""
        return {
            "headroom_factor": round(self.value, 2) if self.value is not None else None,
            # as a share of the limit, not a headroom: a throttled resource shows no headroom above 1x anywhere
            "assumed_utilisation": round(1 / self.assumed, 4) if self.assumed else None,
            "throttles_now": self.throttles_now,
            "contradicted_assumption": self.contradicted,
            "to_confirm": self.confirm,
        }


def _share(value: float) -> str:
    """``17%``, or ``under 1%``."""
    return f"{value:.0%}" if value >= 0.01 else "under 1%"


def _suspects(resource: Resource, item_size_source: str | None, provisioned: bool | None) -> tuple[str, str]:
    """(the assumptions the throttling may contradict, what would confirm them), the likeliest first."""
    suspects: list[str] = []
    confirm: list[str] = []
    if item_size_source not in _KNOWN_SIZES:
        where = f"the {item_size_source}'s average" if item_size_source else "the default 1 KB written / 4 KB read"
        suspects.append(f"items larger than assumed ({where})")
        confirm.append("set item_size_bytes in --config, or read the sizes from the table's stream")
    if resource == "key":
        suspects.append("several hot keys sharing one partition")
        confirm.append("Contributor Insights in throttled-keys mode names the throttled keys")
    if provisioned is not False:
        suspects.append("capacity below the peak (provisioned or scaling up)")
        confirm.append("CloudWatch's ThrottledRequests and the consumed against the provisioned capacity")
    return " or ".join(suspects), "; ".join(confirm)


def reconcile(
    limit_per_second: float | None,
    peak_per_second: float | None,
    throttled: int = 0,
    *,
    resource: Resource = "key",
    item_size_source: str | None = None,
    provisioned: bool | None = None,
) -> Headroom:
    """The headroom of a resource whose metered peak is ``peak_per_second`` against ``limit_per_second``, on which
    ``throttled`` calls were observed. Throttled, it is at most 1.0 (it throttles now); when the assumptions put it
    above 1.0 the result names the assumption the evidence contradicts and what would confirm it."""
    assumed = limit_per_second / peak_per_second if limit_per_second and peak_per_second else None
    if throttled <= 0:
        return Headroom(assumed, assumed)
    if assumed is not None and assumed <= 1.0:
        return Headroom(assumed, assumed, throttled)
    contradicted, confirm = _suspects(resource, item_size_source, provisioned)
    return Headroom(1.0, assumed, throttled, contradicted if assumed is not None else None, confirm or None)


def item_size(
    *,
    config: int | None = None,
    streams: int | None = None,
    inventory: int | None = None,
    cloudwatch: int | None = None,
) -> tuple[int | None, str]:
    """A table's typical item size and its source, in the order of :data:`ITEM_SIZE_SOURCES`: the configuration,
    the stream's images (exact), DescribeTable's size over its item count, CloudWatch's consumed units per request;
    else ``(None, "default")``, the 1 KB / 4 KB assumption, to be said wherever it is used."""
    for size, source in (
        (config, "config"),
        (streams, "streams"),
        (inventory, "inventory"),
        (cloudwatch, "cloudwatch"),
    ):
        if size is not None and size > 0:
            return size, source
    return None, "default"


def unit_costs(item_size_bytes: int | None, reads: int = 0, eventual_reads: int = 0) -> tuple[float, float]:
    """(read units per read, write units per write) at ``item_size_bytes`` (1 and 1 when unknown, the default
    assumption): ``ceil(size / 4 KB)`` per strongly consistent read, half for the share of ``reads`` logged
    eventually consistent, and ``ceil(size / 1 KB)`` per write."""
    eventual = eventual_reads / reads if reads else 0.0
    read = math.ceil(item_size_bytes / 4096) if item_size_bytes else 1
    write = float(math.ceil(item_size_bytes / 1024)) if item_size_bytes else 1.0
    return read * (1.0 - 0.5 * eventual), write


#: The shape of a base-table write as the trail logs it (``auditor.kernel.aggregates.index_writes`` builds it):
#: :data:`WRITE_DELETE`; :data:`WRITE_PUT` then the item's attribute names (CloudTrail logs a put's attribute names,
#: never their values); :data:`WRITE_UPDATE` then the attributes its update expression sets, :data:`REMOVED_SEP`, the
#: attributes it removes. The letter alone: the attributes are not known (not logged, or truncated).
WRITE_DELETE: Final = "D"
WRITE_PUT: Final = "P"
WRITE_UPDATE: Final = "U"
NAME_SEP: Final = "\x1f"
REMOVED_SEP: Final = "\x1e"


def index_write_units(shape: str, key_attrs: Collection[str] = ()) -> int:
    """The writes one base-table write of ``shape`` costs a global secondary index whose key attributes are
    ``key_attrs`` (empty: not known), each of one index item, as DynamoDB meters them (developer guide, "Provisioned
    throughput considerations for Global Secondary Indexes", GSI.html#GSI.ThroughputConsiderations.Writes):

    - a put writes the index when the item carries the index's key attributes (an item without them is not in the
      index); with its attribute names or the index's keys unknown it is charged (one write);
    - a delete removes the item from every index it was in: one write;
    - an update that sets an index key attribute changes the index key: "two writes are required, one to delete the
      previous item from the index and another write to put the new item into the index"; one that removes it, one
      write; one that names none of the index's key attributes is not charged (its projected attributes may cost one
      write when the item is in the index: the trail does not tell, so this is a lower bound), nor one whose update
      expression or index keys are unknown;
    - any other shape (an overflow of the aggregate's shapes) is charged one write.
    """
    kind, body = shape[:1], shape[1:]
    if kind == WRITE_DELETE:
        return 1
    if kind == WRITE_PUT:
        if not body or not key_attrs:
            return 1
        names = body.split(NAME_SEP)
        return 1 if all(a in names for a in key_attrs) else 0
    if kind == WRITE_UPDATE:
        if not body or not key_attrs:
            return 0
        sets, _, removed = body.partition(REMOVED_SEP)
        if any(a in sets.split(NAME_SEP) for a in key_attrs):
            return 2
        return 1 if any(a in removed.split(NAME_SEP) for a in key_attrs) else 0
    return 1

"""``low_cardinality_key``: heavy traffic spread over very few partition-key values, per partition space (the
table's, and each index's on the index: :mod:`.key_spaces`)."""

from __future__ import annotations

from auditor.detectors.base import Amount, Count, DetectorConfig, DetectorMetadata, make_finding, per_second
from auditor.detectors.registry import register
from auditor.detectors.trail.hot_key import HotKeyConfig, value_rates
from auditor.detectors.trail.key_spaces import KeySpace, key_spaces
from auditor.detectors.trail.timebucket import bucket_of, shard_advice
from auditor.kernel.aggregates.keys import decode_key
from auditor.kernel.aggregates.window import TableWindow
from auditor.models.capacity import Headroom
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.whatif.limits import headroom_sentence

METADATA = DetectorMetadata(
    id="low_cardinality_key",
    kind=FindingKind.LOW_CARDINALITY_KEY,
    default_severity=Severity.MEDIUM,
    title="Low-cardinality partition key",
    risk=(
        "A partition key with a handful of values (a status, a type, a date) can never use more than that "
        "many partitions, so the table's throughput is capped at a few partitions' limits however much "
        "capacity it has, and each value's item collection grows without bound."
    ),
    remediation=(
        "Key the table on a high-cardinality attribute (an entity id) and move the low-cardinality "
        "attribute to a sort key or a sparse GSI; if you must query by it, write-shard the GSI "
        "partition key (status#0..status#N)."
    ),
    docs_url="https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-uniform-load.html",
)


class LowCardinalityConfig(DetectorConfig):
    """Heavy traffic (``min_requests`` key-identified requests) over at most ``max_distinct_keys`` values."""

    min_requests: Count = 1000
    max_distinct_keys: Count = 10
    #: At or above this headroom (partition limit / the busiest value's peak rate) the finding is at most ``low``.
    huge_headroom: Amount = 10.0


@register(METADATA, LowCardinalityConfig)
def detect(agg: TableWindow, cfg: LowCardinalityConfig) -> list[Finding]:
    """One finding per table or index whose key-identified traffic uses very few partition-key values."""
    return [f for space in key_spaces(agg) for f in _detect_space(agg, space, cfg)]


def _detect_space(agg: TableWindow, space: KeySpace, cfg: LowCardinalityConfig) -> list[Finding]:
    total = space.requests
    distinct = space.distinct
    if total < cfg.min_requests or distinct == 0 or distinct > cfg.max_distinct_keys:
        return []
    attr = space.key_attr or "partition key"
    where = space.where(agg.table)
    top = space.top(distinct)
    values = [
        {"value": next(iter(decode_key(k).values())), "requests": c, "share": round(c / total, 4)} for k, c in top
    ]
    busiest_writes = space.write_counts.get(top[0][0], 0) if top else 0
    # throttles on the space's values bound its headroom (the one model, docs/capacity.md)
    throttled = sum(agg.throttle_keys.get(k, 0) for k, _ in top)
    model = Headroom(None, None)
    if top:
        # The busiest value's peak in capacity units, as its hot-key fact states it (the same rates, unit costs and
        # peak window: eventually consistent reads at half a unit), is how close the table came to a partition's
        # limit.
        busiest = value_rates(agg, space, top[0][0], HotKeyConfig())
        busiest.throttles = throttled
        model = busiest.headroom(HotKeyConfig())
    # the severity stays the design's, from the headroom on paper: the throttling finding carries the throttles'
    h = model.assumed
    if h is not None and h <= 2.0:
        severity = Severity.HIGH
    elif h is not None and h >= cfg.huge_headroom:
        severity = Severity.LOW  # a few keys far below the partition limits: a design note, not a risk
    else:
        severity = Severity.MEDIUM
    rate = per_second(total, agg.observed_seconds)
    period = bucket_of(values[0]["value"]) if values else None
    return [
        make_finding(
            METADATA,
            agg,
            severity=severity,
            discriminator=attr,
            title=f"{where} is keyed on low-cardinality {attr}",
            summary=(
                f"{total} key-identified requests to {where} ({rate:.1f}/s) used only {distinct} distinct "
                f"values of {attr}: the {'table' if space.index is None else 'index'} can spread this traffic over "
                f"at most {distinct} partitions."
                + (
                    f" Its busiest value peaked far below a partition's limits (headroom {h:,.0f}x), so this is at "
                    "most low."
                    if h is not None and h >= cfg.huge_headroom and not model.throttled
                    else ""
                )
                + (model.sentence() if model.throttled else headroom_sentence(h))
            ),
            recommendation=(
                shard_advice(
                    attr, str(values[0]["value"]), period, busiest_writes / max(1.0, agg.observed_seconds), 0.0
                )[0]
                if period is not None
                else (
                    f"Use a high-cardinality attribute (for example the entity id) as the partition key and keep "
                    f"{attr} as a sort key or a sparse GSI. If you must query by {attr}, write-shard that key "
                    f"({attr}#0..{attr}#N) so one value maps to several partitions."
                )
            ),
            evidence={
                "distinct_partition_keys": distinct,
                "requests": total,
                "key_attribute": attr,
                "values": values,
                "requests_per_second": round(rate, 3),
                "busiest_value_headroom_factor": round(model.value, 2) if model.value is not None else None,
                **model.evidence(),
                "throttled_calls": throttled,
                "window_seconds": agg.window_seconds,
                "source": "cloudtrail",
                "time_bucket": period,
                **({"index": space.index} if space.index is not None else {}),
            },
            index=space.index,
        )
    ]

"""DynamoDB Streams records (as Lambda receives them) -> :class:`ItemSizeObservation`.

The item size is computed from ``NewImage`` by AWS's rules (``SizeBytes`` is not the item size); the envelope is
validated with a pydantic model that keeps the images as DynamoDB JSON. Nothing raises for a bad record: each one is
counted in :class:`StreamStats` and skipped. The record shape and the counters are in docs/item-sizes.md.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from auditor.models.counters import add_counts
from auditor.models.dynamodb_size import ItemSizeError, item_size
from auditor.models.stream import (
    GROWTH_ATTRIBUTES,
    INSUFFICIENT_VIEW_TYPES,
    AttributeGrowth,
    ItemSizeObservation,
    StreamViewType,
    TableRef,
    canonical_key,
    plain_key,
)

__all__ = [
    "GROWTH_ATTRIBUTES",
    "INSUFFICIENT_VIEW_TYPES",
    "AttributeGrowth",
    "ItemSizeObservation",
    "StreamStats",
    "StreamViewType",
    "TableRef",
    "canonical_key",
    "parse_stream_record",
    "plain_key",
    "read_stream_records",
]

_STREAM_ARN_RE: Final = re.compile(
    r"arn:[a-z0-9-]+:dynamodb:(?P<region>[a-z0-9-]*):(?P<account>[0-9]*):table/(?P<table>[A-Za-z0-9_.-]{1,255})"
    r"(?:/stream/[^/]+)?"
)
_KNOWN_TAGS: Final = frozenset({"S", "N", "B", "BOOL", "NULL", "L", "M", "SS", "NS", "BS"})
# Epoch values above this are milliseconds (1e11 seconds is the year 5138).
_MS_THRESHOLD: Final = 1e11


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")

    ApproximateCreationDateTime: float = Field(ge=0, allow_inf_nan=False)
    Keys: dict[str, Any] = Field(min_length=1)
    NewImage: dict[str, Any] | None = None
    OldImage: dict[str, Any] | None = None
    SequenceNumber: str = Field(min_length=1, max_length=128)
    StreamViewType: StreamViewType


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")

    event_id: str = Field(alias="eventID", min_length=1)
    event_name: Literal["INSERT", "MODIFY", "REMOVE"] = Field(alias="eventName")
    event_source: Literal["aws:dynamodb"] = Field(alias="eventSource")
    event_source_arn: str = Field(alias="eventSourceARN")
    aws_region: str | None = Field(default=None, alias="awsRegion")
    dynamodb: _Body


# ----------------------------------------------------------------------------------------------------------- stats


#: What :meth:`StreamStats.as_dict` reports, in order: the counters and ``records_skipped`` (derived from two of them).
_REPORTED = (
    "records_read",
    "observations",
    "records_skipped",
    "removes",
    "malformed",
    "unknown_type_tags",
    "invalid_base64",
    "insufficient_view_type",
)


@dataclass(slots=True)
class StreamStats:
    """What a batch of stream records held and what was skipped (see the module docstring)."""

    records_read: int = 0
    observations: int = 0
    removes: int = 0
    malformed: int = 0
    unknown_type_tags: int = 0
    invalid_base64: int = 0
    insufficient_view_type: int = 0
    #: Tables whose stream cannot show item sizes: the view type seen and the latest record time (bounded).
    insufficient_views: dict[TableRef, tuple[str, float]] = field(default_factory=dict)
    #: The first few problems, each ``record N (eventID): reason``.
    problems: list[str] = field(default_factory=list)
    #: The latest problem (not bounded by ``MAX_PROBLEMS``).
    last_problem: str | None = None

    MAX_PROBLEMS = 20
    MAX_VIEWS = 50

    @property
    def errors(self) -> int:
        """Bad records: malformed, unknown type tags and invalid base64 (REMOVE and view-type skips are not errors)."""
        return self.malformed + self.unknown_type_tags + self.invalid_base64

    @property
    def records_skipped(self) -> int:
        """Records that were not observations, REMOVE events included."""
        return self.records_read - self.observations

    def note(self, message: str) -> None:
        self.last_problem = message
        if len(self.problems) < self.MAX_PROBLEMS:
            self.problems.append(message)

    def note_view(self, ref: TableRef, view_type: str, at: float) -> None:
        """Remember (bounded) that ``ref``'s stream has a view type without ``NewImage``."""
        seen = self.insufficient_views.get(ref)
        if seen is not None:
            self.insufficient_views[ref] = (view_type, max(at, seen[1]))
        elif len(self.insufficient_views) < self.MAX_VIEWS:
            self.insufficient_views[ref] = (view_type, at)

    def merge(self, other: StreamStats) -> None:
        add_counts(self, other)
        for ref, (view, at) in other.insufficient_views.items():
            self.note_view(ref, view, at)
        for problem in other.problems:
            self.note(problem)

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in _REPORTED}


# ----------------------------------------------------------------------------------------------------------- parse


class _SkipRecordError(Exception):
    def __init__(self, counter: str, reason: str) -> None:
        super().__init__(reason)
        self.counter = counter
        self.reason = reason


def _b64_ok(value: object) -> bool:
    if not isinstance(value, str):
        return True  # a wrong JSON type is "malformed", not a base64 problem
    try:
        binascii.a2b_base64(value.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        return False
    return True


def _classify(attributes: Mapping[str, Any]) -> str:
    """Which counter an image that failed :func:`item_size` belongs to: the first unknown tag or bad base64 found."""
    stack: list[Any] = list(attributes.values())
    while stack:
        typed = stack.pop()
        if not isinstance(typed, Mapping) or len(typed) != 1:
            continue
        ((tag, value),) = typed.items()
        if tag not in _KNOWN_TAGS:
            return "unknown_type_tags"
        if (tag == "B" and not _b64_ok(value)) or (
            tag == "BS" and isinstance(value, list) and not all(map(_b64_ok, value))
        ):
            return "invalid_base64"
        if tag == "M" and isinstance(value, Mapping):
            stack.extend(value.values())
        elif tag == "L" and isinstance(value, list):
            stack.extend(value)
    return "malformed"


def _attribute_sizes(image: Mapping[str, Any], member: str) -> dict[str, int]:
    """Each top-level attribute's size, name included (their sum is the item size)."""
    sizes: dict[str, int] = {}
    try:
        for name, value in image.items():
            sizes[name] = item_size({name: value})
    except ItemSizeError as exc:
        raise _SkipRecordError(_classify(image), f"{member}: {exc}") from None
    return sizes


def _table_ref(arn: str, aws_region: str | None) -> TableRef:
    match = _STREAM_ARN_RE.fullmatch(arn)
    if match is None:
        raise _SkipRecordError("malformed", f"eventSourceARN {arn[:200]!r} is not a DynamoDB table stream ARN")
    return TableRef(match["account"] or None, match["region"] or aws_region or None, match["table"])


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(part) for part in err["loc"])
    return f"{loc or '(record)'}: {err['msg']}"


def _epoch_seconds(value: float) -> float:
    return value / 1000 if value > _MS_THRESHOLD else value


def _observe(raw: object, stats: StreamStats) -> ItemSizeObservation | None:
    if not isinstance(raw, Mapping):
        raise _SkipRecordError("malformed", "a stream record must be a JSON object")
    try:
        record = _Record.model_validate(raw)
    except ValidationError as exc:
        raise _SkipRecordError("malformed", _first_error(exc)) from None
    body = record.dynamodb
    ref = _table_ref(record.event_source_arn, record.aws_region)
    if record.event_name == "REMOVE":
        stats.removes += 1
        return None
    if body.StreamViewType in INSUFFICIENT_VIEW_TYPES:
        stats.insufficient_view_type += 1
        stats.note_view(ref, body.StreamViewType, _epoch_seconds(body.ApproximateCreationDateTime))
        return None
    if body.NewImage is None:
        raise _SkipRecordError(
            "malformed", f"{record.event_name} record of a {body.StreamViewType} stream has no NewImage"
        )
    _attribute_sizes(body.Keys, "Keys")
    new_sizes = _attribute_sizes(body.NewImage, "NewImage")
    old_sizes = _attribute_sizes(body.OldImage, "OldImage") if body.OldImage is not None else None
    growth: tuple[AttributeGrowth, ...] = ()
    if old_sizes is not None:
        grown = [
            AttributeGrowth(name, old_sizes.get(name, 0), size)
            for name, size in new_sizes.items()
            if size > old_sizes.get(name, 0)
        ]
        grown.sort(key=lambda g: (-g.delta, g.name))
        growth = tuple(grown[:GROWTH_ATTRIBUTES])
    largest = min(new_sizes.items(), key=lambda kv: (-kv[1], kv[0]), default=(None, 0))
    return ItemSizeObservation(
        ref=ref,
        key=dict(body.Keys),
        event_id=record.event_id,
        event_name=record.event_name,
        sequence_number=body.SequenceNumber,
        time=_epoch_seconds(body.ApproximateCreationDateTime),
        view_type=body.StreamViewType,
        size_bytes=sum(new_sizes.values()),
        old_size_bytes=sum(old_sizes.values()) if old_sizes is not None else None,
        growth=growth,
        largest_attribute=largest[0],
        largest_attribute_bytes=largest[1],
    )


def parse_stream_record(raw: object, stats: StreamStats, *, position: int | None = None) -> ItemSizeObservation | None:
    """One stream record -> its observation, or None when it is skipped (counted in ``stats``, never raised).

    ``position`` (1-based index in the batch) is used in problem messages only.
    """
    stats.records_read += 1
    try:
        observation = _observe(raw, stats)
    except _SkipRecordError as skip:
        setattr(stats, skip.counter, getattr(stats, skip.counter) + 1)
        where = f"record {position}" if position is not None else "record"
        event_id = raw.get("eventID") if isinstance(raw, Mapping) else None
        if isinstance(event_id, str):
            where += f" ({event_id[:64]})"
        stats.note(f"{where}: {skip.reason}")
        return None
    if observation is not None:
        stats.observations += 1
    return observation


def read_stream_records(records: Iterable[object], stats: StreamStats) -> Iterator[ItemSizeObservation]:
    """Every observation of a batch's ``Records``, in order; skipped records are counted in ``stats``."""
    for position, raw in enumerate(records, 1):
        observation = parse_stream_record(raw, stats, position=position)
        if observation is not None:
            yield observation

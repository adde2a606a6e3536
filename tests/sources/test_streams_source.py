"""DynamoDB Streams records -> ItemSizeObservation: sizes from NewImage, every kind of bad record counted."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from auditor.models.dynamodb_size import item_size, stream_record_size_bytes
from auditor.sources.streams import (
    StreamStats,
    TableRef,
    canonical_key,
    parse_stream_record,
    plain_key,
    read_stream_records,
)

EVENTS = Path(__file__).resolve().parents[2] / "events"


def records(name: str) -> list[dict[str, Any]]:
    return json.loads((EVENTS / f"stream_item_size_{name}.json").read_text())["Records"]


def big_record() -> dict[str, Any]:
    """The MODIFY of the 78% item in the NEW_AND_OLD_IMAGES sample."""
    return copy.deepcopy(records("new_and_old")[1])


def small_record() -> dict[str, Any]:
    return copy.deepcopy(records("new_and_old")[0])


# ----------------------------------------------------------------------------- the samples


def test_new_and_old_sample_sizes_items_from_new_image() -> None:
    # Given the NEW_AND_OLD_IMAGES sample (INSERT small, MODIFY large, INSERT 100 KB, REMOVE)
    raw = records("new_and_old")
    stats = StreamStats()
    # When
    observed = list(read_stream_records(raw, stats))
    # Then three observations, the REMOVE counted apart (not an error)
    assert [o.event_name for o in observed] == ["INSERT", "MODIFY", "INSERT"]
    assert stats.as_dict() == {
        "records_read": 4,
        "observations": 3,
        "records_skipped": 1,
        "removes": 1,
        "malformed": 0,
        "unknown_type_tags": 0,
        "invalid_base64": 0,
        "insufficient_view_type": 0,
    }
    assert stats.errors == 0 and stats.problems == []
    big = observed[1]
    body = raw[1]["dynamodb"]
    assert big.size_bytes == item_size(body["NewImage"]) == 320_530
    assert big.old_size_bytes == item_size(body["OldImage"]) == 319_451
    # SizeBytes is the record size (Keys + NewImage + OldImage), not the item size
    assert body["SizeBytes"] == stream_record_size_bytes(body) != big.size_bytes
    assert big.ref == TableRef("123456789012", "eu-west-1", "Timelines")
    assert big.key == {"pk": {"S": "DEVICE#7f3a"}, "sk": {"S": "TIMELINE"}}
    assert big.plain_key == {"pk": "DEVICE#7f3a", "sk": "TIMELINE"}
    assert big.time == body["ApproximateCreationDateTime"]
    assert big.sequence_number == body["SequenceNumber"]
    assert big.event_id == raw[1]["eventID"]
    assert big.view_type == "NEW_AND_OLD_IMAGES"
    # the attribute that grew, by exactly its size difference (name included)
    events_new = item_size({"events": body["NewImage"]["events"]})
    events_old = item_size({"events": body["OldImage"]["events"]})
    assert [(g.name, g.delta) for g in big.growth] == [("events", events_new - events_old)]
    assert big.largest_attribute == "events" and big.largest_attribute_bytes == events_new
    assert round(big.percent_of_limit, 2) == 78.25
    # an INSERT has no old image: no growth
    assert observed[2].old_size_bytes is None and observed[2].growth == ()


def test_keys_only_sample_is_skipped_and_remembered_as_insufficient() -> None:
    stats = StreamStats()
    assert list(read_stream_records(records("keys_only"), stats)) == []
    assert stats.insufficient_view_type == 2  # INSERT and MODIFY
    assert stats.removes == 1
    assert stats.errors == 0
    ((ref, (view, at)),) = stats.insufficient_views.items()
    assert ref == TableRef("123456789012", "eu-west-1", "Sessions")
    assert view == "KEYS_ONLY"
    assert at == records("keys_only")[1]["dynamodb"]["ApproximateCreationDateTime"]


def test_old_image_view_type_is_insufficient() -> None:
    raw = big_record()
    raw["dynamodb"]["StreamViewType"] = "OLD_IMAGE"
    del raw["dynamodb"]["NewImage"]
    stats = StreamStats()
    assert parse_stream_record(raw, stats) is None
    assert stats.insufficient_view_type == 1 and stats.errors == 0
    assert [view for view, _ in stats.insufficient_views.values()] == ["OLD_IMAGE"]


def test_bad_records_sample_counts_each_kind_and_keeps_the_good_ones() -> None:
    stats = StreamStats()
    observed = list(read_stream_records(records("bad_records"), stats))
    assert [o.plain_key["pk"] for o in observed] == ["DEVICE#aa10", "DEVICE#c3d4"]
    assert (stats.records_read, stats.malformed, stats.unknown_type_tags, stats.invalid_base64, stats.removes) == (
        9,
        4,
        1,
        1,
        1,
    )
    problems = "\n".join(stats.problems)
    assert 'record 3 (ac4213fe170eb012b96641f2ad389e45): NewImage: attribute "blob": unknown type tag "X"' in problems
    assert 'record 4 (390a944e5aed7943afd6c1eb8c109328): NewImage: attribute "thumbnail": invalid base64' in problems
    assert "record 2 (1788625abe0c1703e6737e82515a24bb): dynamodb: Field required" in problems
    assert "is not a DynamoDB table stream ARN" in problems
    assert 'attribute "firmware": invalid number "4.2.1"' in problems
    assert "MODIFY record of a NEW_AND_OLD_IMAGES stream has no NewImage" in problems


# ----------------------------------------------------------------------------- each bad input


def _set(path: tuple[str, ...], value: Any) -> Any:
    def mutate(raw: dict[str, Any]) -> None:
        target = raw
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


def _delete(path: tuple[str, ...]) -> Any:
    def mutate(raw: dict[str, Any]) -> None:
        target = raw
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return mutate


@pytest.mark.parametrize(
    ("mutate", "counter", "message"),
    [
        (_delete(("eventID",)), "malformed", "eventID: Field required"),
        (_set(("eventName",), "UPDATE"), "malformed", "eventName: Input should be"),
        (_set(("eventSource",), "aws:kinesis"), "malformed", "eventSource: Input should be 'aws:dynamodb'"),
        (_set(("eventSourceARN",), "not-an-arn"), "malformed", "is not a DynamoDB table stream ARN"),
        (_delete(("dynamodb", "Keys")), "malformed", "dynamodb.Keys: Field required"),
        (_set(("dynamodb", "Keys"), {}), "malformed", "dynamodb.Keys"),
        (_delete(("dynamodb", "SequenceNumber")), "malformed", "dynamodb.SequenceNumber: Field required"),
        (_set(("dynamodb", "ApproximateCreationDateTime"), "yesterday"), "malformed", "ApproximateCreationDateTime"),
        (_set(("dynamodb", "StreamViewType"), "FULL"), "malformed", "dynamodb.StreamViewType"),
        (_set(("dynamodb", "NewImage"), "{}"), "malformed", "dynamodb.NewImage"),
        (_set(("dynamodb", "NewImage", "firmware"), {"N": "12abc"}), "malformed", 'invalid number "12abc"'),
        (_set(("dynamodb", "NewImage", "firmware"), {"S": 12}), "malformed", "S value must be a string"),
        (_set(("dynamodb", "NewImage", "firmware"), {"DATE": "2026-01-01"}), "unknown_type_tags", 'tag "DATE"'),
        (
            _set(("dynamodb", "NewImage", "meta"), {"M": {"tags": {"L": [{"S": "a"}, {"Y": "b"}]}}}),
            "unknown_type_tags",
            'attribute "meta"."tags"[1]: unknown type tag "Y"',
        ),
        (_set(("dynamodb", "Keys", "pk"), {"Q": "DEVICE#7f3a"}), "unknown_type_tags", "Keys:"),
        (_set(("dynamodb", "OldImage", "model"), {"STRING": "x"}), "unknown_type_tags", "OldImage:"),
        (_set(("dynamodb", "NewImage", "photo"), {"B": "aGVsbG8"}), "invalid_base64", 'attribute "photo"'),
        (
            _set(("dynamodb", "NewImage", "meta"), {"M": {"thumbs": {"BS": ["aGVsbG8=", "%%%"]}}}),
            "invalid_base64",
            "invalid base64",
        ),
    ],
)
def test_each_bad_record_is_counted_and_skipped(mutate: Any, counter: str, message: str) -> None:
    # Given a valid record with one defect
    raw = big_record()
    mutate(raw)
    stats = StreamStats()
    # When / Then: skipped, counted under the right counter, with a message saying what and where
    assert parse_stream_record(raw, stats, position=7) is None
    assert getattr(stats, counter) == 1
    assert stats.errors == 1 and stats.records_read == 1 and stats.observations == 0
    assert stats.problems[0].startswith("record 7")
    assert message in stats.problems[0]
    assert stats.last_problem == stats.problems[0]


@pytest.mark.parametrize("raw", ["a string", None, [1, 2], 42])
def test_a_record_that_is_not_an_object_is_malformed(raw: object) -> None:
    stats = StreamStats()
    assert parse_stream_record(raw, stats, position=1) is None
    assert stats.malformed == 1
    assert stats.problems == ["record 1: a stream record must be a JSON object"]


def test_the_same_record_with_a_good_base64_value_is_observed() -> None:
    # Control for the base64 cases: a valid B value is sized by its decoded length
    raw = big_record()
    raw["dynamodb"]["NewImage"]["photo"] = {"B": "aGVsbG8="}  # "hello"
    stats = StreamStats()
    obs = parse_stream_record(raw, stats)
    assert obs is not None
    assert obs.size_bytes == 320_530 + len("photo") + 5


def test_a_remove_is_counted_but_is_not_an_error() -> None:
    stats = StreamStats()
    assert parse_stream_record(records("new_and_old")[3], stats) is None
    assert stats.removes == 1 and stats.errors == 0 and stats.problems == []


# ----------------------------------------------------------------------------- details


def test_millisecond_creation_times_become_seconds() -> None:
    raw = small_record()
    raw["dynamodb"]["ApproximateCreationDateTime"] = 1_796_029_925_123
    obs = parse_stream_record(raw, StreamStats())
    assert obs is not None and obs.time == pytest.approx(1_796_029_925.123)


def test_table_account_and_region_come_from_the_arn() -> None:
    raw = small_record()
    raw["eventSourceARN"] = "arn:aws-cn:dynamodb:cn-north-1:210987654321:table/Orders.v2/stream/2026-01-01T00:00:00.000"
    obs = parse_stream_record(raw, StreamStats())
    assert obs is not None and obs.ref == TableRef("210987654321", "cn-north-1", "Orders.v2")
    # an ARN without account or region: the region falls back to awsRegion, the account stays unknown
    raw["eventSourceARN"] = "arn:aws:dynamodb:::table/Orders/stream/2026-01-01T00:00:00.000"
    obs = parse_stream_record(raw, StreamStats())
    assert obs is not None and obs.ref == TableRef(None, "eu-west-1", "Orders")


def test_growth_lists_grown_attributes_largest_first_and_ignores_shrunk_ones() -> None:
    raw = small_record()
    body = raw["dynamodb"]
    body["OldImage"] = dict(body["NewImage"])
    body["NewImage"]["note"] = {"S": "x" * 50}  # new attribute: 4 + 50
    body["NewImage"]["status"] = {"S": "PLACED-AND-PAID"}  # grew by 9
    body["NewImage"]["items"] = {"L": []}  # shrank
    obs = parse_stream_record(raw, StreamStats())
    assert obs is not None
    assert [(g.name, g.old_bytes, g.new_bytes, g.delta) for g in obs.growth] == [
        ("note", 0, 54, 54),
        ("status", 12, 21, 9),
    ]


def test_stats_merge_and_bounded_problems() -> None:
    a, b = StreamStats(), StreamStats()
    for i in range(StreamStats.MAX_PROBLEMS + 5):
        parse_stream_record("bad", a, position=i)
    list(read_stream_records(records("keys_only"), b))
    a.merge(b)
    assert a.malformed == StreamStats.MAX_PROBLEMS + 5
    assert len(a.problems) == StreamStats.MAX_PROBLEMS
    assert a.insufficient_view_type == 2 and a.removes == 1
    assert a.records_read == StreamStats.MAX_PROBLEMS + 5 + 3
    assert a.records_skipped == a.records_read


# ----------------------------------------------------------------------------- keys


def test_plain_key_is_the_cloudtrail_form() -> None:
    typed = {"pk": {"S": "USER#1"}, "n": {"N": "12"}, "f": {"N": "1.50"}, "big": {"N": "123456789012345678901234"}}
    assert plain_key(typed) == {"pk": "USER#1", "n": 12, "f": "1.50", "big": "123456789012345678901234"}


def test_canonical_key_matches_typed_and_logged_forms() -> None:
    typed = {"pk": {"S": "USER#1"}, "n": {"N": "1.50"}}
    assert canonical_key(typed) == canonical_key({"n": 1.5, "pk": "USER#1"})
    assert canonical_key(typed) == canonical_key({"pk": "USER#1", "n": "1.5"})
    assert canonical_key({"id": {"N": "100"}}) == canonical_key({"id": 100}) == canonical_key({"id": {"N": "1E+2"}})
    assert canonical_key(typed) != canonical_key({"pk": "USER#2", "n": 1.5})
    assert canonical_key({"pk": "USER#1"}) != canonical_key({"PK": "USER#1"})


@pytest.mark.parametrize("name", ["new_and_old", "keys_only"])
def test_the_good_samples_are_valid_lambda_stream_events(name: str) -> None:
    # Powertools' own model of the DynamoDB Streams -> Lambda event accepts them (so the samples cannot rot)
    from aws_lambda_powertools.utilities.parser.models import DynamoDBStreamModel

    event = DynamoDBStreamModel.model_validate(json.loads((EVENTS / f"stream_item_size_{name}.json").read_text()))
    for parsed, raw in zip(event.Records, records(name), strict=True):
        assert raw["eventVersion"] == "1.1" and parsed.eventSource == "aws:dynamodb"
        assert parsed.dynamodb.SizeBytes == stream_record_size_bytes(raw["dynamodb"])

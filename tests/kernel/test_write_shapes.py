"""Write shapes (what a base-table write may touch) read from the records as CloudTrail logs them, counted per minute
by the table windows and metered per global secondary index (write amplification, docs/capacity.md).

Request shapes: the PutItem, UpdateItem and TransactWriteItems samples of the DynamoDB developer guide's CloudTrail
page (logging-using-cloudtrail): a put logs its attribute names (``item``; ``items`` in a transaction), an update its
``updateExpression`` and ``expressionAttributeNames``, never a value.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from auditor.kernel.aggregates.index_writes import OVERFLOW, count_write, index_writes
from auditor.kernel.aggregates.window import AggregateSet, TableWindow
from auditor.kernel.normalize import normalize_record, single_item
from auditor.kernel.write_shapes import write_shape
from auditor.models.capacity import index_write_units
from tests.kernel.test_real_shapes import envelope

MUSIC_KEY = {"Artist": "No One You Know", "SongTitle": "Call Me Today"}
PUT = {"tableName": "Music", "key": MUSIC_KEY, "item": ["Artist", "SongTitle", "AlbumTitle"]}
UPDATE = {
    "tableName": "Music",
    "key": MUSIC_KEY,
    "updateExpression": "SET #Y = :y, #AT = :t",
    "expressionAttributeNames": {"#Y": "Year", "#AT": "AlbumTitle"},
    "conditionExpression": "attribute_not_exists(#Y)",
    "returnConsumedCapacity": "TOTAL",
}
TRANSACT = {
    "requestItems": [
        {"operation": "Put", "tableName": "Music", "key": MUSIC_KEY, "items": ["Artist", "SongTitle", "AlbumTitle"]},
        {
            "operation": "Update",
            "TableName": "Music",
            "Key": {"Artist": "No One You Know", "SongTitle": "Another Song"},
            "updateExpression": "REMOVE #A",
            "ExpressionAttributeNames": {"#A": "AlbumTitle"},
        },
        {"operation": "Delete", "tableName": "Music", "key": {"Artist": "A", "SongTitle": "B"}},
    ],
    "returnConsumedCapacity": "TOTAL",
}


def _record(name: str, params: dict[str, Any], event_id: str = "e1") -> dict[str, Any]:
    return envelope(name, copy.deepcopy(params), readOnly=False, eventID=event_id)


def test_a_put_logs_its_attribute_names_and_an_update_its_expression() -> None:
    assert write_shape("PutItem", PUT) == "PAlbumTitle\x1fArtist\x1fSongTitle"
    assert write_shape("UpdateItem", UPDATE) == "UAlbumTitle\x1fYear\x1e"
    assert write_shape("DeleteItem", {"key": MUSIC_KEY}) == "D"
    assert write_shape("PutItem", {"key": MUSIC_KEY}) == "P"  # names not logged (truncated): unknown attributes
    assert write_shape("UpdateItem", {"key": MUSIC_KEY}) == "U"
    assert write_shape("TransactWriteItems:ConditionCheck", {}) is None
    # SET with functions and nested paths, REMOVE, ADD and DELETE clauses: the update-expression grammar of the DynamoDB
    # developer guide (Expressions.UpdateExpressions)
    nested = {"updateExpression": "SET a = list_append(a, :l), #b.c = :v REMOVE d, e[2] ADD n :one DELETE s :x"}
    assert (
        write_shape("UpdateItem", {**nested, "expressionAttributeNames": {"#b": "b"}}) == "Ua\x1fb\x1fn\x1fs\x1ed\x1fe"
    )


@pytest.mark.parametrize(("name", "params"), [("PutItem", PUT), ("UpdateItem", UPDATE), ("DeleteItem", PUT)])
def test_the_light_reader_reads_the_shape_the_full_reader_reads(name: str, params: dict[str, Any]) -> None:
    call = normalize_record(_record(name, params))
    item = single_item(_record(name, params))
    assert call is not None and item is not None
    assert item[12] == call.items[0].shape == write_shape(name, params)
    fast, full = AggregateSet(), AggregateSet()
    fast.add_item(item)
    full.add(call)
    [a] = fast.windows.values()
    [b] = full.windows.values()
    assert a.write_shapes == b.write_shapes and sum(sum(m.values()) for m in a.write_shapes.values()) == 1


def test_a_transaction_and_a_batch_have_a_shape_per_item() -> None:
    call = normalize_record(_record("TransactWriteItems", TRANSACT))
    assert call is not None
    assert [i.shape for i in call.items] == ["PAlbumTitle\x1fArtist\x1fSongTitle", "U\x1eAlbumTitle", "D"]
    batch = {"requestItems": {"Music": [{"putRequest": {"key": MUSIC_KEY, "item": ["Artist", "SongTitle"]}}]}}
    call = normalize_record(_record("BatchWriteItem", batch))
    assert call is not None and [i.shape for i in call.items] == ["PArtist\x1fSongTitle"]


def test_a_failed_write_writes_no_index() -> None:
    aggs = AggregateSet()
    call = normalize_record(_record("PutItem", PUT) | {"errorCode": "ConditionalCheckFailedException"})
    assert call is not None
    aggs.add(call)
    [tw] = aggs.windows.values()
    assert tw.item_writes == 1 and tw.write_shapes == {}


def test_index_write_units_follow_the_gsi_throughput_rules() -> None:
    assert index_write_units("PAlbumTitle\x1fArtist", ("AlbumTitle",)) == 1  # the put carries the index key
    assert index_write_units("PArtist", ("AlbumTitle",)) == 0  # an item without it is not in the (sparse) index
    assert index_write_units("P", ("AlbumTitle",)) == index_write_units("PArtist", ()) == 1  # not known: charged
    assert index_write_units("D", ("AlbumTitle",)) == 1
    assert index_write_units("UAlbumTitle\x1e", ("AlbumTitle",)) == 2  # the index key changes: a delete and a put
    assert index_write_units("U\x1eAlbumTitle", ("AlbumTitle",)) == 1  # the index key removed: a delete
    assert index_write_units("UYear\x1e", ("AlbumTitle",)) == 0  # the index keys untouched
    assert index_write_units("U", ("AlbumTitle",)) == index_write_units("UAlbumTitle\x1e", ()) == 0
    assert index_write_units(OVERFLOW, ("AlbumTitle",)) == 1


def test_index_writes_meter_each_index_at_its_busiest_minute_and_survive_serialisation() -> None:
    tw = TableWindow("111122223333", "eu-west-1", "Music", 0, 900)
    tw.index_schema = {"ByAlbum": "AlbumTitle", "ByYear": "Year"}
    for minute, shape, n in [(1, "PAlbumTitle\x1fArtist", 10), (2, "UAlbumTitle\x1e", 30), (2, "UPrice\x1e", 50)]:
        count_write(tw.write_shapes, shape, minute, n)
    by_album, by_year = index_writes(tw)
    assert (by_album.index, by_album.key_attrs, by_album.writes, by_album.base_writes) == (
        "ByAlbum",
        ("AlbumTitle",),
        70,
        40,
    )
    assert (by_album.peak_minute, by_album.peak_writes) == (120, 60)
    assert (by_year.writes, by_year.peak_minute) == (0, None)  # neither a put nor an update names Year
    tw.index_schema["ByArtist"] = tw.schema_hint = "Artist"  # a local secondary index: the table's own capacity
    assert [w.index for w in index_writes(tw)] == ["ByAlbum", "ByYear"]
    back = TableWindow.from_dict(tw.to_dict())
    assert back.write_shapes == tw.write_shapes
    back.merge(tw)
    assert back.write_shapes["UAlbumTitle\x1e"] == {2: 60}

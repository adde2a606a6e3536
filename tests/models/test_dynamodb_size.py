"""DynamoDB item size by AWS's documented rules; every expected size below is computed by hand."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auditor.exceptions import InputError
from auditor.models.dynamodb_size import (
    ITEM_SIZE_LIMIT,
    ItemSizeError,
    ItemSizeResult,
    item_size,
    iter_item_results,
    iter_items,
    read_capacity_units,
    stream_record_size_bytes,
    write_capacity_units,
)


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def size_of(value: dict[str, Any], name: str = "a") -> int:
    """Size of one typed value, without its (1-byte) attribute name."""
    return item_size({name: value}) - len(name.encode())


# ------------------------------------------------------------------------------------------------ documented examples


def test_aws_doc_example_is_23_bytes() -> None:
    # {"shirt-color":"R","shirt-size":"M"}: (11 + 1) + (10 + 1)
    assert item_size({"shirt-color": {"S": "R"}, "shirt-size": {"S": "M"}}) == 23


def test_docstring_example() -> None:
    # "pk" 2 + "a" 1, "n" 1 + N "12" (2 significant digits -> 1 + 1)
    assert item_size({"pk": {"S": "a"}, "n": {"N": "12"}}) == 6


def test_empty_item_is_zero() -> None:
    assert item_size({}) == 0


# ------------------------------------------------------------------------------------------------ strings and names


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"s": {"S": ""}}, 1),
        ({"s": {"S": "hello"}}, 6),
        ({"": {"S": "x"}}, 1),
        ({"s": {"S": "é"}}, 1 + 2),
        ({"s": {"S": "日本語"}}, 1 + 9),
        ({"s": {"S": "😀"}}, 1 + 4),
        ({"é": {"S": "a"}}, 2 + 1),
        ({"名前": {"S": "😀é"}}, 6 + 4 + 2),
        ({"👍👍": {"BOOL": True}}, 8 + 1),
    ],
)
def test_unicode_names_and_values_count_utf8_bytes(item: dict[str, Any], expected: int) -> None:
    assert item_size(item) == expected


def test_lone_surrogate_is_an_error() -> None:
    with pytest.raises(ItemSizeError, match=r'attribute "s": S value is not valid Unicode'):
        item_size({"s": {"S": "a\ud800"}})
    with pytest.raises(ItemSizeError, match=r'attribute "\\udc00": attribute name is not valid Unicode') as info:
        item_size({"\udc00": {"S": "a"}})
    str(info.value).encode()  # the message is printable


# ------------------------------------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        # zero: no significant digits -> 0 + 1
        ("0", 1),
        ("-0", 1),
        ("-0.0", 1),
        ("0.000", 1),
        ("0E+10", 1),
        ("000", 1),
        # 1 significant digit -> ceil(1/2) + 1 = 2
        ("1", 2),
        ("10", 2),
        ("100", 2),
        ("1000", 2),
        ("0.001", 2),
        ("1E+5", 2),
        ("1E+37", 2),
        ("-7", 2),
        ("+5", 2),
        (".5", 2),
        ("5.", 2),
        ("007", 2),
        # 2 significant digits -> 2
        ("12", 2),
        ("1.5e10", 2),
        ("-0.00120", 2),
        ("1200", 2),
        # 3-4 -> 3
        ("123", 3),
        ("123.4", 3),
        ("10.01", 3),
        # 5-6 -> 4
        ("12345", 4),
        ("123456", 4),
        ("-3.14159", 4),
        ("100.001", 4),
        ("123.4500", 4),
        ("1234567", 5),
        # limits: 38 significant digits -> 19 + 1
        ("1" * 38, 20),
        ("-" + "9" * 38, 20),
        ("1" * 38 + "000", 20),
        ("0.000" + "1" * 38, 20),
        ("9." + "9" * 37 + "E+125", 20),
        ("1E+125", 2),
        ("1E-130", 2),
        ("1E-00000000000130", 2),
    ],
)
def test_number_sizes(number: str, expected: int) -> None:
    assert size_of({"N": number}) == expected


def test_39_significant_digits_is_an_error() -> None:
    with pytest.raises(ItemSizeError, match=r'attribute "a": number "1{39}" has 39 significant digits'):
        item_size({"a": {"N": "1" * 39}})
    with pytest.raises(ItemSizeError, match="40 significant digits"):
        item_size({"a": {"N": "1." + "0" * 38 + "1"}})


@pytest.mark.parametrize("number", ["1E+126", "1E-131", "-1E+126", "10E+125", "1E+9999999999", "0.1E-130"])
def test_number_out_of_range_is_an_error(number: str) -> None:
    with pytest.raises(ItemSizeError, match="out of DynamoDB's range"):
        item_size({"a": {"N": number}})


@pytest.mark.parametrize(
    "number",
    [
        "",
        " 1",
        "1 ",
        "abc",
        "1e",
        "e5",
        ".",
        "+",
        "--1",
        "1.2.3",
        "NaN",
        "Infinity",
        "0x10",
        "1,000",
        "\u0661",
        "1_000",
        "1e5.0",
    ],
)
def test_invalid_number_is_an_error(number: str) -> None:
    with pytest.raises(ItemSizeError, match=r'attribute "a": invalid number'):
        item_size({"a": {"N": number}})


@pytest.mark.parametrize("value", [12, 1.5, None, True, ["1"]])
def test_number_must_be_a_string(value: object) -> None:
    with pytest.raises(ItemSizeError, match=r'attribute "a": N value must be a string'):
        item_size({"a": {"N": value}})


# ------------------------------------------------------------------------------------------------ binary


def test_binary_counts_decoded_bytes() -> None:
    assert size_of({"B": b64(bytes(range(10)))}) == 10
    assert size_of({"B": b64(b"\xff" * 1000)}) == 1000
    assert size_of({"B": ""}) == 0
    assert size_of({"B": "QUJD"}) == 3


def test_binary_accepts_raw_bytes_from_boto3() -> None:
    assert size_of({"B": b"\x00\x01\x02"}) == 3
    assert size_of({"B": bytearray(5)}) == 5
    assert size_of({"B": memoryview(b"abcd")}) == 4


@pytest.mark.parametrize("value", ["not base64!", "QQ", "QUJDRA", "Q===", "QQ==\n", "QQ ==", "=QQ=", "QQ==QQ==", "é"])
def test_invalid_base64_is_an_error(value: str) -> None:
    with pytest.raises(ItemSizeError, match=r'attribute "a": invalid base64'):
        item_size({"a": {"B": value}})


def test_binary_must_be_a_string() -> None:
    with pytest.raises(ItemSizeError, match="B value must be a base64 string, got a number"):
        item_size({"a": {"B": 5}})


# ------------------------------------------------------------------------------------------------ BOOL and NULL


def test_bool_and_null_are_one_byte() -> None:
    assert item_size({"b": {"BOOL": False}}) == 2
    assert item_size({"b": {"BOOL": True}}) == 2
    assert item_size({"n": {"NULL": True}}) == 2


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ({"BOOL": "true"}, "BOOL value must be true or false, got a string"),
        ({"BOOL": 1}, "BOOL value must be true or false, got a number"),
        ({"NULL": False}, "NULL value must be true, got false"),
        ({"NULL": None}, "NULL value must be true, got null"),
    ],
)
def test_bad_bool_and_null(typed: dict[str, Any], message: str) -> None:
    with pytest.raises(ItemSizeError, match=message):
        item_size({"a": typed})


# ------------------------------------------------------------------------------------------------ lists and maps


def test_empty_list_and_map_are_three_bytes() -> None:
    assert item_size({"l": {"L": []}}) == 1 + 3
    assert item_size({"m": {"M": {}}}) == 1 + 3


def test_list_is_three_plus_elements_plus_one_each() -> None:
    # 3 + (1 + 1) + (2 + 1) + (1 + 1)
    assert size_of({"L": [{"S": "x"}, {"N": "12"}, {"NULL": True}]}) == 3 + 2 + 3 + 2


def test_map_counts_key_names() -> None:
    # 3 + ("k" 1 + "v" 1 + 1) + ("key2" 4 + N "5" 2 + 1)
    assert size_of({"M": {"k": {"S": "v"}, "key2": {"N": "5"}}}) == 3 + 3 + 7


def test_list_in_map_in_list() -> None:
    inner_list = {"L": [{"S": "xy"}, {"N": "1"}]}  # 3 + (2 + 1) + (2 + 1) = 9
    middle_map = {"M": {"b": inner_list}}  # 3 + ("b" 1 + 9 + 1) = 14
    outer_list = {"L": [middle_map]}  # 3 + (14 + 1) = 18
    assert item_size({"a": outer_list}) == 1 + 18


def test_unicode_map_keys() -> None:
    # 3 + ("ключ" 8 + "😀" 4 + 1)
    assert item_size({"m": {"M": {"ключ": {"S": "😀"}}}}) == 1 + 3 + 13


def test_long_list() -> None:
    assert item_size({"l": {"L": [{"N": "1"}] * 10_000}}) == 1 + 3 + 10_000 * 3


def nested_maps(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"S": "x"}
    for _ in range(levels):
        value = {"M": {"a": value}}
    return {"a": value}


def test_nesting_limit() -> None:
    # each level: 3 + ("a" 1 + inner + 1), i.e. inner + 5
    assert item_size(nested_maps(32)) == 1 + 1 + 5 * 32
    with pytest.raises(ItemSizeError, match="nested deeper than 32 levels"):
        item_size(nested_maps(33))
    with pytest.raises(ItemSizeError, match="nested deeper than 32 levels"):
        item_size(nested_maps(5000))  # no RecursionError


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"a": {"M": []}}, r'attribute "a": M value must be an object, got an array'),
        ({"a": {"L": {}}}, r'attribute "a": L value must be an array, got an object'),
        ({"a": {"L": ["x"]}}, r'attribute "a"\[0\]: expected a typed attribute value like \{"S": ...\}, got a string'),
        ({"a": {"M": {"b": {"N": 1}}}}, r'attribute "a"\."b": N value must be a string, got a number'),
        ({"a": {"M": {"b": {"L": [{"S": "x"}, {"Q": 1}]}}}}, r'attribute "a"\."b"\[1\]: unknown type tag "Q"'),
    ],
)
def test_container_shape_errors(item: dict[str, Any], message: str) -> None:
    with pytest.raises(ItemSizeError, match=message):
        item_size(item)


# ------------------------------------------------------------------------------------------------ sets


def test_sets_sum_elements_without_overhead() -> None:
    assert item_size({"ss": {"SS": ["a", "bc", "😀"]}}) == 2 + 1 + 2 + 4
    assert item_size({"ns": {"NS": ["1", "100", "12345"]}}) == 2 + 2 + 2 + 4
    assert item_size({"bs": {"BS": [b64(b"abc"), b64(b"12345")]}}) == 2 + 3 + 5
    assert item_size({"ss": {"SS": [""]}}) == 2


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ({"SS": []}, r'attribute "a": SS set is empty'),
        ({"NS": []}, "NS set is empty"),
        ({"SS": "abc"}, "SS value must be an array, got a string"),
        ({"SS": ["a", "a"]}, r'attribute "a"\[1\]: SS set contains a duplicate'),
        ({"NS": ["1", "1.0"]}, r'attribute "a"\[1\]: NS set contains a duplicate of "1.0"'),
        ({"NS": ["0", "-0"]}, "NS set contains a duplicate"),
        ({"BS": ["QQ==", "QR=="]}, "BS set contains a duplicate"),
        ({"SS": ["a", 1]}, r'attribute "a"\[1\]: S value must be a string'),
        ({"NS": ["1", "x"]}, r'attribute "a"\[1\]: invalid number "x"'),
        ({"BS": ["QQ==", "!"]}, r'attribute "a"\[1\]: invalid base64'),
    ],
)
def test_set_errors(typed: dict[str, Any], message: str) -> None:
    with pytest.raises(ItemSizeError, match=message):
        item_size({"a": typed})


def test_distinct_numbers_are_not_duplicates() -> None:
    assert item_size({"ns": {"NS": ["1", "10", "-1", "0.1"]}}) == 2 + 4 * 2


# ------------------------------------------------------------------------------------------------ value shape errors


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"tags": {"L": [{"S": "a"}, {"S": "b"}, {"X": "c"}]}}, r'^attribute "tags"\[2\]: unknown type tag "X"'),
        ({"a": "plain"}, r'^attribute "a": expected a typed attribute value like \{"S": ...\}, got a string'),
        ({"a": {}}, r'^attribute "a": empty attribute value'),
        ({"a": {"S": "x", "N": "1"}}, r'^attribute "a": attribute value has 2 type tags \("S", "N"\)'),
        ({"a": {"s": "x"}}, r'^attribute "a": unknown type tag "s"'),
        ({"a": {"S": 5}}, r'^attribute "a": S value must be a string, got a number'),
        ({1: {"S": "x"}}, "attribute name must be a string, got a number"),
    ],
)
def test_value_shape_errors(item: dict[Any, Any], message: str) -> None:
    with pytest.raises(ItemSizeError, match=message):
        item_size(item)


def test_item_must_be_a_mapping() -> None:
    with pytest.raises(ItemSizeError, match="an item must be a JSON object"):
        item_size([{"S": "x"}])  # type: ignore[arg-type]


def test_item_size_error_is_an_input_error() -> None:
    assert issubclass(ItemSizeError, InputError)


# ------------------------------------------------------------------------------------------------ property


@given(st.dictionaries(st.text(st.characters(codec="utf-8")), st.text(st.characters(codec="utf-8")), max_size=20))
def test_map_size_property(entries: dict[str, str]) -> None:
    typed = {"M": {name: {"S": value} for name, value in entries.items()}}
    expected = 3 + sum(len(name.encode()) + len(value.encode()) + 1 for name, value in entries.items())
    assert size_of(typed) == expected


# ------------------------------------------------------------------------------------------------ stream SizeBytes

KEYS = {"sk": {"S": "b"}, "pk": {"S": "a"}}


def image(data: str) -> dict[str, Any]:
    return {"data": {"S": data}, "sk": {"S": "b"}, "pk": {"S": "a"}}


@pytest.mark.parametrize(
    ("dynamodb", "expected"),
    [
        # KEYS_ONLY: (2 + 1) + (2 + 1)
        ({"Keys": KEYS, "SizeBytes": 6, "StreamViewType": "KEYS_ONLY"}, 6),
        # NEW_IMAGE INSERT: 6 + ("data" 4 + "test" 4 + 3 + 3)
        ({"Keys": KEYS, "NewImage": image("test"), "StreamViewType": "NEW_IMAGE"}, 20),
        # NEW_AND_OLD_IMAGES MODIFY: 6 + 15 + 14
        ({"Keys": KEYS, "NewImage": image("hello"), "OldImage": image("test"), "SequenceNumber": "2"}, 35),
        # REMOVE with OLD_IMAGE: 6 + 15
        ({"Keys": KEYS, "OldImage": image("hello"), "StreamViewType": "OLD_IMAGE"}, 21),
    ],
)
def test_stream_record_size_bytes_matches_real_records(dynamodb: dict[str, Any], expected: int) -> None:
    assert stream_record_size_bytes(dynamodb) == expected


def test_stream_record_errors() -> None:
    with pytest.raises(ItemSizeError, match="no Keys"):
        stream_record_size_bytes({"NewImage": image("x")})
    with pytest.raises(ItemSizeError, match=r'^NewImage: attribute "data": unknown type tag "Z"'):
        stream_record_size_bytes({"Keys": KEYS, "NewImage": {"data": {"Z": "x"}}})
    with pytest.raises(ItemSizeError, match="Keys must be an object"):
        stream_record_size_bytes({"Keys": None})


# ------------------------------------------------------------------------------------------------ capacity units


@pytest.mark.parametrize(
    ("size", "strong", "transactional", "expected"),
    [
        (0, True, False, 1.0),
        (1, True, False, 1.0),
        (4096, True, False, 1.0),
        (4097, True, False, 2.0),
        (409_600, True, False, 100.0),
        (0, False, False, 0.5),
        (4096, False, False, 0.5),
        (4097, False, False, 1.0),
        (12_288, False, False, 1.5),
        (4096, True, True, 2.0),
        (4097, True, True, 4.0),
        (4097, False, True, 4.0),  # transactional reads are strongly consistent
    ],
)
def test_read_capacity_units(size: int, strong: bool, transactional: bool, expected: float) -> None:
    assert read_capacity_units(size, strongly_consistent=strong, transactional=transactional) == expected


@pytest.mark.parametrize(
    ("size", "transactional", "expected"),
    [(0, False, 1), (1, False, 1), (1024, False, 1), (1025, False, 2), (409_600, False, 400), (1025, True, 4)],
)
def test_write_capacity_units(size: int, transactional: bool, expected: int) -> None:
    result = write_capacity_units(size, transactional=transactional)
    assert result == expected
    assert isinstance(result, int)


@pytest.mark.parametrize("size", [-1, True, 1.5])
def test_capacity_units_reject_bad_sizes(size: Any) -> None:
    with pytest.raises(ValueError, match="non-negative int"):
        read_capacity_units(size)
    with pytest.raises(ValueError, match="non-negative int"):
        write_capacity_units(size)


# ------------------------------------------------------------------------------------------------ result and limit


def sized_item(total: int) -> dict[str, Any]:
    # "pk" 2 + "k" 1, "blob" 4 + the string
    return {"pk": {"S": "k"}, "blob": {"S": "x" * (total - 7)}}


def test_item_near_the_limit() -> None:
    size = item_size(sized_item(409_000))
    assert size == 409_000
    result = ItemSizeResult(size)
    assert result.limit_bytes == ITEM_SIZE_LIMIT == 409_600
    assert result.percent_of_limit == pytest.approx(99.853515625)
    assert not result.over_limit
    assert result.to_dict() == {"size_bytes": 409_000, "limit_bytes": 409_600, "percent_of_limit": 99.85}


def test_item_at_and_over_the_limit() -> None:
    at = ItemSizeResult(item_size(sized_item(409_600)))
    assert at.to_dict() == {"size_bytes": 409_600, "limit_bytes": 409_600, "percent_of_limit": 100.0}
    assert not at.over_limit
    over = ItemSizeResult(409_601)
    assert over.over_limit
    assert over.to_dict()["percent_of_limit"] == 100.0


def test_result_dict_shape() -> None:
    result = ItemSizeResult(23)
    as_dict = result.to_dict()
    assert list(as_dict) == ["size_bytes", "limit_bytes", "percent_of_limit"]
    assert as_dict == {"size_bytes": 23, "limit_bytes": 409_600, "percent_of_limit": 0.01}
    assert isinstance(as_dict["percent_of_limit"], float)
    assert ItemSizeResult(0).to_dict()["percent_of_limit"] == 0.0
    with pytest.raises(AttributeError):
        result.size_bytes = 5  # type: ignore[misc]
    with pytest.raises(ValueError, match="invalid ItemSizeResult"):
        ItemSizeResult(-1)


# ------------------------------------------------------------------------------------------------ iter_items

ITEM_A = {"pk": {"S": "a"}}
ITEM_B = {"pk": {"S": "bb"}, "n": {"N": "12"}}


def items(data: bytes) -> list[Any]:
    return list(iter_items(data, "in.json"))


def test_single_object() -> None:
    assert items(b'{"pk": {"S": "a"}}') == [ITEM_A]
    assert items(b'\n\n  {\n  "pk": {\n    "S": "a"\n  }\n}\n') == [ITEM_A]  # pretty-printed
    assert items(b"{}") == [{}]


def test_array() -> None:
    assert items(b'[{"pk": {"S": "a"}}, {"pk": {"S": "bb"}, "n": {"N": "12"}}]') == [ITEM_A, ITEM_B]
    assert items(b"[]") == []


def test_json_lines() -> None:
    data = b'{"pk": {"S": "a"}}\n\n{"pk": {"S": "bb"}, "n": {"N": "12"}}\r\n   \n{"pk": {"S": "a"}}'
    assert items(data) == [ITEM_A, ITEM_B, ITEM_A]


def test_utf8_bom_is_ignored() -> None:
    assert items(b'\xef\xbb\xbf{"pk": {"S": "a"}}') == [ITEM_A]


def test_iter_item_results() -> None:
    data = b'{"pk": {"S": "a"}}\n{"pk": {"S": "bb"}, "n": {"N": "12"}}\n'
    results = list(iter_item_results(data, "-"))
    assert [r.size_bytes for r in results] == [3, 7]
    assert results[0].to_dict() == {"size_bytes": 3, "limit_bytes": 409_600, "percent_of_limit": 0.0}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "in.json: empty input"),
        (b"  \n\t\n", "in.json: empty input"),
        (b"hello", "in.json: line 1: not valid JSON"),
        (b"\n\nhello", "in.json: line 3: not valid JSON"),
        (b'{"pk": {"S": "a"', "in.json: line 1: not valid JSON"),
        (b'{\n  "pk": {"S": "a"},\n  "n": \n}', "in.json: line 4: not valid JSON"),
        (b'[{"pk": {"S": "a"}},\n {"pk": ]', "in.json: line 2: not valid JSON"),
        (b'{"pk": {"S": "a"}}\n{"pk": {"S": "b"}}\n{"pk": ', "in.json: line 3: not valid JSON"),
        (b'{"pk": {"S": "a"}}\n[{"pk": {"S": "b"}}]', "in.json: line 2: expected a JSON object"),
        (b'{"pk": {"S": "a"}}\n\n"text"', "in.json: line 3: expected a JSON object"),
        (b'{"pk": {"S": "a"}}\n{"x": {"Q": "b"}}', 'in.json: line 2: attribute "x": unknown type tag "Q"'),
        (b'{"pk": {"S": "a"}}\n{"x": "b"}', 'in.json: line 2: attribute "x": expected a typed attribute value'),
        (b"42", "in.json: expected a JSON object or array of objects, got a number"),
        (b'"x"', "in.json: expected a JSON object or array of objects, got a string"),
        (b"null", "in.json: expected a JSON object or array of objects, got null"),
        (b'[{"pk": {"S": "a"}}, "x"]', "in.json: item 2: expected a JSON object (an item), got a string"),
        (b'[{"pk": {"S": "a"}}, [1]]', "in.json: item 2: expected a JSON object (an item), got an array"),
        (b'[{"pk": {"S": "a"}}, {"pk": "a"}]', 'in.json: item 2: attribute "pk": expected a typed attribute value'),
        (b'[{"b": {"B": "%%%"}}]', 'in.json: item 1: attribute "b": invalid base64'),
        (b'{"n": {"N": "1e"}}', 'in.json: item 1: attribute "n": invalid number "1e"'),
        (b'{"n": {"N": 12}}', 'in.json: item 1: attribute "n": N value must be a string'),
        (b'{"s": {"S": "\\ud800"}}', "in.json: line 1: not valid JSON"),
        (b'{"s": {"S": "\xff"}}', "in.json: line 1: not valid JSON"),
    ],
)
def test_iter_items_errors(data: bytes, message: str) -> None:
    with pytest.raises(ItemSizeError) as info:
        items(data)
    assert str(info.value).startswith(message), str(info.value)


def test_iter_items_yields_valid_items_before_the_bad_one() -> None:
    iterator = iter_items(b'{"pk": {"S": "a"}}\n{"pk": {"S": "b"}}\n{"pk": {"Q": 1}}\n', "f")
    assert next(iterator) == ITEM_A
    assert next(iterator) == {"pk": {"S": "b"}}
    with pytest.raises(ItemSizeError, match=r'^f: line 3: attribute "pk": unknown type tag "Q"'):
        next(iterator)

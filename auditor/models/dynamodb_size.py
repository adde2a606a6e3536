"""Exact DynamoDB item size, by AWS's documented rules, and the capacity units an item costs.

``item_size`` sizes one item in DynamoDB JSON (``ddb-audit item-size`` and the stream watcher use it),
``stream_record_size_bytes`` a stream record's ``SizeBytes``, and ``read_capacity_units``/``write_capacity_units``
what a read or write costs. Malformed input raises ``ItemSizeError`` (an ``InputError``: the CLI exits 2) naming
the attribute path. The rules per type, with AWS's wording and the few decided or inferred cases, are in
docs/item-sizes.md.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from auditor.exceptions import InputError

__all__ = [
    "ITEM_SIZE_LIMIT",
    "MAX_NESTING_DEPTH",
    "MAX_SIGNIFICANT_DIGITS",
    "ItemSizeError",
    "ItemSizeResult",
    "item_size",
    "iter_item_results",
    "iter_items",
    "read_capacity_units",
    "stream_record_size_bytes",
    "write_capacity_units",
]

ITEM_SIZE_LIMIT: Final = 409_600
"""DynamoDB's maximum item size, 400 KB, attribute names included."""

MAX_SIGNIFICANT_DIGITS: Final = 38
MAX_NESTING_DEPTH: Final = 32

_READ_UNIT_BYTES: Final = 4096
_WRITE_UNIT_BYTES: Final = 1024
_CONTAINER_OVERHEAD: Final = 3
_ELEMENT_OVERHEAD: Final = 1
# Magnitude range of a non-zero DynamoDB number, as the exponent of its leading digit: 1E-130 .. 9.99...E+125.
_MIN_EXPONENT: Final = -130
_MAX_EXPONENT: Final = 125

_NUMBER_RE: Final = re.compile(
    r"(?P<sign>[+-]?)(?:(?P<int>[0-9]+)(?:\.(?P<frac1>[0-9]*))?|\.(?P<frac2>[0-9]+))(?:[eE](?P<exp>[+-]?[0-9]+))?"
)
_TYPE_TAGS: Final = frozenset({"S", "N", "B", "BOOL", "NULL", "L", "M", "SS", "NS", "BS"})


class ItemSizeError(InputError):
    """An item (or the input holding it) is not valid DynamoDB JSON."""


# ----------------------------------------------------------------------------------------------------------- paths

_PathPart = str | int
_Path = tuple[_PathPart, ...]


def _quote(name: str) -> str:
    try:
        return orjson.dumps(name).decode()
    except TypeError:  # lone surrogates: escape them so the message stays printable
        return json.dumps(name)


def _format_path(path: _Path) -> str:
    """``("tags", 2, "x")`` -> ``"tags"[2]."x"``."""
    out: list[str] = []
    for i, part in enumerate(path):
        if isinstance(part, int):
            out.append(f"[{part}]")
        else:
            out.append(_quote(part) if i == 0 else "." + _quote(part))
    return "".join(out)


def _fail(path: _Path, message: str) -> ItemSizeError:
    if not path:
        return ItemSizeError(message)
    return ItemSizeError(f"attribute {_format_path(path)}: {message}")


def _describe(value: object) -> str:
    """A short, JSON-ish name of a value's type for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


# ----------------------------------------------------------------------------------------------------------- scalars


def _utf8_len(text: str, path: _Path, what: str) -> int:
    if text.isascii():
        return len(text)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise _fail(path, f"{what} is not valid Unicode (lone surrogate at index {exc.start})") from None


def _parse_number(text: object, path: _Path) -> tuple[bool, str, int]:
    """Validate a DynamoDB number string and normalise it.

    Returns ``(negative, significant_digits, exponent)`` such that the value is
    ``(-1 if negative else 1) * int(significant_digits) * 10 ** exponent``; zero is ``(False, "", 0)``.
    """
    if not isinstance(text, str):
        raise _fail(path, f"N value must be a string, got {_describe(text)}")
    match = _NUMBER_RE.fullmatch(text)
    if match is None:
        raise _fail(path, f"invalid number {_quote(text)}")
    int_part = match["int"] or ""
    frac = match["frac1"] or match["frac2"] or ""
    digits = (int_part + frac).lstrip("0")
    stripped = digits.rstrip("0")
    if not stripped:
        return (False, "", 0)
    if len(stripped) > MAX_SIGNIFICANT_DIGITS:
        raise _fail(
            path,
            f"number {_quote(text)} has {len(stripped)} significant digits (DynamoDB allows {MAX_SIGNIFICANT_DIGITS})",
        )
    exp_text = match["exp"] or "0"
    exp_digits = exp_text.lstrip("+-").lstrip("0")
    if len(exp_digits) > 6:  # far outside the range, and int() of a huge string is slow or refused
        raise _fail(path, f"number {_quote(text)} is out of DynamoDB's range (1E-130 to 9.9...E+125)")
    exponent = int(exp_text) - len(frac) + (len(digits) - len(stripped))
    leading = exponent + len(stripped) - 1
    if not _MIN_EXPONENT <= leading <= _MAX_EXPONENT:
        raise _fail(path, f"number {_quote(text)} is out of DynamoDB's range (1E-130 to 9.9...E+125)")
    return (match["sign"] == "-", stripped, exponent)


def _number_size(text: object, path: _Path) -> int:
    _, significant, _ = _parse_number(text, path)
    return (len(significant) + 1) // 2 + 1


def _binary(value: object, path: _Path) -> bytes:
    """The raw bytes of a ``B`` value: strict base64 text, or bytes as a boto3 low-level client returns them."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if not isinstance(value, str):
        raise _fail(path, f"B value must be a base64 string, got {_describe(value)}")
    if not value.isascii():
        raise _fail(path, "invalid base64: non-ASCII character")
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except binascii.Error as exc:
        raise _fail(path, f"invalid base64: {exc}") from None


def _string_size(value: object, path: _Path) -> int:
    if not isinstance(value, str):
        raise _fail(path, f"S value must be a string, got {_describe(value)}")
    return _utf8_len(value, path, "S value")


# ----------------------------------------------------------------------------------------------------------- values


def _set_elements(tag: str, value: object, path: _Path) -> Sequence[object]:
    if not isinstance(value, list | tuple):
        raise _fail(path, f"{tag} value must be an array, got {_describe(value)}")
    if not value:
        raise _fail(path, f"{tag} set is empty (DynamoDB rejects empty sets)")
    return value


def _value_size(typed: object, path: _Path, depth: int) -> int:
    """Size of one typed attribute value ``{TAG: value}`` (without its name)."""
    if not isinstance(typed, Mapping):
        raise _fail(path, f'expected a typed attribute value like {{"S": ...}}, got {_describe(typed)}')
    if len(typed) != 1:
        if not typed:
            raise _fail(path, "empty attribute value {} (expected exactly one type tag)")
        tags = ", ".join(_quote(str(t)) for t in typed)
        raise _fail(path, f"attribute value has {len(typed)} type tags ({tags}); expected exactly one")
    ((tag, value),) = typed.items()
    if tag == "S":
        return _string_size(value, path)
    if tag == "N":
        return _number_size(value, path)
    if tag == "B":
        return len(_binary(value, path))
    if tag == "BOOL":
        if not isinstance(value, bool):
            raise _fail(path, f"BOOL value must be true or false, got {_describe(value)}")
        return 1
    if tag == "NULL":
        if value is not True:
            raise _fail(path, f"NULL value must be true, got {orjson.dumps(value, default=str).decode()}")
        return 1
    if tag == "M":
        if not isinstance(value, Mapping):
            raise _fail(path, f"M value must be an object, got {_describe(value)}")
        _check_depth(path, depth + 1)
        return _CONTAINER_OVERHEAD + _attributes_size(value, path, depth + 1, per_element=_ELEMENT_OVERHEAD)
    if tag == "L":
        if not isinstance(value, list | tuple):
            raise _fail(path, f"L value must be an array, got {_describe(value)}")
        _check_depth(path, depth + 1)
        total = _CONTAINER_OVERHEAD + _ELEMENT_OVERHEAD * len(value)
        for index, element in enumerate(value):
            total += _value_size(element, (*path, index), depth + 1)
        return total
    if tag == "SS":
        elements = _set_elements(tag, value, path)
        total = 0
        for index, element in enumerate(elements):
            total += _string_size(element, (*path, index))
        _check_unique(tag, elements, path)
        return total
    if tag == "NS":
        elements = _set_elements(tag, value, path)
        total = 0
        parsed: set[tuple[bool, str, int]] = set()
        for index, element in enumerate(elements):
            number = _parse_number(element, (*path, index))
            if number in parsed:
                raise _fail((*path, index), f"NS set contains a duplicate of {_quote(str(element))}")
            parsed.add(number)
            total += (len(number[1]) + 1) // 2 + 1
        return total
    if tag == "BS":
        elements = _set_elements(tag, value, path)
        decoded = [_binary(element, (*path, index)) for index, element in enumerate(elements)]
        _check_unique(tag, decoded, path)
        return sum(map(len, decoded))
    shown = _quote(tag) if isinstance(tag, str) else repr(tag)
    raise _fail(path, f"unknown type tag {shown} (expected one of {', '.join(sorted(_TYPE_TAGS))})")


def _check_depth(path: _Path, depth: int) -> None:
    if depth > MAX_NESTING_DEPTH:
        raise _fail(path, f"nested deeper than {MAX_NESTING_DEPTH} levels (DynamoDB's limit)")


def _check_unique(tag: str, elements: Sequence[object], path: _Path) -> None:
    seen: set[object] = set()
    for index, element in enumerate(elements):
        if element in seen:
            raise _fail((*path, index), f"{tag} set contains a duplicate element")
        seen.add(element)


def _attributes_size(attributes: Mapping[Any, Any], path: _Path, depth: int, *, per_element: int) -> int:
    total = per_element * len(attributes)
    for name, typed in attributes.items():
        if not isinstance(name, str):
            raise _fail(path, f"attribute name must be a string, got {_describe(name)}")
        child = (*path, name)
        total += _utf8_len(name, child, "attribute name") + _value_size(typed, child, depth)
    return total


# ----------------------------------------------------------------------------------------------------------- public


def item_size(item: Mapping[str, Any]) -> int:
    """The size in bytes of one item in DynamoDB JSON, e.g. ``{"pk": {"S": "a"}, "n": {"N": "12"}}`` -> 6.

    Raises ``ItemSizeError`` if the item is not valid DynamoDB JSON (see the module docstring for the rules).
    """
    if not isinstance(item, Mapping):
        raise ItemSizeError(f"an item must be a JSON object of attributes, got {_describe(item)}")
    return _attributes_size(item, (), 0, per_element=0)


def stream_record_size_bytes(dynamodb: Mapping[str, Any]) -> int:
    """A DynamoDB Streams record's ``SizeBytes``, from its ``dynamodb`` member.

    ``item_size(Keys) + item_size(NewImage) + item_size(OldImage)``, counting only the images present (key
    attributes are counted again inside each image). This is not the item size: use ``item_size(NewImage)``, or
    ``OldImage`` for a ``REMOVE``, for that.
    """
    if not isinstance(dynamodb, Mapping):
        raise ItemSizeError(f"a stream record's dynamodb member must be an object, got {_describe(dynamodb)}")
    if "Keys" not in dynamodb:
        raise ItemSizeError("stream record has no Keys")
    total = 0
    for member in ("Keys", "NewImage", "OldImage"):
        image = dynamodb.get(member)
        if image is None and member != "Keys":
            continue
        if not isinstance(image, Mapping):
            raise ItemSizeError(f"stream record {member} must be an object, got {_describe(image)}")
        try:
            total += item_size(image)
        except ItemSizeError as exc:
            raise ItemSizeError(f"{member}: {exc}") from None
    return total


def read_capacity_units(size_bytes: int, *, strongly_consistent: bool = True, transactional: bool = False) -> float:
    """RCUs to read ``size_bytes``: 1 per started 4 KB (at least 1); eventually consistent = half; transactional = 2x.

    Transactional reads are always strongly consistent, so ``transactional=True`` ignores ``strongly_consistent``.
    For a Query or Scan pass the summed size of the items read: DynamoDB rounds the total, not each item.
    """
    _check_size(size_bytes)
    units = max(1, -(-size_bytes // _READ_UNIT_BYTES))
    if transactional:
        return float(2 * units)
    return float(units) if strongly_consistent else units / 2


def write_capacity_units(size_bytes: int, *, transactional: bool = False) -> int:
    """WCUs to write an item of ``size_bytes``: 1 per started 1 KB (at least 1); transactional = 2x."""
    _check_size(size_bytes)
    units = max(1, -(-size_bytes // _WRITE_UNIT_BYTES))
    return 2 * units if transactional else units


def _check_size(size_bytes: int) -> None:
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes < 0:
        raise ValueError(f"size_bytes must be a non-negative int, got {size_bytes!r}")


@dataclass(frozen=True, slots=True)
class ItemSizeResult:
    """One item's size against the limit. ``percent_of_limit`` is computed: ``ItemSizeResult(23)``."""

    size_bytes: int
    limit_bytes: int = ITEM_SIZE_LIMIT
    percent_of_limit: float = field(init=False)

    def __post_init__(self) -> None:
        if self.size_bytes < 0 or self.limit_bytes <= 0:
            raise ValueError(f"invalid ItemSizeResult({self.size_bytes}, limit_bytes={self.limit_bytes})")
        object.__setattr__(self, "percent_of_limit", 100.0 * self.size_bytes / self.limit_bytes)

    @property
    def over_limit(self) -> bool:
        return self.size_bytes > self.limit_bytes

    def to_dict(self) -> dict[str, Any]:
        """The SPEC's JSON shape; the percentage is rounded to 2 decimals."""
        return {
            "size_bytes": self.size_bytes,
            "limit_bytes": self.limit_bytes,
            "percent_of_limit": round(self.percent_of_limit, 2),
        }


# ----------------------------------------------------------------------------------------------------------- input


def _located_items(data: bytes, source: str) -> Iterator[tuple[str, Any]]:
    """Split the CLI input into ``(location, item)`` pairs; the items are not validated yet.

    Formats: one JSON object (location ``item 1``), a JSON array of objects (``item N``, 1-based), or JSON lines
    (``line N``, 1-based, blank lines skipped). Empty input is an error: ``[]`` is the way to give zero items.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.strip()
    if not text:
        raise ItemSizeError(f"{source}: empty input (expected a DynamoDB JSON item, an array of items or JSON lines)")
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as whole_error:
        if text[:1] == b"{":
            lines = data.split(b"\n")
            first = next(i for i, line in enumerate(lines) if line.strip())
            try:
                orjson.loads(lines[first])
            except orjson.JSONDecodeError:
                pass  # not JSON lines: one (broken) document, possibly pretty-printed
            else:
                yield from _json_lines(lines, source)
                return
        raise _json_error(source, whole_error, data) from None
    if isinstance(document, list):
        for index, item in enumerate(document, 1):
            yield f"item {index}", item
    elif isinstance(document, dict):
        yield "item 1", document
    else:
        raise ItemSizeError(f"{source}: expected a JSON object or array of objects, got {_describe(document)}")


def _json_error(source: str, error: orjson.JSONDecodeError, data: bytes) -> ItemSizeError:
    # ``error`` comes from parsing ``data.strip()``: add the blank lines stripped from the front
    skipped = data[: len(data) - len(data.lstrip())].count(b"\n")
    return ItemSizeError(f"{source}: line {error.lineno + skipped}: not valid JSON: {error.msg}")


def _json_lines(lines: list[bytes], source: str) -> Iterator[tuple[str, Any]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ItemSizeError(f"{source}: line {number}: not valid JSON: {exc.msg}") from None
        yield f"line {number}", item


def _checked_size(location: str, item: object, source: str) -> int:
    if not isinstance(item, dict):
        raise ItemSizeError(f"{source}: {location}: expected a JSON object (an item), got {_describe(item)}")
    try:
        return item_size(item)
    except ItemSizeError as exc:
        raise ItemSizeError(f"{source}: {location}: {exc}") from None


def iter_items(data: bytes, source: str) -> Iterator[Mapping[str, Any]]:
    """Parse the ``ddb-audit item-size`` input: one item, a JSON array of items, or one item per line.

    Every item is fully validated before it is yielded. Errors are ``ItemSizeError`` whose message starts with
    ``"<source>: line N: "`` (JSON lines, or where a document is not valid JSON) or ``"<source>: item N: "``
    (1-based position in the array; a single object is item 1).
    """
    for location, item in _located_items(data, source):
        _checked_size(location, item, source)
        yield item


def iter_item_results(data: bytes, source: str) -> Iterator[ItemSizeResult]:
    """Like ``iter_items`` but yields each item's ``ItemSizeResult`` (sized once), in input order."""
    for location, item in _located_items(data, source):
        yield ItemSizeResult(_checked_size(location, item, source))

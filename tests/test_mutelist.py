"""``--mutelist`` files: read and validated (a UTF-8 byte order mark is skipped; anything else wrong is one
InputError naming the file); rules whose ``until`` has passed are named."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from auditor.exceptions import InputError
from auditor.mutelist import UTF8_BOM, expired_rules, load_mutelist

RULES = b'[{"table": "Orders*", "reason": "accepted"}, {"kind": "scan"}]'


@pytest.mark.parametrize("prefix", [b"", UTF8_BOM, UTF8_BOM + b" \n"])
def test_a_mute_list_with_or_without_a_byte_order_mark_reads_the_same(tmp_path: Path, prefix: bytes) -> None:
    path = tmp_path / "m.json"
    path.write_bytes(prefix + RULES)
    rules = load_mutelist(str(path))
    assert [(r.table, r.reason) for r in rules] == [("Orders*", "accepted"), (None, "muted by --mutelist")]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (UTF8_BOM + UTF8_BOM + RULES, "not valid JSON"),  # one mark is skipped, not any number
        (UTF8_BOM, "not valid JSON"),
        (b"\xff\xfe[\x00]\x00", "not valid JSON"),  # UTF-16 is not UTF-8
    ],
)
def test_only_one_utf8_byte_order_mark_is_skipped(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "m.json"
    path.write_bytes(data)
    with pytest.raises(InputError, match=message):
        load_mutelist(str(path))


def test_expired_rules_name_each_rule_whose_until_has_passed(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(
        '[{"table": "Orders*", "until": "2026-06-01T00:00:00Z", "reason": "migration"},'
        ' {"kind": "scan"},'
        ' {"principal": "arn:aws:iam::*:role/batch", "key": "USER#*", "until": "2026-12-01T12:00:00+02:00"},'
        ' {"table": "Later", "until": "2027-01-01T00:00:00Z"}]'
    )
    rules = load_mutelist(str(path))
    now = datetime(2026, 12, 5, tzinfo=UTC)
    assert expired_rules(rules, now) == [
        "mute rule [0] (table=Orders*) expired at 2026-06-01T00:00:00Z: it mutes nothing",
        "mute rule [2] (principal=arn:aws:iam::*:role/batch, key=USER#*) expired at 2026-12-01T10:00:00Z: it mutes "
        "nothing",
    ]
    assert expired_rules(rules, datetime(2026, 1, 1, tzinfo=UTC)) == []

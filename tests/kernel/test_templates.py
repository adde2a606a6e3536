from __future__ import annotations

import pytest

from auditor.kernel.aggregates.templates import key_template, value_template


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("USER#123", "USER#{n}"),
        ("b0c7a3d2-1111-4aaa-8bbb-123456789abc", "{uuid}"),
        ("ORDER#b0c7a3d2-1111-4aaa-8bbb-123456789abc", "ORDER#{uuid}"),
        ("ORDER#2026-12-01T10:00:00Z", "ORDER#{datetime}"),
        ("DAY#2026-12-01", "DAY#{date}"),
        ("TENANT#acme#USER#42", "TENANT#{s}#USER#{n}"),
        ("PENDING", "PENDING"),
        ("alice", "{s}"),
        ("a1b2c3d4e5f6", "{hex}"),
        ("01HF8Z2K3M4N5P6Q7R8S9T0V1W", "{id}"),
        ("bob@example.com", "{email}"),
        ("ORDER-123", "ORDER-{n}"),
        ("A|B|12", "A|B|{n}"),
        (42, "{n}"),
        (4.5, "{n}"),
        ("12.5", "{n}"),
        (True, "{bool}"),
        ("X" * 40, "{s}"),
        ("", ""),
    ],
)
def test_value_template(value: object, expected: str) -> None:
    assert value_template(value) == expected


def test_key_template_single_and_composite() -> None:
    assert key_template({"pk": "USER#1"}) == "pk=USER#{n}"  # a single-attribute key keeps its name
    assert key_template({"id": "abc"}) == "id={s}"
    assert key_template({"pk": "USER#1", "sk": "PROFILE"}) == "pk=USER#{n}, sk=PROFILE"
    assert key_template(None) is None
    assert key_template({}) is None


def test_templates_collapse_many_values() -> None:
    values = {value_template(f"CUSTOMER#{i}") for i in range(1000)}
    assert values == {"CUSTOMER#{n}"}

"""Every numeric setting of the configuration models has a range: limits (divisors) are more than 0; counts,
thresholds, durations and prices are at least 0; shares are from 0 to 1. A value out of range is refused when the
configuration is read, with a message naming the setting (never a ZeroDivisionError in a detector)."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import orjson
import pydantic
import pytest

from auditor import cli
from auditor.config import AnalysisConfig, Settings
from auditor.detectors.registry import all_detectors
from auditor.whatif.limits import WhatIfConfig

#: The settings that are limits: a detector divides by them or compares a rate with them.
_LIMIT = re.compile(
    r"units_per_second$|^partition_\w+_units$|quota|^account_table_\w+_limit$|^on_demand_initial|per_page$"
)
#: The settings that are a share of a whole.
_SHARE = re.compile(r"share|concentration")


def _models() -> list[type[pydantic.BaseModel]]:
    detector_models = {d.config_model for d in all_detectors()}
    return [*sorted(detector_models, key=lambda m: m.__name__), AnalysisConfig, WhatIfConfig, Settings]


def _numeric_fields() -> list[tuple[type[pydantic.BaseModel], str]]:
    out = []
    for model in _models():
        for name, field in model.model_fields.items():
            if field.annotation in (int, float) or set(typing.get_args(field.annotation)) & {int, float}:
                out.append((model, name))
    return out


NUMERIC = _numeric_fields()


def test_every_model_has_numeric_settings() -> None:
    assert len({m for m, _ in NUMERIC}) == len(_models())
    assert len(NUMERIC) > 100


@pytest.mark.parametrize(("model", "name"), NUMERIC, ids=[f"{m.__name__}.{n}" for m, n in NUMERIC])
def test_negative_values_are_refused(model: type[pydantic.BaseModel], name: str) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        model.model_validate({name: -1})
    err = info.value.errors()[0]
    assert err["loc"] == (name,)
    assert "greater than" in err["msg"]


LIMITS = [(m, n) for m, n in NUMERIC if _LIMIT.search(n)]
SHARES = [(m, n) for m, n in NUMERIC if _SHARE.search(n)]


def test_the_limits_and_shares_are_found() -> None:
    names = {n for _, n in LIMITS}
    assert {
        "partition_read_units_per_second",
        "partition_write_units_per_second",
        "partition_units_per_second",
    } <= names
    assert {"min_share", "few_keys_share", "key_concentration"} <= {n for _, n in SHARES}


@pytest.mark.parametrize(("model", "name"), LIMITS, ids=[f"{m.__name__}.{n}" for m, n in LIMITS])
def test_a_limit_of_0_is_refused(model: type[pydantic.BaseModel], name: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="greater than 0"):
        model.model_validate({name: 0})


@pytest.mark.parametrize(("model", "name"), SHARES, ids=[f"{m.__name__}.{n}" for m, n in SHARES])
def test_a_share_is_at_most_1(model: type[pydantic.BaseModel], name: str) -> None:
    model.model_validate({name: 1})
    with pytest.raises(pydantic.ValidationError, match="less than or equal to 1"):
        model.model_validate({name: 1.5})


def test_a_partition_limit_of_0_is_an_input_error_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.json"
    config.write_bytes(orjson.dumps({"detectors": {"hot_key": {"partition_read_units_per_second": 0}}}))
    trail = tmp_path / "trail.json"
    trail.write_bytes(orjson.dumps({"Records": []}))
    assert cli.main(["analyze-trail", str(trail), "--config", str(config)]) == cli.EXIT_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "detectors.hot_key.partition_read_units_per_second" in err and "greater than 0" in err

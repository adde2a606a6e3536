"""The auditor's pydantic records (:mod:`auditor.models.base`): frozen, strict, and built only when first used."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from auditor.models.base import FrozenModel


class _Point(FrozenModel):
    x: int


def test_a_record_is_frozen_and_rejects_undeclared_fields() -> None:
    point = _Point(x=1)
    with pytest.raises(ValidationError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(ValidationError):
        _Point(x=1, y=2)  # type: ignore[call-arg]


def test_a_deferred_record_validates_on_first_use() -> None:
    class Late(FrozenModel):
        n: int

    assert not Late.__pydantic_complete__  # its schema is built when first used, not when declared
    with pytest.raises(ValidationError):
        Late(n="not a number")  # type: ignore[arg-type]
    assert Late(n=3).n == 3
    assert Late.__pydantic_complete__


def test_cli_start_up_does_not_build_the_schemas_it_does_not_use() -> None:
    # analyze-trail imports every command's modules; building every model's validator at import cost tens of ms of
    # each run's CPU (docs/performance.md). The billing result is only built when a billing run makes one.
    code = (
        "import auditor.cli, auditor.engine\n"
        "from auditor.models.billing import BillingResult\n"
        "print(BillingResult.__pydantic_complete__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"

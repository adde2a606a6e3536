"""What the Makefile's one environment relies on in pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_dev_extra_holds_everything_the_demo_extra_asks_for() -> None:
    # `make demo` runs in .venv, installed with the dev extra only (installing `.[demo]` on top would recompile).
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["demo"], "the demo extra is empty"
    assert set(extras["demo"]) <= set(extras["dev"])

"""The base of the auditor's pydantic records: a record is immutable once built, and a field it does not declare is
an error (in its input as in its constructor). Also the reading of a record's JSON file (a config, a price file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from auditor.exceptions import InputError

__all__ = ["FrozenModel", "read_json_file"]


class FrozenModel(BaseModel):
    """A pydantic model that cannot be changed once built and rejects fields it does not declare."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def read_json_file(path: Path, what: str, error: type[InputError] = InputError) -> Any:
    """The JSON document in ``path``; a file that cannot be read or is not JSON raises ``error``, naming the file and
    ``what`` it is (``config``, ``price file``)."""
    try:
        return orjson.loads(path.read_bytes())
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    except orjson.JSONDecodeError as exc:
        raise error(f"{path}: {what} is not valid JSON: {exc}") from exc

"""The one configuration tree of the detectors, keyed by detector id, with per-table overrides.

The same shape is read by ``ddb-audit --config FILE`` and by the service (``ANALYSIS_CONFIG_JSON``, the stack's
``AnalysisConfigJson`` parameter)::

    {"detectors": {"hot_key": {"min_share": 0.3}, "cw_scan": {"enabled": false}},
     "tables": {"Orders": {"hot_key": {"min_share": 0.5}}}}

A table's settings for a detector are its defaults, then ``detectors.<id>``, then ``tables.<table>.<id>`` (key by
key). Unknown ids and invalid values are errors when the tree is read, not when a detector runs.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import Field, ValidationError, model_validator

from auditor.detectors.base import DetectorConfig
from auditor.detectors.registry import all_detectors, get
from auditor.models.base import FrozenModel

__all__ = ["DetectorSettings"]


class DetectorSettings(FrozenModel):
    """Per-detector overrides (``detectors``) and per-table overrides of them (``tables``)."""

    #: Overrides by detector id (for every table).
    detectors: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: Overrides by table name, then detector id (win over ``detectors``).
    tables: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> DetectorSettings:
        known = {d.id for d in all_detectors()}

        def check(det_id: str, where: str) -> None:
            if det_id not in known:
                raise ValueError(f"unknown detector {det_id!r}{where} (known: {', '.join(sorted(known))})")

        def validate(det_id: str, table: str | None, where: str) -> None:
            try:
                self.detector_config(det_id, table)
            except ValidationError as exc:
                err = exc.errors()[0]
                loc = ".".join([where, *(str(x) for x in err["loc"])])
                raise ValueError(f"{loc}: {err['msg']}") from None

        for det_id in self.detectors:
            check(det_id, "")
            validate(det_id, None, f"detectors.{det_id}")
        for table, overrides in self.tables.items():
            for det_id in overrides:
                check(det_id, f" in tables.{table}")
                validate(det_id, table, f"tables.{table}.{det_id}")
        return self

    def overrides(self, detector_id: str, table: str | None = None) -> dict[str, Any]:
        """The merged overrides of one detector on ``table`` (on every table when None)."""
        merged = dict(self.detectors.get(detector_id, {}))
        if table is not None:
            merged.update(self.tables.get(table, {}).get(detector_id, {}))
        return merged

    def detector_config(self, detector_id: str, table: str | None = None) -> Any:
        """The config model instance of one detector on ``table`` (raises ``ValueError`` on an invalid value)."""
        config: DetectorConfig = get(detector_id).config(self.overrides(detector_id, table))
        return config

    @classmethod
    def from_tree(cls, tree: DetectorSettings) -> Self:
        """This model with ``tree``'s detector settings (and its own defaults for everything else)."""
        return cls(detectors=tree.detectors, tables=tree.tables)

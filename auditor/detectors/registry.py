"""The detector registry: every detector is declared here through :func:`register`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from auditor.aggregates.window import TableWindow
from auditor.detectors.base import C, DetectFn, Detector, DetectorMetadata
from auditor.models.finding import Finding

_REGISTRY: dict[str, Detector[Any]] = {}


def register(metadata: DetectorMetadata, config: type[C]) -> Callable[[DetectFn[C]], DetectFn[C]]:
    """Declare a detection function with its metadata and config model. Ids must be unique."""

    def wrap(fn: Callable[[TableWindow, C], list[Finding]]) -> Callable[[TableWindow, C], list[Finding]]:
        if metadata.id in _REGISTRY:
            raise ValueError(f"duplicate detector id {metadata.id!r}")
        _REGISTRY[metadata.id] = Detector(metadata, config, fn)
        return fn

    return wrap


def all_detectors() -> list[Detector[Any]]:
    """Every registered detector, in id order."""
    import auditor.detectors  # noqa: F401  (registration happens on import)

    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get(detector_id: str) -> Detector[Any]:
    """One detector by id."""
    import auditor.detectors  # noqa: F401

    return _REGISTRY[detector_id]

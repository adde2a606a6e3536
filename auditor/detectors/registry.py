"""The detector catalogue: every detector is declared through :func:`register`, whatever its input.

Importing :mod:`auditor.detectors` imports every detector module, so the catalogue is complete once any of its
functions can be called. :func:`guarded` is the one failure guard every runner uses: a detector that raises on one
table is logged and reported, never fatal to the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from auditor.detectors.base import C, Detector, DetectorInput, DetectorMetadata, I
from auditor.models.finding import Finding, FindingKind

__all__ = ["all_detectors", "by_kind", "get", "guarded", "primary", "register"]

log = structlog.get_logger(__name__)

_REGISTRY: dict[str, Detector[Any, Any]] = {}


def register(
    metadata: DetectorMetadata, config: type[C], input: DetectorInput = DetectorInput.TRAIL_WINDOW
) -> Callable[[Callable[[I, C], list[Finding]]], Detector[I, C]]:
    """Declare a detection function ``detect(data, config)`` with its metadata, config model and input.

    The function is replaced by its :class:`Detector`, which is callable the same way (``config`` optional). Ids
    must be unique.
    """

    def wrap(fn: Callable[[I, C], list[Finding]]) -> Detector[I, C]:
        if metadata.id in _REGISTRY:
            raise ValueError(f"duplicate detector id {metadata.id!r}")
        detector = Detector(metadata, config, fn, input, fn.__module__)
        _REGISTRY[metadata.id] = detector
        return detector

    return wrap


def all_detectors(input: DetectorInput | None = None) -> list[Detector[Any, Any]]:
    """Every registered detector (of one input, when given), in id order."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY) if input is None or _REGISTRY[k].input == input]


def get(detector_id: str) -> Detector[Any, Any]:
    """One detector by id (``KeyError`` for an unknown id)."""
    return _REGISTRY[detector_id]


def by_kind(kind: FindingKind) -> list[Detector[Any, Any]]:
    """The detectors that make findings of ``kind``, in id order."""
    return [d for d in all_detectors() if d.metadata.kind == kind]


def primary(kind: FindingKind) -> Detector[Any, Any]:
    """The detector named after ``kind`` (every kind has one; its docs link and remediation speak for the kind)."""
    return _REGISTRY[kind.value]


def guarded(errors: list[str], detector_id: str, table: str, fn: Callable[[], list[Finding]]) -> list[Finding]:
    """``fn()``, or nothing when it raises: the failure is logged and ``"<id> on <table>: <Error>: <text>"`` is
    appended to ``errors`` (one table's or one detector's bug must not hide the other findings)."""
    try:
        return fn()
    except Exception as exc:
        log.exception("detector_failed", detector_id=detector_id, table=table)
        errors.append(f"{detector_id} on {table}: {type(exc).__name__}: {exc}")
        return []

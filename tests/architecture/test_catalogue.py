"""The detector catalogue's meta-test: every detector module under ``auditor/detectors/`` declares its detector
through the one registry, ids are unique, every finding kind has a detector, and every detector has a docs link,
remediation, a default config and a test module."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import auditor.detectors
from auditor.detectors.base import Detector, DetectorConfig, DetectorInput
from auditor.detectors.registry import all_detectors, by_kind, get, primary
from auditor.models.finding import KIND_LABELS, FindingKind

ROOT = Path(__file__).resolve().parents[2]
#: Modules of the detectors package that declare no detector (the abstraction, the catalogue, shared helpers).
HELPERS = {
    "auditor.detectors.base",
    "auditor.detectors.registry",
    "auditor.detectors.settings",
    "auditor.detectors.metrics.common",
    "auditor.detectors.findings.item_story",
    "auditor.detectors.findings.key_story",
    "auditor.detectors.findings.throttling_story",
    "auditor.detectors.findings.scan_volume",
    "auditor.detectors.findings.period",
    "auditor.detectors.trail.timebucket",
    "auditor.detectors.trail.key_spaces",
    "auditor.detectors.billing.gate",
}


def _modules() -> list[str]:
    return sorted(
        m.name
        for m in pkgutil.walk_packages(auditor.detectors.__path__, "auditor.detectors.")
        if not m.ispkg and m.name not in HELPERS
    )


def _detectors_in(module: str) -> list[Detector[object, DetectorConfig]]:
    mod = importlib.import_module(module)
    return [v for v in vars(mod).values() if isinstance(v, Detector) and v.module == module]


def test_the_walk_finds_every_detector_module() -> None:
    files = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "auditor" / "detectors").rglob("*.py")
        if p.name != "__init__.py"
    }
    assert set(_modules()) == files - HELPERS
    assert len(_modules()) == len(all_detectors())


@pytest.mark.parametrize("module", _modules())
def test_every_module_declares_one_registered_detector(module: str) -> None:
    [det] = _detectors_in(module)
    assert get(det.id) is det
    # the module's source registers it with the decorator (no second mechanism)
    tree = ast.parse(Path(importlib.import_module(module).__file__ or "").read_text())
    decorated = [
        f.name
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef)
        and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "register" for d in f.decorator_list)
    ]
    assert len(decorated) == 1


def test_ids_are_unique_and_every_detector_is_in_a_module() -> None:
    ids = [d.id for d in all_detectors()]
    assert len(ids) == len(set(ids))
    assert {d.module for d in all_detectors()} == set(_modules())


@pytest.mark.parametrize("kind", list(FindingKind))
def test_every_finding_kind_has_a_detector_and_a_label(kind: FindingKind) -> None:
    assert primary(kind).metadata.kind is kind
    assert primary(kind) in by_kind(kind)
    assert KIND_LABELS[kind]


@pytest.mark.parametrize("det", all_detectors(), ids=lambda d: d.id)
def test_every_detector_has_docs_remediation_inputs_and_defaults(det: Detector[object, DetectorConfig]) -> None:
    meta = det.metadata
    assert str(meta.docs_url).startswith("https://docs.aws.amazon.com/")
    assert meta.risk and meta.remediation
    assert det.input in DetectorInput
    assert det.config().enabled is True  # the default config is valid and on
    assert det.config({"enabled": False}).enabled is False


def _tests_text() -> dict[Path, str]:
    return {p: p.read_text() for p in (ROOT / "tests").rglob("test_*.py")}


@pytest.mark.parametrize("det", all_detectors(), ids=lambda d: d.id)
def test_every_detector_has_a_test_module(det: Detector[object, DetectorConfig]) -> None:
    package, _, name = det.module.rpartition(".")
    imports = re.compile(
        rf"{re.escape(det.module)}\b|from {re.escape(package)} import [^\n]*\b{name}\b|get\(\"{det.id}\"\)"
    )
    users = [p.name for p, text in _tests_text().items() if imports.search(text) and p.name != "test_catalogue.py"]
    assert users, f"no test module imports {det.module}"


def test_the_architecture_doc_maps_every_detector_id_to_its_file() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| `[a-z_]+` \| [a-z_]+ \| \[`([^`]+)`\]", text, re.M))
    assert rows == {d.id: d.module.replace(".", "/") + ".py" for d in all_detectors()}
    assert all((ROOT / path).is_file() for path in rows.values())

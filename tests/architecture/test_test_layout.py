"""The tests mirror the package tree: a module's tests are found by its path.

The tests of ``auditor/<package>/<module>.py`` sit under ``tests/<package>/`` (subpackages likewise), those of a
top-level module ``auditor/<module>.py`` in ``tests/`` itself, those of ``handlers/`` under ``tests/handlers/`` and
those of ``benchmarks/`` under ``tests/benchmarks/``. Three folders are not about one package: ``tests/template/``
(template.yaml), ``tests/fuzz/`` (hostile inputs through the whole pipeline) and ``tests/architecture/`` (rules over
the whole code base). Every folder of test modules is a package (``__init__.py``): tests import each other's helpers
as ``tests.<package>.test_<name>``.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: Folders of tests/ that mirror no package, and why.
NOT_MIRRORED = {
    "template": "template.yaml",
    "fuzz": "hostile inputs across the pipeline",
    "architecture": "rules over the whole code base",
    "faults": "faults injected into every AWS call of the deployed pipeline's handlers",
}
#: Top-level code packages besides auditor/ whose folders the tests mirror.
OTHER_PACKAGES = ("handlers", "benchmarks")


def _test_modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def _mirrored(folder: tuple[str, ...]) -> Path | None:
    """The package or module of the code that a folder of tests/ (parts relative to tests/) mirrors, if any."""
    if not folder:
        return ROOT / "auditor"
    if folder[0] in OTHER_PACKAGES:
        base = ROOT.joinpath(*folder)
    else:
        base = ROOT.joinpath("auditor", *folder)
    if (base / "__init__.py").is_file():
        return base
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def test_there_are_test_modules() -> None:
    modules = _test_modules()
    assert len(modules) > 50
    assert any(p.parent == TESTS for p in modules)


def test_every_test_module_sits_in_a_folder_that_mirrors_the_code() -> None:
    strays = []
    for path in _test_modules():
        folder = path.parent.relative_to(TESTS).parts
        if folder and folder[0] in NOT_MIRRORED:
            continue
        if _mirrored(folder) is None:
            strays.append(path.relative_to(ROOT).as_posix())
    assert not strays, (
        "these test modules sit in folders that mirror no package or module of auditor/, handlers/ or benchmarks/ "
        f"(move them to tests/<package>/): {strays}"
    )


def test_every_folder_of_test_modules_is_a_package() -> None:
    folders = {p.parent for p in _test_modules()}
    missing = sorted(
        d.relative_to(ROOT).as_posix()
        for folder in folders
        for d in (folder, *folder.parents)
        if d.is_relative_to(TESTS) and not (d / "__init__.py").is_file()
    )
    assert not missing, f"add an __init__.py to: {missing}"


def test_the_exempt_folders_exist() -> None:
    assert all((TESTS / name).is_dir() for name in NOT_MIRRORED)

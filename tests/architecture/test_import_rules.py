"""Import rules of the code base (AST, no imports executed, except by the kernel test):

1. Layers (:data:`LAYERS`): a module imports only its own layer and the layers below it (no upward imports). Every
   import counts: at module level, inside functions and type-only ones under ``if TYPE_CHECKING:`` (a type that a
   lower layer needs belongs in that layer, or a ``Protocol`` of it in ``auditor/models/``). ``from auditor.x import
   name`` where ``name`` is a submodule counts as importing that submodule.
2. Sources and sinks do not import each other; nothing in ``auditor/`` except the demo imports ``handlers``.
3. AWS I/O: only the paths in :data:`IO_ALLOWED` (the sources, the sinks and stores, ``handlers/``, the demo and the
   CLI wiring) import boto3 or botocore (``botocore.exceptions`` aside: catching an SDK error is not I/O),
   make a client (``.client(...)``) or call a method of one (a parameter or attribute annotated as a ``...Client``).
   Type-only imports (the ``mypy_boto3`` client types under ``if TYPE_CHECKING:``) are not I/O and are not counted.
4. No import cycle between the modules of ``auditor/`` (:func:`test_no_import_cycle_in_auditor`).
5. The pure CloudTrail kernel (``auditor/kernel/``) loads neither boto3, botocore nor pydantic: each of its modules is
   imported in a fresh interpreter (:func:`test_the_kernel_loads_neither_boto3_botocore_nor_pydantic`).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Layer of each unit of ``auditor`` (a top-level module or package, or a module of a package listed on its own as
#: ``package.module``) and of ``handlers``: a module may import units of its own layer or below, never above.
#:
#: 0. Errors and plain typed data shared by everything above (records, pure rules on them).
#: 1. Pure foundations. ``kernel`` is the pure CloudTrail kernel, ``auditor/kernel/``: the record reader, the
#:    normaliser with PartiQL and key-condition parsing, dedupe, the ingest counters, the calls it hands out and the
#:    window aggregates (no boto3, botocore or pydantic). Beside it: escaping, redaction, the finding lifecycle, the
#:    logging set-up and DynamoDB's documented limits.
#: 2. The pure detectors.
#: 3. What is built on findings and records: billing decisions, the report, settings, output formats, the mute list,
#:    the text renderers, the cost ledger and planner, the what-if.
#: 4. AWS I/O: the sources read; the sinks (and the service's stores) write. Sources and sinks never import each other.
#: 5. Wiring: the analysis engine and the service's use cases.
#: 6. The Lambda entry points. 7. The CLI and the demo. 8. ``python -m auditor``.
LAYERS: dict[str, int] = {
    "exceptions": 0,
    "models": 0,
    "messages": 0,
    "kernel": 1,
    "escaping": 1,
    "redact": 1,
    "lifecycle": 1,
    "observability": 1,
    "detectors": 2,
    "billing": 3,
    "report": 3,
    "config": 3,
    "formats": 3,
    "mutelist": 3,
    "findings_text": 3,
    "cost": 3,
    "whatif": 3,
    "review": 3,
    #: DynamoDB's documented per-partition and per-table limits (pure; the traffic detectors use them).
    "whatif.limits": 1,
    "sources": 4,
    "sinks": 4,
    "state": 4,
    "engine": 5,
    "service": 5,
    "handlers": 6,
    "cli": 7,
    "demo": 7,
    "__main__": 8,
}
IO_ALLOWED = ("auditor/sources/", "auditor/sinks/", "auditor/state/", "handlers/", "auditor/demo/", "auditor/cli/")
#: Known violations still to move into sources/ or sinks/, each with what it does. The test fails when one of them
#: stops violating (take it off the list) or a new one appears.
KNOWN_IO_OUTSIDE: dict[str, str] = {}
#: What the pure CloudTrail kernel must not load.
NOT_IN_KERNEL = ("boto3", "botocore", "pydantic")


def _python_files() -> list[Path]:
    return sorted([*(ROOT / "auditor").rglob("*.py"), *(ROOT / "handlers").rglob("*.py")])


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _module_name(path: Path) -> str:
    """``auditor/cost/ledger.py`` -> ``auditor.cost.ledger``; a package's ``__init__.py`` is the package's name."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> frozenset[str]:
    """Every module and package of ``auditor`` and ``handlers``, by dotted name."""
    return frozenset(_module_name(p) for p in _python_files())


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _unit(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "handlers":
        return "handlers"
    if parts[0] != "auditor" or len(parts) < 2:
        return None
    return ".".join(parts[1:3]) if ".".join(parts[1:3]) in LAYERS else parts[1]


def _own_unit(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("").parts
    if rel[0] == "handlers":
        return "handlers"
    return ".".join(rel[1:3]) if ".".join(rel[1:3]) in LAYERS else rel[1]


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def _from_base(node: ast.ImportFrom, path: Path) -> str | None:
    """The absolute module of ``from <module> import ...`` in ``path`` (relative imports resolved)."""
    if node.level == 0:
        return node.module
    package = _module_name(path).split(".")
    if not _is_package(path):
        package = package[:-1]
    if node.level > 1:
        package = package[: len(package) - node.level + 1]
    return ".".join([*package, *([node.module] if node.module else [])]) or None


def _imports(tree: ast.Module, path: Path, *, runtime_only: bool) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in the tree, at any depth (in functions too); ``runtime_only`` leaves out
    the type-only ones (under ``if TYPE_CHECKING:``).

    ``from package import name`` is an import of ``package.name`` when that is a module of ``auditor`` or
    ``handlers`` (always for ``from auditor import name``), else of ``package``.
    """
    skip = _type_checking_nodes(tree) if runtime_only else set()
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (base := _from_base(node, path)):
            subs = [f"{base}.{a.name}" for a in node.names]
            found += [(node.lineno, s) for s in subs if base == "auditor" or s in _modules()]
            if base != "auditor" and any(s not in _modules() for s in subs):
                found.append((node.lineno, base))
    return sorted(found)


def _upward(path: Path, text: str | None = None) -> list[str]:
    own = _own_unit(path)
    problems = []
    for line, module in _imports(ast.parse(path.read_text() if text is None else text), path, runtime_only=False):
        unit = _unit(module)
        if unit is None or unit == own:
            continue
        if LAYERS[unit] > LAYERS[own]:
            problems.append(f"{_rel(path)}:{line}: {own} (layer {LAYERS[own]}) imports {module} (layer {LAYERS[unit]})")
        if {own, unit} == {"sources", "sinks"}:
            problems.append(f"{_rel(path)}:{line}: {own} imports {module} (sources and sinks are siblings)")
        if unit == "handlers" and own != "demo":
            problems.append(f"{_rel(path)}:{line}: imports the Lambda entry points ({module})")
    return problems


def _client_names(tree: ast.Module) -> set[str]:
    """Parameters, variables and attributes annotated with a boto3 client type (``...Client``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        annotated: list[tuple[str, ast.expr | None]] = []
        if isinstance(node, ast.arg):
            annotated.append((node.arg, node.annotation))
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
            if name:
                annotated.append((name, node.annotation))
        for name, annotation in annotated:
            if annotation is not None and ast.unparse(annotation).split("|")[0].strip().endswith("Client"):
                names.add(name)
    return names


def _aws_io(path: Path, text: str | None = None) -> list[str]:
    tree = ast.parse(path.read_text() if text is None else text)
    problems = []
    for line, module in _imports(tree, path, runtime_only=True):
        root = module.split(".")[0]
        if root == "boto3" or (root == "botocore" and module != "botocore.exceptions"):
            problems.append(f"{_rel(path)}:{line}: imports {module}")
    clients = _client_names(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
        if node.func.attr == "client" or owner_name in clients:
            problems.append(f"{_rel(path)}:{node.lineno}: calls {ast.unparse(node.func)}(...)")
    return problems


def _edges(path: Path, text: str | None = None) -> dict[str, str]:
    """The modules of ``auditor`` that the module at ``path`` imports, each with where (``path:line``).

    Every import counts (module level, in functions, under ``if TYPE_CHECKING:``). Importing ``auditor.a.b`` from
    outside the package ``auditor.a`` also imports ``auditor.a`` (its ``__init__``, which Python runs first). A
    module inside a package does not import its own package that way: the package is already being imported when
    its module runs. So a package ``__init__`` that re-exports names from its own modules is no cycle, but a module
    that imports a name back from its package's ``__init__`` (which imports that module) is one.
    """
    own = _module_name(path)
    packages = {_module_name(p) for p in _python_files() if _is_package(p)}
    edges: dict[str, str] = {}
    for line, module in _imports(ast.parse(path.read_text() if text is None else text), path, runtime_only=False):
        target = module
        while target and target not in _modules():
            target = target.rpartition(".")[0]
        if not target.startswith("auditor"):
            continue
        parts = target.split(".")
        parents = [".".join(parts[:i]) for i in range(1, len(parts))]
        for imported in [*(p for p in parents if p in packages and not own.startswith(p + ".")), target]:
            if imported != own:
                edges.setdefault(imported, f"{_rel(path)}:{line}")
    return edges


def _import_graph() -> dict[str, dict[str, str]]:
    """Every module of ``auditor`` with the modules of ``auditor`` it imports (:func:`_edges`)."""
    return {_module_name(p): _edges(p) for p in _python_files() if _module_name(p).startswith("auditor")}


def _cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, {})))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_every_unit_has_a_layer() -> None:
    units = {_own_unit(p) for p in _python_files()}
    assert units <= set(LAYERS) | {"__init__"}, units - set(LAYERS)


def test_no_upward_imports() -> None:
    problems = [p for path in _python_files() for p in _upward(path)]
    assert problems == []


def test_aws_io_only_in_sources_sinks_handlers_demo_and_cli() -> None:
    outside = {_rel(p): _aws_io(p) for p in _python_files() if not _rel(p).startswith(IO_ALLOWED)}
    violating = {rel for rel, problems in outside.items() if problems}
    assert violating == set(KNOWN_IO_OUTSIDE), {rel: outside[rel] for rel in violating ^ set(KNOWN_IO_OUTSIDE)}


def test_no_import_cycle_in_auditor() -> None:
    """No two modules of ``auditor`` import each other, directly or through others (graph: :func:`_import_graph`).
    A cycle is reported with each of its imports (``importer -> imported at path:line``)."""
    graph = _import_graph()
    assert len(graph) > 100 and graph["auditor.service.audit"]
    cycles = {
        " / ".join(cycle): [f"{a} -> {b} at {where}" for a in cycle for b, where in graph[a].items() if b in cycle]
        for cycle in _cycles(graph)
    }
    assert cycles == {}


def test_the_kernel_loads_neither_boto3_botocore_nor_pydantic() -> None:
    """Every module of ``auditor.kernel`` (its ``.py`` files, and any compiled module found beside them) imported in
    a fresh interpreter: none of :data:`NOT_IN_KERNEL` is in ``sys.modules`` after."""
    expected = {_module_name(p) for p in (ROOT / "auditor" / "kernel").rglob("*.py")}
    code = (
        "import importlib, json, pkgutil, sys\n"
        "import auditor.kernel\n"
        f"names = sorted({sorted(expected)!r})\n"
        "names += [m.name for m in pkgutil.walk_packages(auditor.kernel.__path__, 'auditor.kernel.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        f"loaded = sorted({{n.partition('.')[0] for n in sys.modules}} & {set(NOT_IN_KERNEL)!r})\n"
        "print(json.dumps({'imported': sorted(set(names)), 'loaded': loaded}))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert expected <= set(out["imported"]) and "auditor.kernel.reader" in expected
    assert out["loaded"] == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import boto3\n", ["imports boto3"]),
        ("from botocore.config import Config\n", ["imports botocore.config"]),
        ("from botocore.exceptions import ClientError\n", []),
        ("def f(s3: S3Client) -> None:\n    s3.get_object(Bucket='b', Key='k')\n", ["calls s3.get_object(...)"]),
        ("def f(s3: S3Client) -> None:\n    g(s3)\n", []),
        ("def f(session: Any) -> None:\n    session.client('sts')\n", ["calls session.client(...)"]),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import boto3\n", []),
    ],
)
def test_the_io_rule_sees_imports_clients_and_calls(source: str, expected: list[str]) -> None:
    found = _aws_io(ROOT / "auditor" / "service" / "probe.py", source)
    assert [p.split(": ", 1)[1] for p in found] == expected


def test_the_layer_rule_sees_upward_sibling_and_handler_imports() -> None:
    text = (
        "from auditor.sources.streams import canonical_key\n"
        "from auditor.models.finding import Finding\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from auditor.service.audit import AuditResult\n"
    )
    assert [p.split(": ", 1)[1] for p in _upward(ROOT / "auditor" / "detectors" / "probe.py", text)] == [
        "detectors (layer 2) imports auditor.sources.streams (layer 4)",
        "detectors (layer 2) imports auditor.service.audit (layer 5)",
    ]
    assert [p.split(": ", 1)[1] for p in _upward(ROOT / "auditor" / "sinks" / "probe.py", text)] == [
        "sinks imports auditor.sources.streams (sources and sinks are siblings)",
        "sinks (layer 4) imports auditor.service.audit (layer 5)",
    ]
    assert [
        p.split(": ", 1)[1] for p in _upward(ROOT / "auditor" / "service" / "probe.py", "import handlers.evaluator\n")
    ] == [
        "service (layer 5) imports handlers.evaluator (layer 6)",
        "imports the Lambda entry points (handlers.evaluator)",
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f() -> None:\n    from auditor.cost.ledger import audit_ledger\n", ["auditor.cost.ledger (layer 3)"]),
        ("from auditor.whatif import limits\n", []),
        ("from auditor.whatif import capacity\n", ["auditor.whatif.capacity (layer 3)"]),
        ("from auditor import cost\n", ["auditor.cost (layer 3)"]),
        ("from ...cost import ledger\n", ["auditor.cost.ledger (layer 3)"]),
        ("from . import common\n", []),
    ],
)
def test_the_layer_rule_sees_function_level_submodule_and_relative_imports(source: str, expected: list[str]) -> None:
    found = _upward(ROOT / "auditor" / "detectors" / "metrics" / "probe.py", source)
    assert [p.split(" imports ", 1)[1] for p in found] == expected


def test_the_cycle_finder_sees_cycles_through_any_import() -> None:
    graph = {"a": {"b": ""}, "b": {"c": ""}, "c": {"a": "", "d": ""}, "d": {}, "e": {"e": "", "d": ""}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"x": {"y": ""}, "y": {"x": ""}, "z": {"y": ""}}) == [["x", "y"]]
    text = (
        "from typing import TYPE_CHECKING\n"
        "import json\n"
        "from auditor.models.finding import Finding\n"
        "from auditor.report import charts\n"
        "if TYPE_CHECKING:\n"
        "    from auditor.service.audit import AuditResult\n"
        "def f() -> None:\n"
        "    from auditor.whatif.capacity import resource_capacities\n"
    )
    assert _edges(ROOT / "auditor" / "detectors" / "metrics" / "probe.py", text) == {
        "auditor.models": "auditor/detectors/metrics/probe.py:3",
        "auditor.models.finding": "auditor/detectors/metrics/probe.py:3",
        "auditor.report": "auditor/detectors/metrics/probe.py:4",
        "auditor.report.charts": "auditor/detectors/metrics/probe.py:4",
        "auditor.service": "auditor/detectors/metrics/probe.py:6",
        "auditor.service.audit": "auditor/detectors/metrics/probe.py:6",
        "auditor.whatif": "auditor/detectors/metrics/probe.py:8",
        "auditor.whatif.capacity": "auditor/detectors/metrics/probe.py:8",
    }
    # inside its own package, a module's imports do not pass through the package's __init__
    assert _edges(ROOT / "auditor" / "report" / "probe.py", "from auditor.report import charts\n") == {
        "auditor.report.charts": "auditor/report/probe.py:1"
    }

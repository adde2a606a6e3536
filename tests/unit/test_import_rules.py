"""Import rules of the code base (AST, no imports executed):

1. Layers: a module imports only its own layer and the layers below it (no upward imports). Type-only imports
   (under ``if TYPE_CHECKING:``) are not run-time dependencies and are not counted.
2. Sources and sinks do not import each other; nothing in ``auditor/`` except the demo imports ``handlers``.
3. AWS I/O: only ``auditor/sources/``, ``auditor/sinks/``, ``handlers/``, the demo and the CLI wiring
   (``auditor/cli.py``) import boto3 or botocore (``botocore.exceptions`` aside: catching an SDK error is not I/O),
   make a client (``.client(...)``) or call a method of one (a parameter or attribute annotated as a ``...Client``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Layer of each top-level unit of ``auditor`` (and ``handlers``): a module may import units of its layer or below.
LAYERS: dict[str, int] = {
    "exceptions": 0,
    "models": 0,
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
    #: DynamoDB's documented per-partition and per-table limits (pure; the traffic detectors use them).
    "whatif.limits": 1,
    "sources": 4,
    "sinks": 4,
    "engine": 5,
    "service": 5,
    "handlers": 6,
    "cli": 7,
    "demo": 7,
    "__main__": 8,
}
IO_ALLOWED = ("auditor/sources/", "auditor/sinks/", "handlers/", "auditor/demo/", "auditor/cli.py")
#: Known violations still to move into sources/ or sinks/, each with what it does. The test fails when one of them
#: stops violating (take it off the list) or a new one appears.
KNOWN_IO_OUTSIDE: dict[str, str] = {}


def _python_files() -> list[Path]:
    return sorted([*(ROOT / "auditor").rglob("*.py"), *(ROOT / "handlers").rglob("*.py")])


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


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


def _imports(tree: ast.Module, *, runtime_only: bool = True) -> list[tuple[int, str]]:
    skip = _type_checking_nodes(tree) if runtime_only else set()
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "auditor":
                found += [(node.lineno, f"auditor.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def _upward(path: Path, text: str | None = None) -> list[str]:
    own = _own_unit(path)
    problems = []
    for line, module in _imports(ast.parse(path.read_text() if text is None else text)):
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
    for line, module in _imports(tree):
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
        "detectors (layer 2) imports auditor.sources.streams (layer 4)"
    ]
    assert [p.split(": ", 1)[1] for p in _upward(ROOT / "auditor" / "sinks" / "probe.py", text)] == [
        "sinks imports auditor.sources.streams (sources and sinks are siblings)"
    ]
    assert [
        p.split(": ", 1)[1] for p in _upward(ROOT / "auditor" / "service" / "probe.py", "import handlers.evaluator\n")
    ] == [
        "service (layer 5) imports handlers.evaluator (layer 6)",
        "imports the Lambda entry points (handlers.evaluator)",
    ]

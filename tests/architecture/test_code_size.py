"""Sizes of the code in ``auditor/`` and ``handlers/`` (AST, nothing imported): no module over
:data:`MAX_MODULE_LINES` lines, no function (``def`` or ``async def``, methods and nested functions included) over
:data:`MAX_FUNCTION_LINES` lines, counted as ``end_lineno - lineno + 1`` (from the ``def`` line, decorators left out,
to the body's last line).

The modules and functions still over a limit are listed in :data:`KNOWN_LARGE` with who is splitting them. The test
fails on a new one and on a listed one that no longer is over its limit (take it off the list), so the list only
shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 150

#: ``path`` (a module over the limit) or ``path:function`` (a function over the limit, by its qualified name:
#: ``Class.method``, ``outer.inner``) -> who is splitting it.
KNOWN_LARGE: dict[str, str] = {}


def _python_files() -> list[Path]:
    return sorted([*(ROOT / "auditor").rglob("*.py"), *(ROOT / "handlers").rglob("*.py")])


def _functions(node: ast.AST, prefix: str = "") -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under ``node`` with its qualified name (classes and enclosing functions joined by dots)."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append((prefix + child.name, child))
            found += _functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            found += _functions(child, f"{prefix}{child.name}.")
        else:
            found += _functions(child, prefix)
    return found


def _too_large(rel: str, text: str) -> dict[str, str]:
    """What in the module is over a limit: ``path`` or ``path:function`` -> its size."""
    found: dict[str, str] = {}
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        found[rel] = f"{lines} lines (at most {MAX_MODULE_LINES})"
    for name, function in _functions(ast.parse(text)):
        size = (function.end_lineno or function.lineno) - function.lineno + 1
        if size > MAX_FUNCTION_LINES:
            found[f"{rel}:{name}"] = f"{size} lines (at most {MAX_FUNCTION_LINES})"
    return found


def test_no_module_or_function_over_its_limit_except_those_being_split() -> None:
    found = {
        k: v for p in _python_files() for k, v in _too_large(p.relative_to(ROOT).as_posix(), p.read_text()).items()
    }
    new = {k: v for k, v in found.items() if k not in KNOWN_LARGE}
    done = sorted(k for k in KNOWN_LARGE if k not in found)
    assert new == {}, "over a limit (split it)"
    assert done == [], "no longer over its limit: take it off KNOWN_LARGE"


def test_sizes_count_methods_nested_and_async_functions() -> None:
    body = "".join(f"    x = {i}\n" for i in range(MAX_FUNCTION_LINES))
    text = (
        "class A:\n"
        "    @staticmethod\n"
        f"    def method() -> None:\n{body.replace('    ', '        ')}"
        f"async def outer() -> None:\n    def inner() -> None:\n{body.replace('    ', '        ')}"
        f"def small() -> None:\n{body[: body.index('x = 10')]}"
    )
    found = _too_large("auditor/probe.py", text)
    assert found == {
        "auditor/probe.py:A.method": f"{MAX_FUNCTION_LINES + 1} lines (at most {MAX_FUNCTION_LINES})",
        "auditor/probe.py:outer": f"{MAX_FUNCTION_LINES + 2} lines (at most {MAX_FUNCTION_LINES})",
        "auditor/probe.py:outer.inner": f"{MAX_FUNCTION_LINES + 1} lines (at most {MAX_FUNCTION_LINES})",
    }
    assert _too_large("auditor/probe.py", "x = 1\n" * (MAX_MODULE_LINES + 1)) == {
        "auditor/probe.py": f"{MAX_MODULE_LINES + 1} lines (at most {MAX_MODULE_LINES})"
    }
    assert _too_large("auditor/probe.py", "x = 1\n" * MAX_MODULE_LINES) == {}

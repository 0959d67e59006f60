"""Dependencies point one way: tools <- domain services <- threads <- orchestrator <- realtime.

Every `import` of the packages below is read with `ast` (top level, inside functions and
under TYPE_CHECKING alike); an import of a package higher up the stack fails the test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"

# package -> the packages above it, which it must not import.
# TODO: "tools" must not import threads/agents/orchestrator/realtime either; app/tools
# still imports app.threads (ErrorType) and is being moved off it, then add it here.
UPWARD = {
    "devices": ("threads", "orchestrator", "push", "realtime"),
    "threads": ("orchestrator", "push", "realtime"),
    "orchestrator": ("push", "realtime"),
    "push": ("orchestrator", "realtime"),
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            # `from app import realtime` names the package in the alias
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def upward_imports(package: str) -> list[str]:
    forbidden = tuple(f"app.{above}" for above in UPWARD[package])
    return [
        f"{path.relative_to(APP.parent)}:{line} imports {module}"
        for path in sorted((APP / package).rglob("*.py"))
        for line, module in imported_modules(path)
        if any(module == name or module.startswith(name + ".") for name in forbidden)
    ]


@pytest.mark.parametrize("package", sorted(UPWARD))
def test_no_upward_imports(package: str) -> None:
    assert upward_imports(package) == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from app.realtime.events import Frame\n"
        "def f():\n"
        "    from app import orchestrator\n"
    )
    names = [name for _, name in imported_modules(module)]
    assert "app.realtime.events" in names and "app.orchestrator" in names


# Cycles known and being removed, each with its reason: none.
KNOWN_CYCLES: set[frozenset[str]] = set()


def module_level_imports(path: Path) -> set[str]:
    """Imports run when the module is imported, or read by a type checker (TYPE_CHECKING
    blocks count: a cycle there is a cycle of concepts); not those inside functions."""
    found: set[str] = set()
    pending: list[ast.stmt] = list(ast.parse(path.read_text(), filename=str(path)).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If | ast.Try):
            pending += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def import_graph() -> dict[str, set[str]]:
    """app's modules (a package by its own name) -> the app modules they import."""
    paths = {
        ".".join(path.relative_to(APP.parent).with_suffix("").parts).removesuffix(".__init__"): path
        for path in APP.rglob("*.py")
    }
    return {
        name: {module for module in module_level_imports(path) if module in paths} - {name}
        for name, path in paths.items()
    }


def import_cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Groups of modules that import each other, directly or around a loop (each module
    is in a cycle with those it reaches that reach it back)."""

    def reachable(start: str) -> set[str]:
        seen, pending = set(), [start]
        while pending:
            for module in graph[pending.pop()] - seen:
                seen.add(module)
                pending.append(module)
        return seen

    reach = {module: reachable(module) for module in graph}
    groups = {
        frozenset({module} | {other for other in reach[module] if module in reach[other]})
        for module in graph
        if module in reach[module]
    }
    return sorted(groups, key=sorted)


def test_no_import_cycle_in_app() -> None:
    assert [
        sorted(group) for group in import_cycles(import_graph()) if group not in KNOWN_CYCLES
    ] == []


def test_the_cycle_check_sees_a_cycle_around_a_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [frozenset({"a", "b", "c"})]

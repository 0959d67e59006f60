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

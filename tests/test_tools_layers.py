"""The tools layers point one way, checked on the source (every import, also inside functions).

tools contract (base, errors, validation, schema, results, device, …)  <-  tools runtime
(registry, toolsets, executor)  <-  domain services (agents, tasks, memories, accounts)  <-
builtin tools (which call the domain services) and the MCP integration  <-  the assembly of the
process's tools (app/tools/assembly.py), taken by the orchestrator and create_app, never by a
domain package. (tests/test_layers.py checks the whole order; these are the tools' own rules.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"
DOMAIN_PACKAGES = ("agents", "tasks", "memories", "accounts")
TOOLS_ABOVE_CONTRACT = ("app.tools.builtin", "app.tools.mcp", "app.tools.assembly")
LAYERS_ABOVE_TOOLS = ("app.agents", "app.tasks", "app.memories", "app.threads", "app.orchestrator")
CONTRACT_MODULES = ("base", "errors", "validation", "schema", "results", "device", "mcp_config")


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, package: str) -> set[str]:
    """Every module the source imports; `from a import b` counts as `a` and `a.b`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import: resolve against the file's package
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def forbidden_among(imported: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(n for n in imported if any(n == f or n.startswith(f + ".") for f in forbidden))


def violations(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in paths:
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = imported_modules(path.read_text(encoding="utf-8"), package)
        found += [f"{name} imports {m}" for m in forbidden_among(imported, forbidden)]
    return found


def python_files(*folders: Path) -> list[Path]:
    return [p for folder in folders for p in sorted(folder.rglob("*.py"))]


def test_the_import_parser_sees_every_form() -> None:
    """The rules cannot pass by not seeing an import (guards the checks below)."""
    source = (
        "import app.tools.assembly\n"
        "from app.tools import builtin\n"
        "def f():\n    from ..tools.mcp import tool\n"
    )
    imported = imported_modules(source, "app.agents")
    assert forbidden_among(imported, TOOLS_ABOVE_CONTRACT) == [
        "app.tools.assembly",
        "app.tools.builtin",
        "app.tools.mcp",
        "app.tools.mcp.tool",
    ]


@pytest.mark.parametrize("package", DOMAIN_PACKAGES)
def test_domain_packages_never_import_the_builtin_tools_or_their_registry(package: str) -> None:
    assert violations(python_files(APP / package), TOOLS_ABOVE_CONTRACT) == []


def test_tools_never_import_the_layers_above_them() -> None:
    below_builtins = [
        p
        for p in python_files(APP / "tools")
        if not {"builtin", "mcp"} & set(p.relative_to(APP / "tools").parts)
        and p.name not in ("assembly.py", "controllers.py", "cli.py")
    ]
    assert below_builtins  # the rule checks something
    assert violations(below_builtins, LAYERS_ABOVE_TOOLS) == []


def test_the_tools_contract_never_imports_the_builtins() -> None:
    contract = [APP / "tools" / f"{name}.py" for name in CONTRACT_MODULES]
    assert violations(contract, TOOLS_ABOVE_CONTRACT) == []


def test_builtin_tools_never_commit() -> None:
    """They work inside ctx.transaction(), the unit of work their caller owns."""
    commits = [
        f"{module_name(path)}:{node.lineno}"
        for path in python_files(APP / "tools" / "builtin")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr in ("commit", "session_factory")
    ]
    assert commits == []

"""Dependencies point one way: each module imports only from its own layer or below.

The layers, lowest first, are listed in LAYERS (the order docs/architecture.md gives, with
the rule of each). Every `import` in app/ is read with `ast` (top level, inside functions
and under TYPE_CHECKING alike); an import of a higher layer fails the test unless it is one
of the few named in ALLOWED_UPWARD, each with its reason, also named in the architecture doc.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"
ARCHITECTURE = APP.parent / "docs" / "architecture.md"

TOOLS_CONTRACT = tuple(
    f"app.tools.{name}"
    for name in (
        "base", "errors", "schema", "validation", "json_schema", "results", "events",
        "preview", "unit", "device", "specialists", "mcp_config", "bounds",
    )
)  # fmt: skip

# Lowest first: a module may import its own layer and those before it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("library", ("app.lib",)),
    ("settings", ("app.settings",)),
    ("observability", ("app.observability",)),
    ("database", ("app.db",)),
    ("tools contract", TOOLS_CONTRACT),
    ("tools runtime", ("app.tools.runtime",)),
    (
        "domains",
        (
            "app.accounts", "app.agents", "app.tasks", "app.schedules", "app.memories",
            "app.devices", "app.usage", "app.attachments",
        ),
    ),
    ("tool kinds", ("app.tools.builtin", "app.tools.mcp")),
    ("tools assembly", ("app.tools.assembly",)),
    ("connections", ("app.connections",)),
    ("threads", ("app.threads",)),
    ("orchestrator door", ("app.orchestrator.door",)),
    ("orchestrator scheduling", ("app.orchestrator.scheduling",)),
    ("orchestrator waits", ("app.orchestrator.waits",)),
    ("orchestrator loop", ("app.orchestrator.loop",)),
    ("orchestrator", ("app.orchestrator.worker", "app.orchestrator.plugin")),
    ("push", ("app.push",)),
    ("timers", ("app.timers",)),
    ("realtime", ("app.realtime",)),
    ("openai_compat", ("app.openai_compat",)),
    (
        "surfaces",
        (
            "app.tools.controllers", "app.tools.cli", "app.cli", "app.docs_ui", "app.asgi",
            "app.openapi_export", "app.settings_docs", "app",
        ),
    ),
]  # fmt: skip

# (importing module, imported module) -> why it may point up. At most four.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    ("app.lib.problems", "app.db.errors"): "a database outage is a 503 problem, not a 500",
    ("app.lib.problems", "app.db.session"): "a failed commit is a 503 problem, not a 500",
}


def layer_of(module: str) -> int:
    """The index in LAYERS of the most specific prefix naming `module`."""
    best, length = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = index, len(prefix)
    return best


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


def module_paths() -> dict[str, Path]:
    return {
        ".".join(path.relative_to(APP.parent).with_suffix("").parts).removesuffix(".__init__"): path
        for path in APP.rglob("*.py")
    }


def upward_imports() -> dict[tuple[str, str], int]:
    """(importer, imported module) -> line, for each import of a higher layer."""
    paths = module_paths()
    found: dict[tuple[str, str], int] = {}
    for name, path in sorted(paths.items()):
        own = layer_of(name)
        for line, module in imported_modules(path):
            if module in paths and layer_of(module) > own:
                found.setdefault((name, module), line)
    return found


def test_every_module_has_a_layer() -> None:
    assert [name for name in module_paths() if layer_of(name) < 0] == []


def test_no_upward_imports_but_the_named_ones() -> None:
    assert sorted(set(upward_imports()) - set(ALLOWED_UPWARD)) == []


def test_the_named_upward_imports_are_few_real_and_documented() -> None:
    assert len(ALLOWED_UPWARD) <= 4
    assert set(ALLOWED_UPWARD) <= set(upward_imports())  # a fixed one leaves the list
    doc = ARCHITECTURE.read_text()
    assert [pair for pair in ALLOWED_UPWARD if f"`{pair[0]}` → `{pair[1]}`" not in doc] == []


def test_the_layers_are_the_documented_ones() -> None:
    doc = ARCHITECTURE.read_text()
    assert [name for name, _ in LAYERS if f"**{name}**" not in doc] == []


def test_a_module_of_a_lower_layer_is_seen_importing_a_higher_one() -> None:
    assert layer_of("app.tools.base") < layer_of("app.tools.runtime.registry")
    assert layer_of("app.tools.runtime.executor") < layer_of("app.tools.assembly")
    assert layer_of("app.orchestrator.waits.cells") < layer_of("app.orchestrator.loop.runner")
    assert layer_of("app.tools.controllers") > layer_of("app.tools.assembly")


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


def import_graph() -> dict[str, set[str]]:
    """app's modules (a package by its own name) -> the app modules they import, wherever
    the import stands (top level, TYPE_CHECKING, inside a function: a lazy import that
    closes a loop is a cycle of concepts too)."""
    paths = module_paths()
    return {
        name: {module for _, module in imported_modules(path) if module in paths} - {name}
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
    assert [sorted(group) for group in import_cycles(import_graph())] == []


def test_the_cycle_check_sees_a_cycle_around_a_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [frozenset({"a", "b", "c"})]


MAX_MODULE_LINES = 400  # past it a module does more than one thing: split it by job


def test_no_module_of_app_is_over_the_size_a_reader_holds() -> None:
    sizes = {
        str(path.relative_to(APP.parent)): len(path.read_text().splitlines())
        for path in APP.rglob("*.py")
    }
    assert {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES} == {}

"""`app/` stands on its dependencies' public ground, and its modules import in one direction.

DESIGN.md, "Public ground only": a private module, name or attribute of a dependency is
an implementation detail its next release may change without notice. The rule, read from
the AST of every app/**/*.py (the classes themselves are imported to read their bases):

1. Imports (top level, in functions and under TYPE_CHECKING alike): no module outside
   `app` is imported through a dotted segment starting with `_` (`litestar._openapi…`,
   `litestar.cli._utils`), and no name starting with `_` is imported from one.
2. Attributes starting with one underscore (dunders are the language's, not private):
   - on `self`/`cls` (a method's first parameter) or `super()` inside a class of app: only
     names no third-party class in its MRO defines (in its body, `__slots__`,
     annotations, or as `self.<name>` in its source). Overriding such a name in the class
     body (`def _sub_worker`) counts too: it is a private hook of the base.
   - on anything else: the object's type is unknown to an AST, so only where it is app's
     for sure: `module._name` on a module of app, or, inside a class of app, a private
     name that class itself owns (defines, and no third-party base does: `other._key`
     in its `__eq__`).
   Everything else (`cursor._rows`, `litellm._custom_providers`, `plugin._backend`) is a
   violation.

Exceptions are listed below with their reason; a single-use one that no longer matches,
or a file exception whose file is gone, fails the test so the list cannot rot.

A second test: app's modules have no import cycle (module-level imports only; imports
inside functions or under `if TYPE_CHECKING:` run later or never, and break no import).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"

# -- exceptions ----------------------------------------------------------------------------
# Whole files still on private ground, being rewritten on other branches. The lead deletes
# each entry when merging the branch named (an entry whose file is gone fails the test).
# Files without a finding of this rule today (rows.py, sqlite_checkpoints.py, writer.py,
# llm_wire.py) stay listed until their branch lands: issue 24 names them (`__dict__`
# writes, direct.py's paths), and a rewrite must pass this rule without them.
TEMPORARY_FILES: dict[str, str] = {
    # issue 24 items 1-2, "Core in, Structs out" and the stock aiosqlite dialect
    "app/db/direct.py": "TEMPORARY: removed by branch db (compiler privates, asyncpg cursor)",
    "app/db/rows.py": "TEMPORARY: removed by branch db (ORM rows built through __dict__)",
    "app/db/sqlite_driver.py": "TEMPORARY: removed by branch db (aiosqlite/adapter privates)",
    "app/db/sqlite_checkpoints.py": "TEMPORARY: removed by branch db (aiosqlite's connection)",
    "app/threads/writer.py": "TEMPORARY: removed by branch db (direct.py's write paths)",
    # the model door's own issue: a provider seam instead of litellm's private registry
    "app/orchestrator/llm.py": "TEMPORARY: removed by branch door (litellm._custom_providers)",
    "app/orchestrator/llm_wire.py": "TEMPORARY: removed by branch door (rewritten with llm.py)",
}

# Single uses outside those files, as (file, source text of the import or attribute): none.
ALLOWED: dict[tuple[str, str], str] = {}

# Import cycles (sets of modules) being broken on other branches; the lead deletes each
# entry when merging the branch named.
# (orchestrator/tool_calls.py <-> delegation.py, issue 24 item 6 on branch runloop, is not
# one of them: delegation imports tool_calls only under TYPE_CHECKING.)
TEMPORARY_CYCLES: dict[frozenset[str], str] = {
    frozenset({"app.db", "app.db.sqlite_driver"}): "TEMPORARY: removed by branch db",
}


# -- reading app -----------------------------------------------------------------------------
def app_files() -> list[Path]:
    return sorted(APP.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def app_modules() -> frozenset[str]:
    return frozenset(module_name(path) for path in app_files())


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_app(module: str | None) -> bool:
    return module is not None and (module == "app" or module.startswith("app."))


@dataclass(frozen=True)
class Use:
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def private_imports(tree: ast.Module, path: str) -> Iterator[Use]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not is_app(alias.name) and any(map(is_private, alias.name.split("."))):
                    yield Use(path, node.lineno, f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and not is_app(node.module):
            module = node.module or ""
            names = [alias.name for alias in node.names]
            if any(map(is_private, module.split("."))) or any(map(is_private, names)):
                yield Use(path, node.lineno, ast.unparse(node))


# -- who defines a private name --------------------------------------------------------------
@cache
def defined_by(cls: type) -> frozenset[str]:
    """Attribute names class `cls` itself defines: body, slots, annotations, `self.<x>`."""
    names = set(vars(cls))
    slots = vars(cls).get("__slots__", ())
    names.update([slots] if isinstance(slots, str) else slots)
    names.update(vars(cls).get("__annotations__", {}))
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # a class of C, or without source: its dict is enough
        return frozenset(names)
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            names.add(node.attr)
    return frozenset(names)


def third_party_names(cls: type) -> frozenset[str]:
    """Names some third-party class in `cls`'s MRO defines."""
    found: set[str] = set()
    for base in cls.__mro__:
        if base is not object and not is_app(base.__module__):
            found |= defined_by(base)
    return frozenset(found)


def own_names(cls: type) -> frozenset[str]:
    """Private names app's part of `cls`'s MRO defines and no third-party base does."""
    ours = {
        name
        for base in cls.__mro__
        if is_app(base.__module__)
        for name in defined_by(base)
        if is_private(name)
    }
    return frozenset(ours - third_party_names(cls))


# -- the attribute walk ----------------------------------------------------------------------
def is_super_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


class PrivateAttributes(ast.NodeVisitor):
    def __init__(self, path: str, classes: dict[ast.ClassDef, type]) -> None:
        self.path = path
        self.classes = classes
        self.app_modules: set[str] = set()  # names bound to app's modules by imports
        self.scopes: list[tuple[type, str | None]] = []  # (class, its method's self name)
        self.found: list[Use] = []

    def flag(self, node: ast.AST, text: str) -> None:
        self.found.append(Use(self.path, node.lineno, text))  # type: ignore[attr-defined]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if is_app(node.module):
            for alias in node.names:
                if f"{node.module}.{alias.name}" in app_modules():
                    self.app_modules.add(alias.asname or alias.name)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        cls = self.classes[node]
        theirs = third_party_names(cls)
        for statement in node.body:  # overriding a third-party base's private hook
            names = []
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [statement.name]
            elif isinstance(statement, ast.Assign | ast.AnnAssign):
                targets = getattr(statement, "targets", None) or [statement.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            for name in names:
                if is_private(name) and name in theirs:
                    self.flag(statement, f"{node.name}.{name} overrides a private of a base")
        self.scopes.append((cls, None))
        self.generic_visit(node)
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        entered = False
        if self.scopes and self.scopes[-1][1] is None:  # a method: its first parameter
            params = [*node.args.posonlyargs, *node.args.args]
            static = any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list
            )
            self.scopes.append((self.scopes[-1][0], "" if static or not params else params[0].arg))
            entered = True
        self.generic_visit(node)
        if entered:
            self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)
        if not is_private(node.attr):
            return
        value = node.value
        if self.scopes and (
            is_super_call(value) or (isinstance(value, ast.Name) and value.id == self.scopes[-1][1])
        ):
            if node.attr in third_party_names(self.scopes[-1][0]):
                self.flag(node, ast.unparse(node))
            return
        if isinstance(value, ast.Name) and value.id in self.app_modules:
            return
        # Another object: its type is unknown here. Inside a class of app that owns the name
        # it is taken for another instance of that class (`other._key` in `__eq__`).
        if not (self.scopes and node.attr in own_names(self.scopes[-1][0])):
            self.flag(node, ast.unparse(node))


def private_uses() -> list[Use]:
    uses: list[Use] = []
    for path in app_files():
        name = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(), filename=name)
        uses += private_imports(tree, name)
        # the ClassDef nodes of this parse with their runtime classes, for their MROs
        module = importlib.import_module(module_name(ROOT / name))
        classes = {
            node: getattr(module, node.name, None)
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)
        }
        # every class of app is a module-level name today; a nested one would need its own
        # lookup, so say so rather than skip it
        missing = [node.name for node, cls in classes.items() if not inspect.isclass(cls)]
        assert missing == [], f"{name}: classes not found at runtime"
        walker = PrivateAttributes(name, classes)
        walker.visit(tree)
        uses += walker.found
    return uses


def test_app_uses_no_private_api_of_its_dependencies() -> None:
    uses = private_uses()
    seen = {(use.path, use.text) for use in uses}
    unexpected = [
        str(use)
        for use in uses
        if use.path not in TEMPORARY_FILES and (use.path, use.text) not in ALLOWED
    ]
    assert unexpected == [], "private API of a dependency (see this module's docstring)"
    stale = [path for path in TEMPORARY_FILES if not (ROOT / path).exists()] + [
        f"{path}: {text}" for path, text in ALLOWED if (path, text) not in seen
    ]
    assert stale == [], "exceptions that match nothing any more: delete them"


def test_the_rule_sees_each_kind_of_private_use() -> None:
    """The walker on a sample: what it must flag, and app's own privates it must not."""
    source = textwrap.dedent(
        """
        import litellm
        from litestar.cli._utils import LitestarGroup
        from litestar.channels import ChannelsPlugin
        from app.realtime import wire

        class Plugin(ChannelsPlugin):
            def __init__(self):
                self._mine = 1
                self._backend.publish()       # a private the base defines
            async def _sub_worker(self):      # overriding a private hook of the base
                await super()._sub_worker()
            def ours(other):
                return other._mine, wire._private_helper, litellm._custom_providers
        """
    )
    tree = ast.parse(source)
    cls_node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))
    namespace: dict[str, object] = {}
    exec(compile(source, "m.py", "exec"), namespace)
    walker = PrivateAttributes("m.py", {cls_node: namespace["Plugin"]})  # type: ignore[dict-item]
    walker.visit(tree)
    flagged = sorted(use.text for use in [*private_imports(tree, "m.py"), *walker.found])
    assert flagged == sorted(
        [
            "from litestar.cli._utils import LitestarGroup",
            "self._backend",
            "Plugin._sub_worker overrides a private of a base",
            "super()._sub_worker",
            "litellm._custom_providers",
        ]
    )


# -- import cycles ---------------------------------------------------------------------------
def module_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports run when the module is imported: not in functions, not under TYPE_CHECKING."""

    def walk(statements: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
        for statement in statements:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                yield statement
            elif isinstance(statement, ast.If):
                test = statement.test
                checking = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                    isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
                )
                if not checking:
                    yield from walk(statement.body)
                yield from walk(statement.orelse)
            elif isinstance(statement, ast.Try):
                for block in (statement.body, statement.orelse, statement.finalbody):
                    yield from walk(block)
                for handler in statement.handlers:
                    yield from walk(handler.body)
            elif isinstance(statement, ast.With | ast.ClassDef):
                yield from walk(statement.body)

    yield from walk(tree.body)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in app_files()}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in module_level_imports(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif node.level == 0 and node.module:
                targets = [node.module]
                # `from app.db import models` imports the module app.db.models
                targets += [f"{node.module}.{alias.name}" for alias in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_app_has_no_import_cycles() -> None:
    found = cycles(import_graph())
    unexpected = [sorted(cycle) for cycle in found if cycle not in TEMPORARY_CYCLES]
    assert unexpected == [], "modules that import each other (at module level)"
    stale = [sorted(cycle) for cycle in TEMPORARY_CYCLES if cycle not in found]
    assert stale == [], "cycles that are gone: delete their exceptions"


def test_the_cycle_check_sees_a_cycle_and_skips_deferred_imports() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING
            from app.a import x
            if TYPE_CHECKING:
                from app.b import y
            def f():
                from app.c import z
            """
        )
    )
    modules = [getattr(n, "module", None) for n in module_level_imports(tree)]
    assert modules == ["typing", "app.a"]
    assert cycles({"a": {"b"}, "b": {"a", "c"}, "c": set()}) == [frozenset({"a", "b"})]

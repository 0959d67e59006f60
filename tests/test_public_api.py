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

Import cycles have their own test (tests/test_layers.py).
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
# Whole files still on private ground, each with its reason (an entry whose file is gone
# fails the test): none.
TEMPORARY_FILES: dict[str, str] = {}

# Single uses outside those files, as (file, source text of the import or attribute): none.
ALLOWED: dict[tuple[str, str], str] = {}

# (Import cycles: tests/test_layers.py.)


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

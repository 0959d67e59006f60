"""The model door is the only importer of litellm, and only through its public names;
our OpenAI-compatible client does without it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOOR = ROOT / "app" / "orchestrator" / "door"
LITELLM_IMPORTERS = {DOOR / "litellm_client.py", DOOR / "model_info.py"}


def _python_files() -> list[Path]:
    return [p for folder in ("app", "bench") for p in (ROOT / folder).rglob("*.py")]


def _litellm_uses(path: Path) -> list[tuple[int, str]]:
    """(line, what) of every litellm import and attribute of `litellm` in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "litellm"
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "litellm":
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "litellm"
        ):
            found.append((node.lineno, f"litellm.{node.attr}"))
    return found


def test_only_the_door_imports_litellm() -> None:
    importers = {path for path in _python_files() if _litellm_uses(path)}
    assert importers <= LITELLM_IMPORTERS, sorted(map(str, importers - LITELLM_IMPORTERS))
    assert not _litellm_uses(DOOR / "openai_client.py")


def test_litellm_is_used_through_public_names_only() -> None:
    private = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in _python_files()
        for line, name in _litellm_uses(path)
        if (
            name != "litellm"
            and (name.count(".") > 1 or "._" in name or name.startswith("litellm._"))
        )
        or (name.startswith("litellm.") and name.split(".")[1].startswith("_"))
    ]
    assert not private, private

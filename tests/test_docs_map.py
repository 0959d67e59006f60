"""The map of `app/` in docs/architecture.md is true: every `app/…` path it names exists
(a folder written with its trailing `/`, a file without), and every Python package under
`app/` (a folder with an `__init__.py`, at any depth) is named in it.

The map is the one fenced code block of the section headed `## Map of app/`; each entry
line starts with a path from the repo root (`app/tools/mcp/`, `app/settings.py`), and a
description may name more paths, which are checked too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
HEADING = re.compile(r"^## Map of `?app/`?[ \t]*$", flags=re.M)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^ {0,3}\1[`~]*[ \t]*$", flags=re.M | re.S)
# `app/…` not preceded by a path character (`myapp/`, `bench/app/` are other paths).
PATH = re.compile(r"(?<![\w./-])app/[\w./-]*")


class MapError(AssertionError):
    """The map cannot be read: no such section, or not exactly one code block in it."""


def map_block(doc: Path) -> str:
    """The text of the one fenced code block in the document's `## Map of app/` section."""
    text = doc.read_text(encoding="utf-8")
    heading = HEADING.search(text)
    if heading is None:
        raise MapError(f"{doc}: no section headed `## Map of app/`")
    section = text[heading.end() :]
    following = re.search(r"^#{1,2}\s", section, flags=re.M)
    if following is not None:
        section = section[: following.start()]
    blocks = FENCE.findall(section)
    if len(blocks) != 1:
        raise MapError(f"{doc}: `## Map of app/` holds {len(blocks)} code blocks, not one")
    return blocks[0][1]


def named_paths(block: str) -> list[str]:
    """Every `app/…` path token in the block, in order, without trailing punctuation."""
    return [token.rstrip(".,") for token in PATH.findall(block)]


def wrong_paths(block: str, root: Path = ROOT) -> list[str]:
    """The block's paths that name nothing under `root`, or a folder without its `/`."""
    wrong = []
    for token in named_paths(block):
        path = root / token
        if token.endswith("/"):
            if not path.is_dir():
                wrong.append(f"{token}: no such folder")
        elif path.is_dir():
            wrong.append(f"{token}: a folder: write {token}/")
        elif not path.is_file():
            wrong.append(f"{token}: no such file")
    return wrong


def packages(root: Path = ROOT) -> list[str]:
    """Every Python package under `root/app/` (not `app/` itself), as `app/…/`."""
    app = root / "app"
    found = (init.parent for init in app.rglob("__init__.py") if init.parent != app)
    return sorted(f"{package.relative_to(root).as_posix()}/" for package in found)


def unnamed_packages(block: str, root: Path = ROOT) -> list[str]:
    """The packages under `root/app/` that the block does not name."""
    named = {token if token.endswith("/") else f"{token}/" for token in named_paths(block)}
    return [package for package in packages(root) if package not in named]


def test_the_map_names_only_paths_that_exist() -> None:
    assert wrong_paths(map_block(ARCHITECTURE)) == []


def test_the_map_names_every_package() -> None:
    assert unnamed_packages(map_block(ARCHITECTURE)) == []


def _tree(root: Path) -> None:
    for package in ("app", "app/tools", "app/tools/mcp", "app/db"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / "app" / "settings.py").write_text("")
    (root / "app" / "static").mkdir()  # a folder, not a package: the map may leave it out
    (root / "app" / "tools" / "mcp" / "__pycache__").mkdir()


def _doc(root: Path, body: str) -> Path:
    doc = root / "architecture.md"
    doc.write_text(f"# Architecture\n\nThe flow.\n\n{body}\n## Why\n\n```\nnot app/gone.py\n```\n")
    return doc


MAP = """## Map of app/

Each package once:

```text
app/settings.py      settings (see app/db/ too).
app/db/              the database
app/tools/           the contract; app/tools/mcp/ lives below it
  app/tools/mcp/     remote tools
```
"""


def test_the_checker_accepts_a_true_map(tmp_path: Path) -> None:
    _tree(tmp_path)
    block = map_block(_doc(tmp_path, MAP))
    assert named_paths(block)[:2] == ["app/settings.py", "app/db/"]
    assert wrong_paths(block, tmp_path) == []
    assert unnamed_packages(block, tmp_path) == []
    assert packages(tmp_path) == ["app/db/", "app/tools/", "app/tools/mcp/"]


def test_the_checker_names_paths_that_do_not_exist(tmp_path: Path) -> None:
    _tree(tmp_path)
    body = MAP.replace("app/db/              the", "app/db              the").replace(
        "remote tools", "remote tools, app/tools/registry.py, app/gone/ (myapp/x.py)"
    )
    block = map_block(_doc(tmp_path, body))
    assert wrong_paths(block, tmp_path) == [
        "app/db: a folder: write app/db/",
        "app/tools/registry.py: no such file",
        "app/gone/: no such folder",
    ]


def test_the_checker_names_packages_left_out(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "app" / "tools" / "mcp" / "deep").mkdir()
    (tmp_path / "app" / "tools" / "mcp" / "deep" / "__init__.py").write_text("")
    block = map_block(_doc(tmp_path, MAP.replace("app/db/ too", "the db")))
    assert unnamed_packages(block, tmp_path) == ["app/tools/mcp/deep/"]
    block = map_block(_doc(tmp_path, MAP.replace("app/db/", "the db")))
    assert unnamed_packages(block, tmp_path) == ["app/db/", "app/tools/mcp/deep/"]


def test_the_checker_fails_without_the_section_or_its_one_block(tmp_path: Path) -> None:
    with pytest.raises(MapError, match="no section"):
        map_block(_doc(tmp_path, "## Map of the app\n\n```\napp/\n```\n"))
    with pytest.raises(MapError, match="0 code blocks"):
        map_block(_doc(tmp_path, "## Map of app/\n\nnot yet\n"))
    with pytest.raises(MapError, match="2 code blocks"):
        map_block(_doc(tmp_path, MAP + "\n```\napp/db/\n```\n"))
    assert named_paths(map_block(_doc(tmp_path, MAP.replace("app/", "`app/`", 1)))) == [
        "app/settings.py",
        "app/db/",
        "app/db/",
        "app/tools/",
        "app/tools/mcp/",
        "app/tools/mcp/",
    ]

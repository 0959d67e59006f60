"""The docs hold together: every relative link in README.md and docs/*.md names a file of
the repository, every link to a section (`api.md#run-trace`) names a heading that exists,
the README stays a front door (at most 250 lines), and the documented fields of GET
/api/tools and of a run's tool results are the ones the API serves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.threads.schemas import RunStep, RunToolResult
from app.tools.controllers import ToolRead

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250
FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[`~]*[ \t]*$", flags=re.M | re.S)
# An inline link or image `[text](target "title")`, and a reference definition `[id]: target`.
INLINE = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", flags=re.M)
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, …


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _prose(text: str) -> str:
    """The text without its fenced code blocks (their `#` lines are no headings, their
    brackets no links)."""
    return FENCED.sub("", text)


def anchors(path: Path) -> set[str]:
    text = _prose(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M):
        base = slug(heading)
        anchor, n = base, 0
        while anchor in found:  # GitHub numbers repeated headings: `x`, `x-1`, `x-2`
            n += 1
            anchor = f"{base}-{n}"
        found.add(anchor)
    found |= set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    return found


def links(doc: Path) -> list[str]:
    """Every link target written in the document outside code blocks."""
    text = _prose(doc.read_text(encoding="utf-8"))
    return INLINE.findall(text) + REFERENCE.findall(text)


def broken_links(doc: Path, root: Path = ROOT) -> list[str]:
    """The document's relative links that do not resolve: the file or folder is missing or
    outside the repository (`../shared/…`), or the `#anchor` names no heading there."""
    broken = []
    for target in links(doc):
        if not target or EXTERNAL.match(target):
            continue
        file, _, anchor = target.partition("#")
        linked = (doc.parent / file).resolve() if file else doc.resolve()
        if not linked.is_relative_to(root.resolve()):
            broken.append(f"{target}: outside the repository")
        elif not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    return broken


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_link_resolves(doc: Path) -> None:
    assert broken_links(doc) == []


def test_the_docs_are_checked() -> None:
    names = {doc.name for doc in DOCS}
    assert {"README.md", "api.md", "configuration.md", "operations.md"} <= names


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Run trace\n\n## Run trace\n")
    (tmp_path / "outside.md").write_text("# Outside\n")
    doc = tmp_path / "README.md"
    doc.write_text(
        "# Top\n\n## The two commands\n\n"
        "[ok](docs/a.md) [ok](docs/a.md#run-trace) [ok](docs/a.md#run-trace-1) "
        "[ok](#the-two-commands) [ok](docs/) [web](https://example.com/x.md) "
        '[ok](docs/a.md "title") <https://example.com>\n'
        "[gone](docs/b.md) [no heading](docs/a.md#runs) [no heading](#nope)\n"
        "[up](../shared/x.md)\n\n"
        "[ref]: docs/missing.md\n\n"
        "```sh\n# not a heading\n[in code](docs/nothing.md)\n```\n"
    )
    repo = tmp_path
    assert broken_links(doc, repo) == [
        "docs/b.md: no such file",
        "docs/a.md#runs: no heading #runs in a.md",
        "#nope: no heading #nope in README.md",
        "../shared/x.md: outside the repository",
        "docs/missing.md: no such file",
    ]
    assert "not-a-heading" not in anchors(doc)


def test_the_slug_rule_matches_githubs() -> None:
    assert slug("OpenAI-compatible endpoint (`/v1`)") == "openai-compatible-endpoint-v1"
    assert slug("MCP servers (remote tools)") == "mcp-servers-remote-tools"


def _api_doc() -> str:
    return (ROOT / "docs" / "api.md").read_text(encoding="utf-8")


def test_the_tool_catalog_row_lists_every_field_served() -> None:
    row = next(line for line in _api_doc().splitlines() if line.startswith("| `GET /api/tools`"))
    fields = re.search(r"\{([^}]*)\}", row).group(1)  # type: ignore[union-attr]
    listed = [f.strip().split(" ")[0] for f in fields.split(",")]
    assert listed == list(ToolRead.__struct_fields__)


def test_run_trace_documents_tool_results_and_steps_as_served() -> None:
    section = _api_doc().split("### Run trace", 1)[1].split("\n## ", 1)[0]
    results = re.search(r"`tool_results`: [^`]*`\{([^}]*)\}`", section, flags=re.S)
    assert results is not None
    assert [f.strip() for f in results.group(1).split(",")] == list(RunToolResult.__struct_fields__)
    steps = re.search(r"`steps`, each `\{([^}]*)\}`", section, flags=re.S)
    assert steps is not None
    named = [f.strip().rstrip("?") for f in steps.group(1).split(",")]
    assert named == list(RunStep.__struct_fields__)
    assert "one `tool` step per\n  model turn" in section or "per model turn" in section.replace(
        "\n  ", " "
    )

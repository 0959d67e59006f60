"""The docs hold together: every link to a section (`api.md#run-trace`) names a heading
that exists, and the documented fields of GET /api/tools and of a run's tool results are
the ones the API serves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.threads.schemas import RunStep, RunToolResult
from app.tools.controllers import ToolRead

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]*)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m) for m in re.findall(r"^#+\s+(.*)$", text, flags=re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_section_link_names_an_existing_heading(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if "#" not in target or target.startswith("http"):
            continue
        file, _, anchor = target.partition("#")
        linked = (doc.parent / file).resolve() if file else doc
        if not linked.exists() or anchor not in anchors(linked):
            broken.append(target)
    assert broken == []


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

"""The bundled demo MCP server runs inside the app's process: it starts only when an agent
type lists a bundled server, since otherwise no toolset offers its tools."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from app import create_app
from app.settings import Settings
from app.tools.mcp import demo_server
from app.tools.runtime.toolsets import load_agent_types
from tests.conftest import running_lifespan
from tests.support.databases import sqlite_url


def agent_types_file(directory: Path, *, uses_demo: bool) -> Path:
    assistant: dict[str, Any] = {"description": "Tasks only.", "tools": ["tasks"]}
    if uses_demo:
        assistant["mcp_servers"] = ["demo"]
    document = {
        "agent_types": {"assistant": assistant},
        "mcp_servers": {"demo": {"bundled": True, "description": "Offline demo tools."}},
    }
    path = directory / "agent_types.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The URLs of the demo servers started meanwhile."""
    urls: list[str] = []
    serve = demo_server.serve_in_thread

    def recording(*args: Any, **kwargs: Any) -> demo_server.RunningServer:
        running = serve(*args, **kwargs)
        urls.append(running.url)
        return running

    monkeypatch.setattr(demo_server, "serve_in_thread", recording)
    yield urls
    load_agent_types(None)  # the other tests' agent types


@pytest.mark.parametrize("uses_demo", [False, True])
async def test_the_demo_server_starts_only_for_an_agent_type_using_it(
    tmp_path: Path, started: list[str], uses_demo: bool
) -> None:
    settings = Settings(
        database_url=sqlite_url(tmp_path),
        runner_enabled=False,
        mcp_demo_server=True,
        agent_types_file=str(agent_types_file(tmp_path, uses_demo=uses_demo)),
    )
    app = create_app(settings)
    async with running_lifespan(app):
        catalog = app.state.mcp_catalog
        if uses_demo:
            assert len(started) == 1
            assert catalog.servers["demo"].spec.url == started[0]
            assert catalog.names_for("demo")  # its tools are listed: `demo__roll_dice`, …
        else:
            assert started == []
            assert "demo" not in catalog.servers

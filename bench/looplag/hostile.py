"""The hostile result of `bench.looplag`: an MCP server (the tests' own, official SDK,
Streamable HTTP in a thread of the benchmark's process) whose `flood` tool answers 5 MB of
structured content and no text, declared to the server as `hostile` for the `assistant`
type; its tool reaches the model as `hostile__flood`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from app.tools.runtime.toolsets import DEFAULT_AGENT_TYPES_FILE
from tests.support.mcp_servers import build_test_app, running

FLOOD_TOOL = "hostile__flood"
FLOOD_ROWS = 40_000  # ~130 bytes a row: 5 MB of JSON


@contextmanager
def hostile_agent_types(folder: Path, max_message_bytes: int | None = None) -> Iterator[Path]:
    """The default agent types plus the hostile server, as a file for AGENT_TYPES_FILE
    (`max_message_bytes`: the server's limit; None: the default, which refuses the flood)."""
    with running(build_test_app()) as server:
        data = yaml.safe_load(DEFAULT_AGENT_TYPES_FILE.read_text())
        data["mcp_servers"]["hostile"] = {
            "url": server.url,
            "tools": ["flood"],
            "timeout_seconds": 60,
        }
        if max_message_bytes is not None:
            data["mcp_servers"]["hostile"]["max_message_bytes"] = max_message_bytes
        data["agent_types"]["assistant"]["mcp_servers"].append("hostile")
        path = folder / "agent_types.yaml"
        path.write_text(yaml.safe_dump(data))
        yield path

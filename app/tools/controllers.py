"""GET /api/tools: the catalog of tools the app and clients can show."""

from __future__ import annotations

from typing import Literal

import msgspec
from litestar import Controller, get

from app.accounts.deps import SECURITY
from app.db.models import User
from app.lib.problems import problems
from app.lib.schema import Schema
from app.tools.registry import ToolCatalogEntry, get_registry
from app.tools.toolsets import agent_types_offering


class ToolRead(Schema):
    name: str
    description: str
    actions: list[str]
    parameters: dict[str, object]
    # One line, e.g. `action: create|list|complete, title?, due_at?` (`?`: may be left out).
    params_hint: str
    is_user_facing: bool
    requires_confirmation: bool
    confirmation_actions: list[str]
    non_user_facing_actions: list[str]
    agent_types: list[str]
    # The JSON Schema of a successful call's `data`, per action: a `$ref` to a component of
    # /schema/openapi.json (TaskToolResult, WebSearchResult, …).
    result_schemas: dict[str, dict[str, str]]
    # "device": the phone runs the tool; its cell waits as `awaiting_device` until the
    # app posts the output (validated against `result_schema`) to …/messages/{id}/result.
    # "mcp": a remote MCP server (`mcp_server`) runs it; its cell's `data` on success is
    # `{type: "mcp_result", server, tool, structured_content?, text?}`.
    executor: Literal["server", "device", "mcp"] = "server"
    timeout_seconds: float = 30
    result_schema: dict[str, object] = {}  # device tools; {} for server tools
    mcp_server: str | None = None  # executor "mcp": the server's name in the agent-types file


class ToolList(Schema):
    items: list[ToolRead]


def tool_read(entry: ToolCatalogEntry) -> ToolRead:
    """The registry's entry plus the agent types that offer the tool."""
    fields = msgspec.structs.asdict(entry)
    return msgspec.convert({**fields, "agent_types": agent_types_offering(entry.name)}, ToolRead)


class ToolController(Controller):
    path = "/api/tools"
    tags = ["tools"]
    security = SECURITY

    @get("/", operation_id="ListTools", responses=problems())
    async def list_tools(self, current_user: User) -> ToolList:
        """Every tool: its actions, parameters (JSON Schema) and how the app shows it."""
        return ToolList(items=[tool_read(e) for e in get_registry().catalog()])

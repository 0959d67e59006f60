"""GET /api/tools: the catalog of tools the app and clients can show."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

import msgspec
from litestar import get

from app.accounts.deps import SignedInController
from app.db.models import User
from app.lib.problems import problems
from app.lib.schema import Schema
from app.tools.assembly import get_registry
from app.tools.runtime.registry import ToolCatalogEntry, plain_entry
from app.tools.runtime.toolsets import agent_types_offering
from app.tools.specialists import SpecialistTool


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
    # "agent": one of your enabled specialist agents (`agent_id`), asked as `ask_<name>`
    # by the agent types that delegate; its cell's `data` is `{answer, agent_name}`.
    executor: Literal["server", "device", "mcp", "agent"] = "server"
    timeout_seconds: float = 30
    result_schema: dict[str, object] = {}  # device tools; {} for server tools
    mcp_server: str | None = None  # executor "mcp": the server's name in the agent-types file
    agent_id: UUID | None = None  # executor "agent": the specialist asked


class ToolList(Schema):
    items: list[ToolRead]


def tool_read(entry: ToolCatalogEntry, **given: Any) -> ToolRead:
    """The registry's entry plus the agent types that offer the tool (unless `given`)."""
    fields = msgspec.structs.asdict(entry)
    offering = {"agent_types": agent_types_offering(entry.name)}
    return msgspec.convert({**fields, **offering, **given}, ToolRead)


def ask_read(tool: SpecialistTool) -> ToolRead:
    """A specialist as the tool delegating agents call (app/agents/delegates.py)."""
    entry = plain_entry(tool, "agent", hint="message")
    return tool_read(entry, agent_types=tool.agent_types, agent_id=tool.agent_id)


class ToolController(SignedInController):
    path = "/api/tools"
    tags = ["tools"]

    @get("/", operation_id="ListTools", responses=problems())
    async def list_tools(
        self, current_user: User, specialist_tools: list[SpecialistTool]
    ) -> ToolList:
        """Every tool: its actions, parameters (JSON Schema) and how the app shows it; then
        the `ask_*` tool of each of your enabled specialist agents."""
        registered = [tool_read(e) for e in get_registry().catalog()]
        return ToolList(items=[*registered, *(ask_read(t) for t in specialist_tools)])

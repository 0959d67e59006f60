"""The process's tools: the builtin set, its registry, and the union of every cell `data`.

The one module of `app/tools` that knows every concrete kind of tool (builtin, MCP,
device, specialist): the contract and the runtime below it know none, and the layers above
(the orchestrator, the HTTP and CLI surfaces, create_app) take the registry from here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from app.lib.open_schemas import open_union
from app.lib.struct_schema import struct_components, tagged_union, unknown_member
from app.tools.base import Tool, ToolData
from app.tools.builtin.memory import MemoryTool
from app.tools.builtin.schedules import SchedulesTool
from app.tools.builtin.self_authoring import SelfAuthoringTool
from app.tools.builtin.tasks import TasksTool
from app.tools.builtin.web import WebTool
from app.tools.mcp.tool import McpToolResult
from app.tools.results import DelegationResult, DeviceToolOutput, ToolError, ToolProgress
from app.tools.runtime.registry import ToolRegistry


def builtin_tools() -> list[Tool]:
    return [TasksTool(), WebTool(), MemoryTool(), SelfAuthoringTool(), SchedulesTool()]


@lru_cache(maxsize=1)
def get_registry() -> ToolRegistry:
    """The process registry with the builtin tools (MCP catalogs join it at startup)."""
    return ToolRegistry(builtin_tools())


def data_types() -> list[type[ToolData]]:
    """Every kind of `data`, by its tag: the members of the published union."""
    kinds = {s for tool in builtin_tools() for s in tool.results.values()}
    kinds |= {McpToolResult, DelegationResult, DeviceToolOutput, ToolProgress, ToolError}
    return sorted(kinds, key=lambda s: str(s.__struct_config__.tag))


DATA_DESCRIPTION = (
    "A cell's `data` (`tool_activity.data`), chosen by `type`: the result of the call's "
    "tool and action (GET /api/tools, `result_schemas`), `progress` while it runs, "
    "`error` once it failed."
)
DATA_FALLBACK = (
    "new result types may be added; show a cell whose `data.type` you do not know from "
    "its generic fields (`name`, `status`, `display_message`, `preview`, `error`)."
)


# The `type` of data stored before cell data was typed whose kind could not be told
# (the data migration 0020_type_old_cell_data); no member has it: it is `UnknownData`.
UNTYPED = "untyped"
UNKNOWN_DATA = (
    "A cell's data of a `type` this app does not know: a kind added after it was built, "
    f"or `{UNTYPED}` (stored before cell data was typed, its kind not told), every key "
    "kept. Show the cell from its generic fields (`name`, `status`, `display_message`, "
    "`preview`, `error`)."
)
# Also published open (`OpenToolData`, app/lib/open_schemas.py; its fallback apart from the
# `oneOf`, where openapi-typescript would type its `type` "UnknownData"): Apple's generator reads
# the `oneOf` as closed whatever its members.
open_union("ToolData", "UnknownToolData", UNKNOWN_DATA)


def data_components() -> dict[str, dict[str, Any]]:
    """The schema of every kind of `data` (and what they contain), and their union
    `ToolData` (open: `UnknownData` last): components of openapi/openapi.json and
    openapi/asyncapi.json."""
    kinds = data_types()
    schemas = struct_components(kinds)
    schemas["UnknownData"] = unknown_member(kinds, "UnknownData", UNKNOWN_DATA)
    schemas["ToolData"] = tagged_union(
        kinds, DATA_DESCRIPTION, fallback=DATA_FALLBACK, fallback_member="UnknownData"
    )
    return schemas

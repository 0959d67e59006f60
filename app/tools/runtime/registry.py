"""The explicit registry of tools: a plain name -> instance map, built once per process."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, Protocol

import msgspec

from app.lib.struct_schema import REF_TEMPLATE
from app.tools.base import Tool
from app.tools.device import DeviceToolSpec
from app.tools.runtime.toolsets import device_tools
from app.tools.schema import params_hint


class ToolCatalogEntry(msgspec.Struct, kw_only=True):
    """One tool as GET /api/tools and `litestar tools list` describe it."""

    name: str
    description: str
    actions: list[str]
    parameters: dict[str, Any]
    params_hint: str
    is_user_facing: bool
    requires_confirmation: bool  # true when the tool, or any of its actions, asks first
    confirmation_actions: list[str]  # the actions that ask the user before running
    non_user_facing_actions: list[str]
    timeout_seconds: float
    # action -> {"$ref": "#/components/schemas/<its ToolData Struct>"} (openapi/openapi.json)
    result_schemas: dict[str, dict[str, str]]
    # "server": runs here; "device": the phone runs it (the cell waits as awaiting_device
    # until the app posts the result to …/messages/{message_id}/result); "mcp": a remote
    # MCP server runs it (`mcp_server` names it); "agent": a specialist answers (`ask_*`).
    executor: Literal["server", "device", "mcp", "agent"] = "server"
    result_schema: dict[str, Any] = {}  # device tools: the output the app posts ({}: any)
    mcp_server: str | None = None


class ToolSource(Protocol):
    """Tools that come and go while the process runs (the MCP servers' catalog)."""

    generation: int  # bumped whenever its tools change

    def get(self, name: str) -> Tool | None: ...

    def tools(self) -> list[Tool]: ...


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._sources: list[ToolSource] = []
        for tool in tools:
            self.register(tool)

    def add_source(self, source: ToolSource) -> None:
        self._sources.append(source)

    def sources(self) -> list[ToolSource]:
        return list(self._sources)

    def remove_source(self, source: ToolSource) -> None:
        if source in self._sources:
            self._sources.remove(source)

    @property
    def generation(self) -> tuple[int, ...]:
        """Changes whenever a source's tools change (a cache key for their definitions)."""
        return tuple(source.generation for source in self._sources)

    def all_names(self) -> list[str]:
        """The registered tools, then the sources' current ones."""
        return self.names() + [t.name for s in self._sources for t in s.tools()]

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"Tool {tool.name!r} is registered twice.")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        tool = self._tools.get(name)
        if tool is None:
            for source in self._sources:
                if (tool := source.get(name)) is not None:
                    break
        return tool

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def catalog(self) -> list[ToolCatalogEntry]:
        """The registered tools, then the device tools the agent-types file declares."""
        devices = [_device_entry(spec) for spec in device_tools().values()]
        remote = [_catalog_entry(t) for source in self._sources for t in source.tools()]
        return [_catalog_entry(tool) for tool in self._tools.values()] + devices + remote

    def function_definitions(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """What the model is offered for `names` (server and device tools)."""
        devices = device_tools()
        definitions = []
        for name in names:
            if (tool := self.get(name)) is not None:
                definitions.append(tool.function_definition())
            elif name in devices:
                definitions.append(devices[name].function_definition())
        return definitions


def _catalog_entry(tool: Tool) -> ToolCatalogEntry:
    confirm = [a for a in tool.actions if tool.needs_confirmation(a)]
    return ToolCatalogEntry(
        name=tool.name,
        description=tool.description,
        actions=list(tool.actions),
        parameters=tool.parameters_schema(),
        params_hint=tool.parameters_hint(),
        is_user_facing=tool.is_user_facing,
        requires_confirmation=bool(confirm),
        confirmation_actions=confirm,
        non_user_facing_actions=sorted(tool.non_user_facing_actions),
        timeout_seconds=tool.timeout_seconds,
        executor=tool.executor,
        mcp_server=tool.mcp_server,
        result_schemas={
            action: {"$ref": REF_TEMPLATE.format(name=struct.__name__)}
            for action, struct in tool.results.items()
        },
    )


class PlainTool(Protocol):
    """A tool of one action that never asks first: a device tool, a specialist (`ask_*`)."""

    name: str
    description: str
    parameters: dict[str, Any]
    timeout_seconds: float


def plain_entry(
    tool: PlainTool,
    executor: Literal["device", "agent"],
    hint: str | None = None,
    is_user_facing: bool = True,
) -> ToolCatalogEntry:
    return ToolCatalogEntry(
        name=tool.name,
        description=tool.description,
        actions=[],
        parameters=tool.parameters,
        params_hint=hint or params_hint(tool.parameters),
        is_user_facing=is_user_facing,
        requires_confirmation=False,
        confirmation_actions=[],
        non_user_facing_actions=[],
        timeout_seconds=tool.timeout_seconds,
        executor=executor,
        result_schemas={},
    )


def _device_entry(spec: DeviceToolSpec) -> ToolCatalogEntry:
    entry = plain_entry(spec, "device", is_user_facing=spec.is_user_facing)
    return msgspec.structs.replace(entry, result_schema=spec.result_schema or {})

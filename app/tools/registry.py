"""The explicit registry of tools: a plain name -> instance map, built once per process."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal

import msgspec

from app.lib.struct_schema import REF_TEMPLATE, struct_components
from app.tools.base import Tool
from app.tools.device import DeviceToolSpec
from app.tools.schema import params_hint
from app.tools.toolsets import device_tools


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
    # until the app posts the result to …/messages/{message_id}/result).
    executor: Literal["server", "device"] = "server"
    result_schema: dict[str, Any] = {}  # device tools: the output the app posts ({}: any)


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"Tool {tool.name!r} is registered twice.")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def catalog(self) -> list[ToolCatalogEntry]:
        """The registered tools, then the device tools the agent-types file declares."""
        devices = [_device_entry(spec) for spec in device_tools().values()]
        return [_catalog_entry(tool) for tool in self._tools.values()] + devices

    def function_definitions(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """What the model is offered for `names` (server and device tools)."""
        devices = device_tools()
        definitions = []
        for name in names:
            if name in self._tools:
                definitions.append(self._tools[name].function_definition())
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
        result_schemas={
            action: {"$ref": REF_TEMPLATE.format(name=struct.__name__)}
            for action, struct in tool.results.items()
        },
    )


def _device_entry(spec: DeviceToolSpec) -> ToolCatalogEntry:
    return ToolCatalogEntry(
        name=spec.name,
        description=spec.description,
        actions=[],
        parameters=spec.parameters,
        params_hint=params_hint(spec.parameters),
        is_user_facing=spec.is_user_facing,
        requires_confirmation=False,
        confirmation_actions=[],
        non_user_facing_actions=[],
        timeout_seconds=spec.timeout_seconds,
        executor="device",
        result_schema=spec.result_schema or {},
        result_schemas={},
    )


def result_components(tools: Iterable[Tool]) -> dict[str, dict[str, Any]]:
    """The schemas of every tool's result Structs, as OpenAPI components."""
    structs = {s for tool in tools for s in tool.results.values()}
    return struct_components(sorted(structs, key=lambda s: s.__name__))


def builtin_tools() -> list[Tool]:
    from app.tools.builtin.memory import MemoryTool
    from app.tools.builtin.self_authoring import SelfAuthoringTool
    from app.tools.builtin.tasks import TasksTool
    from app.tools.builtin.web import WebTool

    return [TasksTool(), WebTool(), MemoryTool(), SelfAuthoringTool()]


@lru_cache(maxsize=1)
def get_registry() -> ToolRegistry:
    """The process registry with the builtin tools."""
    return ToolRegistry(builtin_tools())

"""The explicit registry of tools: a plain name -> instance map, built once per process."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal

import msgspec

from app.tools.base import Tool
from app.tools.device import DeviceToolSpec
from app.tools.toolsets import device_tools


class ToolCatalogEntry(msgspec.Struct, kw_only=True):
    """One tool as GET /api/tools and `litestar tools list` describe it."""

    name: str
    description: str
    actions: list[str]
    parameters: dict[str, Any]
    is_user_facing: bool
    requires_confirmation: bool  # true when the tool, or any of its actions, asks first
    confirmation_actions: list[str]  # the actions that ask the user before running
    non_user_facing_actions: list[str]
    timeout_seconds: float  # device tools: how long the call waits for the phone
    # "server": runs here; "device": the phone runs it (the cell waits as awaiting_device
    # until the app posts the result to …/messages/{message_id}/result).
    executor: Literal["server", "device"] = "server"
    result_schema: dict[str, Any] | None = None  # device tools: the output the app posts


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
        is_user_facing=tool.is_user_facing,
        requires_confirmation=bool(confirm),
        confirmation_actions=confirm,
        non_user_facing_actions=sorted(tool.non_user_facing_actions),
        timeout_seconds=tool.timeout_seconds,
    )


def _device_entry(spec: DeviceToolSpec) -> ToolCatalogEntry:
    return ToolCatalogEntry(
        name=spec.name,
        description=spec.description,
        actions=[],
        parameters=spec.parameters,
        is_user_facing=spec.is_user_facing,
        requires_confirmation=False,
        confirmation_actions=[],
        non_user_facing_actions=[],
        timeout_seconds=spec.timeout_seconds,
        executor="device",
        result_schema=spec.result_schema,
    )


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

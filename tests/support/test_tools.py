"""Test-only tools and agent types for orchestrator tests (and the SIGKILL subprocess)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

import msgspec
import yaml

from app.tools.base import Tool, ToolContext, ToolResult
from app.tools.registry import get_registry
from app.tools.toolsets import DEFAULT_AGENT_TYPES_FILE

TEST_TOOLS = ["test_echo", "test_slow", "test_timeout", "test_raise", "test_confirm", "test_gate"]


class EchoParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    text: str


class WaitParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    seconds: float = 30.0


class NoteParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    note: str


class EchoTool(Tool):
    name = "test_echo"
    description = "Echo text back."
    actions: ClassVar = {"echo": EchoParams}
    calls: ClassVar[list[str]] = []

    async def echo_action(self, ctx: ToolContext, params: EchoParams) -> ToolResult:
        self.calls.append(params.text)
        await ctx.progress(display_message=f"Echoing {params.text}")
        return ToolResult.success({"text": params.text}, display_message=f"Echoed {params.text}")


class SlowTool(Tool):
    name = "test_slow"
    description = "Wait a while."
    actions: ClassVar = {"wait": WaitParams}
    timeout_seconds = 120

    async def wait_action(self, ctx: ToolContext, params: WaitParams) -> ToolResult:
        await asyncio.sleep(params.seconds)
        return ToolResult.success({"waited": params.seconds})


class TimeoutTool(SlowTool):
    name = "test_timeout"
    timeout_seconds = 0.3


class RaisingTool(Tool):
    name = "test_raise"
    description = "Always raises."
    actions: ClassVar = {"boom": EchoParams}

    async def boom_action(self, ctx: ToolContext, params: EchoParams) -> ToolResult:
        raise RuntimeError("secret internals")


class ConfirmTool(Tool):
    name = "test_confirm"
    description = "Does something the user must approve."
    actions: ClassVar = {"do": NoteParams}
    requires_confirmation = True
    done: ClassVar[list[str]] = []

    async def do_action(self, ctx: ToolContext, params: NoteParams) -> ToolResult:
        self.done.append(params.note)
        return ToolResult.success({"done": params.note}, display_message="Done")


class GateTool(Tool):
    name = "test_gate"
    description = "Wait until the test opens the gate."
    actions: ClassVar = {"wait": WaitParams}
    gate: ClassVar[asyncio.Event | None] = None

    async def wait_action(self, ctx: ToolContext, params: WaitParams) -> ToolResult:
        assert GateTool.gate is not None, "the test sets GateTool.gate"
        await GateTool.gate.wait()
        return ToolResult.success({"opened": True})


def register_test_tools() -> None:
    registry = get_registry()
    tools = (EchoTool(), SlowTool(), TimeoutTool(), RaisingTool(), ConfirmTool(), GateTool())
    for tool in tools:
        if tool.name not in registry:
            registry.register(tool)


def write_agent_types(directory: Path) -> Path:
    """The default agent types plus `tester` (test tools, delegation), `tester_reject` and
    `tester_planner` (the test tools, planning first)."""
    data = yaml.safe_load(DEFAULT_AGENT_TYPES_FILE.read_text())
    tools = ["tasks", "memory", *TEST_TOOLS]
    data["agent_types"]["tester"] = {
        "tools": tools,
        "step_limit": 4,
        "tool_call_budget": 8,
        "delegation": True,
    }
    data["agent_types"]["tester_reject"] = {"tools": tools, "double_texting": "reject"}
    data["agent_types"]["tester_planner"] = {
        "tools": tools,
        "planner": True,
        "tool_call_budget": 3,
        "delegation": True,
    }
    data["agent_types"]["specialist"]["tools"] = ["memory", "test_echo"]
    path = directory / "agent_types.yaml"
    path.write_text(yaml.safe_dump(data))
    return path

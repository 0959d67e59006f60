"""Test-only tools and agent types for orchestrator tests (and the SIGKILL subprocess)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

import msgspec
import yaml

from app.tasks.services import create_task
from app.tools.assembly import get_registry
from app.tools.base import Tool, ToolContext, ToolResult
from app.tools.runtime.toolsets import DEFAULT_AGENT_TYPES_FILE

TEST_TOOLS = [
    "test_echo",
    "test_slow",
    "test_timeout",
    "test_raise",
    "test_confirm",
    "test_gate",
    "test_stream",
    "test_write",
]


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
        await ctx.progress(display_message="Waiting…", data={"waiting_for": params.seconds})
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


class StreamParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    chunks: int = 10
    size: int = 10
    pause_after: int | None = None  # wait for StreamTool.gate after this many chunks


class StreamTool(Tool):
    """Streams `chunks` chunks of `size` characters (`<index>:` then dots, a newline last)."""

    name = "test_stream"
    description = "Stream output."
    actions: ClassVar = {"stream": StreamParams}
    gate: ClassVar[asyncio.Event | None] = None
    paused: ClassVar[asyncio.Event | None] = None

    @staticmethod
    def chunk(index: int, size: int) -> str:
        head = f"{index}:"
        return (head + "." * size)[: size - 1] + "\n"

    async def stream_action(self, ctx: ToolContext, params: StreamParams) -> ToolResult:
        for index in range(params.chunks):
            if index == params.pause_after:
                assert StreamTool.gate is not None and StreamTool.paused is not None
                StreamTool.paused.set()
                await StreamTool.gate.wait()
            await ctx.output(self.chunk(index, params.size))
            await ctx.progress(display_message=f"{index + 1} of {params.chunks} chunks")
        return ToolResult.success({"chunks": params.chunks}, display_message="Streamed")


class WriteParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    title: str
    fail: bool = False


class WriteTool(Tool):
    """Creates a task, reporting progress inside its unit of work; `fail`: then says the
    call failed anyway (its change must not be kept)."""

    name = "test_write"
    description = "Create a task, then maybe fail."
    actions: ClassVar = {"write": WriteParams}

    async def write_action(self, ctx: ToolContext, params: WriteParams) -> ToolResult:
        async with ctx.transaction() as session:
            await ctx.progress(display_message=f"Writing {params.title}")
            task = await create_task(session, ctx.user.id, title=params.title)
        if params.fail:
            return ToolResult.failure("Refused after writing.", "user_error")
        return ToolResult.success({"task_id": str(task.id)}, display_message="Written")


def register_test_tools() -> None:
    registry = get_registry()
    tools = (
        EchoTool(),
        SlowTool(),
        TimeoutTool(),
        RaisingTool(),
        ConfirmTool(),
        GateTool(),
        StreamTool(),
        WriteTool(),
    )
    for tool in tools:
        if tool.name not in registry:
            registry.register(tool)


def write_agent_types(directory: Path) -> Path:
    """The default agent types plus `tester` (test tools, delegation), `tester_web` (the web
    tool alone), `tester_reject` and
    `tester_device` (device tools, one of them quick to expire), `tester_planner` (the
    test tools, planning first), `tester_parked` and `tester_days` (approvals that wait
    until answered, or two days)."""
    data = yaml.safe_load(DEFAULT_AGENT_TYPES_FILE.read_text())
    tools = ["tasks", "memory", *TEST_TOOLS]
    data["agent_types"]["tester"] = {
        "tools": tools,
        "step_limit": 4,
        "tool_call_budget": 8,
        "delegation": True,
    }
    data["agent_types"]["tester_reject"] = {"tools": tools, "double_texting": "reject"}
    data["agent_types"]["tester_web"] = {"tools": ["web"]}
    data["agent_types"]["tester_planner"] = {
        "tools": tools,
        "planner": True,
        "tool_call_budget": 3,
        "delegation": True,
    }
    # Approvals that park: until answered, or (for one tool) two days.
    data["agent_types"]["tester_parked"] = {"tools": tools, "approval_wait": "until_answered"}
    data["agent_types"]["tester_days"] = {
        "tools": tools,
        "approval_wait": 60,
        "approval_waits": {"test_confirm": 172800},
    }
    data["agent_types"]["specialist"]["tools"] = ["memory", "test_echo"]
    # A device tool the phone must answer within a second (expiry tests).
    data["device_tools"]["test_quick_device"] = {
        "description": "A device tool that expires fast.",
        "timeout_seconds": 1.0,
    }
    data["agent_types"]["tester_device"] = {
        "tools": ["tasks", "device_location", "calendar_events", "test_quick_device"],
    }
    path = directory / "agent_types.yaml"
    path.write_text(yaml.safe_dump(data))
    return path

"""The lifecycle of every tool execution: start, progress, output chunks, end, error.

The executor is the one place that emits them (a tool's `ctx.progress(...)` and
`ctx.output(chunk)` become `on_progress` and `on_output`), so the orchestrator (which
writes the tool message and streams the output: app/orchestrator/loop/cell_stream.py),
logging and tests all see the same sequence for every call:

    on_start -> (on_progress | on_output)* -> on_end | on_error
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from app.tools.base import ToolResult

logger = logging.getLogger("app.tools")


@dataclass(frozen=True)
class ToolCall:
    """One call as the lifecycle sees it (the parsed input, once validated)."""

    tool_call_id: str
    name: str
    action: str | None
    input: dict[str, Any]
    run_id: UUID
    thread_id: UUID


class ToolEvents(Protocol):
    async def on_start(self, call: ToolCall) -> None: ...

    async def on_progress(
        self, call: ToolCall, display_message: str | None, data: dict[str, Any] | None
    ) -> None: ...

    async def on_output(self, call: ToolCall, offset: int, chunk: str) -> None:
        """`chunk` of the call's streamed output; `offset`: characters streamed before it."""

    async def on_end(self, call: ToolCall, result: ToolResult) -> None: ...

    async def on_error(self, call: ToolCall, result: ToolResult) -> None: ...


class LoggingToolEvents:
    """The default: one log line per lifecycle step, at DEBUG (a busy server runs many
    tool calls a second; production logs at INFO)."""

    async def on_start(self, call: ToolCall) -> None:
        logger.debug("tool start %s.%s call=%s", call.name, call.action, call.tool_call_id)

    async def on_progress(
        self, call: ToolCall, display_message: str | None, data: dict[str, Any] | None
    ) -> None:
        logger.debug("tool progress %s call=%s %s", call.name, call.tool_call_id, display_message)

    async def on_output(self, call: ToolCall, offset: int, chunk: str) -> None:
        logger.debug(
            "tool output %s call=%s @%d +%d", call.name, call.tool_call_id, offset, len(chunk)
        )

    async def on_end(self, call: ToolCall, result: ToolResult) -> None:
        logger.debug(
            "tool end %s.%s call=%s duplicate=%s",
            call.name,
            call.action,
            call.tool_call_id,
            result.duplicate,
        )

    async def on_error(self, call: ToolCall, result: ToolResult) -> None:
        logger.debug(
            "tool error %s.%s call=%s %s: %s",
            call.name,
            call.action,
            call.tool_call_id,
            result.error_type,
            result.error,
        )


@dataclass
class FanOutToolEvents:
    """Send each event to several listeners, in order (e.g. the message writer + logging)."""

    listeners: list[ToolEvents] = field(default_factory=list)

    async def on_start(self, call: ToolCall) -> None:
        for listener in self.listeners:
            await listener.on_start(call)

    async def on_progress(
        self, call: ToolCall, display_message: str | None, data: dict[str, Any] | None
    ) -> None:
        for listener in self.listeners:
            await listener.on_progress(call, display_message, data)

    async def on_output(self, call: ToolCall, offset: int, chunk: str) -> None:
        for listener in self.listeners:
            await listener.on_output(call, offset, chunk)

    async def on_end(self, call: ToolCall, result: ToolResult) -> None:
        for listener in self.listeners:
            await listener.on_end(call, result)

    async def on_error(self, call: ToolCall, result: ToolResult) -> None:
        for listener in self.listeners:
            await listener.on_error(call, result)


@dataclass
class RecordingToolEvents:
    """Keeps every event; for tests and for callers that want the trace."""

    events: list[tuple[str, ToolCall, Any]] = field(default_factory=list)

    async def on_start(self, call: ToolCall) -> None:
        self.events.append(("start", call, None))

    async def on_progress(
        self, call: ToolCall, display_message: str | None, data: dict[str, Any] | None
    ) -> None:
        self.events.append(("progress", call, {"display_message": display_message, "data": data}))

    async def on_output(self, call: ToolCall, offset: int, chunk: str) -> None:
        self.events.append(("output", call, {"offset": offset, "chunk": chunk}))

    async def on_end(self, call: ToolCall, result: ToolResult) -> None:
        self.events.append(("end", call, result))

    async def on_error(self, call: ToolCall, result: ToolResult) -> None:
        self.events.append(("error", call, result))

    def kinds(self) -> list[str]:
        return [kind for kind, _, _ in self.events]

"""What the model door and the tool executor wrap their calls in: a metric and a span."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.observability import metrics, tracing


@asynccontextmanager
async def model_call(model: str) -> AsyncIterator[None]:
    """One attempt of one model call (the whole stream)."""
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
    async with tracing.span(f"chat {model}", attributes), metrics.model_call(model):
        yield


@asynccontextmanager
async def tool_call(tool: str, action: str) -> AsyncIterator[None]:
    """One tool execution (its status is counted where the result is known)."""
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
    async with tracing.span(f"execute_tool {tool}.{action}", {**attributes, "action": action}):
        yield

"""What a run did, read from its stored messages: the answer, its steps, its tool results.

Everything comes from the rows the runner wrote (the same cells the app renders), so the
trace of a finished run is the same whenever it is read.
"""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, ThreadMessage
from app.openai_compat.schemas import CompletionStep, CompletionToolResult, CompletionTrace
from app.threads import repository

_STEP_STATUS = {"success": "ok", "failure": "error"}
_COMPLETION_STATUS = {
    "completed": "ok",
    "failed": "error",
    "cancelled": "skipped",
    "queued": "pending",
    "running": "in_progress",
}


async def run_messages(session: AsyncSession, run_id: Any) -> list[ThreadMessage]:
    return list(await session.scalars(repository.run_messages(run_id)))


def answer_text(messages: list[ThreadMessage]) -> str:
    """The run's assistant text: every text it wrote, in order (the text before a turn's
    tool calls included), as the streamed deltas carried it."""
    return "\n\n".join(
        m.content for m in messages if m.role == "assistant" and m.is_user_facing and m.content
    )


def _tool_result(activity: dict[str, Any]) -> CompletionToolResult:
    return CompletionToolResult(
        id=str(activity.get("id") or ""),
        name=str(activity.get("name") or ""),
        input=activity.get("input"),
        status=activity.get("status") or "in_progress",
        data=activity.get("data"),
        error=activity.get("error"),
        error_type=activity.get("error_type"),
    )


def _tool_step(result: CompletionToolResult) -> CompletionStep:
    action = (result.input or {}).get("action")
    return CompletionStep(
        id=result.id,
        label=f"{result.name}.{action}" if action else result.name,
        action="memory" if result.name == "memory" else "tool",
        tool=result.name,
        status=_STEP_STATUS.get(result.status, "in_progress"),  # type: ignore[arg-type]
    )


async def stored_run_trace(session: AsyncSession, run: Run) -> dict[str, list[Any]]:
    """`{steps, tool_results}` of a run: every tool call as a step, then the completion;
    `tool_results` (name, input, status, data or error per call) from the stored cells."""
    messages = await run_messages(session, run.id)
    results = [_tool_result(m.tool_activity) for m in messages if m.tool_activity]
    steps = [_tool_step(result) for result in results]
    steps.append(
        CompletionStep(
            id="completion",
            label="Compose the answer",
            action="completion",
            status=_COMPLETION_STATUS.get(run.status, "in_progress"),  # type: ignore[arg-type]
        )
    )
    return msgspec.to_builtins({"steps": steps, "tool_results": results})


async def completion_trace(session: AsyncSession, run: Run) -> CompletionTrace:
    trace = await stored_run_trace(session, run)
    return CompletionTrace(
        thread_id=run.thread_id,
        run_id=run.id,
        run_status=run.status,  # type: ignore[arg-type]
        steps=msgspec.convert(trace["steps"], list[CompletionStep]),
        tool_results=msgspec.convert(trace["tool_results"], list[CompletionToolResult]),
    )

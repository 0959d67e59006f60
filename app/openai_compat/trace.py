"""What a run did, read from its stored messages: the answer, its steps, its tool results.

Everything comes from the rows the runner wrote (the same cells the app renders), so the
trace of a finished run is the same whenever it is read.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, ThreadMessage
from app.openai_compat.schemas import CompletionTrace
from app.threads import repository
from app.threads.trace import run_trace


async def run_messages(session: AsyncSession, run_id: Any) -> list[ThreadMessage]:
    return list(await session.scalars(repository.run_messages(run_id)))


def answer_text(messages: list[ThreadMessage]) -> str:
    """The run's assistant text: every text it wrote, in order (the text before a turn's
    tool calls included), as the streamed deltas carried it."""
    return "\n\n".join(
        m.content for m in messages if m.role == "assistant" and m.is_user_facing and m.content
    )


async def completion_trace(session: AsyncSession, run: Run) -> CompletionTrace:
    """The run's trace as `GET …/runs/{run_id}` serves it (app/threads/trace.py)."""
    trace = await run_trace(session, run)
    return CompletionTrace(
        thread_id=run.thread_id,
        run_id=run.id,
        run_status=run.status,  # type: ignore[arg-type]
        steps=trace.steps,
        tool_results=trace.tool_results,
        plan=trace.plan,
    )

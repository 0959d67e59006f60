"""The open cells of a run or call, ended: each one write, saying why.

Whatever ends a run (its runner, the reaper, a cancel of a parked run) or a call that
outlived what enclosed it closes the cells left open the same way: a failure with the
reason, the model's content saying it, and an open plan cell marked as ended.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import ThreadMessage
from app.threads import activity as cell
from app.threads import plan as plan_cell
from app.threads import repository
from app.threads.writer import update_message


async def close_open_activities(
    session: AsyncSession, run_id: UUID, *, error_type: str, error: str
) -> int:
    """End every in_progress / awaiting_approval tool activity of a run as failure, and
    its open plan cell, if any."""
    messages = await session.scalars(
        repository.run_tool_messages(run_id).execution_options(populate_existing=True)
    )
    closed = 0
    now = clock.now()
    for message in messages:
        closed += await close_cell(session, message, error_type=error_type, error=error, now=now)
    return closed + await close_open_plan(session, run_id, error=error)


async def close_cell(
    session: AsyncSession,
    message: ThreadMessage,
    *,
    error_type: str,
    error: str,
    now: datetime | None = None,
) -> int:
    """End `message`'s cell as failure, saying why, if it is still open (1), else 0."""
    if not cell.is_open(message.tool_activity):
        return 0
    activity = message.tool_activity or {}
    await update_message(
        session,
        message,
        tool_activity=cell.closed(activity, error_type=error_type, error=error, now=now),
        content=cell.failure_content(error, error_type),
    )
    return 1


async def close_open_plan(session: AsyncSession, run_id: UUID, *, error: str) -> int:
    """A planner run that ended before its plan did: the plan cell says so (plan.py)."""
    messages = await session.scalars(
        repository.run_messages(run_id)
        .where(ThreadMessage.role == "assistant")
        .execution_options(populate_existing=True)
    )
    closed = 0
    for message in messages:
        if plan_cell.is_open(message.plan):
            await update_message(session, message, plan=plan_cell.closed(message.plan or {}, error))
            closed += 1
    return closed

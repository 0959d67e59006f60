"""Tool calls waiting for the user: an approval decision, or a device tool's result.

The waiting cell (`awaiting_approval` / `awaiting_device`) has an `expires_at`. Answers are
written under the thread lock and only while the cell still waits, so the first answer
wins and one racing the expiry loses cleanly. The run waits on an in-process event (woken
after the answer commits, and by the runner's poll) and meanwhile does not count against
the runner's concurrent-run limit: a run parked on the phone never blocks other runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import ThreadMessage
from app.lib.problems import ProblemException
from app.threads import activity as cell
from app.threads import repository
from app.threads.writer import lock_thread, update_message

if TYPE_CHECKING:
    from app.orchestrator.loop.context import RunnerDeps


async def locked_message(
    session: AsyncSession, thread_id: UUID, message_id: UUID
) -> ThreadMessage | None:
    await lock_thread(session, thread_id)  # serialises answers, expiry and the runner
    return await session.scalar(
        repository.thread_message(thread_id, message_id).execution_options(populate_existing=True)
    )


async def waiting_message(
    session: AsyncSession,
    thread_id: UUID,
    message_id: UUID,
    status: str,
    *,
    answered: str,
    expired: str,
) -> ThreadMessage:
    """The tool message whose cell still waits in `status`, locked for its answer; else the
    problem the client gets (404 unknown, 409 not a cell / `answered` / `expired`)."""
    message = await locked_message(session, thread_id, message_id)
    if message is None:
        raise ProblemException(404, "Message not found.")
    activity = message.tool_activity or {}
    if message.role != "tool" or not activity:
        raise ProblemException(409, "This message is not a tool activity.")
    if cell.status_of(activity) != status:
        raise ProblemException(409, answered)
    expires = cell.expires_at(activity)
    if expires is not None and expires <= clock.now():
        raise ProblemException(409, expired)
    return message


async def _read(deps: RunnerDeps, message: ThreadMessage) -> ThreadMessage:
    async with deps.read_sessions() as session:
        fresh = await session.get(ThreadMessage, message.id, populate_existing=True)
    return fresh or message


async def _expire(deps: RunnerDeps, message: ThreadMessage) -> ThreadMessage:
    async def work(session: AsyncSession) -> ThreadMessage:
        fresh = await locked_message(session, message.thread_id, message.id)
        assert fresh is not None
        if cell.is_waiting(fresh.tool_activity):
            activity = fresh.tool_activity or {}
            await update_message(
                session,
                fresh,
                tool_activity=cell.expired(activity),
                content=cell.failure_content(*cell.expiry_error(activity), activity),
            )
        return fresh

    return await deps.write(work)


@contextlib.asynccontextmanager
async def _parked(deps: RunnerDeps, message: ThreadMessage) -> AsyncIterator[asyncio.Event]:
    """The wake-up event for `message`, with its run off the concurrent-run count."""
    event = deps.approvals.register(message.id)
    if message.run_id is not None:
        deps.parked[message.id] = message.run_id
        deps.slot_freed()
    try:
        yield event
    finally:
        deps.parked.pop(message.id, None)
        deps.approvals.release(message.id)


async def wait_for_user(deps: RunnerDeps, message: ThreadMessage) -> ThreadMessage:
    """Block until the cell stops waiting (answered or expired); returns the fresh row."""
    deadline = cell.expires_at(message.tool_activity)
    poll = deps.settings.runner_poll_seconds
    async with _parked(deps, message) as event:
        while True:
            event.clear()  # before reading: an answer committed after the read still wakes us
            fresh = await _read(deps, message)
            if not cell.is_waiting(fresh.tool_activity):
                return fresh
            remaining = (deadline - clock.now()).total_seconds() if deadline else poll
            if remaining <= 0:
                return await _expire(deps, fresh)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=min(poll, remaining))

"""The run's side of a wait: a tool call parked until the user (or the phone) answers.

The waiting cell (`awaiting_approval` / `awaiting_input` / `awaiting_device`) has an
`expires_at`. The run waits on an in-process event (woken after the answer commits, and by
the runner's poll) and meanwhile does not count against the runner's concurrent-run limit:
a run parked on the phone never blocks other runs. The answers' side: app/orchestrator/waits/.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import ThreadMessage
from app.orchestrator.loop.context import RunnerDeps
from app.orchestrator.waits.cells import locked_message
from app.threads import activity as cell
from app.threads.writer import update_message


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

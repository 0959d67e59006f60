"""Tool calls that need the user's confirmation: the decision and the wait for it.

A call waits as `awaiting_approval` with `expires_at`. The first decision wins: it is
written under the thread lock and only if the activity is still awaiting, so a second
decision (or one racing the expiry) answers 409. Approve -> `in_progress` (the runner
then executes it); deny or expiry -> `failure` with `permission_error`, and the model is
told so.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Thread, ThreadMessage
from app.lib.problems import ProblemException
from app.lib.time import utcnow
from app.orchestrator.notify import notify_after_commit
from app.threads import activity as cell
from app.threads import repository
from app.threads.schemas import ApprovalDecision
from app.threads.writer import lock_thread, update_message

if TYPE_CHECKING:
    from app.orchestrator.context import RunnerDeps


async def _locked_message(
    session: AsyncSession, thread_id: UUID, message_id: UUID
) -> ThreadMessage | None:
    await lock_thread(session, thread_id)  # serialises decisions, expiry and the runner
    return await session.scalar(
        repository.thread_message(thread_id, message_id).execution_options(populate_existing=True)
    )


async def decide(
    session: AsyncSession, thread: Thread, message_id: UUID, decision: ApprovalDecision
) -> ThreadMessage:
    message = await _locked_message(session, thread.id, message_id)
    if message is None:
        raise ProblemException(404, "Message not found.")
    activity = message.tool_activity or {}
    if message.role != "tool" or not activity:
        raise ProblemException(409, "This message is not a tool activity.")
    if not cell.is_awaiting(activity):
        raise ProblemException(
            409, "This tool activity is not awaiting approval (it was already decided)."
        )
    expires = cell.expires_at(activity)
    if expires is not None and expires <= utcnow():
        raise ProblemException(409, "The approval request has expired.")
    if decision.approve:
        await update_message(session, message, tool_activity=cell.approved(activity))
    else:
        error = "The user denied this action." + (
            f" Reason: {decision.reason}" if decision.reason else ""
        )
        await update_message(
            session,
            message,
            tool_activity=cell.denied(activity, error),
            content=cell.failure_content(error, "permission_error"),
        )
    notify_after_commit(session, "approval", message.id)
    return message


async def _read(deps: RunnerDeps, message: ThreadMessage) -> ThreadMessage:
    async with deps.session_factory() as session:
        fresh = await session.get(ThreadMessage, message.id, populate_existing=True)
    return fresh or message


async def _expire(deps: RunnerDeps, message: ThreadMessage) -> ThreadMessage:
    async def work(session: AsyncSession) -> ThreadMessage:
        fresh = await _locked_message(session, message.thread_id, message.id)
        assert fresh is not None
        if cell.is_awaiting(fresh.tool_activity):
            await update_message(
                session,
                fresh,
                tool_activity=cell.expired(fresh.tool_activity or {}),
                content=cell.failure_content(cell.EXPIRED, "permission_error"),
            )
        return fresh

    return await deps.write(work)


async def wait_for_decision(deps: RunnerDeps, message: ThreadMessage) -> ThreadMessage:
    """Block until the activity leaves awaiting_approval; returns the fresh row."""
    event = deps.approvals.register(message.id)
    deadline = cell.expires_at(message.tool_activity)
    poll = deps.settings.runner_poll_seconds
    try:
        while True:
            event.clear()  # before reading: a decision committed after the read still wakes us
            fresh = await _read(deps, message)
            if not cell.is_awaiting(fresh.tool_activity):
                return fresh
            remaining = (deadline - utcnow()).total_seconds() if deadline else poll
            if remaining <= 0:
                return await _expire(deps, fresh)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=min(poll, remaining))
    finally:
        deps.approvals.release(message.id)

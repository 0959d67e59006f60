"""Tool calls waiting for someone: one model of a waiting cell and one answer path.

A call waits as `awaiting_approval` (the user decides), `awaiting_input` (the user answers
a tool's question) or `awaiting_device` (the phone runs a device tool), with an
`expires_at`. Every answer goes the same way: under the thread lock, only while the cell
still waits and has not expired, so the first answer wins and one racing the expiry loses
cleanly (409, saying which); an answer the cell cannot take (400) leaves it waiting. The
run's side of the wait: app/orchestrator/loop/waiting.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import Thread, ThreadMessage
from app.lib.problems import ProblemException
from app.orchestrator.scheduling.notify import notify_after_commit
from app.threads import activity as cell
from app.threads import repository
from app.threads.writer import lock_thread, update_message


@dataclass(frozen=True, slots=True)
class Wait:
    """A kind of wait: the status its cell waits in, and what a late answer is told."""

    status: str
    answered: str  # 409: someone answered it already
    expired: str  # 409: no one answered by its `expires_at`
    ended: str = "This tool call has already ended (it was cancelled, or what asked for it ended)."


APPROVAL = Wait(
    cell.AWAITING_APPROVAL,
    answered="This tool activity is not awaiting approval (it was already decided).",
    expired="The approval request has expired.",
)
INPUT = Wait(
    cell.AWAITING_INPUT,
    answered="This tool activity is not waiting for input (it was already answered).",
    expired="This request for input has expired.",
)
DEVICE = Wait(
    cell.AWAITING_DEVICE,
    answered="This tool activity is not waiting for the device (it was already answered).",
    expired="This device tool call has expired.",
)


EXPIRY_ERRORS = frozenset({cell.EXPIRED, cell.DEVICE_EXPIRED, cell.INPUT_EXPIRED})
ENDINGS = frozenset({"cancelled"})  # a cancelled run or call: no one answered
# what ended the call closed its cell: its delegation ended, its run was interrupted
CLOSED_UNANSWERED = frozenset({cell.DELEGATION_ENDED, cell.INTERRUPTED})


@dataclass(frozen=True, slots=True)
class Answered:
    """What an answer makes of the waiting cell: its new activity (and, when the call ends
    with it, the content the model reads)."""

    activity: dict[str, Any]
    content: str | None = None


async def locked_message(
    session: AsyncSession, thread_id: UUID, message_id: UUID
) -> ThreadMessage | None:
    await lock_thread(session, thread_id)  # serialises answers, expiry and the runner
    return await session.scalar(
        repository.thread_message(thread_id, message_id).execution_options(populate_existing=True)
    )


async def waiting_message(
    session: AsyncSession, thread_id: UUID, message_id: UUID, wait: Wait
) -> ThreadMessage:
    """The tool message whose cell still waits as `wait`, locked for its answer; else the
    problem the client gets (404 unknown, 409 not a cell / answered / expired)."""
    message = await locked_message(session, thread_id, message_id)
    if message is None:
        raise ProblemException(404, "Message not found.")
    activity = message.tool_activity or {}
    if message.role != "tool" or not activity:
        raise ProblemException(409, "This message is not a tool activity.")
    if cell.status_of(activity) != wait.status:
        raise ProblemException(409, too_late(wait, activity))
    expires = cell.expires_at(activity)
    if expires is not None and expires <= clock.now():
        raise ProblemException(409, wait.expired)
    return message


def too_late(wait: Wait, activity: dict[str, Any]) -> str:
    """Why a cell that no longer waits takes no answer: it expired, someone answered it, or
    its call ended without an answer (a cancel, the run's end)."""
    if activity.get("error") in EXPIRY_ERRORS:
        return wait.expired
    if cell.status_of(activity) == cell.FAILURE and (
        activity.get("error_type") in ENDINGS or activity.get("error") in CLOSED_UNANSWERED
    ):
        return wait.ended
    return wait.answered


async def answer(
    session: AsyncSession,
    thread: Thread,
    message_id: UUID,
    wait: Wait,
    respond: Callable[[dict[str, Any]], Answered],
) -> ThreadMessage:
    """The one answer path: the waiting cell, `respond`'s new state of it written (a
    ProblemException from `respond` writes nothing), and the run's wait woken after commit."""
    message = await waiting_message(session, thread.id, message_id, wait)
    answered = respond(message.tool_activity or {})
    changes: dict[str, Any] = {"tool_activity": answered.activity}
    if answered.content is not None:
        changes["content"] = answered.content
    await update_message(session, message, **changes)
    notify_after_commit(session, "approval", message.id)  # wakes the run's wait
    return message

"""Reading a thread's messages and posting a user message (which queues a run)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from uuid_utils.compat import uuid7

from app.agents.services import check_tool_names
from app.attachments import services as attachments
from app.db.models import Agent, Run, Thread, ThreadMessage
from app.lib.lookup import one_or_404
from app.lib.problems import ProblemException
from app.threads import repository
from app.threads.runs import queue_run
from app.threads.schemas import MessageCreate
from app.threads.writer import create_message, lock_thread
from app.tools.runtime.toolsets import get_agent_type


async def get_message(session: AsyncSession, thread: Thread, message_id: UUID) -> ThreadMessage:
    return await one_or_404(session, repository.thread_message(thread.id, message_id), "Message")


async def find_duplicate(
    session: AsyncSession, thread: Thread, client_message_id: str
) -> tuple[ThreadMessage, Run] | None:
    message = await session.scalar(repository.message_by_client_id(thread.id, client_message_id))
    if message is None:
        return None
    run = await session.scalar(repository.run_triggered_by(message.id))
    if run is None:  # a client id can only come from a posted message, which has a run
        raise ProblemException(409, "client_message_id is already used in this thread.")
    return message, run


def run_options(data: MessageCreate) -> dict[str, Any] | None:
    options: dict[str, Any] = {}
    if data.tools is not None:
        options["tools"] = data.tools
    if data.tool_calls is not None:
        options["tool_calls"] = msgspec.to_builtins(data.tool_calls)
    return options or None


async def rejects_double_texting(
    session: AsyncSession, thread: Thread, agent_type: str | None
) -> bool:
    """Double texting: an agent type may refuse a message while a run is active (409)."""
    if agent_type is None:
        query = select(Agent.agent_type).where(Agent.id == thread.agent_id)
        agent_type = await session.scalar(query)
    config = get_agent_type(agent_type) if agent_type else None
    return config is not None and config.double_texting == "reject"


async def _refuse_if_busy(session: AsyncSession, thread: Thread) -> None:
    active = await session.scalar(repository.active_run_id(thread.id))
    if active is not None:
        raise ProblemException(
            409, "The agent is still working on the previous message.", active_run_id=str(active)
        )


async def post_user_message(
    session: AsyncSession, thread: Thread, data: MessageCreate, agent_type: str | None = None
) -> tuple[ThreadMessage, Run, bool]:
    """Store the message and queue its run; `created` is False for a repeated client id.

    When a check must see the thread as it is (a client id to deduplicate, an agent that
    refuses double texting), the thread lock is taken first, so concurrent posts
    serialise and exactly one of them creates rows; otherwise the message's own seq bump
    is the only lock needed. `agent_type`: the thread's agent's, if the caller read it.
    """
    if data.tools:  # a typo would narrow the run to nothing, silently
        check_tool_names(data.tools, "tools", specialists=True)
    rejects = await rejects_double_texting(session, thread, agent_type)
    if data.client_message_id is not None or rejects:
        await lock_thread(session, thread.id)
    if data.client_message_id is not None:
        duplicate = await find_duplicate(session, thread, data.client_message_id)
        if duplicate is not None:
            return duplicate[0], duplicate[1], False
    if rejects:
        await _refuse_if_busy(session, thread)
    run_id = uuid7()
    ids = data.attachment_ids or []
    sent = await attachments.unsent_attachments(session, thread.owner_id, ids) if ids else []
    message = await create_message(
        session,
        thread.id,
        role="user",
        content=data.content,
        client_message_id=data.client_message_id,
        run_id=run_id,
        attachments=[attachments.snapshot(a) for a in sent] or None,
    )
    if ids:
        await attachments.mark_sent(session, ids, message.id)
    run = await queue_run(
        session, thread, run_id=run_id, trigger_message_id=message.id, options=run_options(data)
    )
    return message, run, True

"""Reading a thread's message tree: one message of it, and the newest message below one
(the leaf a switch to its branch shows). Shared by app/threads/branches.py and
app/threads/pending_switch.py."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import direct
from app.db.models import ThreadMessage
from app.lib.problems import ProblemException
from app.threads.records import StoredMessage, stored_message

messages = ThreadMessage.__table__
MESSAGE = select(messages).where(
    messages.c.id == bindparam("message_id"), messages.c.thread_id == bindparam("thread_id")
)


def below(root: Any) -> Any:
    """`root` and every message under it (a recursive CTE of `id`, `position`)."""
    top = select(messages.c.id, messages.c.position).where(messages.c.id == root)
    tree = top.cte("below", recursive=True)
    down = select(messages.c.id, messages.c.position).where(
        messages.c.thread_id == bindparam("thread_id"), messages.c.parent_id == tree.c.id
    )
    return tree.union_all(down)


_SUBTREE = below(bindparam("message_id"))
SUBTREE_IDS = select(_SUBTREE.c.id)
_NEWEST_BELOW = select(_SUBTREE.c.id).order_by(_SUBTREE.c.position.desc()).limit(1)


async def find_message(
    session: AsyncSession, thread_id: UUID, message_id: Any
) -> StoredMessage | None:
    """A message of the thread, as stored (None: no such message in this thread)."""
    params = {"thread_id": thread_id, "message_id": message_id}
    rows = (await direct.execute(session, MESSAGE, params)).mappings()
    return stored_message(rows[0]) if rows else None


async def stored(session: AsyncSession, thread_id: UUID, message_id: Any) -> StoredMessage:
    """A message of the thread, as stored; another thread's (or none): 404."""
    message = await find_message(session, thread_id, message_id)
    if message is None:
        raise ProblemException(404, "Message not found.")
    return message


async def newest_below(session: AsyncSession, thread_id: UUID, message_id: UUID) -> UUID:
    """The newest message of the branches through `message_id` (itself, if none is below)."""
    params = {"thread_id": thread_id, "message_id": message_id}
    return await direct.scalar(session, _NEWEST_BELOW, params)

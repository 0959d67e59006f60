"""The single writer of message changes.

Every create or update of a ThreadMessage goes through here. In the same transaction it
bumps `threads.last_seq` (an UPDATE … RETURNING that row-locks the thread on PostgreSQL and
takes SQLite's write lock), stamps the row's `seq`, and queues a `message` frame that is
published after commit. Per thread, `seq` is therefore gap-free and in commit order.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Thread, ThreadMessage
from app.lib.time import utcnow
from app.realtime.events import MessageFrame
from app.realtime.publisher import queue_frame
from app.threads.serializers import message_read


async def lock_thread(session: AsyncSession, thread_id: UUID) -> None:
    """Serialise writers of one thread until this transaction ends (no seq is used)."""
    await session.execute(
        update(Thread)
        .where(Thread.id == thread_id)
        .values(last_seq=Thread.last_seq)
        .execution_options(synchronize_session=False)
    )


async def _bump(session: AsyncSession, thread_id: UUID, *, new_message: bool) -> tuple[int, int]:
    values: dict[str, Any] = {"last_seq": Thread.last_seq + 1, "last_activity_at": utcnow()}
    if new_message:
        values["message_count"] = Thread.message_count + 1
    row = (
        await session.execute(
            update(Thread)
            .where(Thread.id == thread_id)
            .values(**values)
            .returning(Thread.last_seq, Thread.message_count)
            .execution_options(synchronize_session="fetch")
        )
    ).one()
    return int(row[0]), int(row[1])


async def _stamp_and_queue(session: AsyncSession, message: ThreadMessage) -> ThreadMessage:
    await session.flush()
    queue_frame(
        session,
        message.thread_id,
        MessageFrame(thread_id=message.thread_id, seq=message.seq, message=message_read(message)),
    )
    return message


async def create_message(
    session: AsyncSession, thread_id: UUID, *, role: str, **fields: Any
) -> ThreadMessage:
    seq, position = await _bump(session, thread_id, new_message=True)
    message = ThreadMessage(thread_id=thread_id, role=role, seq=seq, position=position, **fields)
    session.add(message)
    return await _stamp_and_queue(session, message)


async def update_message(
    session: AsyncSession, message: ThreadMessage, **changes: Any
) -> ThreadMessage:
    seq, _ = await _bump(session, message.thread_id, new_message=False)
    for name, value in changes.items():
        setattr(message, name, value)
    message.seq = seq
    message.updated_at = utcnow()
    return await _stamp_and_queue(session, message)


async def create_messages(
    session: AsyncSession, thread_id: UUID, rows: list[dict[str, Any]]
) -> list[ThreadMessage]:
    """Several new messages (each a dict of fields incl. `role`) with one thread bump and
    one flush: consecutive seqs and positions, as if created one by one in this order."""
    if not rows:
        return []
    count = len(rows)
    bumped = (
        await session.execute(
            update(Thread)
            .where(Thread.id == thread_id)
            .values(
                last_seq=Thread.last_seq + count,
                message_count=Thread.message_count + count,
                last_activity_at=utcnow(),
            )
            .returning(Thread.last_seq, Thread.message_count)
            .execution_options(synchronize_session="fetch")
        )
    ).one()
    first_seq, first_position = int(bumped[0]) - count + 1, int(bumped[1]) - count + 1
    messages = [
        ThreadMessage(thread_id=thread_id, seq=first_seq + i, position=first_position + i, **fields)
        for i, fields in enumerate(rows)
    ]
    session.add_all(messages)
    await session.flush()
    for message in messages:
        queue_frame(
            session,
            thread_id,
            MessageFrame(thread_id=thread_id, seq=message.seq, message=message_read(message)),
        )
    return messages

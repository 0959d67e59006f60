"""Threads: create, list (newest activity first), get, rename, delete."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import and_, delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.attachments import services as attachments
from app.attachments.storage import Storage
from app.db.models import Thread, User
from app.lib.pagination import decode_cursor, encode_cursor
from app.lib.problems import ProblemException
from app.lib.time import utcnow
from app.threads import branches, repository
from app.threads.schemas import ThreadPage
from app.threads.serializers import thread_read


def active_run_id_column():
    return repository.active_run_id(Thread.id).correlate(Thread).scalar_subquery()


async def get_owned_thread(session: AsyncSession, user: User, thread_id: UUID) -> Thread:
    """The caller's thread; any other id answers 404 (never 403)."""
    params = {"thread_id": thread_id, "owner_id": user.id}
    thread = await session.scalar(repository.OWNED_THREAD, params)
    if thread is None:
        raise ProblemException(404, "Thread not found.")
    return thread


async def get_owned_thread_for_post(
    session: AsyncSession, user: User, thread_id: UUID
) -> tuple[Thread, str]:
    """The caller's thread and its agent's type (whether it refuses double texting), in
    one query; any other id answers 404."""
    params = {"thread_id": thread_id, "owner_id": user.id}
    row = (await session.execute(repository.OWNED_THREAD_AND_AGENT_TYPE, params)).first()
    if row is None:
        raise ProblemException(404, "Thread not found.")
    thread, agent_type = row
    return thread, agent_type


async def active_run_id(session: AsyncSession, thread_id: UUID) -> UUID | None:
    return await session.scalar(repository.active_run_id(thread_id))


async def create_thread(
    session: AsyncSession, user: User, agent_id: UUID, title: str | None
) -> Thread:
    params = {"agent_id": agent_id, "user_id": user.id}
    if not await session.scalar(repository.AGENT_VISIBLE, params):
        raise ProblemException(404, "Agent not found.")
    thread = Thread(owner_id=user.id, agent_id=agent_id, title=title, last_activity_at=utcnow())
    session.add(thread)
    await session.flush()
    return thread


async def list_threads(
    session: AsyncSession, user: User, limit: int, cursor: str | None
) -> ThreadPage:
    query = (
        select(Thread, active_run_id_column())
        .where(Thread.owner_id == user.id)
        .order_by(Thread.last_activity_at.desc(), Thread.id.desc())
        .limit(limit + 1)
    )
    if cursor:
        at, id_ = decode_cursor(cursor)
        query = query.where(
            or_(
                Thread.last_activity_at < at,
                and_(Thread.last_activity_at == at, Thread.id < id_),
            )
        )
    rows = (await session.execute(query)).all()
    page = rows[:limit]
    next_cursor = None
    if len(rows) > limit:
        last = page[-1][0]
        next_cursor = encode_cursor(last.last_activity_at, last.id)
    return ThreadPage(items=[thread_read(t, run_id) for t, run_id in page], next_cursor=next_cursor)


async def rename_thread(session: AsyncSession, thread: Thread, title: str | None) -> Thread:
    thread.title = title
    await session.flush()
    return thread


async def delete_thread(session: AsyncSession, thread: Thread, storage: Storage) -> None:
    """The rows go by cascade; the attachments' objects once that committed."""
    sent = await attachments.ids_in_thread(session, thread.id)
    await session.execute(delete(Thread).where(Thread.id == thread.id))
    attachments.delete_after_commit(session, storage, sent)


async def delete_message_branch(
    session: AsyncSession, thread: Thread, message_id: UUID, storage: Storage
) -> None:
    """A message and the branch below it (branches.py); the attachments those messages
    carried go by cascade, their objects once that committed."""
    before = await attachments.ids_in_thread(session, thread.id)
    await branches.delete_branch(session, thread, message_id)
    after = set(await attachments.ids_in_thread(session, thread.id))
    attachments.delete_after_commit(session, storage, [i for i in before if i not in after])

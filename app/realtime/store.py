"""The database reads of the realtime path, each in its own short session.

A socket can live for hours; holding a session (and a pooled connection) for it would
exhaust the pool, so every read opens a session, commits and closes it.
"""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.accounts.services import user_for_token
from app.db.models import Run, Thread, ThreadMessage


class RealtimeStore:
    def __init__(self, session_maker: async_sessionmaker[AsyncSession]) -> None:
        self._session_maker = session_maker

    async def user_id_for_token(self, raw_token: str) -> UUID | None:
        async with self._session_maker.begin() as session:
            user = await user_for_token(session, raw_token)
            return user.id if user is not None else None

    async def thread_last_seq(self, thread_id: UUID, user_id: UUID) -> int | None:
        """The thread's last_seq, or None for an unknown thread or another user's."""
        async with self._session_maker.begin() as session:
            row = (
                await session.execute(
                    select(Thread.last_seq).where(
                        Thread.id == thread_id, Thread.owner_id == user_id
                    )
                )
            ).first()
            return int(row[0]) if row is not None else None

    async def changes_after(
        self, thread_id: UUID, after_seq: int, limit: int
    ) -> list[ThreadMessage]:
        """Messages changed after `after_seq`, ascending seq (each at its latest version)."""
        async with self._session_maker.begin() as session:
            rows = await session.scalars(
                select(ThreadMessage)
                .where(ThreadMessage.thread_id == thread_id, ThreadMessage.seq > after_seq)
                .order_by(ThreadMessage.seq)
                .limit(limit)
            )
            return list(rows)

    async def latest_run(self, thread_id: UUID) -> Run | None:
        async with self._session_maker.begin() as session:
            return await session.scalar(
                select(Run)
                .where(Run.thread_id == thread_id)
                .order_by(Run.created_at.desc(), Run.id.desc())
                .limit(1)
            )

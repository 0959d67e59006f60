"""The database reads of the realtime path, each in its own short session.

A socket can live for hours; holding a session (and a pooled connection) for it would
exhaust the pool, so every read opens a session, commits and closes it.
"""

from __future__ import annotations

from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.accounts.services import user_for_token
from app.db.models import Run, Thread, ThreadMessage
from app.threads import repository


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
            statement = repository.owned_thread(thread_id, user_id, Thread.last_seq)
            last_seq = await session.scalar(statement)
            return int(last_seq) if last_seq is not None else None

    async def changes_after(
        self, thread_id: UUID, after_seq: int, limit: int
    ) -> list[ThreadMessage]:
        """Messages changed after `after_seq`, ascending seq (each at its latest version)."""
        async with self._session_maker.begin() as session:
            statement = repository.thread_messages_changed_after(thread_id, after_seq)
            rows = await session.scalars(statement.limit(limit))
            return list(rows)

    async def latest_run(self, thread_id: UUID) -> Run | None:
        async with self._session_maker.begin() as session:
            return await session.scalar(repository.latest_run(thread_id))

"""The database reads of the realtime path, each in its own short session.

A socket can live for hours; holding a session (and a pooled connection) for it would
exhaust the pool, so every read opens a session of its own and closes it. They only read:
on PostgreSQL without BEGIN/COMMIT (app/db/reads.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.accounts.services import user_for_token
from app.db import direct
from app.db.models import Run, ThreadMessage
from app.db.reads import reading
from app.threads import repository


@dataclass(frozen=True, slots=True)
class CatchUp:
    """What a new subscription reads: the thread's last_seq, the first page of messages
    changed after the client's cursor, and the thread's latest run."""

    last_seq: int
    messages: list[ThreadMessage]
    run: Run | None


class RealtimeStore:
    def __init__(self, session_maker: async_sessionmaker[AsyncSession]) -> None:
        self._session_maker = reading(session_maker)

    async def user_id_for_token(self, raw_token: str) -> UUID | None:
        async with self._session_maker() as session:
            user = await user_for_token(session, raw_token)
            return user.id if user is not None else None

    async def catch_up(
        self, thread_id: UUID, user_id: UUID, after_seq: int, limit: int
    ) -> CatchUp | None:
        """One transaction for a subscription's start; None for an unknown thread or
        another user's. Read after the channel listens, `last_seq` bounds what the replay
        must cover: a cursor at it needs no message read, a thread with no message yet
        has no run either (a run starts with its message)."""
        async with self._session_maker() as session:
            params = {"thread_id": thread_id, "owner_id": user_id}
            found = await direct.scalar(session, repository.OWNED_LAST_SEQ, params)
            if found is None:
                return None
            last_seq = int(found)
            if last_seq == 0:
                return CatchUp(0, [], None)
            messages: list[ThreadMessage] = []
            if after_seq < last_seq:
                changed = repository.thread_messages_changed_after(thread_id, after_seq)
                messages = list(await session.scalars(changed.limit(limit)))
            run = await session.scalar(repository.latest_run(thread_id))
            return CatchUp(last_seq, messages, run)

    async def changes_after(
        self, thread_id: UUID, after_seq: int, limit: int
    ) -> list[ThreadMessage]:
        """Messages changed after `after_seq`, ascending seq (each at its latest version)."""
        async with self._session_maker() as session:
            statement = repository.thread_messages_changed_after(thread_id, after_seq)
            rows = await session.scalars(statement.limit(limit))
            return list(rows)

    async def latest_run(self, thread_id: UUID) -> Run | None:
        async with self._session_maker() as session:
            return await session.scalar(repository.latest_run(thread_id))

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
class Changes:
    """Messages changed after a cursor up to `last_seq` (read first, so every change up
    to it is committed; a row rewritten after it comes later), ascending seq, and the
    thread's leaf as of `last_seq`. `complete`: nothing up to `last_seq` is left to read
    (else the page was full)."""

    last_seq: int
    leaf_id: UUID | None
    messages: list[ThreadMessage]
    complete: bool = True


@dataclass(frozen=True, slots=True)
class CatchUp(Changes):
    """What a new subscription reads: the first page of changes, and the thread's
    latest run."""

    run: Run | None = None


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
        """One short session for a subscription's start; None for an unknown thread or
        another user's. Read after the channel listens, `last_seq` bounds what the replay
        must cover: a cursor at it needs no message read, a thread with no message yet
        has no run either (a run starts with its message)."""
        async with self._session_maker() as session:
            params = {"thread_id": thread_id, "owner_id": user_id}
            rows = (await direct.execute(session, repository.OWNED_LAST_SEQ_AND_LEAF, params)).rows
            if not rows:
                return None
            last_seq, leaf_id = int(rows[0][0]), rows[0][1]
            if last_seq == 0:
                return CatchUp(0, None, [])
            found = await self._read(session, thread_id, after_seq, limit, last_seq, leaf_id)
            run = await session.scalar(repository.latest_run(thread_id))
            return CatchUp(last_seq, leaf_id, found.messages, found.complete, run)

    async def changes_after(self, thread_id: UUID, after_seq: int, limit: int) -> Changes:
        """A page of the changes after `after_seq`: each message at its latest version."""
        async with self._session_maker() as session:
            params = {"thread_id": thread_id}
            rows = (await direct.execute(session, repository.LAST_SEQ_AND_LEAF, params)).rows
            if not rows:  # the thread was deleted: its subscribers are told otherwise
                return Changes(after_seq, None, [])
            last_seq, leaf_id = int(rows[0][0]), rows[0][1]
            return await self._read(session, thread_id, after_seq, limit, last_seq, leaf_id)

    @staticmethod
    async def _read(
        session: AsyncSession,
        thread_id: UUID,
        after_seq: int,
        limit: int,
        last_seq: int,
        leaf_id: UUID | None,
    ) -> Changes:
        if after_seq >= last_seq:
            return Changes(last_seq, leaf_id, [])
        statement = repository.thread_messages_changed_after(thread_id, after_seq)
        rows = list(await session.scalars(statement.limit(limit)))
        messages = [row for row in rows if row.seq <= last_seq]
        return Changes(last_seq, leaf_id, messages, len(messages) < len(rows) or len(rows) < limit)

    async def latest_run(self, thread_id: UUID) -> Run | None:
        async with self._session_maker() as session:
            return await session.scalar(repository.latest_run(thread_id))

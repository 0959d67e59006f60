"""Which threads someone is watching: a live socket subscribed to them, in any process.

The realtime layer reports each live subscription (`enter`/`leave`, in memory, cheap);
when push is on, `PresenceLoop` mirrors this process's set into `push_presence` rows
that expire unless renewed every third of PRESENCE_TTL_SECONDS, so a process that dies
stops counting within the TTL. `is_present` answers from memory first, then the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from uuid import UUID

from sqlalchemy import delete, exists, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import push_presence
from app.db.upsert import dialect_insert
from app.lib.time import utcnow

logger = logging.getLogger(__name__)
Key = tuple[UUID, UUID]  # (user_id, thread_id)

OWNER = f"presence-{uuid.uuid4().hex}"  # this process
_local: Counter[Key] = Counter()
_on_change: Callable[[], None] | None = None


def enter(user_id: UUID, thread_id: UUID) -> None:
    """A socket of this process subscribed to the thread (live)."""
    key = (user_id, thread_id)
    _local[key] += 1
    if _local[key] == 1 and _on_change is not None:
        _on_change()


def leave(user_id: UUID, thread_id: UUID) -> None:
    key = (user_id, thread_id)
    if _local[key] <= 1:
        _local.pop(key, None)
        if _on_change is not None:
            _on_change()
    else:
        _local[key] -= 1


def is_local(user_id: UUID, thread_id: UUID) -> bool:
    return (user_id, thread_id) in _local


async def is_present(session: AsyncSession, user_id: UUID, thread_id: UUID) -> bool:
    if is_local(user_id, thread_id):
        return True
    table = push_presence.c
    watched = exists().where(
        table.user_id == user_id, table.thread_id == thread_id, table.expires_at > utcnow()
    )
    return bool(await session.scalar(select(watched)))


class PresenceLoop:
    """Mirrors this process's set into the table: changes at once, renewals periodically."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], ttl: float) -> None:
        self._sessions, self._ttl = sessions, ttl
        self._written: set[Key] = set()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        global _on_change
        _on_change = self._changed.set
        self._changed.set()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        global _on_change
        _on_change = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):  # shutting down: expiry covers a failure
            async with self._sessions() as session:
                await session.execute(delete(push_presence).where(push_presence.c.owner == OWNER))
                await session.commit()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._ttl / 3):
                    await self._changed.wait()
            self._changed.clear()
            try:
                await self._sync()
            except Exception:  # the database is away: try again at the next beat
                logger.warning("presence could not be written", exc_info=True)
                self._written.clear()  # rewrite everything once it answers

    async def _sync(self) -> None:
        current = set(_local)
        gone, new = self._written - current, current - self._written
        expires = utcnow() + timedelta(seconds=self._ttl)
        table = push_presence.c
        async with self._sessions() as session:
            await session.execute(
                update(push_presence).where(table.owner == OWNER).values(expires_at=expires)
            )
            if gone:
                await session.execute(
                    delete(push_presence).where(
                        table.owner == OWNER,
                        tuple_(table.user_id, table.thread_id).in_(list(gone)),
                    )
                )
            if new:
                insert = dialect_insert(session, push_presence)
                rows = [
                    {"owner": OWNER, "user_id": u, "thread_id": t, "expires_at": expires}
                    for u, t in new
                ]
                await session.execute(
                    insert.on_conflict_do_update(
                        index_elements=["owner", "user_id", "thread_id"],
                        set_={"expires_at": insert.excluded.expires_at},
                    ),
                    rows,
                )
            # rows of processes that died without saying so
            await session.execute(delete(push_presence).where(table.expires_at < utcnow()))
            await session.commit()
        self._written = current

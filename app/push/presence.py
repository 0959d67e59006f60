"""Which threads someone is watching: a live socket subscribed to them, in any process.

The realtime layer reports each live subscription (`enter`/`leave`, in memory, cheap);
when push is on, `PresenceLoop` mirrors this process's set into `push_presence` rows
that expire unless renewed every third of PRESENCE_TTL_SECONDS, so a process that dies
stops counting within the TTL. `is_present` answers from memory first, then the table.
"""

from __future__ import annotations

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
from app.lib.background import BackgroundService
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
        self._service = BackgroundService(
            "push-presence",
            self._sync,
            period=ttl / 3,  # renewals; changes at once
            logger=logger,
            failure="presence could not be written",  # the database is away: try again
            level=logging.WARNING,  # at the next beat
            immediately=True,
        )

    def start(self) -> None:
        global _on_change
        _on_change = self._service.wake
        self._service.start()

    async def stop(self) -> None:
        global _on_change
        _on_change = None
        await self._service.stop()
        with contextlib.suppress(Exception):  # shutting down: expiry covers a failure
            async with self._sessions() as session:
                await session.execute(delete(push_presence).where(push_presence.c.owner == OWNER))
                await session.commit()

    async def _sync(self) -> None:
        try:
            await self._write()
        except Exception:
            self._written.clear()  # rewrite everything once the database answers
            raise

    async def _write(self) -> None:
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

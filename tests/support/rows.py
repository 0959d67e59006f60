"""Threads and runs written straight to the database, for the tests of what reads them
(the runner's claims and fencing, the push fan-out)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, Thread
from app.lib.time import utcnow
from tests.conftest import ApiUser


async def new_threads(
    db: AsyncSession, user: ApiUser, count: int = 1, at: datetime | None = None
) -> list[Thread]:
    """`count` threads of `user`'s, with their agent, last active `at` (now)."""
    at = at or utcnow()
    threads = [Thread(owner_id=user.user.id, agent_id=user.agent.id, last_activity_at=at)
               for _ in range(count)]  # fmt: skip
    db.add_all(threads)
    await db.flush()
    return threads


async def new_run(db: AsyncSession, thread: Thread, **fields: Any) -> Run:
    """A run of `thread` with its agent (queued unless `fields` say otherwise)."""
    run = Run(thread_id=thread.id, agent_id=thread.agent_id, **fields)
    db.add(run)
    await db.flush()
    return run

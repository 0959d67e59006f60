"""Claiming runs: concurrent claimers never take one run twice, and a thread's runs go
one at a time, in order (both dialects; PostgreSQL uses FOR UPDATE SKIP LOCKED)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import Run, RunStatus, Thread
from app.lib.time import utcnow
from app.orchestrator import runs
from tests.conftest import make_api_user


async def _claim(factory: async_sessionmaker[AsyncSession], owner: str, postgres: bool):
    async with factory() as session:
        run = await runs.claim_next_run(session, owner, 30, postgres=postgres)
        await session.commit()
        return run.id if run else None


async def test_concurrent_claims_respect_threads_and_order(
    client: httpx.AsyncClient,
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    dialect: str,
) -> None:
    user = await make_api_user(db)
    threads = [Thread(owner_id=user.user.id, agent_id=user.agent.id, last_activity_at=utcnow())
               for _ in range(2)]  # fmt: skip
    db.add_all(threads)
    await db.flush()
    start = utcnow()
    line = [
        Run(
            thread_id=threads[0].id, agent_id=user.agent.id, created_at=start + timedelta(seconds=i)
        )
        for i in range(3)
    ]
    other = Run(thread_id=threads[1].id, agent_id=user.agent.id, created_at=start)
    db.add_all([*line, other])
    await db.commit()
    postgres = dialect == "postgresql"

    claimed = await asyncio.gather(
        *(_claim(session_factory, f"worker-{i}", postgres) for i in range(5))
    )
    assert sorted(str(c) for c in claimed if c) == sorted([str(line[0].id), str(other.id)])
    assert await _claim(session_factory, "late", postgres) is None  # thread 0 is busy

    async with session_factory() as session:
        owner = (await session.get(Run, line[0].id)).lease_owner
        await runs.finish_run(session, line[0].id, owner, RunStatus.COMPLETED)
        await session.commit()
    assert await _claim(session_factory, "next", postgres) == line[1].id

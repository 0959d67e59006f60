"""When more runs wait than slots are free, slots go fairly across users: a user who
flooded the queue does not hold back one who queued a single run (both dialects,
concurrent claimers on PostgreSQL never take a run twice)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import UUID

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import Run, RunStatus
from app.lib.time import utcnow
from app.orchestrator.scheduling import claims, queue_places
from tests.conftest import ApiUser, make_api_user
from tests.support.rows import new_run, new_threads


async def _queue(db: AsyncSession, user: ApiUser, count: int, start, **fields) -> list[Run]:
    """`count` runs of `user`, one per thread of their own, created a second apart."""
    threads = await new_threads(db, user, count, at=start)
    return [
        await new_run(db, thread, created_at=start + timedelta(seconds=i), **fields)
        for i, thread in enumerate(threads)
    ]


async def _claim(factory, owner: str, postgres: bool, slots: int, fair: bool) -> list[UUID]:
    async with factory() as session:
        claimed = await claims.claim_runs(
            session, owner, 30, postgres=postgres, slots=slots, fair=fair
        )
        await session.commit()
    return [run.id for run in claimed]


async def test_the_flooding_user_does_not_starve_the_other(
    client: httpx.AsyncClient,  # empties the tables after the test
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    dialect: str,
) -> None:
    flooder, other = await make_api_user(db), await make_api_user(db)
    start = utcnow() - timedelta(minutes=5)
    [busy] = await _queue(db, flooder, 1, start, status=RunStatus.RUNNING.value)
    flood = await _queue(db, flooder, 6, start)  # all older than the other user's run
    [single] = await _queue(db, other, 1, start + timedelta(minutes=1))
    await db.commit()
    postgres = dialect == "postgresql"

    # the place in line the phone is told: the other user first, then the flood in order
    async with session_factory() as session:
        order = await queue_places.queue_positions(session, 100)
    assert order == [single.id, *(run.id for run in flood)]
    # oldest first would have given the slot to the flood
    async with session_factory() as session:
        order = await queue_places.queue_positions(session, 1)
    assert order == [single.id]

    assert await _claim(session_factory, "w", postgres, slots=1, fair=True) == [single.id]
    # with the other user served, the flood goes on in its own order
    assert await _claim(session_factory, "w", postgres, slots=1, fair=True) == [flood[0].id]
    assert busy.id not in await _claim(session_factory, "w", postgres, slots=2, fair=True)


async def test_with_nothing_running_the_user_with_fewer_waiting_goes_first(
    client: httpx.AsyncClient,  # empties the tables after the test
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    dialect: str,
) -> None:
    # the flooder's run that held the only slot just ended: it has as few running as the
    # other user, but more waiting
    flooder, other = await make_api_user(db), await make_api_user(db)
    start = utcnow() - timedelta(minutes=5)
    flood = await _queue(db, flooder, 3, start)
    [single] = await _queue(db, other, 1, start + timedelta(minutes=1))
    await db.commit()
    postgres = dialect == "postgresql"
    assert await _claim(session_factory, "w", postgres, slots=1, fair=True) == [single.id]
    assert await _claim(session_factory, "w", postgres, slots=1, fair=True) == [flood[0].id]


async def test_runs_queued_first_win_the_tie_between_users(
    client: httpx.AsyncClient,  # empties the tables after the test
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    dialect: str,
) -> None:
    first, second = await make_api_user(db), await make_api_user(db)
    start = utcnow() - timedelta(minutes=5)
    early = await _queue(db, first, 3, start)
    late = await _queue(db, second, 3, start + timedelta(minutes=1))
    await db.commit()
    async with session_factory() as session:
        order = await queue_places.queue_positions(session, 100)
    # round robin: each user's n-th run before anyone's (n+1)-th, the older first
    assert order == [early[0].id, late[0].id, early[1].id, late[1].id, early[2].id, late[2].id]


async def test_concurrent_fair_claimers_never_take_a_run_twice(
    client: httpx.AsyncClient,  # empties the tables after the test
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    dialect: str,
) -> None:
    users = [await make_api_user(db) for _ in range(3)]
    start = utcnow() - timedelta(minutes=5)
    queued = [run for user in users for run in await _queue(db, user, 4, start)]
    await db.commit()
    postgres = dialect == "postgresql"

    async def claimer(index: int) -> list[UUID]:
        taken: list[UUID] = []
        while claimed := await _claim(session_factory, f"w{index}", postgres, 2, fair=True):
            taken += claimed
        return taken

    results = await asyncio.gather(*(claimer(i) for i in range(4)))
    taken = [run_id for result in results for run_id in result]
    assert sorted(map(str, taken)) == sorted(str(run.id) for run in queued)

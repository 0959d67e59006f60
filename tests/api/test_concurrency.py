"""Concurrent posts and writers: each request/session has its own connection, so on
PostgreSQL these really interleave (the handlers await database I/O on one loop)."""

from __future__ import annotations

import asyncio
from uuid import UUID

from httpx import AsyncClient
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import Run, Thread, ThreadMessage
from app.threads.writer import create_message, update_message
from tests.api.support import create_thread, post_message
from tests.conftest import ApiUser

PARALLEL = 10


async def test_concurrent_duplicates_create_one_message_and_one_run(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    responses = await asyncio.gather(
        *(
            post_message(client, alice, thread_id, f"attempt {i}", client_message_id="dup")
            for i in range(PARALLEL)
        )
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * (PARALLEL - 1) + [202], [r.text[:200] for r in responses]
    bodies = [r.json() for r in responses]
    assert all(b == bodies[0] for b in bodies)
    assert await db.scalar(select(func.count()).select_from(ThreadMessage)) == 1
    assert await db.scalar(select(func.count()).select_from(Run)) == 1


async def test_concurrent_distinct_posts_all_land_in_order(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    responses = await asyncio.gather(
        *(
            post_message(client, alice, thread_id, f"m{i}", client_message_id=f"c{i}")
            for i in range(PARALLEL)
        )
    )
    assert all(r.status_code == 202 for r in responses), [r.text[:200] for r in responses]
    seqs = sorted(r.json()["message"]["seq"] for r in responses)
    assert seqs == list(range(1, PARALLEL + 1))


async def _write_in_own_session(
    factory: async_sessionmaker[AsyncSession], thread_id: UUID, index: int, update_id: UUID
) -> int:
    """One create or update in a session of its own; returns the seq it was given."""
    async with factory() as session:
        if index % 3 == 0:
            message = await session.get(ThreadMessage, update_id)
            assert message is not None
            message = await update_message(session, message, content=f"edit {index}")
        else:
            message = await create_message(
                session, thread_id, role="assistant", content=f"w{index}"
            )
        seq = message.seq
        await session.commit()
        return seq


async def test_parallel_writers_get_gap_free_unique_ordered_seq(
    client: AsyncClient,
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    alice: ApiUser,
) -> None:
    thread_id = UUID((await create_thread(client, alice))["id"])
    first = await post_message(client, alice, str(thread_id), "start")
    first_id = UUID(first.json()["message"]["id"])
    writers = 20

    given = await asyncio.gather(
        *(_write_in_own_session(session_factory, thread_id, i, first_id) for i in range(writers))
    )

    db.expire_all()
    thread = await db.get(Thread, thread_id)
    assert thread is not None
    assert thread.last_seq == 1 + writers
    created = writers - len(range(0, writers, 3))
    assert thread.message_count == 1 + created
    rows = list(
        await db.execute(
            select(ThreadMessage.seq, ThreadMessage.position)
            .where(ThreadMessage.thread_id == thread_id)
            .order_by(ThreadMessage.seq)
        )
    )
    positions = [p for _, p in rows]
    assert sorted(positions) == list(range(1, created + 2))
    # Seq is unique; new messages take seq and position together, so apart from the
    # updated first message, ordering by seq orders by position as well.
    seqs = [s for s, _ in rows]
    assert len(set(seqs)) == len(seqs)
    created_rows = [p for _, p in rows if p != 1]
    assert created_rows == sorted(created_rows)
    # Every seq from 1 to last_seq was handed out exactly once: gap-free and unique.
    assert sorted([1, *given]) == list(range(1, writers + 2))
    assert max(seqs) == thread.last_seq

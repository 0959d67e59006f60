"""0017_message_tree on a populated database: every existing thread becomes one branch
(each message below the one before it, the thread's leaf its last message), on both
dialects, and the branch reads (a page, the model's history) see what they saw before."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from uuid import UUID

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import create_async_engine
from uuid_utils.compat import uuid7

from app.db.models import Agent, Thread, ThreadMessage, User
from tests.support.databases import alembic


def _populate(url: str) -> tuple[dict[UUID, list[UUID]], UUID]:
    """Two users' threads (one empty), rows written as code before the tree wrote them."""
    now = datetime.now(UTC)
    threads: dict[UUID, list[UUID]] = {}

    async def write() -> UUID:
        engine = create_async_engine(url)
        async with engine.begin() as connection:
            for owner in range(2):
                user_id, agent_id = uuid7(), uuid7()
                user = {"id": user_id, "email": f"u{owner}@example.com", "password_hash": "x"}
                await connection.execute(insert(User.__table__).values(**user, is_staff=False))
                agent = {"id": agent_id, "owner_id": user_id, "name": "a", "agent_type": "general"}
                await connection.execute(insert(Agent.__table__).values(**agent, is_shared=False))
                for size in (3, 0, 5):
                    thread_id = uuid7()
                    ids = [uuid7() for _ in range(size)]
                    threads[thread_id] = ids
                    await connection.execute(
                        insert(Thread.__table__).values(
                            id=thread_id,
                            owner_id=user_id,
                            agent_id=agent_id,
                            last_seq=size,
                            message_count=size,
                            last_activity_at=now,
                        )
                    )
                    for position, message_id in enumerate(ids, start=1):
                        await connection.execute(
                            insert(ThreadMessage.__table__).values(
                                id=message_id,
                                thread_id=thread_id,
                                position=position,
                                seq=position,
                                role="user" if position % 2 else "assistant",
                                content=f"m{position}",
                                is_user_facing=True,
                            )
                        )
        await engine.dispose()
        return agent_id

    return threads, asyncio.run(write())


def _tree(url: str) -> tuple[dict[UUID, UUID | None], dict[UUID, UUID | None]]:
    async def read() -> tuple[dict[UUID, UUID | None], dict[UUID, UUID | None]]:
        engine = create_async_engine(url)
        async with engine.connect() as connection:
            messages = ThreadMessage.__table__
            parents = dict(
                (await connection.execute(select(messages.c.id, messages.c.parent_id))).all()
            )
            table = Thread.__table__
            leaves = dict(
                (await connection.execute(select(table.c.id, table.c.current_leaf_id))).all()
            )
        await engine.dispose()
        return parents, leaves

    return asyncio.run(read())


def test_existing_threads_become_one_branch_each(empty_database: str) -> None:
    alembic(empty_database, "upgrade", "0016_memory_vectors")
    threads, _ = _populate(empty_database)
    alembic(empty_database, "upgrade", "0017_message_tree")
    parents, leaves = _tree(empty_database)
    for thread_id, ids in threads.items():
        assert [parents[i] for i in ids] == [None, *ids[:-1]][: len(ids)]  # below the one before
        assert leaves[thread_id] == (ids[-1] if ids else None)
    assert len(parents) == sum(len(ids) for ids in threads.values())
    # and back: the columns go, the rows stay
    alembic(empty_database, "downgrade", "0016_memory_vectors")
    alembic(empty_database, "upgrade", "head")

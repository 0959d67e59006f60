"""`litestar memories embed`: every memory gets a vector; run again, nothing is left to do."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import NullPool

from app.db.models import Memory, User, memory_vectors
from tests.support.cli import litestar, ok
from tests.support.databases import migrate


def arrange(database_url: str, contents: list[str]) -> None:
    async def write() -> None:
        engine = create_async_engine(database_url, poolclass=NullPool)
        try:
            async with async_sessionmaker(engine)() as session:
                user = User(email="m@example.com", password_hash="x")
                session.add(user)
                await session.flush()
                session.add_all(Memory(owner_id=user.id, content=c) for c in contents)
                await session.commit()
        finally:
            await engine.dispose()

    asyncio.run(write())


def vector_count(database_url: str) -> int:
    async def count() -> int:
        engine = create_async_engine(database_url, poolclass=NullPool)
        try:
            async with AsyncSession(engine) as session:
                query = select(func.count()).select_from(memory_vectors)
                return int(await session.scalar(query) or 0)
        finally:
            await engine.dispose()

    return asyncio.run(count())


def test_embed_is_resumable_and_idempotent(empty_database: str) -> None:
    migrate(empty_database)
    arrange(empty_database, ["I drink my coffee black", "Allergic to peanuts"])
    first = ok(litestar(empty_database, "memories", "embed"))
    assert first.strip() == "2 memories embedded with embedded:all-MiniLM-L6-v2"
    assert vector_count(empty_database) == 2
    again = ok(litestar(empty_database, "memories", "embed", "--forget-other-models"))
    assert again.strip().startswith("0 memories embedded")
    assert "0 vectors of other models deleted" in again
    off = litestar(empty_database, "memories", "embed", env={"MEMORY_EMBEDDINGS": "off"})
    assert off.exit_code != 0 and "MEMORY_EMBEDDINGS is off" in off.output

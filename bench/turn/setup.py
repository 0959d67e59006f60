"""A fresh migrated database with a user, its token and an `assistant` agent."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from bench.common import add_user_with_agent
from tests.support.databases import (
    create_postgres_database,
    drop_postgres_database,
    migrate,
    sqlite_url,
)

TOKEN = "tc_bench_turn_token_not_secret"


async def _seed(database_url: str) -> str:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with AsyncSession(engine, expire_on_commit=False) as session:
            _, agent = await add_user_with_agent(
                session,
                email="bench-turn@example.com",
                password_hash="x",
                token=TOKEN,
                agent_type="assistant",
            )
            await session.commit()
            return str(agent.id)
    finally:
        await engine.dispose()


@contextmanager
def fresh_database(dialect: str) -> Iterator[str]:
    """The URL of a fresh, migrated, empty database; dropped after."""
    tmp = name = None
    if dialect == "sqlite":
        tmp = tempfile.mkdtemp(prefix="bench-turn-")
        url = sqlite_url(Path(tmp))
    else:
        url, name = create_postgres_database()
    try:
        migrate(url)
        yield url
    finally:
        if name:
            drop_postgres_database(name)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def database(dialect: str) -> Iterator[tuple[str, str]]:
    """(database URL, agent id) of a fresh, migrated, seeded database; dropped after."""
    with fresh_database(dialect) as url:
        yield url, asyncio.run(_seed(url))

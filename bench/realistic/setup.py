"""A fresh migrated database with one user (a token, an `assistant` agent) per simulated
user: each phone is its own account, as in production (per-user limits, per-user rows)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from bench.common import add_user_with_agent
from bench.turn.setup import fresh_database


@dataclass(frozen=True)
class Account:
    token: str
    agent_id: str


async def _seed(database_url: str, users: int) -> list[Account]:
    engine = create_async_engine(database_url, poolclass=NullPool)
    accounts = []
    try:
        async with AsyncSession(engine, expire_on_commit=False) as session:
            for i in range(users):
                token = f"tc_bench_realistic_{i}_not_secret"
                _, agent = await add_user_with_agent(
                    session,
                    email=f"bench-real-{i}@example.com",
                    password_hash="x",
                    token=token,
                    agent_type="assistant",
                )
                accounts.append(Account(token, str(agent.id)))
            await session.commit()
    finally:
        await engine.dispose()
    return accounts


@contextmanager
def database(dialect: str, users: int) -> Iterator[tuple[str, list[Account]]]:
    """(database URL, one account per user) of a fresh database; dropped after."""
    with fresh_database(dialect) as url:
        yield url, asyncio.run(_seed(url, users))

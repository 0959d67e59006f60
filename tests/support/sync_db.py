"""Arrange rows from synchronous tests (ones that drive a server in another process or
loop): each call opens a NullPool engine in a short `asyncio.run`."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from app.db.base import metadata
from app.db.models import Agent, ApiToken, User
from app.lib.security import hash_password, token_digest
from app.lib.time import utcnow


async def _empty(database_url: str) -> None:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.begin() as conn:
            for table in reversed(metadata.sorted_tables):
                await conn.execute(table.delete())
    finally:
        await engine.dispose()


async def _seed(database_url: str, email: str, password: str, token: str | None) -> None:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with AsyncSession(engine) as session:
            user = User(email=email, password_hash=hash_password(password))
            session.add(user)
            await session.flush()
            if token is not None:
                session.add(
                    ApiToken(
                        user_id=user.id,
                        token_hash=token_digest(token),
                        expires_at=utcnow() + timedelta(days=1),
                    )
                )
            session.add(Agent(owner_id=user.id, name="seeded agent", agent_type="assistant"))
            await session.commit()
    finally:
        await engine.dispose()


async def _revive(database_url: str, token: str) -> None:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                update(ApiToken)
                .where(ApiToken.token_hash == token_digest(token))
                .values(revoked_at=None)
            )
    finally:
        await engine.dispose()


def revive_token(database_url: str, token: str) -> None:
    """Un-revoke a token (a fuzzer calling DELETE /api/auth/token revokes its own)."""
    asyncio.run(_revive(database_url, token))


def empty_tables(database_url: str) -> None:
    asyncio.run(_empty(database_url))


def seed_user(database_url: str, email: str, password: str, token: str | None = None) -> None:
    """A user (with an optional API token) owning one agent, on an emptied database."""
    asyncio.run(_empty(database_url))
    asyncio.run(_seed(database_url, email, password, token))

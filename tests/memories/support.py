"""Memories arranged through the domain, as an agent's `memory` tool saves them."""

from __future__ import annotations

from uuid import UUID

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import lane as db_lane
from app.db.models import Memory
from app.memories import embedding, services
from app.memories.keeper import embed_pending
from tests.conftest import ApiUser


async def save(
    factory: async_sessionmaker[AsyncSession], owner_id: UUID, content: str,
    agent_id: UUID | None = None, key: str | None = None,
) -> Memory:  # fmt: skip
    async with factory() as session:
        memory, _ = await services.save_memory(
            session, owner_id, content=content, key=key, agent_id=agent_id
        )
        await session.commit()
        return memory


async def embed_all(factory: async_sessionmaker[AsyncSession]) -> int:
    """What the keeper does in the background, done now (the test waits for nothing)."""
    embedder = embedding.current()
    assert embedder is not None, "the embedded model serves by default"
    return await embed_pending(factory, embedder)


async def top_memory(client: httpx.AsyncClient, user: ApiUser, query: str) -> str | None:
    """What the user's memory search puts first for `query`, as the app shows it."""
    found = await client.get(
        "/api/memories/search", params={"q": query, "limit": 1}, headers=user.headers
    )
    assert found.status_code == 200, found.text
    items = found.json()["items"]
    return items[0]["memory"]["content"] if items else None


async def database_lane(factory: async_sessionmaker[AsyncSession]) -> db_lane.DatabaseLane:
    """The database lane the app runs for this database (recall reads there)."""
    async with factory() as session:
        lane = db_lane.serving(session)
    assert lane is not None, "the test app's budget has a share for the lane"
    return lane

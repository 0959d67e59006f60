"""Memories belong to a user: save (upsert by key), recall, search (full text), forget."""

from __future__ import annotations

import re
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Memory
from app.memories import repository

MAX_QUERY_TERMS = 12


def search_terms(query: str) -> list[str]:
    """Words of the query, lowercased and deduplicated: safe to put in either dialect's
    full-text syntax (no operators from the model ever reach the query parser)."""
    seen: dict[str, None] = {}
    for word in re.findall(r"\w+", query.lower()):
        seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_TERMS]


async def find_by_key(session: AsyncSession, owner_id: UUID, key: str) -> Memory | None:
    return await session.scalar(repository.memory_by_key(owner_id, key))


async def find_by_id(session: AsyncSession, owner_id: UUID, memory_id: UUID) -> Memory | None:
    return await session.scalar(repository.memory_by_id(owner_id, memory_id))


async def save_memory(
    session: AsyncSession, owner_id: UUID, *, content: str, key: str | None = None,
    tags: list[str] | None = None, agent_id: UUID | None = None,
) -> tuple[Memory, bool]:  # fmt: skip
    """Create, or replace the memory with the same key. Returns (memory, created)."""
    existing = await find_by_key(session, owner_id, key) if key else None
    if existing is not None:
        existing.content = content
        if tags is not None:
            existing.tags = list(tags)
        await session.flush()
        return existing, False
    memory = Memory(owner_id=owner_id, agent_id=agent_id, key=key, content=content, tags=tags)
    session.add(memory)
    await session.flush()
    return memory, True


async def recent_memories(
    session: AsyncSession, owner_id: UUID, limit: int, tag: str | None = None
) -> list[Memory]:
    query = repository.recent_memories(owner_id, limit if tag is None else limit * 10)
    rows = list(await session.scalars(query))
    if tag is not None:  # JSON containment differs per dialect; filter the few rows here
        rows = [m for m in rows if tag in (m.tags or [])]
    return rows[:limit]


async def search_memories(
    session: AsyncSession, owner_id: UUID, query: str, limit: int
) -> list[Memory]:
    """Best matches first; any word may match (ranking favours memories matching more)."""
    terms = search_terms(query)
    if not terms:
        return []
    stmt = repository.matching_memories(session.bind.dialect.name, owner_id, terms)
    return list(await session.scalars(stmt.limit(limit)))


async def delete_memory(session: AsyncSession, memory: Memory) -> None:
    await session.delete(memory)
    await session.flush()

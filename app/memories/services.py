"""Memories belong to a user: save (upsert by key), recall, search (full text), forget."""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

from sqlalchemy import ColumnElement, Select, column, func, literal_column, or_, select, table
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Memory

MAX_QUERY_TERMS = 12
# Must match app.db.models.memory.SEARCH_DOCUMENT, the expression of ix_memories_search.
# Literal SQL (no bound parameters) so the planner can match the index expression.
_PG_DOCUMENT: ColumnElement[Any] = literal_column(
    "to_tsvector('english'::regconfig, "
    "(COALESCE(memories.key, ''::character varying)::text || ' '::text) || memories.content)"
)
_FTS = table("memories_fts", column("memory_id"), column("memories_fts"))


def search_terms(query: str) -> list[str]:
    """Words of the query, lowercased and deduplicated: safe to put in either dialect's
    full-text syntax (no operators from the model ever reach the query parser)."""
    seen: dict[str, None] = {}
    for word in re.findall(r"\w+", query.lower()):
        seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_TERMS]


def _owned(owner_id: UUID) -> Select[tuple[Memory]]:
    return select(Memory).where(Memory.owner_id == owner_id)


async def find_by_key(session: AsyncSession, owner_id: UUID, key: str) -> Memory | None:
    return await session.scalar(_owned(owner_id).where(Memory.key == key).limit(1))


async def find_by_id(session: AsyncSession, owner_id: UUID, memory_id: UUID) -> Memory | None:
    return await session.scalar(_owned(owner_id).where(Memory.id == memory_id))


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
    query = _owned(owner_id).order_by(Memory.updated_at.desc(), Memory.id.desc())
    rows = list(await session.scalars(query.limit(limit if tag is None else limit * 10)))
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
    if session.bind.dialect.name == "postgresql":
        tsquery = func.to_tsquery(literal_column("'english'::regconfig"), " | ".join(terms))
        stmt = (
            _owned(owner_id)
            .where(_PG_DOCUMENT.op("@@")(tsquery))
            .order_by(func.ts_rank(_PG_DOCUMENT, tsquery).desc(), Memory.updated_at.desc())
        )
    elif session.bind.dialect.name == "sqlite":
        match = " OR ".join(f'"{t}"' for t in terms)
        stmt = (
            _owned(owner_id)
            .join(_FTS, _FTS.c.memory_id == Memory.id)
            .where(_FTS.c.memories_fts.op("MATCH")(match))
            .order_by(func.bm25(literal_column("memories_fts")), Memory.updated_at.desc())
        )
    else:  # pragma: no cover - other dialects: plain substring match
        stmt = _owned(owner_id).where(or_(*(Memory.content.ilike(f"%{t}%") for t in terms)))
    return list(await session.scalars(stmt.limit(limit)))


async def delete_memory(session: AsyncSession, memory: Memory) -> None:
    await session.delete(memory)
    await session.flush()


def memory_data(memory: Memory) -> dict[str, Any]:
    return {
        "memory_id": str(memory.id),
        "key": memory.key,
        "content": memory.content,
        "tags": memory.tags or [],
        "updated_at": memory.updated_at.isoformat() if memory.updated_at else None,
    }

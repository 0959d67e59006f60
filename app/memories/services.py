"""Memories belong to a user: save (upsert by key), recall, search (full text), forget;
the user lists, edits and deletes them. Every change is announced (app/memories/changes.py)."""

from __future__ import annotations

import re
from uuid import UUID

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Memory
from app.lib.pagination import decode_cursor, encode_cursor
from app.lib.problems import ProblemException
from app.memories import changes, repository
from app.memories.schemas import MemoryPage, MemoryRead
from app.memories.serializers import memory_read

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
        await announce_saved(session, existing)
        return existing, False
    memory = Memory(owner_id=owner_id, agent_id=agent_id, key=key, content=content, tags=tags)
    session.add(memory)
    await session.flush()
    await announce_saved(session, memory)
    return memory, True


async def memory_with_agent(session: AsyncSession, memory: Memory) -> MemoryRead:
    """The memory as the API shows it: with the name of the agent that saved it."""
    name = None
    if memory.agent_id is not None:
        name = await session.scalar(repository.agent_name(memory.agent_id))
    return memory_read(memory, name)


async def announce_saved(session: AsyncSession, memory: Memory) -> MemoryRead:
    """The memory as the API shows it, announced to the user's devices after commit."""
    read = await memory_with_agent(session, memory)
    changes.memory_saved(session, memory.owner_id, read)
    return read


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
    stmt = _matching(session, owner_id, query)
    return [] if stmt is None else list(await session.scalars(stmt.limit(limit)))


async def search_memory_ids(
    session: AsyncSession, owner_id: UUID, query: str, limit: int
) -> list[UUID]:
    """`search_memories`' ids alone: recall reads its few winners' rows after fusion, not
    every candidate's (ORM objects built on the event loop)."""
    stmt = _matching(session, owner_id, query)
    if stmt is None:
        return []
    return list(await session.scalars(stmt.with_only_columns(Memory.id).limit(limit)))


def _matching(session: AsyncSession, owner_id: UUID, query: str) -> Select[tuple[Memory]] | None:
    """The search's statement; None: the query has no word to search for."""
    terms = search_terms(query)
    if not terms:
        return None
    return repository.matching_memories(session.bind.dialect.name, owner_id, terms)


async def delete_memory(session: AsyncSession, memory: Memory) -> None:
    owner_id, memory_id = memory.owner_id, memory.id
    await session.delete(memory)
    await session.flush()
    changes.memory_deleted(session, owner_id, memory_id)


# -- the user's side: the memory API ----------------------------------------------------
async def list_memories(
    session: AsyncSession, owner_id: UUID, limit: int, cursor: str | None
) -> MemoryPage:
    after = decode_cursor(cursor) if cursor else None
    rows = list(await session.execute(repository.memory_page(owner_id, limit, after)))
    page = rows[:limit]
    last = page[-1][0] if page else None
    more = last is not None and len(rows) > limit
    next_cursor = encode_cursor(last.created_at, last.id) if more and last else None
    return MemoryPage(items=[memory_read(m, name) for m, name in page], next_cursor=next_cursor)


async def get_owned_memory(session: AsyncSession, owner_id: UUID, memory_id: UUID) -> Memory:
    """The memory if `owner_id` owns it; another user's id is a 404, as an unknown one."""
    memory = await find_by_id(session, owner_id, memory_id)
    if memory is None:
        raise ProblemException(404, "Memory not found.")
    return memory


async def update_memory(
    session: AsyncSession, memory: Memory, changed: dict[str, object]
) -> MemoryRead:
    """The user's correction: new content and/or tags (its vector is remade after commit)."""
    if "content" in changed:
        memory.content = str(changed["content"]).strip() or memory.content
    if "tags" in changed:
        memory.tags = list(changed["tags"])  # type: ignore[call-overload]
    await session.flush()
    return await announce_saved(session, memory)


async def delete_all_memories(session: AsyncSession, owner_id: UUID) -> int:
    result = await session.execute(repository.delete_all(owner_id))
    changes.memories_cleared(session, owner_id)
    return int(result.rowcount or 0)  # type: ignore[attr-defined]

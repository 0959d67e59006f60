"""Memory queries: statement builders that services compose and execute."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import (
    ColumnElement,
    Delete,
    Select,
    and_,
    column,
    delete,
    func,
    literal_column,
    or_,
    select,
    table,
)

from app.db.models import Agent, Memory

# Must match app.db.models.memory.SEARCH_DOCUMENT, the expression of ix_memories_search.
# Literal SQL (no bound parameters) so the planner can match the index expression.
_PG_DOCUMENT: ColumnElement[Any] = literal_column(
    "to_tsvector('english'::regconfig, "
    "(COALESCE(memories.key, ''::character varying)::text || ' '::text) || memories.content)"
)
_FTS = table("memories_fts", column("memory_id"), column("memories_fts"))


def owned_memories(owner_id: UUID) -> Select[tuple[Memory]]:
    return select(Memory).where(Memory.owner_id == owner_id)


def memory_by_key(owner_id: UUID, key: str) -> Select[tuple[Memory]]:
    return owned_memories(owner_id).where(Memory.key == key).limit(1)


def memory_by_id(owner_id: UUID, memory_id: UUID) -> Select[tuple[Memory]]:
    return owned_memories(owner_id).where(Memory.id == memory_id)


def recent_memories(owner_id: UUID, limit: int) -> Select[tuple[Memory]]:
    return (
        owned_memories(owner_id).order_by(Memory.updated_at.desc(), Memory.id.desc()).limit(limit)
    )


def matching_memories(dialect: str, owner_id: UUID, terms: list[str]) -> Select[tuple[Memory]]:
    """Memories matching any of the terms (safe words, see services.search_terms), best
    first: each dialect's full-text index, a substring match elsewhere."""
    if dialect == "postgresql":
        tsquery = func.to_tsquery(literal_column("'english'::regconfig"), " | ".join(terms))
        return (
            owned_memories(owner_id)
            .where(_PG_DOCUMENT.op("@@")(tsquery))
            .order_by(func.ts_rank(_PG_DOCUMENT, tsquery).desc(), Memory.updated_at.desc())
        )
    if dialect == "sqlite":
        match = " OR ".join(f'"{t}"' for t in terms)
        return (
            owned_memories(owner_id)
            .join(_FTS, _FTS.c.memory_id == Memory.id)
            .where(_FTS.c.memories_fts.op("MATCH")(match))
            .order_by(func.bm25(literal_column("memories_fts")), Memory.updated_at.desc())
        )
    # Other dialects: a plain substring match.
    return owned_memories(owner_id).where(or_(*(Memory.content.ilike(f"%{t}%") for t in terms)))


def memory_page(
    owner_id: UUID, limit: int, after: tuple[datetime, UUID] | None
) -> Select[tuple[Memory, str | None]]:
    """Newest first, with the saving agent's name; one row more than `limit` tells whether
    another page follows."""
    query = (
        with_agent_name(owned_memories(owner_id))
        .order_by(Memory.created_at.desc(), Memory.id.desc())
        .limit(limit + 1)
    )
    if after is not None:
        at, id_ = after
        query = query.where(
            or_(Memory.created_at < at, and_(Memory.created_at == at, Memory.id < id_))
        )
    return query


def with_agent_name(query: Select[tuple[Memory]]) -> Select[tuple[Memory, str | None]]:
    return query.outerjoin(Agent, Agent.id == Memory.agent_id).add_columns(Agent.name)


def agent_name(agent_id: UUID) -> Select[tuple[str]]:
    return select(Agent.name).where(Agent.id == agent_id)


def delete_all(owner_id: UUID) -> Delete:
    return delete(Memory).where(Memory.owner_id == owner_id)

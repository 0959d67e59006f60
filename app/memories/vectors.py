"""Memories' vectors in the primary database: packed, stored, scanned per user.

A vector is current when its model is the embedder's and it was made from the memory's
present `updated_at`; the keeper (app/memories/keeper.py) finds the memories lacking one
(new, edited, a failed embedding, another model) and stores theirs. A store is
conditional on the memory being unchanged since it was read, so an edit made while its
old text was being embedded is never covered by the old vector.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import numpy as np
from sqlalchemy import and_, exists, literal, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Memory, memory_vectors
from app.memories.embedding import Vectors

v = memory_vectors.c


def pack(vector: Vectors) -> bytes:
    return np.asarray(vector, "<f4").tobytes()


def unpack_all(blobs: list[bytes], dimensions: int) -> Vectors:
    """One matrix of a user's vectors (rows of another length, from a misconfigured
    model name, are zeroed rather than failing the recall)."""
    if not blobs:
        return np.zeros((0, dimensions), np.float32)
    if all(len(b) == dimensions * 4 for b in blobs):  # the usual case: one copy
        return np.frombuffer(b"".join(blobs), "<f4").reshape(len(blobs), dimensions)
    rows = [np.frombuffer(b, "<f4") for b in blobs]
    width = max(r.shape[0] for r in rows)
    matrix = np.zeros((len(rows), width), np.float32)
    for i, row in enumerate(rows):
        if row.shape[0] == width:
            matrix[i] = row
    return matrix


async def user_vectors(
    session: AsyncSession, owner_id: UUID, model: str
) -> tuple[list[UUID], list[bytes]]:
    """The user's memory ids and their vectors of `model` (one indexed scan)."""
    query = select(v.memory_id, v.vector).where(v.owner_id == owner_id, v.model == model)
    rows = (await session.execute(query)).all()
    return [r[0] for r in rows], [r[1] for r in rows]


async def memories_lacking_vectors(
    session: AsyncSession, model: str, limit: int, after: UUID | None = None
) -> list[tuple[UUID, UUID, str, datetime]]:
    """(id, owner, text, updated_at) of memories without a current vector of `model`,
    in id order after `after` (the keeper's and the CLI's resumable walk)."""
    current = exists().where(
        v.memory_id == Memory.id, v.model == model, v.memory_updated_at == Memory.updated_at
    )
    query = (
        select(Memory.id, Memory.owner_id, Memory.key, Memory.content, Memory.updated_at)
        .where(~current)
        .order_by(Memory.id)
        .limit(limit)
    )
    if after is not None:
        query = query.where(Memory.id > after)
    rows = (await session.execute(query)).all()
    return [(r[0], r[1], embedding_text(r[2], r[3]), r[4]) for r in rows]


def embedding_text(key: str | None, content: str) -> str:
    """What a memory's vector stands for: its key (a label the model chose) and content."""
    return f"{key}: {content}" if key else content


async def store_vector(
    session: AsyncSession, memory_id: UUID, owner_id: UUID, model: str,
    seen_updated_at: datetime, vector: bytes,
) -> bool:  # fmt: skip
    """Store (or replace) the memory's vector, unless the memory changed or went since it
    was read. An upsert: two keepers (processes) storing the same memory both succeed."""
    unchanged = select(
        literal(memory_id, Memory.id.type), literal(owner_id, Memory.owner_id.type),
        literal(model), Memory.updated_at, literal(vector, v.vector.type),
    ).where(and_(Memory.id == memory_id, Memory.updated_at == seen_updated_at))  # fmt: skip
    dialect = session.bind.dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(memory_vectors).from_select(
        ["memory_id", "owner_id", "model", "memory_updated_at", "vector"], unchanged
    )
    statement = statement.on_conflict_do_update(
        index_elements=[v.memory_id, v.model],
        set_={
            "memory_updated_at": statement.excluded.memory_updated_at,
            "vector": statement.excluded.vector,
        },
    )
    result = await session.execute(statement)
    return bool(result.rowcount)  # type: ignore[attr-defined]

"""Memories' vectors in the primary database: packed, stored, scanned per user.

A vector is current when its model is the embedder's and it was made from the memory's
present `updated_at`; the keeper (app/memories/keeper.py) finds the memories lacking one
(new, edited, a failed embedding, another model) and stores theirs. A store is
conditional on the memory being unchanged since it was read, so an edit made while its
old text was being embedded is never covered by the old vector.

Every change to a user's vectors bumps the user's row of `memory_vector_versions` in the
same transaction, by triggers on `memory_vectors` (migration 0021): a stored vector, a
deleted memory (its vectors go by cascade), all of them deleted, another model's vectors
forgotten, whichever code wrote it (a process of an older release, during a rolling
deploy, too). The per-process cache (app/memories/vector_cache.py) compares that one row.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
from sqlalchemy import Row, Table, column, delete, exists, literal, select, type_coerce, values
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.types import NullType

from app.db.models import Memory, memory_vector_versions, memory_vectors
from app.memories.embedding import Vectors

v = memory_vectors.c
versions = memory_vector_versions.c


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


RawVectors = Sequence[Row[tuple[Any, bytes]]]  # (memory id as the driver gives it, vector)


async def user_vectors(session: AsyncSession, owner_id: UUID, model: str) -> RawVectors:
    """The user's memory ids and their vectors of `model` (one indexed scan), as the
    driver returns them: no type's conversion runs per row on the event loop (thousands of
    ids turned into UUIDs); `memory_ids` does it, on a worker thread."""
    query = select(type_coerce(v.memory_id, NullType()), type_coerce(v.vector, NullType()))
    return (await session.execute(query.where(v.owner_id == owner_id, v.model == model))).all()


def memory_ids(rows: RawVectors, dialect: Dialect) -> list[UUID]:
    """The ids of `user_vectors`' rows as the column's type reads them."""
    read = v.memory_id.type.process_result_value
    return [read(row[0], dialect) for row in rows]


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


Made = tuple[UUID, UUID, datetime, bytes]  # memory id, owner, its updated_at read, vector


async def store_vectors(session: AsyncSession, model: str, made: list[Made]) -> int:
    """Store (or replace) each memory's vector, unless the memory changed or went since
    it was read (an edit made while its old text was embedded is not covered by the old
    vector); how many were stored. An upsert: two keepers (processes) storing the same
    memory both succeed. One statement, in memory order: its owners' version rows are
    bumped at its end (PostgreSQL's statement triggers, in owner order), after its vector
    rows are locked, as a memory's deletion bumps after its vectors' cascade, so the two
    do not deadlock on them. (New and replaced vectors are bumped in two passes, the
    inserts' then the updates'; two such batches over shared owners could meet in
    opposite orders: PostgreSQL ends one, and the keeper stores it at its next run.)"""
    if not made:
        return 0
    read = values(
        column("memory_id", v.memory_id.type), column("seen", v.memory_updated_at.type),
        column("vector", v.vector.type), name="made",
    ).data([(memory_id, seen, vector) for memory_id, _, seen, vector in made])  # fmt: skip
    rows = read.cte("made")
    unchanged = (
        select(rows.c.memory_id, Memory.owner_id, literal(model), Memory.updated_at, rows.c.vector)
        .where(Memory.id == rows.c.memory_id, Memory.updated_at == rows.c.seen)
        .order_by(Memory.id)
    )
    statement = _insert(session, memory_vectors).from_select(
        ["memory_id", "owner_id", "model", "memory_updated_at", "vector"], unchanged
    )
    statement = statement.on_conflict_do_update(
        index_elements=[v.memory_id, v.model],
        set_={
            "memory_updated_at": statement.excluded.memory_updated_at,
            "vector": statement.excluded.vector,
        },
    )
    # Counted by RETURNING: sqlite3 reports no rowcount for a statement opening with WITH.
    return len((await session.execute(statement.returning(v.memory_id))).all())


def _insert(session: AsyncSession, table: Table) -> postgresql.Insert | sqlite.Insert:
    """The dialect's INSERT, which has ON CONFLICT on both."""
    if session.bind.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


async def version(session: AsyncSession, owner_id: UUID) -> int:
    """The version of the user's vectors (one row by its key); 0: never bumped."""
    query = select(versions.version).where(versions.owner_id == owner_id)
    return int(await session.scalar(query) or 0)


async def forget_other_models(session: AsyncSession, model: str) -> int:
    """Delete every vector not of `model`; how many went."""
    result = await session.execute(delete(memory_vectors).where(v.model != model))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]

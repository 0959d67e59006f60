"""Vectors written by statements of their own, as a process of an older release writes
them during a rolling deploy (no bump of the version row in its code), are seen at the
next recall: the database's triggers bump the owner's version (migration 0021)."""

from __future__ import annotations

from uuid import UUID

import httpx
from sqlalchemy import LargeBinary, bindparam, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.base import GUID, DateTimeUTC
from app.db.models import User, memory_vector_versions, memory_vectors
from app.memories import embedding, services, vectors
from tests.conftest import ApiUser
from tests.memories.support import embed_all, save, top_memory

BEVERAGE = "what beverage do I like"

INSERT_VECTOR = text(
    "INSERT INTO memory_vectors (memory_id, owner_id, model, memory_updated_at, vector) "
    "VALUES (:memory_id, :owner_id, :model, :updated_at, :vector)"
).bindparams(
    bindparam("memory_id", type_=GUID()),
    bindparam("owner_id", type_=GUID()),
    bindparam("updated_at", type_=DateTimeUTC(timezone=True)),
    bindparam("vector", type_=LargeBinary()),
)
SET_VECTOR = text("UPDATE memory_vectors SET vector = :vector WHERE memory_id = :memory_id")
SET_VECTOR = SET_VECTOR.bindparams(
    bindparam("memory_id", type_=GUID()), bindparam("vector", type_=LargeBinary())
)
DELETE_VECTOR = text("DELETE FROM memory_vectors WHERE memory_id = :memory_id")
DELETE_VECTOR = DELETE_VECTOR.bindparams(bindparam("memory_id", type_=GUID()))
DELETE_USER = text("DELETE FROM users WHERE id = :user_id")
DELETE_USER = DELETE_USER.bindparams(bindparam("user_id", type_=GUID()))


async def _vector_of(factory: async_sessionmaker[AsyncSession], memory_id: UUID) -> bytes:
    async with factory() as session:
        query = select(memory_vectors.c.vector).where(memory_vectors.c.memory_id == memory_id)
        return bytes(await session.scalar(query))


async def test_vectors_written_by_plain_sql_are_seen_at_the_next_recall(
    client: httpx.AsyncClient, alice: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    owner = alice.user.id
    berlin = await save(session_factory, owner, "My sister lives in Berlin")
    await embed_all(session_factory)
    assert await top_memory(client, alice, BEVERAGE) is None  # the user's vectors are kept now

    # inserted: a memory saved with its vector in one transaction (no keeper ever sees it
    # lacking one), the vector by a plain INSERT
    embedder = embedding.current()
    assert embedder is not None
    made = embedding.normalized(await embedder.embed(["I drink my coffee black"]))
    async with session_factory() as session, session.begin():
        coffee, _ = await services.save_memory(session, owner, content="I drink my coffee black")
        await session.execute(
            INSERT_VECTOR,
            {
                "memory_id": coffee.id, "owner_id": owner, "model": embedder.model,
                "updated_at": coffee.updated_at, "vector": vectors.pack(made[0]),
            },
        )  # fmt: skip
    assert await top_memory(client, alice, BEVERAGE) == "I drink my coffee black"

    # updated: the two memories' vectors swapped by plain UPDATEs
    coffee_vector = await _vector_of(session_factory, coffee.id)
    berlin_vector = await _vector_of(session_factory, berlin.id)
    async with session_factory() as session, session.begin():
        await session.execute(SET_VECTOR, {"memory_id": berlin.id, "vector": coffee_vector})
        await session.execute(SET_VECTOR, {"memory_id": coffee.id, "vector": berlin_vector})
    assert await top_memory(client, alice, BEVERAGE) == "My sister lives in Berlin"

    # deleted: the vector that answered goes (the keeper may embed Berlin again meanwhile:
    # its own vector, which is no beverage either)
    async with session_factory() as session, session.begin():
        await session.execute(DELETE_VECTOR, {"memory_id": berlin.id})
    assert await top_memory(client, alice, BEVERAGE) is None


async def test_a_user_deleted_with_vectors_leaves_no_version_behind(
    alice: ApiUser, bob: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    for user in (alice, bob):
        await save(session_factory, user.user.id, "I drink my coffee black")
    await embed_all(session_factory)

    async with session_factory() as session, session.begin():
        await session.execute(DELETE_USER, {"user_id": bob.user.id})

    async with session_factory() as session:
        versions = memory_vector_versions.c
        owners = set(await session.scalars(select(versions.owner_id)))
        assert owners == {alice.user.id}
        assert await session.get(User, bob.user.id) is None
        assert await vectors.version(session, alice.user.id) >= 1

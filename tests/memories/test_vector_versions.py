"""Recall's kept vectors follow changes made by writes that never went through this
process's cache (another process's, here sessions of their own), and a kept recall
checks them with one small read (app/memories/vector_cache.py)."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.memories import services
from tests.conftest import ApiUser
from tests.memories.support import database_lane, embed_all, save, top_memory
from tests.support.statements import driver_statements

BEVERAGE = "what beverage do I like"


async def test_memories_added_edited_deleted_elsewhere_are_seen_at_the_next_recall(
    client: httpx.AsyncClient, alice: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    owner = alice.user.id
    await save(session_factory, owner, "My sister lives in Berlin")
    await embed_all(session_factory)
    assert await top_memory(client, alice, BEVERAGE) is None  # the user's vectors are kept now

    # added (and embedded) elsewhere
    drinks = {"I drink my coffee black", "I drink green tea every morning"}
    saved = {m.content: m for m in [await save(session_factory, owner, c) for c in drinks]}
    await embed_all(session_factory)
    first = await top_memory(client, alice, BEVERAGE)
    assert first in drinks

    # deleted elsewhere: the other one comes first, not an empty result
    async with session_factory() as session, session.begin():
        gone = await services.get_owned_memory(session, owner, saved[first].id)
        await services.delete_memory(session, gone)
    (other,) = drinks - {first}
    assert await top_memory(client, alice, BEVERAGE) == other

    # edited elsewhere, then re-embedded
    async with session_factory() as session, session.begin():
        kept = await services.get_owned_memory(session, owner, saved[other].id)
        await services.update_memory(session, kept, {"content": "I am allergic to peanuts"})
    await embed_all(session_factory)
    assert await top_memory(client, alice, "what food should I avoid") == "I am allergic to peanuts"
    assert await top_memory(client, alice, BEVERAGE) is None

    # all deleted elsewhere, then one added again
    async with session_factory() as session, session.begin():
        await services.delete_all_memories(session, owner)
    assert await top_memory(client, alice, "what food should I avoid") is None
    await save(session_factory, owner, "I drink my coffee black")
    await embed_all(session_factory)
    assert await top_memory(client, alice, BEVERAGE) == "I drink my coffee black"


async def test_a_kept_recall_checks_its_vectors_with_one_row_read(
    client: httpx.AsyncClient, alice: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    for content in ("I drink my coffee black", "My sister lives in Berlin"):
        await save(session_factory, alice.user.id, content)
    await embed_all(session_factory)
    assert await top_memory(client, alice, BEVERAGE) == "I drink my coffee black"  # now kept
    engine = (await database_lane(session_factory)).engine  # where recall reads
    # The app's own keeper, woken by the saves, may store (and bump) once more meanwhile:
    # that read is not a kept one, so a few recalls are looked at for a kept one.
    for _ in range(5):
        with driver_statements(engine) as seen:
            assert await top_memory(client, alice, BEVERAGE) == "I drink my coffee black"
        about_vectors = [s for s in seen if "memory_vector" in s]
        if len(about_vectors) == 1:
            break
    assert len(about_vectors) == 1, about_vectors
    (check,) = about_vectors
    assert check.startswith("SELECT") and "FROM memory_vector_versions" in check
    assert "WHERE memory_vector_versions.owner_id =" in check

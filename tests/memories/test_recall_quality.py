"""Recall by meaning, measured: recall@3 of the embedded default against keyword search on
the labelled set (tests/memories/recall_set.py), on both dialects. Figures: docs/memory.md."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.memories import recall, services
from tests.conftest import ApiUser
from tests.memories.recall_set import MULTILINGUAL_PAIRS, PAIRS
from tests.memories.support import embed_all, save


async def recall_at_3(
    factory: async_sessionmaker[AsyncSession],
    user: ApiUser,
    *,
    by_meaning: bool,
    pairs: list[tuple[str, str]] = PAIRS,
) -> float:
    ids = [(await save(factory, user.user.id, memory)).id for memory, _ in pairs]
    if by_meaning:
        await embed_all(factory)
    hits = 0
    async with factory() as session:
        for target, (_, query) in zip(ids, pairs, strict=True):
            if by_meaning:
                found = [
                    r.memory.id for r in (await recall.recall(session, user.user.id, query, 3))[0]
                ]
            else:
                found = [
                    m.id for m in await services.search_memories(session, user.user.id, query, 3)
                ]
            hits += target in found
    return hits / len(pairs)


async def test_the_set_is_large_enough() -> None:
    assert len(PAIRS) >= 60
    assert len({memory for memory, _ in PAIRS}) == len(PAIRS)


async def test_recall_by_meaning_beats_keyword_search(
    alice: ApiUser, bob: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    hybrid = await recall_at_3(session_factory, alice, by_meaning=True)
    keyword = await recall_at_3(session_factory, bob, by_meaning=False)
    print(f"recall@3 hybrid {hybrid:.2f} keyword {keyword:.2f}")
    assert keyword <= 0.5
    assert hybrid >= 0.85


async def test_other_languages_recall_by_meaning_no_worse_than_by_words(
    alice: ApiUser, bob: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    """The embedded model is English: in German, Spanish and French its vectors add
    little, and the hybrid's word half keeps it from doing worse (docs/memory.md)."""
    pairs = MULTILINGUAL_PAIRS
    hybrid = await recall_at_3(session_factory, alice, by_meaning=True, pairs=pairs)
    keyword = await recall_at_3(session_factory, bob, by_meaning=False, pairs=pairs)
    print(f"multilingual recall@3 hybrid {hybrid:.2f} keyword {keyword:.2f}")
    assert hybrid >= keyword

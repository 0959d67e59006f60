"""Recall: the memories about a query, by meaning and by words, fused.

Two rankings of the user's memories: cosine similarity of the query's vector to every
memory's vector (a per-user scan and its ranking with numpy, on a worker thread: only the
few memories fusion can pick come back to the event loop), and the full-text
search (each dialect's index, app/memories/repository.py). They are fused by reciprocal
rank fusion (score = Σ 1 / (K + rank)), which needs no common scale between a cosine and
a bm25 score. A relevance floor keeps unrelated memories out: a memory is recalled when
its vector is close (`MIN_SIMILARITY`), or when its words match and its meaning is not
far (`WORDS_MIN_SIMILARITY`: "I" or "my" match nearly every memory in SQLite's index,
which keeps stop words). A memory not embedded yet is judged by its words alone. With no
embedder (or one that fails now), recall is the full-text search: the documented fallback.
Figures: docs/memory.md, from tests/memories/test_recall_quality.py.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import lane as db_lane
from app.db.models import Memory
from app.memories import embedding, repository, services, vector_cache
from app.memories.schemas import MemoryMatch, MemorySearchResults
from app.memories.serializers import memory_read

logger = logging.getLogger(__name__)
RRF_K = 60
MIN_SIMILARITY = 0.35
WORDS_MIN_SIMILARITY = 0.15
WORD_CANDIDATES = 50

MatchedBy = Literal["meaning", "words", "both"]


@dataclass(frozen=True, slots=True)
class Recalled:
    memory: Memory
    agent_name: str | None
    matched_by: MatchedBy
    score: float


# The latest queries' vectors: a turn's recall ahead of the model and the cell's search
# that follows (app/orchestrator/loop/memory_recall.py) embed the same words once.
_recent_queries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
RECENT_QUERIES = 256


_recent_lock = threading.Lock()  # recalls run on the server's loop and on a lane's


async def _query_vector(embedder: embedding.Embedder, query: str) -> np.ndarray:
    key = (embedder.model, query)
    with _recent_lock:
        if (kept := _recent_queries.get(key)) is not None:
            _recent_queries.move_to_end(key)
            return kept
    vector = embedding.normalized(await embedder.embed([query]))[0]
    with _recent_lock:
        _recent_queries[key] = vector
        if len(_recent_queries) > RECENT_QUERIES:
            _recent_queries.popitem(last=False)
    return vector


@dataclass(frozen=True, slots=True)
class Meaning:
    """The query's ranking by meaning, reduced to what fusion reads (off the loop: the
    user's thousands of similarities never become Python objects on it)."""

    ranks: dict[UUID, int]  # rank among the close enough (>= MIN_SIMILARITY), best 1
    similarity: dict[UUID, float]  # of the memories found by words that have a vector


NO_MEANING = Meaning({}, {})


def _meaning(
    vectors: vector_cache.UserVectors, query: np.ndarray, worded: list[UUID], limit: int
) -> Meaning:
    """The first `limit` by meaning and the words' candidates' ranks and similarities:
    every memory fusion could put in its first `limit` (another's score, meaning alone at
    a lower rank, is below all of those). Ties rank in the vectors' order."""
    similarities = vectors.matrix @ query
    order = np.argsort(-similarities, kind="stable")
    close = int(np.count_nonzero(similarities >= MIN_SIMILARITY))
    rank_of_row = np.empty(len(order), np.int64)
    rank_of_row[order] = np.arange(1, len(order) + 1)
    ranks = {vectors.ids[row]: rank + 1 for rank, row in enumerate(order[: min(close, limit)])}
    similarity: dict[UUID, float] = {}
    for memory_id in worded:
        if (row := vectors.rows.get(memory_id)) is not None:
            similarity[memory_id] = float(similarities[row])
            if similarity[memory_id] >= MIN_SIMILARITY:
                ranks[memory_id] = int(rank_of_row[row])
    return Meaning(ranks, similarity)


async def _by_meaning(
    embedder: embedding.Embedder, vectors: vector_cache.UserVectors, query: str,
    worded: list[UUID], limit: int,
) -> Meaning | None:  # fmt: skip
    """The query's ranking by meaning; None: the embedder cannot answer now."""
    if not vectors.ids:  # nothing embedded (no memories yet): spare the query's embedding
        return NO_MEANING
    try:
        query_vector = await _query_vector(embedder, query)
    except Exception:  # a provider down: recall by words rather than not at all
        logger.warning("embedding a recall query failed; recalling by words", exc_info=True)
        return None
    if vectors.matrix.shape[1] != query_vector.shape[0]:
        return NO_MEANING
    return await asyncio.to_thread(_meaning, vectors, query_vector, worded, limit)


def _fuse(meaning: Meaning, worded: list[UUID], limit: int) -> list[tuple[UUID, MatchedBy, float]]:
    by_meaning = sorted(meaning.ranks, key=meaning.ranks.__getitem__)
    by_words = [i for i in worded if meaning.similarity.get(i, 1.0) >= WORDS_MIN_SIMILARITY]
    scores: dict[UUID, float] = {}
    for memory_id in by_meaning:
        scores[memory_id] = 1.0 / (RRF_K + meaning.ranks[memory_id])
    for rank, memory_id in enumerate(by_words, start=1):
        scores[memory_id] = scores.get(memory_id, 0.0) + 1.0 / (RRF_K + rank)
    words = set(by_words)
    best = sorted(scores, key=lambda i: -scores[i])[:limit]
    return [
        (i, "both" if i in meaning.ranks and i in words else "meaning" if i in meaning.ranks
         else "words", scores[i])
        for i in best
    ]  # fmt: skip


OpenSession = Callable[[], AbstractAsyncContextManager[AsyncSession]]


async def recall(
    session: AsyncSession, owner_id: UUID, query: str, limit: int
) -> tuple[list[Recalled], bool]:
    """The user's memories about `query`, best first, and whether meaning took part: on
    the database lane of `session`'s database (app/db/lane.py), else with `session`."""
    embedder, cache = embedding.current(), vector_cache.cache
    lane = db_lane.serving(session)
    if lane is None:
        return await recall_with(lambda: nullcontext(session), owner_id, query, limit,
                                 embedder, cache)  # fmt: skip
    on_lane = None if embedder is None else _OnLoop(embedder, asyncio.get_running_loop())
    return await lane.run(
        lambda sessions: recall_with(sessions, owner_id, query, limit, on_lane, cache)
    )


async def recall_with(
    open_session: OpenSession, owner_id: UUID, query: str, limit: int,
    embedder: embedding.Embedder | None, cache: vector_cache.VectorCache,
) -> tuple[list[Recalled], bool]:  # fmt: skip
    """`recall`'s work, in two sessions: none is held while the query is embedded (a
    lane's pool is small, and a provider may take seconds)."""
    async with open_session() as session:
        worded = await services.search_memory_ids(session, owner_id, query, WORD_CANDIDATES)
        vectors = None
        if embedder is not None:
            vectors = await cache.user_vectors(session, owner_id, embedder.model)
    meaning = None
    if embedder is not None and vectors is not None:
        meaning = await _by_meaning(embedder, vectors, query, worded, limit)
    if meaning is None:
        fused: list[tuple[UUID, MatchedBy, float]] = [(i, "words", 0.0) for i in worded[:limit]]
    else:
        fused = _fuse(meaning, worded, limit)
    if not fused:
        return [], meaning is not None
    async with open_session() as session:
        rows = await session.execute(
            repository.with_agent_name(repository.owned_memories(owner_id)).where(
                Memory.id.in_([i for i, _, _ in fused])
            )
        )
        found = {memory.id: (memory, name) for memory, name in rows}
    recalled = [
        Recalled(found[i][0], found[i][1], how, score) for i, how, score in fused if i in found
    ]
    return recalled, meaning is not None


class _OnLoop:
    """An embedder used from a lane, asked on the loop it lives on (its batches, its
    HTTP client's connections)."""

    def __init__(self, embedder: embedding.Embedder, loop: asyncio.AbstractEventLoop) -> None:
        self.embedder, self.loop, self.model = embedder, loop, embedder.model

    async def embed(self, texts: list[str]) -> embedding.Vectors:
        return await db_lane.on_loop(self.loop, self.embedder.embed(texts))


async def search_for_user(
    session: AsyncSession, owner_id: UUID, query: str, limit: int
) -> MemorySearchResults:
    recalled, hybrid = await recall(session, owner_id, query, limit)
    items = [
        MemoryMatch(memory=memory_read(r.memory, r.agent_name), matched_by=r.matched_by)
        for r in recalled
    ]
    return MemorySearchResults(query=query, mode="hybrid" if hybrid else "keyword", items=items)

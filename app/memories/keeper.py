"""Keeping memories' vectors current: a background service, and its walk for the CLI.

A memory saved or edited wakes the keeper after commit; it embeds every memory lacking a
current vector (app/memories/vectors.py), in batches, off the event loop. A failed
embedding (a provider's 500, a timeout) loses nothing: the memory is saved already, and
it still lacks its vector at the next run, `MEMORY_VECTORS_RETRY_SECONDS` later. Recall
meanwhile finds it by its words.

The keeper opens its own short sessions and commits them, as the runner does: it is the
memories' background service, not a part of any request.
"""

from __future__ import annotations

import logging
from uuid import UUID

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.lib.background import BackgroundService
from app.memories import changes, embedding, vector_cache, vectors
from app.memories.embedding import Embedder
from app.memories.schemas import MemoryRead
from app.settings import Settings

logger = logging.getLogger(__name__)
BATCH = 32


async def embed_pending(
    sessions: async_sessionmaker[AsyncSession], embedder: Embedder, after: UUID | None = None
) -> int:
    """Embed every memory lacking a current vector of `embedder`'s model, in id order
    after `after`; how many were stored. Each batch commits: stopped, it resumes."""
    stored = 0
    while True:
        async with sessions() as session:
            pending = await vectors.memories_lacking_vectors(session, embedder.model, BATCH, after)
        if not pending:
            return stored
        made = embedding.normalized(await embedder.embed([text for _, _, text, _ in pending]))
        batch = [
            (memory_id, owner_id, updated_at, vectors.pack(vector))
            for (memory_id, owner_id, _, updated_at), vector in zip(pending, made, strict=True)
        ]
        async with sessions() as session, session.begin():
            stored += await vectors.store_vectors(session, embedder.model, batch)
        after = pending[-1][0]


class _WakeOnSave(changes.MemorySink):
    def __init__(self, service: BackgroundService) -> None:
        self.service = service

    def memory_saved(self, owner_id: UUID, memory: MemoryRead) -> None:
        self.service.wake()


class MemoryVectorKeeper(InitPluginProtocol):
    """Installs the embedder `MEMORY_EMBEDDINGS` names (`given`: a provider's, made by
    the model door) and runs the keeper while the app runs."""

    def __init__(
        self, settings: Settings, db_config: SQLAlchemyAsyncConfig, given: Embedder | None = None
    ) -> None:
        self.settings, self.given = settings, given
        self.sessions = async_sessionmaker(db_config.get_engine(), expire_on_commit=False)
        self.service = BackgroundService(
            "memory vectors", self._run, period=settings.memory_vectors_retry_seconds,
            logger=logger, failure="embedding memories failed (retried later)",
            level=logging.WARNING, immediately=True,
        )  # fmt: skip
        self._sink = _WakeOnSave(self.service)
        self.embedder: Embedder | None = None
        self._cache_before = vector_cache.cache

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.lifespan.append(self)
        return app_config

    async def _run(self) -> None:
        if self.embedder is not None:
            await embed_pending(self.sessions, self.embedder)

    async def __aenter__(self) -> MemoryVectorKeeper:
        self.embedder = embedding.chosen(self.settings.memory_embeddings, self.given)
        embedding.install(self.embedder)
        self._cache_before = vector_cache.cache  # given back at the end (tests run many apps)
        vector_cache.cache = vector_cache.VectorCache(self.settings.memory_vector_cache_mib << 20)
        changes.register(self._sink)
        self.service.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        changes.unregister(self._sink)
        await self.service.stop()
        embedding.uninstall(self.embedder)
        vector_cache.cache = self._cache_before

"""Attachments nobody needs any more: uploads no message took, and stray objects.

`expire_unsent` deletes uploads no message referenced within
ATTACHMENT_UNREFERENCED_HOURS (rows first, committed, then their objects); the
`AttachmentExpiry` background service runs it every few minutes. `orphans` lists stored
objects without a row (a crash between writing the objects and committing the row, or
between a delete's commit and its objects' removal): `litestar attachments orphans`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from uuid import UUID

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.attachments.services import delete_objects
from app.attachments.storage import Storage, storage_for
from app.db.models import Attachment
from app.lib.background import BackgroundService
from app.lib.time import utcnow
from app.settings import Settings

logger = logging.getLogger(__name__)
EXPIRY_PERIOD_SECONDS = 300.0
BATCH = 500  # rows a pass deletes at most (a backlog takes several passes)


async def expire_unsent(
    sessions: async_sessionmaker[AsyncSession], storage: Storage, older_than: timedelta
) -> int:
    """One pass: the number of uploads deleted."""
    cutoff = utcnow() - older_than
    async with sessions() as session:
        query = (
            select(Attachment.id)
            .where(Attachment.message_id.is_(None), Attachment.created_at < cutoff)
            .limit(BATCH)
        )
        ids = list(await session.scalars(query))
        if not ids:
            return 0
        # Conditional again: an upload sent meanwhile is kept.
        gone = delete(Attachment).where(Attachment.id.in_(ids), Attachment.message_id.is_(None))
        deleted = list(await session.scalars(gone.returning(Attachment.id)))
        await session.commit()
    await delete_objects(storage, deleted)
    return len(deleted)


async def orphans(sessions: async_sessionmaker[AsyncSession], storage: Storage) -> list[UUID]:
    """Attachment ids with stored objects but no row."""
    stored = await storage.attachment_ids()
    if not stored:
        return []
    async with sessions() as session:
        known: set[UUID] = set()
        for start in range(0, len(stored), BATCH):
            chunk = stored[start : start + BATCH]
            known.update(
                await session.scalars(select(Attachment.id).where(Attachment.id.in_(chunk)))
            )
    return [attachment_id for attachment_id in stored if attachment_id not in known]


class AttachmentExpiry(InitPluginProtocol):
    """Runs `expire_unsent` in the background for the app's lifetime."""

    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        self.settings, self.db_config = settings, db_config

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.lifespan.append(self._expiry)
        return app_config

    @asynccontextmanager
    async def _expiry(self, app: Litestar) -> AsyncIterator[None]:
        engine = self.db_config.get_engine()
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        storage = storage_for(self.settings)
        older_than = timedelta(hours=self.settings.attachment_unreferenced_hours)

        async def job() -> None:
            count = await expire_unsent(sessions, storage, older_than)
            if count:
                logger.info("deleted %d uploads no message referenced", count)

        service = BackgroundService(
            "attachment-expiry", job, period=EXPIRY_PERIOD_SECONDS, logger=logger
        )
        service.start()
        try:
            yield
        finally:
            await service.stop()

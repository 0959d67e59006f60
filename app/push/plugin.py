"""Starts push with the app when APNs is configured; says once that it is off otherwise."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.settings import Settings
from app.threads import changes

logger = logging.getLogger(__name__)
_said_off = False


class PushPlugin(InitPluginProtocol):
    """Register before the orchestrator: its lifespan starts first and ends last, so the
    runs' last pushes are written while the sender still runs (and sent at the next start
    if not)."""

    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        self.settings, self.db_config = settings, db_config

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.lifespan.append(self._push)
        return app_config

    @asynccontextmanager
    async def _push(self, app: Litestar) -> AsyncIterator[None]:
        global _said_off
        if not self.settings.push_enabled:
            if not _said_off:
                _said_off = True
                logger.info(
                    "Push notifications are off: set APNS_KEY_FILE, APNS_KEY_ID, "
                    "APNS_TEAM_ID and APNS_TOPIC to send them."
                )
            yield
            return
        from app.push.apns import ApnsClient
        from app.push.events import PushHook
        from app.push.live_activities import LiveActivityUpdater
        from app.push.presence import PresenceLoop
        from app.push.sender import PushSender

        engine = self.db_config.get_engine()
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        client = ApnsClient(self.settings)
        postgres = engine.dialect.name == "postgresql"
        sender = PushSender(self.settings, sessions, client, postgres=postgres)
        presence = PresenceLoop(sessions, self.settings.presence_ttl_seconds)
        updater = LiveActivityUpdater(self.settings, sessions, sender.wake)
        hook = PushHook()
        changes.register_hook(hook)
        sender.start()
        presence.start()
        updater.start()
        app.state.push_sender = sender
        try:
            yield
        finally:
            changes.unregister_hook(hook)
            await updater.stop()
            await presence.stop()
            await sender.stop()
            await client.aclose()

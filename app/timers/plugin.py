"""Starts the timer scheduler with the app: scheduled runs always, task reminders when
push is on (a reminder is a push: with push off, pending reminders wait, and are sent or
dropped by the lateness rule once it is on)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.settings import Settings


class TimersPlugin(InitPluginProtocol):
    """Register after the push plugin: the scheduler starts after the sender that sends
    what it claims, and stops before it."""

    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        self.settings, self.db_config = settings, db_config

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.lifespan.append(self._timers)
        return app_config

    @asynccontextmanager
    async def _timers(self, app: Litestar) -> AsyncIterator[None]:
        if not self.settings.runner_enabled:
            yield  # a process that runs no runs (tests, a web-only host) fires nothing
            return
        from app.timers.scheduler import TimerScheduler

        engine = self.db_config.get_engine()
        scheduler = TimerScheduler(
            self.settings,
            async_sessionmaker(engine, expire_on_commit=False),
            postgres=engine.dialect.name == "postgresql",
            send_reminders=self.settings.push_enabled,
        )
        scheduler.start()
        app.state.timer_scheduler = scheduler
        try:
            yield
        finally:
            await scheduler.stop()

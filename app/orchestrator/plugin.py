"""Starts the embedded run worker with the app (when settings.runner_enabled)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from app.db import clock
from app.db.config import build_runner_engine
from app.settings import Settings

logger = logging.getLogger(__name__)


class OrchestratorPlugin(InitPluginProtocol):
    """Register last: its lifespan exits first, so runs end while the database and the
    realtime plugin (its change sink) are still up."""

    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        self.settings, self.db_config = settings, db_config

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        from app.agents.services import set_model_check
        from app.orchestrator.door.routes import unroutable

        settings = self.settings
        set_model_check(lambda model: unroutable(model, settings))  # agents sit below the door
        if not self.settings.is_sqlite and not self.settings.redis_url:
            # With Redis, app/realtime/channels.py relays wake-ups on its control channel.
            app_config.lifespan.append(self._pg_wakeups)
        if self.settings.runner_enabled:
            app_config.lifespan.append(self._run_worker)  # measures the clock's offset itself
        elif not self.settings.is_sqlite:
            app_config.lifespan.append(self._database_clock)
        return app_config

    @asynccontextmanager
    async def _database_clock(self, _: Litestar) -> AsyncIterator[None]:
        """A process without a runner still judges waits' expiry when answers reach it:
        measure its clock's offset to the database's once (app/db/clock.py)."""
        try:
            async with self.db_config.get_session() as session:
                await clock.synchronize(session)
        except (OSError, SQLAlchemyError) as exc:  # serve anyway: requests answer 503 meanwhile
            logger.warning("Could not read the database's clock: %s", exc)
        yield

    @asynccontextmanager
    async def _pg_wakeups(self, app: Litestar) -> AsyncIterator[None]:
        """Wake other processes' runners at once (also from a process without a runner)."""
        from app.orchestrator.scheduling.pg_wakeups import PgWakeups

        wakeups = PgWakeups(self.settings)
        await wakeups.start()
        app.state.pg_wakeups = wakeups
        try:
            yield
        finally:
            await wakeups.stop()

    @asynccontextmanager
    async def _run_worker(self, app: Litestar) -> AsyncIterator[None]:
        from app.orchestrator.door import openai_client  # the model door: only when running
        from app.orchestrator.door.profiles import load_profiles
        from app.orchestrator.worker import RunWorker

        load_profiles(self.settings.llm_profiles_file, self.settings.llm_profiles)  # bad: fail now
        engine = self._runner_engine()
        worker = RunWorker(self.settings, async_sessionmaker(engine, expire_on_commit=False))
        await worker.start()
        app.state.run_worker = worker
        try:
            yield
        finally:
            await worker.stop()
            await openai_client.close_session()  # the model door's pooled connections
            if engine is not self.db_config.get_engine():
                await engine.dispose()

    def _runner_engine(self) -> AsyncEngine:
        """PostgreSQL: a pool of its own, its share of DATABASE_MAX_CONNECTIONS, without
        pre-ping (a round trip saved on each of a turn's ~8 short transactions; a dead
        connection fails one write, and the pool is then invalidated). SQLite or a tiny
        budget: the app's engine (see app/db/config.py connection_budget)."""
        return build_runner_engine(self.settings) or self.db_config.get_engine()

"""Starts the embedded run worker with the app (when settings.runner_enabled)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.orchestrator.approval_controller import ApprovalController
from app.settings import Settings


class OrchestratorPlugin(InitPluginProtocol):
    """Register last: its lifespan exits first, so runs end while the database and the
    publisher are still up."""

    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        self.settings, self.db_config = settings, db_config

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.route_handlers.append(ApprovalController)
        if self.settings.runner_enabled:
            app_config.lifespan.append(self._run_worker)
        return app_config

    @asynccontextmanager
    async def _run_worker(self, app: Litestar) -> AsyncIterator[None]:
        from app.orchestrator.worker import RunWorker  # imports litellm: only when running

        factory = async_sessionmaker(self.db_config.get_engine(), expire_on_commit=False)
        worker = RunWorker(self.settings, factory)
        await worker.start()
        app.state.run_worker = worker
        try:
            yield
        finally:
            await worker.stop()

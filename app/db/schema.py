"""The schema at startup: the embedded default migrates itself, a server database is checked.

`litestar run` on a fresh clone should serve, not fail on missing tables: SQLite (the
embedded default, one file the app owns) is brought to the latest migration before
anything touches it. A PostgreSQL schema belongs to the deployment (migrations run as a
release step, see docker-compose.yml), so a stale one is reported in one line naming the
command, and never changed behind the operator's back.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from litestar import Litestar
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import create_async_engine

from app.settings import PROJECT_ROOT, Settings

logger = logging.getLogger(__name__)
UPGRADE_COMMAND = "uv run litestar database upgrade --no-prompt"


def alembic_config(database_url: str) -> Config:
    config = Config(str(PROJECT_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade_to_head(database_url: str) -> None:
    """Blocking: alembic's env.py runs its own event loop (call from a worker thread)."""
    command.upgrade(alembic_config(database_url), "head")


async def missing_revisions(database_url: str) -> set[str]:
    """Head revisions the database has not reached (empty when it is up to date)."""
    heads = set(ScriptDirectory.from_config(alembic_config(database_url)).get_heads())
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            current = await connection.run_sync(
                lambda sync: set(MigrationContext.configure(sync).get_current_heads())
            )
    finally:
        await engine.dispose()
    return heads - current


def schema_lifespan(settings: Settings):
    @asynccontextmanager
    async def ensure_schema(_: Litestar) -> AsyncIterator[None]:
        try:
            if settings.is_sqlite:
                await anyio.to_thread.run_sync(upgrade_to_head, settings.database_url)
            elif await missing_revisions(settings.database_url):
                logger.error("The database schema is not up to date: run `%s`.", UPGRADE_COMMAND)
        except (OSError, SQLAlchemyError) as exc:  # serve anyway: requests answer 503 meanwhile
            logger.warning("Could not check the database schema: %s", exc)
        yield

    return ensure_schema

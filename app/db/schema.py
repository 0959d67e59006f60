"""The schema at startup: the embedded default migrates itself, a server database is checked;
and the lock every migration runs under.

`litestar run` on a fresh clone should serve, not fail on missing tables: SQLite (the
embedded default, one file the app owns) is brought to the latest migration before
anything touches it. A PostgreSQL schema belongs to the deployment (migrations run as a
release step, see docker-compose.yml), so a stale one is reported in one line naming the
command, and never changed behind the operator's back; readiness (`/api/health/ready`)
answers 503 until it is at head.

Replicas starting together each run the migrations (the image's entrypoint does): they take
turns under `migration_lock`, a PostgreSQL advisory lock (per database) or, on SQLite, a
file lock next to the database file (uvicorn's workers on one host). The first migrates,
the others then find the schema at head and have nothing to do.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from litestar import Litestar
from sqlalchemy import make_url, pool, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import create_async_engine

from app.lib.health import EXPECTED_SCHEMA_KEY, ExpectedSchema
from app.settings import PROJECT_ROOT, Settings

try:
    import fcntl
except ImportError:  # Windows: one process per SQLite file is on the operator
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)
T = TypeVar("T")
UPGRADE_COMMAND = "uv run litestar database upgrade --no-prompt"
# pg_advisory_lock's key (a bigint; advisory locks are per database): "toolcell" in ASCII.
MIGRATION_LOCK_KEY = 0x746F6F6C63656C6C
WAITING = "Another process is migrating the database: waiting for it."


def alembic_config(database_url: str) -> Config:
    config = Config(str(PROJECT_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def expected_schema(database_url: str) -> ExpectedSchema:
    """The revisions this code knows, and its heads (what readiness compares with)."""
    scripts = ScriptDirectory.from_config(alembic_config(database_url))
    return ExpectedSchema(
        heads=frozenset(scripts.get_heads()),
        known=frozenset(script.revision for script in scripts.walk_revisions()),
    )


def _sqlite_lock_file(database_url: str) -> Path | None:
    database = make_url(database_url).database
    if fcntl is None or database in (None, "", ":memory:") or database.startswith("file:"):
        return None
    return Path(f"{database}.migrate-lock")


@asynccontextmanager
async def migration_lock(database_url: str) -> AsyncIterator[None]:
    """Held while migrations run, released however they end. PostgreSQL: a session advisory
    lock, on a connection of its own in autocommit (no transaction held open meanwhile),
    waited for as long as another process migrates. SQLite: `flock` on
    `<database>.migrate-lock` (none for an in-memory database, or when the file's
    directory does not exist: the migration then fails by itself)."""
    if make_url(database_url).get_backend_name() == "postgresql":
        async with _advisory_lock(database_url):
            yield
        return
    path = _sqlite_lock_file(database_url)
    try:
        handle = path.open("a") if path is not None else None
    except OSError:
        handle = None
    if handle is None:
        yield
        return
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.info(WAITING)
            await anyio.to_thread.run_sync(fcntl.flock, handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@asynccontextmanager
async def _advisory_lock(database_url: str) -> AsyncIterator[None]:
    engine = create_async_engine(database_url, poolclass=pool.NullPool)
    try:
        async with engine.connect() as connection:
            connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
            key = {"key": MIGRATION_LOCK_KEY}
            taken = await connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), key)
            if not taken:
                logger.info(WAITING)
                await connection.execute(text("SELECT pg_advisory_lock(:key)"), key)
            try:
                yield
            finally:
                with suppress(SQLAlchemyError, OSError):  # a dropped connection released it
                    await connection.execute(text("SELECT pg_advisory_unlock(:key)"), key)
    finally:
        await engine.dispose()


async def run_locked(database_url: str, work: Callable[[], T]) -> T:
    """`work` (blocking: alembic's env.py runs an event loop of its own) in a worker
    thread, under the migration lock."""
    async with migration_lock(database_url):
        return await anyio.to_thread.run_sync(work)


def upgrade_to_head(database_url: str) -> None:
    """Blocking (call from a worker thread): the migrations to head, under the lock."""
    upgrade = partial(command.upgrade, alembic_config(database_url), "head")
    anyio.run(run_locked, database_url, upgrade)


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
    async def ensure_schema(app: Litestar) -> AsyncIterator[None]:
        # What readiness compares the database's revisions with.
        app.state[EXPECTED_SCHEMA_KEY] = expected_schema(settings.database_url)
        try:
            if settings.is_sqlite:
                await anyio.to_thread.run_sync(upgrade_to_head, settings.database_url)
            elif await missing_revisions(settings.database_url):
                logger.error("The database schema is not up to date: run `%s`.", UPGRADE_COMMAND)
        except (OSError, SQLAlchemyError) as exc:  # serve anyway: requests answer 503 meanwhile
            logger.warning("Could not check the database schema: %s", exc)
        yield

    return ensure_schema

"""Throwaway migrated databases for the tests, one per dialect.

Each database is built by `alembic upgrade head` (alembic's command API, in a thread of its
own because the async env.py runs its own event loop), so every test run exercises the
migrations.
"""

from __future__ import annotations

import asyncio
import io
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncpg
from alembic import command
from alembic.config import Config

from app.settings import PROJECT_ROOT

PG_ADMIN_DSN = os.environ.get("TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
DIALECTS = tuple(
    d.strip() for d in os.environ.get("TEST_DIALECTS", "sqlite,postgresql").split(",") if d.strip()
)


def alembic(database_url: str, name: str, *args: str) -> str:
    """alembic's command `name` (upgrade, current, check, …) on `database_url`; what it
    printed. In a thread of its own: the async env.py runs its own event loop."""
    output = io.StringIO()
    config = Config(PROJECT_ROOT / "alembic.ini", stdout=output)
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    with ThreadPoolExecutor(1) as thread:
        thread.submit(getattr(command, name), config, *args).result()
    return output.getvalue()


def migrate(database_url: str) -> None:
    alembic(database_url, "upgrade", "head")


async def _pg_admin(statement: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def postgres_unreachable() -> str | None:
    """Why the tests' PostgreSQL server cannot be used (one line), or None when it can."""
    if "postgresql" not in DIALECTS:
        return None
    try:
        asyncio.run(_pg_admin("SELECT 1"))
    except (OSError, asyncpg.PostgresError) as exc:
        return (
            f"PostgreSQL is not reachable at {PG_ADMIN_DSN} ({exc.__class__.__name__}: {exc}). "
            "Start it (see .ci/run), point TEST_POSTGRES_DSN at one, or run SQLite only: "
            "TEST_DIALECTS=sqlite uv run pytest"
        )
    return None


def create_postgres_database() -> tuple[str, str]:
    """A new empty database: (sqlalchemy url, name)."""
    name = f"tc_test_{uuid.uuid4().hex[:12]}"
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    base = PG_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    return f"{base}/{name}", name


def drop_postgres_database(name: str) -> None:
    asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def sqlite_url(directory: Path) -> str:
    return f"sqlite+aiosqlite:///{directory / 'test.sqlite3'}"

"""Alembic environment: works from `alembic`, `litestar database` and the tests.

Migrations run in one transaction per upgrade on both dialects. SQLite's driver does not
begin transactions before DDL by itself, so we emit BEGIN explicitly (the standard
pysqlite recipe) to make a failed migration roll back cleanly there too.
"""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import context
from sqlalchemy import event, pool
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

import app.db.models  # noqa: F401  (registers every table)
from app.db.base import metadata
from app.settings import get_settings

config = context.config


def _database_url() -> str:
    return (
        getattr(config, "db_url", None)
        or config.get_main_option("sqlalchemy.url")
        or get_settings().database_url
    )


def _configure(**kwargs: Any) -> None:
    context.configure(
        target_metadata=metadata,
        render_as_batch=True,
        transactional_ddl=True,
        compare_type=False,
        **kwargs,
    )


def run_migrations_offline() -> None:
    _configure(url=_database_url(), literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def _run_sync(connection: Connection) -> None:
    _configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


def _make_sqlite_transactional(engine: Any) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")


async def run_migrations_online() -> None:
    engine = create_async_engine(_database_url(), poolclass=pool.NullPool)
    if engine.dialect.name == "sqlite":
        _make_sqlite_transactional(engine)
    async with engine.connect() as connection:
        await connection.run_sync(_run_sync)
    await engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    asyncio.run(run_migrations_online())

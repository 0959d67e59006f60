"""Engine and session configuration for the SQLAlchemy plugin, per dialect."""

from __future__ import annotations

from typing import Any

from advanced_alchemy.extensions.litestar import (
    AlembicAsyncConfig,
    AsyncSessionConfig,
    EngineConfig,
    SQLAlchemyAsyncConfig,
)
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.session import PLUGIN_SESSION_KEY
from app.settings import PROJECT_ROOT, Settings

MIGRATIONS_DIR = PROJECT_ROOT / "migrations"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers proceed while the runner writes; busy_timeout makes writers queue
    # instead of failing with "database is locked".
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def install_sqlite_pragmas(engine: AsyncEngine) -> None:
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)


def build_engine_config(settings: Settings) -> EngineConfig:
    if settings.is_sqlite:
        return EngineConfig(echo=settings.database_echo)
    # No pre-ping: it is a round trip on every checkout. A connection that died (server
    # restart) fails one statement; SQLAlchemy then invalidates the pool, and
    # pool_recycle retires connections before idle timeouts can kill them (the runner's
    # engine does the same).
    return EngineConfig(
        echo=settings.database_echo, pool_size=10, max_overflow=20, pool_recycle=1800
    )


def build_sqlalchemy_config(settings: Settings) -> SQLAlchemyAsyncConfig:
    if settings.is_sqlite:
        (PROJECT_ROOT / "var").mkdir(exist_ok=True)
    config = SQLAlchemyAsyncConfig(
        connection_string=settings.database_url,
        engine_config=build_engine_config(settings),
        session_config=AsyncSessionConfig(expire_on_commit=False),
        # Handlers get `db_session` from app.db.session (committed before the response);
        # the plugin's own provider moves aside and its hook only closes the session.
        session_dependency_key=PLUGIN_SESSION_KEY,
        create_all=False,
        alembic_config=AlembicAsyncConfig(
            script_location=str(MIGRATIONS_DIR),
            script_config=str(PROJECT_ROOT / "alembic.ini"),
            render_as_batch=True,
            version_table_name="alembic_version",
        ),
    )
    install_sqlite_pragmas(config.get_engine())
    return config

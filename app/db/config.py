"""Engine and session configuration for the SQLAlchemy plugin, per dialect."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from advanced_alchemy.extensions.litestar import (
    AlembicAsyncConfig,
    AsyncSessionConfig,
    EngineConfig,
    SQLAlchemyAsyncConfig,
)
from sqlalchemy import Engine, event, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import QueuePool

from app.db import sqlite_writers
from app.db.session import PLUGIN_SESSION_KEY
from app.observability import metrics
from app.settings import PROJECT_ROOT, Settings

MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
BUSY_TIMEOUT_SECONDS = 10.0
LANE_SHARE = 8  # the database lane's pool: this part of the budget


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers proceed while the runner writes; busy_timeout makes writers queue
    # instead of failing with "database is locked".
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def install_sqlite_pragmas(engine: AsyncEngine) -> None:
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        sqlite_writers.install(engine, BUSY_TIMEOUT_SECONDS)


@dataclass(frozen=True)
class ConnectionBudget:
    """How the process's `database_max_connections` is split between its pools."""

    app: int
    runner: int  # 0: the runner uses the app's pool
    lane: int  # 0: no database lane (app/db/lane.py): its reads run on the server's loop


def connection_budget(settings: Settings) -> ConnectionBudget:
    """PostgreSQL with the embedded runner on: half the budget (rounded down) is the
    runner's own pool, so a burst of requests cannot starve running turns nor the other
    way round. SQLite (one file, one writer), the runner off, or a budget below 2: no
    runner's pool. An eighth (rounded down) is the database lane's, taken from the app's
    share; a budget below 8 has no lane."""
    total = max(1, settings.database_max_connections)
    lane = 0 if _is_memory_sqlite(settings.database_url) else total // LANE_SHARE
    if settings.is_sqlite or not settings.runner_enabled or total < 2:
        return ConnectionBudget(app=total - lane, runner=0, lane=lane)
    return ConnectionBudget(app=total - total // 2 - lane, runner=total // 2, lane=lane)


def pool_options(settings: Settings, size: int) -> dict[str, Any]:
    """A hard cap of `size` connections (no overflow); past it callers queue for
    `database_pool_timeout_seconds`, then get `sqlalchemy.exc.TimeoutError` (a 503)."""
    if settings.is_sqlite and _is_memory_sqlite(settings.database_url):
        return {}  # one static connection; nothing to size
    options: dict[str, Any] = {
        "pool_size": size,
        "max_overflow": 0,
        "pool_timeout": settings.database_pool_timeout_seconds,
        # The connection used last goes out first: its caches are warm (SQLite's prepared
        # statements and pages, asyncpg's prepared statements), where a queue would rotate
        # through every connection and prepare each statement again on each.
        "pool_use_lifo": True,
    }
    if not settings.is_sqlite:
        # No pre-ping: it is a round trip on every checkout. A connection that died
        # (server restart) fails one statement (a 503); SQLAlchemy then invalidates the
        # pool, and pool_recycle retires connections before idle timeouts can kill them.
        options["pool_recycle"] = 1800
        options["connect_args"] = _asyncpg_connect_args(settings)
    return options


def _asyncpg_connect_args(settings: Settings) -> dict[str, Any]:
    """A connection whose peer went silent (a partition: no reset, no error) would wait
    until TCP gives up: asyncpg's command_timeout raises TimeoutError, which SQLAlchemy's
    asyncpg dialect counts as a disconnect, so the connection is dropped. The other way
    round, the server drops a session that left a transaction open and silent (its
    locks would hold up other hosts: app/orchestrator/scheduling/reaper.py)."""
    args: dict[str, Any] = {}
    if settings.database_statement_timeout_seconds > 0:
        args["command_timeout"] = settings.database_statement_timeout_seconds
    idle = settings.database_idle_in_transaction_timeout_seconds
    if idle > 0:
        milliseconds = str(max(1, round(idle * 1000)))
        args["server_settings"] = {"idle_in_transaction_session_timeout": milliseconds}
    return args


def _is_memory_sqlite(url: str) -> bool:
    parsed = make_url(url)
    return parsed.database in (None, "", ":memory:") or parsed.query.get("mode") == "memory"


def watch_pool(name: str, engine: AsyncEngine) -> None:
    """Report the engine's pool in /metrics (connections checked out, and its size); read
    through a weak reference, at each scrape (a disposed engine's pool is a new one)."""
    ref = weakref.ref(engine.sync_engine)

    def read(measure: str) -> float:
        pool = _queue_pool(ref())
        return 0.0 if pool is None else float(getattr(pool, measure)())

    metrics.watch_pool(name, lambda: read("checkedout"), lambda: read("size"))


def _queue_pool(engine: Engine | None) -> QueuePool | None:
    pool = engine.pool if engine is not None else None
    return pool if isinstance(pool, QueuePool) else None  # memory SQLite: one static one


def build_engine_config(settings: Settings) -> EngineConfig:
    size = connection_budget(settings).app
    return EngineConfig(echo=settings.database_echo, **pool_options(settings, size))


def build_runner_engine(settings: Settings) -> AsyncEngine | None:
    """The runner's own pool (its share of the budget), or None to use the app's."""
    return _own_pool(settings, "runner", connection_budget(settings).runner)


def build_lane_engine(settings: Settings) -> AsyncEngine | None:
    """The database lane's engine (its share of the budget), or None: no lane."""
    engine = _own_pool(settings, "lane", connection_budget(settings).lane)
    if engine is not None and engine.dialect.name == "sqlite":
        # Reads only: SQLite's writers' queue (app/db/sqlite_writers.py, a lock of the
        # server's loop) is not the lane's.
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def _own_pool(settings: Settings, name: str, size: int) -> AsyncEngine | None:
    if size == 0:
        return None
    engine = create_async_engine(
        settings.database_url, echo=settings.database_echo, **pool_options(settings, size)
    )
    watch_pool(name, engine)
    return engine


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
        # No model has a FileObject column: the listener would still inspect every
        # flushed instance and start a task after each commit.
        enable_file_object_listener=False,
        alembic_config=AlembicAsyncConfig(
            script_location=str(MIGRATIONS_DIR),
            script_config=str(PROJECT_ROOT / "alembic.ini"),
            render_as_batch=True,
            version_table_name="alembic_version",
        ),
    )
    install_sqlite_pragmas(config.get_engine())
    watch_pool("app", config.get_engine())
    return config

"""Sessions for read-only work (or one statement, atomic by itself): on PostgreSQL,
without BEGIN and COMMIT.

Under READ COMMITTED (PostgreSQL's default, and ours) every statement of a transaction
takes its own snapshot, so wrapping reads in a transaction gives them nothing that
autocommit does not, and costs two round trips (BEGIN, COMMIT) of the three or four a
short read makes. A session of `reading(...)` runs each statement on its own instead.
The isolation level is a flag of the driver's connection (set on checkout, reset on
checkin, no round trip), so these sessions share the pool of the sessions they come from.

SQLite keeps its sessions: pysqlite opens no transaction for a SELECT anyway, and
switching a connection's mode would cost two thread hops.
"""

from __future__ import annotations

import weakref

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

_READS_ONLY = "reads_only"


def reading(sessions: async_sessionmaker[AsyncSession]) -> async_sessionmaker[AsyncSession]:
    """Sessions like `sessions`' for work that only reads."""
    engine = sessions.kw.get("bind")
    if not isinstance(engine, AsyncEngine) or engine.dialect.name != "postgresql":
        return sessions
    options = {key: value for key, value in sessions.kw.items() if key != "bind"}
    options["info"] = {**options.get("info", {}), _READS_ONLY: True}
    return async_sessionmaker(autocommit(engine), class_=sessions.class_, **options)


_twins: weakref.WeakKeyDictionary[AsyncEngine, AsyncEngine] = weakref.WeakKeyDictionary()


def autocommit(engine: AsyncEngine) -> AsyncEngine:
    """PostgreSQL: the engine's AUTOCOMMIT twin (same pool; built once), for connections
    that only read (app/db/direct.py's `read_alone`); other engines as they are."""
    if engine.dialect.name != "postgresql":
        return engine
    if engine.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
        return engine  # a twin already (a reading session's bind)
    twin = _twins.get(engine)
    if twin is None:
        twin = _twins[engine] = engine.execution_options(isolation_level="AUTOCOMMIT")
    return twin


def runs_statements_alone(session: AsyncSession) -> bool:
    """A session of `reading(...)` on PostgreSQL: each statement committed as it ran."""
    return bool(session.info.get(_READS_ONLY))


__all__ = ("autocommit", "reading", "runs_statements_alone")

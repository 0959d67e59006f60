"""The request's session: one unit of work per HTTP request, committed before the response.

advanced-alchemy's `autocommit` before-send hook commits while the response start is
already on its way and only logs a failing COMMIT, so a client could get a 2xx for rows
that never existed. Here `db_session` is a generator dependency instead: Litestar builds
the response, then runs the generator's cleanup (the COMMIT) and only afterwards sends
anything. A failing COMMIT therefore becomes `CommitFailedError`, answered as a 503 (see
app/lib/problems.py), and the transaction is rolled back: nothing half-written, no 2xx.

A handler that raises rolls back (the exception is thrown into the generator); a handler
that returns commits, whatever status it chose, when there is anything to commit. GET and
HEAD requests only read: their session runs without BEGIN/COMMIT on PostgreSQL
(app/db/reads.py). Keep this the only generator dependency of a request: with several, Litestar runs their cleanups in a task group and a failed
COMMIT would arrive wrapped in an ExceptionGroup (a 500).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar.datastructures import State
from litestar.di import Provide
from litestar.types import Scope
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import outbox, sqlite_writers
from app.db.reads import reading, runs_statements_alone

logger = logging.getLogger(__name__)

# The key under which the SQLAlchemy plugin registers its own (uncommitted) session
# provider; handlers ask for `db_session`, the committing one below.
PLUGIN_SESSION_KEY = "db_session_uncommitted"
READ_SESSIONS_KEY = "read_session_maker"
_READ_METHODS = frozenset({"GET", "HEAD"})


class CommitFailedError(Exception):
    """COMMIT of a request's unit of work failed; nothing of it was stored."""


async def _rollback_quietly(session: AsyncSession) -> None:
    # The original error is what matters; a rollback on a dead connection only adds noise.
    try:
        await session.rollback()
    except Exception:
        logger.warning("rollback after a failed request failed", exc_info=True)


async def _commit(session: AsyncSession) -> None:
    try:
        await session.commit()
    except Exception as exc:
        await _rollback_quietly(session)
        raise CommitFailedError("the transaction could not be committed") from exc


def _read_sessions(config: SQLAlchemyAsyncConfig, state: State) -> async_sessionmaker[AsyncSession]:
    sessions = state.get(READ_SESSIONS_KEY)
    if sessions is None:
        sessions = state[READ_SESSIONS_KEY] = reading(state[config.session_maker_app_state_key])
    return sessions


def _request_session(config: SQLAlchemyAsyncConfig, state: State, scope: Scope) -> AsyncSession:
    if scope.get("method") in _READ_METHODS:
        return _read_sessions(config, state)()
    return config.provide_session(state, scope)


async def _needs_commit(session: AsyncSession) -> bool:
    """An unused session (authentication alone, from the token cache, uses none), a
    reading one (its statements committed as they ran) and, on SQLite, one that only read
    (pysqlite opens no transaction for a SELECT) have nothing to commit, unless work waits
    for the commit (app/db/outbox.py). Committing them would still begin and end a
    transaction in SQLAlchemy, listeners and all, and on SQLite cost a trip to the
    driver's thread."""
    if session.new or session.dirty or session.deleted or outbox.has_pending(session):
        return True  # unflushed changes (the commit writes them), after-commit work
    if not session.in_transaction() or runs_statements_alone(session):
        return False
    wrote = sqlite_writers.has_written((await session.connection()).sync_connection)
    return wrote is not False  # unknown: commit


def session_dependency(config: SQLAlchemyAsyncConfig) -> Provide:
    """`db_session` for handlers: the plugin's request session, committed on return."""

    async def provide_db_session(state: State, scope: Scope) -> AsyncGenerator[AsyncSession, None]:
        session = _request_session(config, state, scope)
        try:
            try:
                yield session
            except BaseException:
                await _rollback_quietly(session)
                raise
            if await _needs_commit(session):
                await _commit(session)
        finally:
            # Give the connection back before the response is sent (the pool is the
            # process's connection budget); the plugin's before-send hook closes it again,
            # which is a no-op. A session outside any transaction holds no connection:
            # closing it would only cost a greenlet hop.
            if session.in_transaction():
                await session.close()

    return Provide(provide_db_session)


__all__ = ("PLUGIN_SESSION_KEY", "CommitFailedError", "session_dependency")

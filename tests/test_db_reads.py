"""Read-only sessions (app/db/reads.py): on PostgreSQL each statement runs on its own, no
BEGIN/COMMIT around them; SQLite keeps its sessions. GET and HEAD requests get one."""

from __future__ import annotations

import asyncio

import httpx
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.outbox import on_commit
from app.db.reads import reading
from app.db.session import _needs_commit, _request_session


async def _shares_a_transaction(session: AsyncSession) -> bool:
    """PostgreSQL: now() is the transaction's start, statement_timestamp() the statement's;
    a statement 50 ms after an earlier one sees them that far apart only in a transaction."""
    await session.execute(text("SELECT 1"))
    await asyncio.sleep(0.05)
    lag = "SELECT statement_timestamp() - now() > interval '40 milliseconds'"
    return bool(await session.scalar(text(lag)))


async def test_reading_sessions_run_each_statement_alone(
    session_factory: async_sessionmaker[AsyncSession], dialect: str
) -> None:
    readers = reading(session_factory)
    if dialect == "sqlite":
        assert readers is session_factory
        return
    async with readers() as session:
        assert not await _shares_a_transaction(session)
    for _ in range(3):  # readers give their connections back as they found them
        async with session_factory() as session:
            assert await _shares_a_transaction(session)


async def test_requests_that_only_read_get_a_reading_session(
    app: Litestar, client: httpx.AsyncClient, dialect: str
) -> None:
    config = app.plugins.get(SQLAlchemyPlugin).config[0]  # the app is started (`client`)
    for method, reads in [("GET", True), ("HEAD", True), ("POST", False), ("PATCH", False)]:
        scope = {"type": "http", "method": method, "state": {}, "app": app}
        session = _request_session(config, app.state, scope)  # type: ignore[arg-type]
        try:
            if dialect == "sqlite":  # the plugin's sessions, whatever the method
                assert session.bind is config.get_engine()
                continue
            alone = not await _shares_a_transaction(session)
        finally:
            await session.close()
        assert alone == reads, method


async def test_a_request_commits_only_what_needs_it(
    session_factory: async_sessionmaker[AsyncSession], dialect: str
) -> None:
    """Unused or read-only: nothing to commit (PostgreSQL's reading sessions committed
    each statement, SQLite opened no transaction for a SELECT); written, or with work
    waiting for the commit: committed."""
    async with session_factory() as session:
        assert not await _needs_commit(session)  # unused
        await session.execute(text("SELECT 1"))
        # a plain session on PostgreSQL is in a transaction; on SQLite it only read
        assert await _needs_commit(session) == (dialect == "postgresql")
        on_commit(session, lambda: None)
        assert await _needs_commit(session)
    async with reading(session_factory)() as session:
        await session.execute(text("SELECT 1"))
        assert not await _needs_commit(session)
    async with session_factory() as session:
        await session.execute(text("UPDATE users SET email = email WHERE 1 = 0"))
        assert await _needs_commit(session)

"""The statements a database driver was given, as the server would count them.

SQLAlchemy's `before_cursor_execute` misses what app/db/direct.py hands straight to the
driver, and BEGIN/COMMIT. Here they are seen where every statement passes: SQLite's own
trace callback on each connection checked out meanwhile, and SQLAlchemy's asyncpg adapter
(the one funnel of its statements, its BEGIN and its COMMIT). PRAGMAs are left out.

    with driver_statements(engine) as seen:
        ...
    assert heads(seen) == ["BEGIN", "UPDATE threads", ...]
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.dialects.postgresql.asyncpg import (
    AsyncAdapt_asyncpg_connection,
    AsyncAdapt_asyncpg_cursor,
)
from sqlalchemy.ext.asyncio import AsyncEngine


@contextmanager
def driver_statements(engine: AsyncEngine) -> Iterator[list[str]]:
    seen: list[str] = []
    if engine.dialect.driver == "asyncpg":
        with _asyncpg_statements(seen):
            yield seen
    else:
        with _sqlite_statements(engine, seen):
            yield seen


def heads(statements: list[str]) -> list[str]:
    """Each statement's kind and table: "INSERT INTO runs" -> "INSERT runs"."""
    named = []
    for statement in statements:
        words = statement.replace("(", " ").split()
        verb = words[0].upper()
        if verb in ("INSERT", "DELETE"):
            named.append(f"{verb} {words[2]}")
        elif verb in ("UPDATE", "SELECT", "WITH") and len(words) > 1:
            named.append(f"{verb} {words[1]}" if verb == "UPDATE" else verb)
        else:
            named.append(verb)
    return named


@contextmanager
def _sqlite_statements(engine: AsyncEngine, seen: list[str]) -> Iterator[None]:
    def record(statement: str) -> None:
        if not statement.upper().startswith("PRAGMA"):
            seen.append(statement.strip())

    def checkout(dbapi_connection: Any, *_: Any) -> None:
        dbapi_connection.sqlite.set_trace_callback(record)

    def checkin(dbapi_connection: Any, *_: Any) -> None:
        if dbapi_connection is not None:
            dbapi_connection.sqlite.set_trace_callback(None)

    pool = engine.sync_engine.pool
    event.listen(pool, "checkout", checkout)
    event.listen(pool, "checkin", checkin)
    try:
        yield
    finally:
        event.remove(pool, "checkout", checkout)
        event.remove(pool, "checkin", checkin)


@contextmanager
def _asyncpg_statements(seen: list[str]) -> Iterator[None]:
    execute = AsyncAdapt_asyncpg_cursor._prepare_and_execute
    begin = AsyncAdapt_asyncpg_connection._start_transaction
    commit = AsyncAdapt_asyncpg_connection.commit

    async def executed(self: Any, operation: str, parameters: Any) -> None:
        try:
            await execute(self, operation, parameters)  # a BEGIN first, if it takes one
        finally:
            seen.append(operation)

    async def began(self: Any) -> None:
        if self.isolation_level != "autocommit":
            seen.append("BEGIN")
        await begin(self)

    def committed(self: Any) -> None:
        if self._started:
            seen.append("COMMIT")
        commit(self)

    AsyncAdapt_asyncpg_cursor._prepare_and_execute = executed  # type: ignore[method-assign]
    AsyncAdapt_asyncpg_connection._start_transaction = began  # type: ignore[method-assign]
    AsyncAdapt_asyncpg_connection.commit = committed  # type: ignore[method-assign]
    try:
        yield
    finally:
        AsyncAdapt_asyncpg_cursor._prepare_and_execute = execute  # type: ignore[method-assign]
        AsyncAdapt_asyncpg_connection._start_transaction = begin  # type: ignore[method-assign]
        AsyncAdapt_asyncpg_connection.commit = commit  # type: ignore[method-assign]

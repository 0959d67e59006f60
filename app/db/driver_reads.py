"""One-value reads on hot paths, handed straight to the driver.

The page clients poll and each websocket subscribe first read one value: the thread's
`last_seq`, if the thread is the caller's (an indexed lookup). Through SQLAlchemy's
execution path that read costs ~130-170 us of CPU; asyncpg's own `fetchval` on the same
connection ~40 us, and SQLite's read on the loop (app/db/sqlite_driver.py) a few. For a
request whose answer is otherwise cached (the latest page) it was most of the cost.

`scalar` takes the connection from the session as usual (same pool, same transaction if
one is open) and hands the statement, compiled once by SQLAlchemy for the dialect, to the
driver, with SQLAlchemy's own bind and result processing of its columns. Other drivers
take SQLAlchemy's path, as does a SQLite read that would wait for a lock. For reads only:
on PostgreSQL the statement does not begin the session's transaction.

Errors: the driver's exceptions come unwrapped (asyncpg's, with their SQLSTATE, the
socket's OSError, sqlite3's), which app/db/errors.py classifies as it does wrapped ones.
A PostgreSQL connection that failed, or whose statement was cut off (the request
cancelled), is invalidated, as SQLAlchemy would, so the pool does not hand it out again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from app.db import sqlite_driver


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    binds: tuple[Callable[[Any], Any] | None, ...]
    result: Callable[[Any], Any] | None

    def arguments(self, params: Mapping[str, Any]) -> list[Any]:
        return [
            bind(params[name]) if bind else params[name]
            for name, bind in zip(self.names, self.binds, strict=True)
        ]

    def value(self, value: Any) -> Any:
        return self.result(value) if self.result and value is not None else value


_compiled: dict[tuple[int, str], tuple[Select, _Compiled]] = {}


async def scalar(session: AsyncSession, statement: Select, params: Mapping[str, Any]) -> Any:
    """As `session.scalar(statement, params)`: the first column of the first row, or None."""
    connection = await session.connection()
    if connection.dialect.driver == "asyncpg":
        return await _asyncpg_scalar(connection, statement, params)
    raw = await connection.get_raw_connection()
    if isinstance(raw.dbapi_connection, sqlite_driver.OneTripConnection):
        compiled = _compile(statement, connection.dialect)
        sqlite = raw.dbapi_connection.sqlite
        outcome = await sqlite_driver.run_here(sqlite, compiled.sql, compiled.arguments(params))
        if outcome is not None:
            _description, rows, *_ = outcome
            return compiled.value(rows[0][0] if rows else None)
    return await connection.scalar(statement, params)  # other drivers; a read that would wait


async def _asyncpg_scalar(
    connection: AsyncConnection, statement: Select, params: Mapping[str, Any]
) -> Any:
    compiled = _compile(statement, connection.dialect)
    arguments = compiled.arguments(params)
    raw = await connection.get_raw_connection()
    try:
        value = await raw.driver_connection.fetchval(compiled.sql, *arguments)  # type: ignore[union-attr]
    except BaseException as error:
        raw.invalidate(error if isinstance(error, Exception) else None)
        raise
    return compiled.value(value)


def _compile(statement: Select, dialect: Dialect) -> _Compiled:
    key = (id(statement), dialect.name)
    found = _compiled.get(key)
    if found is not None and found[0] is statement:
        return found[1]
    compiled = statement.compile(dialect=dialect)
    names = tuple(compiled.positiontup or ())
    result = _Compiled(
        sql=compiled.string,
        names=names,
        binds=tuple(compiled._bind_processors.get(name) for name in names),
        result=compiled._result_columns[0].type.result_processor(dialect, None),
    )
    _compiled[key] = (statement, result)  # the statement kept: its id stays its own
    return result

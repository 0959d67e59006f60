"""Hot-path statements handed straight to the driver, past SQLAlchemy's execution path.

SQLAlchemy's engine spends ~55 us of CPU per statement on SQLite and ~100 us on
PostgreSQL around the driver's own work (execution context, compiled-cache key, events,
the Result): more than SQLite's INSERT itself (~5 us on the loop). A turn runs about
twenty statements, most of them the same few: the thread bump, a message insert or
update, a run's claim and end, a tool's row. For those, `execute` and `scalar` take the
statement compiled once by SQLAlchemy for the dialect, with its own bind and result
processing of each column, and run it on the driver: asyncpg through SQLAlchemy's own
adapter (which starts the transaction, prepares and caches the statement, translates
errors), SQLite on the event loop's thread (app/db/sqlite_driver.py: `run_here`, after
the process's write queue, app/db/sqlite_writers.py). Other drivers, and a SQLite
statement that would wait for a lock, take SQLAlchemy's path.

The connection is the session's as usual (same pool, same transaction), except for
`read_alone`: a pooled connection of its own, outside any session. What differs
from `session.execute`: no autoflush beyond what the session holds unwritten
(`flush_pending` runs first), no ORM results (rows of values; callers attach instances
with app/db/rows.py) and no engine events. A statement must not need SQLAlchemy at run
time: no Python-side defaults left to compute (give `updated_at` and the like as
parameters) and no expanding IN lists; one that does is refused when first compiled.

Errors come as SQLAlchemy raises them (`IntegrityError`, `OperationalError`, … wrapping
the driver's). A connection that failed, or whose statement was cut off (the request
cancelled), is invalidated, as SQLAlchemy would, so the pool does not hand it out again.
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import Executable

from app.db import reads, sqlite_driver, sqlite_writers

_Processor = Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """A statement's rows (values as SQLAlchemy would return them) and its rowcount."""

    keys: tuple[str, ...]
    rows: list[Any]  # named tuples: by position, or by key as attributes
    rowcount: int

    def first(self) -> Any:
        return self.rows[0] if self.rows else None

    def mappings(self) -> list[dict[str, Any]]:
        return [dict(zip(self.keys, row, strict=True)) for row in self.rows]


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    binds: tuple[_Processor, ...]
    constants: Mapping[str, Any]  # values bound in the statement itself (`x + 1`, literals)
    keys: tuple[str, ...]
    results: tuple[_Processor, ...]
    writes: bool
    row: Callable[..., Any]  # a named tuple of `keys` (any repeated or odd: renamed)

    def arguments(self, params: Mapping[str, Any]) -> list[Any]:
        constants = self.constants
        values = [params[name] if name in params else constants[name] for name in self.names]
        return [
            value if bind is None else bind(value)
            for value, bind in zip(values, self.binds, strict=True)
        ]

    def outcome(self, rows: Sequence[Sequence[Any]], rowcount: int) -> Outcome:
        results, make = self.results, self.row
        processed = [
            make(
                *(
                    value if result is None else result(value)
                    for value, result in zip(row, results, strict=True)
                )
            )
            for row in rows
        ]
        return Outcome(self.keys, processed, rowcount)


_compiled: dict[tuple[int, str], tuple[Executable, _Compiled]] = {}


async def execute(
    session: AsyncSession, statement: Executable, params: Mapping[str, Any]
) -> Outcome:
    """As `session.execute(statement, params)` for a Core statement built once (module
    level): its rows by position (`keys` names them) and its rowcount."""
    await flush_pending(session)
    connection, raw = await _connection(session)
    return await _run(connection, raw, statement, params)


async def read_alone(
    engine: AsyncEngine, statement: Executable, params: Mapping[str, Any]
) -> Outcome:
    """A read on a pooled connection of its own, outside any session and (on PostgreSQL)
    any transaction, for a request whose one read is all its database work (the latest
    page, when its cache is current)."""
    if engine.dialect.driver == "asyncpg":
        return await _read_alone_asyncpg(engine, statement, params)
    async with reads.autocommit(engine).connect() as connection:
        raw = await connection.get_raw_connection()
        return await _run(connection, raw, statement, params)


async def _read_alone_asyncpg(
    engine: AsyncEngine, statement: Executable, params: Mapping[str, Any]
) -> Outcome:
    """The pool's connection itself, without a `Connection` around it: ~100 us of CPU
    less than `engine.connect()` with AUTOCOMMIT (its greenlet hops, events and
    characteristics), half of such a request's database work. In autocommit the adapter
    begins no transaction, so handing the connection back needs no await."""
    compiled = _compile(statement, engine.dialect)
    arguments = compiled.arguments(params)
    raw = await engine.raw_connection()
    adapted = raw.dbapi_connection
    try:
        adapted.autocommit = True
        try:
            return await _asyncpg(adapted, compiled, arguments)
        finally:
            adapted.autocommit = False  # back to the pool's isolation level
    except BaseException as error:
        raise _failed(engine.dialect, raw, compiled, arguments, error) from error
    finally:
        raw.close()


async def _run(
    connection: AsyncConnection, raw: Any, statement: Executable, params: Mapping[str, Any]
) -> Outcome:
    dialect = connection.dialect
    compiled = _compile(statement, dialect)
    arguments = compiled.arguments(params)
    adapted = raw.dbapi_connection
    try:
        if dialect.driver == "asyncpg":
            return await _asyncpg(adapted, compiled, arguments)
        if isinstance(adapted, sqlite_driver.OneTripConnection) and adapted.runs_here(compiled.sql):
            if compiled.writes:
                await sqlite_writers.hold_for_write(connection)
            outcome = await adapted.run_here(compiled.sql, arguments)
            if outcome is not None:
                _description, rows, _lastrowid, rowcount = outcome
                return compiled.outcome(rows, rowcount)
    except BaseException as error:
        raise _failed(dialect, raw, compiled, arguments, error) from error
    return await _through_sqlalchemy(connection, statement, params)


# The session transaction's connection, kept for its next statements: asking the session
# again costs two greenlet hops (~25 us) for the same answer.
_connections: weakref.WeakKeyDictionary[Any, tuple[AsyncConnection, Any]] = (
    weakref.WeakKeyDictionary()
)


async def _connection(session: AsyncSession) -> tuple[AsyncConnection, Any]:
    """The session's connection (beginning its transaction if none is open) and the pool's
    proxy of the driver's connection under it."""
    transaction = session.sync_session.get_transaction()
    known = _connections.get(transaction) if transaction is not None else None
    if known is not None and transaction.is_active and known[1].is_valid:  # type: ignore[union-attr]
        return known
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    _connections[session.sync_session.get_transaction()] = (connection, raw)
    return connection, raw


async def scalar(session: AsyncSession, statement: Executable, params: Mapping[str, Any]) -> Any:
    """As `session.scalar(statement, params)`: the first column of the first row, or None."""
    row = (await execute(session, statement, params)).first()
    return None if row is None else row[0]


async def flush_pending(session: AsyncSession) -> None:
    """What the session holds unwritten goes first (as autoflush would before a query):
    a Core statement after it may depend on those rows."""
    if session.new or session.dirty or session.deleted:
        await session.flush()


async def _asyncpg(adapted: Any, compiled: _Compiled, arguments: list[Any]) -> Outcome:
    """Through SQLAlchemy's asyncpg adapter: its transaction start, its prepared-statement
    cache and its error translation, without the engine around them."""
    cursor = adapted.cursor()
    await cursor._prepare_and_execute(compiled.sql, arguments)
    return compiled.outcome(list(cursor._rows), cursor.rowcount)


async def _through_sqlalchemy(
    connection: AsyncConnection, statement: Executable, params: Mapping[str, Any]
) -> Outcome:
    result = await connection.execute(statement, dict(params))
    if not result.returns_rows:
        return Outcome((), [], result.rowcount)
    rows = list(result.all())  # SQLAlchemy's rows: by position, or by key as attributes
    return Outcome(tuple(result.keys()), rows, result.rowcount)


def _failed(
    dialect: Dialect,
    raw: Any,
    compiled: _Compiled,
    arguments: list[Any],
    error: BaseException,
) -> BaseException:
    """The error as SQLAlchemy would raise it; the connection invalidated if it is gone
    or was cut off mid-statement."""
    if not isinstance(error, Exception):  # cancelled: the statement's fate is unknown
        raw.invalidate()
        return error
    if not isinstance(error, dialect.loaded_dbapi.Error):
        return error
    disconnected = dialect.is_disconnect(error, raw.dbapi_connection, None)
    if disconnected:
        raw.invalidate(error)
    return DBAPIError.instance(
        compiled.sql,
        arguments,
        error,
        dialect.loaded_dbapi.Error,
        connection_invalidated=disconnected,
        dialect=dialect,
    )


def _compile(statement: Executable, dialect: Dialect) -> _Compiled:
    key = (id(statement), dialect.name)
    found = _compiled.get(key)
    if found is not None and found[0] is statement:
        return found[1]
    compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
    assert isinstance(compiled, SQLCompiler)
    _refuse_run_time_work(compiled, statement)
    names = tuple(compiled.positiontup or ())
    keys = tuple(column[0] for column in compiled._result_columns)
    result = _Compiled(
        sql=compiled.string,
        names=names,
        binds=tuple(compiled._bind_processors.get(name) for name in names),
        constants={
            name: bind.effective_value
            for name, bind in compiled.binds.items()
            if not bind.required and bind.callable is None
        },
        keys=keys,
        results=tuple(
            column[3]._cached_result_processor(dialect, None) for column in compiled._result_columns
        ),
        writes=bool(compiled.isinsert or compiled.isupdate or compiled.isdelete),
        row=namedtuple("Row", keys, rename=True),  # type: ignore[misc]
    )
    _compiled[key] = (statement, result)  # the statement kept: its id stays its own
    return result


def _refuse_run_time_work(compiled: SQLCompiler, statement: Executable) -> None:
    """What only SQLAlchemy's execution path would do (see the module's docstring)."""
    if compiled.insert_prefetch or compiled.update_prefetch:
        columns = [c.key for c in [*compiled.insert_prefetch, *compiled.update_prefetch]]
        raise TypeError(f"give {columns} as parameters: {statement}")
    if compiled.post_compile_params or compiled.literal_execute_params:
        raise TypeError(f"expanding or literal-execute parameters: {statement}")


__all__ = ("Outcome", "execute", "flush_pending", "read_alone", "scalar")

"""SQLite through aiosqlite with one trip to its thread per write, and reads on the loop.

aiosqlite runs each sqlite3 call on a thread of its own; SQLAlchemy's adapter makes four
such trips for every statement (open a cursor, execute, fetch the rows, close the cursor),
each a hand-over to the thread and a wake-up of the event loop. Here one function does all
four on the thread, so a statement costs one trip (a turn makes ~40 statements).

A SELECT makes none: it runs on the event loop's thread, with the busy timeout off for
its duration. In WAL mode (the app's) a reader waits for no lock, so it costs the loop
the read itself (an indexed lookup: microseconds, against ~50 us of CPU for a trip).
Should it find the database locked (another process in exclusive locking mode, recovery
after a crash, a database not in WAL mode) it goes to the thread, which waits there.
Writes stay on the thread: they can wait for the write lock, and a commit can checkpoint.

Registered under SQLAlchemy's own name for the driver, so `sqlite+aiosqlite://` URLs
(settings, Alembic, the CLI) all take it. It reaches into aiosqlite's `_execute` and
`_conn`, as SQLAlchemy's own adapter does for isolation levels; the driver tests run on it.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from typing import Any

from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)

_Outcome = tuple[Any, list[Any], int | None, int]
_WOULD_WAIT = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


def _execute(connection: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome:
    """The statement, its rows, then the cursor closed (on aiosqlite's thread, or for a
    read on the loop's: `read_here`)."""
    cursor = connection.cursor()
    try:
        if parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return description, rows, cursor.lastrowid, cursor.rowcount
    finally:
        cursor.close()


def _execute_many(connection: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome:
    cursor = connection.cursor()
    try:
        cursor.executemany(operation, parameters)
        return None, [], cursor.lastrowid, cursor.rowcount
    finally:
        cursor.close()


async def read_here(
    connection: sqlite3.Connection, operation: str, parameters: Any
) -> _Outcome | None:
    """On the event loop's thread, never suspending (a coroutine only because SQLAlchemy's
    async API wants each statement to await something): a read that needs no wait for a
    lock, or None when it would wait (it then goes to the thread, which waits up to the
    busy timeout). Also app/db/driver_reads.py's, for reads that skip SQLAlchemy."""
    (busy_timeout,) = connection.execute("PRAGMA busy_timeout").fetchone()
    connection.execute("PRAGMA busy_timeout=0")  # a wait here would stall the loop
    try:
        return _execute(connection, operation, parameters)
    except sqlite3.OperationalError as error:
        if error.sqlite_errorcode & 0xFF in _WOULD_WAIT:  # extended codes: BUSY_SNAPSHOT, …
            return None
        raise
    finally:
        connection.execute(f"PRAGMA busy_timeout={int(busy_timeout)}")


class OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    __slots__ = ()

    def execute(self, operation: Any, parameters: Any = None) -> None:
        outcome = None
        if operation.startswith("SELECT"):
            try:
                connection = self._connection._conn  # type: ignore[attr-defined]
                outcome = self.await_(read_here(connection, operation, parameters))
            except Exception as error:
                self._adapt_connection._handle_exception(error)
        if outcome is None:
            outcome = self._run(_execute, operation, parameters)
        self._take(outcome)

    def executemany(self, operation: Any, seq_of_parameters: Any) -> None:
        self._take(self._run(_execute_many, operation, seq_of_parameters))

    def _run(self, function: Any, operation: Any, parameters: Any) -> _Outcome:
        driver = self._connection
        try:
            return self.await_(driver._execute(function, driver._conn, operation, parameters))  # type: ignore[attr-defined]
        except Exception as error:
            self._adapt_connection._handle_exception(error)

    def _take(self, outcome: _Outcome) -> None:
        description, rows, lastrowid, rowcount = outcome
        if description:  # as SQLAlchemy's adapter reports a statement that returned rows
            self.description = description
            self.lastrowid = self.rowcount = -1
            self._rows = deque(rows)
        else:
            self.description = None
            self.lastrowid, self.rowcount = lastrowid, rowcount


class OneTripConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()

    def cursor(self, server_side: bool = False) -> AsyncAdapt_aiosqlite_cursor:
        if server_side:  # rows fetched as they are read: SQLAlchemy's own
            return super().cursor(server_side=True)
        return OneTripCursor(self)

    # Outside a transaction sqlite3's commit and rollback do nothing, yet each was a trip
    # to the thread: the pool rolls back every connection it gets back, most of which only
    # read (pysqlite opens no transaction for a SELECT).
    def commit(self) -> None:
        if self._in_transaction():
            super().commit()

    def rollback(self) -> None:
        if self._in_transaction():
            super().rollback()

    def _in_transaction(self) -> bool:
        try:
            return bool(self._connection._conn.in_transaction)  # type: ignore[attr-defined]
        except Exception:  # closed: the driver's own call reports it
            return True


class OneTripDBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> AsyncAdapt_aiosqlite_connection:
        kw["check_same_thread"] = False  # reads run on the loop's thread (`read_here`)
        adapted = super().connect(*arg, **kw)
        if type(adapted) is not AsyncAdapt_aiosqlite_connection:  # async_fallback: as is
            return adapted
        return OneTripConnection(adapted.dbapi, adapted._connection)


class OneTripDialect(SQLiteDialect_aiosqlite):
    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> AsyncAdapt_aiosqlite_dbapi:
        return OneTripDBAPI(__import__("aiosqlite"), sqlite3)


def register() -> None:
    """`sqlite+aiosqlite` URLs use OneTripDialect from here on (in this process)."""
    registry.register("sqlite.aiosqlite", __name__, "OneTripDialect")

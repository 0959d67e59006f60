"""SQLite through aiosqlite: reads, writes and commits on the event loop, and one trip to
aiosqlite's thread for what may wait.

aiosqlite runs each sqlite3 call on a thread of its own; SQLAlchemy's adapter makes four
such trips for every statement (open a cursor, execute, fetch the rows, close the cursor),
each a hand-over to the thread and a wake-up of the event loop (~50 us of CPU, and under
load the wait for the loop's turn). A turn makes ~40 statements.

Here a statement runs on the event loop's thread when it cannot wait:
- a SELECT always: in WAL mode (the app's) a reader waits for no lock;
- an INSERT or UPDATE, and COMMIT and ROLLBACK, when the connection's writes are light:
  WAL mode, `synchronous` NORMAL or OFF (a commit appends to the WAL, no fsync) and no
  automatic checkpoint (it would run inside a COMMIT: app/db/sqlite_checkpoints.py runs
  them on a thread instead; the driver's connections turn them off).
None of them may wait on the loop: a light connection idles with its busy timeout at 0
(the timeout is raised on the thread, for what runs there), another one turns it off for
each statement on the loop. Should a statement find the database locked (another process
writing, recovery after a crash) it goes to the thread, which waits up to the busy timeout
there. Everything else (DELETE, which may cascade over many rows; bulk
inserts; a connection whose writes are not light) takes one trip: one function does the
four calls on the thread.

Within a transaction a write runs in microseconds instead of a trip: the write lock (the
in-process queue of app/db/sqlite_writers.py) is held that much shorter, which is what
bounded SQLite's throughput with several clients.

Registered under SQLAlchemy's own name for the driver, so `sqlite+aiosqlite://` URLs
(settings, Alembic, the CLI) all take it. It reaches into aiosqlite's `_execute` and
`_conn`, as SQLAlchemy's own adapter does for isolation levels; the driver tests run on it.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)

from app.db import sqlite_checkpoints

_Outcome = tuple[Any, list[Any], int | None, int]
_WOULD_WAIT = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_WRITES_HERE = ("INSERT", "UPDATE")
_NO_AUTOCHECKPOINT = "PRAGMA wal_autocheckpoint=0"


def _execute(connection: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome:
    """The statement, its rows, then the cursor closed (on aiosqlite's thread, or on the
    loop's: `run_here`)."""
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


@contextmanager
def _not_waiting(connection: sqlite3.Connection) -> Iterator[None]:
    """The busy timeout off meanwhile: a wait on the loop's thread would stall the loop."""
    busy_ms = _busy_timeout(connection)
    connection.execute("PRAGMA busy_timeout=0")
    try:
        yield
    finally:
        connection.execute(f"PRAGMA busy_timeout={busy_ms}")


def _busy_timeout(connection: sqlite3.Connection) -> int:
    (busy_ms,) = connection.execute("PRAGMA busy_timeout").fetchone()
    return int(busy_ms)


def _waiting(connection: sqlite3.Connection, busy_ms: int, function: Any, *args: Any) -> Any:
    """On the thread, for a connection idling at 0: `function` with the busy timeout up
    meanwhile; its outcome and the timeout after it (a PRAGMA may have changed it)."""
    connection.execute(f"PRAGMA busy_timeout={busy_ms}")
    try:
        return function(connection, *args), _busy_timeout(connection)
    finally:
        connection.execute("PRAGMA busy_timeout=0")


def _would_wait(error: sqlite3.OperationalError) -> bool:
    return error.sqlite_errorcode & 0xFF in _WOULD_WAIT  # extended codes: BUSY_SNAPSHOT, …


def _end(connection: sqlite3.Connection, commit: bool) -> bool:
    connection.commit() if commit else connection.rollback()
    return True


def _unless_waiting(connection: sqlite3.Connection, function: Any, *args: Any) -> Any:
    """`function(connection, *args)` on the loop, the busy timeout off (`_here`); None if
    it would wait."""
    try:
        return function(connection, *args)
    except sqlite3.OperationalError as error:
        if _would_wait(error):
            return None
        raise


class OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    __slots__ = ()

    def execute(self, operation: Any, parameters: Any = None) -> None:
        outcome = None
        connection: OneTripConnection = self._adapt_connection  # type: ignore[assignment]
        if connection.runs_here(operation):
            try:
                outcome = self.await_(connection.run_here(operation, parameters))
            except Exception as error:
                connection._handle_exception(error)
        if outcome is None:
            outcome = self._run(_execute, operation, parameters)
        self._take(outcome)

    def executemany(self, operation: Any, seq_of_parameters: Any) -> None:
        self._take(self._run(_execute_many, operation, seq_of_parameters))

    def _run(self, function: Any, operation: Any, parameters: Any) -> _Outcome:
        connection: OneTripConnection = self._adapt_connection  # type: ignore[assignment]
        try:
            return connection.on_thread(function, operation, parameters)  # type: ignore[no-any-return]
        except Exception as error:
            connection._handle_exception(error)

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
    # _light: whether writes and commits run on the loop (None: not looked at yet);
    # _idle_ms: a light connection's busy timeout, which it idles without (at 0)
    __slots__ = ("_checkpointer", "_idle_ms", "_light")

    def __init__(self, dbapi: Any, connection: Any, checkpointer: Any = None) -> None:
        super().__init__(dbapi, connection)
        self._light: bool | None = None
        self._idle_ms: int | None = None
        self._checkpointer: sqlite_checkpoints.Checkpointer | None = checkpointer

    @property
    def sqlite(self) -> sqlite3.Connection:
        return self._connection._conn  # type: ignore[attr-defined,no-any-return]

    def cursor(self, server_side: bool = False) -> AsyncAdapt_aiosqlite_cursor:
        if server_side:  # rows fetched as they are read: SQLAlchemy's own
            return super().cursor(server_side=True)
        return OneTripCursor(self)

    def runs_here(self, operation: str) -> bool:
        if operation.startswith("SELECT"):
            return True
        return operation.startswith(_WRITES_HERE) and self._writes_are_light()

    async def run_here(self, operation: str, parameters: Any) -> _Outcome | None:
        """On the event loop's thread, never suspending (a coroutine only because
        SQLAlchemy's async API wants each statement to await something): a statement that
        needs no wait for a lock, or None when it would wait (it then goes to the thread,
        which waits up to the busy timeout). Also app/db/direct.py's, for statements that
        skip SQLAlchemy."""
        return self._here(_execute, operation, parameters)  # type: ignore[no-any-return]

    def on_thread(self, function: Any, *args: Any) -> Any:
        """`function(sqlite, *args)` on aiosqlite's thread, waiting up to the busy timeout."""
        driver = self._connection
        if self._idle_ms is None:
            return self.await_(driver._execute(function, driver._conn, *args))  # type: ignore[attr-defined]
        outcome, self._idle_ms = self.await_(
            driver._execute(_waiting, driver._conn, self._idle_ms, function, *args)  # type: ignore[attr-defined]
        )
        return outcome

    def _here(self, function: Any, *args: Any) -> Any:
        # looked at on the first statement, not the first write: a connection that only
        # reads idles at 0 too (no PRAGMAs around each read)
        if self._writes_are_light():
            return _unless_waiting(self.sqlite, function, *args)
        with _not_waiting(self.sqlite):
            return _unless_waiting(self.sqlite, function, *args)

    def _writes_are_light(self) -> bool:
        if self._light is None:  # the app's pragmas are set by now (a connect listener)
            connection = self.sqlite
            (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
            (synchronous,) = connection.execute("PRAGMA synchronous").fetchone()
            (autocheckpoint,) = connection.execute("PRAGMA wal_autocheckpoint").fetchone()
            self._light = mode.lower() == "wal" and synchronous <= 1 and autocheckpoint == 0
            if self._light:  # what runs on the loop needs no toggling from here on
                self._idle_ms = _busy_timeout(connection)
                connection.execute("PRAGMA busy_timeout=0")
        return self._light

    # Outside a transaction sqlite3's commit and rollback do nothing, yet each was a trip
    # to the thread: the pool rolls back every connection it gets back, most of which only
    # read (pysqlite opens no transaction for a SELECT).
    def commit(self) -> None:
        if self._in_transaction():
            self._end(commit=True)
            if self._checkpointer is not None:
                self._checkpointer.committed()

    def rollback(self) -> None:
        if self._in_transaction():
            self._end(commit=False)

    def _end(self, commit: bool) -> None:
        try:
            if self._writes_are_light():
                if self._here(_end, commit) is None:  # it would wait: on the thread
                    self.on_thread(_end, commit)
                return
        except Exception as error:
            self._handle_exception(error)
        super().commit() if commit else super().rollback()

    def _in_transaction(self) -> bool:
        try:
            return bool(self.sqlite.in_transaction)
        except Exception:  # closed: the driver's own call reports it
            return True


def _file_of(database: Any, uri: bool) -> str | None:
    """The database file's path, or None for an in-memory database."""
    if not isinstance(database, str) or database in ("", ":memory:"):
        return None
    if not uri:
        return database
    parsed = urlparse(database)
    if "mode=memory" in parsed.query or parsed.path in ("", ":memory:"):
        return None
    return parsed.path


class OneTripDBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> AsyncAdapt_aiosqlite_connection:
        kw["check_same_thread"] = False  # statements run on the loop's thread (`run_here`)
        adapted = super().connect(*arg, **kw)
        if type(adapted) is not AsyncAdapt_aiosqlite_connection:  # async_fallback: as is
            return adapted
        path = _file_of(arg[0] if arg else kw.get("database"), bool(kw.get("uri")))
        checkpointer = None
        if path is not None:  # checkpoints on a thread of their own, not inside a COMMIT
            checkpointer = sqlite_checkpoints.for_database(path)
            driver = adapted._connection
            adapted.await_(driver._execute(_execute, driver._conn, _NO_AUTOCHECKPOINT, None))
        return OneTripConnection(adapted.dbapi, adapted._connection, checkpointer)


class OneTripDialect(SQLiteDialect_aiosqlite):
    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> AsyncAdapt_aiosqlite_dbapi:
        return OneTripDBAPI(__import__("aiosqlite"), sqlite3)


def register() -> None:
    """`sqlite+aiosqlite` URLs use OneTripDialect from here on (in this process)."""
    registry.register("sqlite.aiosqlite", __name__, "OneTripDialect")

"""SQLite's writers of one process queue on an asyncio lock instead of SQLite's busy handler.

SQLite lets one transaction write at a time. A writer that finds the lock taken sleeps in
SQLite's busy handler, in steps of 1, 2, 5, … up to 100 ms, whether the lock was freed a
millisecond later or not: with a few concurrent turns that is where the p99 went (1.5 s at
8 clients in bench.turn). Within one process the writers now wait their turn on an asyncio
lock per database file, first come first served, woken the moment the previous write
transaction ends. The lock is taken just before a transaction's first INSERT, UPDATE or
DELETE (when SQLite itself would take its write lock) and given back when it commits or
rolls back (or its connection goes back to the pool). Other processes on the same file
(the CLI, a second server) still meet SQLite's own lock and busy timeout; a writer waiting
longer than that here gets SQLite's own "database is locked" error.
"""

from __future__ import annotations

import asyncio
import sqlite3
import weakref
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import await_only

_HELD = "sqlite_write_lock"


@dataclass(frozen=True)
class _Queue:
    database: str
    timeout: float


# engines whose writers queue here
_queued: weakref.WeakKeyDictionary[Any, _Queue] = weakref.WeakKeyDictionary()
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def _lock_for(database: str) -> asyncio.Lock:
    """One lock per database file and event loop (a lock belongs to its loop)."""
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault(database, asyncio.Lock())


def _is_write(statement: str) -> bool:
    return statement.lstrip()[:7].upper().startswith(_WRITES)


async def _acquire(lock: asyncio.Lock, timeout: float) -> bool:  # noqa: ASYNC109
    try:
        async with asyncio.timeout(timeout):
            return await lock.acquire()
    except TimeoutError:
        return False


def _locked(statement: str, parameters: Any) -> OperationalError:
    """What SQLite's own busy timeout raises, as SQLAlchemy wraps it (a 503 upstream)."""
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode, error.sqlite_errorname = sqlite3.SQLITE_BUSY, "SQLITE_BUSY"  # type: ignore[attr-defined]
    return OperationalError(statement, parameters, error)


def install(engine: AsyncEngine, busy_timeout_seconds: float) -> None:
    """Queue the engine's write transactions (SQLite engines only; file databases)."""
    if engine.dialect.name != "sqlite" or not engine.url.database:
        return
    sync_engine = engine.sync_engine
    queue = _Queue(str(engine.url.database), busy_timeout_seconds)

    def before_execute(
        connection: Any, cursor: Any, statement: str, parameters: Any, *_: Any
    ) -> None:
        if connection.info.get(_HELD) is None and _is_write(statement):
            # this runs inside SQLAlchemy's greenlet, where the driver awaits too
            await_only(_take(queue, connection.info, statement, parameters))

    def release(_dbapi_connection: Any, record: Any) -> None:
        lock = record.info.pop(_HELD, None)
        if lock is not None and lock.locked():
            lock.release()

    event.listen(sync_engine, "before_cursor_execute", before_execute)
    # A session gives its connection back once its transaction has committed or rolled
    # back (the engine's own commit event fires before SQLite has committed).
    event.listen(sync_engine.pool, "checkin", release)
    _queued[sync_engine] = queue


async def _take(queue: _Queue, info: dict[Any, Any], statement: str, parameters: Any) -> None:
    """Wait for this process's turn to write; the lock kept in the connection's `info`."""
    lock = _lock_for(queue.database)
    if not await _acquire(lock, queue.timeout):
        raise _locked(statement, parameters)
    info[_HELD] = lock


def has_written(connection: Any) -> bool | None:
    """Whether `connection` (a SQLAlchemy Connection) wrote since it was checked out: it
    then holds the write lock until it goes back to the pool. None: not known (not a
    queued SQLite engine)."""
    if connection.engine not in _queued:
        return None
    return connection.info.get(_HELD) is not None

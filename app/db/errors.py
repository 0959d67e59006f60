"""Which exceptions mean "the database cannot take this now" (retry later), not a bug.

Callers answer these with 503 + Retry-After (HTTP, app/lib/problems.py) or their own
retryable signal (the websocket); everything else stays an internal error. The shapes:

- the pool stayed exhausted for `pool_timeout` (`sqlalchemy.exc.TimeoutError`);
- a pooled connection died (`DBAPIError.connection_invalidated`);
- a new connection could not be made: asyncpg raises the socket's `OSError`
  (`ConnectionRefusedError`, `TimeoutError`, a missing unix socket) or its own
  `PostgresError` unwrapped, because SQLAlchemy only wraps DBAPI errors at connect;
- PostgreSQL SQLSTATE classes 08 (connection exception), 53 (insufficient resources,
  e.g. too many connections) and 57P01-57P03 (shutdown, starting up);
- SQLite: busy/locked, cannot open, I/O error, read-only or full database file.
"""

from __future__ import annotations

import sys

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

_PG_UNAVAILABLE_PREFIXES = ("08", "53", "57P01", "57P02", "57P03")
_SQLITE_UNAVAILABLE_PREFIXES = (
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_CANTOPEN",
    "SQLITE_IOERR",
    "SQLITE_READONLY",
    "SQLITE_FULL",
)


def _driver_error(exc: BaseException) -> BaseException:
    return exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc


def _unavailable_by_code(error: BaseException) -> bool:
    sqlstate = str(getattr(error, "sqlstate", None) or "")
    if sqlstate.startswith(_PG_UNAVAILABLE_PREFIXES):
        return True
    sqlite_name = str(getattr(error, "sqlite_errorname", None) or "")
    return sqlite_name.startswith(_SQLITE_UNAVAILABLE_PREFIXES)


def is_database_unavailable(exc: BaseException) -> bool:
    """True when `exc` says the database is unreachable or out of capacity right now."""
    if isinstance(exc, PoolTimeoutError | OSError):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return _unavailable_by_code(_driver_error(exc))


def database_unavailable_now() -> bool:
    """Inside an `except` block: whether the exception being handled is such an error."""
    handled = sys.exc_info()[1]
    return handled is not None and is_database_unavailable(handled)


__all__ = ("PoolTimeoutError", "database_unavailable_now", "is_database_unavailable")

"""Thin helpers for the hot path's prebuilt Core statements, on SQLAlchemy's public API.

Hot statements (the thread bump, a message insert or update, a run's claim and end) are
built once at module level and run with `session.execute(statement, params)`: SQLAlchemy
finds their compiled form in its cache by the statement's cache key, and engine events
(echo, tracing, app/db/sqlite_writers.py) see every one of them. What these helpers add:

- `execute` writes what the session holds unwritten first: a Core statement does not
  autoflush, and it may depend on those rows;
- the rows come back as a small `Outcome` (rows, keys, rowcount) read once, so callers
  need not keep the Result open;
- `read_alone` runs a request's one read on a pooled connection of its own, outside any
  session and (on PostgreSQL, AUTOCOMMIT) any transaction.

Errors come as SQLAlchemy raises them (`IntegrityError`, `OperationalError`, …).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import CursorResult, Result
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.sql.expression import Executable

from app.db import reads


@dataclass(frozen=True, slots=True)
class Outcome:
    """A statement's rows (SQLAlchemy's `Row`s: by position, or by key as attributes),
    their keys and its rowcount."""

    keys: tuple[str, ...]
    rows: list[Any]
    rowcount: int

    def first(self) -> Any:
        return self.rows[0] if self.rows else None

    def mappings(self) -> list[dict[str, Any]]:
        return [dict(zip(self.keys, row, strict=True)) for row in self.rows]


def _outcome(result: Result[Any]) -> Outcome:
    rowcount = -1  # as DBAPI says when it is not known (an ORM statement's result)
    if isinstance(result, CursorResult):
        rowcount = result.rowcount
        if not result.returns_rows:
            return Outcome((), [], rowcount)
    keys = tuple(result.keys())
    return Outcome(keys, list(result.all()), rowcount)


async def execute(
    session: AsyncSession, statement: Executable, params: Mapping[str, Any]
) -> Outcome:
    """`session.execute(statement, params)` for a Core statement built once (module
    level), after what the session holds unwritten."""
    await flush_pending(session)
    return _outcome(await session.execute(statement, dict(params)))


async def scalar(session: AsyncSession, statement: Executable, params: Mapping[str, Any]) -> Any:
    """As `session.scalar(statement, params)`: the first column of the first row, or None."""
    row = (await execute(session, statement, params)).first()
    return None if row is None else row[0]


async def read_alone(
    engine: AsyncEngine, statement: Executable, params: Mapping[str, Any]
) -> Outcome:
    """A read on a pooled connection of its own, outside any session and (on PostgreSQL)
    any transaction, for a request whose one read is all its database work (the latest
    page, when its cache is current)."""
    async with reads.autocommit(engine).connect() as connection:
        return _outcome(await connection.execute(statement, dict(params)))


async def flush_pending(session: AsyncSession) -> None:
    """What the session holds unwritten goes first (as autoflush would before an ORM
    query): a Core statement after it may depend on those rows."""
    if session.new or session.dirty or session.deleted:
        await session.flush()


__all__ = ("Outcome", "execute", "flush_pending", "read_alone", "scalar")

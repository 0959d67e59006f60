"""INSERT … ON CONFLICT for the dialect of a session (SQLite and PostgreSQL agree on it)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession


def dialect_insert(session: AsyncSession, table: Any) -> Any:
    """`insert(table)` with `on_conflict_do_nothing` / `on_conflict_do_update`."""
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)

"""The statements an engine ran, with BEGIN and COMMIT, as the server would count them.

Every statement goes through SQLAlchemy's execution path, so its public events see them
all: `before_cursor_execute` for each statement, `begin` and `commit` for the
transaction (none for a connection in AUTOCOMMIT: app/db/reads.py). On SQLite, as
pysqlite sends them: BEGIN just before a transaction's first write, COMMIT only after one.
PRAGMAs are left out.

    with driver_statements(engine) as seen:
        ...
    assert heads(seen) == ["BEGIN", "UPDATE threads", ...]
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.ext.asyncio import AsyncEngine


def autocommit(connection: Any) -> bool:
    """Whether statements on `connection` run without BEGIN/COMMIT (app/db/reads.py)."""
    return connection.get_execution_options().get("isolation_level") == "AUTOCOMMIT"


@contextmanager
def statements_everywhere() -> Iterator[list[tuple[str, bool]]]:
    """Every statement any engine of this process runs (the app's, the runner's), each
    with whether it ran in AUTOCOMMIT, outside any transaction."""
    seen: list[tuple[str, bool]] = []

    def executed(connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append((statement, autocommit(connection)))

    event.listen(Engine, "before_cursor_execute", executed)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", executed)


@contextmanager
def driver_statements(engine: AsyncEngine) -> Iterator[list[str]]:
    seen: list[str] = []
    sync_engine = engine.sync_engine
    lazy = engine.dialect.name == "sqlite"  # pysqlite's BEGIN waits for a write

    def executed(connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("PRAGMA"):
            return
        if connection.info.get(_BEGIN) == "pending" and _writes(statement):
            connection.info[_BEGIN] = "sent"
            seen.append("BEGIN")
        seen.append(statement.strip())

    def began(connection: Any) -> None:
        if autocommit(connection):
            return
        connection.info[_BEGIN] = "pending" if lazy else "sent"
        if not lazy:
            seen.append("BEGIN")

    def committed(connection: Any) -> None:
        if connection.info.pop(_BEGIN, None) == "sent":
            seen.append("COMMIT")

    def rolled_back(connection: Any) -> None:
        connection.info.pop(_BEGIN, None)

    listeners = [
        ("before_cursor_execute", executed),
        ("begin", began),
        ("commit", committed),
        ("rollback", rolled_back),
    ]
    for name, listener in listeners:
        event.listen(sync_engine, name, listener)
    try:
        yield seen
    finally:
        for name, listener in listeners:
            event.remove(sync_engine, name, listener)


_BEGIN = "tests_statements_begin"


def _writes(statement: str) -> bool:
    return statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE", "REPLACE", "WITH"))


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

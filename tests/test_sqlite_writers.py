"""SQLite writers of one process queue on an asyncio lock (app/db/sqlite_writers.py):
with SQLite's own busy wait off, a second writer still gets through once the first
commits, and one that waits past the timeout gets SQLite's "database is locked"."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db import sqlite_writers
from app.db.errors import is_database_unavailable


async def _engine(path: Path, queue_timeout: float) -> AsyncEngine:
    # timeout=0: SQLite's busy handler gives up at once, so any waiting is the queue's
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 0})
    sqlite_writers.install(engine, queue_timeout)
    async with engine.begin() as connection:
        await connection.execute(text("CREATE TABLE IF NOT EXISTS t (n INTEGER)"))
    return engine


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = await _engine(tmp_path / "w.sqlite3", queue_timeout=10)
    yield engine
    await engine.dispose()


async def _write(engine: AsyncEngine, n: int) -> None:
    async with engine.begin() as connection:
        await connection.execute(text("INSERT INTO t VALUES (:n)"), {"n": n})


async def test_a_second_writer_waits_for_the_first_to_commit(engine: AsyncEngine) -> None:
    async with engine.connect() as first:
        await first.execute(text("INSERT INTO t VALUES (1)"))  # holds the write lock
        second = asyncio.create_task(_write(engine, 2))
        await asyncio.sleep(0.2)
        assert not second.done()  # queued, not failed (SQLite alone would fail at once)
        await first.commit()
    await second
    async with engine.connect() as connection:
        rows = (await connection.execute(text("SELECT n FROM t ORDER BY n"))).scalars().all()
    assert rows == [1, 2]


async def test_a_writer_waiting_past_the_timeout_is_told_the_database_is_locked(
    tmp_path: Path,
) -> None:
    engine = await _engine(tmp_path / "t.sqlite3", queue_timeout=0.2)
    try:
        async with engine.connect() as first:
            await first.execute(text("INSERT INTO t VALUES (1)"))
            with pytest.raises(OperationalError, match="database is locked") as refused:
                await _write(engine, 2)
            assert is_database_unavailable(refused.value)  # answered 503, as SQLite's own
            await first.rollback()
        await _write(engine, 3)  # the queue is free again
    finally:
        await engine.dispose()


async def test_reads_do_not_queue(engine: AsyncEngine) -> None:
    async with engine.connect() as writer:
        await writer.execute(text("INSERT INTO t VALUES (1)"))
        async with engine.connect() as reader:  # WAL-less default journal still reads
            assert (await reader.execute(text("SELECT count(*) FROM t"))).scalar() == 0
        await writer.rollback()

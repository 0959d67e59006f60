"""SQLite's driver (app/db/sqlite_driver.py): `sqlite+aiosqlite` URLs take it, a write
makes one trip to aiosqlite's thread and a read none (it runs on the loop, unless it would
wait for a lock: then on the thread, the loop running meanwhile), and what SQLAlchemy reads
back (rows, row counts, new row ids, errors, rows streamed as read) is what its own
adapter gives."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.db.sqlite_driver import OneTripDialect


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'd.sqlite3'}")
    async with engine.begin() as connection:
        await connection.execute(
            text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
        )
    yield engine
    await engine.dispose()


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every function aiosqlite runs on its thread."""
    seen: list[str] = []
    original = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(getattr(fn, "__name__", repr(fn)))
        return await original(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    return seen


async def test_sqlite_aiosqlite_urls_take_the_one_trip_driver(engine: AsyncEngine) -> None:
    assert isinstance(engine.dialect, OneTripDialect)


async def test_a_write_is_one_trip_to_the_driver_thread_and_a_read_none(
    engine: AsyncEngine, trips: list[str]
) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))  # the checkout's own trips happen first
        trips.clear()
        rows = (await connection.execute(text("SELECT v FROM t"))).all()
        await connection.execute(text("INSERT INTO t (v) VALUES ('a')"))
        read_back = (await connection.execute(text("SELECT v FROM t"))).all()
    assert rows == []
    assert read_back == [("a",)]  # the read on the loop sees the transaction's own write
    # SQLAlchemy's own adapter: cursor, execute, fetchall, close for each (12 in all)
    assert trips.count("_execute") == 1
    assert len([name for name in trips if name != "rollback"]) == 1


async def test_a_connection_that_only_read_goes_back_to_the_pool_without_a_trip(
    engine: AsyncEngine, trips: list[str]
) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
        trips.clear()
        await connection.execute(text("SELECT v FROM t"))
    # the read ran on the loop; the pool's rollback on return had nothing to roll back
    assert trips == []
    async with engine.connect() as connection:
        await connection.execute(text("INSERT INTO t (v) VALUES ('a')"))
    async with engine.connect() as connection:  # the pool rolled that one back, for real
        assert (await connection.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0


async def test_a_read_that_would_wait_for_a_lock_waits_on_the_thread_not_the_loop(
    engine: AsyncEngine, tmp_path: Path, trips: list[str]
) -> None:
    """Another connection holds an exclusive lock (this database is not in WAL mode, so
    readers wait for it) and lets go after a while: the read still answers, and the loop
    kept running meanwhile."""
    holder = sqlite3.connect(tmp_path / "d.sqlite3", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO t (v) VALUES ('held')")
    loop = asyncio.get_running_loop()
    gaps: list[float] = []  # between the loop's turns to a task that sleeps 10 ms

    async def tick() -> None:
        last = loop.time()
        while True:
            await asyncio.sleep(0.01)
            gaps.append(loop.time() - last)
            last = loop.time()

    async def release_later() -> None:
        await asyncio.sleep(0.5)
        holder.execute("COMMIT")

    ticker = asyncio.create_task(tick())
    releaser = asyncio.create_task(release_later())
    await asyncio.sleep(0.05)  # both are running
    try:
        async with engine.connect() as connection:
            rows = (await connection.execute(text("SELECT v FROM t"))).all()
    finally:
        ticker.cancel()
        await releaser
        holder.close()
    assert rows == [("held",)]
    assert "_execute" in trips  # it went to the thread
    # A read waiting on the loop would have stalled it for the busy timeout (5 s), and
    # the lock's holder (on the loop too) could not have let go meanwhile.
    assert max(gaps) < 2.5, max(gaps)


async def test_the_busy_timeout_is_restored_after_a_read(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("PRAGMA busy_timeout=1234"))
        await connection.execute(text("SELECT v FROM t"))
        value = (await connection.execute(text("PRAGMA busy_timeout"))).scalar_one()
    assert value == 1234


async def test_rows_counts_and_new_ids_read_back_as_before(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        many = await connection.execute(
            text("INSERT INTO t (v) VALUES (:v)"), [{"v": "a"}, {"v": "b"}]
        )
        one = await connection.execute(text("INSERT INTO t (v) VALUES ('c')"))
        returned = await connection.execute(text("INSERT INTO t (v) VALUES ('d') RETURNING id"))
        updated = await connection.execute(text("UPDATE t SET v = v || '!' WHERE id <= 2"))
        rows = (await connection.execute(text("SELECT id, v FROM t ORDER BY id"))).all()
    assert many.rowcount == 2
    assert one.lastrowid == 3
    assert returned.scalar_one() == 4
    assert updated.rowcount == 2
    assert rows == [(1, "a!"), (2, "b!"), (3, "c"), (4, "d")]


async def test_a_failing_statement_raises_sqlalchemys_error_and_the_connection_goes_on(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("INSERT INTO t (v) VALUES ('a')"))
        with pytest.raises(IntegrityError, match="UNIQUE"):
            await connection.execute(text("INSERT INTO t (v) VALUES ('a')"))
        await connection.rollback()
        count = (await connection.execute(text("SELECT count(*) FROM t"))).scalar_one()
    assert count == 0


async def test_rows_streamed_as_read(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.execute(
            text("INSERT INTO t (v) VALUES (:v)"), [{"v": f"r{n}"} for n in range(5)]
        )
    async with engine.connect() as connection:
        result = await connection.stream(text("SELECT v FROM t ORDER BY id"))
        first = await result.fetchmany(2)
        rest = [row async for row in result]
    assert [row.v for row in first + rest] == [f"r{n}" for n in range(5)]

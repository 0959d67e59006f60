"""SQLite's driver (app/db/sqlite_driver.py): `sqlite+aiosqlite` URLs take it, a write
makes one trip to aiosqlite's thread and a read none (it runs on the loop, unless it would
wait for a lock: then on the thread, the loop running meanwhile), and what SQLAlchemy reads
back (rows, row counts, new row ids, errors, rows streamed as read) is what its own
adapter gives."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import bindparam, column, insert, text
from sqlalchemy import table as table_
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from app.db import direct, sqlite_checkpoints
from app.db.config import BUSY_TIMEOUT_SECONDS, install_sqlite_pragmas
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
    """The name of every function aiosqlite runs on its thread (and of those it wraps)."""
    seen: list[str] = []
    original = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(getattr(fn, "__name__", repr(fn)))
        seen.extend(f.__name__ for f in args if callable(f) and hasattr(f, "__name__"))
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
    read: list[Any] = []

    async def read_all() -> None:
        async with engine.connect() as connection:
            read.extend((await connection.execute(text("SELECT v FROM t"))).all())

    gaps = await _loop_gaps_while(read_all(), release=lambda: holder.execute("COMMIT"), after=0.5)
    holder.close()
    assert read == [("held",)]
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


@pytest.fixture
async def wal_engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """As the app makes its engine: WAL, synchronous NORMAL, a busy timeout."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'w.sqlite3'}")
    install_sqlite_pragmas(engine)
    async with engine.begin() as connection:
        await connection.execute(
            text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
        )
    yield engine
    await engine.dispose()


async def test_in_wal_mode_writes_and_commits_make_no_trip_deletes_one(
    wal_engine: AsyncEngine, tmp_path: Path, trips: list[str]
) -> None:
    async with wal_engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
        trips.clear()
        await connection.execute(text("INSERT INTO t (v) VALUES ('a'), ('b')"))
        await connection.execute(text("UPDATE t SET v = v || '!' WHERE v = 'a'"))
        await connection.commit()
        assert trips == []
        await connection.execute(text("DELETE FROM t WHERE v = 'b'"))  # may cascade: thread
        await connection.commit()
    assert trips.count("_execute") == 1
    other = sqlite3.connect(tmp_path / "w.sqlite3")  # committed, for everyone
    try:
        assert other.execute("SELECT v FROM t").fetchall() == [("a!",)]
    finally:
        other.close()


async def test_in_wal_mode_statements_on_the_loop_run_alone_and_the_busy_timeout_holds(
    wal_engine: AsyncEngine,
) -> None:
    """A WAL connection idles with its busy timeout at 0, so a statement on the loop is
    that statement alone, no PRAGMA around it; the timeout it was given (or is given
    later) still reads back and is what a statement on the thread waits for."""
    async with wal_engine.connect() as connection:
        await connection.execute(text("INSERT INTO t (v) VALUES ('a')"))
        await connection.commit()
        raw = await connection.get_raw_connection()
        ran: list[str] = []
        raw.dbapi_connection.sqlite.set_trace_callback(ran.append)  # type: ignore[union-attr]
        await connection.execute(text("SELECT v FROM t"))
        await connection.execute(text("UPDATE t SET v = 'b'"))
        await connection.commit()
        assert ran == ["SELECT v FROM t", "BEGIN ", "UPDATE t SET v = 'b'", "COMMIT"]
        raw.dbapi_connection.sqlite.set_trace_callback(None)  # type: ignore[union-attr]
        set_by_the_app = (await connection.execute(text("PRAGMA busy_timeout"))).scalar_one()
        await connection.execute(text("PRAGMA busy_timeout=1234"))
        await connection.execute(text("SELECT v FROM t"))
        changed = (await connection.execute(text("PRAGMA busy_timeout"))).scalar_one()
    assert (set_by_the_app, changed) == (int(BUSY_TIMEOUT_SECONDS * 1000), 1234)


async def test_a_rolled_back_write_on_the_loop_leaves_nothing(wal_engine: AsyncEngine) -> None:
    async with wal_engine.connect() as connection:
        await connection.execute(text("INSERT INTO t (v) VALUES ('a')"))
        await connection.rollback()
        assert (await connection.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0
        with pytest.raises(IntegrityError, match="NOT NULL"):  # errors as from the thread
            await connection.execute(text("INSERT INTO t (v) VALUES (NULL)"))


async def test_a_write_that_would_wait_for_the_lock_waits_on_the_thread_not_the_loop(
    wal_engine: AsyncEngine, tmp_path: Path, trips: list[str]
) -> None:
    """Another process's connection holds the write lock for a while: the write still
    goes through, after it, and the loop kept running meanwhile."""
    holder = sqlite3.connect(tmp_path / "w.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t (v) VALUES ('first')")
    gaps = await _loop_gaps_while(
        _insert_second(wal_engine), release=lambda: holder.execute("COMMIT"), after=0.5
    )
    holder.close()
    async with wal_engine.connect() as connection:
        rows = (await connection.execute(text("SELECT v FROM t ORDER BY id"))).all()
    assert rows == [("first",), ("second",)]
    assert "_execute" in trips  # it went to the thread
    assert max(gaps) < 2.5, max(gaps)  # on the loop it would have waited 10 s (busy timeout)


async def _insert_second(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.execute(text("INSERT INTO t (v) VALUES ('second')"))


async def _loop_gaps_while(work: Any, release: Callable[[], object], after: float) -> list[float]:
    """Run `work` while a task releases a lock after `after` s; the loop's gaps meanwhile
    (between the turns of a task sleeping 10 ms)."""
    loop = asyncio.get_running_loop()
    gaps: list[float] = []

    async def tick() -> None:
        last = loop.time()
        while True:
            await asyncio.sleep(0.01)
            gaps.append(loop.time() - last)
            last = loop.time()

    async def release_later() -> None:
        await asyncio.sleep(after)
        release()

    ticker = asyncio.create_task(tick())
    releaser = asyncio.create_task(release_later())
    await asyncio.sleep(0.05)  # both are running
    try:
        await work
    finally:
        ticker.cancel()
        await releaser
    return gaps


async def test_checkpoints_run_on_their_thread_not_inside_commits(
    wal_engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_checkpoints, "EVERY_COMMITS", 5)
    path = str(tmp_path / "w.sqlite3")
    checkpointer = sqlite_checkpoints.for_database(path)
    async with wal_engine.connect() as connection:
        autocheckpoint = (await connection.execute(text("PRAGMA wal_autocheckpoint"))).scalar()
        assert autocheckpoint == 0  # no checkpoint inside a COMMIT on the loop
        size_before = await asyncio.to_thread(os.path.getsize, path)
        for n in range(12):
            await connection.execute(
                text("INSERT INTO t (v) VALUES (:v)"), {"v": "x" * 4000 + str(n)}
            )
            await connection.commit()
    for _ in range(100):  # they run on the checkpoint thread
        if checkpointer.checkpoints >= 2:
            break
        await asyncio.sleep(0.02)
    assert checkpointer.checkpoints >= 2
    size_after = await asyncio.to_thread(os.path.getsize, path)
    assert size_after > size_before + 8 * 4000  # the pages are in the database file now


def _checkpoint_in_child(path: str) -> None:
    checkpointer = sqlite_checkpoints.for_database(path)
    before = checkpointer.checkpoints  # the parent's count, were it inherited
    sqlite_checkpoints.EVERY_COMMITS = 1
    checkpointer.committed()
    for _ in range(200):
        if checkpointer.checkpoints > before:
            os._exit(0)
        time.sleep(0.01)
    os._exit(1)


async def test_a_forked_worker_checkpoints_on_a_thread_of_its_own(
    wal_engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent's checkpoint thread exists (it ran one); a child forked after still
    gets its checkpoints run."""
    monkeypatch.setattr(sqlite_checkpoints, "EVERY_COMMITS", 1)
    path = str(tmp_path / "w.sqlite3")
    parent = sqlite_checkpoints.for_database(path)
    async with wal_engine.begin() as connection:
        await connection.execute(text("INSERT INTO t (v) VALUES ('a')"))
    for _ in range(200):
        if parent.checkpoints:
            break
        await asyncio.sleep(0.01)
    assert parent.checkpoints
    child = multiprocessing.get_context("fork").Process(target=_checkpoint_in_child, args=(path,))
    child.start()
    await asyncio.to_thread(child.join, 10)
    assert child.exitcode == 0


async def test_a_direct_statement_that_would_wait_waits_on_the_thread(
    wal_engine: AsyncEngine, tmp_path: Path, trips: list[str]
) -> None:
    """app/db/direct.py: a write that finds the lock taken by another process goes
    through SQLAlchemy to the thread, which waits its turn; its rows read as the loop's."""
    table = table_("t", column("id"), column("v"))
    insert_v = insert(table).values(v=bindparam("b_v")).returning(table.c.v)
    holder = sqlite3.connect(tmp_path / "w.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t (v) VALUES ('first')")
    asyncio.get_running_loop().call_later(0.3, holder.execute, "COMMIT")
    async with AsyncSession(wal_engine) as session:
        outcome = await direct.execute(session, insert_v, {"b_v": "second"})
        await session.commit()
    holder.close()
    assert "_execute" in trips  # it went to the thread
    assert outcome.rows[0].v == outcome.rows[0][0] == "second"
    async with AsyncSession(wal_engine) as session:
        here = await direct.execute(session, insert_v, {"b_v": "third"})  # on the loop
        await session.commit()
    assert here.rows[0].v == "third" and trips.count("_execute") == 1

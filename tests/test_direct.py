"""The hot path's Core statements (app/db/direct.py), on both dialects: the same answers
as `session.execute`, every statement seen by the engine's events, writes inside the
session's transaction (kept on commit, gone on rollback), SQLAlchemy's own errors, and a
PostgreSQL connection that failed under one not handed out again."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from sqlalchemy import bindparam, event, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import direct, sqlite_writers
from app.db.errors import is_database_unavailable
from app.db.models import Thread
from app.db.reads import reading
from app.lib.time import utcnow
from app.threads import repository, writer
from tests.conftest import ApiUser, make_api_user
from tests.support.statements import driver_statements, heads


async def _thread(client: httpx.AsyncClient, user: ApiUser) -> uuid.UUID:
    created = await client.post(
        "/api/threads", json={"agent_id": str(user.agent.id)}, headers=user.headers
    )
    assert created.status_code == 201, created.text
    return uuid.UUID(created.json()["id"])


@contextmanager
def sqlalchemy_executions(sessions: async_sessionmaker[AsyncSession]) -> Iterator[list[str]]:
    """The statements SQLAlchemy's execution path ran meanwhile."""
    executed: list[str] = []
    engine = sessions.kw["bind"].sync_engine

    def seen(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
        executed.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield executed
    finally:
        event.remove(engine, "before_cursor_execute", seen)


async def test_answers_as_sqlalchemy_does(
    db: AsyncSession,
    client: httpx.AsyncClient,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    owner, other = await make_api_user(db), await make_api_user(db)
    thread_id = await _thread(client, owner)
    await client.post(
        f"/api/threads/{thread_id}/messages", json={"content": "hi"}, headers=owner.headers
    )
    cases = [
        {"thread_id": thread_id, "owner_id": owner.user.id},  # found
        {"thread_id": thread_id, "owner_id": other.user.id},  # another user's thread
        {"thread_id": uuid.uuid4(), "owner_id": owner.user.id},  # no such thread
    ]
    for sessions in (session_factory, reading(session_factory)):
        async with sessions() as session:
            for params in cases:
                expected = await session.scalar(repository.OWNED_LAST_SEQ, params)
                got = await direct.scalar(session, repository.OWNED_LAST_SEQ, params)
                assert got == expected, params
    assert [c["owner_id"] == owner.user.id for c in cases] == [True, False, True]
    async with session_factory() as session:
        found = await direct.scalar(session, repository.OWNED_LAST_SEQ, cases[0])
    assert found is not None and found >= 1  # the message bumped it


async def test_engine_events_see_every_statement(
    owned: tuple[ApiUser, uuid.UUID],
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    """Echo, tracing and the SQLite write queue hear of them (nothing goes around)."""
    owner, thread_id = owned
    params = {"thread_id": thread_id, "owner_id": owner.user.id}
    engine = session_factory.kw["bind"]
    with sqlalchemy_executions(session_factory) as executed:
        async with reading(session_factory)() as session:
            value = await direct.scalar(session, repository.OWNED_LAST_SEQ, params)
        await direct.read_alone(engine, repository.OWNED_LAST_SEQ, params)
    assert value == 0
    assert [statement.split()[0] for statement in executed] == ["SELECT", "SELECT"]


async def test_a_read_alone_takes_a_connection_of_its_own_and_gives_it_back(
    owned: tuple[ApiUser, uuid.UUID],
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    """No session, and on PostgreSQL no BEGIN/ROLLBACK around it: the one statement."""
    owner, thread_id = owned
    engine = session_factory.kw["bind"]
    params = {"thread_id": thread_id, "owner_id": owner.user.id}
    in_use = engine.sync_engine.pool.checkedout()
    with driver_statements(engine) as seen:
        alone = await direct.read_alone(engine, repository.OWNED_LAST_SEQ, params)
    async with session_factory() as session:
        expected = await session.scalar(repository.OWNED_LAST_SEQ, params)
    assert alone.rows == [(expected,)] and alone.rows[0].last_seq == 0
    assert heads(seen) == ["SELECT"]
    assert engine.sync_engine.pool.checkedout() == in_use  # given back


async def test_a_read_alone_leaves_its_connection_transactional(
    owned: tuple[ApiUser, uuid.UUID],
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    """Its autocommit is its own: the session that takes the connection next (the pool
    hands out the one used last) still rolls back what it wrote."""
    owner, thread_id = owned
    engine = session_factory.kw["bind"]
    params = {"thread_id": thread_id, "owner_id": owner.user.id}
    for _ in range(3):
        await direct.read_alone(engine, repository.OWNED_LAST_SEQ, params)
        async with session_factory() as session:
            await direct.execute(session, writer._BUMP, _bump(thread_id))
            await session.rollback()
    alone = await direct.read_alone(engine, repository.OWNED_LAST_SEQ, params)
    assert alone.rows[0].last_seq == 0


async def test_a_connection_lost_under_a_read_alone_is_not_handed_out_again(
    db: AsyncSession, session_factory: async_sessionmaker[AsyncSession], dialect: str
) -> None:
    if dialect != "postgresql":
        pytest.skip("a server connection to lose: PostgreSQL's")
    engine = session_factory.kw["bind"]
    params = {"thread_id": uuid.uuid4(), "owner_id": uuid.uuid4()}
    await db.execute(text("SELECT 1"))  # db holds a connection of its own from here
    raw = await engine.raw_connection()
    pid = await raw.driver_connection.fetchval("SELECT pg_backend_pid()")
    raw.close()  # the pool's last used: the next read takes it
    await db.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    with pytest.raises(Exception) as raised:
        await direct.read_alone(engine, repository.OWNED_LAST_SEQ, params)
    assert is_database_unavailable(raised.value), repr(raised.value)
    for _ in range(3):  # whichever pooled connection comes next works
        assert (await direct.read_alone(engine, repository.OWNED_LAST_SEQ, params)).rows == []
    raw = await engine.raw_connection()
    assert await raw.driver_connection.fetchval("SELECT pg_backend_pid()") != pid
    raw.close()


@pytest.fixture
async def owned(db: AsyncSession, client: httpx.AsyncClient) -> tuple[ApiUser, uuid.UUID]:
    """A user and a thread of theirs (created over the API)."""
    owner = await make_api_user(db)
    return owner, await _thread(client, owner)


def _bump(thread_id: uuid.UUID) -> dict[str, object]:
    return {"b_thread": thread_id, "b_seqs": 2, "b_messages": 1, "b_now": utcnow()}


async def test_writes_in_the_sessions_transaction(
    owned: tuple[ApiUser, uuid.UUID],
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    _owner, thread_id = owned
    with sqlalchemy_executions(session_factory) as executed:
        async with session_factory() as session:
            outcome = await direct.execute(session, writer._BUMP, _bump(thread_id))
            await session.rollback()
        async with session_factory() as session:
            kept = await direct.execute(session, writer._BUMP, _bump(thread_id))
            await session.commit()
    assert len(executed) == 2  # both through SQLAlchemy's execution
    assert outcome.keys == ("last_seq", "message_count")
    assert outcome.rows == [(2, 1)] and outcome.rowcount == 1
    assert kept.rows == [(2, 1)]  # the rolled-back bump is gone
    async with session_factory() as session:
        stored = await session.get(Thread, thread_id)
        assert stored is not None and (stored.last_seq, stored.message_count) == (2, 1)
        missing = await direct.execute(session, writer._BUMP, _bump(uuid.uuid4()))
        assert missing.rows == [] and missing.rowcount == 0


async def test_one_session_commits_then_rolls_back_its_next_transaction(
    owned: tuple[ApiUser, uuid.UUID],
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    """The connection a session's transaction used is kept for its next statements, and
    only for them: after a commit the next statement is in a new transaction."""
    _owner, thread_id = owned
    async with session_factory() as session:
        await direct.execute(session, writer._BUMP, _bump(thread_id))
        second = await direct.execute(session, writer._BUMP, _bump(thread_id))
        await session.commit()
        third = await direct.execute(session, writer._BUMP, _bump(thread_id))
        await session.rollback()
    assert (second.rows, third.rows) == ([(4, 2)], [(6, 3)])
    async with session_factory() as session:
        stored = select(Thread.last_seq).where(Thread.id == bindparam("id"))
        assert await direct.scalar(session, stored, {"id": thread_id}) == 4


async def test_values_come_back_as_sqlalchemy_gives_them(
    owned: tuple[ApiUser, uuid.UUID], session_factory: async_sessionmaker[AsyncSession]
) -> None:
    """Bind and result processing per column: UUIDs, timestamps with their zone, JSON."""
    _owner, thread_id = owned
    statement = (
        update(Thread)
        .where(Thread.id == bindparam("b_id"))
        .values(title=bindparam("b_title"), updated_at=bindparam("b_now"))
        .returning(*Thread.__table__.c)
    )
    params = {"b_id": thread_id, "b_title": "Renamed", "b_now": utcnow()}
    async with session_factory() as session:
        got = (await direct.execute(session, statement, params)).mappings()
        await session.rollback()
    async with session_factory() as session:
        expected = (await session.execute(statement, params)).mappings().all()
        await session.rollback()
    assert got == [dict(row) for row in expected]
    assert isinstance(got[0]["id"], uuid.UUID) and got[0]["updated_at"].tzinfo is not None


async def test_errors_are_sqlalchemys_and_the_session_rolls_back(
    owned: tuple[ApiUser, uuid.UUID], session_factory: async_sessionmaker[AsyncSession]
) -> None:
    owner, thread_id = owned
    async with session_factory() as session:
        row = {c.key: None for c in Thread.__table__.c}
        row |= {"id": thread_id, "owner_id": owner.user.id, "agent_id": owner.agent.id}
        row |= {"title": "twin", "last_seq": 0, "message_count": 0}
        row |= {"last_activity_at": utcnow(), "created_at": utcnow(), "updated_at": utcnow()}
        with pytest.raises(IntegrityError):  # the same id again
            await direct.execute(session, insert(Thread.__table__), row)
        await session.rollback()
        assert await direct.scalar(session, select(func.count()).select_from(Thread), {}) >= 1


async def test_statements_needing_sqlalchemy_at_run_time_work(
    owned: tuple[ApiUser, uuid.UUID], session_factory: async_sessionmaker[AsyncSession]
) -> None:
    """A column's `onupdate` and an expanding IN: SQLAlchemy's execution does their part."""
    _owner, thread_id = owned
    onupdate_left = (
        update(Thread.__table__)
        .where(Thread.__table__.c.id == bindparam("b_id"))
        .values(title="x")
        .returning(Thread.__table__.c.updated_at)
    )
    expanding = select(Thread.id).where(Thread.id.in_(bindparam("ids", expanding=True)))
    async with session_factory() as session:
        before = await direct.scalar(
            session,
            select(Thread.updated_at).where(Thread.id == bindparam("id")),
            {"id": thread_id},
        )
        updated = await direct.scalar(session, onupdate_left, {"b_id": thread_id})
        found = await direct.execute(session, expanding, {"ids": [thread_id, uuid.uuid4()]})
        await session.rollback()
    assert updated is not None and updated >= before
    assert found.rows == [(thread_id,)]


async def test_a_second_writer_of_a_thread_waits_for_the_first(
    owned: tuple[ApiUser, uuid.UUID],
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    dialect: str,
) -> None:
    """SQLite: in the process's write queue (app/db/sqlite_writers.py), as SQLAlchemy's
    writes do; PostgreSQL: on the thread's row lock."""
    _owner, thread_id = owned
    async with session_factory() as first, session_factory() as second:
        await direct.execute(first, writer._BUMP, _bump(thread_id))
        holds = sqlite_writers.has_written((await first.connection()).sync_connection)
        assert holds is (True if dialect == "sqlite" else None)
        waiting = asyncio.ensure_future(direct.execute(second, writer._BUMP, _bump(thread_id)))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # waiting its turn, not failing
        await first.commit()
        assert (await asyncio.wait_for(waiting, 5)).rows == [(4, 2)]
        await second.commit()


async def test_a_connection_lost_under_a_read_is_not_handed_out_again(
    db: AsyncSession, session_factory: async_sessionmaker[AsyncSession], dialect: str
) -> None:
    if dialect != "postgresql":
        pytest.skip("a server connection to lose: PostgreSQL's")
    params = {"thread_id": uuid.uuid4(), "owner_id": uuid.uuid4()}
    async with session_factory() as session:
        pid = await session.scalar(text("SELECT pg_backend_pid()"))
        await db.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(Exception) as raised:
            await direct.scalar(session, repository.OWNED_LAST_SEQ, params)
    assert is_database_unavailable(raised.value), repr(raised.value)
    for _ in range(3):  # whichever pooled connection comes next works
        async with session_factory() as session:
            assert await direct.scalar(session, repository.OWNED_LAST_SEQ, params) is None
            assert await session.scalar(text("SELECT pg_backend_pid()")) != pid

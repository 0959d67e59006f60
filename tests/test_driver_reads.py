"""One-value reads straight through the driver (app/db/driver_reads.py): the same answers
as SQLAlchemy's path, without SQLAlchemy executing the statement, on both dialects; a
PostgreSQL connection that failed under one is not handed out again."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import driver_reads
from app.db.errors import is_database_unavailable
from app.db.reads import reading
from app.threads import repository
from tests.conftest import ApiUser, make_api_user


async def _thread(client: httpx.AsyncClient, user: ApiUser) -> uuid.UUID:
    created = await client.post(
        "/api/threads", json={"agent_id": str(user.agent.id)}, headers=user.headers
    )
    assert created.status_code == 201, created.text
    return uuid.UUID(created.json()["id"])


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
                got = await driver_reads.scalar(session, repository.OWNED_LAST_SEQ, params)
                assert got == expected, params
    assert [c["owner_id"] == owner.user.id for c in cases] == [True, False, True]
    async with session_factory() as session:
        found = await driver_reads.scalar(session, repository.OWNED_LAST_SEQ, cases[0])
    assert found is not None and found >= 1  # the message bumped it


async def test_reads_without_sqlalchemy_executing(
    db: AsyncSession,
    client: httpx.AsyncClient,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    owner = await make_api_user(db)
    thread_id = await _thread(client, owner)
    executed: list[str] = []
    engine = session_factory.kw["bind"].sync_engine

    def seen(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
        executed.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        async with reading(session_factory)() as session:
            value = await driver_reads.scalar(
                session,
                repository.OWNED_LAST_SEQ,
                {"thread_id": thread_id, "owner_id": owner.user.id},
            )
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert value == 0
    assert executed == []


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
            await driver_reads.scalar(session, repository.OWNED_LAST_SEQ, params)
    assert is_database_unavailable(raised.value), repr(raised.value)
    for _ in range(3):  # whichever pooled connection comes next works
        async with session_factory() as session:
            assert await driver_reads.scalar(session, repository.OWNED_LAST_SEQ, params) is None
            assert await session.scalar(text("SELECT pg_backend_pid()")) != pid
